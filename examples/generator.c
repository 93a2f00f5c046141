/*
 * generator.c — a Lua-style generator: every permutation of a word.
 *
 * The generator is an ordinary recursive function (Lua's permgen, from
 * "Programming in Lua") that calls weft_coro_yield from deep inside its
 * recursion; a stackful coroutine keeps the whole recursion alive between
 * values.  next() wraps weft_coro_resume so the caller reads it like an
 * iterator.
 *
 * Reads one word from stdin (default "abc") and prints each permutation on
 * its own line.
 *
 * Build: cc generator.c $(pkg-config --cflags --libs weft)
 *   (docs/building.md: a prefix the loader does not search needs an rpath)
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <weft/weft.h>

static void swap(char *a, int i, int j)
{
    char t = a[i];
    a[i] = a[j];
    a[j] = t;
}

/* Yield every permutation of a[0..n-1] (with a[n..] fixed). */
static void permgen(char *a, int n)
{
    if (n <= 1) {
        weft_coro_yield(a, NULL); /* hand one result to next() */
        return;
    }
    for (int i = 0; i < n; i++) {
        swap(a, i, n - 1); /* put the i-th element last */
        permgen(a, n - 1); /* permute the rest */
        swap(a, i, n - 1); /* restore */
    }
}

static void *permutations(void *word)
{
    permgen(word, (int)strlen(word));
    return NULL; /* done: next() sees NULL */
}

/* The next value, or NULL once the generator has finished. */
static const char *next(weft_coro *gen)
{
    void *value = NULL;
    if (weft_coro_resume(gen, NULL, &value) != 0)
        return NULL;
    return value;
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        bool help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
        fprintf(help ? stdout : stderr,
                "usage: generator < WORD   (prints every permutation of the "
                "word read from standard input, \"abc\" if none)\n");
        return help ? 0 : 2;
    }
    char word[64];
    size_t len = 0;
    int c;
    while (len < sizeof word - 1 && (c = getchar()) != EOF && !isspace(c))
        word[len++] = (char)c;
    word[len] = '\0';
    if (len == 0)
        strcpy(word, "abc");

    weft_coro *gen;
    int err = weft_coro_create(&gen, permutations, NULL);
    if (err != 0) {
        fprintf(stderr, "generator: %s\n", weft_strerror(err));
        return 1;
    }
    /* The first resume passes the word to permutations(). */
    void *value = NULL;
    if (weft_coro_resume(gen, word, &value) != 0)
        return 1;
    for (const char *p = value; p != NULL; p = next(gen))
        puts(p);
    weft_coro_destroy(gen);
    return 0;
}
