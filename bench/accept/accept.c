/* accept.c — the helpers of accept.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "accept.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <weft/weft.h>

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sleep_until_ns(uint64_t t)
{
    struct timespec ts = {.tv_sec = (time_t)(t / 1000000000ull),
                          .tv_nsec = (long)(t % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "error: watchdog: the program hung\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(2);
}

void watchdog(unsigned seconds)
{
    signal(SIGALRM, on_alarm);
    alarm(seconds);
}

void *ticker_task(void *arg)
{
    struct ticker *t = arg;
    t->first_ns = now_ns();
    atomic_store(&t->started, true);
    uint64_t before = t->first_ns;
    while (!atomic_load(&t->stop) && t->ticks < TICKER_MAX) {
        if (weft_sleep(1 * MS) != 0)
            return (void *)1;
        uint64_t woke = now_ns();
        double late = (double)((int64_t)(woke - before) - (int64_t)MS) / 1e6;
        t->late_ms[t->ticks++] = late;
        if (late > t->worst_ms) {
            t->worst_ms = late;
            t->worst_at_ms = (double)(before - t->first_ns) / 1e6;
        }
        t->last_ns = before = woke;
    }
    return NULL;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct weft_pool *start_pool_and_ticker(struct ticker *t,
                                        struct weft_task **tick)
{
    weft_pool *pool;
    weft_pool_opts opts = {.threads = 2};
    if (weft_pool_create(&pool, &opts) != 0 ||
        weft_spawn(tick, pool, ticker_task, t, NULL) != 0) {
        fprintf(stderr, "error: weft_pool_create or weft_spawn\n");
        exit(2);
    }
    while (!atomic_load(&t->started))
        weft_sleep(100000); /* on a plain thread: nanosleep */
    return pool;
}

void stop_ticker_and_pool(struct ticker *t, struct weft_task *tick,
                          struct weft_pool *pool)
{
    atomic_store(&t->stop, true);
    void *bad;
    if (weft_sync_wait(tick, &bad) != 0 || bad) {
        fprintf(stderr, "error: the ticker failed\n");
        exit(2);
    }
    weft_pool_destroy(pool);
}

struct summary summarize(double *v, size_t n)
{
    struct summary s = {0, 0};
    if (n == 0)
        return s;
    qsort(v, n, sizeof *v, by_value);
    s.worst = v[n - 1];
    s.p99 = v[(size_t)ceil(0.99 * (double)n) - 1];
    return s;
}

struct ticker_figures ticker_report(struct ticker *t)
{
    double ideal = (double)(t->last_ns - t->first_ns) / (double)MS;
    struct summary s = summarize(t->late_ms, t->ticks);
    struct ticker_figures f = {s.worst, s.p99, 0};
    if (ideal > 0)
        f.pct_of_ideal = 100.0 * (double)t->ticks / ideal;
    printf("ticker_worst_ms: %.3f\n", f.worst);
    printf("ticker_worst_at_ms: %.0f\n", t->worst_at_ms);
    printf("ticker_p99_ms: %.3f\n", f.p99);
    printf("ticks: %zu\n", t->ticks);
    printf("ticks_pct_of_ideal: %.1f\n", f.pct_of_ideal);
    return f;
}
