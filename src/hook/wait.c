/*
 * hook/wait.c — hook/wait.h.
 */
#include "hook/wait.h"

#include "hook/real.h"

#include <weft/io.h>
#include <weft/timer.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <time.h>

uint64_t hook_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void learn(int fd, int timeout_opt, struct hook_call *c)
{
    c->known = true;
    int fl = REAL(fcntl)(fd, F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK)) {
        c->nonblock = true;
        return;
    }
    struct timeval tv;
    socklen_t len = sizeof tv;
    if (timeout_opt &&
        getsockopt(fd, SOL_SOCKET, timeout_opt, &tv, &len) == 0 &&
        (tv.tv_sec > 0 || tv.tv_usec > 0))
        c->deadline = hook_now() + (uint64_t)tv.tv_sec * 1000000000u +
                      (uint64_t)tv.tv_usec * 1000u;
}

enum hook_outcome hook_wait(int fd, unsigned events, int timeout_opt,
                            struct hook_call *c)
{
    if (!c->known)
        learn(fd, timeout_opt, c);
    if (c->nonblock)
        return HOOK_EAGAIN;
    int r;
    weft__hook_pin();
    if (c->deadline) {
        uint64_t now = hook_now();
        r = now >= c->deadline
                ? -ETIMEDOUT
                : weft_wait_fd_for(fd, events, c->deadline - now);
    } else {
        r = weft_wait_fd(fd, events);
    }
    weft__hook_unpin();
    if (r > 0)
        return HOOK_RETRY;
    switch (r) {
    case -ETIMEDOUT:
        return HOOK_EAGAIN;
    case -ECANCELED:
        return HOOK_CANCELED;
    case -EBADF:
        return HOOK_RETRY; /* closed meanwhile: the call says EBADF */
    default:
        /* No netpoller (out of fds, of memory, of epoll watches), an fd
         * beyond weft's table: libc's blocking call, which blocks the
         * worker but answers right. */
        return HOOK_BLOCK;
    }
}

int hook_sleep(uint64_t ns)
{
    weft__hook_pin();
    int r = weft_sleep(ns);
    weft__hook_unpin();
    return r;
}
