/*
 * wl_sleepers.c — ms per round of 1 ms sleeps, when 10,000 tasks sleep at
 * once.
 *
 * A server's many connections, each waiting on a timer (a keep-alive, a
 * poll interval, a back-off).  main (a plain thread) spawns T = 10,000
 * tasks (fixed) onto a pool of --threads workers; each does N times
 *
 *     weft_sleep(1 ms);   count it
 *
 * adds its count of completed sleeps to a shared atomic, and ends; main
 * waits for them all on a weft_wait_group (the tasks are detached, as Go's
 * goroutines are; each calls weft_wait_group_done as it ends).  A round is
 * all 10,000 tasks sleeping 1 ms at once, so the ideal is 1 ms a round: the
 * figure over it is what the timers, the parks, the wakes and the switches
 * of 10,000 tasks cost the workers each round, and how late the timers
 * fire while the workers are busy.  A task holds a stack of its own
 * (weft's default size, WEFT_STACK_DEFAULT) from its first run to its end,
 * since it parks in every sleep: up to 10,000 stacks live at once (fewer
 * where the first tasks end before the last have started), each taken from
 * the caches or mapped, and touched, and as many timers armed.  So the
 * figure is also what 10,000 live tasks' stacks cost.
 *
 * Each measurement is the whole shape, in the fresh process weft-bench
 * gives every run (weft-bench --child): the pool is made before the clock
 * starts, so its stack caches start empty; the clock runs in main from
 * before the first spawn to the return of the wait (the spawns are in it:
 * the first tasks sleep while main still spawns the last).  Reported:
 * elapsed / N in ms per round, and as an extra figure `cpu`, the process's
 * CPU time (user + system, every thread: cpu.h) over the same region per
 * sleep (T N of them), in us.
 *
 * Peers: Go (10,000 goroutines, time.Sleep(time.Millisecond), a
 * sync.WaitGroup, GOMAXPROCS = THREADS) and Boost.Fiber (10,000 fibers on
 * the work_stealing scheduler, this_fiber::sleep_for(1 ms), joined).
 *
 * Check: the sleeps completed, T N: a sleep that fails (weft_sleep's
 * -ENOMEM) is not counted and fails the run.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include <weft/sync.h>
#include <weft/timer.h>

#include "clock.h"
#include "cpu.h"
#include "wl_pool.h"
#include "workloads.h"

#define WHO "sleepers"
#define SLEEPERS_TASKS 10000u
#define SLEEPERS_NS 1000000u

typedef struct sleepers_run {
    uint64_t n;                 /* sleeps per task */
    _Atomic uint64_t sleeps;    /* completed, summed as each task ends */
    weft_wait_group wg;
    bench_task_err err;
} sleepers_run;

static void *sleepers_task(void *arg)
{
    sleepers_run *r = arg;
    uint64_t done = 0;

    for (uint64_t i = 0; i < r->n; i++) {
        int rc = weft_sleep(SLEEPERS_NS);

        if (rc != 0) {
            bench_task_error(&r->err, rc, "weft_sleep");
            break;
        }
        done++;
    }
    atomic_fetch_add_explicit(&r->sleeps, done, memory_order_relaxed);
    weft_wait_group_done(&r->wg);
    return NULL;
}

static int sleepers_weft(const bench_params *p, bench_sample *out)
{
    sleepers_run r = { .n = p->n };
    weft_pool *pool;
    uint64_t t0, t1, cpu0, cpu1;
    unsigned spawned;
    int rc = 0, rc2;

    bench_task_err_reset(&r.err);
    atomic_init(&r.sleeps, 0);
    weft_wait_group_init(&r.wg);
    rc = bench_pool_create(&pool, p->threads, WHO);
    if (rc != 0)
        return rc;

    cpu0 = bench_cpu_ns();
    t0 = bench_now_ns();
    for (spawned = 0; spawned < SLEEPERS_TASKS; spawned++) {
        /* Added before the spawn: a task may end before weft_spawn
         * returns. */
        weft_wait_group_add(&r.wg, 1);
        rc = weft_spawn(NULL, pool, sleepers_task, &r, NULL);
        if (rc != 0) {
            weft_wait_group_done(&r.wg);
            fprintf(stderr, WHO ": weft_spawn (task %u): %s\n", spawned,
                    weft_strerror(rc));
            break; /* the ones spawned still end: wait for them below */
        }
    }
    rc2 = weft_wait_group_wait(&r.wg);
    t1 = bench_now_ns();
    cpu1 = bench_cpu_ns();
    if (rc2 != 0) {
        fprintf(stderr, WHO ": weft_wait_group_wait: %s\n", weft_strerror(rc2));
        if (rc == 0)
            rc = rc2;
    }

    /* Also waits for the tasks to return from weft_wait_group_done, before
     * r goes. */
    rc2 = bench_pool_destroy(pool, WHO);
    if (rc == 0)
        rc = bench_task_err_check(&r.err, WHO);
    if (rc == 0)
        rc = rc2;
    if (rc != 0)
        return rc;
    out->value = (double)(t1 - t0) / 1e6 / (double)p->n;
    out->check = atomic_load(&r.sleeps);
    out->extra[0] = (double)(cpu1 - cpu0) / 1e3 /
                    ((double)SLEEPERS_TASKS * (double)p->n);
    return 0;
}

static uint64_t sleepers_expect(const bench_params *p)
{
    return (uint64_t)SLEEPERS_TASKS * p->n;
}

static const char *const sleepers_peers[] = { "go", "boost-fiber", NULL };

static const bench_extra sleepers_extra[] = {
    { "cpu", "us/op" },
    { NULL, NULL },
};

const bench_workload bench_wl_sleepers = {
    .name = "sleepers",
    .desc = "10,000 tasks each weft_sleep(1 ms) N times; ms per round",
    .unit = "ms/round",
    .default_n = 10,
    .quick_n = 2,
    .pooled = true,
    .run_weft = sleepers_weft,
    .expect = sleepers_expect,
    .ops = sleepers_expect, /* one per sleep */
    .peers = sleepers_peers,
    .extra = sleepers_extra,
};
