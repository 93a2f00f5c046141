/*
 * io/netpoll.c — the netpoller (io/netpoll.h): an epoll instance per pool,
 * implementing the scheduler's poller (sched/poller.h).  Go's shape: an
 * idle worker blocks in epoll_wait instead of on its futex, and an eventfd
 * in the epoll set is how the rest of the pool wakes it.
 *
 * A parked wait is woken once its report comes: some worker of the pool
 * calls epoll_wait while waits are parked (nwaiters > 0; counted under the
 * fd record's lock, by whoever links or unlinks).
 *   1. A worker about to sleep (sched/pool.c, park_worker, once on the
 *      idle list) takes the poller when nwaiters > 0 (the `polling` flag,
 *      one holder at a time) and blocks in epoll_wait until its earliest
 *      timer, instead of on its futex.  If another worker holds it, it sets
 *      `missed` and tries once more; a holder that gives the flag up clears
 *      `polling` and then reads `missed` (both seq_cst): either the second
 *      try finds the flag free, or the holder sees `missed` and kicks the
 *      pool (an idle worker wakes, searches, and comes back here to
 *      sleep).  The kick does nothing while a worker is counted as
 *      searching, which the worker about to sleep may still be; so that
 *      worker's last look before it sleeps (pool.c, any_work) also counts
 *      "waits parked, poller free" as work (np_unattended), and does not
 *      sleep on its futex then.  So no worker stays asleep on its futex
 *      while waits are parked and nobody holds the poller (model-checked:
 *      verify/pool.pml, pool_io).
 *   2. A wait that makes nwaiters non-zero while every worker sleeps on its
 *      futex: if the fd is registered with the task's own pool, the worker
 *      that runs the task is awake (it goes on to the task's park) and will
 *      poll or sleep through 1.  If it is registered with another pool
 *      (the fd was first waited on there), the waiter kicks that pool, with
 *      the record's lock held, which keeps that pool from being torn down
 *      meanwhile (fd.c).  The same holds for the first wait of a pool,
 *      which makes its netpoller: the waiting task's worker is awake.
 *   3. Busy workers poll without blocking when they run out of local work
 *      and, at their scheduling points, when nobody has polled for a while
 *      (sched/pool.c, "Time, not rounds"), if the poller is free, so a
 *      busy pool does not starve I/O.  (A worker stuck in one task that
 *      never blocks notices nothing: the monitor covers it, and its cover
 *      serves the poller, sched/monitor.c.)
 *   4. The blocked poller is woken for whatever wakes a sleeping worker (a
 *      new task, an earlier timer, shutdown) by a write to the eventfd:
 *      the waker takes it off the idle list under idle_lock, where the
 *      worker's in_poll is set before it can be found there and cleared
 *      after it wakes, and writes the eventfd instead of its parker.  The
 *      eventfd sits level-triggered in the epoll set and its count stays
 *      until read, so a write that comes before epoll_wait is not lost;
 *      the next poll reads it back (a stale one costs one early return).
 *      The waker prefers a worker asleep on its futex, so the poller stays
 *      in epoll_wait.
 *
 * The check: while waits are parked, the holder also runs fd.c's check of
 * their registrations about once a second (WEFT_FD_CHECK_MS; a blocked
 * poller sleeps no longer than that), and of owned fds every tenth time.
 *
 * Plain threads, standalone coroutines and tasks without a pool do not
 * come here: io.c blocks them in poll(2).
 */
#include "io/netpoll.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/direct.h"
#include "base/storeload.h"
#include "sched/worker.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define EVFD_TOKEN UINT64_MAX        /* epoll data of the eventfd          */
#define OWNED_CHECK_EVERY 10

/* The period of the check: WEFT_FD_CHECK_MS (1..60000, read once), else a
 * second. */
