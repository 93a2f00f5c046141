#!/usr/bin/env python3
"""check_trace.py PROGRAM: run PROGRAM with WEFT_TRACE set, then check the
Chrome trace-event JSON it wrote at exit.

PROGRAM prints "task ID NAME" for each task it makes.  The trace must be
JSON with the fields Chrome and Perfetto need; name every thread; have, for
each of those tasks, a spawn event, slices named by it that together end
exactly once "finished", and no slice of a task after its finish (a task
named "inline ..." may instead have no slice at all: weft_await may have
run its body inline, inside its awaiter's slice); pair every flow start
with one flow end; and have slices that nest on each thread (no two
overlap without one inside the other)."""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile


def main():
    exe = sys.argv[1]
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'trace.json')
        env = dict(os.environ, WEFT_TRACE=path)
        # meson test's exe wrapper in a cross build (qemu-aarch64).
        wrap = shlex.split(os.environ.get('MESON_EXE_WRAPPER', ''))
        p = subprocess.run(wrap + [exe], capture_output=True, text=True,
                           env=env, timeout=300)
        if p.returncode != 0:
            print(p.stdout, p.stderr)
            print('FAIL: exit status %d' % p.returncode)
            return 1
        made = {}
        for line in p.stdout.splitlines():
            m = re.match(r'task (\d+) (.*)$', line)
            if m:
                made[int(m.group(1))] = m.group(2)
        with open(path) as f:
            trace = json.load(f)

    events = trace.get('traceEvents')
    if not isinstance(events, list) or not events:
        print('FAIL: no traceEvents')
        return 1
    if trace.get('otherData', {}).get('dropped') != 0:
        problems.append('events were dropped')
    for e in events:
        for k in ('ph', 'pid', 'tid', 'ts'):
            if k not in e:
                problems.append('an event without %s: %r' % (k, e))
                break
        if e.get('ts', 0) < 0 or e.get('dur', 0) < 0:
            problems.append('negative time: %r' % e)
    named = {e['tid'] for e in events
             if e['ph'] == 'M' and e.get('name') == 'thread_name'}
    for e in events:
        if e['ph'] != 'M' and e['tid'] not in named:
            problems.append('thread %d has no name' % e['tid'])
            break
    if not any(e['ph'] == 'M' and e['args']['name'].startswith('traced-')
               for e in events if e.get('name') == 'thread_name'):
        problems.append('no worker track ("traced-N")')

    slices = [e for e in events if e['ph'] == 'X' and e.get('cat') == 'task']
    spawns = {e['args']['task'] for e in events
              if e['ph'] == 'i' and e.get('name') == 'spawn'}
    for tid_, name in sorted(made.items()):
        mine = [s for s in slices if s['args']['task'] == tid_]
        if tid_ not in spawns:
            problems.append('task %d (%s): no spawn event' % (tid_, name))
        if not mine:
            if not name.startswith('inline '):
                problems.append('task %d (%s): no slice' % (tid_, name))
            continue
        if any(s['name'] != 'task %d %s' % (tid_, name) for s in mine):
            problems.append('task %d: a slice named %r' % (tid_, mine[0]['name']))
        ends = [s for s in mine if s['args']['end'] == 'finished']
        if len(ends) != 1:
            problems.append('task %d (%s): %d slices end "finished"' %
                            (tid_, name, len(ends)))
        elif any(s['ts'] > ends[0]['ts'] for s in mine):
            problems.append('task %d: a slice after its finish' % tid_)
        reasons = {s['args']['end'] for s in mine}
        if name.startswith('member') and not reasons & {'chan recv', 'sleep'}:
            problems.append('task %d (%s): never parked on chan recv or sleep '
                            '(%s)' % (tid_, name, sorted(reasons)))

    starts = [e['id'] for e in events if e['ph'] == 's']
    ends = [e['id'] for e in events if e['ph'] == 'f']
    if not starts:
        problems.append('no flow (wake) events')
    if sorted(set(ends)) != sorted(ends):
        problems.append('a flow ends twice')
    if set(ends) - set(starts):
        problems.append('flows that end without a start: %d' %
                        len(set(ends) - set(starts)))
    if any(e.get('bp') != 'e' for e in events if e['ph'] == 'f'):
        problems.append('a flow end not bound to its enclosing slice')

    # Slices on one thread nest (or follow one another).
    eps = 1e-3
    by_tid = {}
    for s in [e for e in events if e['ph'] == 'X']:
        by_tid.setdefault(s['tid'], []).append(s)
    for tid, ss in by_tid.items():
        ss.sort(key=lambda s: (s['ts'], -s['dur']))
        stack = []
        for s in ss:
            while stack and stack[-1]['ts'] + stack[-1]['dur'] <= s['ts'] + eps:
                stack.pop()
            if stack and s['ts'] + s['dur'] > \
                    stack[-1]['ts'] + stack[-1]['dur'] + eps:
                problems.append('thread %d: %s overlaps %s' %
                                (tid, s['name'], stack[-1]['name']))
                break
            stack.append(s)

    print('%d events, %d task slices, %d flows, %d threads, %d tasks made' %
          (len(events), len(slices), len(starts), len(named), len(made)))
    if problems:
        print('\n'.join('FAIL: ' + p for p in problems[:40]))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
