/*
 * sched/wait.h — one blocking wait of a task or a plain thread (internal):
 * the building block of sleep, await, the event, the sync primitives, the
 * channel, socket I/O, blocking offload and cancellation (docs/design.md,
 * "Waits").
 *
 * A wait record lives on the waiter's stack.  Its outcome starts PENDING
 * and is decided exactly once, by compare-exchange, by whichever comes
 * first: a waker (WOKEN), its timer (TIMEDOUT), weft_task_cancel
 * (CANCELED).  The winner, and only the winner, wakes the waiter, so every
 * wait gets exactly one wake.
 *
 * Lifetime rule (what lets the record live on the waiter's stack): every
 * party that may touch a record does so under a lock that the waiter also
 * takes before weft__wait_block's caller returns:
 *   - a primitive's waker: the primitive's own lock, which the waiter
 *     retakes after weft__wait_block to unlink itself (a waker unlinks the
 *     records it wakes; the waiter unlinks its own if it was not woken);
 *   - the timer: the timers' lock (weft__wait_block disarms before it
 *     returns, and after weft__timers_remove the callback is not running);
 *   - cancellation: the holder's wait_lock (weft__wait_block clears the
 *     holder's current wait under it before returning).  The holder is
 *     the task whose body waits: the waiting task itself, or the task
 *     whose body runs inline on its stack (an await's fast path, await.c),
 *     so that cancelling that task ends the wait its body is in.
 *
 * Publish after save: a task may be linked where wakers find it *before*
 * it switches out.  A wake that lands while it is still RUNNING sets
 * NOTIFIED and the park in weft__wait_block requeues it (sched/task.h), so
 * nothing is lost and nothing runs twice; the waker never resumes the
 * context itself.
 *
 * A wait whose outcome is decided elsewhere (an await: by its awaited
 * task's waiter slot) gives an `end` hook instead: cancellation and the
 * timer call end(w, outcome), under the same locks, and the hook decides.
 *
 * For the observers (sched/observe.h): every wait names its kind (a
 * static weft__wait_kind: "mutex", "chan recv"...) and its object, which
 * the record keeps, with the worker it waited on and the tick count when
 * it parked.  The dump reads them under the holder's wait_lock while the
 * record is the holder's current wait, which by the lifetime rule above
 * means the record and the waiter's stack are still there.
 */
#ifndef WEFT_SCHED_WAIT_H
#define WEFT_SCHED_WAIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"
#include "sched/observe.h"
#include "sched/parker.h"
#include "sched/timer.h"

struct weft__task;

enum {
    WEFT__W_PENDING = 0,
    WEFT__W_WOKEN = 1,
    WEFT__W_TIMEDOUT = 2,
    WEFT__W_CANCELED = 3,
    WEFT__W_BUSY = 4,      /* an await found another waiter (await.c)  */
};

struct weft__wait {
    struct weft__timer timer;        /* first: the callback casts back     */
    _Atomic uint32_t outcome;        /* WEFT__W_*                           */
    struct weft__task *task;          /* the waiting task, or NULL: thread  */
    /* Whose cancellation ends the wait: the task whose body waits, which
     * is `task` or a task run inline on its stack (weft__task_body). */
    struct weft__task *holder;
    struct weft__parker parker;      /* a waiting thread's                  */
    uint64_t deadline;               /* absolute ns, 0: none                */
    struct weft__timers *timers;     /* where the timer is armed, or NULL  */
    bool nomem;                      /* no memory to arm the timer          */
    /* For the primitive that lists the record (under its lock). */
    struct weft__wait *next, *prev;
    bool listed;
    void *value;                     /* a value handed over (channels)     */
    uintptr_t data;                  /* the primitive's own use            */
    /* A wait decided elsewhere (await): called with CANCELED under the
     * holder's wait_lock, or with TIMEDOUT under the timers' lock, instead
     * of the outcome CAS; NULL for the usual one (weft__wait_init_hook). */
    void (*end)(struct weft__wait *w, uint32_t outcome);
    /* What the wait is (sched/observe.h), set before the record is
     * published; a kind flagged NOCANCEL is one cancellation leaves
     * alone (weft__wait_init_nocancel). */
    const struct weft__wait_kind *kind;
    const void *obj;                 /* the mutex, channel, task awaited... */
    /* weft__ticks() when the task parked: set before every park of a task
     * in the wait (weft__wait_parking), so a parked waiter's is set; read
     * by the observers only for a parked one. */
    _Atomic uint64_t since;
};

/*
 * weft__wait_init - set up a wait by the calling task (or plain thread)
 * that ends at `deadline` (absolute CLOCK_MONOTONIC ns; 0: never), of
 * kind `kind` on object `obj` (for the observers; obj may be NULL).
 * Returns 0, or -ECANCELED if the calling task has been cancelled (then
 * nothing was set up: return the error, touching nothing).  On 0 the
 * record is the task's current wait, visible to weft_task_cancel, and
 * weft__wait_block must follow.
 */
static inline int weft__wait_init(struct weft__wait *w, uint64_t deadline,
                                  const struct weft__wait_kind *kind,
                                  const void *obj);

/* The same, for a wait decided elsewhere (the await): cancellation and
 * the deadline call end(w, outcome) instead of deciding; data is for it.
 * The caller arms the timer itself (weft__wait_arm), and stamps the park
 * (weft__wait_parking). */
static inline int
weft__wait_init_hook(struct weft__wait *w, uint64_t deadline,
                     void (*end)(struct weft__wait *w, uint32_t outcome),
                     uintptr_t data, const struct weft__wait_kind *kind,
                     const void *obj);

