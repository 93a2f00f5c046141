#!/usr/bin/env python3
"""documented.py INCLUDE_DIR: print, for each public function (WEFT_API),
the error codes its header comment documents, one line each:
    function CODE CODE ...
A function documented "as weft_X, ... also -ECODE" gets weft_X's codes too.
Used by check_errors.py; run alone it shows what the headers promise."""
import os
import re
import sys


def functions(path):
    """(name, comment) for each WEFT_API declaration of a header."""
    text = open(path).read()
    out = []
    # A declaration: the comment block right before it (if any), then
    # WEFT_API ... name(
    for m in re.finditer(r'WEFT_API[^;(]*?\b(weft_\w+)\s*\(', text):
        name = m.group(1)
        before = text[:m.start()].rstrip()
        comment = ''
        if before.endswith('*/'):
            start = before.rfind('/*')
            comment = before[start:]
        out.append((name, comment))
    return out


def documented(include_dir, own=None):
    """{function: codes}; with `own` a dict, also {function: base} for the
    functions documented "as weft_X" into it (their own codes are those
    their comment names; the rest are weft_X's)."""
    docs = {}
    refs = {}
    for f in sorted(os.listdir(include_dir)):
        if not (f.endswith('.h') or f.endswith('.h.in')):
            continue
        for name, comment in functions(os.path.join(include_dir, f)):
            # The codes it returns: those named from "Returns" on, and in
            # an "also ..." clause (the _for forms); a code mentioned
            # before (what a cancelled task sees) is not one.
            at = comment.find('Returns')
            said = comment[at:] if at >= 0 else ''
            for also in re.finditer(r'\balso\b[^.]*', comment):
                said += ' ' + also.group(0)
            codes = set(re.findall(r'-(E[A-Z0-9]+)\b', said))
            docs[name] = codes
            m = re.search(r'\bas (weft_\w+)\b', comment)
            if m and m.group(1) != name:
                refs[name] = m.group(1)
    if own is not None:
        own.update({n: (set(docs[n]), b) for n, b in refs.items()})
    # Resolve "as weft_X" chains.
    changed = True
    while changed:
        changed = False
        for name, base in refs.items():
            extra = docs.get(base, set()) - docs[name]
            if extra:
                docs[name] |= extra
                changed = True
    return docs


def main():
    docs = documented(sys.argv[1])
    for name in sorted(docs):
        print(name, *sorted(docs[name]))


if __name__ == '__main__':
    main()
