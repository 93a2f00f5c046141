/*
 * io/fd.c — the per-fd records, and parking a task until its fd is ready,
 * for owned and borrowed fds (weft/io.h has the two kinds).
 *
 * Registration.  The epoll data of a registration is the fd number and a
 * generation (`gen`, bumped at every EPOLL_CTL_ADD), so a report from a
 * registration that no longer is the record's (a file that was closed and
 * whose number was reused, or one forgotten by weft_close) is recognised
 * and dropped.
 *   - Owned: EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET, once per fd, by the first
 *     task that parks on it, with that task's pool.  Edge-triggered: the
 *     kernel reports each change once, so a report that comes while nobody
 *     is parked must not be dropped; `seq` keeps it.
 *   - Borrowed: the events the parked waiters want, EPOLLONESHOT and
 *     level-triggered, re-armed (EPOLL_CTL_MOD, or ADD if the set holds no
 *     item for the file now behind the number) by every wait that parks,
 *     and by the poller after a report while waiters remain.
 *     Level-triggered arming reports readiness that is already there, so
 *     nothing needs to be remembered between waits: the next wait simply
 *     tries its call again.
 *
 * No readiness is lost, owned fds (the waiter's side).  A task that reads
 * does
 *     s = seq;  read() fails with EAGAIN;  lock;  if seq != s: unlock and
 *     read again;  else link itself, unlock, park
 * and the poller, for each report,
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
 * No readiness is lost, borrowed fds: the waiter arms the one-shot under
 * the lock after its call said EAGAIN, and arming reports what is there
 * already; the report comes to the poller, which takes the lock, so it
 * finds the waiter linked.
 *
 * The check (netpoll.c runs it about once a second while waits are
 * parked): epoll silently forgets a registration when its file is closed,
 * so a task waiting on an fd that someone closed with close(2), or
 * dup2(2)'d over, would wait forever.  For each record with parked waits
 * the check re-arms the registration with EPOLL_CTL_MOD; the kernel
 * answers ENOENT or EBADF exactly when the file the registration was made
 * for is no longer the one behind the number.  Then the waits end with
 * -EBADF (for an owned fd, after saying on stderr that it was closed
 * without weft_close).  A MOD that succeeds can cause one spurious report,
 * which costs each waiter one more try.  Borrowed fds are checked every
 * time, owned ones (where such a close is the program's bug) every tenth.
 *
 * Teardown.  Every wait linked on a record is counted in nwaiters of
 * rec->poller, and only a party holding the record's lock touches either.
 * A pool's netpoller goes away when the pool's workers are joined and none
 * of its tasks is alive: weft__fd_forget_poller takes each record's lock,
 * wakes the waiters there (tasks of other pools) to try again, which
 * re-registers the fd with their own pool, and forgets the registration;
 * then nothing refers to the netpoller any more.
 */
#include "io/netpoll.h"

#include <weft/io.h>

#include "base/alloc.h"
#include "sched/task.h"
#include "sched/wait.h"
#include "sched/worker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* The waits' kinds, for the observers: the object is the fd number. */
static void describe_fd(const struct weft__wait *w, char *buf, size_t n)
{
    snprintf(buf, n, "fd %d", (int)(intptr_t)w->obj);
}

static const struct weft__wait_kind fd_read_kind = {WEFT__WR_FD_READ,
                                                    "fd read", 0, describe_fd};
static const struct weft__wait_kind fd_write_kind = {
    WEFT__WR_FD_WRITE, "fd write", 0, describe_fd};
static const struct weft__wait_kind fd_rw_kind = {
    WEFT__WR_FD_READ, "fd read/write", 0, describe_fd};

#define SEQ_IN ((uint64_t)1)
#define SEQ_OUT ((uint64_t)1 << 32)

/* ------------------------------------------------------------ the table */

#define FD_CHUNK_BITS 10
#define FD_CHUNK (1u << FD_CHUNK_BITS)
#define FD_CHUNKS 4096u              /* fds below 4,194,304                */

static _Atomic(struct weft__fd *) fd_chunks[FD_CHUNKS];

