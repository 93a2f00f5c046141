#!/usr/bin/env python3
"""contract.py INCLUDE_DIR SRC_DIR NOT_RETURNED: the classes of promise
the headers make, checked over every header and every call (run by
check_errors.py; alone it prints the problems it finds):

1. The headers' text: no line over 80 columns, and every error code
   written with its sign (-EBADF, never EBADF: documented.py reads only
   signed codes, so an unsigned one is a code no check sees).
2. Each declaration lists every code its call can return: the codes
   reachable from the code paths (reachable.py) are each documented, or
   excused in NOT_RETURNED with the reason (one line: name -ECODE why).
   A plain form (one with a _for sibling) never times out, so -ETIMEDOUT
   reached through the code it shares with its _for form needs no excuse.
   A system call's errors passed on (-errno) must be said: "read(2)'s
   errors" and the like.  An excuse for a code that is documented, or no
   longer reachable, is stale.
3. weft.h's blanket rules hold for every call: a call that can wait (its
   code paths reach a park, reachable.py's WAIT, or it documents
   -ECANCELED, the code of a wait in a cancelled task) has a _for form,
   unless weft.h's Timeouts paragraph names it as an exception (or
   NOT_RETURNED says "name WAIT why": a try that shares a wait's code);
   every _for form documents -ETIMEDOUT and only they do; every call
   weft.h names exists."""
import errno
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import documented  # noqa: E402
import reachable  # noqa: E402

MAX_COLUMNS = 80
ERRNO_NAMES = set(errno.errorcode.values())
SYSTEM_ERRORS = re.compile(r"\w+\(2\)'s errors|errors? of \w+\(2\)")


def headers(include_dir):
    for f in sorted(os.listdir(include_dir)):
        if f.endswith('.h') or f.endswith('.h.in'):
            yield f, os.path.join(include_dir, f)


def check_text(include_dir):
    problems = []
    for f, path in headers(include_dir):
        for i, line in enumerate(open(path), 1):
            line = line.rstrip('\n')
            if len(line) > MAX_COLUMNS:
                problems.append('%s:%d: %d columns (at most %d)' %
                                (f, i, len(line), MAX_COLUMNS))
            for m in re.finditer(r'(?<![-\w])(E[A-Z][A-Z0-9]+)\b', line):
                if m.group(1) in ERRNO_NAMES:
                    problems.append('%s:%d: %s without its sign (-%s)' %
                                    (f, i, m.group(1), m.group(1)))
    return problems


def comments(include_dir):
    """{function: its declaration's comment}."""
    out = {}
    for _, path in headers(include_dir):
        for name, comment in documented.functions(path):
            out[name] = comment
    return out


def flat(comment):
    """A comment's words on one line."""
    return ' '.join(' '.join(re.sub(r'^\s*/?\*+/?', ' ', l)
                             for l in comment.splitlines()).split())


def says_system_errors(said, fn):
    """Whether fn's comment, or that of the call it is documented "as"
    (along the chain), says which system call's errors it passes on."""
    seen = set()
    while fn and fn not in seen:
        seen.add(fn)
        text = flat(said.get(fn, ''))
        if SYSTEM_ERRORS.search(text):
            return True
        m = re.search(r'\bas (weft_\w+)\b', text)
        fn = m.group(1) if m else None
    return False


def excuses(path):
    """{(function, CODE): reason}."""
    out = {}
    for n, line in enumerate(open(path), 1):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        m = re.match(r'(weft_\w+)\s+(?:-(E[A-Z0-9]+)|(SYS|WAIT))\s+(.+)$',
                     line)
        if not m:
            raise SystemExit('%s:%d: not "name -ECODE why", "name SYS why" '
                             'nor "name WAIT why"' % (path, n))
        out[(m.group(1), m.group(2) or m.group(3))] = m.group(4)
    return out


