/*
 * hook/poll.c — poll, ppoll, select, and the checked poll variant.
 *
 * A poll that would wait (a timeout other than 0, nothing ready on a
 * first look with timeout 0) parks the task until one of its fds is
 * ready or the timeout passes, then looks again with timeout 0: the
 * caller gets what poll(2) reports at that moment, so every revents bit
 * is the kernel's.  One fd: the task waits on it (weft_wait_fd_for).
 * Several (libcurl waits on its socket and a wake-up pipe at once): they
 * are put in a private epoll instance for the call, level-triggered, and
 * the task waits on that instance's fd, which is readable when any of
 * them is ready.  A wake that finds nothing (readiness gone again) parks
 * again for what is left of the timeout.  ppoll and pselect with a signal
 * mask, which must be swapped atomically with the wait, are libc's.
 */
#include "hook/real.h"
#include "hook/wait.h"
#include "io/hook.h"

#include <weft/io.h>

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <unistd.h>

void __chk_fail(void) __attribute__((noreturn));

/* The events weft's own wait watches exactly (WEFT_IN, WEFT_OUT).  Any
 * other (urgent data, a peer's half close, the band bits) needs the
 * private epoll, which watches each bit as asked: mapped onto WEFT_IN, a
 * POLLRDHUP-only poll of a socket with unread data woke at once, found
 * nothing on its look, and parked again, spinning for the timeout. */
#define WEFT_EXACT (POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM)

/* weft's readiness bits for poll's events (WEFT_EXACT's only); 0 if it
 * asks for none of them (only errors and hang-ups, which poll always
 * reports). */
static unsigned weft_events(short events)
{
    unsigned e = 0;
    if (events & (POLLIN | POLLRDNORM))
        e |= WEFT_IN;
    if (events & (POLLOUT | POLLWRNORM))
        e |= WEFT_OUT;
    return e;
}

/* epoll's bits are poll's, bit for bit (and it watches each as asked). */
static uint32_t epoll_events(short events)
{
    uint32_t e = 0;
    if (events & POLLIN)
        e |= EPOLLIN;
    if (events & POLLRDNORM)
        e |= EPOLLRDNORM;
    if (events & POLLRDBAND)
        e |= EPOLLRDBAND;
    if (events & POLLPRI)
        e |= EPOLLPRI;
    if (events & POLLRDHUP)
        e |= EPOLLRDHUP;
    if (events & POLLOUT)
        e |= EPOLLOUT;
    if (events & POLLWRNORM)
        e |= EPOLLWRNORM;
    if (events & POLLWRBAND)
        e |= EPOLLWRBAND;
    return e;
}

/* A private epoll instance watching the fds of `fds`; -1 if one cannot
 * be made (the caller then blocks in libc's poll). */
static int epoll_of(struct pollfd *fds, nfds_t n)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        return -1;
    for (nfds_t i = 0; i < n; i++) {
        if (fds[i].fd < 0)
            continue;
        struct epoll_event ev = {.events = epoll_events(fds[i].events),
                                 .data.u64 = i};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i].fd, &ev) == 0)
            continue;
        if (errno == EEXIST) {
            /* The same fd twice in the array: watch the union. */
            for (nfds_t j = 0; j < i; j++)
                if (fds[j].fd == fds[i].fd)
                    ev.events |= epoll_events(fds[j].events);
            if (epoll_ctl(ep, EPOLL_CTL_MOD, fds[i].fd, &ev) == 0)
                continue;
        }
        /* A regular file (EPERM: always ready, so the first look saw it)
         * or something epoll cannot watch: give up on parking. */
        REAL(close)(ep);
        return -1;
    }
    return ep;
}

