/*
 * hook/io.c — read, write and the socket family: recv, recvfrom,
 * recvmsg, send, sendto, sendmsg, readv, writev, and glibc's checked
 * variants of the reads (_FORTIFY_SOURCE turns a read into __read_chk).
 *
 * On a socket each is a loop of MSG_DONTWAIT tries and parks
 * (hook/wait.h), which leaves the socket's own flags alone.  Blocking
 * semantics are kept where MSG_DONTWAIT would change them: a blocking
 * send returns only once everything is queued (or at its timeout, a
 * cancel or an error, with the count sent so far if any), so the hooked
 * one loops over partial sends; recv, recvfrom and recvmsg with
 * MSG_WAITALL on a stream socket likewise.  read,
 * write, readv and writev on a socket are recv, send, recvmsg and sendmsg
 * without flags; on anything else (hook/fdkind.h) they are libc's.
 */
#include "hook/fdkind.h"
#include "hook/real.h"
#include "hook/wait.h"

#include <weft/io.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

void __chk_fail(void) __attribute__((noreturn));

/* One socket operation, tried without blocking (MSG_DONTWAIT in flags)
 * or, as the fallback, with the caller's own flags. */
struct sock_op {
    int kind;                    /* OP_RECV... */
    void *buf;
    size_t len;
    int flags;
    struct sockaddr *from;       /* recvfrom */
    socklen_t *fromlen;
    const struct sockaddr *to;   /* sendto */
    socklen_t tolen;
    struct msghdr *msg;          /* recvmsg, sendmsg */
    /* msg_loop's receive: what the first receive that moved bytes said */
    bool have_first;
    size_t first_controllen;
    int first_flags;
};

enum { OP_RECV, OP_RECVFROM, OP_RECVMSG, OP_SEND, OP_SENDTO, OP_SENDMSG };

static ssize_t op_call(int fd, const struct sock_op *op, int flags)
{
    switch (op->kind) {
    case OP_RECV:
        return REAL(recv)(fd, op->buf, op->len, flags);
    case OP_RECVFROM:
        return REAL(recvfrom)(fd, op->buf, op->len, flags, op->from,
                              op->fromlen);
    case OP_RECVMSG:
        return REAL(recvmsg)(fd, op->msg, flags);
    case OP_SEND:
        return REAL(send)(fd, op->buf, op->len, flags);
    case OP_SENDTO:
        return REAL(sendto)(fd, op->buf, op->len, flags, op->to, op->tolen);
    default:
        return REAL(sendmsg)(fd, op->msg, flags);
    }
}

static bool op_sends(const struct sock_op *op)
{
    return op->kind >= OP_SEND;
}

/* Skip n bytes of the buffer (or of the iovecs: msg_iov is the caller's
 * copy, hook_sendmsg's) after a partial transfer. */
static void op_advance(struct sock_op *op, size_t n)
{
    if (op->kind != OP_RECVMSG && op->kind != OP_SENDMSG) {
        op->buf = (char *)op->buf + n;
        op->len -= n;
        return;
    }
    struct msghdr *m = op->msg;
    if (n && op->kind == OP_SENDMSG) {
        /* The kernel sent the ancillary data (SCM_RIGHTS...) with the
         * first bytes: the rest goes without it. */
        m->msg_control = NULL;
        m->msg_controllen = 0;
    }
    if (n && op->kind == OP_RECVMSG && !op->have_first) {
        /* The ancillary data came with the first bytes (msg_loop):
         * the rest is read with no buffer for more, which would write
         * over it. */
        op->have_first = true;
        op->first_controllen = m->msg_controllen;
        op->first_flags = m->msg_flags;
        m->msg_control = NULL;
        m->msg_controllen = 0;
    }
    while (n && m->msg_iovlen) {
        struct iovec *v = m->msg_iov;
        if (n < v->iov_len) {
            v->iov_base = (char *)v->iov_base + n;
            v->iov_len -= n;
            return;
        }
        n -= v->iov_len;
        m->msg_iov++;
        m->msg_iovlen--;
    }
}