def check_reachable(include_dir, src_dir, not_returned):
    problems = []
    docs = documented.documented(include_dir)
    said = comments(include_dir)
    found = reachable.analyse(src_dir)
    excused = excuses(not_returned)
    used = set()
    for fn in sorted(found):
        if fn not in docs:
            continue  # exported, but declared in no public header
        base = fn[:-4] if fn.endswith('_for') else fn
        for code in sorted(found[fn] - docs[fn] - {'WAIT'}):
            if code == 'SYS':
                if says_system_errors(said, fn):
                    continue
                if (fn, code) in excused:
                    used.add((fn, code))
                    continue
                problems.append('%s: passes on a system call\'s errors '
                                '(-errno), its header does not say which' %
                                fn)
                continue
            if code == 'ETIMEDOUT' and base == fn and fn + '_for' in docs:
                continue  # a plain form (see the top)
            if (fn, code) in excused:
                used.add((fn, code))
                continue
            problems.append('%s: can return -%s (from its code paths), its '
                            'header does not say so' % (fn, code))
    for (fn, code), why in sorted(excused.items()):
        if (fn, code) not in used and code != 'WAIT':
            problems.append('not_returned.txt: %s %s is stale (documented, '
                            'or no longer reachable)' %
                            (fn, code if code == 'SYS' else '-' + code))
    return problems


def rules_text(include_dir, title):
    """The paragraph of weft.h's top comment that starts with `title`."""
    text = open(os.path.join(include_dir, 'weft.h')).read()
    top = text[:text.find('*/')]
    m = re.search(r'\* ' + title + r'\.(.*?)(?=\n \*\n)', top, re.S)
    return m.group(1) if m else ''


def check_rules(include_dir, src_dir, not_returned):
    problems = []
    docs = documented.documented(include_dir)
    found = reachable.analyse(src_dir)
    excused = excuses(not_returned)
    coro = {n for n, _ in documented.functions(
        os.path.join(include_dir, 'coro.h'))}
    timeouts = rules_text(include_dir, 'Timeouts')
    no_for = set(re.findall(r'weft_\w+', timeouts.split('exceptions')[-1])) \
        if 'exceptions' in timeouts else set()
    for fn in sorted(docs):
        codes = docs[fn]
        is_for = fn.endswith('_for')
        waits = 'WAIT' in found.get(fn, ()) and (fn, 'WAIT') not in excused
        if (waits or ('ECANCELED' in codes and fn not in coro)) and \
                not is_for and fn + '_for' not in docs and fn not in no_for:
            problems.append('%s: can wait but has no _for form, and weft.h '
                            'does not name it as an exception' % fn)
        if (fn, 'WAIT') in excused and 'WAIT' not in found.get(fn, ()):
            problems.append('not_returned.txt: %s WAIT is stale' % fn)
        if is_for and 'ETIMEDOUT' not in codes:
            problems.append('%s: a _for form that does not document '
                            '-ETIMEDOUT' % fn)
        if not is_for and 'ETIMEDOUT' in codes:
            problems.append('%s: documents -ETIMEDOUT but is no _for form' % fn)
    weft_h = open(os.path.join(include_dir, 'weft.h')).read()
    top = weft_h[:weft_h.find('*/')]
    types = set()
    for _, path in headers(include_dir):
        types |= set(re.findall(r'\btypedef\b[^;]*?\b(weft_\w+)\s*;',
                                open(path).read(), re.S))
    for name in sorted(set(re.findall(r'\bweft_\w+\b', top))):
        if name not in docs and name not in types and \
                not name.startswith('weft_X'):
            problems.append('weft.h names %s, which no header declares' % name)
    return problems


def check(include_dir, src_dir, not_returned):
    return (check_text(include_dir) +
            check_rules(include_dir, src_dir, not_returned) +
            check_reachable(include_dir, src_dir, not_returned))


def main():
    problems = check(*sys.argv[1:4])
    print('\n'.join(problems) if problems else 'no problems')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
