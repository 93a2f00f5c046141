/*
 * event.c — the fire-once event.
 *
 * state_ is 0 (unset, nobody waiting), the head of the waiters' list, SETTING
 * (a set is waking them) or SET.  lock_ guards the list.  Waiter records
 * live on the waiters' stacks (a parked task's stack stays put while it is
 * parked).
 *
 * Set, and who touches what when (so an event and a waiter record may both
 * live on a waiter's stack):
 *   1. lock; take the list; state_ = SETTING; unlock
 *   2. state_ = SET (release): the setter's last access to the event.
 *      Anyone who sees SETTING waits until it reads SET before returning.
 *   3. for each waiter taken: read its next; CAS its outcome PENDING -> SET
 *      and if that won, wake it; then store released = 1 (release): the
 *      setter's last access to that record.  A waiter whose record was
 *      taken returns only after it sees released.
 *
 * Timeouts race the set through the outcome CAS: the timer (or the timed-out
 * thread) CASes PENDING -> TIMEDOUT; whoever wins decides the result and
 * does the waking.  A waiter that timed out unlinks its record under the
 * lock if it is still listed; if a set has already taken it, it waits for
 * released instead.
 *
 * A task's wait registers in a post-switch action (publish after save):
 * its record becomes visible, and its timer armed, only once its context
 * is saved.
 */
#include <weft/event.h>

#include "runtime.h"

#include <errno.h>
#include <stddef.h>
#include <sched.h>

#define WEFT_EXPORT __attribute__((visibility("default"), noinline))

#define SET ((uintptr_t)1)
#define SETTING ((uintptr_t)2)

enum { PENDING, GOT_SET, TIMEDOUT, CANCELED };

struct waiter {
    struct waiter *next;
    _Atomic uint32_t outcome;
    _Atomic uint32_t released;
    struct weft_task *task;          /* a parked task, or                   */
    struct weft__parker *parker;     /* a blocked thread                    */
};

static inline void relax(unsigned *spins)
{
    if (++*spins < 100) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ volatile("yield");
#endif
    } else {
        sched_yield();
    }
}

static void ev_lock(weft_event *ev)
{
    unsigned spins = 0;
    while (__atomic_exchange_n(&ev->lock_, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&ev->lock_, __ATOMIC_RELAXED))
            relax(&spins);
}

static void ev_unlock(weft_event *ev)
{
    __atomic_store_n(&ev->lock_, 0, __ATOMIC_RELEASE);
}

static uintptr_t ev_state(const weft_event *ev)
{
    return __atomic_load_n(&ev->state_, __ATOMIC_ACQUIRE);
}

/* A set is under way (or done): wait for its step 2. */
static void await_set(const weft_event *ev)
{
    unsigned spins = 0;
    while (ev_state(ev) != SET)
        relax(&spins);
}

static void await_released(struct waiter *w)
{
    unsigned spins = 0;
    while (!atomic_load_explicit(&w->released, memory_order_acquire))
        relax(&spins);
}

/* Unlink w if it is still listed (lock held); false if a set took it. */
static bool unlink_waiter(weft_event *ev, struct waiter *w)
{
    uintptr_t s = __atomic_load_n(&ev->state_, __ATOMIC_RELAXED);
    if (s == SET || s == SETTING)
        return false;
    struct waiter **link = (struct waiter **)&ev->state_;
    while (*link != w)
        link = &(*link)->next;
    *link = w->next;
    return true;
}

WEFT_EXPORT void weft_event_init(weft_event *ev)
{
    if (!ev)
        return;
    __atomic_store_n(&ev->state_, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ev->lock_, 0, __ATOMIC_RELEASE);
}

WEFT_EXPORT bool weft_event_is_set(const weft_event *ev)
{
    return ev && ev_state(ev) == SET;
}

WEFT_EXPORT void weft_event_set(weft_event *ev)
{
    if (!ev)
        return;
    ev_lock(ev);
    uintptr_t s = __atomic_load_n(&ev->state_, __ATOMIC_RELAXED);
    if (s == SET || s == SETTING) {
        ev_unlock(ev);
        return;
    }
    __atomic_store_n(&ev->state_, SETTING, __ATOMIC_RELAXED);
    ev_unlock(ev);
    /* Our last access to the event; what we wrote before is visible to
     * whoever sees SET. */
    __atomic_store_n(&ev->state_, SET, __ATOMIC_RELEASE);

    struct waiter *w = (struct waiter *)s;
    while (w) {
        struct waiter *next = w->next;
        uint32_t pending = PENDING;
        if (atomic_compare_exchange_strong_explicit(
                &w->outcome, &pending, GOT_SET, memory_order_acq_rel,
                memory_order_acquire)) {
            if (w->task)
                weft__task_wake(w->task);
            else
                weft__parker_unpark(w->parker);
        }
        atomic_store_explicit(&w->released, 1, memory_order_release);
        w = next;
    }
}

/* ---------------------------------------------------------- threads */

static int wait_thread(weft_event *ev, uint64_t deadline)
{
    struct weft__parker parker;
    struct waiter w = {.task = NULL, .parker = &parker};
    atomic_init(&w.outcome, PENDING);
    atomic_init(&w.released, 0);

    ev_lock(ev);
    uintptr_t s = __atomic_load_n(&ev->state_, __ATOMIC_RELAXED);
    if (s == SET || s == SETTING) {
        ev_unlock(ev);
        await_set(ev);
        return 0;
    }
    weft__parker_init(&parker);
    w.next = (struct waiter *)s;
    __atomic_store_n(&ev->state_, (uintptr_t)&w, __ATOMIC_RELAXED);
    ev_unlock(ev);

    bool listed = true;
    while (atomic_load_explicit(&w.outcome, memory_order_acquire) == PENDING) {
        if (weft__parker_park(&parker, deadline))
            continue;
        uint32_t pending = PENDING;
        if (atomic_compare_exchange_strong_explicit(
                &w.outcome, &pending, TIMEDOUT, memory_order_acq_rel,
                memory_order_acquire)) {
            ev_lock(ev);
            listed = !unlink_waiter(ev, &w);
            ev_unlock(ev);
        }
    }
    if (listed)
        await_released(&w); /* a set took our record: let it finish */
    weft__parker_fini(&parker);
    return atomic_load_explicit(&w.outcome, memory_order_relaxed) == GOT_SET
               ? 0
               : -ETIMEDOUT;
}

