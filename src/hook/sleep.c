/*
 * hook/sleep.c — nanosleep, clock_nanosleep, usleep, sleep: a pool task
 * parks on a timer (weft_sleep's) instead.  A cancel ends the sleep early
 * with ECANCELED (nanosleep, usleep: -1 and errno; clock_nanosleep: the
 * return value; sleep: the seconds left), and the time left where the
 * call reports it.  glibc's usleep and sleep call its internal
 * nanosleep, which no interposition reaches, hence their own entries.
 */
#include "hook/real.h"
#include "hook/wait.h"

#include <errno.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

static struct timespec ts_of(uint64_t ns)
{
    return (struct timespec){.tv_sec = (time_t)(ns / 1000000000u),
                             .tv_nsec = (long)(ns % 1000000000u)};
}

/* Sleep ns; 0, or the error (ECANCELED...) with *left the time not
 * slept.  errno as it was: other tasks run on this thread meanwhile, and
 * a sleep that succeeds leaves it alone (docs/foreign.md). */
static int sleep_ns(uint64_t ns, uint64_t *left)
{
    int saved = errno;
    uint64_t start = hook_now();
    int r = hook_sleep(ns);
    errno = saved;
    if (r == 0)
        return 0;
    uint64_t slept = hook_now() - start;
    *left = slept >= ns ? 0 : ns - slept;
    return -r;
}

HOOK_API int nanosleep(const struct timespec *req, struct timespec *rem)
{
    if (!weft__hook_here() || !hook_timespec_valid(req))
        return REAL(nanosleep)(req, rem);
    uint64_t left;
    int err = sleep_ns(hook_ns_of(req), &left);
    if (!err)
        return 0;
    if (err == ENOMEM) /* no timer: libc's sleep, blocking the worker */
        return REAL(nanosleep)(req, rem);
    if (rem)
        *rem = ts_of(left);
    errno = err;
    return -1;
}

HOOK_API int clock_nanosleep(clockid_t clock, int flags,
                             const struct timespec *req, struct timespec *rem)
{
    if ((clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME) ||
        !weft__hook_here() || !hook_timespec_valid(req))
        return REAL(clock_nanosleep)(clock, flags, req, rem);
    uint64_t ns = hook_ns_of(req);
    if (flags & TIMER_ABSTIME) {
        struct timespec now;
        clock_gettime(clock, &now);
        uint64_t n = hook_ns_of(&now);
        ns = ns > n ? ns - n : 0;
    }
    uint64_t left;
    int err = sleep_ns(ns, &left);
    if (!err)
        return 0;
    if (err == ENOMEM)
        return REAL(clock_nanosleep)(clock, flags, req, rem);
    if (rem && !(flags & TIMER_ABSTIME))
        *rem = ts_of(left);
    return err;
}

HOOK_API int usleep(useconds_t us)
{
    if (!weft__hook_here())
        return REAL(usleep)(us);
    uint64_t left;
    int err = sleep_ns((uint64_t)us * 1000u, &left);
    if (!err)
        return 0;
    if (err == ENOMEM)
        return REAL(usleep)(us);
    errno = err;
    return -1;
}

HOOK_API unsigned sleep(unsigned s)
{
    if (!weft__hook_here())
        return REAL(sleep)(s);
    uint64_t left;
    int err = sleep_ns((uint64_t)s * 1000000000u, &left);
    if (!err)
        return 0;
    if (err == ENOMEM)
        return REAL(sleep)(s);
    /* sleep(3) rounds the seconds left up. */
    return (unsigned)((left + 999999999u) / 1000000000u);
}
