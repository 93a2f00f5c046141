/*
 * wl_soak.c — a pool that runs for a while: does it slow down, and does its
 * memory stay bounded by its live work?
 *
 * One pool of --threads workers, made once, runs rounds back to back for N
 * seconds; a round is
 *   - skynet(1,000,000) (wl_skynet.c's tree: spawn 10 children, await
 *     them in order, 1,111,111 tasks), then
 *   - a flat loop: 100,000 times, spawn 10 tasks and await the 10 (the
 *     shape of a server fanning a request out to a few helpers).
 * Reported: the median round's time (ms) as the value, and as extra
 * figures the first and the last round's (a pool that slows down as it
 * runs shows it there), the peak RSS over the run (MB) and the RSS of the
 * idle pool 1 s after the last round (MB): what the pool keeps cached when
 * it has nothing to do.  Each measurement runs in a fresh process, so the
 * RSS figures are the run's own.
 *
 * TBB does the same with task_group (peers/tbb.cc).  Check: 1 if every
 * round's two results were right (skynet: N(N-1)/2; flat: 100,000 * 45).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "rss.h"
#include "wl_pool.h"
#include "workloads.h"

#define WHO "soak"
#define SKYNET_N 1000000u
#define FLAT_BATCHES 100000u
#define FLAT_FANOUT 10u
#define MAX_ROUNDS 100000u

typedef struct soak_node {
    uint64_t num, size;
} soak_node;

static weft_pool *soak_pool;
static bench_task_err soak_err;

static void *soak_skynet(void *arg)
{
    const soak_node *nd = arg;
    soak_node kids[10];
    weft_task *t[10];
    uint64_t sum = 0;
    if (nd->size == 1)
        return (void *)(uintptr_t)nd->num;
    uint64_t child = nd->size / 10;
    int spawned = 0;
    for (; spawned < 10; spawned++) {
        kids[spawned] = (soak_node){nd->num + (uint64_t)spawned * child, child};
        int rc = weft_spawn(&t[spawned], soak_pool, soak_skynet,
                            &kids[spawned], NULL);
        if (rc != 0) {
            bench_task_error(&soak_err, rc, "weft_spawn");
            break;
        }
    }
    for (int i = 0; i < spawned; i++) {
        void *v;
        int rc = weft_await(t[i], &v);
        if (rc != 0)
            bench_task_error(&soak_err, rc, "weft_await");
        else
            sum += (uint64_t)(uintptr_t)v;
    }
    return (void *)(uintptr_t)sum;
}

static void *soak_leaf(void *arg)
{
    return arg;
}

static void *soak_flat(void *arg)
{
    (void)arg;
    uint64_t sum = 0;
    for (unsigned b = 0; b < FLAT_BATCHES; b++) {
        weft_task *t[FLAT_FANOUT];
        unsigned spawned = 0;
        for (; spawned < FLAT_FANOUT; spawned++) {
            int rc = weft_spawn(&t[spawned], soak_pool, soak_leaf,
                                (void *)(uintptr_t)spawned, NULL);
            if (rc != 0) {
                bench_task_error(&soak_err, rc, "weft_spawn");
                break;
            }
        }
        for (unsigned i = 0; i < spawned; i++) {
            void *v;
            if (weft_await(t[i], &v) == 0)
                sum += (uint64_t)(uintptr_t)v;
        }
    }
    return (void *)(uintptr_t)sum;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int soak_weft(const bench_params *p, bench_sample *out)
{
    double *ms = malloc(MAX_ROUNDS * sizeof *ms);
    if (!ms)
        return -12; /* -ENOMEM */
    int rc = bench_pool_create(&soak_pool, p->threads, WHO);
    if (rc != 0) {
        free(ms);
        return rc;
    }
    bench_task_err_reset(&soak_err);
    uint64_t rounds = 0, good = 0;
    uint64_t until = bench_now_ns() + p->n * 1000000000ull;
    while (rc == 0 && rounds < MAX_ROUNDS &&
           (rounds == 0 || bench_now_ns() < until)) {
        soak_node top = {0, SKYNET_N};
        void *a = NULL, *b = NULL;
        uint64_t t0 = bench_now_ns();
        rc = bench_pool_run(soak_pool, soak_skynet, &top, &a, WHO);
        if (rc == 0)
            rc = bench_pool_run(soak_pool, soak_flat, NULL, &b, WHO);
        ms[rounds++] = (double)(bench_now_ns() - t0) / 1e6;
        good += (uint64_t)(uintptr_t)a == (uint64_t)SKYNET_N * (SKYNET_N - 1) / 2 &&
                (uint64_t)(uintptr_t)b == (uint64_t)FLAT_BATCHES * 45;
    }
    if (rc == 0)
        rc = bench_task_err_check(&soak_err, WHO);
    /* The idle pool, a second after the work stopped. */
    struct timespec one = {1, 0};
    nanosleep(&one, NULL);
    int64_t idle = bench_rss_bytes();
    int64_t peak = bench_peak_rss_bytes();
    int drc = bench_pool_destroy(soak_pool, WHO);
    if (rc == 0)
        rc = drc;
    if (rc == 0) {
        out->extra[0] = ms[0];
        out->extra[1] = ms[rounds - 1];
        out->extra[2] = (double)peak / (1024.0 * 1024.0);
        out->extra[3] = (double)idle / (1024.0 * 1024.0);
        qsort(ms, rounds, sizeof *ms, cmp_double);
        out->value = ms[rounds / 2];
        /* Every round right: the check is their count, which expect()
         * cannot know; a wrong round makes it differ from `rounds`. */
        out->check = good == rounds ? 1 : 0;
    }
    free(ms);
    return rc;
}

static uint64_t soak_expect(const bench_params *p)
{
    (void)p;
    return 1;
}

static const char *const soak_peers[] = {"tbb", NULL};

static const bench_extra soak_extra[] = {
    {"first", "ms"},
    {"last", "ms"},
    {"peak", "MB"},
    {"idle", "MB"},
    {NULL, NULL},
};

const bench_workload bench_wl_soak = {
    .name = "soak",
    .desc = "one pool, rounds of skynet(1M) + 100,000 x (spawn 10, await 10) "
            "for N s: median round, first and last, peak and idle RSS",
    .unit = "ms/round",
    .default_n = 30,
    .quick_n = 1,
    .pooled = true,
    .run_weft = soak_weft,
    .expect = soak_expect,
    .peers = soak_peers,
    .fresh_process = true,
    .extra = soak_extra,
    .max_runs = 1,
};
