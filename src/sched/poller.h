/*
 * sched/poller.h — what the scheduler needs of an I/O poller (internal),
 * so that sched/ knows nothing of epoll: io/netpoll.c implements it.
 *
 * A pool has no poller until its first task waits on an fd; the I/O layer
 * then makes one and attaches it (weft__pool_attach_poller).  From then on
 * an idle worker that is about to sleep takes the poller, if some task
 * waits on I/O and no other worker holds it, and sleeps in it instead of
 * on its parker; busy workers poll it without blocking now and then.  The
 * protocol that keeps a parked I/O wait from being forgotten is at the top
 * of io/netpoll.c; what it needs from the scheduler is in pool.c (park).
 *
 * Who calls what: take, block and finish by the one worker that took it,
 * in that order; wake and poll_now by any worker; fini once, by the pool's
 * destroy, when its workers are gone; waits by anyone, any time.
 */
#ifndef WEFT_SCHED_POLLER_H
#define WEFT_SCHED_POLLER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct weft__poller;

struct weft__poller_ops {
    /* A worker about to sleep: take the poller if a task waits on I/O and
     * no other worker holds it.  True: the caller sleeps in block, then
     * calls finish; its wakers must use wake (pool.c, in_poll). */
    bool (*take)(struct weft__poller *p);
    /* Sleep until `deadline` (absolute ns; UINT64_MAX: none), a report, or
     * wake; what it gathered stays in the poller for finish. */
    void (*block)(struct weft__poller *p, uint64_t deadline);
    /* Wake the tasks that the gathered reports concern, then give the
     * poller up. */
    void (*finish)(struct weft__poller *p);
    /* Wake the worker that sleeps (or is about to sleep) in block; kept
     * until then if it is not there yet. */
    void (*wake)(struct weft__poller *p);
    /* Whether a task waits on I/O and no worker holds the poller. */
    bool (*unattended)(struct weft__poller *p);
    /* If a task waits on I/O and the poller is free: poll without
     * blocking and wake what is ready.  Returns how many waits it woke. */
    unsigned (*poll_now)(struct weft__poller *p);
    /* The pool is gone: free the poller. */
    void (*fini)(struct weft__poller *p);
    /* For the observers (weft_pool_stats): waits registered with it now. */
    unsigned (*waits)(struct weft__poller *p);
};

/* The part of every poller that the scheduler sees: its operations, the
 * number of waits parked in it (nonzero: busy workers poll it now and
 * then, pool.c, "Time, not rounds"), and when it was last polled (ns;
 * written by whoever polls, relaxed: it only decides whether to poll). */
struct weft__poller {
    const struct weft__poller_ops *ops;
    const _Atomic uint32_t *waiting;
    _Atomic uint64_t polled_at;
};

#endif /* WEFT_SCHED_POLLER_H */
