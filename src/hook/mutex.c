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
 *
 * Recursive mutexes.  The owner glibc records is the thread, and every
 * task on the worker runs on that thread: while a task that holds one
 * is parked, another task's trylock would succeed, as a relock by the
 * owner, and both would be inside.  So each thread keeps which task took
 * each recursive mutex it holds (a few slots; taken when the count goes
 * from 0 to 1 here, let go when an unlock here brings it back to 0), and
 * a relock by another task is undone and waits as for a held mutex.  A
 * recursive mutex taken with an unhooked call (pthread_mutex_trylock,
 * or more than the slots at once) is not known: relocks of it are let
 * through, as before.  glibc's own fields say the kind, count and owner
 * (the hook is glibc's alone).
 */
#include "hook/real.h"
#include "hook/wait.h"

#include <weft/task.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>

/* glibc's PTHREAD_MUTEX_KIND_MASK_NP: the type bits of __kind (the rest
 * say robust, priority protocol, elision). */
#define KIND_MASK 3

static inline bool recursive(const pthread_mutex_t *m)
{
    return (m->__data.__kind & KIND_MASK) == PTHREAD_MUTEX_RECURSIVE_NP;
}

#define HELD_SLOTS 8

/* The recursive mutexes this thread holds for tasks, and whose. */
static __thread struct {
    pthread_mutex_t *m;
    uint64_t task;
} held[HELD_SLOTS];

/* After a successful trylock of recursive m by the task `me`: false if
 * it was another task's relock (undone: the caller waits). */
static bool keep_recursive(pthread_mutex_t *m, uint64_t me)
{
    int free_slot = -1;
    for (int i = 0; i < HELD_SLOTS; i++) {
        if (held[i].m == m) {
            if (m->__data.__count == 1) { /* a stale slot: ours now */
                held[i].task = me;
                return true;
            }
            if (held[i].task == me)
                return true;
            REAL(pthread_mutex_unlock)(m); /* another task's: undo */
            return false;
        }
        if (!held[i].m && free_slot < 0)
            free_slot = i;
    }
    if (m->__data.__count == 1 && free_slot >= 0) {
        held[free_slot].m = m;
        held[free_slot].task = me;
    }
    return true;
}

/* Try m for the calling task: 0, EBUSY, or trylock's error. */
static int try_for_task(pthread_mutex_t *m)
{
    int r = REAL(pthread_mutex_trylock)(m);
    if (r == 0 && recursive(m) &&
        !keep_recursive(m, weft_task_id(weft_task_current())))
        return EBUSY;
    return r;
}

static int try_for_task_fn(void *m)
{
    return try_for_task(m);
}

HOOK_API int pthread_mutex_lock(pthread_mutex_t *m)
{
    if (!weft__hook_here())
        return REAL(pthread_mutex_lock)(m);
    /* libc's trylock, not the program's view of it: a sanitizer that
     * intercepts both (ThreadSanitizer) records the lock once, in its
     * own pthread_mutex_lock, which called this one. */
    int r = try_for_task(m);
    if (r != EBUSY)
        return r;
    r = hook_nap_retry(try_for_task_fn, m, WEFT__HOOK_NAP_MUTEX);
    /* -1: no timer to nap on: block the thread, as libc. */
    return r == -1 ? REAL(pthread_mutex_lock)(m) : r;
}

HOOK_API int pthread_mutex_unlock(pthread_mutex_t *m)
{
    /* The last unlock of a recursive mutex a task of this thread holds:
     * its slot goes (read before the unlock, while m is still ours; a
     * slot of a mutex this thread does not hold is stale, and goes as
     * well). */
    if (recursive(m) && m->__data.__count == 1)
        for (int i = 0; i < HELD_SLOTS; i++)
            if (held[i].m == m) {
                held[i].m = NULL;
                break;
            }
    return REAL(pthread_mutex_unlock)(m);
}
