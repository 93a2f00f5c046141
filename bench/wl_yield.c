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
 * Reported: elapsed / (1000 N), and as an extra figure `cpu`, the process's
 * CPU time (user + system, every thread: cpu.h) over the same region per
 * yield, in ns: a worker that spins instead of sleeping pays for it there.
 *
 * Peers: Go runtime.Gosched(), Boost.Fiber this_fiber::yield(), OpenMP
 * taskyield (a hint libgomp ignores), TBB n/a.
 *
 * Check: the total count of yields, 1000 N.
 *
 * yield-fp: the same, except that every iteration of every task also does
 * one double division (fp.h: raises inexact) before its yield, and every
 * other task (the odd ones in spawn order) then clears its flags
 * (bench_fp_clear, fp.h), so the tasks a worker switches between in turn
 * differ in their raised FP exception flags, as tasks that compute with
 * doubles do: see wl_switch.c's switch-fp for what that costs a switch
 * that compares the whole MXCSR.  Its figures include the division, the
 * clear, and what the clear's write of MXCSR costs the stmxcsr of the
 * switch that follows it (fp.h): every implementation whose switch reads
 * MXCSR pays that.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "clock.h"
#include "cpu.h"
#include "fp.h"
#include "wl_pool.h"
#include "workloads.h"

#define WHO "yield"
#define YIELD_TASKS 1000

typedef struct yield_run {
    weft_pool *pool;
    uint64_t n;
    bool fp;                /* yield-fp */
    uint64_t t0, t1;
    uint64_t cpu0, cpu1;
    uint64_t total;
    bench_task_err err;
} yield_run;

/* A task's loop; fp and clear are constants in each caller below, so
 * yield's loop is exactly the plain one. */
static inline __attribute__((always_inline)) void *
yield_loop(yield_run *r, bool fp, bool clear)
{
    uint64_t count = 0;

    for (uint64_t i = 0; i < r->n; i++) {
        int rc;

        if (fp) {
            bench_fp_raise();
            if (clear)
                bench_fp_clear();
        }
        rc = weft_yield();

        if (rc != 0) {
            bench_task_error(&r->err, rc, "weft_yield");
            break;
        }
        count++;
    }
    return (void *)(uintptr_t)count;
}

static void *yield_task(void *arg)
{
    return yield_loop(arg, false, false);
}

/* yield-fp: even tasks keep inexact raised, odd ones clear it. */
static void *yield_task_fp(void *arg)
{
    return yield_loop(arg, true, false);
}

static void *yield_task_fp_clear(void *arg)
{
    return yield_loop(arg, true, true);
}

static void *yield_root(void *arg)
{
    yield_run *r = arg;
    weft_task *t[YIELD_TASKS];
    uint64_t total = 0;
    int spawned;

    weft_fn body[2] = { yield_task, yield_task };

    if (r->fp) {
        body[0] = yield_task_fp;
        body[1] = yield_task_fp_clear;
    }
    r->cpu0 = bench_cpu_ns();
    r->t0 = bench_now_ns();
    for (spawned = 0; spawned < YIELD_TASKS; spawned++) {
        int rc = weft_spawn(&t[spawned], r->pool, body[spawned % 2], r, NULL);

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
    r->cpu1 = bench_cpu_ns();
    r->total = total;
    return NULL;
}

static int yield_run_weft(const bench_params *p, bench_sample *out, bool fp)
{
    yield_run r = { .n = p->n, .fp = fp };
    double ops = (double)YIELD_TASKS * (double)p->n;
    int rc;

    rc = bench_pool_session(&r.pool, p->threads, yield_root, &r, &r.err,
                            WHO);
    if (rc != 0)
        return rc;
    out->value = (double)(r.t1 - r.t0) / ops;
    out->check = r.total;
    out->extra[0] = (double)(r.cpu1 - r.cpu0) / ops;
    return 0;
}

static int yield_weft(const bench_params *p, bench_sample *out)
{
    return yield_run_weft(p, out, false);
}

static int yield_fp_weft(const bench_params *p, bench_sample *out)
{
    return yield_run_weft(p, out, true);
}

static uint64_t yield_expect(const bench_params *p)
{
    return (uint64_t)YIELD_TASKS * p->n;
}

static const char *const yield_peers[] = {
    "go", "boost-fiber", "tbb", "openmp", NULL
};

static const bench_extra yield_extra[] = {
    { "cpu", "ns/op" },
    { NULL, NULL },
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
    .ops = yield_expect, /* one per yield */
    .peers = yield_peers,
    .extra = yield_extra,
};

const bench_workload bench_wl_yield_fp = {
    .name = "yield-fp",
    .desc = "as yield, each iteration divides a double; odd tasks clear "
            "their FP flags",
    .unit = "ns/yield",
    .default_n = 1000,
    .quick_n = 10,
    .pooled = true,
    .run_weft = yield_fp_weft,
    .expect = yield_expect,
    .ops = yield_expect, /* one per yield */
    .peers = yield_peers,
    .extra = yield_extra,
};
