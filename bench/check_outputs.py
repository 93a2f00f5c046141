#!/usr/bin/env python3
"""check_outputs.py WEFT_BENCH OUTDIR [--plot]

A test of weft-bench's machine-readable outputs (meson test 'bench-outputs'):
runs `WEFT_BENCH --quick --only
switch,memory,fib,yield,idle,latency-read,echo --sweep 1,2 --json F [--plot
G]` and checks the JSON against the schema documented in bench/README.md
(weft-bench/6): every key there, types, states, one run value per run for
measured implementations (and per extra figure: echo's latency percentiles
and CPU time, yield's CPU time, idle's wait, latency-read's percentiles,
ticks and CPU time), min <= median <= max, weft's ratio 1, echo alone
higher-is-better, one cell per worker count for the pooled workloads and
one for the others, idle and latency-read (no speed) left out of the
scaling table; and, with --plot, that an SVG with the chart was written,
with a scaling panel for fib and none for idle or latency-read.
Exits 1 with the first mismatch.
"""
import json
import os
import subprocess
import sys


def fail(msg):
    print("check_outputs: " + msg, file=sys.stderr)
    sys.exit(1)


def need(obj, key, kind, where):
    if key not in obj:
        fail("%s: no key %r" % (where, key))
    if not isinstance(obj[key], kind):
        fail("%s.%s: %r is not %s" % (where, key, obj[key], kind))
    return obj[key]


# The pooled workloads of the run: one cell per worker count of the sweep.
POOLED = ("fib", "yield", "idle", "latency-read", "echo")


