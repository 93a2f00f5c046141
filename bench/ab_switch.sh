#!/bin/sh
# ab_switch.sh RUNS PROGRAM...
#
# Interleaved A/B timing of the switch workload: each round runs every
# PROGRAM once (10M round trips), in turn, so that the host's slow
# minutes fall on all of them alike; then prints each one's best and
# median ns per one-way switch.  A PROGRAM is a weft-switch-count build
# (copy build-bench/bench/weft-switch-count aside before rebuilding with
# a change) or a peer whose name contains "peer-" (run as `PEER switch
# N`, e.g. build-bench/bench/peers/peer-boost-context).
#
# Example: sh bench/ab_switch.sh 21 /tmp/before /tmp/after \
#              build-bench/bench/peers/peer-boost-context
set -eu

if [ $# -lt 2 ]; then
    echo "usage: $0 RUNS PROGRAM..." >&2
    exit 2
fi
runs=$1
shift
n=10000000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

i=0
for p in "$@"; do
    [ -x "$p" ] || { echo "$0: not a program: $p" >&2; exit 2; }
    i=$((i + 1))
    : >"$tmp/$i"
done
r=0
while [ "$r" -lt "$runs" ]; do
    i=0
    for p in "$@"; do
        i=$((i + 1))
        case $(basename "$p") in
        *peer-*) out=$("$p" switch "$n") ;;
        *) out=$("$p" "$n") ;;
        esac
        # Both print "result <ns> <check>".
        echo "$out" | awk '$1 == "result" { print $2 }' >>"$tmp/$i"
    done
    r=$((r + 1))
done
i=0
for p in "$@"; do
    i=$((i + 1))
    sort -g "$tmp/$i" | awk -v name="$p" '{ a[NR] = $1 }
        END { if (NR == 0) { printf "%s: no result\n", name; exit 1 }
              printf "%-50s best %.3f  median %.3f  ns (%d runs)\n",
                     name, a[1], a[int((NR + 1) / 2)], NR }'
done
