/*
 * wl_sync_wait.c — us per weft_sync_wait round trip from a plain thread.
 *
 * main (a plain thread, not a worker) makes N lazy tasks one after the
 * other with weft_task_create; each is handed to weft_sync_wait, which
 * starts it on main; its body calls weft_schedule(pool) at once, which
 * moves it to a worker of the pool (--threads workers), returns i + 1 there,
 * and the end of the task wakes main.  So a round trip is: task record and
 * stack, a switch in on main, a hand-off to a worker (waking it if it
 * sleeps), a switch there, the completion, and main's wake-up.  The pool is
 * made before the clock starts.  Reported: elapsed / N, and as an extra
 * figure `cpu`, the process's CPU time (user + system, every thread:
 * cpu.h) over the same loop per round trip, in us: main and the workers
 * together, so a waiter or a worker that spins instead of sleeping pays for
 * it there.
 *
 * Peers submit a job to their pool and block main on its completion: the
 * mutex/condvar pool with a per-job condition variable, TBB with
 * arena.enqueue and a std::future; Go and Boost.Fiber have no thread outside
 * their scheduler, so their main is a goroutine/fiber waiting on a channel
 * or future (see their headers).
 *
 * Check: the sum of (result - i), N.
 */
#include <stdint.h>
#include <stdio.h>

#include "clock.h"
#include "cpu.h"
#include "wl_pool.h"
#include "workloads.h"

#define WHO "sync-wait"

static weft_pool *sw_pool;
static bench_task_err sw_err;

static void *sw_task(void *arg)
{
    int rc = weft_schedule(sw_pool);

    if (rc != 0)
        bench_task_error(&sw_err, rc, "weft_schedule");
    return (void *)((uintptr_t)arg + 1);
}

static int sw_weft(const bench_params *p, bench_sample *out)
{
    uint64_t sum = 0, t0, t1, cpu0, cpu1, i;
    int rc, rc2;

    bench_task_err_reset(&sw_err);
    rc = bench_pool_create(&sw_pool, p->threads, WHO);
    if (rc != 0)
        return rc;

    cpu0 = bench_cpu_ns();
    t0 = bench_now_ns();
    for (i = 0; i < p->n; i++) {
        weft_task *t;
        void *v;

        rc = weft_task_create(&t, sw_task, (void *)(uintptr_t)i, NULL);
        if (rc != 0) {
            fprintf(stderr, WHO ": weft_task_create at round %llu: %s\n",
                    (unsigned long long)i, weft_strerror(rc));
            break;
        }
        rc = weft_sync_wait(t, &v);
        if (rc != 0) {
            fprintf(stderr, WHO ": weft_sync_wait at round %llu: %s\n",
                    (unsigned long long)i, weft_strerror(rc));
            weft_task_detach(t); /* a refused sync_wait did not consume it */
            break;
        }
        sum += (uint64_t)(uintptr_t)v - i;
    }
    t1 = bench_now_ns();
    cpu1 = bench_cpu_ns();

    rc2 = bench_pool_destroy(sw_pool, WHO);
    sw_pool = NULL;
    if (rc == 0)
        rc = bench_task_err_check(&sw_err, WHO);
    if (rc == 0)
        rc = rc2;
    if (rc != 0)
        return rc;
    out->value = (double)(t1 - t0) / 1e3 / (double)p->n;
    out->check = sum;
    out->extra[0] = (double)(cpu1 - cpu0) / 1e3 / (double)p->n;
    return 0;
}

static uint64_t sw_expect(const bench_params *p)
{
    return p->n;
}

static const char *const sw_peers[] = {
    "go", "boost-fiber", "tbb", "mutex-pool", "openmp", NULL
};

static const bench_extra sw_extra[] = {
    { "cpu", "us/op" },
    { NULL, NULL },
};

const bench_workload bench_wl_sync_wait = {
    .name = "sync-wait",
    .desc = "main: N x (weft_task_create; body weft_schedule(pool); weft_sync_wait)",
    .unit = "us/round trip",
    .default_n = 100000,
    .pooled = true,
    .run_weft = sw_weft,
    .expect = sw_expect,
    .peers = sw_peers,
    .extra = sw_extra,
};