/* timeout_ns: UINT64_MAX for none. */
static int hook_poll(struct pollfd *fds, nfds_t n, uint64_t timeout_ns)
{
    int entry_errno = errno;
    int r = REAL(poll)(fds, n, 0);
    if (r != 0 || timeout_ns == 0)
        return r;
    uint64_t deadline =
        timeout_ns == UINT64_MAX ? UINT64_MAX
                                 : hook_deadline(hook_now(), timeout_ns);
    int wait_fd = -1;
    unsigned events = WEFT_IN;
    int ep = -1;
    nfds_t live = 0;
    for (nfds_t i = 0; i < n; i++)
        if (fds[i].fd >= 0) {
            live++;
            wait_fd = fds[i].fd;
            events = weft_events(fds[i].events);
        }
    if (live == 0) {
        /* No fd: poll(2) as a sleep. */
        if (timeout_ns == UINT64_MAX)
            timeout_ns = UINT64_MAX - 1;
        if (hook_sleep(timeout_ns) == -ECANCELED) {
            errno = ECANCELED;
            return -1;
        }
        errno = entry_errno;
        return 0;
    }
    /* The private epoll also for one fd whose events weft's wait does
     * not watch exactly (WEFT_EXACT), or none but errors. */
    bool inexact = false;
    for (nfds_t i = 0; i < n; i++)
        inexact = inexact ||
                  (fds[i].fd >= 0 && (fds[i].events & ~WEFT_EXACT));
    if (live > 1 || events == 0 || inexact) {
        ep = epoll_of(fds, n);
        if (ep < 0)
            goto blocking;
        wait_fd = ep;
        events = WEFT_IN;
    }
    for (;;) {
        uint64_t now = hook_now();
        int w;
        struct hook_park pk;
        hook_park_begin(&pk);
        w = weft__hook_wait_fd(wait_fd, events,
                               deadline == UINT64_MAX ? UINT64_MAX
                               : now >= deadline      ? 0
                                                      : deadline - now);
        hook_park_end(&pk);
        if (w == -ECANCELED) {
            r = -1;
            entry_errno = ECANCELED;
            break;
        }
        if (w < 0 && w != -ETIMEDOUT && w != -EBADF) {
            if (ep >= 0)
                REAL(close)(ep);
            goto blocking;
        }
        r = REAL(poll)(fds, n, 0);
        if (r != 0 || w == -ETIMEDOUT)
            break;
    }
    if (ep >= 0)
        REAL(close)(ep);
    if (r >= 0 || entry_errno == ECANCELED)
        errno = entry_errno;
    return r;

blocking:
    errno = entry_errno;
    if (deadline == UINT64_MAX)
        return REAL(poll)(fds, n, -1);
    uint64_t now = hook_now();
    uint64_t ms = now >= deadline ? 0 : (deadline - now + 999999) / 1000000;
    return REAL(poll)(fds, n, ms > INT_MAX ? INT_MAX : (int)ms);
}

HOOK_API int poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
    if (timeout_ms == 0 || !weft__hook_here())
        return REAL(poll)(fds, n, timeout_ms);
    return hook_poll(fds, n,
                     timeout_ms < 0 ? UINT64_MAX
                                    : (uint64_t)timeout_ms * 1000000u);
}

HOOK_API int __poll_chk(struct pollfd *fds, nfds_t n, int timeout_ms,
                        size_t fdslen)
{
    if (fdslen / sizeof *fds < n)
        __chk_fail();
    return poll(fds, n, timeout_ms);
}

HOOK_API int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts,
                   const sigset_t *sigmask)
{
    if (sigmask || (ts && (!hook_timespec_valid(ts) || hook_ns_of(ts) == 0)) ||
        !weft__hook_here())
        return REAL(ppoll)(fds, n, ts, sigmask);
    return hook_poll(fds, n, ts ? hook_ns_of(ts) : UINT64_MAX);
}

HOOK_API int __ppoll_chk(struct pollfd *fds, nfds_t n,
                         const struct timespec *ts, const sigset_t *sigmask,
                         size_t fdslen)
{
    if (fdslen / sizeof *fds < n)
        __chk_fail();
    return ppoll(fds, n, ts, sigmask);
}

/* Whether poll's answer puts anything in select's sets (POLLNVAL: its
 * EBADF, which counts as an answer). */
static bool reported_in_sets(const struct pollfd *p, nfds_t n,
                             const fd_set *rd, const fd_set *wr,
                             const fd_set *ex)
{
    for (nfds_t i = 0; i < n; i++) {
        short re = p[i].revents;
        if ((re & POLLNVAL) ||
            (rd && (p[i].events & POLLIN) &&
             (re & (POLLIN | POLLHUP | POLLERR))) ||
            (wr && (p[i].events & POLLOUT) && (re & (POLLOUT | POLLERR))) ||
            (ex && (p[i].events & POLLPRI) && (re & POLLPRI)))
            return true;
    }
    return false;
}

