#!/usr/bin/env python3
"""check_errors.py INCLUDE_DIR TEST_ERRORS DOCS_ERRORS_MD SRC_DIR NOT_RETURNED
                 UNTESTED

The error contract, checked four ways (meson test 'errors_documented'):

1. Every error code a public function's header documents (documented.py)
   has a row in test_errors' table that makes the call return it, and
   every row's code is one its header documents: the headers and the
   table say the same.  UNTESTED names the few codes no test can make
   happen (the system's whole file table full...), each with the reason.  A _for form documented "as weft_X, ...; also
   -ECODE" needs rows for its own codes; the ones it shares with weft_X
   (the same code path) are covered by weft_X's rows.
2. Every public function has at least one row (its bad input, or what it
   does with NULL or with nothing to refuse).
3. docs/errors.md holds, between its markers, exactly the table that
   `test_errors --table` prints (which is generated from the rows that
   run, so the document cannot drift from what is tested).
4. The classes of promise of contract.py: the headers' text (codes with
   their signs, 80 columns), every code a call's code paths can return
   documented (or excused, with the reason, in NOT_RETURNED), and
   weft.h's blanket rules true for every call.

Rows that need an allocation to fail run only in the fault-injection
build; they are in the table, and counted here, in every build."""
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import contract  # noqa: E402
import documented  # noqa: E402


def main():
    include_dir, exe, doc, src_dir, not_returned, untested_txt = \
        sys.argv[1:7]
    untested = contract.excuses(untested_txt)
    used = set()
    own = {}
    docs = documented.documented(include_dir, own)
    # In a cross build, meson test hands over the command that runs a
    # target program (the cross file's exe_wrapper).
    run = shlex.split(os.environ.get('MESON_EXE_WRAPPER', '')) + [exe]
    listing = subprocess.run(run + ['--list'], capture_output=True,
                             text=True, check=True).stdout
    rows = {}
    for line in listing.splitlines():
        fn, code, _ = line.split('\t', 2)
        rows.setdefault(fn, set())
        if code != '-':
            rows[fn].add(code)
    problems = []
    for fn in sorted(docs):
        if fn not in rows:
            problems.append('%s: no row at all' % fn)
            continue
        # A form documented "as weft_X" shares weft_X's code: its own
        # codes need its own rows, the rest are weft_X's rows (or, along
        # a chain of "as", those of the form weft_X is documented as).
        covered = set(rows[fn])
        at, shared = fn, None
        while at in own:
            codes, base = own[at]
            shared = (docs[fn] - codes) if shared is None else \
                shared - codes
            covered |= (rows.get(base, set()) |
                        {c for (f, c) in untested if f == base}) & shared
            at = base
        for code in sorted(docs[fn] - covered):
            if (fn, code) in untested:
                used.add((fn, code))
                continue
            problems.append('%s: documents -%s, no row returns it' %
                            (fn, code))
        for code in sorted(rows[fn] - docs[fn]):
            problems.append('%s: a row returns -%s, its header does not '
                            'say so' % (fn, code))
    for fn in sorted(set(rows) - set(docs)):
        problems.append('%s: rows for a function no header declares' % fn)
    for fn, code in sorted(set(untested) - used):
        problems.append('untested.txt: %s -%s is stale (a row returns it, '
                        'or its header no longer says it)' % (fn, code))

    table = subprocess.run(run + ['--table'], capture_output=True,
                           text=True, check=True).stdout.splitlines()
    text = open(doc).read().splitlines()
    try:
        a = next(i for i, l in enumerate(text)
                 if l.startswith('<!-- errors table'))
        b = next(i for i, l in enumerate(text)
                 if l.startswith('<!-- end of errors table'))
        got = [l for l in text[a + 1:b] if l.startswith('|')]
    except StopIteration:
        got = None
    if got is None:
        problems.append('%s: no <!-- errors table --> markers' % doc)
    elif got != table:
        problems.append('%s: the table differs from `%s --table` '
                        '(regenerate it: scripts/dev errors-table)' %
                        (doc, os.path.basename(exe)))
    problems += contract.check(include_dir, src_dir, not_returned)
    if problems:
        print('\n'.join(problems), file=sys.stderr)
        return 1
    print('%d functions, %d documented codes, all with rows; %s matches' %
          (len(docs), sum(len(c) for c in docs.values()), doc))
    return 0


if __name__ == '__main__':
    sys.exit(main())
