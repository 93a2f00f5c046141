/*
 * io/io.c — the socket calls of weft/io.h.  Each tries its system call
 * without blocking; when that would block, it waits for readiness and
 * tries again.  A task on a pool parks on the fd (fd.c: owned fds keep a
 * readiness count, read before each try, so a report that comes between
 * the try and the park is not lost; borrowed fds re-arm a one-shot
 * registration per wait, which reports readiness already there).
 * Anything else blocks its thread in poll(2), which is level-triggered and
 * needs no such care: there is no scheduler under a plain thread to hand
 * the wait to, and a task that sync_wait runs without a pool has only its
 * thread to run on.
 *
 * How each kind of fd is read and written without blocking a worker:
 *   - owned sockets: recv/send with MSG_DONTWAIT (they are O_NONBLOCK as
 *     well; the flag keeps a number that was closed and reused behind
 *     weft's back, a bug weft reports, from blocking the worker);
 *   - owned non-sockets: read/write (O_NONBLOCK was set at adoption);
 *   - borrowed sockets: recv/send with MSG_DONTWAIT, which needs no flag;
 *   - borrowed non-sockets: read/write only if they are O_NONBLOCK (asked
 *     of the kernel each call: weft trusts nothing it learnt of a borrowed
 *     fd), else -EINVAL.
 */
#include <weft/io.h>

#include "base/clock.h"
#include "base/compiler.h"
#include "base/direct.h"
#include "io/hook.h"
#include "io/netpoll.h"
#include "sched/task.h"
#include "sched/wait.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* A try's "would block" (not an errno: connect(2)'s EAGAIN is an error). */
#define WOULD_BLOCK ((ssize_t)INT32_MIN)

/* The deadline of a call (0: none); *nowait if it must not wait at all. */
static uint64_t deadline_of(uint64_t timeout_ns, bool timed, bool *nowait)
{
    *nowait = timed && timeout_ns == 0;
    return timed ? weft__deadline_after(timeout_ns) : 0;
}

/* poll(2) fd once for `events`, waiting up to *ts (NULL: no limit).
 * Returns the ready events, 0 on timeout or a signal (EINTR: the caller
 * goes round again with the time that is left, which ppoll does not
 * write back: retrying with the same *ts here made every signal restart
 * the whole timeout), -EBADF (fd not open), -ENOMEM, or -EINVAL
 * (RLIMIT_NOFILE 0: ppoll refuses even one fd), the failures ppoll has
 * for a call like this one. */
static int poll_fd(int fd, unsigned events, const struct timespec *ts)
{
    struct pollfd pfd = {
        .fd = fd,
        .events = (short)(events | (events & WEFT_IN ? POLLRDHUP : 0)),
    };
    int r = ppoll(&pfd, 1, ts, NULL);
    if (r < 0)
        return errno == EINTR ? 0 : -errno;
    if (pfd.revents & POLLNVAL)
        return -EBADF;
    unsigned ready = 0;
    if (pfd.revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR))
        ready |= WEFT_IN;
    if (pfd.revents & (POLLOUT | POLLHUP | POLLERR))
        ready |= WEFT_OUT;
    return (int)(ready & events);
}

/* Block the thread until fd is ready or the deadline (0: none) passes. */
static int poll_thread(int fd, unsigned events, uint64_t deadline)
{
    for (;;) {
        struct timespec ts, *tsp = NULL;
        if (deadline) {
            if (weft__now_ns() >= deadline)
                return -ETIMEDOUT;
            ts = weft__timespec_until(deadline);
            tsp = &ts;
        }
        int r = poll_fd(fd, events, tsp);
        if (r)
            return r;
    }
}

/* The try would block: wait until fd may be ready for `events`.  Returns 0
 * (try again) or -errno. */
static int wait_ready(struct weft__fd *rec, int fd, unsigned events,
                      uint64_t seq, uint64_t deadline, bool nowait)
{
    if (nowait || (deadline && weft__now_ns() >= deadline))
        return -ETIMEDOUT;
    struct weft__task *self = weft__task_current();
    if (self && self->pool)
        return weft__fd_park(rec, fd, events, seq, deadline);
    if (weft__cancelled())
        return -ECANCELED;
    int r = poll_thread(fd, events, deadline);
    return r < 0 ? r : 0;
}

