/*
 * netpoll.c — the netpoller (netpoll.h): an epoll instance per pool, the
 * per-fd records, and parking a task until its fd is ready.  Go's shape:
 * an idle worker blocks in epoll_wait instead of on its futex, and an
 * eventfd in the epoll set is how the rest of the pool wakes it.
 *
 * Registration: EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET, once per fd, by the
 * first task that parks on it, with that task's pool, under the record's
 * lock.  Edge-triggered: the kernel reports each change once, so a report
 * that comes while nobody is parked must not be dropped; `seq` keeps it.
 *
 * No readiness is lost (the waiter's side).  A task that reads does
 *     s = seq;  read() fails with EAGAIN;  lock;  if seq != s: unlock and
 *     read again;  else link itself, unlock, park
 * and the poller, for each event epoll_wait returns,
 *     lock;  seq += the directions reported;  unlink and wake every waiter
 *     that waits for one of them;  unlock.
 * Data that arrives after the read's EAGAIN makes the kernel queue an
 * event (the fd is registered before the link, under the lock, and a
 * registration reports what is already there), and the poller handles
 * that event after the arrival, so after the load of s.  Its locked
 * section comes either before the waiter's (which sees seq != s and reads
 * again) or after it (the waiter is linked, and woken).  A report of older
 * data costs one extra read.  Every waiter a report concerns is woken and
 * tries again, so one waiter that reads part of the data cannot strand
 * another.
 *
 * A parked wait is woken once its report comes (the poller's side): some
 * worker of the pool calls epoll_wait while waits are parked (nwaiters >
 * 0; counted under the record's lock, by whoever links or unlinks).
 *   1. A worker about to sleep (pool.c, park_worker, once on the idle list)
 *      takes the poller when nwaiters > 0 (the `polling` flag, one holder
 *      at a time) and blocks in epoll_wait until its earliest timer,
 *      instead of on its futex.  If another worker holds it, it sets
 *      `missed` and tries once more; a holder that gives the flag up clears
 *      `polling` and then reads `missed` (both seq_cst): either the second
 *      try finds the flag free, or the holder sees `missed` and kicks the
 *      pool (an idle worker wakes, searches, and comes back here to
 *      sleep).  So no worker stays asleep on its futex while waits are
 *      parked and nobody holds the poller.
 *   2. A wait that makes nwaiters non-zero while every worker sleeps on its
 *      futex: if the fd is registered with the task's own pool, the worker
 *      that runs the task is awake (it goes on to the task's park) and will
 *      poll or sleep through 1.  If it is registered with another pool
 *      (the fd was first waited on there), the waiter kicks that pool, with
 *      the record's lock held, which keeps that pool from being torn down
 *      meanwhile (see teardown).
 *   3. Busy workers poll without blocking when they run out of local work
 *      and at every fairness tick (61 scheduler ticks) if the poller is
 *      free, so a busy pool does not starve I/O.  (A worker busy with one
 *      task that never blocks notices nothing, as for any other work.)
 *   4. The blocked poller is woken for whatever wakes a sleeping worker (a
 *      new task, an earlier timer, shutdown) by a write to the eventfd:
 *      the waker takes it off the idle list under idle_lock, where the
 *      worker's in_poll is set before it can be found there and cleared
 *      after it wakes, and writes the eventfd instead of its parker.  The
 *      eventfd sits level-triggered in the epoll set and its count stays
 *      until read, so a write that comes before epoll_wait is not lost;
 *      the next poll reads it back (a stale one costs one early return).
 *      wakep prefers a worker asleep on its futex, so the poller stays in
 *      epoll_wait.
 *
 * Teardown.  Every wait linked on a record is counted in nwaiters of
 * rec->poller, and only a party holding the record's lock touches either.
 * fini runs when the pool's workers are joined and none of its tasks is
 * alive: it takes each record's lock, wakes the waiters there (tasks of
 * other pools) to try again, which re-registers the fd with their own
 * pool, and forgets the registration; then nothing refers to the
 * netpoller any more.
 *
 * Plain threads, standalone coroutines and tasks without a pool do not
 * come here: io.c blocks them in poll(2).
 */
