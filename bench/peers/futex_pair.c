/*
 * futex_pair.c — peer-futex-pair: two plain threads and a futex, no runtime.
 *
 *   ping-pong   The "futex pair": two pthreads bounce a token N round trips
 *               through one 32-bit turn word.  A side that finds it is not
 *               its turn sleeps at once in FUTEX_WAIT (no spinning first);
 *               a side that passes the turn stores it and always calls
 *               FUTEX_WAKE.  So every hand-off is a kernel wake-up of a
 *               sleeping thread: the floor a runtime that parks its workers
 *               without spinning cannot go below, and the figure weft's
 *               ping-pong (two tasks on a pool) is compared with.  THREADS
 *               is ignored: it is always two threads.  Check: the token, 2N.
 *               Unit: us per round trip.  Extra figure `cpu`: the
 *               process's CPU time (user + system, both threads:
 *               getrusage, cpu.h) over the same region, us per round trip.
 *   ping-pong-fp  The same, except that at every move both threads do one
 *               double division (fp.h: raises inexact) before passing the
 *               turn, and B then clears its flags (bench_fp_clear), as
 *               weft's ping-pong-fp.  The kernel saves every thread's whole
 *               FP state when it switches threads, so the flags change
 *               nothing here but the two operations' own cost.
 *
 * Every other workload: n/a.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpu.h"
#include "fp.h"
#include "peer.h"

static _Atomic uint32_t turn;   /* 0: A's move, 1: B's move */
static uint64_t token;          /* ordered by the turn word's acquire/release */
static uint64_t rounds;
static int fp_variant;          /* ping-pong-fp */

static void futex_wait(_Atomic uint32_t *addr, uint32_t val)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *addr)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Side k (0 = A, 1 = B): `rounds` times, wait for the turn, bump, pass. */
static void play(uint32_t k)
{
    for (uint64_t i = 0; i < rounds; i++) {
        uint32_t t;

        while ((t = atomic_load_explicit(&turn, memory_order_acquire)) != k)
            futex_wait(&turn, t);
        if (fp_variant) {
            bench_fp_raise();
            if (k == 1)
                bench_fp_clear();
        }
        token++;
        atomic_store_explicit(&turn, 1 - k, memory_order_release);
        futex_wake(&turn);
    }
}

static void *side_b(void *arg)
{
    (void)arg;
    play(1);
    return NULL;
}

static int run_ping_pong(uint64_t n, int fp)
{
    pthread_t b;
    uint64_t t0, t1, cpu0, cpu1;
    uint32_t t;

    rounds = n;
    fp_variant = fp;
    if (pthread_create(&b, NULL, side_b, NULL) != 0) {
        fprintf(stderr, "peer-futex-pair: pthread_create failed\n");
        return PEER_EXIT_FAILED;
    }
    cpu0 = bench_cpu_ns();
    t0 = bench_now_ns();
    play(0);
    /* B's last move answers A's last one. */
    while ((t = atomic_load_explicit(&turn, memory_order_acquire)) != 0)
        futex_wait(&turn, t);
    t1 = bench_now_ns();
    cpu1 = bench_cpu_ns();
    pthread_join(b, NULL);

    double cpu = (double)(cpu1 - cpu0) / 1e3 / (double)n;
    peer_report_extra((double)(t1 - t0) / 1e3 / (double)n, token, &cpu, 1);
    return 0;
}

int main(int argc, char **argv)
{
    peer_args a;

    peer_parse_args(argc, argv, &a);
    if (strcmp(a.workload, "ping-pong") == 0)
        return run_ping_pong(a.n, 0);
    if (strcmp(a.workload, "ping-pong-fp") == 0)
        return run_ping_pong(a.n, 1);
    return PEER_EXIT_UNKNOWN_WORKLOAD;
}