struct weft__fd *weft__fd_find(int fd)
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
    struct weft__fd *rec = weft__fd_find(fd);
    if (!rec) {
        /* All zeroes is a free lock, borrowed, no registration, no
         * waiters. */
        struct weft__fd *chunk = weft__calloc(FD_CHUNK, sizeof *chunk);
        if (!chunk)
            return -ENOMEM;
        struct weft__fd *none = NULL;
        if (!atomic_compare_exchange_strong_explicit(
                &fd_chunks[(unsigned)fd >> FD_CHUNK_BITS], &none, chunk,
                memory_order_acq_rel, memory_order_acquire))
            free(chunk); /* another thread made it first */
        rec = weft__fd_find(fd);
    }
    *out = rec;
    return 0;
}

/* Every record of the table, for walks that take each one's lock. */
#define FOR_EACH_RECORD(rec, fdvar)                                         \
    for (unsigned c_ = 0; c_ < FD_CHUNKS; c_++)                             \
        for (struct weft__fd *chunk_ = atomic_load_explicit(                \
                 &fd_chunks[c_], memory_order_acquire);                     \
             chunk_; chunk_ = NULL)                                         \
            for (unsigned i_ = 0; i_ < FD_CHUNK &&                          \
                                  ((rec) = &chunk_[i_],                     \
                                  (fdvar) = (int)(c_ * FD_CHUNK + i_), 1);  \
                 i_++)

/* ----------------------------------------------------------- the waits */

static void link_wait(struct weft__fd *rec, struct weft__wait *w)
{
    w->prev = NULL;
    w->next = rec->waiters;
    if (w->next)
        w->next->prev = w;
    rec->waiters = w;
    w->listed = true;
    atomic_fetch_add_explicit(&rec->nwaiting, 1, memory_order_relaxed);
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
    atomic_fetch_sub_explicit(&rec->nwaiting, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&rec->poller->nwaiters, 1, memory_order_relaxed);
}

unsigned weft__fd_wake(struct weft__fd *rec, unsigned match, int result)
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

/* The events the listed waiters wait for. */
static unsigned wanted_events(const struct weft__fd *rec)
{
    unsigned e = 0;
    for (const struct weft__wait *w = rec->waiters; w; w = w->next)
        e |= (unsigned)w->data;
    return e;
}

static bool seq_moved(uint64_t now, uint64_t then, unsigned events)
{
    uint64_t diff = now ^ then;
    return ((events & WEFT_IN) && (uint32_t)diff) ||
           ((events & WEFT_OUT) && (diff >> 32));
}

static uint64_t data_of(const struct weft__fd *rec, int fd)
{
    return (uint64_t)(uint32_t)fd | (uint64_t)rec->gen << 32;
}

static uint32_t epoll_events(bool owned, unsigned events)
{
    if (owned)
        return EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    return (events & WEFT_IN ? EPOLLIN | EPOLLRDHUP : 0) |
           (events & WEFT_OUT ? EPOLLOUT : 0) | EPOLLONESHOT;
}

/* Under rec->lock: register fd with np (ADD, or MOD if this very file is
 * there already).  Returns 0 or -errno. */
