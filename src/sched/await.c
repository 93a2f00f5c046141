/*
 * sched/await.c — weft_await: waiting in a task for another task's end
 * (docs/design.md, "Continuations", "Lazy stacks and inline awaits").
 *
 * Await versus completion.  The awaited task's `waiter` slot is arbitrated
 * by atomics alone:
 *
 *   awaiter A (in a post-switch action, A's context saved):
 *       CAS waiter: NULL -> A;  on success park A (IDLE), else (DONE) A
 *       simply continues
 *   completer (T's body returned, its result stored; task_run.c):
 *       w = exchange(waiter, DONE);  (DONE: the end's mark, which carries
 *       T's id: task.h)  if w is a task: claim it (IDLE ->
 *       RUNNING) and switch straight to it; if the claim fails (A has not
 *       parked yet, or a wake took it) wake it instead
 *
 * Exactly one of the CAS and the exchange comes first.  If the CAS does,
 * the completer finds A and resumes it (directly, or through wake(), whose
 * NOTIFIED flag A's park turns into a requeue if A is still switching
 * out): A is resumed exactly once.  If the exchange does, the CAS fails
 * and A continues on its own.  Either way A sees DONE, and the result was
 * written before the exchange (release) that made DONE visible (acquire).
 *
 * Await versus cancel and timeout.  weft_task_cancel stores the flag,
 * then (under the wait holder's wait_lock: the awaiter, or the task whose
 * body runs inline on its stack and awaits) end_await CASes the awaiter
 * out of t's waiter slot; the await's timer does the same under its
 * timers' lock.  A cancel that comes before the awaiter is in the slot
 * finds nothing to take back, so the awaiter, once in the slot, reads the
 * flag and takes itself back.  Both sides are seq_cst (flag store, slot
 * CAS; slot write, flag load): in the single total order, if cancel's CAS
 * read the slot empty, the awaiter's later write precedes its flag load,
 * which then sees the flag.  The timer is armed only once the awaiter is
 * in the slot (in the post-switch action; for a lazy task, right after
 * start_lazy's store into the slot, before t starts, so that a timer that
 * cannot be armed leaves t unstarted), so its CAS always finds it there,
 * or DONE.  Whoever takes the slot back (one CAS wins) decides the
 * outcome; the completer's exchange that finds the slot empty wakes
 * nobody, and t is left unconsumed, to be awaited again.
 *
 * Inline awaits: a task that was spawned and still sits, never started, in
 * a queue of the awaiter's pool is claimed by CAS (SCHEDULED -> RUNNING)
 * and its body runs as a plain call on the awaiter's stack: no stack, no
 * switch.  The queue entry stays behind with its reference and is dropped
 * when popped.  Only when the awaiter's stack has room to spare, so deep
 * chains fall back to suspension; not in a cancelled task (it starts no
 * wait); and not for weft_await_for: an inline body runs to its end on the
 * awaiter's stack, and no timeout could end it.
 */
#include "sched/driver.h"
#include "sched/task.h"

#include "base/compiler.h"
#include "base/storeload.h"
#include "ctx/sanitizer.h"
#include "ctx/stack.h"
#include "sched/wait.h"
#include "sched/worker.h"

/* Room for the frames of the await itself, below an inline body's
 * declared stack (task_run.c reserves each stack twice over). */
#define INLINE_SLACK (16u * 1024u)

struct await_args {
    struct weft__task *self;    /* the awaiting task (what the slot holds) */
    struct weft_task *h;        /* the awaited task's handle               */
    struct weft__wait *w;
    struct weft__task *holder;  /* whose cancel ends the await (w->holder) */
};

/* Take our claim back from h's waiter slot and decide `outcome`; false if
 * the task ended first (or another party took it back). */
static bool take_back(struct weft__wait *w, struct weft_task *h,
                      struct weft__task *self, uint32_t outcome)
{
    uintptr_t me = (uintptr_t)self;
    if (!atomic_compare_exchange_strong_explicit(&h->waiter, &me, 0,
                                                 memory_order_seq_cst,
                                                 memory_order_acquire))
        return false;
    atomic_store_explicit(&w->outcome, outcome, memory_order_release);
    return true;
}

/* In the slot now: a cancel that came before found nothing to take. */
static bool take_back_if_cancelled(struct await_args *a)
{
    return atomic_load_explicit(&a->holder->cancelled, memory_order_seq_cst) &&
           take_back(a->w, a->h, a->self, WEFT__W_CANCELED);
}