/*
 * weft__wait_init_nocancel - as weft__wait_init, for a wait that
 * cancellation must not end (a condition variable re-acquiring its mutex
 * before it returns -ECANCELED), of a kind flagged WEFT__WK_NOCANCEL: it
 * always succeeds, and weft_task_cancel leaves the record alone (it is
 * the current wait all the same, for the observers' sake).  Only a waker
 * or the deadline ends it.
 */
static inline void weft__wait_init_nocancel(struct weft__wait *w,
                                            uint64_t deadline,
                                            const struct weft__wait_kind *kind,
                                            const void *obj);

/* wait.c's part of the three above, which store kind and obj in the
 * caller (an out-of-line call with six arguments cost eight instructions
 * more per wait than these stores). */
int weft__wait_setup_hook(struct weft__wait *w, uint64_t deadline,
                          void (*end)(struct weft__wait *w, uint32_t outcome),
                          uintptr_t data);
void weft__wait_setup_nocancel(struct weft__wait *w, uint64_t deadline);

static inline int weft__wait_init(struct weft__wait *w, uint64_t deadline,
                                  const struct weft__wait_kind *kind,
                                  const void *obj)
{
    w->kind = kind;
    w->obj = obj;
    return weft__wait_setup_hook(w, deadline, NULL, 0);
}

static inline int
weft__wait_init_hook(struct weft__wait *w, uint64_t deadline,
                     void (*end)(struct weft__wait *w, uint32_t outcome),
                     uintptr_t data, const struct weft__wait_kind *kind,
                     const void *obj)
{
    w->kind = kind;
    w->obj = obj;
    return weft__wait_setup_hook(w, deadline, end, data);
}

static inline void weft__wait_init_nocancel(struct weft__wait *w,
                                            uint64_t deadline,
                                            const struct weft__wait_kind *kind,
                                            const void *obj)
{
    w->kind = kind;
    w->obj = obj;
    weft__wait_setup_nocancel(w, deadline);
}

/* The waiting task is about to park in w (weft__wait_block calls it for
 * its own parks; the await, which parks itself, calls it too): note when,
 * for the observers.  One tick read and one store. */
static inline void weft__wait_parking(struct weft__wait *w)
{
    /* Relaxed: the dump reads it racily, under the holder's wait_lock. */
    atomic_store_explicit(&w->since, weft__ticks(), memory_order_relaxed);
}

/*
 * weft__wait_block - park (a task) or block (a thread) until the outcome
 * is decided; then disarm the timer and stop being the task's current
 * wait.  Returns the outcome (never PENDING).  The caller next retakes its
 * primitive's lock and unlinks the record if it is still listed.
 * -ENOMEM is reported by setting nomem (outcome TIMEDOUT) when the timer
 * could not be armed (here: not if weft__wait_arm_first armed it).
 */
uint32_t weft__wait_block(struct weft__wait *w);

/* For a wait that does not block through weft__wait_block (await): arm
 * its timer at its deadline, in a task; false for no memory (nomem set,
 * nothing armed, nothing decided).  After the wait, disarm it: once
 * weft__wait_disarm returns, the timer's callback is over; then stop being
 * the task's current wait (weft__wait_leave), after which a cancel is
 * over with the record. */
bool weft__wait_arm(struct weft__wait *w);

/*
 * weft__wait_arm_first - for a wait whose call must not have started
 * anything it cannot take back when its timer cannot be armed (a condition
 * variable that releases its mutex, an offload that hands fn to a thread,
 * a lazy task that starts): arm the timer now, before that step, instead
 * of in weft__wait_block (which then finds it armed).  Returns 0 (armed,
 * or nothing to arm: no deadline, or a plain thread, whose wait needs no
 * memory), or -ENOMEM: nothing armed, nothing decided; the caller ends
 * the wait with weft__wait_abandon and returns the error.
 */
int weft__wait_arm_first(struct weft__wait *w);

/* End a wait that was set up (weft__wait_init) but will not block: disarm
 * its timer if it was armed, and stop being the task's current wait. */
void weft__wait_abandon(struct weft__wait *w);
void weft__wait_disarm(struct weft__wait *w);
void weft__wait_leave(struct weft__wait *w);

/*
 * weft__wait_wake - decide the outcome WOKEN and wake the waiter; false if
 * another outcome was decided first (then do nothing more with it: its
 * waiter unlinks itself).  Call under the lock the waiter retakes.
 */
bool weft__wait_wake(struct weft__wait *w);

/* The same, queueing a woken task behind what its pool has queued
 * (weft__task_wake_fifo): for the netpoller's batches. */
bool weft__wait_wake_fifo(struct weft__wait *w);

/* The error for a wait that did not end WOKEN: -ETIMEDOUT, -ECANCELED or
 * -ENOMEM. */
int weft__wait_error(const struct weft__wait *w, uint32_t outcome);

/* Whether the calling task has been cancelled (false on a plain thread);
 * for a body run inline, whether that task has. */
bool weft__cancelled(void);

/* weft_task_cancel's step, under the task's wait_lock: decide CANCELED
 * (or call the record's end hook). */
void weft__wait_cancel(struct weft__wait *w);

/* Wake a waiting task from a wait callback (an end hook).  The outcome
 * must already be decided by the caller. */
void weft__wait_resume(struct weft__wait *w);

/*
 * weft__task_timer_add - set tm's deadline and callback and arm it for
 * task t on the timers its home runs: its pool's (weft__pool_timer_add)
 * or its sync_wait driver's.  Returns the heap it went on (for the
 * disarm), or NULL for no memory (nothing armed).
 */
struct weft__timers *weft__task_timer_add(struct weft__task *t,
                                          struct weft__timer *tm,
                                          uint64_t deadline,
                                          void (*fire)(struct weft__timer *));

#endif /* WEFT_SCHED_WAIT_H */