/* One non-blocking try of a call: its result (>= 0), WOULD_BLOCK, or
 * -errno. */
typedef ssize_t (*try_fn)(int fd, void *arg);

static ssize_t owned_failed(int fd, ssize_t r);

/* What a try's error says of the fd (owned_failed): nothing (a borrowed
 * fd), that an owned fd was closed behind weft's back if EBADF or
 * ENOTSOCK (a read or write of what weft knows is a socket), or if EBADF
 * alone (accept and connect, which say ENOTSOCK of an owned fd that is
 * no socket, as of any other). */
enum owned_check { NOT_OWNED, OWNED_SOCKET, OWNED_EBADF };

static ssize_t io_loop(struct weft__fd *rec, int fd, unsigned events,
                       uint64_t deadline, bool nowait, enum owned_check owned,
                       try_fn try_once, void *arg)
{
    for (;;) {
        uint64_t seq = weft__fd_seq(rec); /* before the try: fd.c */
        ssize_t r = try_once(fd, arg);
        /* Only the kernel's answer says an owned fd was closed behind
         * weft's back: a wait's -EBADF is weft_close's wake, after which
         * the number may already be another owned file's. */
        if (r != WOULD_BLOCK)
            return owned == OWNED_SOCKET ||
                           (owned == OWNED_EBADF && r == -EBADF)
                       ? owned_failed(fd, r)
                       : r;
        int err = wait_ready(rec, fd, events, seq, deadline, nowait);
        if (err)
            return err;
    }
}

/* A system call's failure as a try's result. */
static ssize_t failed(void)
{
    return errno == EAGAIN || errno == EWOULDBLOCK ? WOULD_BLOCK : -errno;
}

/* What an fd is: 1 a stream socket, 2 another socket, 3 not a socket, or
 * -errno (EBADF). */
static int probe_kind(int fd)
{
    int type = 0;
    socklen_t size = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) == 0)
        return type == SOCK_STREAM ? 1 : 2;
    return errno == ENOTSOCK ? 3 : -errno;
}

/* An owned fd's kind, learnt once. */
static int owned_kind(int fd, struct weft__fd *rec)
{
    int kind = atomic_load_explicit(&rec->kind, memory_order_relaxed);
    if (!kind) {
        kind = probe_kind(fd);
        if (kind < 0)
            return kind;
        atomic_store_explicit(&rec->kind, (uint8_t)kind, memory_order_relaxed);
    }
    return kind;
}

/* The kernel said EBADF (or, for what weft knows is a socket, ENOTSOCK)
 * for an fd weft owns: it was closed behind weft's back
 * (weft__fd_closed_behind says so). */
static ssize_t owned_failed(int fd, ssize_t r)
{
    if (r == -EBADF || r == -ENOTSOCK) {
        weft__fd_closed_behind(fd, r == -EBADF ? "the kernel says EBADF"
                                               : "it is no socket any more");
        return -EBADF;
    }
    return r;
}

/* How a call reads or writes its fd (see the top). */
enum mode {
    AS_SOCKET,   /* recv/send with MSG_DONTWAIT                           */
    AS_FILE,     /* read/write: the fd is non-blocking                    */
    PROBE,       /* borrowed, not known: try as a socket, and on ENOTSOCK
                    as a file if it is non-blocking                       */
};

/* A PROBE try met ENOTSOCK: a non-blocking file is read as one, else
 * -EINVAL (a blocking borrowed non-socket, weft/io.h). */
static ssize_t not_a_socket(int fd, enum mode *mode)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0)
        return -errno;
    if (!(flags & O_NONBLOCK))
        return -EINVAL;
    *mode = AS_FILE;
    return 0;
}

/* ------------------------------------------------------- owned fds */