/* weft_task_cancel (under the holder's wait_lock) or the timer (under its
 * timers' lock): if the completer's exchange came first it resumes us (and
 * the result is there to take); else we are woken with `outcome`. */
static void end_await(struct weft__wait *w, uint32_t outcome)
{
    if (take_back(w, (struct weft_task *)w->data, w->task, outcome))
        weft__wait_resume(w);
}

/* In the slot, context saved: arm the timer of a timed await.  No memory
 * for it: take ourselves back as timed out (the wait reports -ENOMEM). */
static bool arm_if_timed(struct await_args *a)
{
    if (!a->w->deadline || weft__wait_arm(a->w))
        return true;
    return !take_back(a->w, a->h, a->self, WEFT__W_TIMEDOUT);
}

static void *await_action(void *arg, void *val)
{
    (void)val;
    struct await_args *a = arg;
    uintptr_t none = 0;
    if (atomic_compare_exchange_strong_explicit(
            &a->h->waiter, &none, (uintptr_t)a->self, memory_order_seq_cst,
            memory_order_acquire)) {
        if (!take_back_if_cancelled(a) && arm_if_timed(a))
            return weft__task_park(a->self);
    } else if (!weft__waiter_ended(none)) {
        /* Someone else waits for it (weft/task.h: one waiter at a time).
         * Nothing of ours is in the slot, so no cancel or timer can
         * decide the outcome meanwhile. */
        atomic_store_explicit(&a->w->outcome, WEFT__W_BUSY,
                              memory_order_release);
    }
    /* It ended while we switched out, we were cancelled, or it has
     * another waiter: continue at once (a stray NOTIFIED is answered by
     * running). */
    atomic_fetch_and_explicit(&a->self->done->state,
                              ~(uint64_t)WEFT__T_NOTIFIED,
                              memory_order_relaxed);
    return a->self;
}

/* Enough stack left below the caller for an inline body? */
static bool stack_room(struct weft__task *self, size_t need)
{
    char *low = weft__stack_low(&self->co.stack);
    char *here = __builtin_frame_address(0);
    return here > low && (size_t)(here - low) > need + INLINE_SLACK;
}

/*
 * The await fast path: run a queued, never-started task of our pool as a
 * plain call.  Best case (fork-join): it is the newest entry of our own
 * deque, so popping it takes the entry and its reference, and nobody else
 * can reach it any more (we hold the handle).  Else, if it is still
 * queued anywhere, claim it by CAS and leave the entry to be dropped when
 * popped.  On success the await is over: the result is in *result and
 * the handle is consumed, or, with keep, the handle is still the
 * caller's (and the result is in h->result).
 */