static int enroll(struct weft__fd *rec, int fd, struct weft__netpoll *np,
                  bool owned, unsigned events)
{
    rec->gen++;
    struct epoll_event ev = {.events = epoll_events(owned, events),
                             .data.u64 = data_of(rec, fd)};
    if (epoll_ctl(np->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 &&
        (errno != EEXIST || epoll_ctl(np->epfd, EPOLL_CTL_MOD, fd, &ev) < 0))
        return -errno;
    rec->poller = np;
    rec->armed = owned ? 0 : events;
    return 0;
}

/* Under rec->lock, borrowed: arm the one-shot for `events` where fd is
 * registered, or with np.  Returns 0 or -errno. */
static int arm(struct weft__fd *rec, int fd, struct weft__netpoll *np,
               unsigned events)
{
    if (!rec->poller)
        return enroll(rec, fd, np, false, events);
    struct epoll_event ev = {.events = epoll_events(false, events),
                             .data.u64 = data_of(rec, fd)};
    if (epoll_ctl(rec->poller->epfd, EPOLL_CTL_MOD, fd, &ev) == 0) {
        rec->armed = events;
        return 0;
    }
    if (errno != ENOENT)
        return -errno;
    /* The set holds no item for the file behind the number now: the one
     * it had was closed (close(2), dup2 over it).  Those who wait here
     * waited on that file: they end with -EBADF now, as the check would
     * end them (see the top).  Registered under them instead, the new
     * file's registration hid the closed one from the check, and its
     * reports woke them to read the new file's bytes.  Then this one is
     * registered afresh, with our pool. */
    weft__fd_wake(rec, WEFT_IN | WEFT_OUT, -EBADF);
    return enroll(rec, fd, np, false, events);
}

int weft__fd_park(struct weft__fd *rec, int fd, unsigned events, uint64_t seq,
                  uint64_t deadline)
{
    struct weft__netpoll *mine;
    int err = weft__netpoll_get(weft__task_current()->pool, &mine);
    if (err)
        return err;
    struct weft__wait w;

    weft__spin_lock(&rec->lock);
    bool owned = atomic_load_explicit(&rec->owned, memory_order_relaxed);
    if (owned) {
        if (seq_moved(atomic_load_explicit(&rec->seq, memory_order_relaxed),
                      seq, events)) {
            weft__spin_unlock(&rec->lock);
            return 0;
        }
        err = rec->poller ? 0 : enroll(rec, fd, mine, true, 0);
    } else {
        err = arm(rec, fd, mine, events | wanted_events(rec));
    }
    if (err) {
        weft__spin_unlock(&rec->lock);
        return err;
    }
    const struct weft__wait_kind *kind =
        events == WEFT_IN    ? &fd_read_kind
        : events == WEFT_OUT ? &fd_write_kind
                             : &fd_rw_kind;
    if (weft__wait_init(&w, deadline, kind, (const void *)(intptr_t)fd)) {
        weft__spin_unlock(&rec->lock);
        return -ECANCELED;
    }
    w.data = events;
    link_wait(rec, &w);
    if (rec->poller != mine)
        weft__pool_kick(rec->poller->pool); /* netpoll.c, step 2 */
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

/* ----------------------------------------------------- the poller's side */

unsigned weft__fd_report(struct weft__netpoll *np, uint64_t data,
                         uint32_t e)
{
    int fd = (int)(uint32_t)data;
    struct weft__fd *rec = weft__fd_find(fd);
    unsigned ready = 0;
    if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        ready |= WEFT_IN;
    if (e & (EPOLLOUT | EPOLLHUP | EPOLLERR))
        ready |= WEFT_OUT;
    if (!rec || !ready)
        return 0;
    unsigned woken = 0;
    weft__spin_lock(&rec->lock);
    if (rec->poller != np || rec->gen != (uint32_t)(data >> 32)) {
        /* Forgotten since epoll_wait returned, or a registration that is
         * no longer the record's (see the top). */
        weft__spin_unlock(&rec->lock);
        return 0;
    }
    if (atomic_load_explicit(&rec->owned, memory_order_relaxed)) {
        if (e & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            atomic_store_explicit(&rec->hup, true, memory_order_relaxed);
        /* Release: a reader that sees this count sees hup (io.c). */
        atomic_fetch_add_explicit(&rec->seq,
                                  (ready & WEFT_IN ? SEQ_IN : 0) |
                                      (ready & WEFT_OUT ? SEQ_OUT : 0),
                                  memory_order_release);
        woken = weft__fd_wake(rec, ready, 0);
    } else {
        /* The one-shot fired and is disarmed now. */
        rec->armed = 0;
        woken = weft__fd_wake(rec, ready, 0);
        unsigned rest = wanted_events(rec);
        if (rest && arm(rec, fd, np, rest) < 0)
            weft__fd_wake(rec, WEFT_IN | WEFT_OUT, -EBADF);
    }
    weft__spin_unlock(&rec->lock);
    return woken;
}

void weft__fd_check(struct weft__netpoll *np, bool owned_too)
{
    struct weft__fd *rec;
    int fd;
    FOR_EACH_RECORD(rec, fd) {
        if (!atomic_load_explicit(&rec->nwaiting, memory_order_relaxed))
            continue;
        bool owned = atomic_load_explicit(&rec->owned, memory_order_relaxed);
        if (owned && !owned_too)
            continue;
        weft__spin_lock(&rec->lock);
        if (rec->poller == np && rec->waiters) {
            struct epoll_event ev = {
                .events = epoll_events(owned, wanted_events(rec)),
                .data.u64 = data_of(rec, fd)};
            if (epoll_ctl(np->epfd, EPOLL_CTL_MOD, fd, &ev) == 0) {
                rec->armed = owned ? 0 : wanted_events(rec);
            } else if (errno == ENOENT || errno == EBADF) {
                weft__fd_wake(rec, WEFT_IN | WEFT_OUT, -EBADF);
                rec->poller = NULL;
                if (owned && !rec->warned) {
                    rec->warned = true;
                    fprintf(stderr,
                            "weft: fd %d, owned by weft, was closed (or "
                            "replaced) without weft_close while tasks "
                            "waited on it; they get -EBADF\n",
                            fd);
                }
            }
        }
        weft__spin_unlock(&rec->lock);
    }
}

void weft__fd_forget_poller(struct weft__netpoll *np)
{
    struct weft__fd *rec;
    int fd;
    FOR_EACH_RECORD(rec, fd) {
        (void)fd;
        weft__spin_lock(&rec->lock);
        if (rec->poller == np) {
            weft__fd_wake(rec, WEFT_IN | WEFT_OUT, 0);
            rec->poller = NULL;
            atomic_fetch_add_explicit(&rec->seq, SEQ_IN | SEQ_OUT,
                                      memory_order_relaxed);
        }
        weft__spin_unlock(&rec->lock);
    }
}

/* ------------------------------------------------------------- reset */

/* Under rec->lock: wake the waiters with -EBADF, drop the registration,
 * forget the rest. */
static void forget(struct weft__fd *rec, int fd, bool owned, int woken)
{
    weft__fd_wake(rec, WEFT_IN | WEFT_OUT, woken);
    if (rec->poller) {
        /* Explicitly: a close(2) removes the registration only with the
         * last descriptor of the file (not while a dup(2) lives).  Fails
         * harmlessly if the file is another one by now. */
        epoll_ctl(rec->poller->epfd, EPOLL_CTL_DEL, fd, NULL);
        rec->poller = NULL;
    }
    rec->gen++;
    rec->armed = 0;
    /* Waits about to park see a change and look again. */
    atomic_fetch_add_explicit(&rec->seq, SEQ_IN | SEQ_OUT, memory_order_relaxed);
    atomic_store_explicit(&rec->owned, owned, memory_order_relaxed);
    atomic_store_explicit(&rec->kind, 0, memory_order_relaxed);
    atomic_store_explicit(&rec->drained, 0, memory_order_relaxed);
    atomic_store_explicit(&rec->hup, false, memory_order_relaxed);
    rec->warned = false;
}

int weft__fd_reset(int fd, bool owned, int woken)
{
    struct weft__fd *rec = weft__fd_find(fd);
    if (!rec) {
        if (!owned)
            return 0;
        int err = weft__fd_get(fd, &rec);
        if (err)
            return err;
    }
    weft__spin_lock(&rec->lock);
    forget(rec, fd, owned, woken);
    weft__spin_unlock(&rec->lock);
    return 0;
}

void weft__fd_closed_behind(int fd, const char *how)
{
    struct weft__fd *rec = weft__fd_find(fd);
    if (!rec)
        return;
    weft__spin_lock(&rec->lock);
    bool was_owned = atomic_load_explicit(&rec->owned, memory_order_relaxed);
    if (was_owned) {
        fprintf(stderr,
                "weft: fd %d, owned by weft, was closed without weft_close "
                "(%s); weft forgets it\n",
                fd, how);
        forget(rec, fd, false, -EBADF);
    }
    weft__spin_unlock(&rec->lock);
}