/* ---------------------------------------------------------- tasks */

struct task_wait {
    struct weft__timer timer;    /* first: the timer callback casts back */
    struct weft__wait cancel;    /* the task's current wait, for cancel  */
    struct waiter w;
    weft_event *ev;
    struct weft__timers *timers; /* where the timer was armed, or NULL   */
    uint64_t deadline;
    bool set_seen;               /* found set while registering         */
    bool no_timer;               /* no memory to arm the timer          */
};

static void timer_fired(struct weft__timer *tm)
{
    struct task_wait *tw = (struct task_wait *)tm;
    uint32_t pending = PENDING;
    /* Under the timers' lock: the waiter cannot disarm and return while we
     * touch its record. */
    if (atomic_compare_exchange_strong_explicit(
            &tw->w.outcome, &pending, TIMEDOUT, memory_order_acq_rel,
            memory_order_acquire))
        weft__task_wake(tw->w.task);
}

/* weft_task_cancel, under the task's wait_lock (which the waiter takes
 * before it returns): the outcome CAS races the set and the timer like
 * theirs do. */
static void cancel_fired(struct weft__wait *cw)
{
    struct task_wait *tw =
        (struct task_wait *)((char *)cw - offsetof(struct task_wait, cancel));
    uint32_t pending = PENDING;
    if (atomic_compare_exchange_strong_explicit(
            &tw->w.outcome, &pending, CANCELED, memory_order_acq_rel,
            memory_order_acquire))
        weft__task_wake(tw->w.task);
}

/* Post-switch: the task's context is saved; list it and arm its timer. */
static void *register_action(void *arg, void *val)
{
    (void)val;
    struct task_wait *tw = arg;
    weft_event *ev = tw->ev;

    ev_lock(ev);
    uintptr_t s = __atomic_load_n(&ev->state_, __ATOMIC_RELAXED);
    if (s == SET || s == SETTING) {
        ev_unlock(ev);
        tw->set_seen = true;
        return tw->w.task; /* still ours and RUNNING: continue it */
    }
    tw->w.next = (struct waiter *)s;
    __atomic_store_n(&ev->state_, (uintptr_t)&tw->w, __ATOMIC_RELAXED);
    ev_unlock(ev);

    if (tw->deadline) {
        tw->timers = weft__task_timer_add(tw->w.task, &tw->timer,
                                          tw->deadline, timer_fired);
        if (!tw->timers) {
            /* No memory for the timer: end the wait at once, as a timeout
             * would (unless a set came first), and report -ENOMEM. */
            tw->no_timer = true;
            timer_fired(&tw->timer);
        }
    }
    return weft__task_park(tw->w.task);
}

static int wait_task(struct weft_task *self, weft_event *ev, uint64_t deadline)
{
    struct task_wait tw = {.ev = ev, .deadline = deadline};
    tw.w.task = self;
    tw.w.parker = NULL;
    atomic_init(&tw.w.outcome, PENDING);
    atomic_init(&tw.w.released, 0);
    if (weft__wait_init_hook(&tw.cancel, 0, cancel_fired, 0))
        return -ECANCELED;

    weft__task_suspend(register_action, &tw);
    if (tw.set_seen) {
        weft__wait_leave(&tw.cancel);
        await_set(ev);
        return 0;
    }
    while (atomic_load_explicit(&tw.w.outcome, memory_order_acquire) ==
           PENDING)
        weft__task_block(self);

    if (tw.timers)
        weft__timers_remove(tw.timers, &tw.timer); /* fire() is over */
    weft__wait_leave(&tw.cancel);                 /* cancel_fired too  */
    uint32_t outcome =
        atomic_load_explicit(&tw.w.outcome, memory_order_relaxed);
    bool listed = true;
    if (outcome == TIMEDOUT || outcome == CANCELED) {
        ev_lock(ev);
        listed = !unlink_waiter(ev, &tw.w);
        ev_unlock(ev);
    }
    if (listed)
        await_released(&tw.w);
    if (outcome == GOT_SET)
        return 0;
    if (outcome == CANCELED)
        return -ECANCELED;
    return tw.no_timer ? -ENOMEM : -ETIMEDOUT;
}

static int wait_until(weft_event *ev, uint64_t deadline)
{
    if (!ev)
        return -EINVAL;
    uintptr_t s = ev_state(ev);
    if (s == SET)
        return 0;
    struct weft_task *self = weft__task_current();
    if (self)
        return wait_task(self, ev, deadline);
    return wait_thread(ev, deadline);
}

WEFT_EXPORT int weft_event_wait(weft_event *ev)
{
    return wait_until(ev, 0);
}

WEFT_EXPORT int weft_event_wait_for(weft_event *ev, uint64_t timeout_ns)
{
    if (!ev)
        return -EINVAL;
    uint64_t now = weft__now_ns();
    uint64_t deadline = now + timeout_ns;
    if (deadline < now)
        deadline = UINT64_MAX - 1; /* effectively forever */
    if (timeout_ns == 0 && ev_state(ev) != SET)
        return -ETIMEDOUT;
    return wait_until(ev, deadline);
}
