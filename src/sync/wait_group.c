/*
 * wait_group.c — the wait group (weft/sync.h).
 *
 * count_ and the waiters are under lock_.  The done that brings count_ to
 * zero wakes every listed waiter; a wait that finds zero returns at once.
 * The counter is unsigned and never goes below zero: a done too many is
 * ignored rather than aborting the program.
 */
#include "waitq.h"

#include <errno.h>

#define WEFT_EXPORT __attribute__((visibility("default"), noinline))

/* nowait: the error to return instead of waiting (0: wait until deadline,
 * 0 for none). */
static int wait_zero(weft_wait_group *wg, uint64_t deadline, int nowait)
{
    if (!wg)
        return -EINVAL;
    weft__wq_lock(&wg->lock_);
    if (wg->count_ == 0) {
        weft__wq_unlock(&wg->lock_);
        return 0;
    }
    return weft__wq_wait(&wg->lock_, &wg->q_, deadline, nowait);
}

WEFT_EXPORT void weft_wait_group_init(weft_wait_group *wg)
{
    if (!wg)
        return;
    wg->count_ = 0;
    wg->lock_ = 0;
    weft__wq_init(&wg->q_);
}

WEFT_EXPORT void weft_wait_group_add(weft_wait_group *wg, unsigned n)
{
    if (!wg)
        return;
    weft__wq_lock(&wg->lock_);
    wg->count_ += n;
    weft__wq_unlock(&wg->lock_);
}

WEFT_EXPORT void weft_wait_group_done(weft_wait_group *wg)
{
    if (!wg)
        return;
    weft__wq_lock(&wg->lock_);
    if (wg->count_ > 0 && --wg->count_ == 0)
        while (weft__wq_wake_one(&wg->q_))
            ;
    weft__wq_unlock(&wg->lock_);
}

WEFT_EXPORT int weft_wait_group_wait(weft_wait_group *wg)
{
    return wait_zero(wg, 0, 0);
}

WEFT_EXPORT int weft_wait_group_wait_for(weft_wait_group *wg,
                                         uint64_t timeout_ns)
{
    return wait_zero(wg, weft__deadline_after(timeout_ns),
                     timeout_ns ? 0 : -ETIMEDOUT);
}