static inline __attribute__((always_inline)) bool
try_inline(struct weft__task *self, struct weft_task *h, void **result,
           bool keep, weft_take_fn take, void *take_arg, bool *failed)
{
    struct weft__worker *w = weft__worker_current();
    if (!w)
        return false;
    /* Acquire: pairs with spawn's release of the state (its fields).
     * Until the claim below, the run record may go back and be made
     * another task's (the task ended elsewhere meanwhile): what is read
     * of it only decides whether to try (spawned_on and stack_size are
     * atomic, and outside a room's window: records.c), and the claim,
     * on the handle's state, fails then. */
    uint64_t s = atomic_load_explicit(&h->state, memory_order_acquire);
    if (weft__task_lifecycle(s) != WEFT__T_SCHEDULED ||
        (s & WEFT__T_STARTED))
        return false;
    struct weft__task *t = weft__handle_run(h);
    weft_pool *home = atomic_load_explicit(&t->spawned_on,
                                           memory_order_relaxed);
    if (home != w->pool ||
        !stack_room(self, weft__task_declared_stack(t, home)))
        return false;
    uint64_t running = (s & ~(uint64_t)WEFT__T_LIFECYCLE) | WEFT__T_RUNNING |
                       WEFT__T_STARTED;
    /* Our deque's bottom is what we pushed last: if it is t's record, it
     * is the entry our spawn of it pushed (only we push there, and a
     * record given back and made again meanwhile would be someone else's
     * push). */
    if (weft__runq_peek_bottom(&w->q) == t && weft__runq_pop(&w->q) == t) {
        /* Ours alone: no other entry, no waiter, no wake can exist.  A
         * weft_task_cancel through a borrowed pointer takes no reference
         * to a task not started (task.h, WEFT__H_CANCEL), so a plain
         * store undoes nothing (an RMW here cost fib 14%). */
        atomic_store_explicit(&h->state, running - WEFT__T_REF,
                              memory_order_relaxed);
        /* The cancel's load of the state comes after a membarrier: this
         * store, then the look below (task.h, WEFT__H_CANCEL), in this
         * order for the compiler. */
        atomic_signal_fence(memory_order_seq_cst);
    } else if (!atomic_compare_exchange_strong_explicit(
                   &h->state, &s, running, memory_order_acquire,
                   memory_order_relaxed)) {
        return false; /* a worker took it first */
    }
    if (weft__handle_cancel_requested(h))
        atomic_store_explicit(&t->cancelled, 1, memory_order_relaxed);
    t->started = true;
    /* A scheduling decision, for the monitor (worker.h, th): a body that
     * runs its children as calls is not stuck in one task. */
    weft__worker_note(w);
    /* While t's body runs here, t is the calling task (to weft_await). */
    struct weft__task *outer = self->inlined;
    self->inlined = t;
    void *r = t->co.fn(t->arg);
    self->inlined = outer;
    h->result = r;
    if (result && !keep)
        *result = r;
    else if (!keep && unlikely(weft__handle_failed(h)))
        weft__failure_drop(h); /* a failure nobody takes (weft/task.h) */
    if (failed)
        *failed = weft__handle_failed(h); /* its own mark: no order needed */
    /* The room, before the RMW below may free it (with the record). */
    if (take)
        take(t->arg, r, take_arg);
    /* Nobody else can be waiting: we hold the handle. */
    atomic_store_explicit(
        &h->waiter,
        weft__waiter_done(atomic_load_explicit(&t->co.id, memory_order_relaxed)),
        memory_order_relaxed);
    weft__pool_leave(t->pool);
    /* COMPLETE; the task's life reference and the handle's (consumed
     * here, unless the caller keeps it: weft_await_all) go in one RMW.
     * acq_rel: if no entry is left (the pop above), this drops the last
     * reference, after every other owner's writes. */
    uint64_t n = weft__task_set(
        t, WEFT__T_COMPLETE,
        WEFT__T_NOTIFIED | (keep ? 0 : (uint64_t)WEFT__T_HANDLE),
        keep ? -1 : -2, memory_order_acq_rel);
    if (weft__task_refs(n) == 0)
        weft__record_free_pair(t);
    else if (keep)
        /* The handle is still held (weft_await_all): maybe only it is
         * left.  Without keep, HANDLE went in the RMW above, and a
         * reference left is a queue entry's, whose claim frees both. */
        weft__task_settle(t, n);
    return true;
}

/*
 * After an inline run: drop the stale entries at the bottom of this
 * worker's deque.  A fork-join body spawns its children and awaits them in
 * the order it spawned them, so each await but the last claims its child
 * by CAS from the middle of the deque and leaves its entry behind; once
 * the last child is awaited (popped cleanly from the bottom), its
 * siblings' entries are the bottom of the deque, their tasks COMPLETE.
 * Popping them here, on the owner's cheap end, keeps the deque from
 * filling with them and spilling them to the global queue, where every
 * worker would pay a claim that fails for each (seen: a third of a
 * repeated skynet's time), and frees their records now instead of when
 * some worker reaches them (seen: 230 MB of records kept alive by a
 * million such entries).  Only COMPLETE tasks: a COMPLETE task is never
 * queued again, so the entry is certainly stale and its reference the one
 * to drop.  The worker is read afresh: the inline body may have parked,
 * and its host continued on another worker.
 */
#define STALE_BATCH 32u

/* The state of an entry we do not own yet: it may be the oldest, which a
 * thief can take, end and free meanwhile (the record stays mapped: a
 * chunk is unmapped only once all its records have sat in the depot
 * through an idle trim).  What is read only decides what to try;
 * drop_bottom and pop decide what is ours. */
static bool is_complete(struct weft__task *t)
{
    if (!t)
        return false;
    struct weft_task *h = weft__task_done_racy(t);
    return weft__task_lifecycle(atomic_load_explicit(
               &h->state, memory_order_acquire)) == WEFT__T_COMPLETE;
}

