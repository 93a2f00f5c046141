/*
 * consumer.c — the C program of the CMake consumer check (check.sh): a
 * pool, a fan-out of tasks awaited from a task, a channel between two
 * tasks, and the library's version against the header's.  Prints one
 * line and exits 0 when every answer is right, 1 otherwise.
 */
#include <weft/weft.h>

#include <stdint.h>
#include <stdio.h>

static weft_pool *pool;

static void *square(void *arg)
{
    intptr_t n = (intptr_t)arg;
    return (void *)(n * n);
}

static void *producer(void *arg)
{
    weft_chan *ch = arg;
    for (intptr_t i = 1; i <= 100; i++)
        if (weft_chan_send(ch, (void *)i) != 0)
            return (void *)1;
    weft_chan_close(ch);
    return NULL;
}

/* The sum of the squares of 1..10 (385) from ten tasks, then of 1..100
 * (5050) through a channel fed by another task. */
static void *work(void *arg)
{
    (void)arg;
    weft_task *t[10];
    for (intptr_t i = 0; i < 10; i++)
        if (weft_spawn(&t[i], pool, square, (void *)(i + 1), NULL) != 0)
            return (void *)-1;
    intptr_t squares = 0;
    for (int i = 0; i < 10; i++) {
        void *r;
        if (weft_await(t[i], &r) != 0)
            return (void *)-1;
        squares += (intptr_t)r;
    }

    weft_chan *ch;
    weft_task *p;
    if (weft_chan_create(&ch, 4) != 0 ||
        weft_spawn(&p, pool, producer, ch, NULL) != 0)
        return (void *)-1;
    intptr_t sum = 0;
    void *v;
    while (weft_chan_recv(ch, &v) == 0)
        sum += (intptr_t)v;
    void *pr;
    if (weft_await(p, &pr) != 0 || pr != NULL)
        return (void *)-1;
    weft_chan_destroy(ch);
    return (void *)(squares * 10000 + sum);
}

int main(void)
{
    if (weft_version() != WEFT_VERSION) {
        fprintf(stderr, "consumer_c: header %s, library %s\n",
                WEFT_VERSION_STRING, weft_version_string());
        return 1;
    }
    weft_pool_opts opts = {.threads = 2};
    weft_task *t;
    void *r = NULL;
    int rc = weft_pool_create(&pool, &opts);
    if (rc == 0)
        rc = weft_spawn(&t, pool, work, NULL, NULL);
    if (rc == 0)
        rc = weft_sync_wait(t, &r);
    if (rc != 0) {
        fprintf(stderr, "consumer_c: %s\n", weft_strerror(rc));
        return 1;
    }
    weft_pool_destroy(pool);
    if ((intptr_t)r != 385 * 10000 + 5050) {
        fprintf(stderr, "consumer_c: got %ld, want %ld\n", (long)(intptr_t)r,
                385L * 10000 + 5050);
        return 1;
    }
    printf("consumer_c: weft %s ok\n", weft_version_string());
    return 0;
}
