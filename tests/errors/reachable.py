#!/usr/bin/env python3
"""reachable.py SRC_DIR: the error codes each public function can return,
found from the code paths, including those of the calls it makes.

For every function defined in SRC_DIR (static ones per file, the others
by name across files), what it can return is
  - the codes written in its body as -ECODE (not those it compares a
    result with: `== -ECODE`, `!= -ECODE`);
  - `-errno`, a system call's error passed on (SYS below);
  - what every weft function it names can return: a call, or a function
    handed on as a pointer (io.c's tries), which may be called; but not
    a call whose result is cast to void, nor a function given to
    pthread_create or pthread_once (it runs elsewhere);
and a function whose own comment (above its definition, or above its
declaration in a header) names codes and which passes SYS on has SYS
replaced by those codes: the comment is where a system call's errors are
made exact (weft__netpoll_get's "-EMFILE, -ENFILE, -ENOMEM").  This is an
over-approximation: a code a function only gets in a case the caller
excludes (an untimed wait's -ETIMEDOUT) is reachable here.  Such codes are
excused one by one, with the reason, in not_returned.txt;
check_errors.py compares what remains with the headers.

Run alone: one line per public function, "name CODE CODE ..." (SYS for
system errors passed on, WAIT for a call that can wait: one that reaches
a park of a task or of a thread)."""
import os
import re
import sys

IDENT = re.compile(r'[A-Za-z_]\w*')

# Where a call waits: a task parks, a thread blocks.  A function that
# reaches one of these can wait (WAIT in its set).
WAITS = {'weft__wait_block', 'weft__task_block', 'weft__parker_park'}


def strip(text):
    """text with comments and string/char literals blanked (same length,
    newlines kept), and the comments as (end offset, text)."""
    out = []
    comments = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            comments.append((j, text[i:j]))
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            comments.append((j, text[i:j]))
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r'[^\n]', ' ', text[i + 1:j - 1]) + c
                       if j - i >= 2 else text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return ''.join(out), comments


def preceding_comment(text, comments, pos):
    """The comment that ends right before pos (only blank space, or a
    return type and qualifiers on the same declaration, in between)."""
    best = None
    for end, body in comments:
        if end <= pos:
            best = (end, body)
        else:
            break
    if not best:
        return ''
    between = text[best[0]:pos]
    # Nothing but the declaration's own leading words in between.
    if ';' in between or '}' in between or '{' in between:
        return ''
    return best[1]


DEF = re.compile(r'([A-Za-z_]\w*)\s*\(')


def definitions(path):
    """(name, static, exported, body, comment) for each function defined
    in path;
    (name, comment) for each prototype."""
    raw = open(path).read()
    text, comments = strip(raw)
    defs, protos = [], []
    depth = 0
    i = 0
    n = len(text)
    # Walk top-level text; at depth 0 look for `name(...) {` or `;`.
    stmt_start = 0
    while i < n:
        c = text[i]
        if c == '{':
            if depth == 0:
                head = text[stmt_start:i]
                m = None
                for m in DEF.finditer(head):
                    pass
                # the function's name: the identifier before the first
                # '(' that opens its parameter list at paren depth 0
                name = fn_name(head)
                j = match_brace(text, i)
                if name and not head.lstrip().startswith(('struct', 'enum',
                                                          'union', 'typedef')) \
                        and '=' not in head.split('(')[0]:
                    lead = head.split(name)[0]
                    defs.append((name, 'static' in lead,
                                 bool(re.search(r'\bWEFT_(EXPORT|API)\b',
                                                lead)),
                                 text[i:j], preceding_comment(
                                     text, comments, stmt_start +
                                     len(head) - len(head.lstrip()))))
                i = j
                stmt_start = i
                continue
            depth += 1
        elif c == '}':
            depth -= 1
        elif c == ';' and depth == 0:
            head = text[stmt_start:i]
            name = fn_name(head)
            if name and '(' in head:
                protos.append((name, preceding_comment(
                    text, comments, stmt_start + len(head) -
                    len(head.lstrip()))))
            stmt_start = i + 1
        elif c == '#' and depth == 0 and (i == 0 or text[i - 1] == '\n'):
            # a preprocessor line (continued by backslashes)
            j = i
            while True:
                e = text.find('\n', j)
                if e < 0:
                    e = n
                    break
                if text[e - 1] != '\\':
                    break
                j = e + 1
            i = e
            stmt_start = i
            continue
        i += 1
    return defs, protos