/* select through hook_poll: the sets become a pollfd array (POLLIN for
 * readfds, POLLOUT for writefds, POLLPRI for exceptfds) and back. */
HOOK_API int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex,
                    struct timeval *tv)
{
    if ((tv && tv->tv_sec == 0 && tv->tv_usec == 0) || nfds < 0 ||
        nfds > FD_SETSIZE || (tv && (tv->tv_sec < 0 || tv->tv_usec < 0 ||
                                     tv->tv_usec >= 1000000)) ||
        !weft__hook_here())
        return REAL(select)(nfds, rd, wr, ex, tv);
    struct pollfd local[64];
    struct pollfd *p = local;
    nfds_t n = 0;
    for (int fd = 0; fd < nfds; fd++)
        if ((rd && FD_ISSET(fd, rd)) || (wr && FD_ISSET(fd, wr)) ||
            (ex && FD_ISSET(fd, ex)))
            n++;
    if (n > 64 && !(p = malloc(n * sizeof *p)))
        return REAL(select)(nfds, rd, wr, ex, tv);
    n = 0;
    for (int fd = 0; fd < nfds; fd++) {
        short ev = 0;
        if (rd && FD_ISSET(fd, rd))
            ev |= POLLIN;
        if (wr && FD_ISSET(fd, wr))
            ev |= POLLOUT;
        if (ex && FD_ISSET(fd, ex))
            ev |= POLLPRI;
        if (ev)
            p[n++] = (struct pollfd){.fd = fd, .events = ev};
    }
    uint64_t timeout = tv ? hook_ns_of_tv(tv) : UINT64_MAX;
    uint64_t start = hook_now();
    int r;
    for (;;) {
        uint64_t now = hook_now(), gone = now - start;
        r = hook_poll(p, n, timeout == UINT64_MAX ? timeout
                            : gone >= timeout ? 0 : timeout - gone);
        if (r <= 0 || reported_in_sets(p, n, rd, wr, ex))
            break;
        /* Only what no set asked of (a hang-up or an error on an fd in
         * exceptfds alone): Linux's select sleeps on, so the rest of the
         * time is waited for, without those fds, which would say the
         * same again at once. */
        for (nfds_t i = 0; i < n; i++)
            if (p[i].revents)
                p[i].fd = -1 - p[i].fd; /* poll skips it; kept, negated */
    }
    for (nfds_t i = 0; i < n; i++)
        if (p[i].fd < 0)
            p[i].fd = -1 - p[i].fd, p[i].revents = 0;
    if (tv) {
        /* Linux's select writes back the time not slept. */
        uint64_t slept = hook_now() - start;
        uint64_t left = slept >= timeout ? 0 : timeout - slept;
        tv->tv_sec = (time_t)(left / 1000000000u);
        tv->tv_usec = (suseconds_t)(left % 1000000000u / 1000u);
    }
    bool bad = false;
    for (nfds_t i = 0; r > 0 && i < n; i++)
        bad = bad || (p[i].revents & POLLNVAL);
    if (bad) {
        /* POLLNVAL is select's EBADF, which leaves the sets alone. */
        r = -1;
        errno = EBADF;
    } else if (r >= 0) {
        /* select's count: one per set bit. */
        int count = 0;
        if (rd)
            FD_ZERO(rd);
        if (wr)
            FD_ZERO(wr);
        if (ex)
            FD_ZERO(ex);
        for (nfds_t i = 0; i < n; i++) {
            short re = p[i].revents;
            if (rd && (p[i].events & POLLIN) &&
                (re & (POLLIN | POLLHUP | POLLERR))) {
                FD_SET(p[i].fd, rd);
                count++;
            }
            if (wr && (p[i].events & POLLOUT) && (re & (POLLOUT | POLLERR))) {
                FD_SET(p[i].fd, wr);
                count++;
            }
            if (ex && (p[i].events & POLLPRI) && (re & POLLPRI)) {
                FD_SET(p[i].fd, ex);
                count++;
            }
        }
        r = count;
    }
    if (p != local) {
        int e = errno;
        free(p);
        errno = e;
    }
    return r;
}
