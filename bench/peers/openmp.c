/*
 * openmp.c — peer-openmp: OpenMP tasks (`#pragma omp task` / `taskwait`).
 *
 * Each measurement opens one parallel region of THREADS threads (dynamic
 * adjustment off), and one thread of it (`omp single`) plays weft's root task
 * while the others execute tasks.  The team is started, and warmed by one
 * empty region, before the clock starts, as weft's pool is created first.
 * The clock runs inside the single block, from before the first task is
 * created to after the last taskwait returns.  OpenMP tasks are untied only
 * on request; these are tied (the default), which is how tasks are written.
 * Note that libgomp runs a new task at once on the creating thread (instead
 * of queueing it) when too many are queued already: that throttle is part
 * of what is measured in spawn-join.
 *
 *   spawn-join  N tasks, task i stores i + 1 in slot i of an array (allocated
 *               before the clock), then one taskwait; the sum is checked
 *               (N(N+1)/2).  ms per run.
 *   skynet      skynet(num, size): size 1 returns num; else 10 child tasks
 *               skynet(num + i*size/10, size/10) write their results into
 *               the parent's frame, taskwait, sum.  N leaves (a power of 10);
 *               check N(N-1)/2.  ms per run.
 *   fib         fib(n) = n < 2 ? n : a task computes fib(n-1) while the
 *               parent computes fib(n-2) inline, then taskwait: the same
 *               shape as every other implementation.  N is the argument;
 *               check fib(N).  ms per run.
 *   yield       1000 tasks each run `#pragma omp taskyield` N times and count
 *               them; check 1000 N; ns per yield (elapsed / (1000 N)).
 *               libgomp's taskyield is a scheduling hint it may ignore (it
 *               does not switch tied tasks), so this figure is the cost of
 *               the call, not of a switch.  Extra figure `cpu`: the
 *               process's CPU time (user + system, every thread:
 *               getrusage, cpu.h) between the clock's two readings, ns per
 *               yield.
 *   yield-fp    The same, except that every iteration of every task first
 *               does one double division (fp.h: raises inexact), and the
 *               odd tasks then clear their flags (bench_fp_clear), as weft's
 *               yield-fp.  Since libgomp switches nothing here, this adds
 *               the two operations' own cost only.
 *   ping-pong, sync-wait  n/a: OpenMP tasks have no way to block on one
 *               another except taskwait on their own children, and no
 *               submission from outside a parallel region.
 *   latency-yield, latency-cpu, latency-read  n/a: no task can sleep
 *               without holding its thread, so there is no 1 ms ticker.
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "fp.h"
#include "peer.h"

#define SKYNET_DIV 10
#define YIELD_TASKS 1000

static uint64_t skynet(uint64_t num, uint64_t size)
{
    uint64_t r[SKYNET_DIV];
    uint64_t sum = 0;

    if (size == 1)
        return num;
    for (uint64_t i = 0; i < SKYNET_DIV; i++) {
#pragma omp task shared(r) firstprivate(i, num, size)
        r[i] = skynet(num + i * (size / SKYNET_DIV), size / SKYNET_DIV);
    }
#pragma omp taskwait
    for (int i = 0; i < SKYNET_DIV; i++)
        sum += r[i];
    return sum;
}

static uint64_t fib(uint64_t n)
{
    uint64_t x, y;

    if (n < 2)
        return n;
#pragma omp task shared(x) firstprivate(n)
    x = fib(n - 1);
    y = fib(n - 2);
#pragma omp taskwait
    return x + y;
}

static int is_power_of_10(uint64_t n)
{
    while (n > 1 && n % 10 == 0)
        n /= 10;
    return n == 1;
}

int main(int argc, char **argv)
{
    peer_args a;
    uint64_t *slots = NULL;
    uint64_t n, check = 0, t0 = 0, t1 = 0, cpu0 = 0, cpu1 = 0;
    double value;
    int fp = 0; /* yield-fp */
    enum { SPAWN_JOIN, SKYNET, FIB, YIELD } w;

    peer_parse_args(argc, argv, &a);
    n = a.n;
    if (strcmp(a.workload, "spawn-join") == 0) {
        w = SPAWN_JOIN;
    } else if (strcmp(a.workload, "skynet") == 0) {
        w = SKYNET;
        if (!is_power_of_10(n)) {
            fprintf(stderr, "peer-openmp: skynet needs a power of 10 leaves\n");
            return PEER_EXIT_FAILED;
        }
    } else if (strcmp(a.workload, "fib") == 0) {
        w = FIB;
        if (n > 90) {
            fprintf(stderr, "peer-openmp: fib(%" PRIu64 ") overflows\n", n);
            return PEER_EXIT_FAILED;
        }
    } else if (strcmp(a.workload, "yield") == 0) {
        w = YIELD;
    } else if (strcmp(a.workload, "yield-fp") == 0) {
        w = YIELD;
        fp = 1;
    } else if (strcmp(a.workload, "ping-pong") == 0 ||
               strcmp(a.workload, "ping-pong-fp") == 0 ||
               strcmp(a.workload, "sync-wait") == 0 ||
               strncmp(a.workload, "latency-", 8) == 0) {
        return PEER_EXIT_UNKNOWN_WORKLOAD; /* see the top of this file */
    } else {
        fprintf(stderr, "peer-openmp: no workload '%s'\n", a.workload);
        return PEER_EXIT_UNKNOWN_WORKLOAD;
    }

    if (w == SPAWN_JOIN || w == YIELD) {
        slots = calloc(w == SPAWN_JOIN ? n : YIELD_TASKS, sizeof *slots);
        if (slots == NULL) {
            fprintf(stderr, "peer-openmp: out of memory\n");
            return PEER_EXIT_FAILED;
        }
    }

    omp_set_dynamic(0);
    omp_set_num_threads((int)a.threads);
#pragma omp parallel
    { /* start and warm the team */ }

#pragma omp parallel
#pragma omp single
    {
        cpu0 = bench_cpu_ns();
        t0 = bench_now_ns();
        switch (w) {
        case SPAWN_JOIN:
            for (uint64_t i = 0; i < n; i++) {
#pragma omp task firstprivate(i)
                slots[i] = i + 1;
            }
#pragma omp taskwait
            for (uint64_t i = 0; i < n; i++)
                check += slots[i];
            break;
        case SKYNET:
            check = skynet(0, n);
            break;
        case FIB:
            check = fib(n);
            break;
        case YIELD:
            for (int k = 0; k < YIELD_TASKS; k++) {
#pragma omp task firstprivate(k)
                {
                    uint64_t count = 0;
                    for (uint64_t j = 0; j < n; j++) {
                        if (fp) {
                            bench_fp_raise();
                            if (k % 2)
                                bench_fp_clear();
                        }
#pragma omp taskyield
                        count++;
                    }
                    slots[k] = count;
                }
            }
#pragma omp taskwait
            for (int k = 0; k < YIELD_TASKS; k++)
                check += slots[k];
            break;
        }
        t1 = bench_now_ns();
        cpu1 = bench_cpu_ns();
    }

    value = (double)(t1 - t0);
    if (w == YIELD) {
        double ops = (double)YIELD_TASKS * (double)n;
        double cpu = (double)(cpu1 - cpu0) / ops;   /* ns per yield */

        peer_report_extra(value / ops, check, &cpu, 1);
    } else {
        peer_report(value / 1e6, check);            /* ms per run */
    }
    free(slots);
    return 0;
}