static size_t op_total(const struct sock_op *op)
{
    if (op->kind != OP_RECVMSG && op->kind != OP_SENDMSG)
        return op->len;
    size_t t = 0;
    for (size_t i = 0; i < op->msg->msg_iovlen; i++)
        t += op->msg->msg_iov[i].iov_len;
    return t;
}

/* Whether a receive on fd should park before its first try: a blocking
 * socket (as kept: hook/fdkind.h) whose last receive had to park. */
static bool parks_first(int fd)
{
    uint32_t info = fdinfo_get(fd);
    return (info & (FD_KIND | FD_WAITS | FD_MODE_KNOWN | FD_NONBLOCK)) ==
               (FD_SOCKET | FD_WAITS | FD_MODE_KNOWN) &&
           info >> FD_GEN_SHIFT == mode_gen();
}

/* Note how a receive went: it had to park (waits), or it filled the
 * buffer (a stream: try first next time). */
static void note_receive(int fd, bool waits)
{
    uint32_t info = fdinfo_get(fd);
    uint32_t want = waits ? info | FD_WAITS : info & ~(uint32_t)FD_WAITS;
    if (want != info && (info & FD_KIND) == FD_SOCKET)
        fdinfo_set(fd, want);
}

/* The end of a call that fails after moving some bytes: their count, with
 * errno as on entry (a call that succeeds leaves it alone); -1 with the
 * failure's errno if none moved. */
static ssize_t partial(size_t done, int entry_errno)
{
    if (!done)
        return -1;
    errno = entry_errno;
    return (ssize_t)done;
}

/*
 * SO_RCVLOWAT above 1: a blocking receive waits until that many bytes
 * are there (or the call's length), which neither a try (it returns what
 * is there) nor every socket's readiness (a unix socket's ignores the
 * mark) can tell.  Such a receive is libc's own blocking call: it blocks
 * the worker (the monitor covers it) but answers exactly.  Asked of the
 * socket only once the program has set the option above 1 through the
 * hooked setsockopt (weft_hook_rcvlowat_seen): a getsockopt per receive
 * then, none before.  errno is left as it was.
 */
static bool waits_for_mark(int fd)
{
    if (!atomic_load_explicit(&weft_hook_rcvlowat_seen, memory_order_acquire))
        return false;
    int entry_errno = errno, mark = 1;
    socklen_t len = sizeof mark;
    bool above = getsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &mark, &len) == 0 &&
                 mark > 1;
    errno = entry_errno;
    return above;
}

/*
 * The loop.  `whole`: keep going after a partial transfer until `total`
 * bytes moved (a blocking send; a recv with MSG_WAITALL, which also ends
 * at end of file).  `tried`: the caller made the first try, which would
 * have blocked (so the loop parks first).  A failure after some bytes moved returns the count,
 * as the kernel's blocking call does.  errno: the real call's; on success
 * what it was on entry (the parks in between may have changed it).
 */
