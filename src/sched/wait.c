/*
 * sched/wait.c — one blocking wait (sched/wait.h): parking, its timer,
 * cancellation.
 *
 * Why each wait gets exactly one wake, and no wake is lost:
 *   - The outcome leaves PENDING once (CAS); only the party whose CAS won
 *     wakes the waiter.  A task is woken with weft__task_wake, which works
 *     in every state the waiter can be in: IDLE (parked: it is queued),
 *     RUNNING (not yet switched out: NOTIFIED, and its park requeues it).
 *   - The waiter blocks in a loop on "outcome == PENDING", so a stray
 *     resume cannot end a wait early.  One can happen: an outcome decided
 *     before the task's first park (the task still RUNNING) leaves
 *     NOTIFIED set, and the task's next park requeues it once
 *     (verify/wait.pml); it then loops back to sleep.
 *
 * Cancellation (weft_task_cancel, sched/task.c): sets the task's `cancelled`
 * flag, then under the task's wait_lock decides CANCELED for its current
 * wait, if any.  weft__wait_init reads the flag after making the record
 * current under the same lock: either cancel finds the record, or init
 * finds the flag.  The flag stays set, so every later blocking point of
 * the task returns -ECANCELED at once (like Go's context, unlike Java's
 * interrupt that is cleared when reported).  "The task" is the record's
 * holder: the task whose body waits, which for a body run inline on its
 * awaiter's stack is that inline task, not the awaiter that hosts it, so
 * weft_task_cancel reaches every task's blocking points, inlined or not.
 * A wait that cancellation must not end (weft__wait_init_nocancel) is
 * made current the same way, so the observers see it, but its kind is
 * flagged NOCANCEL: the cancel's step (weft__wait_cancel) leaves it
 * undecided, and its init does not read the flag.
 *
 * The observers (sched/observe.h, dump.c) read a record's kind, object
 * and park time under the holder's wait_lock while it is the current
 * wait; kind and object are written before the record is published under
 * that lock, and the park time is an atomic word.
 */
#include "sched/wait.h"

#include "sched/driver.h"
#include "sched/task.h"
#include "sched/worker.h"

#include <errno.h>
#include <stdio.h>

/* Await: the task awaited, by its handle, which the awaiter holds (so it
 * lives) while the wait is listed.  A describe runs in the dump's walk
 * (dump.c), which holds the records' walk. */
static void describe_await(const struct weft__wait *w, char *buf, size_t n)
{
    const struct weft_task *h = w->obj;
    snprintf(buf, n, "task %llu",
             (unsigned long long)weft__handle_id_walking(h));
}

const struct weft__wait_kind weft__wait_sleep = {WEFT__WR_SLEEP, "sleep", 0,
                                                 NULL};
const struct weft__wait_kind weft__wait_await = {WEFT__WR_AWAIT, "await", 0,
                                                 describe_await};

bool weft__cancelled(void)
{
    struct weft__task *self = weft__task_current();
    return self && atomic_load_explicit(&weft__task_body(self)->cancelled,
                                        memory_order_acquire);
}

/* The record's fields (kind and obj are the inline caller's, wait.h). */
static struct weft__task *setup(struct weft__wait *w, uint64_t deadline,
                               void (*end)(struct weft__wait *w, uint32_t),
                               uintptr_t data)
{
    struct weft__task *self = weft__task_current();
    w->task = self;
    w->holder = self ? weft__task_body(self) : NULL;
    w->deadline = deadline;
    w->timers = NULL;
    w->nomem = false;
    w->next = w->prev = NULL;
    w->listed = false;
    w->value = NULL;
    /* Set before the record is published (under wait_lock, in
     * weft__wait_init_hook): a cancel reads them. */
    w->data = data;
    w->end = end;
    atomic_init(&w->outcome, WEFT__W_PENDING);
    if (!self)
        weft__parker_init(&w->parker);
    return self;
}

void weft__wait_setup_nocancel(struct weft__wait *w, uint64_t deadline)
{
    /* The task's current wait, of a NOCANCEL kind: weft__wait_cancel
     * leaves it alone (see the top), and the flag is not read. */
    if (!setup(w, deadline, NULL, 0))
        return;
    struct weft__task *h = w->holder;
    weft__spin_lock(&h->wait_lock);
    h->cur_wait = w;
    weft__spin_unlock(&h->wait_lock);
}

int weft__wait_setup_hook(struct weft__wait *w, uint64_t deadline,
                          void (*end)(struct weft__wait *w, uint32_t outcome),
                          uintptr_t data)
{
    if (!setup(w, deadline, end, data))
        return 0;
    struct weft__task *h = w->holder;
    weft__spin_lock(&h->wait_lock);
    /* Acquire-free: the lock orders us against weft_task_cancel. */
    bool cancelled = atomic_load_explicit(&h->cancelled, memory_order_relaxed);
    if (!cancelled)
        h->cur_wait = w;
    weft__spin_unlock(&h->wait_lock);
    return cancelled ? -ECANCELED : 0;
}

static void resume(struct weft__wait *w, bool fifo)
{
    if (!w->task)
        weft__parker_unpark(&w->parker);
    else if (fifo)
        weft__task_wake_fifo(w->task);
    else
        weft__task_wake(w->task);
}