static uint64_t check_every_ns(void)
{
    static _Atomic uint64_t every;
    uint64_t ns = atomic_load_explicit(&every, memory_order_relaxed);
    if (!ns) {
        const char *s = getenv("WEFT_FD_CHECK_MS");
        char *end = NULL;
        unsigned long ms = s ? strtoul(s, &end, 10) : 0;
        if (!s || !*s || *end || ms < 1 || ms > 60000)
            ms = 1000;
        ns = (uint64_t)ms * 1000000u;
        atomic_store_explicit(&every, ns, memory_order_relaxed);
    }
    return ns;
}

static bool try_take(struct weft__netpoll *np)
{
    uint32_t free_ = 0;
    return atomic_compare_exchange_strong_explicit(&np->polling, &free_, 1,
                                                   memory_order_seq_cst,
                                                   memory_order_seq_cst);
}

static bool wanted(struct weft__netpoll *np)
{
    return atomic_load_explicit(&np->nwaiters, memory_order_relaxed) != 0;
}

static struct weft__netpoll *np_of(struct weft__poller *p)
{
    return (struct weft__netpoll *)p; /* base is the first member */
}

static bool np_take(struct weft__poller *p)
{
    struct weft__netpoll *np = np_of(p);
    if (!wanted(np))
        return false;
    if (!try_take(np)) {
        /* Step 1 at the top: say so, then look again. */
        weft__storeload_store(&np->missed, 1);
        if (!try_take(np))
            return false;
    }
    np->nevents = 0;
    return true;
}

static void give_up(struct weft__netpoll *np)
{
    weft__storeload_store(&np->polling, 0);
    if (atomic_load_explicit(&np->missed, memory_order_seq_cst) &&
        atomic_exchange_explicit(&np->missed, 0, memory_order_seq_cst))
        weft__pool_kick(np->pool);
}

/* epoll_pwait2 (Linux 5.11) takes a timespec; before it, epoll_wait's
 * milliseconds, rounded up so that a timer is never run early. */
static _Atomic bool no_pwait2;

static int epoll_until(struct weft__netpoll *np, uint64_t deadline)
{
    struct timespec ts, *tsp = NULL;
    uint64_t rel = 0;
    if (deadline != UINT64_MAX) {
        ts = weft__timespec_until(deadline);
        rel = (uint64_t)ts.tv_sec * WEFT__NS_PER_S + (uint64_t)ts.tv_nsec;
        tsp = &ts;
    }
    int n;
    if (!atomic_load_explicit(&no_pwait2, memory_order_relaxed)) {
        n = epoll_pwait2(np->epfd, np->events, WEFT__NETPOLL_BATCH, tsp, NULL);
        if (n >= 0 || errno != ENOSYS)
            return n < 0 ? 0 : n; /* EINTR: the caller goes round again */
        atomic_store_explicit(&no_pwait2, true, memory_order_relaxed);
    }
    uint64_t ms = (rel + 999999u) / 1000000u;
    n = epoll_wait(np->epfd, np->events, WEFT__NETPOLL_BATCH,
                   !tsp ? -1 : ms > INT32_MAX ? INT32_MAX : (int)ms);
    return n < 0 ? 0 : n;
}

/* The holder, after a poll at `now`: the check, if it is due. */
static void check_if_due(struct weft__netpoll *np, uint64_t now)
{
    if (now < np->next_check)
        return;
    np->next_check = now + check_every_ns();
    weft__fd_check(np, ++np->checks % OWNED_CHECK_EVERY == 0);
}

static void np_block(struct weft__poller *p, uint64_t deadline)
{
    struct weft__netpoll *np = np_of(p);
    if (np->next_check < deadline)
        deadline = np->next_check; /* the check must not wait for a timer */
    np->nevents = epoll_until(np, deadline);
}

static void np_wake(struct weft__poller *p)
{
    uint64_t one = 1;
    /* Cannot fail short of a counter near 2^64. */
    weft__direct_begin();
    ssize_t r = write(np_of(p)->evfd, &one, sizeof one);
    weft__direct_end();
    (void)r;
}