static ssize_t sock_loop(int fd, struct sock_op *op, bool whole,
                         bool tried)
{
    if (!op_sends(op) && waits_for_mark(fd))
        return op_call(fd, op, op->flags); /* blocks: see waits_for_mark */
    int entry_errno = errno;
    struct hook_call c = {0};
    unsigned events = op_sends(op) ? WEFT_OUT : WEFT_IN;
    int timeout_opt = op_sends(op) ? SO_SNDTIMEO : SO_RCVTIMEO;
    size_t total = whole ? op_total(op) : 0;
    size_t done = 0;
    bool parked = false;
    for (;;) {
        /* `tried`: the caller's own first try would have blocked. */
        ssize_t r = tried ? -1 : op_call(fd, op, op->flags | MSG_DONTWAIT);
        if (tried)
            errno = EAGAIN;
        tried = false;
        if (r >= 0) {
            done += (size_t)r;
            if (!op_sends(op) && parked && (op->kind == OP_RECVMSG
                                                ? false
                                                : (size_t)r == op->len))
                note_receive(fd, false);
            if (!whole || done >= total || (r == 0 && !op_sends(op))) {
                errno = entry_errno;
                return (ssize_t)done;
            }
            op_advance(op, (size_t)r);
            continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return partial(done, entry_errno);
        int err;
        switch (hook_wait(fd, events, timeout_opt, &c)) {
        case HOOK_RETRY:
            if (!op_sends(op) && !parked)
                note_receive(fd, true);
            parked = true;
            errno = entry_errno;
            continue;
        case HOOK_EAGAIN:
            err = EAGAIN;
            break;
        case HOOK_CANCELED:
            err = ECANCELED;
            break;
        default:
            errno = entry_errno;
            r = op_call(fd, op, op->flags);
            if (r >= 0)
                return (ssize_t)(done + (size_t)r);
            return partial(done, entry_errno);
        }
        errno = err;
        return partial(done, entry_errno);
    }
}

/* Whether a call with these flags may block and is ours to park. */
static inline bool hook_flags(int flags)
{
    return !(flags & MSG_DONTWAIT) && weft__hook_here();
}

/* Whether fd is a stream socket (one getsockopt; errno kept). */
static bool stream_socket(int fd)
{
    int entry_errno = errno;
    int type = 0;
    socklen_t len = sizeof type;
    bool stream = getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
                  type == SOCK_STREAM;
    errno = entry_errno;
    return stream;
}

/* Whether a receive waits for all it asked: MSG_WAITALL, on a stream
 * (the kernel ignores it for datagrams).  One getsockopt, for the rare
 * receive that asks. */
static bool wait_all(int fd, int flags)
{
    if (!(flags & MSG_WAITALL))
        return false;
    return stream_socket(fd);
}

/* A read or readv of nothing from a socket: Linux's read(2) returns 0
 * at once for a count of 0 (sock_read_iter, before the socket is asked),
 * so libc's call, which cannot block, answers; the receive the hook makes
 * of it would say EAGAIN while nothing is queued and park until something
 * came.  (recv and recvmsg of nothing do wait for data on Linux, and park
 * as any other.) */
static inline bool reads_nothing(size_t len)
{
    return len == 0;
}

static size_t iov_total(const struct iovec *iov, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += iov[i].iov_len;
    return total;
}

/*
 * A receive with MSG_PEEK | MSG_WAITALL from a stream: Linux waits until
 * len bytes are queued and copies them, leaving them queued.  The loop
 * for MSG_WAITALL (sock_loop's `whole`) advanced past each part, but a
 * peek consumes nothing, so it copied the queue's head again and again
 * ("abcabcabca" for "abcdefghij").  Here: peek; while nothing is queued,
 * park as any receive; while part of it is, nap and peek again (20 us,
 * doubling to 1 ms: no readiness says that more came), until all of it
 * is, the stream ends, the fd is non-blocking, or the task is cancelled
 * (then what is queued is the answer, as a timeout's would be).
 */
static ssize_t peek_all(int fd, void *buf, size_t len, int flags,
                        struct sockaddr *from, socklen_t *fromlen)
{
    int entry_errno = errno;
    struct hook_call c = {0};
    uint64_t nap = 20000;
    for (;;) {
        ssize_t r = REAL(recvfrom)(fd, buf, len, flags | MSG_DONTWAIT, from,
                                   fromlen);
        if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return r;
        if (r == 0 || (r > 0 && (size_t)r >= len)) {
            errno = entry_errno;
            return r;
        }
        if (r < 0) {
            switch (hook_wait(fd, WEFT_IN, SO_RCVTIMEO, &c)) {
            case HOOK_RETRY:
                errno = entry_errno;
                continue;
            case HOOK_EAGAIN:
                errno = EAGAIN;
                return -1;
            case HOOK_CANCELED:
                errno = ECANCELED;
                return -1;
            default:
                errno = entry_errno;
                return REAL(recvfrom)(fd, buf, len, flags, from, fromlen);
            }
        }
        int fl = REAL(fcntl)(fd, F_GETFL);
        if ((fl >= 0 && (fl & O_NONBLOCK)) ||
            (c.deadline && hook_now() >= c.deadline) ||
            hook_sleep(nap) == -ECANCELED) {
            errno = entry_errno;
            return r;
        }
        if (nap < 1000000)
            nap *= 2;
    }
}

HOOK_API ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    if (!hook_flags(flags))
        return REAL(recv)(fd, buf, len, flags);
    bool all = wait_all(fd, flags);
    if (all && (flags & MSG_PEEK))
        return peek_all(fd, buf, len, flags, NULL, NULL);
    struct sock_op op = {.kind = OP_RECV, .buf = buf, .len = len,
                         .flags = flags};
    return sock_loop(fd, &op, all, parks_first(fd));
}