def fn_name(head):
    """The name a declaration head declares as a function, or None.
    Attributes before the name (`static __attribute__((noinline)) int
    f(...)`) are skipped."""
    depth = 0
    for k, ch in enumerate(head):
        if ch == '(':
            if depth == 0:
                m = re.search(r'([A-Za-z_]\w*)\s*$', head[:k])
                if m and m.group(1) == '__attribute__':
                    pass
                elif m and m.group(1) not in ('sizeof', 'defined', 'if',
                                              'while', 'for', 'switch',
                                              'return'):
                    return m.group(1)
                else:
                    return None
            depth += 1
        elif ch == ')':
            depth -= 1
    return None


def match_brace(text, i):
    depth = 0
    for j in range(i, len(text)):
        if text[j] == '{':
            depth += 1
        elif text[j] == '}':
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def literal_codes(body):
    codes = set()
    for m in re.finditer(r'([=!]=\s*)?-\s*(E[A-Z0-9]+|errno)\b', body):
        if m.group(1):
            continue  # a comparison: the code is handled, not returned
        codes.add('SYS' if m.group(2) == 'errno' else m.group(2))
    return codes


def doc_codes(comment):
    return set(re.findall(r'-(E[A-Z0-9]+)\b', comment))


def analyse(src_dir):
    """{public name: set of codes}."""
    funcs = {}      # key -> dict(body, comment, file)
    by_name = {}    # global name -> key
    statics = {}    # (file, name) -> key
    proto_doc = {}  # name -> comment of a prototype
    public = set()
    for root, dirs, files in os.walk(src_dir):
        # src/hook/ is another library (libweft-hook.so), whose functions
        # are libc's names (read, pthread_mutex_lock...): libweft's own
        # calls of those names are libc's, not these.
        if os.path.relpath(root, src_dir) == '.':
            dirs[:] = [d for d in dirs if d != 'hook']
        for f in sorted(files):
            if not f.endswith(('.c', '.h')):
                continue
            path = os.path.join(root, f)
            defs, protos = definitions(path)
            for name, comment in protos:
                if comment and name not in proto_doc:
                    proto_doc[name] = comment
            for name, static, exported, body, comment in defs:
                # A header's static inline functions are one per name.
                static = static and path.endswith('.c')
                key = (path, name) if static else name
                funcs[key] = {'body': body, 'comment': comment,
                              'file': path, 'name': name}
                if static:
                    statics[(path, name)] = key
                else:
                    by_name[name] = key
                if exported:
                    public.add(name)

    def resolve(file, name):
        return statics.get((file, name)) or by_name.get(name)

    callees = {}
    for key, fn in funcs.items():
        # A call whose result is cast away returns nothing to us, nor does
        # a function that runs elsewhere (a thread's, a once-routine).
        body = re.sub(r'\(\s*void\s*\)\s*[A-Za-z_]\w*\s*\(', '(',
                      fn['body'])
        body = re.sub(r'\b(pthread_once|pthread_create|weft__pthread_create|'
                      r'weft__quiet_thread_create|'
                      r'atexit)\s*\([^;]*\)', '', body)
        names = set(IDENT.findall(body))
        names.discard(fn['name'])
        callees[key] = {resolve(fn['file'], n) for n in names} - {None}

    memo = {}

    def codes_of(key, stack):
        if key in memo:
            return memo[key]
        if key in stack:
            return set()  # recursion: the outer call collects the rest
        stack.add(key)
        fn = funcs[key]
        got = literal_codes(fn['body'])
        if fn['name'] in WAITS:
            got.add('WAIT')
        for c in callees[key]:
            got |= codes_of(c, stack)
        stack.discard(key)
        doc = doc_codes(fn['comment'] or proto_doc.get(fn['name'], ''))
        if 'SYS' in got and doc and fn['name'] not in public:
            got = (got - {'SYS'}) | doc
        memo[key] = got
        return got

    result = {}
    for name in public:
        result[name] = codes_of(by_name[name], set())
    return result


def main():
    for name, codes in sorted(analyse(sys.argv[1]).items()):
        print(name, *sorted(codes))


if __name__ == '__main__':
    main()
