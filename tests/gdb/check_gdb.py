#!/usr/bin/env python3
"""check_gdb.py DEADLOCK WEFT_PY: tools/gdb/weft.py on the deliberately
deadlocked example (examples/deadlock.c), attached to the live process and
on core files of it.

For each view: `info weft-tasks` must list the five tasks with the state
and object of each wait (the mutex's holder, the task awaited, the fd),
and `weft-bt` must unwind each parked task down to its own function and
its entry, by gdb's unwinding and by the frame-pointer walk (--fp);
`weft-frame` must select a frame of a task where its locals can be read.
The core files: one written by gdb's gcore (with mprotect guards: gcore
zero-fills a stack mapping with MADV_GUARD_INSTALL guards) and, where the
kernel writes core files into the working folder, one of its own.

Exit 77 (skipped) when gdb, or its Python, is missing, or ptrace is not
allowed here."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

SKIP = 77


def gdb_run(args, timeout=120):
    cmd = ['gdb', '-batch', '-nx', '-iex', 'set auto-load off'] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p.stdout + p.stderr


def commands(weft_py, lines):
    return ['-ex', 'source ' + weft_py] + \
        [x for line in lines for x in ('-ex', line)]


def check_view(name, out, problems):
    """The common checks of one view's output."""
    rows = {}
    for line in out.splitlines():
        m = re.match(r'(\d+)\s+"([^"]*)"\s+(\S.*?)\s{2,}(.*?)\s{2,}deadlock\s+'
                     r'(\d|-)$', line)
        if m:
            rows[m.group(2)] = (m.group(1), m.group(3), m.group(4))
    want = {'keeper': ('chan recv', r'chan 0x[0-9a-f]+ \(capacity 0\)'),
            'locker': ('mutex', r'mutex 0x[0-9a-f]+, held by task %s' %
                       rows.get('keeper', ('?',))[0]),
            'joiner': ('await', r'task %s$' % rows.get('locker', ('?',))[0]),
            'napper': ('sleep', r'until [\d.]+ s')}
    reader = [n for n in rows if n.startswith('reader fd ')]
    if reader:
        want[reader[0]] = ('fd read', r'fd \d+$')
    else:
        problems.append('%s: no "reader fd N" task' % name)
    for task, (state, about) in want.items():
        if task not in rows:
            problems.append('%s: info weft-tasks has no %s' % (name, task))
            continue
        if rows[task][1] != state:
            problems.append('%s: %s is [%s], want [%s]' %
                            (name, task, rows[task][1], state))
        if not re.search(about, rows[task][2]):
            problems.append('%s: %s waits on %r, want %s' %
                            (name, task, rows[task][2], about))
    if not re.search(r'^5 live tasks$', out, re.M):
        problems.append('%s: not "5 live tasks"' % name)
    # The backtraces: each block from its "task N" line to the next.
    for block in re.split(r'\n(?=task \d+ ")', out):
        m = re.match(r'task (\d+) "([^"]*)"', block)
        if not m:
            continue
        task = m.group(2)
        fn = 'reader' if task.startswith('reader') else task
        if not re.search(r'#\d+ +0x[0-9a-f]+ in %s at \S*deadlock\.c:\d+' % fn,
                         block):
            problems.append('%s: weft-bt %s: no frame of %s() with its line '
                            '(deadlock.c)' % (name, task, fn))
        # The context's entry (gdb may name the assembler's hidden symbol
        # "weft.ctx_entry" in a clang build, or only its file).
        if not re.search(r'in (weft__|weft\.)ctx_entry|switch_\w+\.S:\d+',
                         block):
            problems.append('%s: weft-bt %s: does not reach weft__ctx_entry'
                            % (name, task))
    return rows


def view(name, args, weft_py, problems, frames=True):
    lines = ['info weft-tasks']
    for t in ('keeper', 'locker', 'joiner', 'napper'):
        lines.append('weft-bt %s' % t)
    lines.append('weft-bt joiner --fp')
    if frames:
        lines += ['weft-frame keeper 2', 'info locals', 'weft-frame off']
    out = gdb_run(args + commands(weft_py, lines))
    # The reader, by its id (its name is only known now).
    rows = check_view(name, out, [])
    reader = [n for n in rows if n.startswith('reader fd ')]
    if reader:
        out += gdb_run(args + commands(weft_py, ['weft-bt %s' %
                                                rows[reader[0]][0]]))
    check_view(name, out, problems)
    if frames and not re.search(r'^w = \{', out, re.M):
        problems.append('%s: weft-frame keeper 2 + info locals shows no wait '
                        'record w' % name)
    return out


def start(exe, env):
    p = subprocess.Popen([exe], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    line = p.stdout.readline()
    if not line.startswith('deadlocked'):
        p.kill()
        raise SystemExit('FAIL: deadlock did not deadlock: %r %s' %
                         (line, p.stderr.read()))
    return p


def main():
    exe, weft_py = [os.path.abspath(a) for a in sys.argv[1:3]]
    if not shutil.which('gdb'):
        print('gdb not found: skipped')
        return SKIP
    probe = subprocess.run(['gdb', '-batch', '-nx', '-ex', 'python print(1)'],
                           capture_output=True, text=True)
    if probe.stdout.strip() != '1':
        print('gdb has no Python: skipped')
        return SKIP
    problems = []
    outputs = []
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, WEFT_STACK_GUARD='mprotect')
        p = start(exe, env)
        try:
            # Attached to the live process.
            out = view('attached', ['-p', str(p.pid)], weft_py, problems)
            if re.search(r'ptrace: Operation not permitted', out):
                print('ptrace is not allowed here: skipped')
                return SKIP
            outputs.append(('attached', out))
            # gcore, then the core file.
            core = os.path.join(tmp, 'gcore')
            g = subprocess.run(['gcore', '-o', core, str(p.pid)],
                               capture_output=True, text=True, timeout=300)
            core += '.%d' % p.pid
            if not os.path.exists(core):
                problems.append('gcore wrote nothing: %s' % g.stderr)
            else:
                outputs.append(('gcore', view('gcore', [exe, core], weft_py,
                                             problems)))
        finally:
            p.kill()
            p.wait()
        # The kernel's own core file, where it writes one into the working
        # folder (core_pattern "core" and a core limit we may raise).
        pattern = open('/proc/sys/kernel/core_pattern').read().strip()
        if pattern in ('core', 'core.%p'):
            import resource
            try:
                resource.setrlimit(resource.RLIMIT_CORE,
                                   (resource.RLIM_INFINITY,
                                    resource.RLIM_INFINITY))
                env = dict(os.environ)
                p = subprocess.Popen([exe], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     env=env, cwd=tmp)
                if p.stdout.readline().startswith('deadlocked'):
                    p.send_signal(signal.SIGABRT)
                else:
                    p.kill()
                p.wait(timeout=120)
                cores = [f for f in os.listdir(tmp) if f.startswith('core')
                         and f != 'gcore.%d' % p.pid]
                if cores:
                    outputs.append(('kernel core', view(
                        'kernel core', [exe, os.path.join(tmp, cores[0])],
                        weft_py, problems)))
                else:
                    print('the kernel wrote no core file: that view skipped')
            except (ValueError, OSError) as e:
                print('no kernel core file (%s): that view skipped' % e)
        else:
            print('core_pattern is %r: the kernel core view skipped' % pattern)
    for name, out in outputs:
        print('==== %s\n%s' % (name, out))
    if problems:
        print('\n'.join('FAIL: ' + x for x in problems))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