HOOK_API ssize_t recvfrom(int fd, void *buf, size_t len, int flags,
                          struct sockaddr *from, socklen_t *fromlen)
{
    if (!hook_flags(flags))
        return REAL(recvfrom)(fd, buf, len, flags, from, fromlen);
    bool all = wait_all(fd, flags);
    if (all && (flags & MSG_PEEK))
        return peek_all(fd, buf, len, flags, from, fromlen);
    struct sock_op op = {.kind = OP_RECVFROM, .buf = buf, .len = len,
                         .flags = flags, .from = from, .fromlen = fromlen};
    return sock_loop(fd, &op, all, false);
}

/* fds received with SCM_RIGHTS are new numbers, perhaps of files the
 * hook knew under that number before: what it knew goes. */
static void received_fds(const struct msghdr *msg, ssize_t r)
{
    if (r < 0 || !msg->msg_control || !msg->msg_controllen)
        return;
    for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)msg); c;
         c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        const unsigned char *p = CMSG_DATA(c);
        for (size_t i = 0; i < n; i++) {
            int nfd;
            memcpy(&nfd, p + i * sizeof nfd, sizeof nfd);
            fdkind_set(nfd, FD_UNKNOWN);
        }
    }
}

static ssize_t msg_loop(int fd, const struct msghdr *msg, int flags,
                        struct msghdr *back);

HOOK_API ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    ssize_t r;
    if (!hook_flags(flags)) {
        r = REAL(recvmsg)(fd, msg, flags);
    } else if (!(flags & MSG_PEEK) && wait_all(fd, flags)) {
        /* (A peek of all of it gets what one peek finds: msg_loop, like
         * sock_loop, advances past what a peek leaves queued.) */
        r = msg_loop(fd, msg, flags, msg);
    } else {
        struct sock_op op = {.kind = OP_RECVMSG, .msg = msg, .flags = flags};
        r = sock_loop(fd, &op, false, false);
    }
    received_fds(msg, r);
    return r;
}

HOOK_API ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    if (!hook_flags(flags))
        return REAL(send)(fd, buf, len, flags);
    struct sock_op op = {.kind = OP_SEND, .buf = (void *)buf, .len = len,
                         .flags = flags};
    return sock_loop(fd, &op, true, false);
}

HOOK_API ssize_t sendto(int fd, const void *buf, size_t len, int flags,
                        const struct sockaddr *to, socklen_t tolen)
{
    if (!hook_flags(flags))
        return REAL(sendto)(fd, buf, len, flags, to, tolen);
    struct sock_op op = {.kind = OP_SENDTO, .buf = (void *)buf, .len = len,
                         .flags = flags, .to = to, .tolen = tolen};
    return sock_loop(fd, &op, true, false);
}

