/*
 * resp.h — the request side of Redis's protocol (RESP2), as the key-value
 * example server reads it: a command is either an array of bulk strings
 * ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n") or an inline line of words ("GET k\r\n",
 * Redis's quoting).  Kept apart from the server so that a fuzzer can drive
 * it (tests/fuzz/fuzz_resp.c).
 *
 * resp_parse reads the first command in buf[0..len): RESP_DONE with its
 * arguments in *a (pointers into buf: an inline command is unquoted in
 * place, so buf must be writable) and its length in *consumed; RESP_MORE
 * when buf holds only part of it (nothing is kept: call again from the
 * same start once more has arrived); RESP_ERROR with *why set to the text
 * Redis puts after "ERR Protocol error: " (the connection is then to be
 * closed).  A command of no arguments (an empty line, "*0", "*-1") is
 * RESP_DONE with argc 0: Redis skips those.
 *
 * Limits: a bulk string over max_bulk bytes, or an array of more than
 * RESP_ARGS_MAX, or an inline line of more than RESP_INLINE_MAX bytes is
 * RESP_ERROR; so is a number line longer than any number.
 */
#ifndef WEFT_EXAMPLES_RESP_H
#define WEFT_EXAMPLES_RESP_H

#include <stdbool.h>
#include <stddef.h>

enum { RESP_ERROR = -1, RESP_MORE = 0, RESP_DONE = 1 };

#define RESP_INLINE_MAX (64 * 1024)
#define RESP_ARGS_MAX (1024 * 1024)

typedef struct resp_args {
    const char **argv;
    size_t *argl;
    size_t argc, cap;  /* cap: room in argv and argl, grown as needed */
    char why[64];      /* an error's detail, when it needs the input's words */
} resp_args;

int resp_parse(char *buf, size_t len, size_t max_bulk, resp_args *a,
               size_t *consumed, const char **why);

/* Frees what resp_parse allocated in *a (which may be zero-filled). */
void resp_args_free(resp_args *a);

/* Redis's rule for integers (string2ll): optional '-', digits, no leading
 * zeros, no spaces, within long long. */
bool resp_parse_ll(const char *s, size_t len, long long *out);

#endif /* WEFT_EXAMPLES_RESP_H */
