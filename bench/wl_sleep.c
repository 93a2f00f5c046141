/*
 * wl_sleep.c — how late a 1 ms weft_sleep wakes, on an idle pool.
 *
 * One task on an otherwise idle one-worker pool sleeps 1 ms N times in a
 * row (not a pooled workload: more workers change nothing, and a speed-up
 * of lateness means nothing in the scaling table); each sleep's lateness is (time asleep - 1 ms).  Reported:
 * the mean lateness in us.  What it measures: the timer structure, the
 * parked worker's deadline (the futex's timeout, the kernel's timer slack)
 * and the wake-up of a sleeping core.
 *
 * Peers: Go time.Sleep(time.Millisecond), Boost.Fiber
 * this_fiber::sleep_for(1 ms).
 *
 * Check: the number of sleeps that did not return early (all N).
 */
#include <stdint.h>
#include <stdio.h>

#include <weft/timer.h>

#include "clock.h"
#include "wl_pool.h"
#include "workloads.h"

#define WHO "sleep"
#define SLEEP_NS 1000000u

typedef struct sleep_run {
    weft_pool *pool;
    uint64_t n;
    uint64_t late_ns;   /* total lateness */
    uint64_t on_time;   /* sleeps that lasted at least SLEEP_NS */
    bench_task_err err;
} sleep_run;

static void *sleep_root(void *arg)
{
    sleep_run *r = arg;

    for (uint64_t i = 0; i < r->n; i++) {
        uint64_t t0 = bench_now_ns();
        int rc = weft_sleep(SLEEP_NS);
        uint64_t slept = bench_now_ns() - t0;

        if (rc != 0) {
            bench_task_error(&r->err, rc, "weft_sleep");
            break;
        }
        if (slept >= SLEEP_NS) {
            r->on_time++;
            r->late_ns += slept - SLEEP_NS;
        }
    }
    return NULL;
}

static int sleep_weft(const bench_params *p, bench_sample *out)
{
    sleep_run r = { .n = p->n };
    int rc = bench_pool_session(&r.pool, p->threads, sleep_root, &r, &r.err,
                                WHO);

    if (rc != 0)
        return rc;
    out->value = r.on_time ? (double)r.late_ns / 1e3 / (double)r.on_time : 0;
    out->check = r.on_time;
    return 0;
}

static uint64_t sleep_expect(const bench_params *p)
{
    return p->n;
}

static const char *const sleep_peers[] = { "go", "boost-fiber", NULL };

const bench_workload bench_wl_sleep = {
    .name = "sleep",
    .desc = "one task sleeps 1 ms N times on an idle pool; mean lateness",
    .unit = "us late",
    .default_n = 200,
    .quick_n = 5,
    .pooled = false,
    .run_weft = sleep_weft,
    .expect = sleep_expect,
    .peers = sleep_peers,
};