/* sendmsg, and recvmsg with MSG_WAITALL on a stream: the loop advances
 * through the iovecs, so it works on a copy of them (the caller's stay as
 * they were; writev makes its own copy).  A receive (`back`: the
 * caller's msghdr, for its results) gets its ancillary data with the
 * first bytes, as the kernel's own loop gives it: what the
 * caller's msghdr gets back (the control length, the flags) is that of
 * the first receive that moved bytes, or of the last one if none did. */
#define IOV_ON_STACK 64

static ssize_t msg_loop(int fd, const struct msghdr *msg, int flags,
                        struct msghdr *back)
{
    struct iovec local[IOV_ON_STACK];
    struct iovec *iov = local;
    size_t n = msg->msg_iovlen;
    if (n > IOV_ON_STACK) {
        iov = malloc(n * sizeof *iov);
        if (!iov) /* libc's call then: it blocks the worker */
            return back ? REAL(recvmsg)(fd, back, flags)
                        : REAL(sendmsg)(fd, msg, flags);
    }
    memcpy(iov, msg->msg_iov, n * sizeof *iov);
    struct msghdr m = *msg;
    m.msg_iov = iov;
    struct sock_op op = {.kind = back ? OP_RECVMSG : OP_SENDMSG, .msg = &m,
                         .flags = flags};
    ssize_t r = sock_loop(fd, &op, true, false);
    int e = errno;
    if (back) {
        back->msg_namelen = m.msg_namelen;
        back->msg_controllen = op.have_first ? op.first_controllen
                                             : m.msg_controllen;
        back->msg_flags = op.have_first ? op.first_flags : m.msg_flags;
    }
    if (iov != local)
        free(iov);
    errno = e;
    return r;
}

HOOK_API ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    if (!hook_flags(flags))
        return REAL(sendmsg)(fd, msg, flags);
    return msg_loop(fd, msg, flags, NULL);
}

/* ---------------------------------------------------- read, write */

/* For read and write: whether fd should go the socket way; false (libc's
 * call) once it is known not to be a socket. */
static inline bool maybe_socket(int fd)
{
    return fdkind_get(fd) != FD_OTHER && weft__hook_here();
}

/* A try's ENOTSOCK: fd is not a socket; mark it, and make libc's call. */
static bool not_socket(int fd, ssize_t r)
{
    if (r < 0 && errno == ENOTSOCK) {
        fdkind_set(fd, FD_OTHER);
        return true;
    }
    return false;
}

HOOK_API ssize_t read(int fd, void *buf, size_t len)
{
    if (!maybe_socket(fd) || waits_for_mark(fd) || reads_nothing(len))
        return REAL(read)(fd, buf, len);
    if (parks_first(fd)) {
        struct sock_op op = {.kind = OP_RECV, .buf = buf, .len = len};
        return sock_loop(fd, &op, false, true);
    }
    int entry_errno = errno;
    /* The first try here, so that a non-socket costs one failed call. */
    ssize_t r = REAL(recv)(fd, buf, len, MSG_DONTWAIT);
    if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        if (not_socket(fd, r)) {
            errno = entry_errno;
            return REAL(read)(fd, buf, len);
        }
        return r;
    }
    errno = entry_errno;
    struct sock_op op = {.kind = OP_RECV, .buf = buf, .len = len};
    return sock_loop(fd, &op, false, true);
}

HOOK_API ssize_t write(int fd, const void *buf, size_t len)
{
    if (!maybe_socket(fd))
        return REAL(write)(fd, buf, len);
    int entry_errno = errno;
    ssize_t r = REAL(send)(fd, buf, len, MSG_DONTWAIT);
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        if (not_socket(fd, r)) {
            errno = entry_errno;
            return REAL(write)(fd, buf, len);
        }
        return r;
    }
    if (r >= 0 && (size_t)r == len)
        return r;
    errno = entry_errno;
    size_t done = r > 0 ? (size_t)r : 0;
    struct sock_op op = {.kind = OP_SEND, .buf = (char *)buf + done,
                         .len = len - done};
    /* A partial send or EAGAIN: the buffer is full, so park first. */
    r = sock_loop(fd, &op, true, true);
    if (r < 0 && done) {
        errno = entry_errno;
        return (ssize_t)done;
    }
    return r < 0 ? r : (ssize_t)done + r;
}