#include "netpoll.h"

#include <weft/io.h>

#include "fault.h"
#include "runtime.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define EVFD_TOKEN UINT64_MAX        /* epoll data of the eventfd          */
#define SEQ_IN ((uint64_t)1)
#define SEQ_OUT ((uint64_t)1 << 32)

/* ------------------------------------------------------------ the table */

#define FD_CHUNK_BITS 10
#define FD_CHUNK (1u << FD_CHUNK_BITS)
#define FD_CHUNKS 4096u              /* fds below 4,194,304                */

static _Atomic(struct weft__fd *) fd_chunks[FD_CHUNKS];

/* The record of an fd that has one, else NULL. */
static struct weft__fd *fd_find(int fd)
{
    if (fd < 0 || (unsigned)fd >= FD_CHUNKS * FD_CHUNK)
        return NULL;
    struct weft__fd *chunk = atomic_load_explicit(
        &fd_chunks[(unsigned)fd >> FD_CHUNK_BITS], memory_order_acquire);
    return chunk ? &chunk[(unsigned)fd & (FD_CHUNK - 1)] : NULL;
}

int weft__fd_get(int fd, struct weft__fd **out)
{
    if (fd < 0)
        return -EBADF;
    if ((unsigned)fd >= FD_CHUNKS * FD_CHUNK)
        return -EINVAL;
    struct weft__fd *rec = fd_find(fd);
    if (!rec) {
        /* All zeroes is a free lock, no registration, no waiters. */
        struct weft__fd *chunk = weft__calloc(FD_CHUNK, sizeof *chunk);
        if (!chunk)
            return -ENOMEM;
        struct weft__fd *none = NULL;
        if (!atomic_compare_exchange_strong_explicit(
                &fd_chunks[(unsigned)fd >> FD_CHUNK_BITS], &none, chunk,
                memory_order_acq_rel, memory_order_acquire))
            free(chunk); /* another thread made it first */
        rec = fd_find(fd);
    }
    *out = rec;
    return 0;
}

/* ----------------------------------------------------------- the waits */

static void link_wait(struct weft__fd *rec, struct weft__wait *w)
{
    w->prev = NULL;
    w->next = rec->waiters;
    if (w->next)
        w->next->prev = w;
    rec->waiters = w;
    w->listed = true;
    atomic_fetch_add_explicit(&rec->poller->nwaiters, 1, memory_order_seq_cst);
}

static void unlink_wait(struct weft__fd *rec, struct weft__wait *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        rec->waiters = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->listed = false;
    atomic_fetch_sub_explicit(&rec->poller->nwaiters, 1, memory_order_relaxed);
}

/*
 * Under rec->lock: unlink and wake the waiters that wait for one of
 * `match`, handing each `result` (0: try again, or -EBADF).  Returns how
 * many were woken.
 */
static unsigned wake(struct weft__fd *rec, unsigned match, int result)
{
    unsigned woken = 0;
    struct weft__wait *w = rec->waiters;
    while (w) {
        struct weft__wait *next = w->next;
        if (w->data & match) {
            unlink_wait(rec, w);
            w->value = (void *)(intptr_t)result;
            /* false: it timed out or was cancelled first; unlinked all
             * the same, it returns its own outcome. */
            woken += weft__wait_wake_fifo(w);
        }
        w = next;
    }
    return woken;
}

static bool seq_moved(uint64_t now, uint64_t then, unsigned events)
{
    uint64_t diff = now ^ then;
    return ((events & WEFT_IN) && (uint32_t)diff) ||
           ((events & WEFT_OUT) && (diff >> 32));
}

