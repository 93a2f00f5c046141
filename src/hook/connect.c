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
#include <sys/socket.h>

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
    if (REAL(fcntl)(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        errno = entry_errno;
        return REAL(connect)(fd, addr, len);
    }
    int r = REAL(connect)(fd, addr, len);
    int err = errno;
    REAL(fcntl)(fd, F_SETFL, fl);
    if (r == 0 || err != EINPROGRESS) {
        errno = r == 0 ? entry_errno : err;
        return r;
    }
    struct hook_call c = {0};
    for (;;) {
        switch (hook_wait(fd, WEFT_OUT, SO_SNDTIMEO, &c)) {
        case HOOK_EAGAIN:
            /* What Linux's blocking connect answers at SO_SNDTIMEO: the
             * handshake goes on. */
            errno = EINPROGRESS;
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
