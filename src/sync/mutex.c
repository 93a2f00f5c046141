/*
 * sync/mutex.c — the fiber-aware mutex (weft/sync.h).
 *
 * Go's sync.Mutex in shape: a running locker may take a free mutex ahead
 * of the waiters (barging), which keeps the lock with a task that is on a
 * CPU instead of handing it to one that must first be scheduled; a waiter
 * passed over for STARVE_NS turns the mutex over to hand-off, in which
 * unlock gives it to the first waiter and nobody barges, until the
 * waiters are served.  A strict hand-off at every unlock (what this file
 * did before) makes every lock of a contended mutex a park, a wake and a
 * switch, a convoy that ran two tasks on two workers 11x slower than Go's
 * mutex (docs/performance.md, "A contended mutex").
 *
 * state_ holds four bits:
 *   LOCKED    held;
 *   WAITERS   waiters may be listed in q_ (an unlock must look);
 *   WOKEN     a waiter was woken to try again and has not yet: unlock
 *             wakes nobody else meanwhile (no herd of losers);
 *   STARVING  hand-off: set only while LOCKED, by a waiter that has
 *             waited STARVE_NS; cleared when the waiters are served.
 * q_, and every change of state_ but the fast paths' and the barge's, are
 * under lock_.
 *
 *   lock, fast:  CAS 0 -> LOCKED (acquire); then owner_ = me.
 *   lock, barge: while neither LOCKED nor STARVING: CAS s -> s | LOCKED.
 *   unlock, fast: owner_ = 0, CAS LOCKED -> 0 (release).
 *   unlock, slow: STARVING: under lock_, hand to the first waiter that
 *     can be woken (owner_ = its token; LOCKED stays); none: all clear.
 *     WAITERS without WOKEN: CAS s -> (s & ~LOCKED) | WOKEN (release),
 *     then under lock_ wake the first waiter that can be woken, to try
 *     again; none: clear WOKEN.  Else: CAS s -> s & ~LOCKED (release),
 *     no lock_.
 *   lock, slow (under lock_): take it as the barge does if not LOCKED,
 *     else CAS s -> s | WAITERS (| STARVING if this waiter was woken
 *     before and has waited STARVE_NS since it was first listed), list a
 *     wait record (at the head if woken before: it has waited longest)
 *     and block.  Woken: if handed the mutex (owner_ is our token), done;
 *     else clear WOKEN and go round again.
 *
 * No lost wakeup: a waiter lists itself only after its CAS set WAITERS on
 * a state with LOCKED (or after its failed barge's RMW read LOCKED with
 * WAITERS already set, which only a holder of lock_ clears), in one
 * critical section of lock_.  An unlock whose RMW comes after that sees
 * WAITERS: it hands over, or wakes a waiter
 * under lock_ (which it gets only once the waiter is listed), or sees
 * WOKEN, and then the woken waiter, which has not yet looked, will (it
 * clears WOKEN with an RMW, which reads the latest state, and then finds
 * the mutex free, or lists itself by the same CAS, which a later unlock
 * sees).  An unlock whose RMW comes first makes the waiter's CAS fail:
 * it reads the state again and takes the mutex.  So while anyone is
 * listed, the holder's unlock, or the woken waiter, looks at the list.
 *
 * No starvation: a waiter woken to try again goes back to the head if it
 * loses; once it has waited STARVE_NS it sets STARVING, which stops
 * barging (the fast lock and the barge need it clear) and makes the next
 * unlock hand the mutex to the head, that waiter.  A waiter that was
 * never woken is behind it in the list and is served in turn, by
 * hand-off while STARVING holds, which the unlock clears when it hands
 * the mutex to the last listed waiter (and a handed waiter that waited
 * less than STARVE_NS clears it, as Go's does: the waiters are keeping
 * up).  A waiter that timed out or was cancelled may leave WAITERS set
 * with nobody listed: the next unlock goes slow once and clears it.
 *
 * Hand-off and the new owner: the unlocker sets owner_ and wakes the
 * waiter under lock_; the waiter retakes lock_ before its lock call
 * returns, so it sees owner_ (and, through the wake's acq_rel outcome CAS
 * and lock_, everything the previous owner wrote).
 *
 * Memory orders:
 *   - every CAS that sets LOCKED: acquire, pairing with the release of
 *     the RMW or store that cleared it (an unlock's);
 *   - every RMW that clears LOCKED: release;
 *   - the RMWs that set or clear only WAITERS, WOKEN or STARVING are
 *     relaxed: they publish nothing (records are published by lock_);
 *     only their place in state_'s modification order matters;
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


enum { LOCKED = 1, WAITERS = 2, WOKEN = 4, STARVING = 8 };

/* How long a waiter may be passed over before the mutex turns to
 * hand-off: Go's 1 ms (sync/mutex.go, starvationThresholdNs). */
