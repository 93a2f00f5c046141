/*
 * wl_timeout.c — ns per message when every receive carries a timeout that
 * does not expire.
 *
 * Why: a server's timers are mostly deadlines armed and disarmed without
 * firing (a read with a deadline that gets its data).  Each such wait costs
 * an insertion into the timer structure and a removal from it, on top of
 * the park and the wake; with many tasks on several workers, the timer
 * structure is shared by every worker that arms one.  This workload makes
 * that the hot path, so changes to the timers (issue 6: one heap per
 * worker instead of one per pool under a mutex) show in its figure.
 *
 * What: a root task on a pool of --threads workers spawns P = 500 pairs of
 * tasks (P = N when N < 500) and awaits them all.  Each pair, A and B,
 * passes its share of the N messages (N / P, the first N % P pairs one
 * more) one at a time through two channels of capacity 1, A -> B and
 * B -> A: message k (k = 0, 1, ...) is sent by A if k is even, by B if k
 * is odd, carries the value k + 1, and its receiver takes it with
 * weft_chan_recv_for(ch, &v, 1 s).  A receive that finds its channel
 * empty (nearly all of them: the partner sends only after its own receive)
 * parks with a 1 s timer armed; the partner's send wakes it and the
 * receiver disarms the timer.  A receive that returns anything but 0
 * (a timer that fired, above all) fails the run.  The pairs are spawned
 * from one worker and spread by stealing, so the two tasks of a pair may
 * run on different workers (weft has no pinning).
 *
 * The clock runs in the root task, from its first spawn to its last
 * await; the channels are made before and destroyed after.  Reported:
 * elapsed / N.
 *
 * Peers (same P, split and check): Go goroutines with cap-1 channels and a
 * select on the channel and a 1 s timer; Boost.Fiber buffered channels of
 * capacity 2 (its smallest) with pop_wait_for(1 s).
 *
 * Check: the number of messages received with the value expected at that
 * point (N): a lost message ends in a timeout, a duplicated or reordered
 * one is not counted.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <weft/chan.h>

#include "clock.h"
#include "wl_pool.h"
#include "workloads.h"

#define WHO "timeout"
#define TIMEOUT_PAIRS 500u
#define TIMEOUT_NS 1000000000u

typedef struct to_run to_run;

/* One task of a pair. */
typedef struct to_side {
    to_run *run;
    weft_chan *in, *out;
    uint64_t msgs;      /* the pair's messages, both directions     */
    uint64_t parity;    /* sends message k when k % 2 == parity      */
    uint64_t ok;        /* received with the expected value          */
} to_side;

struct to_run {
    weft_pool *pool;
    size_t tasks;       /* 2 P */
    to_side *sides;     /* A of pair j at 2j, B at 2j + 1 */
    weft_chan **chans;  /* pair j: 2j carries A -> B, 2j + 1 B -> A */
    weft_task **handles;
    uint64_t t0, t1;
    bench_task_err err;
};

static void *to_side_body(void *arg)
{
    to_side *s = arg;

    for (uint64_t k = 0; k < s->msgs; k++) {
        if (k % 2 == s->parity) {
            /* Never waits: the partner took message k - 2 from this
             * channel before it sent message k - 1. */
            int rc = weft_chan_send(s->out, (void *)(uintptr_t)(k + 1));

            if (rc != 0) {
                bench_task_error(&s->run->err, rc, "weft_chan_send");
                return NULL;
            }
        } else {
            void *v;
            int rc = weft_chan_recv_for(s->in, &v, TIMEOUT_NS);

            if (rc != 0) {
                bench_task_error(&s->run->err, rc, "weft_chan_recv_for");
                return NULL;
            }
            s->ok += (uintptr_t)v == k + 1;
        }
    }
    return NULL;
}

