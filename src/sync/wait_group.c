/*
 * sync/wait_group.c — the wait group (weft/sync.h).
 *
 * count_ and the waiters are under lock_.  The done that brings count_ to
 * zero wakes every listed waiter; a wait that finds zero returns at once.
 * The counter is unsigned and never goes below zero: a done too many is
 * ignored rather than aborting the program.
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
    snprintf(buf, n, "wait group %p", w->obj);
}

static const struct weft__wait_kind wait_group_kind = {
    WEFT__WR_WAIT_GROUP, "wait group", 0, describe};


/* nowait: the error to return instead of waiting (0: wait until deadline,
 * 0 for none). */
static int wait_zero(weft_wait_group *wg, uint64_t deadline, int nowait)
{
    struct weft__wait_group *g = weft__wait_group_of(wg);
    if (!wg)
        return -EINVAL;
    weft__spin_lock(&g->lock_);
    if (g->count_ == 0) {
        weft__spin_unlock(&g->lock_);
        return 0;
    }
    return weft__wq_wait(&g->lock_, &g->q_, deadline, nowait,
                         &wait_group_kind, g);
}

WEFT_EXPORT void weft_wait_group_init(weft_wait_group *wg)
{
    struct weft__wait_group *g = weft__wait_group_of(wg);
    if (!wg)
        return;
    g->count_ = 0;
    g->lock_ = 0;
    weft__wq_init(&g->q_);
}

WEFT_EXPORT void weft_wait_group_add(weft_wait_group *wg, unsigned n)
{
    struct weft__wait_group *g = weft__wait_group_of(wg);
    if (!wg)
        return;
    weft__spin_lock(&g->lock_);
    g->count_ += n;
    weft__spin_unlock(&g->lock_);
}

WEFT_EXPORT void weft_wait_group_done(weft_wait_group *wg)
{
    struct weft__wait_group *g = weft__wait_group_of(wg);
    if (!wg)
        return;
    weft__spin_lock(&g->lock_);
    if (g->count_ > 0 && --g->count_ == 0)
        while (weft__wq_wake_one(&g->q_))
            ;
    weft__spin_unlock(&g->lock_);
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
