/*
 * sync/sem.c — the counting semaphore (weft/sync.h).
 *
 * count_ and the waiters are under lock_.  A post with a waiter listed
 * hands its unit to that waiter (the count stays 0), so a unit cannot be
 * taken by a newcomer while a waiter is woken but not yet running:
 * waiters are served in order.  Hence units and waiters never coexist.
 */
#include <weft/sync.h>

#include "base/compiler.h"
#include "sync/objects.h"
#include "sync/waitq.h"

#include <errno.h>
#include <stdio.h>

/* For the dump: the object. */
static void describe(const struct weft__wait *w, char *buf, size_t n)
{
    snprintf(buf, n, "sem %p", w->obj);
}

static const struct weft__wait_kind sem_kind = {WEFT__WR_SEM, "sem", 0,
                                                describe};


/* Take a unit.  nowait: the error to return instead of waiting (0: wait
 * until deadline, 0 for none). */
static int take(weft_sem *s, uint64_t deadline, int nowait)
{
    struct weft__sem *sm = weft__sem_of(s);
    if (!s)
        return -EINVAL;
    weft__spin_lock(&sm->lock_);
    if (sm->count_ > 0) {
        sm->count_--;
        weft__spin_unlock(&sm->lock_);
        return 0;
    }
    return weft__wq_wait(&sm->lock_, &sm->q_, deadline, nowait, &sem_kind,
                         sm);
}

WEFT_EXPORT void weft_sem_init(weft_sem *s, unsigned count)
{
    struct weft__sem *sm = weft__sem_of(s);
    if (!s)
        return;
    sm->count_ = count;
    sm->lock_ = 0;
    weft__wq_init(&sm->q_);
}

WEFT_EXPORT int weft_sem_wait(weft_sem *s)
{
    return take(s, 0, 0);
}

WEFT_EXPORT int weft_sem_wait_for(weft_sem *s, uint64_t timeout_ns)
{
    return take(s, weft__deadline_after(timeout_ns),
                timeout_ns ? 0 : -ETIMEDOUT);
}

WEFT_EXPORT int weft_sem_trywait(weft_sem *s)
{
    return take(s, 0, -EAGAIN);
}

WEFT_EXPORT void weft_sem_post(weft_sem *s)
{
    struct weft__sem *sm = weft__sem_of(s);
    if (!s)
        return;
    weft__spin_lock(&sm->lock_);
    if (!weft__wq_wake_one(&sm->q_))
        sm->count_++;
    weft__spin_unlock(&sm->lock_);
}