static void *to_root(void *arg)
{
    to_run *r = arg;
    size_t spawned;

    r->t0 = bench_now_ns();
    for (spawned = 0; spawned < r->tasks; spawned++) {
        int rc = weft_spawn(&r->handles[spawned], r->pool, to_side_body, &r->sides[spawned], NULL);
        if (rc != 0) {
            /* The partners of the missing tasks end by timeout. */
            bench_task_error(&r->err, rc, "weft_spawn");
            break;
        }
    }
    for (size_t i = 0; i < spawned; i++) {
        int rc = weft_await(r->handles[i], NULL);

        if (rc != 0)
            bench_task_error(&r->err, rc, "weft_await");
    }
    r->t1 = bench_now_ns();
    return NULL;
}

static uint64_t to_pairs(uint64_t n)
{
    return n < TIMEOUT_PAIRS ? n : TIMEOUT_PAIRS;
}

/* Destroys the channels made so far and frees the arrays; the first
 * error of a destroy, or 0. */
static int to_teardown(to_run *r)
{
    int rc = 0;

    for (size_t i = 0; r->chans != NULL && i < r->tasks; i++) {
        int rc2 = r->chans[i] != NULL ? weft_chan_destroy(r->chans[i]) : 0;

        if (rc2 != 0 && rc == 0) {
            fprintf(stderr, WHO ": weft_chan_destroy: %s\n", weft_strerror(rc2));
            rc = rc2;
        }
    }
    free(r->sides);
    free(r->chans);
    free(r->handles);
    return rc;
}

/* Makes the channels and the sides; on failure undoes what it made. */
static int to_setup(to_run *r, uint64_t n)
{
    uint64_t pairs = to_pairs(n);

    r->tasks = (size_t)(2 * pairs);
    r->sides = calloc(r->tasks, sizeof *r->sides);
    r->chans = calloc(r->tasks, sizeof *r->chans);
    r->handles = calloc(r->tasks, sizeof *r->handles);
    if (r->sides == NULL || r->chans == NULL || r->handles == NULL) {
        fprintf(stderr, WHO ": no memory for %zu tasks\n", r->tasks);
        to_teardown(r);
        return -ENOMEM;
    }
    for (size_t i = 0; i < r->tasks; i++) {
        int rc = weft_chan_create(&r->chans[i], 1);

        if (rc != 0) {
            fprintf(stderr, WHO ": weft_chan_create: %s\n", weft_strerror(rc));
            to_teardown(r);
            return rc;
        }
    }
    for (size_t j = 0; j < pairs; j++) {
        uint64_t msgs = n / pairs + (j < n % pairs);
        to_side *a = &r->sides[2 * j], *b = &r->sides[2 * j + 1];

        *a = (to_side){ .run = r, .in = r->chans[2 * j + 1],
                        .out = r->chans[2 * j], .msgs = msgs, .parity = 0 };
        *b = (to_side){ .run = r, .in = r->chans[2 * j],
                        .out = r->chans[2 * j + 1], .msgs = msgs, .parity = 1 };
    }
    return 0;
}

static int to_weft(const bench_params *p, bench_sample *out)
{
    to_run r = { .tasks = 0 };
    uint64_t ok = 0;
    int rc = to_setup(&r, p->n);

    if (rc != 0)
        return rc;
    rc = bench_pool_session(&r.pool, p->threads, to_root, &r, &r.err, WHO);
    for (size_t i = 0; i < r.tasks; i++)
        ok += r.sides[i].ok;
    int rc2 = to_teardown(&r);
    if (rc == 0)
        rc = rc2;
    if (rc != 0)
        return rc;
    out->value = (double)(r.t1 - r.t0) / (double)p->n;
    out->check = ok;
    return 0;
}

static uint64_t to_expect(const bench_params *p)
{
    return p->n;
}

static const char *const to_peers[] = { "go", "boost-fiber", NULL };

const bench_workload bench_wl_timeout = {
    .name = "timeout",
    .desc = "500 task pairs pass N messages, every receive with a 1 s timeout",
    .unit = "ns/message",
    .default_n = 1000000,
    .pooled = true,
    .run_weft = to_weft,
    .expect = to_expect,
    .peers = to_peers,
};
