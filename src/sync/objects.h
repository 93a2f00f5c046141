/*
 * sync/objects.h — the layout of the primitives a program embeds by value
 * (internal): each lives in the opaque storage of its public struct
 * (weft/weft.h, "Objects"), checked here to fit.  The locks guard the
 * waiter lists and, where the comments say, the counts; each .c file has
 * its protocol.
 */
#ifndef WEFT_SYNC_OBJECTS_H
#define WEFT_SYNC_OBJECTS_H

#include <weft/event.h>
#include <weft/sync.h>

#include <stdint.h>

#include "base/spinlock.h"
#include "sync/waitq.h"

struct weft__mutex {
    uint32_t state_;     /* LOCKED, WAITERS, WOKEN, STARVING (mutex.c)   */
    weft__spinlock lock_; /* guards q_                                   */
    uintptr_t owner_;    /* the owning task or thread, 0 when free       */
    weft__waitq q_;
} __attribute__((may_alias));
WEFT__OPAQUE_FITS(weft_mutex, struct weft__mutex);

static inline struct weft__mutex *weft__mutex_of(const weft_mutex *m)
{
    return (struct weft__mutex *)(uintptr_t)m;
}

struct weft__cond {
    weft__spinlock lock_; /* guards q_ */
    weft__waitq q_;
} __attribute__((may_alias));
WEFT__OPAQUE_FITS(weft_cond, struct weft__cond);

static inline struct weft__cond *weft__cond_of(weft_cond *c)
{
    return (struct weft__cond *)(void *)c;
}

struct weft__sem {
    uint64_t count_;      /* units available (none while anyone waits) */
    weft__spinlock lock_; /* guards count_ and q_                       */
    weft__waitq q_;
} __attribute__((may_alias));
WEFT__OPAQUE_FITS(weft_sem, struct weft__sem);

static inline struct weft__sem *weft__sem_of(weft_sem *s)
{
    return (struct weft__sem *)(void *)s;
}

struct weft__wait_group {
    uint64_t count_;      /* outstanding jobs                */
    weft__spinlock lock_; /* guards count_ and q_            */
    weft__waitq q_;
} __attribute__((may_alias));
WEFT__OPAQUE_FITS(weft_wait_group, struct weft__wait_group);

static inline struct weft__wait_group *weft__wait_group_of(weft_wait_group *wg)
{
    return (struct weft__wait_group *)(void *)wg;
}

/* An event's state (event.c). */
enum { WEFT__EV_UNSET = 0, WEFT__EV_SETTING = 1, WEFT__EV_SET = 2 };

struct weft__event {
    uint32_t state;
    weft__spinlock lock;
    weft__waitq q;
} __attribute__((may_alias));
WEFT__OPAQUE_FITS(weft_event, struct weft__event);

static inline struct weft__event *weft__event_of(const weft_event *ev)
{
    return (struct weft__event *)(uintptr_t)ev;
}

/* The channel is opaque (weft/chan.h), not embedded; for the tests and the
 * observers: how many parties wait on it, or have been woken and not yet
 * returned (chan.c: what destroy refuses for). */
#include <weft/chan.h>
size_t weft__chan_waiting(weft_chan *ch);

#endif /* WEFT_SYNC_OBJECTS_H */
