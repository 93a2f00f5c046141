#!/bin/sh
# check_table.sh EXE README — README's bad-input table is, line for line,
# the table that test_bad_input runs (`EXE --table` prints it).
# In a cross build meson test puts the command that runs EXE (the cross
# file's exe_wrapper: qemu-aarch64 -L /), shell-quoted, in
# MESON_EXE_WRAPPER; empty or unset, EXE runs on its own.
set -eu
want=$(mktemp)
got=$(mktemp)
trap 'rm -f "$want" "$got"' EXIT
eval "${MESON_EXE_WRAPPER:-}" '"$1" --table' >"$want"
sed -n '/^<!-- bad-input table/,/^<!-- end of bad-input table/p' "$2" |
    grep '^|' >"$got" || true
if ! diff -u "$got" "$want"; then
    echo "README.md's bad-input table differs from '$1 --table' (+ lines)" >&2
    exit 1
fi
