/*
 * hook/mutex.c — pthread_mutex_lock in a pool task.
 *
 * A library that holds a pthread mutex across a blocking call (common:
 * a connection pool's lock around a round trip) parks the task inside
 * the hooked call with the mutex held; a second task on the same worker
 * that then blocked the thread in pthread_mutex_lock would wait for a
 * task that can only continue on that very thread (its pin): a deadlock.
 * So a pool task's pthread_mutex_lock never blocks its thread: it tries
 * the lock, and while the mutex is held, naps (pinned, as any park in a
 * hooked call, so the mutex is taken by the thread the caller expects)
 * and tries again, the naps growing from 20 us to 1 ms.  A cancel does not
 * end the wait: pthread_mutex_lock cannot fail that way (weft__hook_nap).
 * What it costs: a contended lock is taken up to a nap late (at most
 * 1 ms), and polled while held.  An error-checking mutex that the same
 * task locks twice waits here (the thread is the same, the owner a
 * parked task) instead of failing with EDEADLK.
 */
#include "hook/real.h"
#include "hook/wait.h"

#include <errno.h>
#include <pthread.h>

#define NAP_FIRST_NS 20000u
#define NAP_MAX_NS 1000000u

HOOK_API int pthread_mutex_lock(pthread_mutex_t *m)
{
    if (!weft__hook_here())
        return REAL(pthread_mutex_lock)(m);
    /* libc's trylock, not the program's view of it: a sanitizer that
     * intercepts both (ThreadSanitizer) records the lock once, in its
     * own pthread_mutex_lock, which called this one. */
    int r = REAL(pthread_mutex_trylock)(m);
    if (r != EBUSY)
        return r;
    int entry_errno = errno;
    uint64_t nap = NAP_FIRST_NS;
    do {
        weft__hook_pin();
        int n = weft__hook_nap(nap);
        weft__hook_unpin();
        if (n != 0) {
            /* No timer to nap on: block the thread, as libc. */
            errno = entry_errno;
            return REAL(pthread_mutex_lock)(m);
        }
        if (nap < NAP_MAX_NS)
            nap *= 2;
        r = REAL(pthread_mutex_trylock)(m);
    } while (r == EBUSY);
    errno = entry_errno;
    return r;
}
