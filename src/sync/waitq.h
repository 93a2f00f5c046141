/*
 * sync/waitq.h — the lock and waiter FIFO that every sync primitive, the
 * event and the channel are built from (internal).
 *
 * A primitive has a lock (base/spinlock.h) and one or more weft__waitq
 * lists of struct weft__wait records (sched/wait.h) that live on the
 * waiters' stacks.  The rules of wait.h hold: a record is
 * linked, unlinked and handed a value only under the lock, and its waiter
 * retakes the lock before it returns, so a waker that holds the lock may
 * still write to a record it has just woken (the waiter reads what it was
 * handed only after retaking the lock).
 */
#ifndef WEFT_SYNC_WAITQ_H
#define WEFT_SYNC_WAITQ_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/spinlock.h"
#include "sched/wait.h"

/* A FIFO of the waiters' records (linked through next/prev). */
typedef struct weft__waitq {
    struct weft__wait *head_, *tail_;
} weft__waitq;

/*
 * A primitive's internal struct lives in the opaque storage of its public
 * struct (weft/weft.h, "Objects"): check that it fits, and let the
 * compiler know that the storage is accessed through it (may_alias on the
 * internal struct).
 */
#define WEFT__OPAQUE_FITS(pub, impl)                                        \
    _Static_assert(sizeof(impl) <= sizeof(pub), #impl " outgrew " #pub);    \
    _Static_assert(_Alignof(impl) <= _Alignof(pub),                         \
                   #impl " needs more alignment than " #pub)

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

/* Link w at q's head: a waiter that was woken and lost the race for what
 * it waited for goes back first (the mutex, sync/mutex.c). */
static inline void weft__wq_push_head(weft__waitq *q, struct weft__wait *w)
{
    w->prev = NULL;
    w->next = q->head_;
    if (q->head_)
        q->head_->prev = w;
    else
        q->tail_ = w;
    q->head_ = w;
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
 * or at its head if `head` (the mutex's waiter that was woken and lost
 * the race), drop the lock and wait; then retake the lock and unlink w if
 * nobody woke it.  Returns the outcome (WEFT__W_*), with the lock held
 * again.
 */
static inline uint32_t weft__wq_block(weft__spinlock *lock, weft__waitq *q,
                                      struct weft__wait *w, bool head)
{
    if (head)
        weft__wq_push_head(q, w);
    else
        weft__wq_push(q, w);
    weft__spin_unlock(lock);
    uint32_t outcome = weft__wait_block(w);
    weft__spin_lock(lock);
    if (w->listed)
        weft__wq_remove(q, w);
    return outcome;
}


/*
 * With the lock held, for a call that cannot proceed now and expects
 * nothing from its waker but the wake (a semaphore unit, a wait group at
 * zero): wait on q until deadline (0: none), or if nowait is an error
 * code, return it instead of waiting.  kind and obj: what the wait is, for
 * the observers.  Drops the lock.  Returns 0 (woken), nowait, -ECANCELED,
 * -ETIMEDOUT or -ENOMEM (weft__wait_error).
 */
static inline int weft__wq_wait(weft__spinlock *lock, weft__waitq *q,
                                uint64_t deadline, int nowait,
                                const struct weft__wait_kind *kind,
                                const void *obj)
{
    struct weft__wait w;
    if (nowait || weft__wait_init(&w, deadline, kind, obj)) {
        weft__spin_unlock(lock);
        return nowait ? nowait : -ECANCELED;
    }
    uint32_t outcome = weft__wq_block(lock, q, &w, false);
    weft__spin_unlock(lock);
    return weft__wait_error(&w, outcome);
}

#endif /* WEFT_SYNC_WAITQ_H */
