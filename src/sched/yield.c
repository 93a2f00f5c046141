/*
 * sched/yield.c — weft_schedule (move to a pool) and weft_yield (let the
 * queued tasks run first).
 */
#include "sched/driver.h"
#include "sched/task.h"

#include "base/compiler.h"
#include "sched/thread.h"
#include "sched/worker.h"

struct move_args {
    struct weft__task *self;
    weft_pool *to;
};

static void *move_action(void *arg, void *val)
{
    (void)val;
    struct move_args *m = arg;
    struct weft__task *self = m->self;
    if (self->pool != m->to) {
        if (self->pool)
            weft__pool_leave(self->pool);
        self->pool = m->to;
        if (self->driver) {
            weft__driver_unbind(self->driver); /* on its thread */
            self->driver = NULL;
        }
    }
    weft_pool *pool = self->pool; /* before it can run elsewhere */
    /* Moving from a thread in weft_sync_wait: take an idle worker's place
     * and run on here, still RUNNING, as that worker (pool.c, "Lending");
     * the driver gives the place back when the task comes back to it. */
    struct weft__sched_thread *st = weft__sched_fresh();
    if (st->driver && !st->worker) {
        struct weft__worker *w = weft__pool_lend(pool);
        if (w) {
            st->worker = w;
            return self;
        }
    }
    weft__task_make_scheduled(self);
    /* Behind every task already queued: the yield's promise. */
    weft__pool_submit_fifo(pool, self);
    return NULL;
}

/* Post-switch: a yielding task goes behind what is queued on its worker
 * (the worker that runs this action: the one it yielded on). */
static void *yield_action(void *arg, void *val)
{
    (void)val;
    struct weft__task *self = arg;
    struct weft__worker *w = weft__sched_tls.worker;
    weft__task_make_scheduled(self);
    weft__pool_submit_yield(w, self);
    return NULL;
}

/*
 * When the next task the scheduler would run is one that yielded before
 * (the common case when tasks take turns), switch to it straight away,
 * with the same post-switch action, instead of through the scheduler
 * context: one switch instead of two and no pass of the scheduler loop.
 * The order is the loop's (weft__pool_yield_next), and the action still
 * publishes the yielder only after its context is saved.  With nothing
 * else to run here, the yield returns at once.
 */
WEFT_EXPORT int weft_yield(void)
{
    struct weft__task *self = weft__task_current();
    struct weft__worker *w = weft__worker_current();
    if (!self || !w || self->pool != w->pool)
        return -EPERM;
    if (unlikely(weft__sched_tls.driver)) {
        /* On a lent worker's place (pool.c, "Lending"): this thread runs
         * no other task, so the yield gives the place back and the worker
         * runs what is queued, this task after it. */
        weft__task_suspend(yield_action, self);
        return 0;
    }
    bool alone;
    struct weft__task *next = weft__pool_yield_next(w, &alone);
    if (alone)
        return 0;
    if (!next) {
        weft__task_suspend(yield_action, self);
        return 0;
    }
    /* A yielded task has its context already. */
    weft__task_switch_to(&next->co, yield_action, self);
    return 0;
}

WEFT_EXPORT int weft_schedule(weft_pool *pool)
{
    if (!pool)
        return -EINVAL;
    struct weft__task *self = weft__task_current();
    if (!self)
        return -EPERM;
    struct weft__worker *w = weft__worker_current();
    if (w && w->pool == pool && self->pool == pool)
        return weft_yield();
    int err = weft__pool_arrive(pool);
    if (err)
        return err;
    struct move_args m = {self, pool};
    weft__task_suspend(move_action, &m);
    return 0;
}
