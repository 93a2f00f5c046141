/*
 * wl_create.c — ns per create + run + destroy cycle.
 *
 * Each cycle makes a coroutine with a 64 KiB stack, resumes it once (the body
 * returns its argument + 1 at once, so the coroutine is DEAD after the
 * resume), and destroys it.  This is the fixed cost of a short-lived
 * coroutine: stack acquisition (weft pools stacks, as the Boost peer does
 * with pooled_fixedsize_stack), frame setup, two switches, teardown.
 *
 * Check: the sum over cycles of (result - argument), which is N when every
 * body ran exactly once with its own argument.
 */
#include <stdint.h>
#include <stdio.h>

#include <weft/coro.h>

#include "clock.h"
#include "workloads.h"

#define CREATE_STACK (64u * 1024u)

static void *create_body(void *arg)
{
    return (void *)((uintptr_t)arg + 1);
}

static int create_weft(const bench_params *p, bench_sample *out)
{
    const weft_coro_opts opts = { .stack_size = CREATE_STACK, .name = NULL };
    uint64_t sum = 0;
    uint64_t t0, t1, i;
    int rc = 0;

    t0 = bench_now_ns();
    for (i = 0; i < p->n; i++) {
        weft_coro *co;
        void *r;

        rc = weft_coro_create(&co, create_body, &opts);
        if (rc != 0) {
            fprintf(stderr, "create: weft_coro_create at cycle %llu: %s\n",
                    (unsigned long long)i, weft_strerror(rc));
            return rc;
        }
        rc = weft_coro_resume(co, (void *)(uintptr_t)i, &r);
        if (rc != 0) {
            fprintf(stderr, "create: resume at cycle %llu: %s\n",
                    (unsigned long long)i, weft_strerror(rc));
            weft_coro_destroy(co);
            return rc;
        }
        sum += (uint64_t)((uintptr_t)r - (uintptr_t)i);
        rc = weft_coro_destroy(co);
        if (rc != 0) {
            fprintf(stderr, "create: destroy at cycle %llu: %s\n",
                    (unsigned long long)i, weft_strerror(rc));
            return rc;
        }
    }
    t1 = bench_now_ns();

    out->value = (double)(t1 - t0) / (double)p->n;
    out->check = sum;
    return 0;
}

static uint64_t create_expect(const bench_params *p)
{
    return p->n;
}

static const char *const create_peers[] = { "boost-context", "ucontext", NULL };

const bench_workload bench_wl_create = {
    .name = "create",
    .desc = "create (64 KiB stack) + run to completion + destroy, N cycles, 1 thread",
    .unit = "ns/cycle",
    .default_n = 1000000,
    .run_weft = create_weft,
    .expect = create_expect,
    .peers = create_peers,
};
