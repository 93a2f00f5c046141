/*
 * sched/task_run.c — a task's life on a thread: its first context, the
 * scheduler context's run loop, suspension, and its end with continuation
 * chaining (docs/design.md, "Publish after save", "Continuations").
 *
 * A worker (or a sync_wait driver) runs tasks from its scheduler context,
 * the thread's root context.  A task that suspends switches back to it and
 * names a post-switch action, which runs there once the task's registers
 * are saved and is the only place the task may be published (parked,
 * queued, registered as a waiter).  A task that ends switches straight to
 * its awaiter when it can (the awaiter belongs where this thread runs, and
 * the claim wins), so a chain of awaits costs no queue round trip; its
 * stack is freed by the action on the far side of that switch, when
 * nothing runs on it any more.
 *
 * The observers (sched/observe.h): the tracer hooks every switch.  Its hooks
 * on the way out of a task ride on the canary test that was there
 * already: a task being traced carries WEFT__CORO_OBSERVED, which sends
 * the switch-out to the same slow path as an unguarded stack's check, so
 * tracing costs the switch-out nothing while it is off.
 */
#include "sched/task.h"

#include "base/compiler.h"
#include "ctx/sanitizer.h"
#include "sched/driver.h"
#include "sched/observe.h"
#include "sched/wait.h"
#include "sched/worker.h"

/*
 * Inline awaits run a child's body on the awaiter's stack, and the child is
 * promised its declared stack size however it runs.  So each task stack
 * reserves its declared size twice over (pages commit only when touched,
 * so this costs address space, not memory); await.c's inline start needs
 * the child's full declared size free below it.
 */
#define INLINE_ROOM_MAX ((size_t)64 << 20)

static void task_entry(void *val, void *arg);

size_t weft__task_declared_stack(const struct weft__task *t,
                                 const weft_pool *pool)
{
    size_t size = atomic_load_explicit(&t->stack_size, memory_order_relaxed);
    if (!size && pool)
        size = pool->stack_size;
    return size ? size : WEFT_STACK_DEFAULT;
}

int weft__task_prepare(struct weft__task *t, const weft_pool *pool)
{
    size_t size = weft__task_declared_stack(t, pool);
    /* Twice over, for the bodies it may run inline (see the top). */
    size += size <= INLINE_ROOM_MAX ? size : 0;
    int err = weft__stack_alloc(&t->co.stack, size);
    if (unlikely(err))
        return err;
    if (t->co.stack.canary)
        t->co.flags |= WEFT__CORO_CANARY;
    weft__san_fiber_new(weft__san_of(&t->co), &t->co.stack);
    t->co.sp = weft__ctx_make(weft__stack_top(&t->co.stack), task_entry, t);
    t->started = true;
    return 0;
}

/*
 * A worker is about to start a spawned task (lazy tasks get their stack in
 * await or sync_wait, which can report a failure) and no stack can be had.
 * Nobody can be told: the spawn returned long ago.  So the task goes back,
 * SCHEDULED again, to the end of its pool's global queue, and starts when a
 * stack can be had: the tasks queued before it run first, and those that
 * end give their stacks back.  Its body has not run, so it holds nothing
 * meanwhile, and a drain waits for it like for any queued task.
 */
static void start_later(struct weft__task *t)
{
    weft_pool *pool = t->pool; /* before it is SCHEDULED */
    weft__task_make_scheduled(t);
    weft__pool_submit_fifo(pool, t);
}

/* The tracer's part of a switch: `from` stops running here (parked on
 * what its body's current wait says, or switched out for another reason),
 * and `to`, if it is a task, starts; a task that runs while a trace is on
 * is OBSERVED from then on (see the top). */
static __attribute__((noinline)) void trace_switch(struct weft_coro *from,
                                                   struct weft_coro *to)
{
    if (from && (from->flags & WEFT__CORO_HOSTED)) {
        /* Our own body's wait: only this thread changes it now. */
        struct weft__wait *w = weft__task_body(weft__task_of(from))->cur_wait;
        weft__trace(WEFT__TE_STOP,
                    atomic_load_explicit(&from->id, memory_order_relaxed),
                    w && w->kind ? 1 + w->kind->reason : 0);
    }
    if (to->flags & WEFT__CORO_HOSTED) {
        to->flags |= WEFT__CORO_OBSERVED; /* ours: we are switching to it */
        weft__trace_run(weft__task_of(to));
    }
}