static int take_ownership(int fd)
{
    struct weft__fd *rec;
    int err = weft__fd_get(fd, &rec);
    if (err)
        return err;
    if (atomic_load_explicit(&rec->owned, memory_order_relaxed))
        weft__fd_closed_behind(fd, "its number came back from the kernel");
    return weft__fd_reset(fd, true, -EBADF);
}

WEFT_EXPORT int weft_socket(int domain, int type, int protocol)
{
    int fd = socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol);
    if (fd < 0)
        return -errno;
    int err = take_ownership(fd);
    if (err) {
        close(fd);
        return err;
    }
    return fd;
}

WEFT_EXPORT int weft_fd_adopt(int fd)
{
    struct weft__fd *rec;
    int err = weft__fd_get(fd, &rec);
    if (err)
        return err;
    if (atomic_load_explicit(&rec->owned, memory_order_relaxed))
        return -EEXIST;
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0)
        return -errno;
    if (!(flags & O_NONBLOCK) && fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
        return -errno;
    /* The same file: a task parked on it as a borrowed fd looks again
     * (and parks again, now on an owned one). */
    return weft__fd_reset(fd, true, 0);
}

WEFT_EXPORT int weft_close(int fd)
{
    if (fd < 0)
        return -EBADF;
    weft__fd_reset(fd, false, -EBADF);
    /* EINTR: Linux has released the fd all the same. */
    if (close(fd) < 0 && errno != EINTR)
        return -errno;
    return 0;
}

/* ------------------------------------------------------------ waiting */

static ssize_t try_poll(int fd, void *arg)
{
    static const struct timespec now = {0, 0};
    int r = poll_fd(fd, *(unsigned *)arg, &now);
    return r == 0 ? WOULD_BLOCK : r;
}

static int wait_fd(int fd, unsigned events, uint64_t timeout_ns, bool timed)
{
    if (!events || (events & ~(unsigned)(WEFT_IN | WEFT_OUT)))
        return -EINVAL;
    struct weft__fd *rec;
    int err = weft__fd_get(fd, &rec);
    if (err)
        return err;
    bool nowait;
    uint64_t deadline = deadline_of(timeout_ns, timed, &nowait);
    return (int)io_loop(rec, fd, events, deadline, nowait, NOT_OWNED,
                        try_poll, &events);
}

WEFT_EXPORT int weft_wait_fd(int fd, unsigned events)
{
    return wait_fd(fd, events, 0, false);
}

WEFT_EXPORT int weft_wait_fd_for(int fd, unsigned events, uint64_t timeout_ns)
{
    return wait_fd(fd, events, timeout_ns, true);
}

/* --------------------------------------------------------------- read */

struct read_arg {
    void *buf;
    size_t len;
    enum mode mode;
};

static ssize_t try_read(int fd, void *arg)
{
    struct read_arg *a = arg;
    for (;;) {
        weft__direct_begin();
        ssize_t n = a->mode == AS_FILE ? read(fd, a->buf, a->len)
                                       : recv(fd, a->buf, a->len, MSG_DONTWAIT);
        weft__direct_end();
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        if (errno != ENOTSOCK || a->mode != PROBE)
            return failed();
        ssize_t err = not_a_socket(fd, &a->mode);
        if (err)
            return err;
    }
}

/*
 * The read shortcut of owned stream sockets (Tokio makes the same one): a
 * read that returns less than asked for has emptied the receive queue, so
 * the next read would only say EAGAIN; unless a readiness report came
 * since, park at once and save that system call (one in three of an echo
 * server's).  Why nothing is lost: the IN count is read before the short
 * read; data that arrives after that read makes the kernel queue an edge,
 * which the poller counts only after it has arrived, so a count that has
 * not moved means nothing new arrived before the count was looked at, and
 * the park (which checks the count again under the fd's lock) is woken by
 * the report of whatever comes later.  For TCP this holds even when a
 * signal cuts the read short: data the read left in the socket's backlog
 * is queued, with a report, as the read returns.  Not once an end of
 * stream or error was reported (fd.c's hup): that state stays, and a
 * short read that came with it already queued has seen its only report.
 * The count is read (acquire) before hup, so a report counted in it has
 * its hup seen.  After any wait, read: a thread's poll(2) moves no count.
 * A count that has not moved says nothing came that the poller has seen
 * (a busy worker's poller may not have looked), so a call that ends
 * without waiting (timeout 0, a cancelled task) reads before it fails.
 * Only stream sockets: a datagram read returns one datagram however many
 * are queued, and other files have other rules.  Not for borrowed fds:
 * their registrations count nothing.
 */
