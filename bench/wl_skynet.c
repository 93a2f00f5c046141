/*
 * wl_skynet.c — ms for the skynet tree: 10-ary fork-join over N leaves.
 *
 *   skynet(num, size) = size == 1 ? num
 *                     : sum over i < 10 of skynet(num + i*size/10, size/10)
 *
 * every call a task: a node spawns its 10 children onto the pool (weft_spawn,
 * their arguments in an array in the node's own frame, which outlives them
 * because the node awaits them all), then awaits them in order and returns
 * the sum.  The root is skynet(0, N), N a power of 10 (1,000,000 leaves:
 * 1,111,111 tasks).  The top node runs in the root task (a task on the
 * pool, spawned from main), and the clock runs around it there.
 *
 * Peers build the same tree with the same shape (Go channels, Boost.Fiber
 * futures, TBB task_group, OpenMP tasks).
 *
 * Check: the sum of 0..N-1, N(N-1)/2 (499999500000 for N = 10^6).
 */
#include <stdint.h>
#include <stdio.h>

#include "clock.h"
#include "wl_pool.h"
#include "workloads.h"

#define WHO "skynet"
#define DIV 10

typedef struct sk_node {
    uint64_t num;
    uint64_t size;
} sk_node;

/* One run at a time: the tree's tasks find their pool and error slot here. */
static weft_pool *sk_pool;
static bench_task_err sk_err;

static void *sk_task(void *arg)
{
    const sk_node *nd = arg;
    sk_node kids[DIV];
    weft_task *t[DIV];
    uint64_t child, sum = 0;
    int spawned;

    if (nd->size == 1)
        return (void *)(uintptr_t)nd->num;
    child = nd->size / DIV;
    for (spawned = 0; spawned < DIV; spawned++) {
        int rc;

        kids[spawned].num = nd->num + (uint64_t)spawned * child;
        kids[spawned].size = child;
        rc = weft_spawn(&t[spawned], sk_pool, sk_task, &kids[spawned], NULL);
        if (rc != 0) {
            bench_task_error(&sk_err, rc, "weft_spawn");
            break;
        }
    }
    for (int i = 0; i < spawned; i++) {
        void *v;
        int rc = weft_await(t[i], &v);

        if (rc != 0)
            bench_task_error(&sk_err, rc, "weft_await");
        else
            sum += (uint64_t)(uintptr_t)v;
    }
    return (void *)(uintptr_t)sum;
}

typedef struct sk_run {
    uint64_t n;
    uint64_t t0, t1;
    uint64_t sum;
} sk_run;

static void *sk_root(void *arg)
{
    sk_run *r = arg;
    sk_node top = { 0, r->n };

    r->t0 = bench_now_ns();
    r->sum = (uint64_t)(uintptr_t)sk_task(&top);
    r->t1 = bench_now_ns();
    return NULL;
}

static int is_power_of_10(uint64_t n)
{
    while (n > 1 && n % 10 == 0)
        n /= 10;
    return n == 1;
}

static int sk_weft(const bench_params *p, bench_sample *out)
{
    sk_run r = { .n = p->n };
    int rc;

    if (!is_power_of_10(p->n)) {
        fprintf(stderr, WHO ": N = %llu leaves: must be a power of 10\n",
                (unsigned long long)p->n);
        return -EINVAL;
    }
    rc = bench_pool_session(&sk_pool, p->threads, sk_root, &r, &sk_err, WHO);
    if (rc != 0)
        return rc;
    out->value = (double)(r.t1 - r.t0) / 1e6;
    out->check = r.sum;
    return 0;
}

static uint64_t sk_expect(const bench_params *p)
{
    uint64_t a = p->n, b = p->n - 1;

    return a % 2 == 0 ? (a / 2) * b : a * (b / 2);
}

static const char *const sk_peers[] = {
    "weft-cpp", "go", "boost-fiber", "tbb", "openmp", "mutex-pool", NULL
};

const bench_workload bench_wl_skynet = {
    .name = "skynet",
    .desc = "10-ary fork-join tree over N leaves (a power of 10), a task per node",
    .unit = "ms",
    .default_n = 1000000,
    .pooled = true,
    .run_weft = sk_weft,
    .expect = sk_expect,
    .peers = sk_peers,
};
