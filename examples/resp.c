/* resp.c — reading Redis-protocol commands (resp.h). */
#include "resp.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Redis's rule for integers (string2ll): optional '-', digits, no
 * leading zeros, no spaces, within long long. */
bool resp_parse_ll(const char *s, size_t len, long long *out)
{
    if (len == 0 || len > 20)
        return false;
    size_t i = 0;
    bool neg = false;
    if (s[0] == '-') {
        neg = true;
        if (++i == len)
            return false;
    }
    if (s[i] == '0' && (len > i + 1 || neg)) /* "0" yes; "00", "-0" no */
        return false;
    unsigned long long v = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (ULLONG_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (unsigned long long)LLONG_MAX + 1)
            return false;
        *out = v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN
                                                      : -(long long)v;
    } else {
        if (v > (unsigned long long)LLONG_MAX)
            return false;
        *out = (long long)v;
    }
    return true;
}

static bool add_arg(resp_args *c, const char *p, size_t len)
{
    if (c->argc == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        const char **v = realloc(c->argv, cap * sizeof *v);
        if (v == NULL)
            return false;
        c->argv = v;
        size_t *l = realloc(c->argl, cap * sizeof *l);
        if (l == NULL)
            return false;
        c->argl = l;
        c->cap = cap;
    }
    c->argv[c->argc] = p;
    c->argl[c->argc] = len;
    c->argc++;
    return true;
}

/* Reads "<digits>\r\n" at p (up to end) as a long long: RESP_DONE with
 * *next past the CRLF, RESP_MORE, or RESP_ERROR. */
static int parse_line_number(const char *p, const char *end, long long *v,
                             const char **next)
{
    const char *cr = memchr(p, '\r', (size_t)(end - p));
    if (cr == NULL)
        return end - p > 32 ? RESP_ERROR : RESP_MORE;
    if (cr + 1 >= end)
        return RESP_MORE;
    if (cr[1] != '\n' || !resp_parse_ll(p, (size_t)(cr - p), v))
        return RESP_ERROR;
    *next = cr + 2;
    return RESP_DONE;
}

/* One RESP array of bulk strings at start (up to end): its arguments into
 * c->argv.  *why is set on RESP_ERROR. */
static int parse_multibulk(const char *start, const char *end,
                           size_t max_bulk, resp_args *c, size_t *consumed,
                           const char **why)
{
    const char *p = start + 1;
    long long count;
    int r = parse_line_number(p, end, &count, &p);
    if (r != RESP_DONE) {
        *why = "invalid multibulk length";
        return r;
    }
    if (count > RESP_ARGS_MAX) {
        *why = "invalid multibulk length";
        return RESP_ERROR;
    }
    c->argc = 0;
    for (long long i = 0; i < count; i++) {
        if (p >= end)
            return RESP_MORE;
        if (*p != '$') {
            /* The text goes into an error line: CR and LF become spaces
             * there (as Redis's error replies do). */
            snprintf(c->why, sizeof c->why, "expected '$', got '%c'",
                     *p == '\r' || *p == '\n' ? ' ' : *p);
            *why = c->why;
            return RESP_ERROR;
        }
        long long len;
        r = parse_line_number(p + 1, end, &len, &p);
        if (r != RESP_DONE || len < 0 || (unsigned long long)len > max_bulk) {
            *why = "invalid bulk length";
            return r == RESP_MORE ? RESP_MORE : RESP_ERROR;
        }
        if ((size_t)(end - p) < (size_t)len + 2)
            return RESP_MORE;
        if (p[len] != '\r' || p[len + 1] != '\n') {
            *why = "invalid bulk length"; /* the length was a lie */
            return RESP_ERROR;
        }
        if (!add_arg(c, p, (size_t)len)) {
            *why = "out of memory";
            return RESP_ERROR;
        }
        p += len + 2;
    }
    *consumed = (size_t)(p - start);
    return RESP_DONE;
}

static int hexval(int ch)
{
    return isdigit(ch) ? ch - '0' : isxdigit(ch) ? tolower(ch) - 'a' + 10 : -1;
}

/* An inline command: words separated by blanks; "..." with C escapes
 * (\n \r \t \b \a \\ \" \xHH) and '...' with \' are one word each, and a
 * closing quote must end its word (Redis's sdssplitargs).  Words are
 * unquoted in place. */
static int parse_inline(char *start, char *end, resp_args *c,
                        size_t *consumed, const char **why)
{
    char *nl = memchr(start, '\n', (size_t)(end - start));
    if (nl == NULL) {
        if (end - start > RESP_INLINE_MAX) {
            *why = "too big inline request";
            return RESP_ERROR;
        }
        return RESP_MORE;
    }
    char *lend = nl > start && nl[-1] == '\r' ? nl - 1 : nl;
    *consumed = (size_t)(nl + 1 - start);
    c->argc = 0;
    char *p = start;
    for (;;) {
        while (p < lend && isspace((unsigned char)*p))
            p++;
        if (p == lend)
            break;
        char *w = p, *o = p;
        if (*p == '"' || *p == '\'') {
            char q = *p++;
            for (;;) {
                if (p == lend) {
                    *why = "unbalanced quotes in request";
                    return RESP_ERROR;
                }
                if (q == '"' && *p == '\\' && p + 3 < lend && p[1] == 'x' &&
                    hexval(p[2]) >= 0 && hexval(p[3]) >= 0) {
                    *o++ = (char)(hexval(p[2]) * 16 + hexval(p[3]));
                    p += 4;
                } else if (*p == '\\' && p + 1 < lend &&
                           (q == '"' || p[1] == '\'')) {
                    char e = p[1];
                    *o++ = q == '\'' ? '\''
                         : e == 'n' ? '\n' : e == 'r' ? '\r'
                         : e == 't' ? '\t' : e == 'b' ? '\b'
                         : e == 'a' ? '\a' : e;
                    p += 2;
                } else if (*p == q) {
                    p++;
                    if (p < lend && !isspace((unsigned char)*p)) {
                        *why = "unbalanced quotes in request";
                        return RESP_ERROR;
                    }
                    break;
                } else {
                    *o++ = *p++;
                }
            }
        } else {
            while (p < lend && !isspace((unsigned char)*p))
                p++;
            o = p;
        }
        if (!add_arg(c, w, (size_t)(o - w))) {
            *why = "out of memory";
            return RESP_ERROR;
        }
    }
    return RESP_DONE;
}

int resp_parse(char *buf, size_t len, size_t max_bulk, resp_args *a,
               size_t *consumed, const char **why)
{
    if (len == 0)
        return RESP_MORE;
    return buf[0] == '*'
               ? parse_multibulk(buf, buf + len, max_bulk, a, consumed, why)
               : parse_inline(buf, buf + len, a, consumed, why);
}

void resp_args_free(resp_args *a)
{
    free(a->argv);
    free(a->argl);
    a->argv = NULL;
    a->argl = NULL;
    a->argc = a->cap = 0;
}
