/*
 * wl_yield.c — ns per weft_yield() among 1000 tasks.
 *
 * A root task spawns 1000 tasks onto a pool of --threads workers; each calls
 * weft_yield() N times (N = 1000 in a full run: a million yields) and
 * returns how many it made; the root awaits all 1000 and sums.  A yield
 * requeues the caller behind the tasks already queued and switches to the
 * next one, so the figure is a scheduler round trip through the run queue
 * plus one task switch.  The clock runs inside the root task, from before
 * the first spawn to after the last await (the 1000 spawns and awaits are
 * in it; they are a fraction of a percent of the million yields).
 * Reported: elapsed / (1000 N).
 *
 * Peers: Go runtime.Gosched(), Boost.Fiber this_fiber::yield(), OpenMP
 * taskyield (a hint libgomp ignores), TBB n/a.
 *
 * Check: the total count of yields, 1000 N.
 */
#include <stdint.h>
#include <stdio.h>

#include "clock.h"
#include "wl_pool.h"
#include "workloads.h"

#define WHO "yield"
#define YIELD_TASKS 1000

typedef struct yield_run {
    weft_pool *pool;
    uint64_t n;
    uint64_t t0, t1;
    uint64_t total;
    bench_task_err err;
} yield_run;

static void *yield_task(void *arg)
{
    yield_run *r = arg;
    uint64_t count = 0;

    for (uint64_t i = 0; i < r->n; i++) {
        int rc = weft_yield();

        if (rc != 0) {
            bench_task_error(&r->err, rc, "weft_yield");
            break;
        }
        count++;
    }
    return (void *)(uintptr_t)count;
}

static void *yield_root(void *arg)
{
    yield_run *r = arg;
    weft_task *t[YIELD_TASKS];
    uint64_t total = 0;
    int spawned;

    r->t0 = bench_now_ns();
    for (spawned = 0; spawned < YIELD_TASKS; spawned++) {
        int rc = weft_spawn(&t[spawned], r->pool, yield_task, r, NULL);

        if (rc != 0) {
            bench_task_error(&r->err, rc, "weft_spawn");
            break;
        }
    }
    for (int i = 0; i < spawned; i++) {
        void *v;
        int rc = weft_await(t[i], &v);

        if (rc != 0)
            bench_task_error(&r->err, rc, "weft_await");
        else
            total += (uint64_t)(uintptr_t)v;
    }
    r->t1 = bench_now_ns();
    r->total = total;
    return NULL;
}

static int yield_weft(const bench_params *p, bench_sample *out)
{
    yield_run r = { .n = p->n };
    int rc;

    rc = bench_pool_session(&r.pool, p->threads, yield_root, &r, &r.err,
                            WHO);
    if (rc != 0)
        return rc;
    out->value = (double)(r.t1 - r.t0) / ((double)YIELD_TASKS * (double)p->n);
    out->check = r.total;
    return 0;
}

static uint64_t yield_expect(const bench_params *p)
{
    return (uint64_t)YIELD_TASKS * p->n;
}

static const char *const yield_peers[] = {
    "go", "boost-fiber", "tbb", "openmp", NULL
};

const bench_workload bench_wl_yield = {
    .name = "yield",
    .desc = "1000 tasks each weft_yield() N times",
    .unit = "ns/yield",
    .default_n = 1000,
    .quick_n = 10,
    .pooled = true,
    .run_weft = yield_weft,
    .expect = yield_expect,
    .peers = yield_peers,
};
