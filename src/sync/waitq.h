/*
 * waitq.h — the lock and waiter FIFO that every sync primitive and the
 * channel are built from (internal).
 *
 * A primitive has a lock word (uint32_t, in its public struct, so used
 * through __atomic builtins: the public headers are also C++) and one or
 * more weft__waitq lists of struct weft__wait records (sched/wait.h) that
 * live on the waiters' stacks.  The rules of wait.h hold: a record is
 * linked, unlinked and handed a value only under the lock, and its waiter
 * retakes the lock before it returns, so a waker that holds the lock may
 * still write to a record it has just woken (the waiter reads what it was
 * handed only after retaking the lock).
 */
#ifndef WEFT_SYNC_WAITQ_H
#define WEFT_SYNC_WAITQ_H

#include <weft/sync.h>

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

#include "spinlock.h"
#include "wait.h"

/* The critical sections are a few list operations: spin, and after a
 * while yield the CPU to a holder that may have been preempted. */
static inline void weft__wq_lock(uint32_t *l)
{
    unsigned spins = 0;
    /* Read before exchanging: a failed exchange would steal the line. */
    while (__atomic_load_n(l, __ATOMIC_RELAXED) ||
           __atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) {
        if (++spins < 64)
            weft__cpu_relax();
        else
            sched_yield();
    }
}

static inline void weft__wq_unlock(uint32_t *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

static inline void weft__wq_init(weft__waitq *q)
{
    q->head_ = q->tail_ = NULL;
}

static inline bool weft__wq_empty(const weft__waitq *q)
{
    return q->head_ == NULL;
}

static inline void weft__wq_push(weft__waitq *q, struct weft__wait *w)
{
    w->next = NULL;
    w->prev = q->tail_;
    if (q->tail_)
        q->tail_->next = w;
    else
        q->head_ = w;
    q->tail_ = w;
    w->listed = true;
}

static inline void weft__wq_remove(weft__waitq *q, struct weft__wait *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        q->head_ = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        q->tail_ = w->prev;
    w->next = w->prev = NULL;
    w->listed = false;
}

/*
 * Unlink waiters from the head until one is woken, and return it (it is
 * WOKEN: the caller now hands it what it waited for); NULL if none could
 * be.  A record whose wake fails has timed out or been cancelled meanwhile:
 * unlinked, its waiter just returns its error.
 */
static inline struct weft__wait *weft__wq_wake_one(weft__waitq *q)
{
    struct weft__wait *w;
    while ((w = q->head_) != NULL) {
        weft__wq_remove(q, w);
        if (weft__wait_wake(w))
            return w;
    }
    return NULL;
}

/*
 * With the lock held and w set up (weft__wait_init): link w at q's tail,
 * drop the lock and wait; then retake the lock and unlink w if nobody woke
 * it.  Returns the outcome (WEFT__W_*), with the lock held again.
 */
static inline uint32_t weft__wq_block(uint32_t *lock, weft__waitq *q,
                                      struct weft__wait *w)
{
    weft__wq_push(q, w);
    weft__wq_unlock(lock);
    uint32_t outcome = weft__wait_block(w);
    weft__wq_lock(lock);
    if (w->listed)
        weft__wq_remove(q, w);
    return outcome;
}

/*
 * With the lock held, for a call that cannot proceed now and expects
 * nothing from its waker but the wake (a semaphore unit, a wait group at
 * zero): wait on q until deadline (0: none), or if nowait is an error
 * code, return it instead of waiting.  Drops the lock.  Returns 0 (woken),
 * nowait, -ECANCELED, -ETIMEDOUT or -ENOMEM (weft__wait_error).
 */
static inline int weft__wq_wait(uint32_t *lock, weft__waitq *q,
                                uint64_t deadline, int nowait)
{
    struct weft__wait w;
    if (nowait || weft__wait_init(&w, deadline)) {
        weft__wq_unlock(lock);
        return nowait ? nowait : -ECANCELED;
    }
    uint32_t outcome = weft__wq_block(lock, q, &w);
    weft__wq_unlock(lock);
    return weft__wait_error(&w, outcome);
}

#endif /* WEFT_SYNC_WAITQ_H */
