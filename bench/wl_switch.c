/*
 * wl_switch.c — ns per one-way context switch.
 *
 * Two contexts on one thread ping-pong N round trips: main resumes the
 * coroutine, the coroutine yields back.  A round trip is two one-way
 * switches, so the figure is elapsed / (2N).  It includes what a user pays
 * around the switch itself (the call into weft_coro_resume/yield, the state
 * CAS, passing one value each way), which is the number that matters when
 * comparing with Boost.Context's resume() or swapcontext.
 *
 * Check: a counter travels through the switch.  Main sends v, the coroutine
 * answers v + 1, main sends that back; after N round trips the value has
 * grown by exactly N, which fails if any switch lost or duplicated a value.
 *
 * switch-fp is the same loop between two contexts that differ in their
 * raised floating-point exception flags (fp.h), as a program that computes
 * with doubles and a coroutine that has not: the coroutine clears its
 * flags (bench_fp_clear) when it starts, before its first yield, and main
 * raises inexact (a double division) after that first resume, before the
 * clock starts; nothing in the timed loop computes.  So the two sides
 * switch out with different MXCSR status bits (x86_64; FPSR on aarch64)
 * and the same control bits: a switch that compared the whole MXCSR would
 * reload it on every switch (weft's did, before it compared the control
 * bits only: ~60 ns a switch instead of ~4); weft's now costs what switch
 * costs.  A switch that always loads the saved MXCSR (Boost.Context's
 * fcontext) or the whole FP environment (swapcontext) restores each
 * side's flags, so here it writes a different value at every switch, and
 * pays for that (fp.h).  Check: as switch.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <weft/coro.h>

#include "clock.h"
#include "fp.h"
#include "workloads.h"

/* The pong side: answer every value with value + 1 until destroyed. */
static void *switch_body(void *arg)
{
    uintptr_t v = (uintptr_t)arg;
    void *in;

    /* yield returns -ECANCELED when weft_coro_destroy unwinds us. */
    while (weft_coro_yield((void *)(v + 1), &in) == 0)
        v = (uintptr_t)in;
    return NULL;
}

/* switch-fp's coroutine: its flags clear from the start, then as above. */
static void *switch_fp_body(void *arg)
{
    bench_fp_clear();
    return switch_body(arg);
}

static int switch_run(const bench_params *p, bench_sample *out, bool fp)
{
    weft_coro *co;
    void *v;
    uintptr_t start;
    uint64_t t0, t1, i;
    int rc;

    rc = weft_coro_create(&co, fp ? switch_fp_body : switch_body, NULL);
    if (rc != 0) {
        fprintf(stderr, "switch: weft_coro_create: %s\n", weft_strerror(rc));
        return rc;
    }
    /* The first resume enters the body (a different path from a switch);
     * keep it out of the timed loop. */
    rc = weft_coro_resume(co, (void *)(uintptr_t)0, &v);
    if (rc != 0) {
        fprintf(stderr, "switch: first resume: %s\n", weft_strerror(rc));
        weft_coro_destroy(co);
        return rc;
    }
    start = (uintptr_t)v;
    if (fp)
        bench_fp_raise(); /* main's flags raised, the coroutine's clear */

    t0 = bench_now_ns();
    for (i = 0; i < p->n; i++) {
        rc = weft_coro_resume(co, v, &v);
        if (rc != 0)
            break;
    }
    t1 = bench_now_ns();

    if (rc != 0) {
        fprintf(stderr, "switch: resume %llu: %s\n", (unsigned long long)i,
                weft_strerror(rc));
        weft_coro_destroy(co);
        return rc;
    }
    out->value = (double)(t1 - t0) / (2.0 * (double)p->n);
    out->check = (uint64_t)((uintptr_t)v - start);

    /* Exercises the cancel path: the pending yield returns -ECANCELED. */
    rc = weft_coro_destroy(co);
    if (rc != 0) {
        fprintf(stderr, "switch: destroy: %s\n", weft_strerror(rc));
        return rc;
    }
    return 0;
}

static int switch_weft(const bench_params *p, bench_sample *out)
{
    return switch_run(p, out, false);
}

static int switch_fp_weft(const bench_params *p, bench_sample *out)
{
    return switch_run(p, out, true);
}

static uint64_t switch_expect(const bench_params *p)
{
    return p->n;
}

/* One-way switches: two per round trip. */
static uint64_t switch_ops(const bench_params *p)
{
    return 2 * p->n;
}

static const char *const switch_peers[] = { "boost-context", "ucontext", NULL };

const bench_workload bench_wl_switch = {
    .name = "switch",
    .desc = "one-way switch: 2 contexts ping-pong N round trips (resume/yield), 1 thread",
    .unit = "ns/switch",
    .default_n = 10000000,
    .run_weft = switch_weft,
    .expect = switch_expect,
    .ops = switch_ops,
    .peers = switch_peers,
};

const bench_workload bench_wl_switch_fp = {
    .name = "switch-fp",
    .desc = "as switch, the two contexts' raised FP exception flags differ "
            "(main inexact, the coroutine clear)",
    .unit = "ns/switch",
    .default_n = 10000000,
    .run_weft = switch_fp_weft,
    .expect = switch_expect,
    .ops = switch_ops,
    .peers = switch_peers,
};
