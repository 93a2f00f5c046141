/*
 * fib.c — fork-join on a pool, started from main with weft_sync_wait.
 *
 * Reads N from stdin and prints fib(N), computed by tasks: each call spawns
 * its first half, computes the second itself, then awaits the first.  The
 * await usually finds the child still queued and runs it as a plain call
 * (no stack, no switch); a worker that stole it meanwhile runs it in
 * parallel, and the await then waits for it.
 *
 *   echo 30 | ./fib        ->  832040
 */
#include <weft/weft.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static weft_pool *pool;

static void *fib(void *arg)
{
    long n = (long)arg;
    if (n < 2)
        return (void *)n;
    weft_task *child;
    if (weft_spawn(&child, pool, fib, (void *)(n - 1), NULL) != 0)
        abort(); /* only on out-of-memory: keep the example short */
    long b = (long)fib((void *)(n - 2));
    void *a;
    weft_await(child, &a);
    return (void *)((long)a + b);
}

/* The task main waits for: it hops from main's thread onto the pool. */
static void *entry(void *arg)
{
    weft_schedule(pool);
    return fib(arg);
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        bool help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
        fprintf(help ? stdout : stderr, "usage: echo N | fib   (0 <= N <= 40)\n");
        return help ? 0 : 2;
    }
    long n;
    if (scanf("%ld", &n) != 1 || n < 0 || n > 40) {
        fprintf(stderr, "usage: echo N | fib   (0 <= N <= 40)\n");
        return 2;
    }
    int err = weft_pool_create(&pool, NULL); /* one worker per CPU */
    if (err) {
        fprintf(stderr, "weft_pool_create: %s\n", weft_strerror(err));
        return 1;
    }
    weft_task *t;
    void *r;
    if ((err = weft_task_create(&t, entry, (void *)n, NULL)) != 0 ||
        (err = weft_sync_wait(t, &r)) != 0) {
        fprintf(stderr, "weft: %s\n", weft_strerror(err));
        return 1;
    }
    printf("%ld\n", (long)r);
    return weft_pool_destroy(pool) == 0 ? 0 : 1;
}
