#!/usr/bin/env python3
"""render.py TRACE.json OUT.html [--window auto|all|FROM:TO]

Writes a copy of tools/trace/viewer.html with the trace built in, to open
offline (or to screenshot with headless Chromium: scripts/dev trace-shot).
--window picks the stretches of time shown, one panel each, in
microseconds from the trace's first event: `all`, FROM:TO, or `auto` (the
default): the whole trace, and under it each burst of work (task slices
with no idle gap of more than a fifth of the trace between them), up to
three, so that a program that works, waits and works again shows its
bursts at a readable scale."""
import json
import os
import sys


def auto_window(trace):
    events = [e for e in trace['traceEvents'] if e.get('ph') != 'M']
    t0 = min(e['ts'] for e in events)
    t1 = max(e['ts'] + e.get('dur', 0) for e in events)
    tasks = sorted((e['ts'], e['ts'] + e['dur']) for e in events
                   if e.get('ph') == 'X' and e.get('cat') == 'task')
    panels = [[0.0, t1 - t0, 'whole trace']]
    if not tasks or t1 <= t0:
        return panels
    bursts = [[tasks[0][0], tasks[0][1]]]
    for a, b in tasks[1:]:
        if a - bursts[-1][1] > 0.2 * (t1 - t0):
            bursts.append([a, b])
        else:
            bursts[-1][1] = max(bursts[-1][1], b)
    if len(bursts) < 2:
        return panels
    for i, (a, b) in enumerate(bursts[:3]):
        pad = 0.1 * max(b - a, 1.0)
        panels.append([a - t0 - pad, b - t0 + pad,
                       'burst %d of work' % (i + 1)])
    return panels


def main():
    if len(sys.argv) not in (3, 5):
        print(__doc__, file=sys.stderr)
        return 2
    src, out = sys.argv[1:3]
    mode = sys.argv[4] if len(sys.argv) == 5 else 'auto'
    with open(src) as f:
        trace = json.load(f)
    window = None
    if mode == 'auto':
        window = auto_window(trace)
    elif mode != 'all':
        a, b = mode.split(':')
        window = [[float(a), float(b), mode]]
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, 'viewer.html')) as f:
        page = f.read()
    # Inside <script>: no "</" may close it early.
    data = json.dumps(trace).replace('</', '<\\/')
    page = page.replace('/*TRACE*/null', data, 1)
    page = page.replace('/*WINDOW*/null', json.dumps(window), 1)
    with open(out, 'w') as f:
        f.write(page)
    return 0


if __name__ == '__main__':
    sys.exit(main())