/* Under rec->lock. */
static int enroll(struct weft__fd *rec, int fd, struct weft__netpoll *np)
{
    struct epoll_event ev = {
        .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
        .data.u64 = (uint64_t)fd,
    };
    /* EEXIST: this very file is registered there already. */
    if (epoll_ctl(np->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 && errno != EEXIST)
        return -errno;
    rec->poller = np;
    return 0;
}

int weft__fd_park(struct weft__fd *rec, int fd, unsigned events, uint64_t seq,
                  uint64_t deadline)
{
    struct weft__netpoll *mine = &weft__task_current()->pool->net;
    struct weft__wait w;

    weft__spin_lock(&rec->lock);
    if (seq_moved(atomic_load_explicit(&rec->seq, memory_order_relaxed), seq,
                  events)) {
        weft__spin_unlock(&rec->lock);
        return 0;
    }
    if (!rec->poller) {
        int err = enroll(rec, fd, mine);
        if (err) {
            weft__spin_unlock(&rec->lock);
            return err;
        }
    }
    if (weft__wait_init(&w, deadline)) {
        weft__spin_unlock(&rec->lock);
        return -ECANCELED;
    }
    w.data = events;
    link_wait(rec, &w);
    if (rec->poller != mine)
        weft__pool_kick(rec->poller->pool); /* step 2 at the top */
    weft__spin_unlock(&rec->lock);

    uint32_t outcome = weft__wait_block(&w);
    weft__spin_lock(&rec->lock);
    if (w.listed)
        unlink_wait(rec, &w);
    weft__spin_unlock(&rec->lock);
    if (outcome != WEFT__W_WOKEN)
        return weft__wait_error(&w, outcome);
    return (int)(intptr_t)w.value;
}

void weft__fd_forget(int fd, bool nonblock)
{
    struct weft__fd *rec = fd_find(fd);
    if (!rec)
        return;
    weft__spin_lock(&rec->lock);
    wake(rec, WEFT_IN | WEFT_OUT, -EBADF);
    if (rec->poller) {
        /* Explicitly: a close(2) removes the registration only with the
         * last descriptor of the file (not while a dup(2) lives). */
        epoll_ctl(rec->poller->epfd, EPOLL_CTL_DEL, fd, NULL);
        rec->poller = NULL;
    }
    /* Waits about to park see a change and look again. */
    atomic_fetch_add_explicit(&rec->seq, SEQ_IN | SEQ_OUT, memory_order_relaxed);
    atomic_store_explicit(&rec->nonblock, nonblock, memory_order_relaxed);
    atomic_store_explicit(&rec->kind, 0, memory_order_relaxed);
    atomic_store_explicit(&rec->drained, 0, memory_order_relaxed);
    atomic_store_explicit(&rec->hup, false, memory_order_relaxed);
    weft__spin_unlock(&rec->lock);
}

/* --------------------------------------------------------- the poller */

int weft__netpoll_init(struct weft__netpoll *np, weft_pool *pool)
{
    np->pool = pool;
    atomic_init(&np->polling, 0);
    atomic_init(&np->missed, 0);
    atomic_init(&np->nwaiters, 0);
    np->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (np->epfd < 0)
        return -errno;
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
    if (err)
        close(np->epfd);
    return err;
}

void weft__netpoll_fini(struct weft__netpoll *np)
{
    for (unsigned c = 0; c < FD_CHUNKS; c++) {
        struct weft__fd *chunk =
            atomic_load_explicit(&fd_chunks[c], memory_order_acquire);
        for (unsigned i = 0; chunk && i < FD_CHUNK; i++) {
            struct weft__fd *rec = &chunk[i];
            weft__spin_lock(&rec->lock);
            if (rec->poller == np) {
                wake(rec, WEFT_IN | WEFT_OUT, 0);
                rec->poller = NULL;
                atomic_fetch_add_explicit(&rec->seq, SEQ_IN | SEQ_OUT,
                                          memory_order_relaxed);
            }
            weft__spin_unlock(&rec->lock);
        }
    }
    close(np->evfd);
    close(np->epfd);
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

bool weft__netpoll_take(struct weft__netpoll *np)
{
    if (!wanted(np))
        return false;
    if (try_take(np))
        return true;
    /* Step 1 at the top: say so, then look again. */
    atomic_store_explicit(&np->missed, 1, memory_order_seq_cst);
    return try_take(np);
}

static void give_up(struct weft__netpoll *np)
{
    atomic_store_explicit(&np->polling, 0, memory_order_seq_cst);
    if (atomic_load_explicit(&np->missed, memory_order_seq_cst) &&
        atomic_exchange_explicit(&np->missed, 0, memory_order_seq_cst))
        weft__pool_kick(np->pool);
}

/* epoll_pwait2 (Linux 5.11) takes a timespec; before it, epoll_wait's
 * milliseconds, rounded up so that a timer is never run early. */
static _Atomic bool no_pwait2;

static int epoll_until(int epfd, struct epoll_event *ev, uint64_t deadline)
{
    struct timespec ts, *tsp = NULL;
    uint64_t rel = 0;
    if (deadline != UINT64_MAX) {
        uint64_t now = weft__now_ns();
        rel = deadline > now ? deadline - now : 0;
        ts.tv_sec = (time_t)(rel / 1000000000u);
        ts.tv_nsec = (long)(rel % 1000000000u);
        tsp = &ts;
    }
    if (!atomic_load_explicit(&no_pwait2, memory_order_relaxed)) {
        int n = epoll_pwait2(epfd, ev, WEFT__NETPOLL_BATCH, tsp, NULL);
        if (n >= 0 || errno != ENOSYS)
            return n;
        atomic_store_explicit(&no_pwait2, true, memory_order_relaxed);
    }
    uint64_t ms = (rel + 999999u) / 1000000u;
    return epoll_wait(epfd, ev, WEFT__NETPOLL_BATCH,
                      !tsp ? -1 : ms > INT32_MAX ? INT32_MAX : (int)ms);
}

int weft__netpoll_block(struct weft__netpoll *np, uint64_t deadline,
                        struct epoll_event *ev)
{
    int n = epoll_until(np->epfd, ev, deadline);
    return n < 0 ? 0 : n; /* EINTR: the caller goes round again */
}

void weft__netpoll_wake(struct weft__netpoll *np)
{
    uint64_t one = 1;
    /* Cannot fail short of a counter near 2^64. */
    ssize_t r = write(np->evfd, &one, sizeof one);
    (void)r;
}

static unsigned dispatch(struct weft__netpoll *np, struct epoll_event *ev,
                         int n)
{
    unsigned woken = 0;
    for (int i = 0; i < n; i++) {
        if (ev[i].data.u64 == EVFD_TOKEN) {
            uint64_t count;
            ssize_t r = read(np->evfd, &count, sizeof count);
            (void)r; /* EAGAIN: read already */
            continue;
        }
        struct weft__fd *rec = fd_find((int)ev[i].data.u64);
        uint32_t e = ev[i].events;
        unsigned ready = 0;
        if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            ready |= WEFT_IN;
        if (e & (EPOLLOUT | EPOLLHUP | EPOLLERR))
            ready |= WEFT_OUT;
        if (!rec || !ready)
            continue;
        weft__spin_lock(&rec->lock);
        if (rec->poller != np) {
            /* Forgotten since epoll_wait returned (and maybe registered
             * elsewhere, which reports on its own). */
            weft__spin_unlock(&rec->lock);
            continue;
        }
        if (e & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            atomic_store_explicit(&rec->hup, true, memory_order_relaxed);
        /* Release: a reader that sees this count sees hup (io.c). */
        atomic_fetch_add_explicit(&rec->seq,
                                  (ready & WEFT_IN ? SEQ_IN : 0) |
                                      (ready & WEFT_OUT ? SEQ_OUT : 0),
                                  memory_order_release);
        woken += wake(rec, ready, 0);
        weft__spin_unlock(&rec->lock);
    }
    return woken;
}

void weft__netpoll_finish(struct weft__netpoll *np, struct epoll_event *ev,
                          int n)
{
    dispatch(np, ev, n);
    give_up(np);
}

unsigned weft__netpoll_poll_now(struct weft__netpoll *np)
{
    if (!wanted(np) || atomic_load_explicit(&np->polling, memory_order_relaxed) ||
        !try_take(np))
        return 0;
    struct epoll_event ev[WEFT__NETPOLL_BATCH];
    int n = epoll_until(np->epfd, ev, 0);
    unsigned woken = dispatch(np, ev, n < 0 ? 0 : n);
    give_up(np);
    return woken;
}