HOOK_API ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
    /* A count libc refuses (EINVAL) is libc's to refuse: recvmsg's own
     * error for it would be EMSGSIZE. */
    if (!maybe_socket(fd) || iovcnt < 0 || iovcnt > IOV_MAX ||
        waits_for_mark(fd))
        return REAL(readv)(fd, iov, iovcnt);
    struct msghdr m = {.msg_iov = (struct iovec *)iov,
                       .msg_iovlen = (size_t)iovcnt};
    int entry_errno = errno;
    ssize_t r = REAL(recvmsg)(fd, &m, MSG_DONTWAIT);
    if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        if (not_socket(fd, r)) {
            errno = entry_errno;
            return REAL(readv)(fd, iov, iovcnt);
        }
        return r;
    }
    errno = entry_errno;
    /* The kernel has read iov (a bad one said EFAULT above). */
    if (reads_nothing(iov_total(iov, (size_t)iovcnt)))
        return 0;
    struct sock_op op = {.kind = OP_RECVMSG, .msg = &m};
    return sock_loop(fd, &op, false, true);
}

HOOK_API ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
    if (!maybe_socket(fd) || iovcnt < 0 || iovcnt > IOV_MAX) /* as readv */
        return REAL(writev)(fd, iov, iovcnt);
    struct msghdr m = {.msg_iov = (struct iovec *)iov,
                       .msg_iovlen = (size_t)iovcnt};
    int entry_errno = errno;
    /* A first try on the caller's iovecs; the loop copies them only if
     * it has to go on from a partial send. */
    ssize_t r = REAL(sendmsg)(fd, &m, MSG_DONTWAIT);
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        if (not_socket(fd, r)) {
            errno = entry_errno;
            return REAL(writev)(fd, iov, iovcnt);
        }
        return r;
    }
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++)
        total += iov[i].iov_len;
    if (r >= 0 && (size_t)r == total)
        return r;
    errno = entry_errno;
    /* The rest, from a copy of the iovecs advanced past what went. */
    struct iovec local[IOV_ON_STACK];
    struct iovec *copy = local;
    if (iovcnt > IOV_ON_STACK && !(copy = malloc((size_t)iovcnt *
                                                 sizeof *copy)))
        return r > 0 ? r : REAL(writev)(fd, iov, iovcnt);
    memcpy(copy, iov, (size_t)iovcnt * sizeof *copy);
    struct msghdr rest = {.msg_iov = copy, .msg_iovlen = (size_t)iovcnt};
    struct sock_op op = {.kind = OP_SENDMSG, .msg = &rest};
    size_t done = r > 0 ? (size_t)r : 0;
    op_advance(&op, done);
    ssize_t more = sock_loop(fd, &op, true, true);
    int e = errno;
    if (copy != local)
        free(copy);
    errno = e;
    if (more < 0 && done) {
        errno = entry_errno;
        return (ssize_t)done;
    }
    return more < 0 ? more : (ssize_t)(done + (size_t)more);
}

/* _FORTIFY_SOURCE's checked reads: glibc's check, then ours. */
HOOK_API ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
    if (len > buflen)
        __chk_fail();
    return read(fd, buf, len);
}

HOOK_API ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen,
                            int flags)
{
    if (len > buflen)
        __chk_fail();
    return recv(fd, buf, len, flags);
}

HOOK_API ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen,
                                int flags, struct sockaddr *from,
                                socklen_t *fromlen)
{
    if (len > buflen)
        __chk_fail();
    return recvfrom(fd, buf, len, flags, from, fromlen);
}