/* The slow path of a switch out of self: an unguarded stack's canary, and
 * the tracer (an OBSERVED task stops being one once tracing is off). */
static __attribute__((noinline)) void switch_out_slow(struct weft_coro *self,
                                                      struct weft_coro *to)
{
    if ((self->flags & WEFT__CORO_CANARY) && !weft__stack_intact(&self->stack))
        weft__coro_overflow(self, "canary broken");
    if (self->flags & WEFT__CORO_OBSERVED) {
        if (weft__trace_on())
            trace_switch(self, to);
        else
            self->flags &= ~(uint32_t)WEFT__CORO_OBSERVED;
    }
}

void weft__task_run(struct weft__task *t)
{
    /* The scheduler context never changes thread, so these stay ours
     * across the switches below. */
    struct weft__thread *th = &weft__tls;
    while (t) {
        if (!t->started && unlikely(weft__task_prepare(t, t->pool) != 0)) {
            start_later(t);
            return;
        }
        th->current = &t->co;
        th->switches++; /* for the monitor: worker.h, th */
        if (weft__trace_on())
            trace_switch(NULL, &t->co);
        struct weft__task *next = NULL;
        /* Back when the task (or a chain it handed control to) switches
         * to this scheduler; the post-switch action's result lands in
         * `next`. */
        weft__san_switch(weft__san_of(&th->root), weft__san_of(&t->co));
        weft__ctx_jump(&t->co.sp, NULL, (void **)&next, &th->root.sp);
        weft__san_arrived(weft__san_of(&th->root));
        t = next;
    }
}

void weft__task_switch_to(struct weft_coro *to, weft__ctx_action action,
                          void *arg)
{
    struct weft__thread *th = weft__tls_fresh();
    struct weft_coro *self = th->current;
    if (unlikely(self->flags & (WEFT__CORO_CANARY | WEFT__CORO_OBSERVED)))
        switch_out_slow(self, to);
    th->current = to;
    th->switches++; /* for the monitor: worker.h, th */
    weft__san_switch(weft__san_of(self), weft__san_of(to));
    weft__ctx_jump_ontop(&to->sp, NULL, NULL, &self->sp, action, arg);
    weft__san_arrived(weft__san_of(self));
}

void weft__task_suspend(weft__ctx_action action, void *arg)
{
    weft__task_switch_to(&weft__tls_fresh()->root, action, arg);
}

static void *park_action(void *arg, void *val)
{
    (void)val;
    return weft__task_park(arg);
}

void weft__task_block(struct weft__task *self)
{
    weft__task_suspend(park_action, self);
}

/* Whether awaiter a may run on this thread right away: it belongs to this
 * worker's pool (and the worker has no timers to fire or poller to poll
 * first: pool.c, "Time, not rounds"), or to this sync_wait driver and no
 * pool. */
static bool at_home(const struct weft__sched_thread *st,
                    const struct weft__task *a)
{
    if (st->worker)
        return a->pool == st->worker->pool &&
               (!a->pin || a->pin == st->worker) &&
               !weft__pool_service_due(st->worker);
    return st->driver && a->driver == st->driver && !a->pool;
}

/*
 * The end of a task whose body called weft_task_fail: COMPLETE with its
 * life reference still held, so that the handle stays while it looks
 * whether anyone will consume the failure.  HANDLE clear at that RMW and
 * DETACHED: nobody will (the detacher came first, and left the drop to
 * us: task.h, WEFT__H_DETACHED); HANDLE clear without DETACHED: an
 * awaiter has taken it; HANDLE set: its holder will take it or, detaching
 * later, drop it.  acq_rel: as below.
 */
