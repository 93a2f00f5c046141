/*
 * fuzz_resp.c — libFuzzer harness for the key-value example server's
 * hand-written protocol reader (examples/resp.c), under AddressSanitizer:
 * any read or write outside the input is a crash.
 *
 * The input is a byte stream as a client might send it.  It is parsed
 * command by command, as the server does (the rest after each complete
 * command), with a bulk limit of 64 bytes so that the limit is reached
 * often.  For every answer the contract of resp.h is checked:
 *
 *  - RESP_DONE: consumed is within 1..rest, every argument lies inside the
 *    consumed bytes; an array's arguments are exactly its bulk strings
 *    (each no longer than the limit), so their total is below consumed.
 *  - Feeding any shorter prefix of a complete array gives RESP_MORE (the
 *    server then waits for more and parses again from the same start),
 *    never a different command; likewise a prefix of an inline line that
 *    stops before its newline (RESP_ERROR past RESP_INLINE_MAX bytes).
 *  - RESP_ERROR sets why to a non-empty text without CR or LF (it goes
 *    into an error line) and ends the stream, as it closes a connection.
 *  - RESP_MORE on the whole rest ends the stream too (nothing more comes).
 */
#include "resp.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BULK_LIMIT 64

static void check(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_resp: %s\n", what);
        abort();
    }
}

/* Parses a private copy of buf[0..len) (inline parsing writes in place). */
static int parse_copy(const uint8_t *buf, size_t len, resp_args *a,
                      size_t *consumed, const char **why, char **copy)
{
    *copy = malloc(len ? len : 1);
    check(*copy != NULL, "out of memory");
    memcpy(*copy, buf, len);
    return resp_parse(*copy, len, BULK_LIMIT, a, consumed, why);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    resp_args a = {0}, b = {0};
    size_t off = 0;
    while (off < size) {
        size_t rest = size - off, consumed = 0;
        const char *why = NULL;
        char *copy;
        int r = parse_copy(data + off, rest, &a, &consumed, &why, &copy);
        if (r == RESP_ERROR) {
            check(why != NULL && why[0] != '\0', "an error without words");
            check(strpbrk(why, "\r\n") == NULL, "CR or LF in an error");
            free(copy);
            break;
        }
        if (r == RESP_MORE) {
            free(copy);
            break;
        }
        check(r == RESP_DONE, "an unknown answer");
        check(consumed >= 1 && consumed <= rest, "consumed out of range");
        size_t total = 0;
        for (size_t i = 0; i < a.argc; i++) {
            check(a.argv[i] >= copy &&
                      a.argv[i] + a.argl[i] <= copy + consumed,
                  "an argument outside the command");
            total += a.argl[i];
        }
        bool array = data[off] == '*';
        if (array) {
            for (size_t i = 0; i < a.argc; i++)
                check(a.argl[i] <= BULK_LIMIT, "a bulk string over the limit");
            check(total < consumed, "arguments longer than the frame");
        }
        free(copy);
        /* Prefixes: a few cut points, the last byte always among them. */
        size_t cuts[] = {consumed - 1, consumed / 2, consumed / 3, 1};
        for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
            size_t cut = cuts[k];
            if (cut == 0 || cut >= consumed)
                continue;
            size_t c2 = 0;
            const char *why2 = NULL;
            char *copy2;
            int r2 = parse_copy(data + off, cut, &b, &c2, &why2, &copy2);
            free(copy2);
            /* An inline line is complete at its newline; an array only
             * at its last byte. */
            if (array)
                check(r2 == RESP_MORE, "a prefix of an array was not MORE");
            else if (memchr(data + off, '\n', cut) == NULL)
                /* Past the inline limit with no newline yet: too big
                 * (Redis's rule too: a line is measured while it waits). */
                check(r2 == (cut > RESP_INLINE_MAX ? RESP_ERROR : RESP_MORE),
                      "a prefix of an inline line was not MORE");
        }
        off += consumed;
    }
    resp_args_free(&a);
    resp_args_free(&b);
    return 0;
}