def main():
    if len(sys.argv) not in (3, 4):
        fail("usage: check_outputs.py WEFT_BENCH OUTDIR [--plot]")
    bench, outdir = sys.argv[1], sys.argv[2]
    plot = len(sys.argv) == 4 and sys.argv[3] == "--plot"
    os.makedirs(outdir, exist_ok=True)
    jpath = os.path.join(outdir, "quick.json")
    spath = os.path.join(outdir, "quick.svg")
    for p in (jpath, spath):
        if os.path.exists(p):
            os.remove(p)
    cmd = [bench, "--quick", "--only",
           "switch,memory,fib,yield,idle,latency-read,echo",
           "--sweep", "1,2", "--json", jpath]
    if plot:
        cmd += ["--plot", spath]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    if r.returncode != 0:
        fail("weft-bench exited %d" % r.returncode)
    if "scaling: speed-up over 1 worker" not in r.stdout:
        fail("no scaling table in the output of a sweep")
    scaling = r.stdout.split("scaling: speed-up over 1 worker", 1)[1]
    scaling = scaling.split("\ncounted, per operation", 1)[0]
    rows = [l.split()[0] for l in scaling.splitlines()[1:] if l[:1].strip()]
    if ("fib" not in rows or "yield" not in rows or "idle" in rows
            or "latency-read" in rows):
        fail("scaling table rows %r: want fib and yield, not idle or "
             "latency-read" % rows)

    with open(jpath) as f:
        d = json.load(f)
    if need(d, "schema", str, "") != "weft-bench/6":
        fail("schema is %r" % d["schema"])
    need(d, "date", str, "")
    m = need(d, "machine", dict, "")
    need(m, "cpu", str, "machine")
    need(m, "cpus", int, "machine")
    need(m, "kernel", str, "machine")
    need(m, "memory_bytes", int, "machine")
    need(m, "vendor", str, "machine")
    need(m, "family", int, "machine")
    need(m, "model", int, "machine")
    need(m, "meltdown", str, "machine")
    need(m, "page_table_isolation", bool, "machine")
    if need(m, "syscalls_counted", bool, "machine"):
        if m.get("syscalls_why") is not None:
            fail("machine: syscalls counted, yet a reason why not")
    else:
        need(m, "syscalls_why", str, "machine")
    for k in ("line_handoff_ns", "first_touch_ns"):
        v = need(m, k, (int, float), "machine")
        if v < 0:
            fail("machine: %s is %r" % (k, v))
    if m["cpus"] >= 2 and m["line_handoff_ns"] <= 0:
        fail("machine: line_handoff_ns not measured on %d CPUs" % m["cpus"])
    if m["first_touch_ns"] <= 0:
        fail("machine: first_touch_ns not measured")
    if "a cache line moves between two threads in" not in r.stdout:
        fail("no probe line in the header")
    if "\ncounted, per operation" not in r.stdout:
        fail("no counted table in the output")
    b = need(d, "build", dict, "")
    for k in ("weft_version", "compiler", "optimization", "sanitize", "event"):
        need(b, k, str, "build")
    peers = need(d, "peers", list, "")
    for p in peers:
        need(p, "name", str, "peers[]")
        need(p, "built", bool, "peers[]")
        need(p, "package", str, "peers[]")
        need(p, "version", str, "peers[]")
    o = need(d, "options", dict, "")
    runs = need(o, "runs", int, "options")
    if need(o, "quick", bool, "options") is not True or runs != 1:
        fail("options do not say --quick with 1 run: %r" % o)
    if need(o, "threads", list, "options") != [1, 2]:
        fail("options.threads is %r, asked for [1, 2]" % o["threads"])

    cells = need(d, "results", list, "")
    seen = {}
    for c in cells:
        w = need(c, "workload", str, "results[]")
        need(c, "unit", str, w)
        need(c, "n", int, w)
        t = need(c, "threads", int, w)
        pooled = need(c, "pooled", bool, w)
        if need(c, "higher_is_better", bool, w) != (w == "echo"):
            fail("%s: higher_is_better is %r" % (w, c["higher_is_better"]))
        seen.setdefault(w, []).append(t)
        impls = need(c, "impls", list, w)
        if not impls or impls[0].get("impl") != "weft":
            fail("%s: weft is not the first implementation" % w)
        for i in impls:
            where = "%s/T=%d/%s" % (w, t, i.get("impl"))
            need(i, "impl", str, where)
            state = need(i, "state", str, where)
            if state not in ("ok", "skipped", "n/a", "failed"):
                fail("%s: state %r" % (where, state))
            if state == "failed":
                fail("%s failed: %s" % (where, i.get("why")))
            vals = need(i, "runs", list, where)
            extra = need(i, "extra", dict, where)
            want_extra = {"echo": ["cpu", "p50", "p99"], "yield": ["cpu"],
                          "idle": ["wait"],
                          "latency-read": ["cpu", "p50", "p99", "ticks"],
                          }.get(w, [])
            if sorted(extra) != want_extra:
                fail("%s: extra figures %r" % (where, sorted(extra)))
            for name, e in extra.items():
                need(e, "unit", str, where + "/" + name)
                if len(need(e, "runs", list, where + "/" + name)) != len(vals):
                    fail("%s/%s: not one value per run" % (where, name))
                if state == "ok":
                    need(e, "median", (int, float), where + "/" + name)
            counted = i.get("counted_per_op", "missing")
            if counted == "missing":
                fail("%s: no counted_per_op" % where)
            if state == "ok":
                # Every measurement runs in a child: all are counted.
                if not isinstance(counted, dict) or sorted(counted) != sorted(
                        ["cpu_ns", "minflt", "nvcsw", "nivcsw", "syscalls"]):
                    fail("%s: counted_per_op %r" % (where, counted))
                for name, e in counted.items():
                    cr = need(e, "runs", list, where + "/" + name)
                    if len(cr) != len(vals):
                        fail("%s/%s: not one count per run" % (where, name))
                    med = e.get("median")
                    if name == "syscalls" and not m["syscalls_counted"]:
                        if med is not None:
                            fail("%s: syscalls counted, the machine says "
                                 "not" % where)
                    elif not isinstance(med, (int, float)) or med < 0:
                        fail("%s/%s: median %r" % (where, name, med))
                if counted["cpu_ns"]["median"] <= 0:
                    fail("%s: no CPU time counted" % where)
                if len(vals) != runs:
                    fail("%s: %d run values, %d runs" % (where, len(vals), runs))
                lo, med, hi = i["min"], i["median"], i["max"]
                if not lo <= med <= hi:
                    fail("%s: min %r median %r max %r" % (where, lo, med, hi))
                if i["impl"] == "weft" and i["ratio"] != 1:
                    fail("%s: weft's ratio is %r" % (where, i["ratio"]))
            elif state == "skipped" and not i.get("why"):
                fail("%s: skipped without a reason" % where)
        if pooled != (w in POOLED):
            fail("%s: pooled is %r" % (w, pooled))
    if sorted(seen) != sorted(POOLED + ("memory", "switch")):
        fail("workloads in the JSON: %r" % sorted(seen))
    if (any(sorted(seen[w]) != [1, 2] for w in POOLED)
            or seen["switch"] != [1] or seen["memory"] != [1]):
        fail("cells per worker count: %r" % seen)

    if plot:
        with open(spath) as f:
            svg = f.read()
        if "<svg" not in svg or "peer median / weft median" not in svg:
            fail("%s is not the chart" % spath)
        if "fib: speed-up over 1 worker" not in svg:
            fail("%s has no scaling panel for fib" % spath)
        for w in ("idle", "latency-read"):
            if w + ": speed-up" in svg:
                fail("%s has a scaling panel for %s (no speed)" % (spath, w))
    print("check_outputs: JSON%s as documented" % (" and plot" if plot else ""))


main()
