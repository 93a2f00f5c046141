/*
 * wt.h — shared helpers for the pool, task and event unit tests.
 *
 * Code that runs on pool workers (task bodies) must never call cmocka's
 * assert macros: they longjmp to the main thread's frame.  It uses CHECK /
 * CHECK_EQ instead, which print the first failures and count them; every
 * test case ends with WT_CLEAN(), which asserts on the main thread that the
 * count is zero.
 *
 * Every case runs under a watchdog (alarm in the setup fixture): a hang (a
 * lost wakeup, a drain that never ends) aborts the program with the name
 * of the case instead of waiting for meson's timeout.
 *
 * Cases that make sense at several pool sizes are registered three times
 * (WT_TEST: 1, 2 and 4 worker threads); WT_NTHREADS(state) gives the size.
 */
#ifndef WT_H
#define WT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <weft/coro.h>
#include <weft/event.h>
#include <weft/pool.h>
#include <weft/task.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#define P(x) ((void *)(intptr_t)(x))
#define I(p) ((intptr_t)(p))

/* ------------------------------------------------------------------ */
/* Checks usable on any thread                                          */

#include "../check.h"
#include "../live_limit.h"

/* On the main thread, at the end of a case: no check failed anywhere. */
#define WT_CLEAN() assert_int_equal(atomic_exchange(&check_failures, 0), 0)

/* ------------------------------------------------------------------ */
/* Time                                                                 */

static inline uint64_t wt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void wt_sleep_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = ms / 1000,
                           .tv_nsec = (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static inline void wt_spin(unsigned n)
{
    for (volatile unsigned i = 0; i < n; i++)
        ;
}

#define MS(x) ((uint64_t)(x) * 1000000u)

/* Thread identity read through a volatile function pointer, so that the
 * compiler cannot reuse a value computed before a suspension point (the
 * task may have moved to another thread meanwhile). */
static inline pthread_t wt_self_impl(void) { return pthread_self(); }
__attribute__((unused))
static pthread_t (*volatile wt_self)(void) = wt_self_impl;

/* ------------------------------------------------------------------ */
/* Parameters, fixtures, watchdog                                       */

struct wt_param {
    unsigned threads;
    const char *name;
};

__attribute__((unused))
static const char *volatile wt_current_case = "(none)";

static inline void wt_on_alarm(int sig)
{
    (void)sig;
    static const char pre[] = "\nwatchdog: test case hung: ";
    const char *name = wt_current_case;
    ssize_t r = write(2, pre, sizeof pre - 1);
    r = write(2, name, strlen(name));
    r = write(2, "\n", 1);
    (void)r;
    abort();
}

#ifndef WT_CASE_SECONDS
#define WT_CASE_SECONDS 120
#endif

static inline int wt_setup(void **state)
{
    const struct wt_param *prm = *state;
    wt_current_case = prm ? prm->name : "(unnamed)";
    atomic_store(&check_failures, 0);
    signal(SIGALRM, wt_on_alarm);
    alarm(WT_CASE_SECONDS);
    return 0;
}

static inline int wt_teardown(void **state)
{
    (void)state;
    alarm(0);
    return 0;
}

#define WT_NTHREADS(state) \
    (*(state) ? ((const struct wt_param *)*(state))->threads : 1u)

#define WT_CASE(fn, n, label)                                           \
    { label, fn, wt_setup, wt_teardown,                                 \
      &(struct wt_param){ (n), label } }

/* One case at 1, 2 and 4 worker threads. */
#define WT_TEST(fn)                                                     \
    WT_CASE(fn, 1, #fn "/1"), WT_CASE(fn, 2, #fn "/2"),                 \
    WT_CASE(fn, 4, #fn "/4")
/* One case, pool size irrelevant or fixed inside. */
#define WT_TEST1(fn) WT_CASE(fn, 1, #fn)
/* A slow case (a deep chain of new stacks, tens of thousands of tasks):
 * at 1, 2 and 4 worker threads natively, at 2 alone under a sanitizer or
 * Valgrind (tests/live_limit.h, WT_UNDER_TOOL), where each size took
 * 5-12 s of CI's time to look at the same code again. */
#ifdef WT_UNDER_TOOL
#define WT_TEST_SLOW(fn) WT_CASE(fn, 2, #fn "/2")
#else
#define WT_TEST_SLOW(fn) WT_TEST(fn)
#endif

/* WT_FILTER=pattern (cmocka's wildcards) runs only the matching cases. */
static inline void wt_main_init(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    setvbuf(stderr, NULL, _IONBF, 0);
    const char *f = getenv("WT_FILTER");
    if (f && *f)
        cmocka_set_test_filter(f);
}

/* ------------------------------------------------------------------ */
/* Pools and tasks from the main thread                                 */

static inline weft_pool *wt_pool_named(unsigned threads, const char *name)
{
    weft_pool_opts o = { .threads = threads, .stack_size = 0, .name = name };
    weft_pool *p = NULL;
    assert_int_equal(weft_pool_create(&p, &o), 0);
    assert_non_null(p);
    return p;
}

static inline weft_pool *wt_pool(unsigned threads)
{
    return wt_pool_named(threads, NULL);
}

static inline void wt_destroy(weft_pool *p)
{
    assert_int_equal(weft_pool_destroy(p), 0);
}

/* Spawn fn(arg) on p and sync_wait it from this (plain) thread. */
static inline void *wt_run(weft_pool *p, weft_fn fn, void *arg)
{
    weft_task *t = NULL;
    assert_int_equal(weft_spawn(&t, p, fn, arg, NULL), 0);
    assert_non_null(t);
    void *r = P(-12345);
    assert_int_equal(weft_sync_wait(t, &r), 0);
    return r;
}

/* Create a lazy task for fn(arg) and sync_wait it from this thread. */
static inline void *wt_run_lazy(weft_fn fn, void *arg)
{
    weft_task *t = NULL;
    assert_int_equal(weft_task_create(&t, fn, arg, NULL), 0);
    assert_non_null(t);
    void *r = P(-12345);
    assert_int_equal(weft_sync_wait(t, &r), 0);
    return r;
}

/* A plain thread that runs fn(arg). */
static inline pthread_t wt_thread(void *(*fn)(void *), void *arg)
{
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, fn, arg), 0);
    return th;
}

static inline void *wt_join(pthread_t th)
{
    void *r = NULL;
    assert_int_equal(pthread_join(th, &r), 0);
    return r;
}

#endif /* WT_H */