static unsigned dispatch(struct weft__netpoll *np, int n)
{
    unsigned woken = 0;
    for (int i = 0; i < n; i++) {
        struct epoll_event *ev = &np->events[i];
        if (ev->data.u64 == EVFD_TOKEN) {
            uint64_t count;
            ssize_t r = read(np->evfd, &count, sizeof count);
            (void)r; /* EAGAIN: read already */
            continue;
        }
        woken += weft__fd_report(np, ev->data.u64, ev->events);
    }
    return woken;
}

static void np_finish(struct weft__poller *p)
{
    struct weft__netpoll *np = np_of(p);
    uint64_t now = weft__now_ns();
    atomic_store_explicit(&p->polled_at, now, memory_order_relaxed);
    dispatch(np, np->nevents);
    np->nevents = 0;
    if (wanted(np))
        check_if_due(np, now);
    give_up(np);
}

static bool np_unattended(struct weft__poller *p)
{
    struct weft__netpoll *np = np_of(p);
    /* seq_cst: part of the parking worker's last look (pool.c, any_work),
     * against give_up's store of polling (step 1 at the top). */
    return atomic_load_explicit(&np->nwaiters, memory_order_seq_cst) &&
           !atomic_load_explicit(&np->polling, memory_order_seq_cst);
}

static unsigned np_poll_now(struct weft__poller *p)
{
    struct weft__netpoll *np = np_of(p);
    if (!wanted(np) ||
        atomic_load_explicit(&np->polling, memory_order_relaxed) ||
        !try_take(np))
        return 0;
    unsigned woken = dispatch(np, epoll_until(np, 0));
    uint64_t now = weft__now_ns();
    atomic_store_explicit(&p->polled_at, now, memory_order_relaxed);
    check_if_due(np, now);
    give_up(np);
    return woken;
}

static void np_fini(struct weft__poller *p)
{
    struct weft__netpoll *np = np_of(p);
    weft__fd_forget_poller(np);
    close(np->evfd);
    close(np->epfd);
    free(np);
}

static unsigned np_waits(struct weft__poller *p)
{
    return atomic_load_explicit(&np_of(p)->nwaiters, memory_order_relaxed);
}

static const struct weft__poller_ops netpoll_ops = {
    .take = np_take,
    .block = np_block,
    .finish = np_finish,
    .wake = np_wake,
    .unattended = np_unattended,
    .poll_now = np_poll_now,
    .fini = np_fini,
    .waits = np_waits,
};

static int netpoll_new(weft_pool *pool, struct weft__netpoll **out)
{
    struct weft__netpoll *np = weft__calloc(1, sizeof *np);
    if (!np)
        return -ENOMEM;
    np->base.ops = &netpoll_ops;
    np->base.waiting = &np->nwaiters;
    atomic_init(&np->base.polled_at, 0);
    np->pool = pool;
    atomic_init(&np->polling, 0);
    atomic_init(&np->missed, 0);
    atomic_init(&np->nwaiters, 0);
    np->next_check = weft__now_ns() + check_every_ns();
    np->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (np->epfd < 0) {
        int err = -errno;
        free(np);
        return err;
    }
    np->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    int err = 0;
    if (np->evfd < 0) {
        err = -errno;
    } else {
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EVFD_TOKEN};
        if (epoll_ctl(np->epfd, EPOLL_CTL_ADD, np->evfd, &ev) < 0) {
            err = -errno;
            close(np->evfd);
        }
    }
    if (err) {
        close(np->epfd);
        free(np);
        return err;
    }
    *out = np;
    return 0;
}

int weft__netpoll_get(weft_pool *pool, struct weft__netpoll **out)
{
    struct weft__poller *p = weft__pool_poller(pool);
    if (!p) {
        struct weft__netpoll *np = NULL;
        int err = netpoll_new(pool, &np);
        if (err)
            return err;
        p = weft__pool_attach_poller(pool, &np->base);
        if (p != &np->base) {
            /* Another task of the pool made one first. */
            close(np->evfd);
            close(np->epfd);
            free(np);
        }
    }
    *out = np_of(p);
    return 0;
}
