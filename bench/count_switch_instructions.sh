#!/bin/sh
# count_switch_instructions.sh BUILD_DIR [N1 N2]
#
# Instructions per one-way context switch, counted by callgrind, for weft
# and for the peers that were built.  Each program runs the "switch"
# workload (ping-pong round trips, two one-way switches each) twice, with
# N1 and N2 round trips.  Everything but the loop (process start-up, dynamic
# linking, creating the coroutine, printing) costs the same in both runs, so
#
#     (Ir(N2) - Ir(N1)) / (2 * (N2 - N1))
#
# is the user-space instruction count of one one-way switch, including the
# loop around it and the call into the library (resume/yield for weft,
# fiber::resume for Boost).  Instructions executed in the kernel are not
# counted: for swapcontext, whose sigprocmask system call dominates its
# cost, the figure is far below its real price.
#
# Needs valgrind.  Defaults: N1=100000, N2=200000.
set -eu

if [ $# -lt 1 ] || [ $# -gt 3 ]; then
    echo "usage: $0 BUILD_DIR [N1 N2]" >&2
    exit 2
fi
build=$1
n1=${2:-100000}
n2=${3:-200000}
if [ "$n2" -le "$n1" ]; then
    echo "$0: N2 must be larger than N1" >&2
    exit 2
fi
command -v valgrind >/dev/null 2>&1 || {
    echo "$0: valgrind not found (apt-get install valgrind)" >&2
    exit 2
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# total_ir OUTFILE PROGRAM ARGS...: run under callgrind, print its total Ir.
total_ir() {
    out=$1
    shift
    if ! valgrind --tool=callgrind --callgrind-out-file="$out" "$@" \
            >"$out.stdout" 2>"$out.log"; then
        echo "$0: failed under callgrind: $*" >&2
        cat "$out.log" >&2
        return 1
    fi
    # The callgrind output's "summary:" line holds the total event count.
    sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out"
}

# count NAME PROGRAM ARGS-BEFORE-N...: prints one table line.
count() {
    name=$1
    shift
    prog=$1
    if [ ! -x "$prog" ]; then
        printf '%-14s %s\n' "$name" "not built ($prog)"
        return 0
    fi
    ir1=$(total_ir "$tmp/$name.1" "$@" "$n1") || return 1
    ir2=$(total_ir "$tmp/$name.2" "$@" "$n2") || return 1
    awk -v n="$name" -v a="$ir1" -v b="$ir2" -v n1="$n1" -v n2="$n2" 'BEGIN {
        printf "%-14s %8.1f   (Ir %.0f at N=%.0f, %.0f at N=%.0f)\n",
               n, (b - a) / (2 * (n2 - n1)), a, n1, b, n2 }'
}

echo "instructions per one-way switch (callgrind Ir, user space only)"
count weft          "$build/bench/weft-switch-count"
count boost-context "$build/bench/peers/peer-boost-context" switch
count ucontext      "$build/bench/peers/peer-ucontext" switch
