/*
 * sched/destroy.c — weft_pool_destroy and weft_pool_destroy_for: how the
 * destroyer waits for the drain (pool.c does the shutdown itself,
 * sched/destroy.h).
 *
 * A plain thread (or a standalone coroutine) blocks on a parker that the
 * pool's last worker unparks when it finds the pool drained (pool.c,
 * check_stop, under idle_lock), at most until the deadline.
 *
 * A task must not block its worker (weft/weft.h, "Contexts"), and the
 * shutdown ends by joining the pool's threads, which only a thread can
 * do.  So a task hands the whole destroy to a helper thread, started for
 * the call (a destroy is rare; a thread costs some tens of microseconds),
 * and parks on a wait until the helper is done.  The helper is a plain
 * destroyer, with the task's deadline; the task's cancellation reaches it
 * through the wait's end hook (sched/wait.h: called under the task's
 * wait_lock while the wait is current), which sets give_up and unparks
 * the helper's parker.  The wait itself ends only by the helper's wake,
 * under `lock`, which the task retakes before it returns, so the helper
 * never touches the call's record (on the task's stack) after that.  (A
 * task may not use weft_blocking here: sched/ is below io/.)
 *
 * Giving up (the deadline passed, or give_up).  The destroyer takes
 * idle_lock and looks at the drain itself, as a parking worker does
 * (pool.c, check_stop: a pool drained before any worker parked again
 * stops now); under that lock the worker that finds the pool drained
 * sets `stop` and unparks the destroyer: if `stop` is set, that unpark has
 * happened and the destroy goes on to the end (it has won: the caller
 * gets 0).  Else no unpark of this parker can come any more once the
 * destroyer is replaced by `sink`, a parker nobody parks on; then
 * `destroying` is released, so that a later destroy can take over the
 * waiting.  The pool keeps `shutdown` (spawns from outside fail) and
 * drains on.
 */
#include "sched/destroy.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/compiler.h"
#include "sched/task.h"
#include "sched/wait.h"
#include "sched/worker.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>

/* The destroyer of a pool whose destroy gave up (see the top). */
static struct weft__parker sink;
static pthread_once_t sink_once = PTHREAD_ONCE_INIT;

static void sink_init(void)
{
    weft__parker_init(&sink);
}

/* A deadline that has passed: timeout 0, for which the destroy begins,
 * and ends now only if the pool is drained already (wait_stop looks once). */
#define NOW ((uint64_t)1)

/* How a destroyer waits: until `deadline` (0: none) or give_up. */
struct destroyer {
    struct weft__parker parker;
    uint64_t deadline;
    _Atomic uint32_t give_up;   /* set by the calling task's cancel */
};

/* Give up waiting unless the pool has stopped, or is drained and stops
 * now: its workers may not have parked since the shutdown (a timeout of
 * 0 looks before any could), and `stop` is set by the first that parks.
 * Returns 0 (it has: the destroy goes on) or err. */
static int give_up(weft_pool *p, int err)
{
    pthread_once(&sink_once, sink_init);
    if (weft__pool_stop_or_give_up(p, &sink))
        return 0;
    /* Release: a later destroy that claims it sees `sink` in place. */
    atomic_store_explicit(&p->destroying, 0, memory_order_release);
    return err;
}

/* weft__pool_destroy's wait for the drain. */
static int wait_stop(weft_pool *p, void *arg)
{
    struct destroyer *d = arg;
    for (;;) {
        /* Acquire: pairs with the worker's release of stop (pool.c). */
        if (atomic_load_explicit(&p->stop, memory_order_acquire))
            return 0;
        if (atomic_load_explicit(&d->give_up, memory_order_acquire))
            return give_up(p, -ECANCELED);
        if (d->deadline && weft__now_ns() >= d->deadline)
            return give_up(p, -ETIMEDOUT);
        weft__parker_park(&d->parker, d->deadline, 0);
    }
}

/* ----------------------------------------------------------- in a task */

/* For the dump: the pool. */
static void describe(const struct weft__wait *w, char *buf, size_t n)
{
    snprintf(buf, n, "pool %p", w->obj);
}

static const struct weft__wait_kind destroy_kind = {
    WEFT__WR_OTHER, "pool destroy", 0, describe};

/* A task's call, on its stack; the helper's until it wakes the task. */
struct task_call {
    weft_pool *pool;
    struct destroyer d;
    struct weft__wait wait;
    weft__spinlock lock;        /* the helper's wake; the task retakes it */
    int rc;
};

/* The task was cancelled (under its wait_lock): the helper gives up.  The
 * wait goes on until the helper's wake. */
static void cancel_helper(struct weft__wait *w, uint32_t outcome)
{
    (void)outcome;
    struct task_call *c = (struct task_call *)w->data;
    atomic_store_explicit(&c->d.give_up, 1, memory_order_release);
    weft__parker_unpark(&c->d.parker);
}

static void *helper_main(void *arg)
{
    struct task_call *c = arg;
    pthread_setname_np(pthread_self(), "weft-destroy");
    int rc = weft__pool_destroy(c->pool, &c->d.parker, wait_stop, &c->d);
    weft__spin_lock(&c->lock);
    c->rc = rc;
    weft__wait_wake(&c->wait);
    weft__spin_unlock(&c->lock); /* its last touch of c */
    return NULL;
}

static int destroy_in_task(weft_pool *p, uint64_t deadline)
{
    struct task_call c = {.pool = p, .d = {.deadline = deadline}};
    weft__spin_init(&c.lock);
    if (weft__wait_init_hook(&c.wait, 0, cancel_helper, (uintptr_t)&c,
                             &destroy_kind, p))
        return -ECANCELED; /* cancelled before the call: nothing done */
    weft__parker_init(&c.d.parker);
    pthread_attr_t attr;
    pthread_t th;
    int err = pthread_attr_init(&attr);
    if (!err) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        err = weft__quiet_thread_create(&th, &attr, helper_main, &c);
        pthread_attr_destroy(&attr);
    }
    if (err) {
        weft__wait_abandon(&c.wait);
        weft__parker_fini(&c.d.parker);
        return -EAGAIN; /* nothing done */
    }
    (void)weft__wait_block(&c.wait); /* only the helper's wake ends it */
    weft__spin_lock(&c.lock);
    weft__spin_unlock(&c.lock);
    weft__parker_fini(&c.d.parker);
    return c.rc;
}

/* ----------------------------------------------------------- the calls */

static int destroy_until(weft_pool *p, uint64_t deadline)
{
    if (!p)
        return -EINVAL;
    struct weft__worker *self = weft__worker_current();
    if (self && self->pool == p)
        return -EDEADLK;
    /* A task parks while a helper waits, but a timeout of 0 never waits
     * (weft/weft.h): it looks once, here (a drained pool's workers are
     * exiting: joining them takes no wait on anything of ours). */
    if (weft__task_current() && deadline != NOW)
        return destroy_in_task(p, deadline);
    struct destroyer d = {.deadline = deadline};
    weft__parker_init(&d.parker);
    int rc = weft__pool_destroy(p, &d.parker, wait_stop, &d);
    weft__parker_fini(&d.parker);
    return rc;
}

WEFT_EXPORT int weft_pool_destroy(weft_pool *pool)
{
    return destroy_until(pool, 0);
}

WEFT_EXPORT int weft_pool_destroy_for(weft_pool *pool, uint64_t timeout_ns)
{
    return destroy_until(pool,
                         timeout_ns ? weft__deadline_after(timeout_ns) : NOW);
}