static inline __attribute__((always_inline)) void retire_stale(void)
{
    struct weft__worker *w = weft__worker_current();
    if (!w)
        return;
    for (;;) {
        /* The run of COMPLETE entries at the bottom, taken with one
         * StoreLoad (runq.h, drop_bottom) rather than one per pop. */
        struct weft__task *stale[STALE_BATCH];
        uint32_t k = 0;
        while (k < STALE_BATCH &&
               is_complete(stale[k] = weft__runq_peek_below(&w->q, k)))
            k++;
        if (k == 0)
            return;
        if (k > 1 && weft__runq_drop_bottom(&w->q, k)) {
            for (uint32_t i = 0; i < k; i++)
                /* Fails (COMPLETE), and drops the entry's reference. */
                (void)weft__task_claim_queued(stale[i]);
            continue;
        }
        struct weft__task *t = weft__runq_pop(&w->q);
        if (!t)
            return; /* a thief took the last one */
        (void)weft__task_claim_queued(t);
    }
}

/* Post-switch, on t's stack: the awaiter (in t's slot since start_lazy)
 * stops running; t runs on, so we cannot continue here. */
static void *lazy_park_action(void *arg, void *val)
{
    (void)val;
    /* Copied first: `a` is on the awaiter's stack, which a cancel may
     * resume as soon as it is parked.  a.w is touched only by the winner
     * of the slot, and while we hold the slot nobody else resumes it. */
    struct await_args a = *(struct await_args *)arg;
    weft__task_park(a.self);
    if (take_back_if_cancelled(&a))
        weft__task_wake(a.self);
    return NULL;
}

/* Undo weft__task_prepare for a lazy task that is not started after all:
 * its stack goes back as an ended task's does (task_run.c, finish_action),
 * and it is as weft_task_create left it.  Not inlined: rare, and gcc 12's
 * UBSan build of await_until with it inlined tested the address of the
 * stack cache's thread-local list for NULL with a `je` after an `lea`
 * (which sets no flags), and so reported a null pointer that was not. */
static __attribute__((noinline)) void unprepare(struct weft__task *t)
{
    weft__stack_free(&t->co.stack);
    t->co.flags &= ~(uint32_t)WEFT__CORO_CANARY;
    t->co.sp = NULL;
    t->started = false;
}

/*
 * Start a lazy task on this thread by symmetric transfer; it inherits our
 * home and comes back to us when it ends.  Returns 0 once we are resumed,
 * or -ENOMEM, with t untouched (not started), if it could get no stack or
 * a timed await could not arm its timer.
 */
static int start_lazy(struct weft__task *self, struct weft__task *t,
                      struct weft__wait *w)
{
    struct weft_task *h = t->done;
    int err = weft__task_prepare(t, self->pool);
    if (err)
        return err;
    /* seq_cst, an exchange (base/storeload.h): see the top (await versus
     * cancel). */
    weft__storeload_store(&h->waiter, (uintptr_t)self);
    /* The timer before t starts (here, not in the post-switch action: a
     * timer that cannot be armed must leave t unstarted), and only now
     * that we are in the slot, where its end_await finds us (see the
     * top). */
    if (w->deadline && !weft__wait_arm(w)) {
        uintptr_t me = (uintptr_t)self;
        if (!atomic_compare_exchange_strong_explicit(
                &h->waiter, &me, 0, memory_order_seq_cst,
                memory_order_acquire))
            /* A cancel took us back and woke us while we run: answer
             * its NOTIFIED by running on. */
            atomic_fetch_and_explicit(&self->done->state,
                                      ~(uint64_t)WEFT__T_NOTIFIED,
                                      memory_order_relaxed);
        unprepare(t);
        return -ENOMEM;
    }
    t->pool = self->pool;
    t->driver = self->driver;
    if (t->driver)
        t->driver->bound++; /* on its thread: self runs there */
    if (t->pool)
        (void)weft__pool_arrive(t->pool); /* from its own worker: cannot fail */
    weft__task_start_here(h);
    /* We park on t's stack, after our save; t ends by resuming us. */
    struct await_args a = {self, h, w, w->holder};
    weft__task_switch_to(&t->co, lazy_park_action, &a);
    return 0;
}

/*
 * Wait in a task until the task of handle h has ended, at most until
 * deadline (0: none; nowait: not at all).  Returns 0 once it has ended: h
 * is consumed (the result in *result), or, with keep, h is still the
 * caller's (the result in h->result, for weft__task_consume).  Else
 * the wait's error, h not consumed.
 */
