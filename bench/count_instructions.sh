#!/bin/sh
# count_instructions.sh BUILD_DIR WORKLOAD N1 N2 [THREADS]
#
# Instructions per operation of one weft-bench workload, counted by
# callgrind: `weft-bench --child WORKLOAD N THREADS` is run with N1 and
# with N2, and everything but the loop (start-up, the pool, printing)
# cancels out of
#
#     (Ir(N2) - Ir(N1)) / (N2 - N1)
#
# Prints both totals and that figure.  docs/debugging.md ("What it costs")
# uses it; count_switch_instructions.sh does the same for the peers.
# Needs valgrind.
set -eu
if [ $# -lt 4 ] || [ $# -gt 5 ]; then
    echo "usage: $0 BUILD_DIR WORKLOAD N1 N2 [THREADS]" >&2
    exit 2
fi
build=$1 workload=$2 n1=$3 n2=$4 threads=${5:-1}
command -v valgrind >/dev/null 2>&1 || {
    echo "$0: valgrind not found (apt-get install valgrind)" >&2
    exit 2
}
# Without the pool's monitor (WEFT_NO_MONITOR): its work is per unit of
# wall time, which valgrind stretches some fifty-fold, and under that
# slowness it sees a task that spawns or computes for long as stuck and
# sends spares to run the loop's tasks: neither is the per-operation
# count of the hot paths this is for.  The monitor's own cost is measured
# apart (docs/performance.md, "Responsive under load").
ir() {
    WEFT_NO_MONITOR=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        "$build/bench/weft-bench" --child "$workload" "$1" "$threads" 2>&1 |
        sed -n 's/.*I *refs: *//p' | tr -d ,
}
a=$(ir "$n1")
b=$(ir "$n2")
echo "$workload: $a instructions at $n1, $b at $n2," \
    "$(awk -v a="$a" -v b="$b" -v n1="$n1" -v n2="$n2" \
        'BEGIN { printf "%.1f", (b - a) / (n2 - n1) }') per operation"
