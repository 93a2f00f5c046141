/*
 * ucontext.c — peer-ucontext: glibc's makecontext/swapcontext.
 *
 * The baseline every coroutine library claims to beat: swapcontext saves and
 * restores the signal mask with a rt_sigprocmask system call on every switch,
 * and the whole FP environment, so it shows what a switch costs when it
 * enters the kernel.
 *
 *   switch  Two ucontexts swap back and forth N round trips; the counter the
 *           runner checks lives in a global both sides see (swapcontext
 *           passes no value).  Stack: one malloc'd 256 KiB block, like weft's
 *           default.  Reports elapsed / (2N).
 *   switch-fp  The same, except that the context clears its floating-point
 *           exception flags (bench_fp_clear, fp.h) when it starts and main
 *           raises inexact (a double division) after the first swap,
 *           before the clock: the two sides differ in their raised flags,
 *           nothing in the timed loop computes.  swapcontext saves and
 *           loads the whole FP environment (x87 environment, MXCSR) at
 *           every switch, flags included, so each side gets its own flags
 *           back and every switch writes a different MXCSR value (fp.h).
 *           Reports elapsed / (2N).
 *   create  There is no create/destroy in this API; the closest cycle is
 *           getcontext + makecontext on a stack + swapcontext into it + the
 *           body's return through uc_link.  One malloc'd 64 KiB stack is
 *           reused by every cycle (what a stack pool would give), so no
 *           allocation is timed.  Reports elapsed / N.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "fp.h"
#include "peer.h"

/* State shared between main and the context body: makecontext can pass only
 * int arguments portably, so both workloads talk through these. */
static ucontext_t main_uc;
static ucontext_t co_uc;
static uint64_t shared_value;
static int stop_flag;
static int fp_variant; /* switch-fp */

/*
 * getcontext is returns_twice, which makes the compiler treat the caller's
 * locals as clobbered.  Here it only initialises a ucontext that makecontext
 * then repoints, so nothing ever returns into this frame a second time;
 * isolating the call keeps the timed loops' locals in registers.
 */
static __attribute__((noinline)) int init_context(ucontext_t *uc)
{
    return getcontext(uc);
}

static void switch_body(void)
{
    if (fp_variant)
        bench_fp_clear();
    while (!stop_flag) {
        shared_value++;
        swapcontext(&co_uc, &main_uc);
    }
    /* Returning follows uc_link back to main. */
}

static int run_switch(uint64_t n, int fp)
{
    const size_t stack_size = 256u * 1024u;
    void *stack = malloc(stack_size);
    uint64_t start, t0, t1, i;

    if (stack == NULL || init_context(&co_uc) != 0) {
        perror("peer-ucontext switch: setup");
        return PEER_EXIT_FAILED;
    }
    co_uc.uc_stack.ss_sp = stack;
    co_uc.uc_stack.ss_size = stack_size;
    co_uc.uc_link = &main_uc;
    makecontext(&co_uc, switch_body, 0);
    fp_variant = fp;

    /* First entry outside the timed loop, as for weft. */
    swapcontext(&main_uc, &co_uc);
    start = shared_value;
    if (fp)
        bench_fp_raise(); /* main's flags raised, the context's clear */

    t0 = bench_now_ns();
    for (i = 0; i < n; i++)
        swapcontext(&main_uc, &co_uc);
    t1 = bench_now_ns();

    peer_report((double)(t1 - t0) / (2.0 * (double)n), shared_value - start);

    stop_flag = 1;
    swapcontext(&main_uc, &co_uc); /* let the body return */
    free(stack);
    return 0;
}

static uint64_t create_arg;

static void create_body(void)
{
    shared_value = create_arg + 1;
}

static int run_create(uint64_t n)
{
    const size_t stack_size = 64u * 1024u;
    void *stack = malloc(stack_size);
    uint64_t sum = 0, t0, t1, i;

    if (stack == NULL) {
        perror("peer-ucontext create: malloc");
        return PEER_EXIT_FAILED;
    }
    t0 = bench_now_ns();
    for (i = 0; i < n; i++) {
        if (init_context(&co_uc) != 0) {
            perror("peer-ucontext create: getcontext");
            free(stack);
            return PEER_EXIT_FAILED;
        }
        co_uc.uc_stack.ss_sp = stack;
        co_uc.uc_stack.ss_size = stack_size;
        co_uc.uc_link = &main_uc;
        makecontext(&co_uc, create_body, 0);
        create_arg = i;
        swapcontext(&main_uc, &co_uc);
        sum += shared_value - i;
    }
    t1 = bench_now_ns();

    peer_report((double)(t1 - t0) / (double)n, sum);
    free(stack);
    return 0;
}

int main(int argc, char **argv)
{
    peer_args a;

    peer_parse_args(argc, argv, &a);
    if (strcmp(a.workload, "switch") == 0)
        return run_switch(a.n, 0);
    if (strcmp(a.workload, "switch-fp") == 0)
        return run_switch(a.n, 1);
    if (strcmp(a.workload, "create") == 0)
        return run_create(a.n);
    fprintf(stderr, "peer-ucontext: no workload '%s'\n", a.workload);
    return PEER_EXIT_UNKNOWN_WORKLOAD;
}
