/*
 * hook/wait.c — hook/wait.h.
 */
#include "hook/wait.h"

#include "hook/fdkind.h"
#include "hook/real.h"
#include "io/hook.h"

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

/* The receive or send timeout of fd, in ns; 0: none (or unknown). */
static uint64_t timeout_of(int fd, int opt)
{
    struct timeval tv;
    socklen_t len = sizeof tv;
    if (getsockopt(fd, SOL_SOCKET, opt, &tv, &len) != 0 || tv.tv_sec < 0 ||
        (tv.tv_sec == 0 && tv.tv_usec <= 0))
        return 0;
    return hook_ns_of_tv(&tv);
}

/* What the call's park must respect: fd's blocking mode and timeout, from
 * the kept answer if it is current (hook/fdkind.h), else asked and kept.
 * The generation is read before the questions, so a change made while
 * they are asked leaves the answer stale, never wrongly current. */
static void learn(int fd, int timeout_opt, struct hook_call *c)
{
    c->known = true;
    uint32_t gen = mode_gen();
    uint32_t info = fdinfo_get(fd);
    if (!(info & FD_MODE_KNOWN) || info >> FD_GEN_SHIFT != gen) {
        int fl = REAL(fcntl)(fd, F_GETFL);
        if (fl < 0)
            return; /* the retried call reports what is wrong */
        uint32_t mode = FD_MODE_KNOWN;
        if (fl & O_NONBLOCK)
            mode |= FD_NONBLOCK;
        else {
            if (timeout_of(fd, SO_RCVTIMEO))
                mode |= FD_RCVTIMEO;
            if (timeout_of(fd, SO_SNDTIMEO))
                mode |= FD_SNDTIMEO;
        }
        info = (info & (FD_KIND | FD_WAITS)) | mode | gen << FD_GEN_SHIFT;
        fdinfo_set(fd, info);
    }
    if (info & FD_NONBLOCK) {
        c->nonblock = true;
        return;
    }
    uint32_t has = timeout_opt == SO_RCVTIMEO   ? FD_RCVTIMEO
                   : timeout_opt == SO_SNDTIMEO ? FD_SNDTIMEO
                                                : 0;
    uint64_t t = info & has ? timeout_of(fd, timeout_opt) : 0;
    if (t)
        c->deadline = hook_deadline(hook_now(), t);
}

enum hook_outcome hook_wait(int fd, unsigned events, int timeout_opt,
                            struct hook_call *c)
{
    if (!c->known)
        learn(fd, timeout_opt, c);
    if (c->nonblock)
        return HOOK_EAGAIN;
    uint64_t timeout = UINT64_MAX;
    if (c->deadline) {
        uint64_t now = hook_now();
        timeout = now >= c->deadline ? 0 : c->deadline - now;
    }
    struct hook_park pk;
    hook_park_begin(&pk);
    int r = weft__hook_wait_fd(fd, events, timeout);
    hook_park_end(&pk);
    if (r >= 0)
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

#define NAP_FIRST_NS 20000u
#define NAP_MAX_NS 1000000u

int hook_nap_retry(int (*try)(void *), void *arg,
                   enum weft__hook_nap_for what)
{
    int entry_errno = errno;
    uint64_t nap = NAP_FIRST_NS;
    int r;
    do {
        int n;
        if (what == WEFT__HOOK_NAP_MUTEX) {
            weft__hook_pin();
            n = weft__hook_nap(nap, what);
            weft__hook_unpin();
        } else {
            struct hook_park pk;
            hook_park_begin(&pk);
            n = weft__hook_nap(nap, what);
            hook_park_end(&pk);
        }
        if (n != 0) {
            errno = entry_errno;
            return -1;
        }
        if (nap < NAP_MAX_NS)
            nap *= 2;
        r = try(arg);
    } while (r == EBUSY);
    errno = entry_errno;
    return r;
}

int hook_sleep(uint64_t ns)
{
    struct hook_park pk;
    hook_park_begin(&pk);
    int r = weft_sleep(ns);
    hook_park_end(&pk);
    return r;
}
