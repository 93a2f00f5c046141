/*
 * st.h — helpers for the sync and channel tests, on top of tests/pool/wt.h
 * (checks, watchdog, pools).
 *
 * st_await_parked(t) waits until task t is parked in a wait (its current
 * wait record is set and it has switched out), read from the runtime's
 * own task record: a test that must act on a *blocked* task (cancel it,
 * hand it something) waits for exactly that instead of sleeping.
 */
#ifndef ST_H
#define ST_H

#include "../pool/wt.h"

#include <weft/chan.h>
#include <weft/sync.h>
#include <weft/timer.h>

#include "sched/task.h"
#include "sync/objects.h"
#include "sync/waitq.h"

/* Whether t is parked in a wait now. */
static inline bool st_parked(weft_task *h)
{
    /* Not ended (the caller holds the handle): it has its run record. */
    struct weft__task *t = weft__handle_run(h);
    weft__spin_lock(&t->wait_lock);
    bool waiting = t->cur_wait != NULL;
    weft__spin_unlock(&t->wait_lock);
    uint64_t s = atomic_load_explicit(&h->state, memory_order_acquire);
    return waiting && (s & WEFT__T_LIFECYCLE) == WEFT__T_IDLE;
}

/* st_everywhere: run body on this plain thread, in a lazy task that
 * sync_wait runs here (no pool), and in a task on a pool of the case's
 * size: the three kinds of caller every primitive serves. */
struct st_body {
    void (*fn)(void);
};

static inline void *st_body_in_task(void *arg)
{
    ((struct st_body *)arg)->fn();
    return arg;
}

static inline void st_everywhere(void **state, void (*body)(void))
{
    struct st_body b = {body};
    body();
    wt_run_lazy(st_body_in_task, &b);
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    assert_ptr_equal(wt_run(p, st_body_in_task, &b), &b);
    wt_destroy(p);
}

static inline void st_await_parked(weft_task *t)
{
    while (!st_parked(t))
        sched_yield();
}

/* A primitive's waiter list and its lock (sync/objects.h), as the two
 * arguments of st_listed and st_await_listed. */
#define ST_IMPL(o)                                                          \
    _Generic((o), weft_mutex *: weft__mutex_of, weft_cond *: weft__cond_of, \
             weft_sem *: weft__sem_of,                                      \
             weft_wait_group *: weft__wait_group_of)(o)
#define ST_Q(o) &ST_IMPL(o)->lock_, &ST_IMPL(o)->q_

/* Records listed in q, counted under its lock. */
static inline unsigned st_listed(weft__spinlock *lock, weft__waitq *q)
{
    unsigned n = 0;
    weft__spin_lock(lock);
    for (struct weft__wait *w = q->head_; w; w = w->next)
        n++;
    weft__spin_unlock(lock);
    return n;
}

/* Wait until exactly n records are listed in q. */
static inline void st_await_listed(weft__spinlock *lock, weft__waitq *q,
                                   unsigned n)
{
    while (st_listed(lock, q) != n)
        sched_yield();
}

/* Spawn fn(arg) on p, keeping the handle. */
static inline weft_task *st_spawn(weft_pool *p, weft_fn fn, void *arg)
{
    weft_task *t = NULL;
    assert_int_equal(weft_spawn(&t, p, fn, arg, NULL), 0);
    assert_non_null(t);
    return t;
}

/* sync_wait t from the main thread; its result as an int. */
static inline intptr_t st_join(weft_task *t)
{
    void *r = P(-12345);
    assert_int_equal(weft_sync_wait(t, &r), 0);
    return I(r);
}

/* Iteration counts shrink under WEFT_STRESS_SCALE (sanitizer builds). */
static inline unsigned st_scaled(unsigned n)
{
    const char *s = getenv("WEFT_STRESS_SCALE");
    double f = s && *s ? atof(s) : 1.0;
    if (f <= 0 || f > 1)
        f = 1.0;
    unsigned r = (unsigned)(n * f);
    return r ? r : 1;
}

#endif /* ST_H */
