#!/bin/sh
# check_table.sh EXE README — README's bad-input table is, line for line,
# the table that test_bad_input runs (`EXE --table` prints it).
set -eu
want=$(mktemp)
got=$(mktemp)
trap 'rm -f "$want" "$got"' EXIT
"$1" --table >"$want"
sed -n '/^<!-- bad-input table/,/^<!-- end of bad-input table/p' "$2" |
    grep '^|' >"$got" || true
if ! diff -u "$got" "$want"; then
    echo "README.md's bad-input table differs from '$1 --table' (+ lines)" >&2
    exit 1
fi