/* One try of read_owned's: its result, or WOULD_BLOCK; a short read of
 * a stream marks the fd drained at `mark`, anything else clears it. */
static ssize_t read_and_mark(struct weft__fd *rec, int fd,
                             struct read_arg *a, bool stream, uint64_t mark)
{
    ssize_t r = try_read(fd, a);
    if (r == WOULD_BLOCK)
        return r;
    if (stream)
        atomic_store_explicit(&rec->drained,
                              r > 0 && (size_t)r < a->len ? mark : 0,
                              memory_order_relaxed);
    return owned_failed(fd, r);
}

static ssize_t read_owned(struct weft__fd *rec, int fd, struct read_arg *a,
                          uint64_t deadline, bool nowait)
{
    int kind = owned_kind(fd, rec);
    if (kind < 0)
        return owned_failed(fd, kind);
    a->mode = kind != 3 ? AS_SOCKET : AS_FILE;
    bool stream = kind == 1 && a->len > 0;
    /* Only the first try may be skipped: after a wait, read (a thread's
     * poll(2) moves no count, and a wake says to look). */
    bool waited = false;
    for (;;) {
        uint64_t seq = weft__fd_seq(rec); /* before the try: fd.c */
        uint64_t mark = 1 + (uint32_t)seq; /* the IN count, never 0 */
        bool skip = stream && !waited &&
                    atomic_load_explicit(&rec->drained,
                                         memory_order_relaxed) == mark &&
                    !atomic_load_explicit(&rec->hup, memory_order_relaxed);
        if (!skip) {
            ssize_t r = read_and_mark(rec, fd, a, stream, mark);
            if (r != WOULD_BLOCK)
                return r;
        }
        int err = wait_ready(rec, fd, WEFT_IN, seq, deadline, nowait);
        if (err) {
            /* The count says nothing came that the poller has seen, not
             * that nothing came: a call that may not wait (timeout 0, a
             * cancelled task) or that could not, reads before it fails
             * (weft/weft.h: what can complete at once does). */
            if (skip) {
                ssize_t r = read_and_mark(rec, fd, a, stream, mark);
                if (r != WOULD_BLOCK)
                    return r;
            }
            return err;
        }
        waited = true;
    }
}

static ssize_t do_read(int fd, void *buf, size_t len, uint64_t timeout_ns,
                       bool timed)
{
    struct weft__fd *rec;
    int err = weft__fd_get(fd, &rec);
    if (err)
        return err;
    bool nowait;
    uint64_t deadline = deadline_of(timeout_ns, timed, &nowait);
    struct read_arg a = {buf, len, PROBE};
    if (atomic_load_explicit(&rec->owned, memory_order_relaxed))
        return read_owned(rec, fd, &a, deadline, nowait);
    return io_loop(rec, fd, WEFT_IN, deadline, nowait, NOT_OWNED, try_read,
                   &a);
}

WEFT_EXPORT ssize_t weft_read(int fd, void *buf, size_t len)
{
    return do_read(fd, buf, len, 0, false);
}

WEFT_EXPORT ssize_t weft_read_for(int fd, void *buf, size_t len,
                                  uint64_t timeout_ns)
{
    return do_read(fd, buf, len, timeout_ns, true);
}

/* -------------------------------------------------------------- write */

struct write_arg {
    const char *buf;
    size_t len, done;
    enum mode mode;
    bool some;   /* weft_write_some: done after the first bytes that go */
};

