/*
 * sync/event.c — the fire-once event (weft/event.h), on the wait record
 * every other primitive uses (sched/wait.h, sync/waitq.h): one park, wake,
 * timeout and cancel protocol for all of them.
 *
 * state is UNSET, SETTING (a set is waking the waiters) or SET
 * (sync/objects.h); the lock guards the waiter list.  A wait that finds
 * SET returns at once; else it
 * lists its record under the lock and blocks (a task parks, a thread
 * sleeps on its parker), and its timer and weft_task_cancel race the set
 * through the record's outcome CAS, as for every wait.
 *
 * Set, and who touches what when (an event, and a waiter's record, may
 * live on a waiter's stack, and the event may be reused once its waiters
 * have returned):
 *   1. lock; state = SETTING; wake every listed record (each unlinked;
 *      the wake fails for one that timed out or was cancelled, which then
 *      just returns its error); unlock
 *   2. state = SET (release): the setter's last access to the event.
 * A waiter retakes the lock after its wait (the wait record's rule), so it
 * returns after the setter's step 1 ended; and every waiter, woken or not,
 * that sees the event past UNSET waits until it reads SET before it
 * returns, so it returns after step 2 as well.  A wait that finds SET (the
 * fast path) is after step 2 by definition.
 */
#include <weft/event.h>

#include "base/backoff.h"
#include "base/compiler.h"
#include "sched/task.h"
#include "sync/objects.h"
#include "sync/waitq.h"

#include <errno.h>
#include <stdio.h>

/* For the dump: the object. */
static void describe(const struct weft__wait *w, char *buf, size_t n)
{
    snprintf(buf, n, "event %p", w->obj);
}

static const struct weft__wait_kind event_kind = {WEFT__WR_EVENT, "event", 0,
                                                  describe};


static uint32_t state_of(const struct weft__event *e)
{
    /* Acquire: what the setter wrote before SET is visible. */
    return __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
}

/* A set is under way: wait for its step 2 (a few instructions away). */
static void await_set(const struct weft__event *e)
{
    unsigned spins = 0;
    while (state_of(e) != WEFT__EV_SET)
        weft__backoff(&spins);
}

WEFT_EXPORT void weft_event_init(weft_event *ev)
{
    if (!ev)
        return;
    struct weft__event *e = weft__event_of(ev);
    e->state = WEFT__EV_UNSET;
    weft__spin_init(&e->lock);
    weft__wq_init(&e->q);
}

WEFT_EXPORT bool weft_event_is_set(const weft_event *ev)
{
    return ev && state_of(weft__event_of(ev)) == WEFT__EV_SET;
}

WEFT_EXPORT void weft_event_set(weft_event *ev)
{
    if (!ev)
        return;
    struct weft__event *e = weft__event_of(ev);
    weft__spin_lock(&e->lock);
    if (__atomic_load_n(&e->state, __ATOMIC_RELAXED) != WEFT__EV_UNSET) {
        weft__spin_unlock(&e->lock);
        return; /* set already, or being set */
    }
    __atomic_store_n(&e->state, WEFT__EV_SETTING, __ATOMIC_RELAXED);
    while (weft__wq_wake_one(&e->q))
        ;
    weft__spin_unlock(&e->lock);
    __atomic_store_n(&e->state, WEFT__EV_SET, __ATOMIC_RELEASE);
}

/* Wait for the event until deadline (0: none); nowait: -ETIMEDOUT instead
 * of waiting. */
static int wait_until(weft_event *ev, uint64_t deadline, bool nowait)
{
    if (!ev)
        return -EINVAL;
    struct weft__event *e = weft__event_of(ev);
    if (state_of(e) == WEFT__EV_SET)
        return 0;
    weft__spin_lock(&e->lock);
    if (__atomic_load_n(&e->state, __ATOMIC_RELAXED) != WEFT__EV_UNSET) {
        weft__spin_unlock(&e->lock);
        await_set(e);
        return 0;
    }
    struct weft__wait w;
    if (nowait || weft__wait_init(&w, deadline, &event_kind, e)) {
        weft__spin_unlock(&e->lock);
        return nowait ? -ETIMEDOUT : -ECANCELED;
    }
    uint32_t outcome = weft__wq_block(&e->lock, &e->q, &w, false);
    bool touched =
        __atomic_load_n(&e->state, __ATOMIC_RELAXED) != WEFT__EV_UNSET;
    weft__spin_unlock(&e->lock);
    if (touched)
        await_set(e); /* the setter's step 2 (see the top) */
    return weft__wait_error(&w, outcome);
}

WEFT_EXPORT int weft_event_wait(weft_event *ev)
{
    return wait_until(ev, 0, false);
}

WEFT_EXPORT int weft_event_wait_for(weft_event *ev, uint64_t timeout_ns)
{
    return wait_until(ev, weft__deadline_after(timeout_ns), timeout_ns == 0);
}
