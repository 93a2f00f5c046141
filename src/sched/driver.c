/*
 * sched/driver.c — weft_sync_wait: a plain thread blocks until a task
 * ends, and meanwhile runs the tasks that belong to it (sched/driver.h).
 *
 * The driver lives on the waiting thread's stack, so no waker may touch it
 * after weft_sync_wait returns.  Every waker (a task queued on the driver,
 * the target's end) brackets its touches with `wakers`: it counts itself
 * in (seq_cst) before its first touch and out (release) after its last,
 * the unpark.  The thread returns only once it has seen `done` and then
 * `wakers` at 0 (acquire):
 *   - a waker that counted itself in before that read is waited for;
 *   - one that comes after cannot exist: `done` is set by the target's
 *     end, the last event of the target, and only the target's own tasks
 *     are queued here, which the thread waits for too (`bound`: each has
 *     ended, or moved to a pool) before it reads `wakers`.
 * The count is at most a few instructions away from 0 when the thread
 * looks (unpark makes no system call while the thread is awake), so the
 * thread spins for it.
 */
#include "sched/driver.h"

#include "base/backoff.h"
#include "base/compiler.h"
#include "sched/task.h"
#include "sched/worker.h"

void weft__driver_submit(struct weft__driver *d, struct weft__task *t)
{
    atomic_fetch_add_explicit(&d->wakers, 1, memory_order_seq_cst);
    weft__spin_lock(&d->lock);
    t->link = NULL;
    *d->queue_tail = t;
    d->queue_tail = &t->link;
    weft__spin_unlock(&d->lock);
    weft__parker_unpark(&d->parker);
    atomic_fetch_sub_explicit(&d->wakers, 1, memory_order_release);
}

void weft__driver_finish(struct weft__driver *d)
{
    atomic_fetch_add_explicit(&d->wakers, 1, memory_order_seq_cst);
    atomic_store_explicit(&d->done, 1, memory_order_release);
    weft__parker_unpark(&d->parker);
    atomic_fetch_sub_explicit(&d->wakers, 1, memory_order_release);
}

/* Run t (and what it hands control to) here until it switches back to
 * this thread's scheduler; a worker's place it took on the way (a move to
 * a pool, pool.c "Lending") goes back then. */
static void run_here(struct weft__task *t)
{
    weft__task_run(t);
    struct weft__sched_thread *st = weft__sched_fresh();
    struct weft__worker *lent = st->worker;
    if (lent) {
        st->worker = NULL;
        weft__pool_unlend(lent);
    }
}

static struct weft__task *driver_pop(struct weft__driver *d)
{
    weft__spin_lock(&d->lock);
    struct weft__task *t = d->queue_head;
    if (t) {
        d->queue_head = t->link;
        if (!d->queue_head)
            d->queue_tail = &d->queue_head;
    }
    weft__spin_unlock(&d->lock);
    return t;
}

/* Wait until t ends; with keep, t's handle stays the caller's
 * (weft_task_join), else it is consumed and its result is in *result. */
static int sync_wait(weft_task *h, void **result, bool keep)
{
    if (!h)
        return -EINVAL;
    /* LAZY is the handle holder's flag: ours.  A lazy task has its run
     * record (it has not run). */
    bool lazy = atomic_load_explicit(&h->state, memory_order_relaxed) &
                WEFT__T_LAZY;
    struct weft__task *t = weft__handle_run(h);
    struct weft__thread *th = weft__tls_fresh();
    struct weft__sched_thread *st = weft__sched_fresh();
    if (st->worker || !(th->current->flags & WEFT__CORO_ROOT) || st->driver)
        return -EDEADLK;
    if (lazy) {
        /* Its stack first, the one step that can fail.  With no size of
         * its own, the task gets room for the pools it may hop onto
         * (weft/task.h, "Stacks"), where the system grants that much. */
        int err;
        if (atomic_load_explicit(&t->stack_size, memory_order_relaxed)) {
            err = weft__task_prepare(t, NULL);
        } else {
            atomic_store_explicit(&t->stack_size,
                                  (uint32_t)WEFT_STACK_NO_POOL,
                                  memory_order_relaxed);
            err = weft__task_prepare(t, NULL);
            if (err) {
                atomic_store_explicit(&t->stack_size, 0,
                                      memory_order_relaxed);
                err = weft__task_prepare(t, NULL);
            }
        }
        if (err)
            return err;
    }
    weft__thread_setup(th);

    struct weft__driver d;
    weft__parker_init(&d.parker);
    weft__spin_init(&d.lock);
    d.queue_head = NULL;
    d.queue_tail = &d.queue_head;
    atomic_init(&d.done, 0);
    atomic_init(&d.wakers, 0);
    weft__timers_init(&d.timers);
    d.bound = 0;
    st->driver = &d;

    if (lazy) {
        /* Lazy: it runs here until it first suspends, and here again
         * whenever it is woken while it belongs to no pool. */
        t->driver = &d;
        d.bound = 1;
        atomic_store_explicit(&h->waiter,
                              (uintptr_t)&d | WEFT__WAITER_THREAD,
                              memory_order_relaxed);
        weft__task_start_here(h);
        run_here(t);
    } else {
        uintptr_t none = 0;
        if (!atomic_compare_exchange_strong_explicit(
                &h->waiter, &none, (uintptr_t)&d | WEFT__WAITER_THREAD,
                memory_order_acq_rel, memory_order_acquire)) {
            if (!weft__waiter_ended(none)) {
                /* Another waiter holds the slot (weft/task.h: one at a
                 * time); d was never published. */
                st->driver = NULL;
                weft__timers_fini(&d.timers);
                weft__parker_fini(&d.parker);
                return -EBUSY;
            }
            atomic_store_explicit(&d.done, 1, memory_order_relaxed);
        }
    }

    /* Until the target ended, and every task that belongs here with it:
     * a lazy task an await of it started and gave up on (a timeout, a
     * cancel) runs on, on this thread alone, and wakes it through d. */
    while (!atomic_load_explicit(&d.done, memory_order_acquire) || d.bound) {
        struct weft__task *n = driver_pop(&d);
        if (n) {
            if (weft__task_claim_queued(n))
                run_here(n);
            continue;
        }
        if (weft__timers_run(&d.timers, weft__now_ns()))
            continue;
        uint64_t next = weft__timers_next(&d.timers);
        weft__parker_park(&d.parker, next == UINT64_MAX ? 0 : next,
                          WEFT__PARK_SPIN_NS);
    }
    /* The last waker's final touch of d (see the top). */
    unsigned spins = 0;
    while (atomic_load_explicit(&d.wakers, memory_order_acquire))
        weft__backoff(&spins);
    weft__sched_fresh()->driver = NULL;
    weft__timers_fini(&d.timers);
    weft__parker_fini(&d.parker);
    if (!keep)
        weft__task_consume(h, result);
    return 0;
}

WEFT_EXPORT int weft_sync_wait(weft_task *t, void **result)
{
    return sync_wait(t, result, false);
}

int weft__sync_wait_keep(struct weft_task *h)
{
    return sync_wait(h, NULL, true);
}
