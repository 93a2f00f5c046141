/*
 * parker_condvar.c — parker on a pthread mutex and condition variable, for
 * systems without futexes (the -Devent=condvar build).
 *
 * No lost wakeup: the permit is set and tested under the mutex, and the
 * owner only waits on the condition while holding the mutex and seeing no
 * permit.  Last touch: unpark signals and unlocks while the owner cannot
 * have returned (it needs the mutex to see the permit); after the unlock
 * the unparker touches nothing.
 */
#include "sched/parker.h"

#include "base/backoff.h"
#include "base/direct.h"

#include <errno.h>
#include <time.h>

void weft__parker_init(struct weft__parker *p)
{
    pthread_condattr_t attr;
    atomic_init(&p->permit, 0);
    pthread_mutex_init(&p->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cond, &attr);
    pthread_condattr_destroy(&attr);
}

void weft__parker_fini(struct weft__parker *p)
{
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
}

bool weft__parker_park(struct weft__parker *p, uint64_t deadline_ns,
                       uint64_t spin_ns)
{
    /* Spin a while first (parker.h): the permit often comes within
     * microseconds. */
    if (spin_ns && !atomic_load_explicit(&p->permit, memory_order_relaxed)) {
        uint64_t spin_end = weft__now_ns() + spin_ns;
        if (deadline_ns && deadline_ns < spin_end)
            spin_end = deadline_ns;
        struct weft__timed_spin spin;
        weft__timed_spin_start(&spin, spin_end);
        while (weft__timed_spin_more(&spin) &&
               !atomic_load_explicit(&p->permit, memory_order_relaxed))
            ;
    }
    bool got = true;
    weft__lock(&p->lock);
    while (!atomic_load_explicit(&p->permit, memory_order_relaxed)) {
        if (!deadline_ns) {
            pthread_cond_wait(&p->cond, &p->lock);
            continue;
        }
        struct timespec ts = weft__timespec_of(deadline_ns); /* absolute */
        if (pthread_cond_timedwait(&p->cond, &p->lock, &ts) == ETIMEDOUT &&
            !atomic_load_explicit(&p->permit, memory_order_relaxed)) {
            got = false;
            break;
        }
    }
    if (got)
        atomic_store_explicit(&p->permit, 0, memory_order_relaxed);
    pthread_mutex_unlock(&p->lock);
    return got;
}

void weft__parker_unpark(struct weft__parker *p)
{
    weft__lock(&p->lock);
    atomic_store_explicit(&p->permit, 1, memory_order_relaxed);
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
}
