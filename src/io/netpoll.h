/*
 * io/netpoll.h — a pool's netpoller and the per-fd records (internal).
 *
 * Each pool that waits on fds gets a netpoller (made by the first such
 * wait and attached to the pool: sched/poller.h): an epoll instance and an
 * eventfd (its wake-up).  One idle worker at a time blocks in epoll_wait
 * instead of its futex, and busy workers poll it without blocking now and
 * then; what it reports wakes the tasks parked on the fds.  The protocol,
 * and why no readiness and no wake is lost, is at the top of netpoll.c;
 * how an fd is registered (owned: once, edge-triggered; borrowed: once per
 * wait) at the top of fd.c.
 *
 * The per-fd records are process-wide (a table indexed by fd, grown on
 * demand, never freed), so one fd can have waiters from several pools and
 * weft_close finds them all in one place.
 */
#ifndef WEFT_IO_NETPOLL_H
#define WEFT_IO_NETPOLL_H

#include <weft/pool.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "base/spinlock.h"
#include "sched/poller.h"

struct weft__wait;

/* Events taken from epoll per call. */
#define WEFT__NETPOLL_BATCH 128

struct weft__netpoll {
    struct weft__poller base;   /* first: what the pool sees               */
    int epfd;
    int evfd;                   /* written to wake the blocked poller     */
    weft_pool *pool;
    _Atomic uint32_t polling;   /* a worker holds the poller (one at most) */
    _Atomic uint32_t missed;    /* a worker went to sleep on its futex
                                   because the poller was taken            */
    _Atomic uint32_t nwaiters;  /* waits parked on fds registered here    */
    /* The holder's (under `polling`): what block gathered, and when the
     * next check of the parked fds is due (fd.c, weft__fd_check). */
    int nevents;
    uint64_t next_check;
    unsigned checks;
    struct epoll_event events[WEFT__NETPOLL_BATCH];
};

/* The netpoller of pool, made and attached on first use.  Returns 0, or
 * -errno (-EMFILE, -ENFILE, -ENOMEM: no epoll instance or eventfd). */
int weft__netpoll_get(weft_pool *pool, struct weft__netpoll **out);

/* ----------------------------------------------------- the fd records */

/* One fd number.  lock guards everything below it but the atomics, which
 * are read without it where the comments say. */
struct weft__fd {
    weft__spinlock lock;
    /* Owned by weft (io.h): weft_socket, weft_accept, weft_fd_adopt set
     * it, weft_close and a detected close(2) clear it.  Read without the
     * lock by each call, which the program orders with its own adopt. */
    _Atomic bool owned;
    /* Owned: readiness reports seen, the IN count in the low 32 bits, the
     * OUT count in the high 32 (fd.c: the waiter's snapshot). */
    _Atomic uint64_t seq;
    struct weft__netpoll *poller;   /* registered with, or NULL            */
    uint32_t gen;                   /* in the epoll data: stale reports    */
    uint32_t armed;                 /* borrowed: events of the one-shot    */
    /* Owned: what the fd is (0 not known yet, 1 a stream socket, 2 another
     * socket, 3 not a socket), and io.c's read shortcut: 1 + the IN count
     * read before the last short read of it (0: none). */
    _Atomic uint8_t kind;
    _Atomic uint64_t drained;
    /* Owned: a hang-up, end of stream or error was reported (sticky: after
     * it a short read proves nothing). */
    _Atomic bool hup;
    bool warned;                    /* said once that it was close(2)d    */
    struct weft__wait *waiters;     /* parked here; w->data: their events  */
    _Atomic uint32_t nwaiting;      /* their number, read without the lock */
};

/* fd's record, made on demand.  Returns 0, -EBADF (fd < 0), -EINVAL (fd
 * beyond the table: 4,194,304), -ENOMEM. */
int weft__fd_get(int fd, struct weft__fd **out);

/* The record of an fd that has one, else NULL. */
struct weft__fd *weft__fd_find(int fd);

/* The readiness count to pass to weft__fd_park for an owned fd: read it
 * before the system call whose failure (EAGAIN) leads to the park. */
static inline uint64_t weft__fd_seq(struct weft__fd *rec)
{
    return atomic_load_explicit(&rec->seq, memory_order_acquire);
}

/*
 * In a task on a pool: park until fd reports one of `events` (WEFT_IN,
 * WEFT_OUT); for an owned fd, one newer than `seq`.  Returns 0 (try the
 * call again: such a report came, before the park or during it, or the
 * fd's netpoller went away), -EBADF (weft_close, or the fd was closed
 * without it: fd.c's check, or epoll_ctl's word for it), -ETIMEDOUT,
 * -ECANCELED, -ENOMEM, or the netpoller's errors (weft__netpoll_get:
 * -EMFILE, -ENFILE) and epoll_ctl's (-ENOSPC: max_user_watches reached;
 * -ENOMEM).  (epoll_ctl's others cannot come: the fd is open and not an
 * epoll set's own, and one epoll cannot watch is one poll(2) always finds
 * ready, which a call never parks on.)
 */
int weft__fd_park(struct weft__fd *rec, int fd, unsigned events, uint64_t seq,
                  uint64_t deadline);

/* Wake every task parked on fd with `woken` (-EBADF: the number is
 * another file's now; 0: the same file, which they try again), drop its
 * registration and forget what weft knew of it; it is now owned if
 * `owned`.  Does nothing for an fd weft has no record of, unless owned
 * (the record is made: returns -ENOMEM if it cannot be). */
int weft__fd_reset(int fd, bool owned, int woken);

/* An owned fd was found closed without weft_close (the kernel said EBADF
 * or ENOTSOCK for it, or its number came back from accept or socket):
 * say so on stderr, once per such close, and forget it. */
void weft__fd_closed_behind(int fd, const char *how);

/* ------------------------------------------------- netpoll.c <-> fd.c */

/* Under rec->lock: unlink and wake the waiters that wait for one of
 * `match`, handing each `result` (0: try again, or -EBADF).  Returns how
 * many were woken. */
unsigned weft__fd_wake(struct weft__fd *rec, unsigned match, int result);

/* The poller reported `events` (EPOLL*) for the record whose epoll data
 * is `data`; wakes what they concern.  Returns the waits woken. */
unsigned weft__fd_report(struct weft__netpoll *np, uint64_t data,
                         uint32_t events);

/* The holder of np: check that the fds with waits parked here are still
 * registered (fd.c, "The check"); `owned_too` includes owned fds. */
void weft__fd_check(struct weft__netpoll *np, bool owned_too);

/* np is going away: wake every wait parked on an fd registered with it
 * (to try again with its own pool) and forget those registrations. */
void weft__fd_forget_poller(struct weft__netpoll *np);

#endif /* WEFT_IO_NETPOLL_H */
