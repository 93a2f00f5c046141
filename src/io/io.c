/*
 * io.c — weft_wait_fd, weft_read, weft_write, weft_accept, weft_connect and
 * weft_close (weft/io.h).  Each call tries its system call on the
 * non-blocking fd; when that would block, it waits for readiness and tries
 * again.  A task on a pool parks on the fd's netpoller (netpoll.c: the
 * readiness count read before each try is what keeps a report that comes
 * between the try and the park).  Anything else blocks its thread in
 * poll(2), which is level-triggered and needs no such care: there is no
 * scheduler under a plain thread to hand the wait to, and a task that
 * sync_wait runs without a pool has only its thread to run on.
 */
#include <weft/io.h>

#include "netpoll.h"
#include "runtime.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

/* A try's "would block" (not an errno: connect(2)'s EAGAIN is an error). */
#define WOULD_BLOCK ((ssize_t)INT32_MIN)

static uint64_t deadline_of(int64_t timeout_ns)
{
    return timeout_ns < 0 ? 0 : weft__deadline_after((uint64_t)timeout_ns);
}

/* poll(2) fd once for `events`, waiting up to *ts (NULL: no limit).
 * Returns the ready events, 0 on timeout, or -errno. */
static int poll_fd(int fd, unsigned events, const struct timespec *ts)
{
    struct pollfd pfd = {
        .fd = fd,
        .events = (short)(events | (events & WEFT_IN ? POLLRDHUP : 0)),
    };
    int r;
    while ((r = ppoll(&pfd, 1, ts, NULL)) < 0 && errno == EINTR)
        ;
    if (r < 0)
        return -errno;
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
            uint64_t now = weft__now_ns();
            if (now >= deadline)
                return -ETIMEDOUT;
            ts.tv_sec = (time_t)((deadline - now) / 1000000000u);
            ts.tv_nsec = (long)((deadline - now) % 1000000000u);
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
                      uint64_t seq, uint64_t deadline)
{
    if (deadline && weft__now_ns() >= deadline)
        return -ETIMEDOUT;
    struct weft_task *self = weft__task_current();
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

static ssize_t io_loop(struct weft__fd *rec, int fd, unsigned events,
                       int64_t timeout_ns, try_fn try_once, void *arg)
{
    uint64_t deadline = deadline_of(timeout_ns);
    for (;;) {
        uint64_t seq = weft__fd_seq(rec); /* before the try: netpoll.c */
        ssize_t r = try_once(fd, arg);
        if (r != WOULD_BLOCK)
            return r;
        int err = wait_ready(rec, fd, events, seq, deadline);
        if (err)
            return err;
    }
}

/* A system call's failure as a try's result. */
static ssize_t failed(void)
{
    return errno == EAGAIN || errno == EWOULDBLOCK ? WOULD_BLOCK : -errno;
}

/* fd's record, with O_NONBLOCK set on the fd (once: the record
 * remembers). */
static int open_fd(int fd, struct weft__fd **rec)
{
    int err = weft__fd_get(fd, rec);
    if (err)
        return err;
    if (atomic_load_explicit(&(*rec)->nonblock, memory_order_relaxed))
        return 0;
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0)
        return -errno;
    if (!(flags & O_NONBLOCK) && fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
        return -errno;
    atomic_store_explicit(&(*rec)->nonblock, true, memory_order_relaxed);
    return 0;
}

/* ------------------------------------------------------------ the calls */

static ssize_t try_poll(int fd, void *arg)
{
    static const struct timespec now = {0, 0};
    int r = poll_fd(fd, *(unsigned *)arg, &now);
    return r == 0 ? WOULD_BLOCK : r;
}

WEFT_API int weft_wait_fd(int fd, unsigned events, int64_t timeout_ns)
{
    if (!events || (events & ~(unsigned)(WEFT_IN | WEFT_OUT)))
        return -EINVAL;
    struct weft__fd *rec;
    int err = weft__fd_get(fd, &rec);
    if (err)
        return err;
    return (int)io_loop(rec, fd, events, timeout_ns, try_poll, &events);
}

struct read_arg {
    void *buf;
    size_t len;
};

static ssize_t try_read(int fd, void *arg)
{
    struct read_arg *a = arg;
    ssize_t n;
    while ((n = read(fd, a->buf, a->len)) < 0 && errno == EINTR)
        ;
    return n >= 0 ? n : failed();
}

/*
 * The read shortcut (Tokio makes the same one): a read of a stream socket
 * that returns less than asked for has emptied its receive queue, so the
 * next read would only say EAGAIN; unless a readiness report came since,
 * park at once and save that system call (one in three of an echo
 * server's).  Why nothing is lost: the IN count is read before the short
 * read; data that arrives after that read makes the kernel queue an edge,
 * which the poller counts only after it has arrived, so a count that has
 * not moved means nothing new arrived before the count was looked at, and
 * the park (which checks the count again under the fd's lock) is woken by
 * the report of whatever comes later.  For TCP this holds even when a
 * signal cuts the read short: data the read left in the socket's backlog
 * is queued, with a report, as the read returns.  Not once an end of
 * stream or error was reported (netpoll.c's hup): that state stays, and a
 * short read that came with it already queued has seen its only report.
 * The count is read (acquire) before hup, so a report counted in it has
 * its hup seen.  After any wait, read: a thread's poll(2) moves no
 * count.  Only stream sockets: a
 * datagram read returns one datagram however many are queued, and other
 * files have other rules.
 */
static bool is_stream(int fd, struct weft__fd *rec)
{
    uint8_t kind = atomic_load_explicit(&rec->kind, memory_order_relaxed);
    if (!kind) {
        int type = 0;
        socklen_t size = sizeof type;
        kind = getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) == 0 &&
                       type == SOCK_STREAM
                   ? 1
                   : 2;
        atomic_store_explicit(&rec->kind, kind, memory_order_relaxed);
    }
    return kind == 1;
}