void weft__wait_resume(struct weft__wait *w)
{
    resume(w, false);
}

static bool decide_as(struct weft__wait *w, uint32_t outcome, bool fifo)
{
    uint32_t pending = WEFT__W_PENDING;
    /* acq_rel: the winner's earlier writes (a handed-over value) are seen
     * by the waiter, which reads the outcome with acquire. */
    if (!atomic_compare_exchange_strong_explicit(&w->outcome, &pending,
                                                 outcome, memory_order_acq_rel,
                                                 memory_order_acquire))
        return false;
    resume(w, fifo);
    return true;
}

static bool decide(struct weft__wait *w, uint32_t outcome)
{
    return decide_as(w, outcome, false);
}

bool weft__wait_wake(struct weft__wait *w)
{
    return decide(w, WEFT__W_WOKEN);
}

bool weft__wait_wake_fifo(struct weft__wait *w)
{
    return decide_as(w, WEFT__W_WOKEN, true);
}

/* Under the timers' lock: the waiter cannot disarm and return meanwhile. */
static void timer_fired(struct weft__timer *tm)
{
    struct weft__wait *w = (struct weft__wait *)tm;
    if (w->end)
        w->end(w, WEFT__W_TIMEDOUT);
    else
        decide(w, WEFT__W_TIMEDOUT);
}

/* Called by weft_task_cancel under t->wait_lock. */
void weft__wait_cancel(struct weft__wait *w)
{
    if (w->kind->flags & WEFT__WK_NOCANCEL)
        return; /* a wait cancellation must not end (see the top) */
    if (w->end)
        w->end(w, WEFT__W_CANCELED);
    else
        decide(w, WEFT__W_CANCELED);
}

struct weft__timers *weft__task_timer_add(struct weft__task *t,
                                          struct weft__timer *tm,
                                          uint64_t deadline,
                                          void (*fire)(struct weft__timer *))
{
    struct weft__timers *ts = NULL;
    tm->deadline = deadline;
    tm->fire = fire;
    tm->index = SIZE_MAX;
    if (t->pool) {
        if (weft__pool_timer_add(t->pool, tm, &ts) < 0)
            return NULL;
    } else {
        ts = &t->driver->timers;
        if (weft__timers_add(ts, tm) < 0)
            return NULL;
    }
    return ts;
}

bool weft__wait_arm(struct weft__wait *w)
{
    w->timers = weft__task_timer_add(w->task, &w->timer, w->deadline,
                                     timer_fired);
    w->nomem = !w->timers;
    return !w->nomem;
}

void weft__wait_disarm(struct weft__wait *w)
{
    if (w->timers)
        weft__timers_remove(w->timers, &w->timer); /* fire() is over */
    w->timers = NULL;
}

int weft__wait_arm_first(struct weft__wait *w)
{
    if (!w->task || !w->deadline)
        return 0;
    return weft__wait_arm(w) ? 0 : -ENOMEM;
}

void weft__wait_abandon(struct weft__wait *w)
{
    weft__wait_disarm(w);
    weft__wait_leave(w);
    if (!w->task)
        weft__parker_fini(&w->parker);
}

uint32_t weft__wait_block(struct weft__wait *w)
{
    struct weft__task *self = w->task;
    if (!self) {
        /* Exactly one unpark comes per wait, from the party that decides
         * the outcome (ourselves at the deadline, if our CAS wins); block
         * until it is consumed, so the parker is not touched after we
         * return (parker.h). */
        uint64_t deadline = w->deadline;
        while (!weft__parker_park(&w->parker, deadline,
                                  WEFT__PARK_SPIN_NS)) {
            decide(w, WEFT__W_TIMEDOUT);
            deadline = 0;
        }
        weft__parker_fini(&w->parker);
        return atomic_load_explicit(&w->outcome, memory_order_acquire);
    }

    /* The task's home does not change while it waits, so the timer goes
     * on the timers its home's scheduler runs.  No memory for it: end the
     * wait as a timeout would (unless something came first) and report
     * -ENOMEM (nomem). */
    if (w->deadline && !w->timers && !weft__wait_arm(w))
        decide(w, WEFT__W_TIMEDOUT);
    if (atomic_load_explicit(&w->outcome, memory_order_acquire) ==
        WEFT__W_PENDING) {
        weft__wait_parking(w);
        do
            weft__task_block(self);
        while (atomic_load_explicit(&w->outcome, memory_order_acquire) ==
               WEFT__W_PENDING);
    }
    weft__wait_disarm(w);
    weft__wait_leave(w);
    return atomic_load_explicit(&w->outcome, memory_order_acquire);
}

void weft__wait_leave(struct weft__wait *w)
{
    struct weft__task *h = w->holder;
    if (!h)
        return;
    weft__spin_lock(&h->wait_lock);
    h->cur_wait = NULL; /* a cancel is over with this record */
    weft__spin_unlock(&h->wait_lock);
}

int weft__wait_error(const struct weft__wait *w, uint32_t outcome)
{
    switch (outcome) {
    case WEFT__W_WOKEN:
        return 0;
    case WEFT__W_CANCELED:
        return -ECANCELED;
    default:
        return w->nomem ? -ENOMEM : -ETIMEDOUT;
    }
}