static inline __attribute__((always_inline)) int
await_until(weft_task *h, void **result, uint64_t deadline, bool nowait,
            bool keep, weft_take_fn take, void *take_arg, bool *failed)
{
    if (!h)
        return -EINVAL;
    struct weft__task *self = weft__task_current();
    if (!self)
        return -EPERM;
    /* The calling task is the body running inline on self's stack, if any;
     * self, awaited by it, would be a cycle as well. */
    if (h == self->done || (self->inlined && h == self->inlined->done))
        return -EINVAL;

    uintptr_t waiter = atomic_load_explicit(&h->waiter, memory_order_acquire);
    if (!weft__waiter_ended(waiter)) {
        /* Timeout 0 never waits, so a cancelled task gets its
         * -ETIMEDOUT too (weft/weft.h, "Timeouts"); a lazy t does not
         * start.  Another wait for it parked (a task, or a thread tagged
         * WEFT__WAITER_THREAD): -EBUSY, as for any timeout. */
        if (nowait)
            return waiter ? -EBUSY : -ETIMEDOUT;
        /* A cancelled task starts no wait, and running its body here
         * could be one (its waits are its own, not ours, to cancel). */
        if (atomic_load_explicit(&weft__task_body(self)->cancelled,
                                 memory_order_relaxed))
            return -ECANCELED;
        /* LAZY is the handle holder's flag: ours. */
        bool lazy = atomic_load_explicit(&h->state, memory_order_relaxed) &
                    WEFT__T_LAZY;
        /* Not for a timed await: nothing could end an inline body at the
         * deadline. */
        if (!lazy && !deadline && try_inline(self, h, result, keep, take,
                                                  take_arg, failed)) {
            retire_stale();
            return 0;
        }
        /* A blocking point: cancellable from here on.  The wait names the
         * handle, which lives as long as we hold it (wait.c's description
         * reads its id). */
        struct weft__wait w;
        if (weft__wait_init_hook(&w, deadline, end_await, (uintptr_t)h,
                                 &weft__wait_await, h))
            return -ECANCELED;
        weft__wait_parking(&w);
        if (lazy) {
            int err = start_lazy(self, weft__handle_run(h), &w);
            if (err) {
                weft__wait_leave(&w);
                return err;
            }
        } else {
            struct await_args a = {self, h, &w, w.holder};
            weft__task_suspend(await_action, &a);
        }
        /* Resumed for another reason than the task's end?  Wait on. */
        while (!weft__waiter_ended(atomic_load_explicit(
                   &h->waiter, memory_order_acquire)) &&
               atomic_load_explicit(&w.outcome, memory_order_acquire) ==
                   WEFT__W_PENDING)
            weft__task_block(weft__task_current());
        weft__wait_disarm(&w); /* the timer's end_await is over */
        weft__wait_leave(&w);  /* a cancel's end_await is over */
        if (!weft__waiter_ended(
                atomic_load_explicit(&h->waiter, memory_order_acquire))) {
            /* not consumed: await it again later */
            uint32_t o = atomic_load_explicit(&w.outcome, memory_order_acquire);
            return o == WEFT__W_BUSY ? -EBUSY : weft__wait_error(&w, o);
        }
    }
    if (!keep) {
        /* A task with a room keeps its run record while the handle is
         * held (KEEP), and the room in it; the acquire that saw DONE
         * ordered the body's writes to it before this. */
        if (take)
            take(weft__handle_run(h)->arg, h->result, take_arg);
        /* The acquire that saw DONE saw the body's mark too. */
        if (failed)
            *failed = weft__handle_failed(h);
        weft__task_consume(h, result);
    }
    return 0;
}

/* await_until, inlined where it is hot (weft_await, weft_task_take: the
 * fork-join paths, where a call and a frame of its own would cost as much
 * as the rest of the await), and here once for the other callers. */
static __attribute__((noinline)) int
await_general(weft_task *h, void **result, uint64_t deadline, bool nowait,
              bool keep)
{
    return await_until(h, result, deadline, nowait, keep, NULL, NULL, NULL);
}

/* In a task as weft_await, keeping the handle (the await_all's keep);
 * elsewhere as weft_sync_wait, keeping it too (driver.c). */
WEFT_EXPORT int weft_task_join(weft_task *t)
{
    /* await_until says -EPERM for "not in a task", and only for that:
     * then this is a plain thread (or a coroutine), and waits as
     * weft_sync_wait does.  (One look at the thread's state, not two.) */
    int err = await_general(t, NULL, 0, false, true);
    return err == -EPERM ? weft__sync_wait_keep(t) : err;
}