WEFT_API ssize_t weft_read(int fd, void *buf, size_t len, int64_t timeout_ns)
{
    struct weft__fd *rec;
    int err = open_fd(fd, &rec);
    if (err)
        return err;
    struct read_arg a = {buf, len};
    bool stream = len > 0 && is_stream(fd, rec);
    uint64_t deadline = deadline_of(timeout_ns);
    /* Only the first try may be skipped: after a wait, read (a thread's
     * poll(2) moves no count, and a wake says to look). */
    bool waited = false;
    for (;;) {
        uint64_t seq = weft__fd_seq(rec); /* before the try: netpoll.c */
        uint64_t mark = 1 + (uint32_t)seq; /* the IN count, never 0 */
        if (!stream || waited ||
            atomic_load_explicit(&rec->drained, memory_order_relaxed) != mark ||
            atomic_load_explicit(&rec->hup, memory_order_relaxed)) {
            ssize_t r = try_read(fd, &a);
            if (r != WOULD_BLOCK) {
                if (stream)
                    atomic_store_explicit(
                        &rec->drained, r > 0 && (size_t)r < len ? mark : 0,
                        memory_order_relaxed);
                return r;
            }
        }
        err = wait_ready(rec, fd, WEFT_IN, seq, deadline);
        if (err)
            return err;
        waited = true;
    }
}

struct write_arg {
    const char *buf;
    size_t len, done;
};

static ssize_t try_write(int fd, void *arg)
{
    struct write_arg *a = arg;
    while (a->done < a->len) {
        ssize_t n = write(fd, a->buf + a->done, a->len - a->done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return failed();
        }
        a->done += (size_t)n;
    }
    return (ssize_t)a->len;
}

WEFT_API ssize_t weft_write(int fd, const void *buf, size_t len,
                            int64_t timeout_ns)
{
    if (len > SSIZE_MAX)
        return -EINVAL;
    struct weft__fd *rec;
    int err = open_fd(fd, &rec);
    if (err)
        return err;
    struct write_arg a = {buf, len, 0};
    return io_loop(rec, fd, WEFT_OUT, timeout_ns, try_write, &a);
}

struct accept_arg {
    struct sockaddr *addr;
    socklen_t *len;
};

static ssize_t try_accept(int lfd, void *arg)
{
    struct accept_arg *a = arg;
    for (;;) {
        int fd = accept4(lfd, a->addr, a->len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0)
            return fd;
        /* A connection reset before we took it: take the next one. */
        if (errno != EINTR && errno != ECONNABORTED)
            return failed();
    }
}

WEFT_API int weft_accept(int lfd, struct sockaddr *addr, socklen_t *len,
                         int64_t timeout_ns)
{
    struct weft__fd *rec;
    int err = open_fd(lfd, &rec);
    if (err)
        return err;
    struct accept_arg a = {addr, len};
    ssize_t fd = io_loop(rec, lfd, WEFT_IN, timeout_ns, try_accept, &a);
    if (fd >= 0)
        weft__fd_forget((int)fd, true); /* a new file under that number */
    return (int)fd;
}

struct connect_arg {
    const struct sockaddr *addr;
    socklen_t len;
    bool started;
};

static ssize_t try_connect(int fd, void *arg)
{
    struct connect_arg *a = arg;
    if (!a->started) {
        if (connect(fd, a->addr, a->len) == 0)
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

WEFT_API int weft_connect(int fd, const struct sockaddr *addr, socklen_t len,
                          int64_t timeout_ns)
{
    struct weft__fd *rec;
    int err = weft__fd_get(fd, &rec);
    if (err)
        return err;
    /* A socket is connected once, just after socket(2): whatever weft
     * remembers of the number is about an older file. */
    weft__fd_forget(fd, false);
    err = open_fd(fd, &rec);
    if (err)
        return err;
    struct connect_arg a = {addr, len, false};
    return (int)io_loop(rec, fd, WEFT_OUT, timeout_ns, try_connect, &a);
}

WEFT_API int weft_close(int fd)
{
    if (fd < 0)
        return -EBADF;
    weft__fd_forget(fd, false);
    /* EINTR: Linux has released the fd all the same. */
    if (close(fd) < 0 && errno != EINTR)
        return -errno;
    return 0;
}