static ssize_t try_write(int fd, void *arg)
{
    struct write_arg *a = arg;
    while (a->done < a->len) {
        const char *p = a->buf + a->done;
        size_t n = a->len - a->done;
        weft__direct_begin();
        ssize_t w = a->mode == AS_FILE ? write(fd, p, n)
                                       : send(fd, p, n, MSG_DONTWAIT);
        weft__direct_end();
        if (w >= 0) {
            a->done += (size_t)w;
            if (a->some)
                return (ssize_t)a->done;
        } else if (errno == ENOTSOCK && a->mode == PROBE) {
            ssize_t err = not_a_socket(fd, &a->mode);
            if (err)
                return err;
        } else if (errno != EINTR) {
            return failed();
        }
    }
    return (ssize_t)a->len;
}

/* Write all of buf, or (some) at least its first byte: weft_write_some
 * fails only with nothing written, so that its caller knows what went. */
static ssize_t do_write(int fd, const void *buf, size_t len,
                        uint64_t timeout_ns, bool timed, bool some)
{
    if (len > SSIZE_MAX)
        return -EINVAL;
    struct weft__fd *rec;
    int err = weft__fd_get(fd, &rec);
    if (err)
        return err;
    bool nowait;
    uint64_t deadline = deadline_of(timeout_ns, timed, &nowait);
    struct write_arg a = {buf, len, 0, PROBE, some};
    bool owned = atomic_load_explicit(&rec->owned, memory_order_relaxed);
    if (owned) {
        int kind = owned_kind(fd, rec);
        if (kind < 0)
            return owned_failed(fd, kind);
        a.mode = kind != 3 ? AS_SOCKET : AS_FILE;
    }
    return io_loop(rec, fd, WEFT_OUT, deadline, nowait,
                   owned ? OWNED_SOCKET : NOT_OWNED, try_write, &a);
}

WEFT_EXPORT ssize_t weft_write(int fd, const void *buf, size_t len)
{
    return do_write(fd, buf, len, 0, false, false);
}

WEFT_EXPORT ssize_t weft_write_for(int fd, const void *buf, size_t len,
                                   uint64_t timeout_ns)
{
    return do_write(fd, buf, len, timeout_ns, true, false);
}

WEFT_EXPORT ssize_t weft_write_some(int fd, const void *buf, size_t len)
{
    return do_write(fd, buf, len, 0, false, true);
}

WEFT_EXPORT ssize_t weft_write_some_for(int fd, const void *buf, size_t len,
                                        uint64_t timeout_ns)
{
    return do_write(fd, buf, len, timeout_ns, true, true);
}

/* ------------------------------------------------------------- accept */

struct accept_arg {
    struct sockaddr *addr;
    socklen_t *len;
};

static ssize_t try_accept(int lfd, void *arg)
{
    struct accept_arg *a = arg;
    for (;;) {
        weft__direct_begin();
        int fd = accept4(lfd, a->addr, a->len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        weft__direct_end();
        if (fd >= 0)
            return fd;
        /* A connection reset before we took it: take the next one. */
        if (errno != EINTR && errno != ECONNABORTED)
            return failed();
    }
}

/* A borrowed fd that the call must not block on: 0 if it is non-blocking,
 * else -EINVAL (or -EBADF). */
static int borrowed_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0)
        return -errno;
    return flags & O_NONBLOCK ? 0 : -EINVAL;
}

static int do_accept(int lfd, struct sockaddr *addr, socklen_t *len,
                     uint64_t timeout_ns, bool timed)
{
    struct weft__fd *rec;
    int err = weft__fd_get(lfd, &rec);
    if (err)
        return err;
    bool owned = atomic_load_explicit(&rec->owned, memory_order_relaxed);
    if (!owned && (err = borrowed_nonblocking(lfd)))
        return err;
    bool nowait;
    uint64_t deadline = deadline_of(timeout_ns, timed, &nowait);
    struct accept_arg a = {addr, len};
    ssize_t fd =
        io_loop(rec, lfd, WEFT_IN, deadline, nowait,
                owned ? OWNED_EBADF : NOT_OWNED, try_accept, &a);
    if (fd < 0)
        return (int)fd;
    err = take_ownership((int)fd);
    if (err) {
        close((int)fd);
        return err;
    }
    return (int)fd;
}

