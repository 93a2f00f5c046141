/*
 * accept.h — what issue 23's acceptance programs share: the clock, a
 * watchdog, a 1 ms ticker task and the worst/p99 of a set of figures.
 */
#ifndef ACCEPT_H
#define ACCEPT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MS 1000000ull /* nanoseconds */

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t now_ns(void);

/* Sleep the calling (plain) thread until the CLOCK_MONOTONIC time t. */
void sleep_until_ns(uint64_t t);

/* From now on the process exits 2, with a line on stderr, after `seconds`. */
void watchdog(unsigned seconds);

/* A task looping weft_sleep(1 ms) until `stop` is set; for each wake-up
 * its lateness: the time the sleep took, less 1 ms. */
enum { TICKER_MAX = 100000 };
struct ticker {
    atomic_bool started, stop;
    uint64_t first_ns, last_ns; /* the first sleep's start, the last wake */
    size_t ticks;
    double late_ms[TICKER_MAX];
    double worst_ms, worst_at_ms; /* the worst, and when (from first_ns) */
};
void *ticker_task(void *ticker); /* the task's body: weft_spawn it */

/* A pool of 2 workers, every other option its default, with `t` ticking
 * on it (*tick its handle): returns once the ticker's first sleep has
 * begun.  Exits 2 with a line on stderr if either cannot be made. */
struct weft_pool;
struct weft_task;
struct weft_pool *start_pool_and_ticker(struct ticker *t,
                                        struct weft_task **tick);

/* Stop the ticker, wait for it and destroy the pool (its other tasks
 * must have ended).  Exits 2 with a line on stderr if the ticker failed. */
void stop_ticker_and_pool(struct ticker *t, struct weft_task *tick,
                          struct weft_pool *pool);

/* Sorts v[0..n-1]; the largest, and the 99th percentile (nearest rank). */
struct summary {
    double worst, p99;
};
struct summary summarize(double *v, size_t n);

/* Prints ticker_worst_ms, ticker_worst_at_ms, ticker_p99_ms, ticks and
 * ticks_pct_of_ideal (ideal: one tick a millisecond from the first sleep to the last wake),
 * and returns them. */
struct ticker_figures {
    double worst, p99, pct_of_ideal;
};
struct ticker_figures ticker_report(struct ticker *t);

#endif
