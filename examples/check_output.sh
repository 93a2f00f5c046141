#!/bin/sh
# check_output.sh PROGRAM INPUT EXPECTED
# Runs PROGRAM with INPUT on stdin (no trailing newline added) and fails
# unless its stdout is exactly EXPECTED followed by one newline.  In a
# cross build PROGRAM runs through the exe wrapper that meson test names,
# shell-quoted, in MESON_EXE_WRAPPER (qemu-aarch64).
set -u
if [ $# -ne 3 ]; then
    echo "usage: $0 program input expected" >&2
    exit 2
fi
prog=$1
input=$2
expected=$3

# Command substitution strips trailing newlines, so append a sentinel to
# see them: the output must end in exactly one newline.
got=$(printf '%s' "$input" | eval "${MESON_EXE_WRAPPER:-}" '"$prog"'; rc=$?
    printf 'x'; exit $rc)
rc=$?
if [ $rc -ne 0 ]; then
    echo "FAIL: $prog exited with status $rc" >&2
    exit 1
fi
want=$(printf '%s\nx' "$expected")
if [ "$got" != "$want" ]; then
    echo "FAIL: $prog with input '$input'" >&2
    echo "expected: '$expected' + newline" >&2
    echo "got:      '${got%x}'" >&2
    exit 1
fi
echo "ok: '$input' -> '$expected'"
