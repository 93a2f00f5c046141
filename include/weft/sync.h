/*
 * weft/sync.h — a mutex, a condition variable, a counting semaphore and a
 * wait group for tasks and plain threads alike.
 *
 * A task that has to wait is parked: its worker runs other tasks meanwhile.
 * A plain thread (or a standalone coroutine, which runs on its resumer's
 * thread) that has to wait blocks the thread.  Tasks and threads may share
 * one object.
 *
 * Every wait can end by timeout (the _for variants, -ETIMEDOUT) and, in a
 * task, by weft_task_cancel (-ECANCELED).  Cancellation is seen only by a
 * call that would wait: a call that can proceed at once (a free mutex, a
 * semaphore with units, a wait group at zero) succeeds even in a cancelled
 * task, as weft_event_wait does on a set event.  A timed wait whose timer
 * cannot be armed for lack of memory returns -ENOMEM without waiting.
 * A call that fails has no other effect, but for the condition variable's
 * timeout and cancellation, which come after its mutex was released and
 * locked again (weft_cond_wait).
 *
 * Waiters are woken first come, first served.  A semaphore unit goes
 * straight to the waiter it wakes, so a newcomer cannot take it in
 * between.  The mutex is Go's: an unlock wakes the longest waiter to try
 * again, and a caller that is running may take the mutex first (it keeps
 * the lock where a CPU already runs, instead of a park, a wake and a
 * switch for every lock of a busy mutex); a woken waiter that loses goes
 * back to the head of the list, and once it has waited 1 ms every unlock
 * hands the mutex to the longest waiter and nobody else may take it,
 * until the waiters are served.  So no waiter starves.
 *
 * The structs are embedded by the user and set up with their _init (all
 * the set-up they need; zero-filled memory is not enough); their fields
 * are private.  An object's memory may be reused once no call on it is in
 * progress.  Initialising an object in use is undefined.
 *
 * The structs are opaque storage of a fixed size (weft/weft.h, "Objects").
 */
#ifndef WEFT_SYNC_H
#define WEFT_SYNC_H

#include <stdint.h>
#include <weft/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ mutex */

/*
 * A mutex is owned by the task that locked it, wherever that task runs
 * later (it may unlock on another thread), or else by the thread that
 * locked it.  It is not recursive.
 */
typedef struct weft_mutex {
    uint64_t opaque_[6];
} weft_mutex;

/* weft_mutex_init - an unlocked mutex.  Any context; nothing for NULL. */
WEFT_API void weft_mutex_init(weft_mutex *m);

/*
 * weft_mutex_lock - lock m, waiting while another holds it.
 * Returns 0, -EINVAL (NULL), -EDEADLK (the caller holds m already),
 * -ECANCELED (in a task that was cancelled before or while it waited: it
 * does not hold m).
 */
WEFT_API int weft_mutex_lock(weft_mutex *m);

/* weft_mutex_lock_for - as weft_mutex_lock, waiting at most timeout_ns;
 * also -ETIMEDOUT, -ENOMEM (no memory for its timer); after either the
 * caller does not hold m. */
WEFT_API int weft_mutex_lock_for(weft_mutex *m, uint64_t timeout_ns);

/* weft_mutex_trylock - lock m if it is free.  Returns 0, -EINVAL (NULL),
 * -EAGAIN (held, by the caller or another: the code of every try that
 * would have had to wait, weft/error.h, as sem_trywait's; here weft
 * differs from pthread_mutex_trylock). */
WEFT_API int weft_mutex_trylock(weft_mutex *m);

/* weft_mutex_unlock - unlock m, and wake the longest waiter, if any (see
 * the top: it gets m, or tries again, first in line).
 * Returns 0, -EINVAL (NULL), -EPERM (the caller does not hold m). */
WEFT_API int weft_mutex_unlock(weft_mutex *m);

/* ------------------------------------------------------------ condition */

typedef struct weft_cond {
    uint64_t opaque_[4];
} weft_cond;

/* weft_cond_init - a condition nobody waits on.  Nothing for NULL. */
WEFT_API void weft_cond_init(weft_cond *c);

