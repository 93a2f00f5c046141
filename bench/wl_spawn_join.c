/*
 * wl_spawn_join.c — ms to spawn N trivial tasks from one task and join them.
 *
 * A root task on a pool of --threads workers spawns N tasks with
 * weft_spawn (eager: each is queued at once, on the spawning worker's own
 * queue, where the other workers steal from), keeping the N handles in an
 * array allocated before the clock starts, then weft_awaits every handle in
 * spawn order and sums the results.  Task i's body returns i + 1 at once, so
 * the figure is the whole life of a short task: its record, its queueing,
 * stealing, a stack to run on (recycled the moment it ends), completion and
 * the await.  The clock runs inside the root task, from before the first
 * spawn to after the last await; the pool is made before and destroyed
 * after.
 *
 * Peers do the same N spawns and one join of all (see each peer's header):
 * Go goroutines + WaitGroup, Boost.Fiber async + futures, TBB task_group,
 * OpenMP tasks + taskwait, and a mutex/condvar thread pool.
 *
 * Check: the sum of the N results, N(N+1)/2 (mod 2^64).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "wl_pool.h"
#include "workloads.h"

#define WHO "spawn-join"

typedef struct sj_run {
    weft_pool *pool;
    weft_task **handles;
    uint64_t n;
    uint64_t t0, t1;
    uint64_t sum;
    bench_task_err err;
} sj_run;

static void *sj_leaf(void *arg)
{
    return (void *)((uintptr_t)arg + 1);
}

static void *sj_root(void *arg)
{
    sj_run *r = arg;
    uint64_t spawned, i;
    uint64_t sum = 0;

    r->t0 = bench_now_ns();
    for (spawned = 0; spawned < r->n; spawned++) {
        int rc = weft_spawn(&r->handles[spawned], r->pool, sj_leaf, (void *)(uintptr_t)spawned, NULL);
        if (rc != 0) {
            bench_task_error(&r->err, rc, "weft_spawn");
            break;
        }
    }
    for (i = 0; i < spawned; i++) {
        void *v;
        int rc = weft_await(r->handles[i], &v);

        if (rc != 0) {
            bench_task_error(&r->err, rc, "weft_await");
            continue;
        }
        sum += (uint64_t)(uintptr_t)v;
    }
    r->t1 = bench_now_ns();
    r->sum = sum;
    return NULL;
}

static int sj_weft(const bench_params *p, bench_sample *out)
{
    sj_run r = { .n = p->n };
    int rc;

    r.handles = malloc(p->n * sizeof *r.handles);
    if (r.handles == NULL) {
        fprintf(stderr, WHO ": no memory for %llu handles\n",
                (unsigned long long)p->n);
        return -ENOMEM;
    }
    rc = bench_pool_session(&r.pool, p->threads, sj_root, &r, &r.err, WHO);
    free(r.handles);
    if (rc != 0)
        return rc;
    out->value = (double)(r.t1 - r.t0) / 1e6;
    out->check = r.sum;
    return 0;
}

static uint64_t sj_expect(const bench_params *p)
{
    /* N(N+1)/2 without overflowing before the division. */
    uint64_t a = p->n, b = p->n + 1;

    return a % 2 == 0 ? (a / 2) * b : a * (b / 2);
}

static const char *const sj_peers[] = {
    "go", "boost-fiber", "tbb", "openmp", "mutex-pool", NULL
};

const bench_workload bench_wl_spawn_join = {
    .name = "spawn-join",
    .desc = "one task spawns N trivial tasks, keeps the handles, awaits each",
    .unit = "ms",
    .default_n = 1000000,
    .pooled = true,
    .run_weft = sj_weft,
    .expect = sj_expect,
    .peers = sj_peers,
};
