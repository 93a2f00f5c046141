/*
 * base/utf8.h — cutting names to a byte limit without splitting a
 * character, and writing them as valid UTF-8 (internal).
 *
 * Names (tasks', coroutines', pools', threads') are kept in fixed buffers
 * and the kernel keeps 15 bytes of a thread's name.  A cut in the middle
 * of a multi-byte UTF-8 character leaves an invalid sequence, which a
 * trace's JSON must not carry (a JSON text is UTF-8: Perfetto and Python's
 * json refuse it).  So names are cut at a character boundary, and the
 * trace writer replaces whatever is still invalid (a name that was never
 * UTF-8) with U+FFFD.  And the one-line reports (dumps, stall warnings)
 * print a name's control characters as '?'.
 */
#ifndef WEFT_BASE_UTF8_H
#define WEFT_BASE_UTF8_H

#include <stddef.h>
#include <string.h>

/* The length of s's longest prefix of at most max bytes that does not end
 * inside a multi-byte character: strnlen(s, max), less the lead and
 * continuation bytes of a character that the limit would split. */
static inline size_t weft__utf8_prefix(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    /* s[n] is the first byte left out (it exists: no NUL before it).
     * Unless it continues a character, nothing is split. */
    if (n < max || ((unsigned char)s[n] & 0xc0) != 0x80)
        return n;
    size_t cut = n;
    while (cut > 0 && ((unsigned char)s[cut - 1] & 0xc0) == 0x80)
        cut--;
    /* s[cut - 1] starts the split character if it is a lead byte; else
     * the bytes before n were no character anyway and stay. */
    if (cut > 0 && ((unsigned char)s[cut - 1] & 0xc0) == 0xc0)
        return cut - 1;
    return n;
}

/* The length (1-4) of the valid UTF-8 character at s, or 0 if s does not
 * start one (RFC 3629: no overlong forms, no surrogates, at most
 * U+10FFFF).  s is NUL-terminated: a NUL ends any sequence. */
static inline size_t weft__utf8_char(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    unsigned char lo = 0x80, hi = 0xbf;
    size_t len;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else {
        return 0;
    }
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

/* c, or '?' for a control character (what a one-line report prints in
 * place of a newline or an escape in a name). */
static inline char weft__printable(char c)
{
    unsigned char u = (unsigned char)c;
    return u < 0x20 || u == 0x7f ? '?' : c;
}

#endif /* WEFT_BASE_UTF8_H */
