/*
 * trace_program.c — a small program to trace (check_trace.py runs it with
 * WEFT_TRACE set): tasks that pass a token around a ring of channels,
 * sleep, yield, and spawn and await a child each.  Prints one line per
 * task it made, "task ID NAME", so that the checker can match the trace
 * against them.  Half the children are awaited with weft_await, which
 * runs a child still queued as a plain call (no slice of its own: it is
 * part of its awaiter's), named "inline ..."; the other half with
 * weft_await_for, which never does.
 */
#include <weft/weft.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { RING = 8, ROUNDS = 20 };

static weft_pool *pool;
static weft_chan *ring[RING];
static FILE *made;

static void *child(void *arg) { return arg; }

static void *member(void *arg)
{
    long i = (long)arg;
    for (int r = 0; r < ROUNDS; r++) {
        void *token;
        if (i == 0 && r == 0)
            token = (void *)1;
        else if (weft_chan_recv(ring[i], &token) != 0)
            return (void *)1;
        if (r == ROUNDS / 2) {
            weft_task *c;
            char name[32];
            snprintf(name, sizeof name, "%schild of %ld",
                     i % 2 ? "inline " : "", i);
            weft_task_opts o = {.name = name};
            if (weft_spawn(&c, pool, child, NULL, &o) != 0)
                return (void *)1;
            fprintf(made, "task %llu %s\n",
                    (unsigned long long)weft_task_id(c), name);
            if ((i % 2 ? weft_await(c, NULL)
                       : weft_await_for(c, NULL, UINT64_MAX)) != 0)
                return (void *)1;
        }
        weft_sleep(100000); /* 0.1 ms */
        weft_yield();
        /* The last round of the last member has no one to pass to. */
        if (!(i == RING - 1 && r == ROUNDS - 1) &&
            weft_chan_send(ring[(i + 1) % RING], token) != 0)
            return (void *)1;
    }
    return NULL;
}

int main(void)
{
    made = stdout;
    weft_pool_opts po = {.threads = 2, .name = "traced"};
    if (weft_pool_create(&pool, &po) != 0)
        return 1;
    for (int i = 0; i < RING; i++)
        if (weft_chan_create(&ring[i], 1) != 0)
            return 1;
    weft_task *t[RING];
    for (long i = 0; i < RING; i++) {
        char name[32];
        snprintf(name, sizeof name, "member %ld", i);
        weft_task_opts o = {.name = name};
        if (weft_spawn(&t[i], pool, member, (void *)i, &o) != 0)
            return 1;
        printf("task %llu %s\n", (unsigned long long)weft_task_id(t[i]), name);
    }
    int bad = 0;
    for (int i = 0; i < RING; i++) {
        void *r;
        bad |= weft_sync_wait(t[i], &r) != 0 || r != NULL;
    }
    fflush(stdout);
    bad |= weft_pool_destroy(pool) != 0;
    for (int i = 0; i < RING; i++)
        bad |= weft_chan_destroy(ring[i]) != 0;
    /* WEFT_TRACE: the trace is written at exit. */
    return bad;
}