/* As weft_await, with the room handed to take before the handle goes; on
 * a plain thread as weft_task_join, then the same. */
WEFT_EXPORT int weft_task_take(weft_task *t, weft_take_fn take, void *arg)
{
    if (!t || !take)
        return -EINVAL;
    /* A room lives as long as the run record, which a task with one
     * keeps as long as its handle (ROOM comes with KEEP). */
    if (!(atomic_load_explicit(&t->state, memory_order_relaxed) &
          WEFT__T_ROOM))
        return -EINVAL;
    int err = await_until(t, NULL, 0, false, false, take, arg, NULL);
    if (err != -EPERM)
        return err;
    /* A plain thread: weft_task_join's wait, then the same hand-over. */
    err = weft__sync_wait_keep(t);
    if (err)
        return err;
    take(weft__handle_run(t)->arg, t->result, arg);
    weft__task_drop_handle(t);
    return 0;
}

WEFT_EXPORT int weft_await(weft_task *t, void **result)
{
    return await_until(t, result, 0, false, false, NULL, NULL, NULL);
}

/* As weft_await, saying whether the body failed; on a plain thread as
 * weft_task_take does, with the same look. */
WEFT_EXPORT int weft_task_result(weft_task *t, void **result)
{
    if (!result)
        return -EINVAL;
    bool failed = false;
    int err = await_until(t, result, 0, false, false, NULL, NULL, &failed);
    if (err == -EPERM) {
        /* A plain thread: weft_task_join's wait, then the consume. */
        err = weft__sync_wait_keep(t);
        if (err)
            return err;
        failed = weft__handle_failed(t);
        weft__task_consume(t, result);
    }
    if (err)
        return err;
    return failed ? WEFT_TASK_FAILED : 0;
}

WEFT_EXPORT int weft_await_for(weft_task *t, void **result, uint64_t timeout_ns)
{
    return await_general(t, result, weft__deadline_after(timeout_ns),
                         timeout_ns == 0, false);
}

/*
 * All or nothing (weft/task.h): every handle is checked before any wait,
 * each task is waited for in order without consuming its handle (an
 * ended task stays awaitable), and only once all have ended are the
 * handles consumed and the results written.  A failed call therefore
 * consumed nothing: the tasks that ended meanwhile simply have ended.
 */
static int await_all_until(weft_task **ts, size_t n, void **results,
                           uint64_t deadline, bool nowait)
{
    struct weft__task *self = weft__task_current();
    if (!self)
        return -EPERM;
    if (!ts && n)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!ts[i] || ts[i] == self->done ||
            (self->inlined && ts[i] == self->inlined->done))
            return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        int err = await_general(ts[i], NULL, deadline, nowait, true);
        if (err)
            return err;
    }
    /* Each handle once: one given twice would be consumed twice.  Found
     * now, when all have ended (waiting again for an ended task returns
     * at once), in one pass and no memory: each slot is marked, and a
     * mark already there is a repeat.  Relaxed stores: once DONE, the
     * slot is only its holder's, ours. */
    for (size_t i = 0; i < n; i++) {
        uintptr_t mark = atomic_load_explicit(&ts[i]->waiter,
                                              memory_order_relaxed);
        if (mark & WEFT__WAITER_SEEN) {
            for (size_t j = 0; j < i; j++)
                atomic_store_explicit(
                    &ts[j]->waiter,
                    atomic_load_explicit(&ts[j]->waiter,
                                         memory_order_relaxed) &
                        ~WEFT__WAITER_SEEN,
                    memory_order_relaxed);
            return -EINVAL;
        }
        atomic_store_explicit(&ts[i]->waiter, mark | WEFT__WAITER_SEEN,
                              memory_order_relaxed);
    }
    for (size_t i = 0; i < n; i++) {
        weft__task_consume(ts[i], results ? &results[i] : NULL);
        ts[i] = NULL;
    }
    return 0;
}

WEFT_EXPORT int weft_await_all(weft_task **ts, size_t n, void **results)
{
    return await_all_until(ts, n, results, 0, false);
}

WEFT_EXPORT int weft_await_all_for(weft_task **ts, size_t n, void **results,
                                   uint64_t timeout_ns)
{
    return await_all_until(ts, n, results, weft__deadline_after(timeout_ns),
                           timeout_ns == 0);
}
