#!/usr/bin/env python3
"""check_deadlock.py DEADLOCK: run `deadlock --dump` and check its dump.

The dump must show each of the five tasks, parked where deadlock.c parks
it, with the object and what the dump knows of it (the mutex's holder, the
task awaited, the fd) and a stack that reaches the task's own function.
Then the same through WEFT_DUMP_SIGNAL: `deadlock` (deadlocked for good)
with WEFT_DUMP_SIGNAL=SIGQUIT writes the dump to stderr at each SIGQUIT
and goes on."""
import os
import re
import select
import shlex
import signal
import subprocess
import sys
import time


# In a cross build, meson test names the command that runs a target
# program (the cross file's exe_wrapper, qemu-aarch64).
WRAP = shlex.split(os.environ.get('MESON_EXE_WRAPPER', ''))


def main():
    exe = sys.argv[1]
    p = subprocess.run(WRAP + [exe, '--dump'], capture_output=True, text=True,
                       timeout=120)
    out = p.stdout
    problems = []
    if p.returncode != 0:
        problems.append('exit status %d; stderr:\n%s' % (p.returncode,
                                                         p.stderr))
    blocks = {}
    ids = {}
    for block in re.split(r'\n(?=task \d+ )', out):
        m = re.match(r'task (\d+) "([^"]*)" \[([^\]]*)\]( worker \d+)?', block)
        if m:
            blocks[m.group(2)] = (m.group(3), block)
            ids[m.group(2)] = m.group(1)
    if not re.search(r'weft pool "deadlock" \(2 workers\):', out):
        problems.append('no pool header')
    if not re.search(r'^5 live tasks$', out, re.M):
        problems.append('not "5 live tasks"')
    reader = [n for n in blocks if n.startswith('reader fd ')]
    want = {
        'keeper': (r'^chan recv, ', [r'  chan 0x[0-9a-f]+ \(capacity 0\)',
                                     r'\bkeeper\+0x']),
        'locker': (r'^mutex, ', [r'  mutex 0x[0-9a-f]+, held by task %s\n'
                                 % ids.get('keeper', '?'),
                                 r'\blocker\+0x']),
        'joiner': (r'^await, ', [r'  task %s\n' % ids.get('locker', '?'),
                                 r'\bjoiner\+0x']),
        'napper': (r'^sleep, ', [r'  deadline in \d', r'\bnapper\+0x',
                                 r'\bweft_sleep\+0x']),
    }
    if reader:
        want[reader[0]] = (r'^fd read, ', [r'  fd \d+\n', r'\breader\+0x',
                                          r'\bweft__fd_park\+0x'])
    else:
        problems.append('no task named "reader fd N"')
    for name, (state, lines) in want.items():
        if name not in blocks:
            problems.append('no task "%s"' % name)
            continue
        st, block = blocks[name]
        if not re.search(state, st):
            problems.append('%s: state [%s], want %s' % (name, st, state))
        if not re.search(r' worker [01]\n', block.split('\n')[0] + '\n'):
            problems.append('%s: no worker' % name)
        for line in lines:
            if not re.search(line, block):
                problems.append('%s: nothing matches %r' % (name, line))
        if not re.search(r'  stack [\d.]+ KiB in use, \d+ KiB touched, of '
                         r'\d+ KiB', block):
            problems.append('%s: no stack line' % name)
        # The innermost frame is weft's (the switch's callers tail-call),
        # the outermost the task's entry.
        if not re.search(r'#0  (weft_|await_until|lock_slow|wait_in)\w*\+0x',
                         block):
            problems.append('%s: frame #0 is not in weft' % name)
        if not re.search(r'  #\d+ +weft__ctx_entry\+0x', block):
            problems.append('%s: the stack does not reach its entry' % name)
    if not re.search(r'^resolved$', out, re.M):
        problems.append('not resolved')
    problems += on_signal(exe)
    if problems:
        print(out)
        print('\n'.join('FAIL: ' + p for p in problems))
        return 1
    print(out)
    return 0


def read_until(f, marker, seconds):
    """What f gives until marker appears, or seconds pass."""
    text = ''
    end = time.monotonic() + seconds
    while marker not in text:
        left = end - time.monotonic()
        if left <= 0 or not select.select([f], [], [], left)[0]:
            break
        chunk = os.read(f.fileno(), 65536).decode()
        if not chunk:
            break
        text += chunk
    return text


def on_signal(exe):
    problems = []
    env = dict(os.environ, WEFT_DUMP_SIGNAL='SIGQUIT')
    p = subprocess.Popen(WRAP + [exe], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    try:
        if 'deadlocked' not in read_until(p.stdout, '\n', 30):
            return ['WEFT_DUMP_SIGNAL: did not deadlock']
        for i in range(2):
            p.send_signal(signal.SIGQUIT)
            text = read_until(p.stderr, 'weft: end of dump\n', 30)
            for want in ('weft: dump (signal %d, pid %d)' %
                         (signal.SIGQUIT, p.pid),
                         'weft pool "deadlock" (2 workers):',
                         '"keeper" [chan recv, ', '"locker" [mutex, ',
                         '5 live tasks', 'weft: end of dump'):
                if want not in text:
                    problems.append('WEFT_DUMP_SIGNAL, dump %d: no %r in:\n%s'
                                    % (i + 1, want, text))
        if p.poll() is not None:
            problems.append('WEFT_DUMP_SIGNAL: the program did not go on')
    finally:
        p.kill()
        p.wait()
    return problems


if __name__ == '__main__':
    sys.exit(main())