WEFT_EXPORT int weft_accept(int lfd, struct sockaddr *addr, socklen_t *len)
{
    return do_accept(lfd, addr, len, 0, false);
}

WEFT_EXPORT int weft_accept_for(int lfd, struct sockaddr *addr,
                                socklen_t *len, uint64_t timeout_ns)
{
    return do_accept(lfd, addr, len, timeout_ns, true);
}

/* ------------------------------------------------------------ connect */

struct connect_arg {
    const struct sockaddr *addr;
    socklen_t len;
    bool started;
};

static ssize_t try_connect(int fd, void *arg)
{
    struct connect_arg *a = arg;
    if (!a->started) {
        /* EISCONN: connected, by a handshake an earlier call started and
         * left running (its timeout or a cancel ended it: weft/io.h), as
         * Go's connect takes it. */
        weft__direct_begin();
        int r = connect(fd, a->addr, a->len);
        weft__direct_end();
        if (r == 0 || errno == EISCONN)
            return 0;
        if (errno != EINPROGRESS && errno != EINTR && errno != EALREADY)
            return -errno;
        a->started = true;
        return WOULD_BLOCK;
    }
    /* Writable: the handshake ended, unless the wake was early.  SO_ERROR
     * is 0 both when it succeeded and while it goes on; getpeername tells
     * them apart. */
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
        return -errno;
    if (soerr)
        return -soerr;
    struct sockaddr_storage peer;
    socklen_t pl = sizeof peer;
    if (getpeername(fd, (struct sockaddr *)&peer, &pl) == 0)
        return 0;
    return errno == ENOTCONN ? WOULD_BLOCK : -errno;
}

static int do_connect(int fd, const struct sockaddr *addr, socklen_t len,
                      uint64_t timeout_ns, bool timed)
{
    struct weft__fd *rec;
    int err = weft__fd_get(fd, &rec);
    if (err)
        return err;
    bool owned = atomic_load_explicit(&rec->owned, memory_order_relaxed);
    if (!owned && (err = borrowed_nonblocking(fd)))
        return err;
    bool nowait;
    uint64_t deadline = deadline_of(timeout_ns, timed, &nowait);
    struct connect_arg a = {addr, len, false};
    return (int)io_loop(rec, fd, WEFT_OUT, deadline, nowait,
                        owned ? OWNED_EBADF : NOT_OWNED, try_connect, &a);
}

WEFT_EXPORT int weft_connect(int fd, const struct sockaddr *addr,
                             socklen_t len)
{
    return do_connect(fd, addr, len, 0, false);
}

WEFT_EXPORT int weft_connect_for(int fd, const struct sockaddr *addr,
                                 socklen_t len, uint64_t timeout_ns)
{
    return do_connect(fd, addr, len, timeout_ns, true);
}

/* ------------------------------------------------- the interposition library */

/*
 * For libweft-hook (src/hook/, io/hook.h): park the calling pool task
 * until fd may be ready for `events`, at most timeout_ns (UINT64_MAX: no
 * limit).  The hooked call has just tried and would block, so unlike
 * weft_wait_fd this makes no readiness check of its own before or after
 * the park (two ppoll calls per wait): a borrowed fd's registration is
 * level-triggered and reports readiness that is already there at once.
 * Returns the ready events, 0 (an owned fd moved on: try again), or the
 * codes of weft_wait_fd_for.
 */
WEFT_EXPORT int weft__hook_wait_fd(int fd, unsigned events,
                                   uint64_t timeout_ns)
{
    struct weft__fd *rec;
    int err = weft__fd_get(fd, &rec);
    if (err)
        return err;
    if (timeout_ns == 0)
        return -ETIMEDOUT;
    uint64_t deadline =
        timeout_ns == UINT64_MAX ? 0 : weft__deadline_after(timeout_ns);
    return weft__fd_park(rec, fd, events, weft__fd_seq(rec), deadline);
}