#define STARVE_NS 1000000ull

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

/* Take m if it is neither held nor being handed to a waiter, waiters
 * listed or not; *s is a recent value of state_.  When it fails, *s is
 * the value that made it fail, with LOCKED or STARVING in it: what the
 * caller's next compare-exchange must expect. */
static bool try_barge(struct weft__mutex *mx, uint32_t *s, uintptr_t me)
{
    while (!(*s & (LOCKED | STARVING))) {
        if (__atomic_compare_exchange_n(&mx->state_, s, *s | LOCKED, false,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            __atomic_store_n(&mx->owner_, me, __ATOMIC_RELAXED);
            return true;
        }
    }
    return false;
}

/* The fast path (free, nobody listed), then the barge. */
static bool try_lock(weft_mutex *m, uintptr_t me)
{
    struct weft__mutex *mx = weft__mutex_of(m);
    uint32_t s = 0;
    if (__atomic_compare_exchange_n(&mx->state_, &s, LOCKED, false,
                                    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        __atomic_store_n(&mx->owner_, me, __ATOMIC_RELAXED);
        return true;
    }
    return try_barge(mx, &s, me);
}

/*
 * Lock m for me, past the fast path.  nowait: the error to return instead
 * of waiting (0: wait until deadline, 0 for none).  cancellable: false for
 * the condition's re-lock, which nothing but the mutex ends.
 */
static int lock_slow(weft_mutex *m, uintptr_t me, uint64_t deadline,
                     int nowait, bool cancellable)
{
    struct weft__mutex *mx = weft__mutex_of(m);
    if (weft__mutex_held(m, me))
        return -EDEADLK;
    uint64_t since = 0; /* when first listed */
    bool woken = false; /* woken before, and lost the race */
    weft__spin_lock(&mx->lock_);
    for (;;) {
        uint32_t s = __atomic_load_n(&mx->state_, __ATOMIC_RELAXED);
        for (;;) {
            if (try_barge(mx, &s, me)) {
                weft__spin_unlock(&mx->lock_);
                return 0;
            }
            if (nowait) {
                weft__spin_unlock(&mx->lock_);
                return nowait;
            }
            /* Held: the failed barge left the value it saw in s, with
             * LOCKED in it (STARVING comes only with LOCKED), so the CAS
             * below lists us only while the mutex is held. */
            uint32_t want = s | WAITERS;
            if (woken && weft__now_ns() - since >= STARVE_NS)
                want |= STARVING;
            if (want == s ||
                __atomic_compare_exchange_n(&mx->state_, &s, want, false,
                                            __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
                break;
        }
        if (!since)
            since = weft__now_ns();
        struct weft__wait w;
        if (!cancellable) {
            weft__wait_init_nocancel(&w, 0, &relock_kind, mx);
        } else if (weft__wait_init(&w, deadline, &mutex_kind, mx)) {
            /* WAITERS may stay set with nobody listed: see the top. */
            weft__spin_unlock(&mx->lock_);
            return -ECANCELED;
        }
        w.data = me;
        uint32_t outcome = weft__wq_block(&mx->lock_, &mx->q_, &w, woken);
        if (outcome != WEFT__W_WOKEN) {
            weft__spin_unlock(&mx->lock_);
            return weft__wait_error(&w, outcome);
        }
        if (__atomic_load_n(&mx->owner_, __ATOMIC_RELAXED) == me) {
            /* Handed over (STARVING).  Served soon enough: barging may
             * resume (the unlocker cleared it if we were the last). */
            if (weft__now_ns() - since < STARVE_NS)
                __atomic_fetch_and(&mx->state_, ~(uint32_t)STARVING,
                                   __ATOMIC_RELAXED);
            weft__spin_unlock(&mx->lock_);
            return 0;
        }
        /* Woken to try again: unlocks may wake another from now on. */
        __atomic_fetch_and(&mx->state_, ~(uint32_t)WOKEN, __ATOMIC_RELAXED);
        woken = true;
    }
}

static int lock(weft_mutex *m, uint64_t deadline, int nowait)
{
    if (!m)
        return -EINVAL;
    uintptr_t me = weft__mutex_self();
    if (try_lock(m, me))
        return 0;
    return lock_slow(m, me, deadline, nowait, true);
}

void weft__mutex_relock(weft_mutex *m, uintptr_t me)
{
    if (!try_lock(m, me))
        lock_slow(m, me, 0, 0, false);
}

/* STARVING: give m to the first waiter that can be woken. */
static void hand_off(struct weft__mutex *mx)
{
    weft__spin_lock(&mx->lock_);
    struct weft__wait *w = weft__wq_wake_one(&mx->q_);
    if (w) {
        __atomic_store_n(&mx->owner_, w->data, __ATOMIC_RELAXED);
        if (weft__wq_empty(&mx->q_))
            __atomic_fetch_and(&mx->state_, ~(uint32_t)(STARVING | WAITERS),
                               __ATOMIC_RELAXED);
    } else {
        __atomic_fetch_and(&mx->state_,
                           ~(uint32_t)(LOCKED | STARVING | WAITERS),
                           __ATOMIC_RELEASE);
    }
    weft__spin_unlock(&mx->lock_);
}

/* WOKEN was just set: wake the first waiter that can be woken, to try
 * again. */
static void wake_waiter(struct weft__mutex *mx)
{
    weft__spin_lock(&mx->lock_);
    struct weft__wait *w = weft__wq_wake_one(&mx->q_);
    uint32_t clear = weft__wq_empty(&mx->q_) ? WAITERS : 0;
    if (!w)
        clear |= WOKEN;
    if (clear)
        __atomic_fetch_and(&mx->state_, ~clear, __ATOMIC_RELAXED);
    weft__spin_unlock(&mx->lock_);
}

void weft__mutex_release(weft_mutex *m)
{
    struct weft__mutex *mx = weft__mutex_of(m);
    __atomic_store_n(&mx->owner_, 0, __ATOMIC_RELAXED);
    uint32_t s = LOCKED;
    if (__atomic_compare_exchange_n(&mx->state_, &s, 0, false,
                                    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        return;
    for (;;) {
        if (s & STARVING) {
            hand_off(mx);
            return;
        }
        bool wake = (s & (WAITERS | WOKEN)) == WAITERS;
        uint32_t next = (s & ~(uint32_t)LOCKED) | (wake ? WOKEN : 0);
        if (__atomic_compare_exchange_n(&mx->state_, &s, next, false,
                                        __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
            if (wake)
                wake_waiter(mx);
            return;
        }
    }
}

WEFT_EXPORT void weft_mutex_init(weft_mutex *m)
{
    struct weft__mutex *mx = weft__mutex_of(m);
    if (!m)
        return;
    mx->state_ = 0;
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
    return try_lock(m, weft__mutex_self()) ? 0 : -EAGAIN;
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
