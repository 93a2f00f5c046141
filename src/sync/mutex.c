/*
 * sync/mutex.c — the fiber-aware mutex (weft/sync.h).
 *
 * state_ is 0 (free), 1 (locked, nobody listed) or 2 (locked, and waiters
 * may be listed in q_).  q_ and every change of state_ away from a locked
 * value are under lock_, except the two fast paths:
 *
 *   lock:   CAS state_ 0 -> 1 (acquire), then owner_ = me.
 *   unlock: owner_ = 0, then CAS state_ 1 -> 0 (release).
 *
 * One atomic read-modify-write each when nobody waits; the owner_ stores
 * are plain (relaxed) stores.
 *
 * Slow lock, under lock_: CAS state_ 0 -> 1 (took it after all) or make
 * it 2 (CAS 1 -> 2, or already 2), then list a wait record holding our
 * owner token and block.  Slow unlock (its CAS found 2), under lock_: wake
 * the first listed waiter that can still be woken and hand it the mutex
 * (owner_ = its token, state_ = 2 if others are listed, else 1); if nobody
 * could be woken, state_ = 0 (release).
 *
 * No lost wakeup: a waiter makes state_ 2 and lists itself in one critical
 * section of lock_.  An unlock racing it either
 *   - CASes 1 -> 0 first: the waiter's CAS 1 -> 2 then fails, it reads 0
 *     and takes the mutex itself (CAS 0 -> 1) instead of waiting; or
 *   - comes second: its CAS reads 2 (a read-modify-write reads the latest
 *     value), it goes slow and takes lock_, which it can only get after the
 *     waiter dropped it, with the waiter listed: it wakes it.
 * A listed waiter therefore always meets a slow unlock.  Only a slow
 * unlock that finds nobody to wake sets 0, so while anyone is listed
 * state_ stays non-zero and the fast lock cannot barge past them: the
 * mutex goes to the waiters in order (direct hand-off), and a newcomer
 * takes it only when nobody waits.  A waiter that timed out or was
 * cancelled may leave state_ at 2 with an empty list: the next unlock just
 * takes the slow path once.
 *
 * Hand-off and the new owner: the unlocker wakes the waiter and sets
 * owner_ and state_ under lock_; the waiter retakes lock_ before its lock
 * call returns, so it sees both (and, through the wake's acq_rel outcome
 * CAS and lock_, everything the previous owner wrote).
 *
 * Memory orders:
 *   - fast lock CAS 0 -> 1: acquire, pairs with the release of the
 *     unlock that made it 0 (fast CAS 1 -> 0, or slow store 0);
 *   - fast unlock CAS 1 -> 0 and slow store 0: release;
 *   - the slow lock's CAS 1 -> 2 is relaxed: it publishes nothing (the
 *     record is published by lock_); only its place in state_'s
 *     modification order matters, which any order keeps;
 *   - owner_ is relaxed everywhere.  A caller compares it with its own
 *     token, and only the owner ever finds its own token there: the token
 *     is written by the locker itself or by the unlocker that hands the
 *     mutex to it (before the locker returns, see above), and the owner's
 *     own later store of 0 at unlock is what it reads afterwards (program
 *     order).  A stale value can only be someone else's token, or 0.
 *
 * Owner tokens: the running task (weft__task_current), else the address of
 * a thread-local byte, read through a non-inlined function so a migrating
 * caller never reuses an address computed on another thread.
 */
#include "base/compiler.h"
#include "sync/mutex.h"

#include "sched/task.h"
#include "sync/objects.h"
#include "sync/waitq.h"

#include <errno.h>
#include <stdio.h>


enum { FREE = 0, LOCKED = 1, CONTENDED = 2 };

/* For the dump (sched/observe.h): who holds it, read with one atomic load
 * (owner_ is relaxed everywhere, see the top). */
static void describe(const struct weft__wait *w, char *buf, size_t n)
{
    const struct weft__mutex *mx = w->obj;
    uintptr_t owner = __atomic_load_n(&mx->owner_, __ATOMIC_RELAXED);
    uint64_t id = owner ? weft__observe_task_id((const void *)owner) : 0;
    if (!owner)
        snprintf(buf, n, "mutex %p, free now", w->obj);
    else if (id)
        snprintf(buf, n, "mutex %p, held by task %llu", w->obj,
                 (unsigned long long)id);
    else
        snprintf(buf, n, "mutex %p, held by a plain thread", w->obj);
}

static const struct weft__wait_kind mutex_kind = {WEFT__WR_MUTEX, "mutex", 0,
                                                  describe};
/* The condition variable's re-lock, which cancellation does not end. */
static const struct weft__wait_kind relock_kind = {
    WEFT__WR_MUTEX, "mutex (cond re-lock)", WEFT__WK_NOCANCEL, describe};

__attribute__((noinline)) static uintptr_t thread_token(void)
{
    static _Thread_local char token;
    return (uintptr_t)&token;
}

/* The owner's token: the task whose body runs (for a body run inline on
 * its awaiter's stack, that child, not the awaiter: weft__task_body, as
 * weft_task_current and cancellation say), else the thread. */
uintptr_t weft__mutex_self(void)
{
    struct weft__task *t = weft__task_current();
    return t ? (uintptr_t)weft__task_body(t) : thread_token();
}

