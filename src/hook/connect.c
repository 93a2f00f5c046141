/*
 * hook/connect.c — connect, accept, accept4.
 *
 * connect on a blocking socket: the handshake is started non-blocking
 * (O_NONBLOCK set for the one call and cleared again at once, so the
 * caller's view of the flags is unchanged by the time it could look),
 * the task parks until the socket is writable, up to SO_SNDTIMEO (Linux
 * bounds a blocking connect by it, answering EINPROGRESS), and SO_ERROR
 * gives the result: errno as the blocking connect would set it.
 *
 * accept on a blocking socket: the task parks until the socket is
 * readable (up to SO_RCVTIMEO: EAGAIN), then accepts.  Another thread
 * may take the connection between the two: then the accept blocks the
 * worker until the next one, as it would have blocked its thread.  (The
 * listening socket's flags are never changed: a thread accepting on it
 * at the same moment would see them.)
 */
#include "hook/fdkind.h"
#include "hook/real.h"
#include "hook/wait.h"

#include <weft/io.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>

/* connect(2) with O_NONBLOCK set for the one call (fl: the flags to put
 * back).  *err: its errno. */
static int connect_nonblock(int fd, int fl, const struct sockaddr *addr,
                            socklen_t len, int *err)
{
    if (REAL(fcntl)(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        /* Cannot make it non-blocking: libc's call, blocking. */
        int r = REAL(connect)(fd, addr, len);
        *err = errno;
        return r;
    }
    int r = REAL(connect)(fd, addr, len);
    *err = errno;
    REAL(fcntl)(fd, F_SETFL, fl);
    return r;
}

/*
 * A unix socket's connect to a listener whose backlog is full: the
 * non-blocking call says EAGAIN, and a blocking one waits for room, of
 * which no readiness tells; so the task naps (50 us, doubling to 5 ms)
 * and tries again, up to SO_SNDTIMEO (then EAGAIN, as Linux's).
 */
static int unix_connect(int fd, int fl, const struct sockaddr *addr,
                        socklen_t len, int entry_errno)
{
    struct timeval tv = {0};
    socklen_t tl = sizeof tv;
    uint64_t deadline = UINT64_MAX;
    if (getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &tl) == 0 &&
        (tv.tv_sec > 0 || tv.tv_usec > 0))
        deadline = hook_deadline(hook_now(), hook_ns_of_tv(&tv));
    uint64_t nap = 50000;
    for (;;) {
        if (hook_now() >= deadline) {
            errno = EAGAIN;
            return -1;
        }
        if (hook_sleep(nap) == -ECANCELED) {
            errno = ECANCELED;
            return -1;
        }
        if (nap < 5000000)
            nap *= 2;
        int err;
        int r = connect_nonblock(fd, fl, addr, len, &err);
        if (r == 0) {
            errno = entry_errno;
            return 0;
        }
        if (err != EAGAIN) {
            errno = err;
            return -1;
        }
    }
}

HOOK_API int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    if (!weft__hook_here())
        return REAL(connect)(fd, addr, len);
    int entry_errno = errno;
    int fl = REAL(fcntl)(fd, F_GETFL);
    if (fl < 0 || (fl & O_NONBLOCK)) {
        errno = entry_errno;
        return REAL(connect)(fd, addr, len);
    }
    int err;
    int r = connect_nonblock(fd, fl, addr, len, &err);
    if (r < 0 && err == EAGAIN && addr && addr->sa_family == AF_UNIX)
        return unix_connect(fd, fl, addr, len, entry_errno);
    /* EALREADY: a connect again while the handshake an earlier one
     * started goes on (after SO_SNDTIMEO ended that one): a blocking
     * connect waits for it, as the first one does, and at SO_SNDTIMEO
     * answers EALREADY again (Linux's __inet_stream_connect). */
    if (r == 0 || (err != EINPROGRESS && err != EALREADY)) {
        errno = r == 0 ? entry_errno : err;
        return r;
    }
    int started = err;
    struct hook_call c = {0};
    for (;;) {
        switch (hook_wait(fd, WEFT_OUT, SO_SNDTIMEO, &c)) {
        case HOOK_EAGAIN:
            /* What Linux's blocking connect answers at SO_SNDTIMEO: the
             * handshake goes on. */
            errno = started;
            return -1;
        case HOOK_CANCELED:
            errno = ECANCELED;
            return -1;
        case HOOK_BLOCK: {
            /* No netpoller: wait in poll(2), blocking the worker. */
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            if (REAL(poll)(&p, 1, -1) < 0)
                return -1;
            break;
        }
        case HOOK_RETRY:
            break;
        }
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
            return -1;
        if (soerr) {
            errno = soerr;
            return -1;
        }
        /* SO_ERROR is 0 both once connected and while the handshake goes
         * on (an early wake): getpeername tells them apart. */
        struct sockaddr_storage peer;
        socklen_t pl = sizeof peer;
        if (getpeername(fd, (struct sockaddr *)&peer, &pl) == 0) {
            errno = entry_errno;
            return 0;
        }
        if (errno != ENOTCONN)
            return -1;
    }
}

static int accept_loop(int fd, struct sockaddr *addr, socklen_t *len,
                       int flags, bool four)
{
    int entry_errno = errno;
    struct hook_call c = {0};
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ready = REAL(poll)(&p, 1, 0);
        enum hook_outcome o = HOOK_RETRY;
        if (ready == 0)
            o = hook_wait(fd, WEFT_IN, SO_RCVTIMEO, &c);
        switch (o) {
        case HOOK_EAGAIN:
            if (c.nonblock)
                break; /* the caller's non-blocking accept answers */
            errno = EAGAIN;
            return -1;
        case HOOK_CANCELED:
            errno = ECANCELED;
            return -1;
        case HOOK_RETRY:
            if (ready == 0)
                continue; /* look again before accepting */
            break;
        case HOOK_BLOCK:
            break;
        }
        errno = entry_errno;
        int nfd = four ? REAL(accept4)(fd, addr, len, flags)
                       : REAL(accept)(fd, addr, len);
        fdkind_set(nfd, FD_SOCKET);
        return nfd;
    }
}

HOOK_API int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
    if (!weft__hook_here()) {
        int nfd = REAL(accept)(fd, addr, len);
        fdkind_set(nfd, FD_SOCKET);
        return nfd;
    }
    return accept_loop(fd, addr, len, 0, false);
}

HOOK_API int accept4(int fd, struct sockaddr *addr, socklen_t *len,
                     int flags)
{
    if (!weft__hook_here()) {
        int nfd = REAL(accept4)(fd, addr, len, flags);
        fdkind_set(nfd, FD_SOCKET);
        return nfd;
    }
    return accept_loop(fd, addr, len, flags, true);
}
