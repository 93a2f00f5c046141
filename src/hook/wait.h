/*
 * hook/wait.h — the park inside a hooked call (internal to libweft-hook).
 *
 * A hooked call that would block is a loop: try the call without blocking
 * (MSG_DONTWAIT, or a readiness check), and when it would block, park the
 * task on the fd's readiness with hook_wait, then try again.  hook_wait
 * decides what libc would have done instead of blocking: on an fd the
 * caller made non-blocking (O_NONBLOCK), return EAGAIN; on a blocking one,
 * wait, up to the socket's SO_RCVTIMEO or SO_SNDTIMEO if set (then EAGAIN,
 * as libc).  It reads those once per call, and only when the call would
 * block: a call that does not block costs no more than libc's.
 *
 * The task parks pinned to its thread (sched/hook.c): it continues on the
 * thread it called from, whose thread-locals its caller may hold.
 */
#ifndef WEFT_HOOK_WAIT_H
#define WEFT_HOOK_WAIT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "sched/hook.h"

#define HOOK_API __attribute__((visibility("default")))

/* One hooked call's view of its fd, filled by its first hook_wait. */
struct hook_call {
    bool known;          /* the fields below are filled in              */
    bool nonblock;       /* the caller's fd has O_NONBLOCK               */
    uint64_t deadline;   /* CLOCK_MONOTONIC ns of the timeout; 0: none   */
};

enum hook_outcome {
    HOOK_RETRY,          /* ready (or maybe): try the call again         */
    HOOK_EAGAIN,         /* return -1/EAGAIN: non-blocking, or timed out */
    HOOK_CANCELED,       /* return -1/ECANCELED: the task was cancelled  */
    HOOK_BLOCK,          /* cannot park (no netpoller): make the real,
                            blocking call                                */
};

/* A park inside a hooked call: hook_park_begin before it, hook_park_end
 * after, around weft's wait.  They pin the task to its thread
 * (weft__hook_pin) and keep its OpenSSL error queue as it was (park.c). */
struct hook_park {
    bool clear_openssl;  /* the queue was empty: empty it again at the end */
};

void hook_park_begin(struct hook_park *pk);
void hook_park_end(struct hook_park *pk);

/* Wait until fd is ready for `events` (WEFT_IN/WEFT_OUT), as the call
 * would have: `timeout_opt` is SO_RCVTIMEO, SO_SNDTIMEO, or 0 (none). */
enum hook_outcome hook_wait(int fd, unsigned events, int timeout_opt,
                            struct hook_call *c);

/* The wait of a call that cannot fail (pthread_mutex_lock, pthread_join):
 * try(arg) until it says other than EBUSY, napping pinned between tries
 * (20 us, doubling to 1 ms) whatever a cancel says.  Returns try's
 * result, or -1 when no timer can be armed to nap on (the caller makes
 * libc's blocking call).  errno is as at the call.  A mutex's nap keeps
 * out of OpenSSL's error queue (park.c: the mutex may be libcrypto's). */
int hook_nap_retry(int (*try)(void *), void *arg,
                   enum weft__hook_nap_for what);

/* Park for a relative time (ns; UINT64_MAX: for ever), pinned, on the
 * clock of weft's timers.  Returns 0, -ECANCELED, or -ENOMEM. */
int hook_sleep(uint64_t ns);

/* CLOCK_MONOTONIC now, in ns. */
uint64_t hook_now(void);

/* A timespec as a time in the kernel's range (nanoseconds below a
 * second, nothing negative), and its value in ns (near UINT64_MAX for
 * one too large to count). */
static inline bool hook_timespec_valid(const struct timespec *ts)
{
    return ts->tv_sec >= 0 && ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000;
}

static inline uint64_t hook_ns_of(const struct timespec *ts)
{
    if ((uint64_t)ts->tv_sec >= UINT64_MAX / 1000000000u - 1)
        return UINT64_MAX - 1;
    return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

/* A timeval (valid: usec below a second, nothing negative) in ns, near
 * UINT64_MAX for one too large to count (Linux takes tv_sec up to
 * LONG_MAX in select and SO_RCVTIMEO: no timeout is invented). */
static inline uint64_t hook_ns_of_tv(const struct timeval *tv)
{
    struct timespec ts = {tv->tv_sec, (long)tv->tv_usec * 1000};
    return hook_ns_of(&ts);
}

/* now + ns, saturating: a deadline that a huge timeout cannot wrap. */
static inline uint64_t hook_deadline(uint64_t now, uint64_t ns)
{
    return ns > UINT64_MAX - 1 - now ? UINT64_MAX - 1 : now + ns;
}

#endif /* WEFT_HOOK_WAIT_H */
