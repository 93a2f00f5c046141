/*
 * sync/cond.c — the condition variable (weft/sync.h).
 *
 * No missed signal: a waiter lists its record under the condition's lock
 * before it unlocks the mutex.  A signaller that changed the awaited state
 * under the mutex signals after that, so it finds the record listed.
 *
 * Every return past the argument checks holds the mutex: a waiter that
 * timed out or was cancelled still re-locks it, with a wait that neither
 * a deadline nor a cancellation can end (mutex.h), before returning, as
 * pthread_cond_timedwait does.  The one failure that must not release the
 * mutex, a timer that cannot be armed (-ENOMEM), is found before it is
 * released: the timer is armed first (weft__wait_arm_first).
 */
#include "base/compiler.h"
#include "sync/mutex.h"
#include "sync/objects.h"
#include "sync/waitq.h"

#include <errno.h>
#include <stdio.h>

/* For the dump: the object. */
static void describe(const struct weft__wait *w, char *buf, size_t n)
{
    snprintf(buf, n, "cond %p", w->obj);
}

static const struct weft__wait_kind cond_kind = {WEFT__WR_COND, "cond", 0,
                                                 describe};


static int wait_until(weft_cond *c, weft_mutex *m, uint64_t deadline)
{
    struct weft__cond *cv = weft__cond_of(c);
    if (!c || !m)
        return -EINVAL;
    uintptr_t me = weft__mutex_self();
    if (!weft__mutex_held(m, me))
        return -EPERM;
    struct weft__wait w;
    if (weft__wait_init(&w, deadline, &cond_kind, cv))
        return -ECANCELED; /* still holding m: it was never released */
    /* The timer before m is released: one that cannot be armed leaves m
     * held and nothing changed (weft/sync.h, -ENOMEM). */
    if (weft__wait_arm_first(&w)) {
        weft__wait_abandon(&w);
        return -ENOMEM;
    }
    weft__spin_lock(&cv->lock_);
    weft__wq_push(&cv->q_, &w);
    weft__spin_unlock(&cv->lock_);
    weft__mutex_release(m);

    uint32_t outcome = weft__wait_block(&w);
    weft__spin_lock(&cv->lock_);
    if (w.listed)
        weft__wq_remove(&cv->q_, &w);
    weft__spin_unlock(&cv->lock_);

    weft__mutex_relock(m, me);
    return weft__wait_error(&w, outcome);
}

WEFT_EXPORT void weft_cond_init(weft_cond *c)
{
    struct weft__cond *cv = weft__cond_of(c);
    if (!c)
        return;
    cv->lock_ = 0;
    weft__wq_init(&cv->q_);
}

WEFT_EXPORT int weft_cond_wait(weft_cond *c, weft_mutex *m)
{
    return wait_until(c, m, 0);
}

WEFT_EXPORT int weft_cond_wait_for(weft_cond *c, weft_mutex *m,
                                   uint64_t timeout_ns)
{
    if (timeout_ns == 0) {
        /* Never waits (weft/weft.h, "Timeouts"): m is never released. */
        if (!c || !m)
            return -EINVAL;
        return weft__mutex_held(m, weft__mutex_self()) ? -ETIMEDOUT : -EPERM;
    }
    return wait_until(c, m, weft__deadline_after(timeout_ns));
}

WEFT_EXPORT void weft_cond_signal(weft_cond *c)
{
    struct weft__cond *cv = weft__cond_of(c);
    if (!c)
        return;
    weft__spin_lock(&cv->lock_);
    weft__wq_wake_one(&cv->q_);
    weft__spin_unlock(&cv->lock_);
}

WEFT_EXPORT void weft_cond_broadcast(weft_cond *c)
{
    struct weft__cond *cv = weft__cond_of(c);
    if (!c)
        return;
    weft__spin_lock(&cv->lock_);
    while (weft__wq_wake_one(&cv->q_))
        ;
    weft__spin_unlock(&cv->lock_);
}