/*
 * weft_cond_wait - with m held by the caller: release m and wait for a
 * signal on c, as one step (a signal sent after m is released is not
 * missed); then lock m again.  Whatever it returns, it returns holding m,
 * as pthread_cond_wait does: after a timeout or a cancellation it still
 * waits for m first, for as long as that takes (the re-lock is neither
 * timed nor cancellable), and meanwhile others may have held m (the one
 * exception to "a call that fails has no other effect", weft/weft.h).
 * Like every condition variable, a return does not prove the awaited
 * condition: check it in a loop.
 * Returns 0, -EINVAL (NULL: m untouched), -EPERM (the caller does not hold
 * m), -ECANCELED (in a cancelled task; if it was cancelled before the
 * call, m was never released).
 */
WEFT_API int weft_cond_wait(weft_cond *c, weft_mutex *m);

/* weft_cond_wait_for - as weft_cond_wait, waiting for a signal at most
 * timeout_ns (then the re-lock, untimed); also -ETIMEDOUT, -ENOMEM (no
 * memory for its timer: m was never released). */
WEFT_API int weft_cond_wait_for(weft_cond *c, weft_mutex *m,
                                uint64_t timeout_ns);

/* weft_cond_signal - wake the longest waiter, if any.  Any context, m held
 * or not; nothing for NULL. */
WEFT_API void weft_cond_signal(weft_cond *c);

/* weft_cond_broadcast - wake every waiter.  Nothing for NULL. */
WEFT_API void weft_cond_broadcast(weft_cond *c);

/* ------------------------------------------------------------ semaphore */

typedef struct weft_sem {
    uint64_t opaque_[6];
} weft_sem;

/* weft_sem_init - a semaphore holding count units.  Nothing for NULL. */
WEFT_API void weft_sem_init(weft_sem *s, unsigned count);

/* weft_sem_wait - take a unit, waiting while there is none.
 * Returns 0, -EINVAL (NULL), -ECANCELED. */
WEFT_API int weft_sem_wait(weft_sem *s);

/* weft_sem_wait_for - as weft_sem_wait, waiting at most timeout_ns; also
 * -ETIMEDOUT, -ENOMEM. */
WEFT_API int weft_sem_wait_for(weft_sem *s, uint64_t timeout_ns);

/* weft_sem_trywait - take a unit if one is there.  Returns 0, -EINVAL
 * (NULL), -EAGAIN (none). */
WEFT_API int weft_sem_trywait(weft_sem *s);

/* weft_sem_post - add a unit: it goes to the longest waiter if there is
 * one.  Any context; nothing for NULL.  The count is 64 bits wide: it
 * cannot overflow in practice. */
WEFT_API void weft_sem_post(weft_sem *s);

/* ------------------------------------------------------------ wait group */

/*
 * A counter of outstanding jobs (Go's sync.WaitGroup): add before
 * starting jobs, done as each ends, wait until the counter is zero.
 */
typedef struct weft_wait_group {
    uint64_t opaque_[6];
} weft_wait_group;

/* weft_wait_group_init - a group with nothing outstanding.  Nothing for
 * NULL. */
WEFT_API void weft_wait_group_init(weft_wait_group *wg);

/* weft_wait_group_add - n more jobs.  Nothing for NULL. */
WEFT_API void weft_wait_group_add(weft_wait_group *wg, unsigned n);

/* weft_wait_group_done - one job ended; at zero every waiter is woken.
 * A done with nothing outstanding (one done too many) does nothing: the
 * counter never goes below zero (Go panics there; this library does not
 * abort on misuse). */
WEFT_API void weft_wait_group_done(weft_wait_group *wg);

/* weft_wait_group_wait - wait until nothing is outstanding.
 * Returns 0, -EINVAL (NULL), -ECANCELED. */
WEFT_API int weft_wait_group_wait(weft_wait_group *wg);

/* weft_wait_group_wait_for - as weft_wait_group_wait, waiting at most
 * timeout_ns; also -ETIMEDOUT, -ENOMEM. */
WEFT_API int weft_wait_group_wait_for(weft_wait_group *wg,
                                      uint64_t timeout_ns);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_SYNC_H */