static __attribute__((noinline)) void finish_failed(struct weft__task *t)
{
    struct weft_task *h = t->done;
    uint64_t n = weft__task_set(t, WEFT__T_COMPLETE, WEFT__T_NOTIFIED, 0,
                                memory_order_acq_rel);
    if (!(n & WEFT__T_HANDLE) &&
        (atomic_load_explicit(&h->run, memory_order_relaxed) &
         WEFT__H_DETACHED))
        weft__failure_drop(h);
    weft__task_unref(t, 1);
}

/* The last step of an ended task, on the stack it switched to: only now
 * may its stack be reused and its run record be given back. */
static void *finish_action(void *arg, void *val)
{
    struct weft__task *t = arg;
    weft__stack_free(&t->co.stack);
    if (t->pool)
        weft__pool_leave(t->pool);
    if (unlikely(weft__handle_failed(t->done))) {
        finish_failed(t);
        return val;
    }
    /* COMPLETE, and the task's life reference goes.  acq_rel: if this
     * drops the last reference but the handle's (or the last), the
     * records it frees are freed here, after every other owner's
     * writes. */
    uint64_t n = weft__task_set(t, WEFT__T_COMPLETE, WEFT__T_NOTIFIED, -1,
                                memory_order_acq_rel);
    weft__task_settle(t, n);
    return val;
}

static _Noreturn void task_finish(struct weft__task *t)
{
    struct weft__thread *th = weft__tls_fresh();
    /* A task of a weft_sync_wait thread ends there: its count goes
     * (driver.h), before the end of a target sets the driver done. */
    if (t->driver)
        weft__driver_unbind(t->driver);
    bool observed = t->co.flags & WEFT__CORO_OBSERVED;
    if (unlikely(t->co.flags & (WEFT__CORO_CANARY | WEFT__CORO_OBSERVED))) {
        if ((t->co.flags & WEFT__CORO_CANARY) &&
            !weft__stack_intact(&t->co.stack))
            weft__coro_overflow(&t->co, "canary broken");
        observed = observed && weft__trace_on();
        if (observed)
            weft__trace(WEFT__TE_FINISH,
                        atomic_load_explicit(&t->co.id, memory_order_relaxed),
                        0);
    }

    /* Release: the result is visible to whoever sees the end's mark.
     * Acquire: the awaiter's registration (its saved context) is visible
     * to us.  The mark carries our id, for after the run record has gone
     * back (task.h): it goes in before the record can (our end's RMW, in
     * finish_action, comes after). */
    uintptr_t w = atomic_exchange_explicit(
        &t->done->waiter,
        weft__waiter_done(atomic_load_explicit(&t->co.id, memory_order_relaxed)),
        memory_order_acq_rel);
    if (w & WEFT__WAITER_THREAD) {
        weft__driver_finish((struct weft__driver *)(w & ~WEFT__WAITER_THREAD));
    } else if (w) {
        struct weft__task *a = (struct weft__task *)w;
        struct weft__sched_thread *st = weft__sched_fresh();
        if (at_home(st, a) && weft__task_claim_idle(a)) {
            /* Continuation chaining: no queue round trip. */
            th->current = &a->co;
            th->switches++;
            a->ran_on = t->ran_on;
            if (unlikely(observed)) {
                weft__trace_wake(a);
                trace_switch(&t->co, &a->co);
            }
            weft__san_switch_last(weft__san_of(&t->co),
                                  weft__san_of(&a->co));
            weft__ctx_jump_ontop(&a->co.sp, NULL, NULL, &t->co.sp,
                                 finish_action, t);
            __builtin_unreachable();
        }
        weft__task_wake(a);
    }
    th->current = &th->root;
    if (unlikely(observed))
        trace_switch(&t->co, &th->root);
    weft__san_switch_last(weft__san_of(&t->co), weft__san_of(&th->root));
    weft__ctx_jump_ontop(&th->root.sp, NULL, NULL, &t->co.sp, finish_action,
                         t);
    __builtin_unreachable();
}

static void task_entry(void *val, void *arg)
{
    (void)val;
    struct weft__task *t = arg;
    weft__san_arrived(weft__san_of(&t->co));
    t->done->result = t->co.fn(t->arg);
    task_finish(t);
}