bool weft__mutex_held(const weft_mutex *m, uintptr_t me)
{
    struct weft__mutex *mx = weft__mutex_of(m);
    return __atomic_load_n(&mx->owner_, __ATOMIC_RELAXED) == me;
}

static bool try_fast(weft_mutex *m, uintptr_t me)
{
    struct weft__mutex *mx = weft__mutex_of(m);
    uint32_t s = FREE;
    if (!__atomic_compare_exchange_n(&mx->state_, &s, LOCKED, false,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return false;
    __atomic_store_n(&mx->owner_, me, __ATOMIC_RELAXED);
    return true;
}

/*
 * Lock m for me, past the fast path.  nowait: the error to return instead
 * of waiting (0: wait until deadline, 0 for none).  cancellable: false for
 * the condition's re-lock, which nothing but the hand-off ends.
 */
static int lock_slow(weft_mutex *m, uintptr_t me, uint64_t deadline,
                     int nowait, bool cancellable)
{
    struct weft__mutex *mx = weft__mutex_of(m);
    if (weft__mutex_held(m, me))
        return -EDEADLK;
    weft__spin_lock(&mx->lock_);
    uint32_t s = __atomic_load_n(&mx->state_, __ATOMIC_RELAXED);
    for (;;) {
        if (s == FREE) {
            if (__atomic_compare_exchange_n(&mx->state_, &s, LOCKED, false,
                                            __ATOMIC_ACQUIRE,
                                            __ATOMIC_RELAXED)) {
                __atomic_store_n(&mx->owner_, me, __ATOMIC_RELAXED);
                weft__spin_unlock(&mx->lock_);
                return 0;
            }
        } else if (nowait) {
            weft__spin_unlock(&mx->lock_);
            return nowait;
        } else if (s == CONTENDED ||
                   __atomic_compare_exchange_n(&mx->state_, &s, CONTENDED,
                                               false, __ATOMIC_RELAXED,
                                               __ATOMIC_RELAXED)) {
            break;
        }
    }
    /* Held, and state_ says "maybe waiters": a cancellation below leaves
     * it so, which costs the next unlock one slow pass and changes
     * nothing else. */
    struct weft__wait w;
    if (!cancellable) {
        weft__wait_init_nocancel(&w, 0, &relock_kind, mx);
    } else if (weft__wait_init(&w, deadline, &mutex_kind, mx)) {
        weft__spin_unlock(&mx->lock_);
        return -ECANCELED;
    }
    w.data = me;
    uint32_t outcome = weft__wq_block(&mx->lock_, &mx->q_, &w);
    weft__spin_unlock(&mx->lock_);
    /* WOKEN: the unlocker made us the owner. */
    return weft__wait_error(&w, outcome);
}

static int lock(weft_mutex *m, uint64_t deadline, int nowait)
{
    if (!m)
        return -EINVAL;
    uintptr_t me = weft__mutex_self();
    if (try_fast(m, me))
        return 0;
    return lock_slow(m, me, deadline, nowait, true);
}

void weft__mutex_relock(weft_mutex *m, uintptr_t me)
{
    if (!try_fast(m, me))
        lock_slow(m, me, 0, 0, false);
}

static void unlock_slow(weft_mutex *m)
{
    struct weft__mutex *mx = weft__mutex_of(m);
    weft__spin_lock(&mx->lock_);
    struct weft__wait *w = weft__wq_wake_one(&mx->q_);
    if (w) {
        __atomic_store_n(&mx->owner_, w->data, __ATOMIC_RELAXED);
        __atomic_store_n(&mx->state_,
                         weft__wq_empty(&mx->q_) ? LOCKED : CONTENDED,
                         __ATOMIC_RELAXED);
    } else {
        __atomic_store_n(&mx->state_, FREE, __ATOMIC_RELEASE);
    }
    weft__spin_unlock(&mx->lock_);
}

void weft__mutex_release(weft_mutex *m)
{
    struct weft__mutex *mx = weft__mutex_of(m);
    __atomic_store_n(&mx->owner_, 0, __ATOMIC_RELAXED);
    uint32_t s = LOCKED;
    if (!__atomic_compare_exchange_n(&mx->state_, &s, FREE, false,
                                     __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        unlock_slow(m);
}

WEFT_EXPORT void weft_mutex_init(weft_mutex *m)
{
    struct weft__mutex *mx = weft__mutex_of(m);
    if (!m)
        return;
    mx->state_ = FREE;
    mx->lock_ = 0;
    mx->owner_ = 0;
    weft__wq_init(&mx->q_);
}

WEFT_EXPORT int weft_mutex_lock(weft_mutex *m)
{
    return lock(m, 0, 0);
}

WEFT_EXPORT int weft_mutex_lock_for(weft_mutex *m, uint64_t timeout_ns)
{
    return lock(m, weft__deadline_after(timeout_ns),
                timeout_ns ? 0 : -ETIMEDOUT);
}

WEFT_EXPORT int weft_mutex_trylock(weft_mutex *m)
{
    if (!m)
        return -EINVAL;
    /* -EAGAIN, as every try that would have had to wait (weft/error.h). */
    return try_fast(m, weft__mutex_self()) ? 0 : -EAGAIN;
}

WEFT_EXPORT int weft_mutex_unlock(weft_mutex *m)
{
    if (!m)
        return -EINVAL;
    if (!weft__mutex_held(m, weft__mutex_self()))
        return -EPERM;
    weft__mutex_release(m);
    return 0;
}
