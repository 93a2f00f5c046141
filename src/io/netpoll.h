/*
 * netpoll.h — a pool's netpoller and the per-fd records (internal).
 *
 * Each pool owns an epoll instance and an eventfd (its wake-up).  Fds are
 * registered edge-triggered, once, with the netpoller of the pool of the
 * first task that waits on them.  One idle worker at a time blocks in
 * epoll_wait instead of its futex (pool.c's park), and busy workers poll
 * it without blocking now and then; what it reports wakes the tasks parked
 * on the fds.  The protocol, and why no readiness and no wake is lost, is
 * at the top of netpoll.c.
 *
 * The per-fd records are process-wide (a table indexed by fd, grown on
 * demand, never freed), so one fd can have waiters from several pools and
 * weft_close finds them all in one place.
 */
#ifndef WEFT_NETPOLL_H
#define WEFT_NETPOLL_H

#include <weft/pool.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "spinlock.h"

struct weft__wait;

struct weft__netpoll {
    int epfd;
    int evfd;                   /* written to wake the blocked poller     */
    weft_pool *pool;
    _Atomic uint32_t polling;   /* a worker holds the poller (one at most) */
    _Atomic uint32_t missed;    /* a worker went to sleep on its futex
                                   because the poller was taken            */
    _Atomic uint32_t nwaiters;  /* waits parked on fds registered here    */
};

/* Events taken from epoll per call (on the caller's stack). */
#define WEFT__NETPOLL_BATCH 128

/* One fd.  lock guards poller and waiters and orders the seq updates. */
struct weft__fd {
    weft__spinlock lock;
    _Atomic bool nonblock;          /* O_NONBLOCK is set (io.c)            */
    /* Readiness reports seen for this fd: the IN count in the low 32 bits,
     * the OUT count in the high 32 (netpoll.c: the waiter's snapshot). */
    _Atomic uint64_t seq;
    struct weft__netpoll *poller;   /* registered with, or NULL            */
    /* io.c's read shortcut: what the fd is (0 not known yet, 1 a stream
     * socket, 2 anything else), and 1 + the IN count read before the last
     * short read of it (0: none). */
    _Atomic uint8_t kind;
    _Atomic uint64_t drained;
    /* A hang-up, end of stream or error was reported (sticky: after it a
     * short read proves nothing, the next read returns 0 or the error
     * without a new report). */
    _Atomic bool hup;
    struct weft__wait *waiters;     /* parked here; w->data: their events  */
};

/* ----------------------------------------------------- the pool's side */

/* Open the epoll instance and the eventfd.  Returns 0 or -errno. */
int weft__netpoll_init(struct weft__netpoll *np, weft_pool *pool);

/* After the pool's workers are gone: waits of other pools' tasks parked on
 * fds registered here are woken to try again (they re-register with their
 * own pool), every registration here is forgotten, and the fds closed. */
void weft__netpoll_fini(struct weft__netpoll *np);

/* A parking worker: take the poller if some task waits on I/O here and no
 * other worker holds it.  True: the caller must end with
 * weft__netpoll_finish, and its wakers must use weft__netpoll_wake. */
bool weft__netpoll_take(struct weft__netpoll *np);

/* The poller's sleep: epoll_wait until `deadline` (absolute ns;
 * UINT64_MAX: none) or an event.  Returns the events in ev[] (up to
 * WEFT__NETPOLL_BATCH). */
int weft__netpoll_block(struct weft__netpoll *np, uint64_t deadline,
                        struct epoll_event *ev);

/* Wake the tasks that ev[0..n) concern, then give the poller up. */
void weft__netpoll_finish(struct weft__netpoll *np, struct epoll_event *ev,
                          int n);

/* Wake the worker that blocks (or is about to block) in
 * weft__netpoll_block; kept until then if it is not there yet. */
void weft__netpoll_wake(struct weft__netpoll *np);

/* A worker with nothing better to do, or at its fairness tick: if some
 * task waits on I/O and the poller is free, poll without blocking and wake
 * what is ready.  Returns the number of waits woken. */
unsigned weft__netpoll_poll_now(struct weft__netpoll *np);

/* --------------------------------------------------------- the fd side */

/* fd's record, made on demand.  Returns 0, -EBADF (fd < 0), -EINVAL (fd
 * beyond the table: 4,194,304), -ENOMEM. */
int weft__fd_get(int fd, struct weft__fd **out);

/* The readiness count to pass to weft__fd_park: read it before the system
 * call whose failure (EAGAIN) leads to the park. */
static inline uint64_t weft__fd_seq(struct weft__fd *rec)
{
    return atomic_load_explicit(&rec->seq, memory_order_acquire);
}

/*
 * In a task on a pool: park until fd reports one of `events` (WEFT_IN,
 * WEFT_OUT) newer than `seq`.  Returns 0 (try the call again: such a
 * report came, before the park or during it, or the fd's netpoller went
 * away), -EBADF (weft_close), -ETIMEDOUT, -ECANCELED, -ENOMEM, or
 * epoll_ctl's error from registering fd.
 */
int weft__fd_park(struct weft__fd *rec, int fd, unsigned events, uint64_t seq,
                  uint64_t deadline);

/* Wake every task parked on fd with -EBADF and forget its registration;
 * nonblock: what is now known of its O_NONBLOCK flag.  Does nothing for
 * an fd weft has no record of. */
void weft__fd_forget(int fd, bool nonblock);

#endif /* WEFT_NETPOLL_H */
