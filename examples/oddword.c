/*
 * oddword.c — Dijkstra's odd-word problem with three symmetric coroutines.
 *
 * Input: words of letters separated by one space and ended by '.'.
 * Output: the same, with every word at an odd position (the 2nd, 4th, ...)
 * reversed:   whats the matter with Kansas.  ->  whats eht matter htiw Kansas.
 *
 * The three coroutines pass control to each other with weft_coro_transfer,
 * never through main:
 *
 *   reader   reads one character at a time and hands it to the writer of
 *            the current word, switching writer after each space;
 *   forward  prints each character it is handed;
 *   reverse  reverses a word on its own stack: it recurses once per letter
 *            and prints the letters as the recursion unwinds.
 *
 * A writer asks for the next character by transferring back to the reader.
 * When the reader has passed on the final '.', it returns; control then goes
 * to its resumer, main, which destroys the three coroutines.  Destroying a
 * writer parked in get() makes its transfer return -ECANCELED, and it ends.
 *
 * Build: cc oddword.c $(pkg-config --cflags --libs weft)
 *   (docs/building.md: a prefix the loader does not search needs an rpath)
 */
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include <weft/weft.h>

static weft_coro *reader, *forward, *reverse;

#define AS_PTR(c) ((void *)(intptr_t)(c))
#define AS_INT(p) ((int)(intptr_t)(p))

/* In a writer: let the reader run, and take the next character it sends.
 * EOF once the writer is being destroyed. */
static int get(void)
{
    void *c;
    if (weft_coro_transfer(reader, NULL, &c) != 0)
        return EOF;
    return AS_INT(c);
}

static void *reader_body(void *arg)
{
    (void)arg;
    weft_coro *writer = forward; /* the 1st word is written as is */
    for (;;) {
        int c = getchar();
        if (c == EOF)
            c = '.'; /* a missing final '.' is supplied */
        /* The writer takes c and transfers back here for the next one. */
        if (weft_coro_transfer(writer, AS_PTR(c), NULL) != 0)
            return NULL;
        if (c == '.')
            return NULL; /* back to main, which resumed us */
        if (c == ' ')
            writer = (writer == forward) ? reverse : forward;
    }
}

static void *forward_body(void *first)
{
    for (int c = AS_INT(first); c != EOF; c = get())
        putchar(c);
    return NULL;
}

/* Print a word backwards: each call holds one letter on the coroutine's
 * stack until the separator after the word has been read.  Returns the
 * separator (' ', '.' or EOF). */
static int reverse_word(int c)
{
    if (c == ' ' || c == '.' || c == EOF)
        return c;
    int sep = reverse_word(get());
    putchar(c);
    return sep;
}

static void *reverse_body(void *first)
{
    for (int c = AS_INT(first); c != EOF; c = get()) {
        int sep = reverse_word(c);
        if (sep == EOF)
            break;
        putchar(sep);
    }
    return NULL;
}

static void check(int err, const char *what)
{
    if (err != 0) {
        fprintf(stderr, "oddword: %s: %s\n", what, weft_strerror(err));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        bool help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
        fprintf(help ? stdout : stderr,
                "usage: oddword < TEXT   (words of letters, one space "
                "apart, ended by '.': every second word reversed)\n");
        return help ? 0 : 2;
    }
    check(weft_coro_create(&reader, reader_body, NULL), "create reader");
    check(weft_coro_create(&forward, forward_body, NULL), "create forward");
    check(weft_coro_create(&reverse, reverse_body, NULL), "create reverse");

    /* Returns when the reader returns, after the final '.'. */
    check(weft_coro_resume(reader, NULL, NULL), "resume reader");
    putchar('\n');

    check(weft_coro_destroy(reader), "destroy reader");
    check(weft_coro_destroy(forward), "destroy forward");
    check(weft_coro_destroy(reverse), "destroy reverse");
    return 0;
}
