/*
 * wl_fib.c — ms for fork-join fib(N): a spawned task per call.
 *
 *   fib(n) = n < 2 ? n : (spawn fib(n-1); y = fib(n-2) inline; await) + y
 *
 * the TBB/Cilk/Go shape every implementation uses: the child is spawned onto
 * the pool (weft_spawn, on the worker's own queue, where thieves find it),
 * the parent recurses into the other half on its own stack, then awaits the
 * child (which a scheduler with inline awaits may run right there if nobody
 * stole it).  N is fib's argument: fib(30) = 832040 in a full run (832039
 * spawns), fib(20) = 6765 in --quick.  The clock runs inside a task on the
 * pool, around the top call.
 *
 * Check: fib(N), computed by iteration.
 */
#include <stdint.h>
#include <stdio.h>

#include "clock.h"
#include "wl_pool.h"
#include "workloads.h"

#define WHO "fib"
#define FIB_MAX 90 /* fib(93) is the last that fits 64 bits; keep clear */

static weft_pool *fib_pool;
static bench_task_err fib_err;

static void *fib_task(void *arg)
{
    uintptr_t n = (uintptr_t)arg;
    weft_task *t;
    void *x;
    uintptr_t y;
    int rc;

    if (n < 2)
        return (void *)n;
    rc = weft_spawn(&t, fib_pool, fib_task, (void *)(n - 1), NULL);
    if (rc != 0) {
        /* Keep the answer right; the run still fails on the error. */
        bench_task_error(&fib_err, rc, "weft_spawn");
        return (void *)((uintptr_t)fib_task((void *)(n - 1)) +
                        (uintptr_t)fib_task((void *)(n - 2)));
    }
    y = (uintptr_t)fib_task((void *)(n - 2));
    rc = weft_await(t, &x);
    if (rc != 0) {
        bench_task_error(&fib_err, rc, "weft_await");
        x = NULL;
    }
    return (void *)((uintptr_t)x + y);
}

typedef struct fib_run {
    uint64_t n;
    uint64_t t0, t1;
    uint64_t value;
} fib_run;

static void *fib_root(void *arg)
{
    fib_run *r = arg;

    r->t0 = bench_now_ns();
    r->value = (uint64_t)(uintptr_t)fib_task((void *)(uintptr_t)r->n);
    r->t1 = bench_now_ns();
    return NULL;
}

static int fib_weft(const bench_params *p, bench_sample *out)
{
    fib_run r = { .n = p->n };
    int rc;

    if (p->n > FIB_MAX) {
        fprintf(stderr, WHO ": fib(%llu) is past %d (and would never end)\n",
                (unsigned long long)p->n, FIB_MAX);
        return -EINVAL;
    }
    rc = bench_pool_session(&fib_pool, p->threads, fib_root, &r, &fib_err,
                            WHO);
    if (rc != 0)
        return rc;
    out->value = (double)(r.t1 - r.t0) / 1e6;
    out->check = r.value;
    return 0;
}

static uint64_t fib_expect(const bench_params *p)
{
    uint64_t a = 0, b = 1;

    for (uint64_t i = 0; i < p->n; i++) {
        uint64_t c = a + b;
        a = b;
        b = c;
    }
    return a;
}

/* The spawns of fib(N), one per call with n >= 2: fib(N + 1) - 1. */
static uint64_t fib_ops(const bench_params *p)
{
    bench_params next = { .n = p->n + 1, .threads = p->threads };

    return fib_expect(&next) - 1;
}

static const char *const fib_peers[] = {
    "weft-cpp", "go", "boost-fiber", "tbb", "openmp", "mutex-pool", NULL
};

const bench_workload bench_wl_fib = {
    .name = "fib",
    .desc = "fork-join fib(N): spawn fib(n-1), fib(n-2) inline, await",
    .unit = "ms",
    .default_n = 30,
    .quick_n = 20,
    .pooled = true,
    .run_weft = fib_weft,
    .expect = fib_expect,
    .ops = fib_ops,
    .peers = fib_peers,
};
