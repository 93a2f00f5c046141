/*
 * runtime.h — the pool's internal records: workers, tasks, the sync_wait
 * driver, and the calls between pool.c, task.c, event.c and timer.c.
 */
#ifndef WEFT_RUNTIME_H
#define WEFT_RUNTIME_H

#include <weft/pool.h>
#include <weft/task.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <urcu/wfcqueue.h>

#include "coro.h"
#include "ctx.h"
#include "netpoll.h"
#include "parker.h"
#include "runq.h"
#include "spinlock.h"
#include "timer.h"
#include "wait.h"

/* ---------------------------------------------------------------- tasks */

/*
 * The task state word: a lifecycle in the low two bits, the NOTIFIED flag,
 * and a reference count above.
 *
 *   IDLE       not queued, not running (new, or suspended and registered
 *              wherever it waits)
 *   SCHEDULED  in a run queue (that queue entry holds one reference)
 *   RUNNING    claimed by exactly one thread, which runs it
 *   COMPLETE   its body returned (and it left its stack)
 *
 * Only a CAS moves a task out of IDLE or SCHEDULED, so exactly one thread
 * wins the right to run it (DESIGN.md invariant 3).  A wake that finds the
 * task RUNNING sets NOTIFIED instead, and the task's own post-switch step
 * requeues it (nothing lost, nothing run twice).  A task stops RUNNING only
 * in a post-switch action, after its registers are saved (invariant 1).
 *
 * References: the handle (until await, sync_wait or detach consumes it),
 * the task's life (until COMPLETE), and one per run-queue entry.  A queue
 * entry can outlive its purpose: an awaiter may claim a queued task that
 * never started and run it inline (see task.c); the stale entry is dropped
 * when popped.  The record is freed when the count reaches zero.
 */
enum {
    WEFT__T_IDLE = 0,
    WEFT__T_SCHEDULED = 1,
    WEFT__T_RUNNING = 2,
    WEFT__T_COMPLETE = 3,
    WEFT__T_LIFECYCLE = 3,
    WEFT__T_NOTIFIED = 4,
    WEFT__T_STARTED = 8,   /* has been claimed to run at least once */
};
#define WEFT__T_REF ((uint64_t)1 << 8)

/* The waiter slot: NULL, the COMPLETE mark, an awaiting task, or a thread
 * waiting in weft_sync_wait (its driver, tagged with bit 0). */
#define WEFT__WAITER_DONE ((uintptr_t)2)
#define WEFT__WAITER_THREAD ((uintptr_t)1)

struct weft__driver;

struct weft_task {
    struct weft_coro co;          /* context and chain record; flags TASK */
    _Atomic uint64_t state;       /* lifecycle | NOTIFIED | refs          */
    _Atomic uintptr_t waiter;     /* see WEFT__WAITER_*                   */
    struct cds_wfcq_node qnode;   /* link in a global or driver queue     */
    weft_pool *pool;              /* home: the pool it belongs to, or     */
    struct weft__driver *driver;  /* the sync_wait thread it belongs to   */
    void *arg;
    void *result;
    size_t stack_size;            /* 0: the pool's (or the default)       */
    /* In at most one list at a time: a driver's queue, a worker's yielded
     * FIFO (both hold a SCHEDULED task), or a free list of records. */
    struct weft_task *link;
    weft_pool *spawned_on;        /* set by weft_spawn, never changed     */
    /* The task whose body runs inline on this task's stack now (the
     * innermost, see task.c), or NULL: the calling task, to weft_await. */
    struct weft_task *inlined;
    /* Cancellation (wait.c): the flag stays set once cancelled; the
     * current wait is the record weft_task_cancel decides, under the
     * lock. */
    _Atomic uint32_t cancelled;
    weft__spinlock wait_lock;
    struct weft__wait *cur_wait;
    bool started;                 /* has a context (its runner's field)   */
    bool lazy;                    /* made by weft_task_create and not yet
                                     started (the handle holder's field) */
};

/* The task running on this thread, or NULL (plain thread, or a standalone
 * coroutine).  Read afresh: safe after a switch. */
struct weft_task *weft__task_current(void);

/* The task whose body runs on self's stack now: the innermost task run
 * inline there (task.c, try_inline), or self.  Cancellation belongs to
 * it.  Only self's own code changes `inlined`, so no ordering is needed. */
static inline struct weft_task *weft__task_body(struct weft_task *self)
{
    return self->inlined ? self->inlined : self;
}

/* Wake t: queue it on its home (it must be IDLE or RUNNING). */
void weft__task_wake(struct weft_task *t);
/* The same, behind everything already queued on its pool (the global
 * queue): for a batch of wakes, as the netpoller's, that must run in the
 * order they came rather than newest first (the LIFO slot and the deque's
 * owner end), or a stream of new readiness starves the oldest. */
void weft__task_wake_fifo(struct weft_task *t);

/*
 * weft__task_suspend - in a task: save its context, switch to this
 * thread's scheduler, and there run action(arg) (which must first call
 * weft__task_park(self) to publish the suspension).  The action returns a
 * claimed (RUNNING) task to run next, or NULL.  Returns when the task is
 * resumed (possibly on another thread).
 */
void weft__task_suspend(weft__ctx_action action, void *arg);

/* In task self: suspend until something wakes it (weft__task_wake); the
 * caller has already made itself findable by its waker. */
void weft__task_block(struct weft_task *self);

/*
 * weft__task_park - in a post-switch action: t (whose context is saved)
 * stops RUNNING.  If a wake arrived meanwhile (NOTIFIED), t is claimed
 * again and returned, for the action to hand back as the task to run next;
 * else t is IDLE and NULL is returned.
 */
struct weft_task *weft__task_park(struct weft_task *t);

/* Claim an IDLE task for running (IDLE -> RUNNING); false if it was not
 * IDLE (then a wake or another claim has it). */
bool weft__task_claim_idle(struct weft_task *t);

/* Claim a task taken from a run queue (SCHEDULED -> RUNNING, the entry's
 * reference consumed); false if the entry was stale (its reference is
 * dropped then). */
bool weft__task_claim_queued(struct weft_task *t);

/* Drop n references; frees the record at zero. */
void weft__task_unref(struct weft_task *t, uint64_t n);

/*
 * weft__task_run - on a worker or driver thread, in its scheduler context:
 * run t (claimed, RUNNING) and whatever the post-switch actions hand back,
 * until control returns with nothing to run.
 */
void weft__task_run(struct weft_task *t);

/* ---------------------------------------------------------------- pools */

struct weft__worker {
    struct weft__runq q;          /* first: the hot, aligned part          */
    /* The task most recently woken by a task running here: it runs next,
     * on this warm core (message passing), and thieves take it only as a
     * last resort.  Holds a queue entry's reference. */
    _Atomic(struct weft_task *) lifo;
    unsigned lifo_streak;         /* slot runs in a row (capped)           */
    /* Tasks that yielded here, FIFO through their .link, owner only (no
     * atomics, no bound: a yielder is already counted in the pool, so
     * this cannot grow past the live tasks): they run after the deque and
     * the global queue, in the order they yielded.  Each holds a queue
     * entry's reference. */
    struct weft_task *yielded_head, *yielded_tail;
    weft_pool *pool;
    unsigned index;
    pthread_t thread;
    struct weft__parker parker;
    struct weft_task *next;       /* inbox of the scheduler context        */
    uint64_t rng;                 /* victim choice                          */
    uint32_t tick;
    bool spinning;                /* counted in pool->nspinning             */
    bool idle;                    /* on the idle list (under idle_lock)     */
    bool woken;                   /* taken off the idle list by a waker,
                                     counted as spinning (under idle_lock) */
    bool in_poll;                 /* holds the netpoller and sleeps in it,
                                     not on parker (under idle_lock)     */
    struct weft__worker *idle_next;
    /* Timed waits armed by tasks running here (pool.c, "Timers"). */
    struct weft__timers timers;
    /* Live-task accounting for drain, written by this worker only. */
    _Atomic int64_t arrived;      /* tasks that got this pool as home here */
    _Atomic int64_t left;         /* tasks of this pool that ended or left */
};

struct weft_pool {
    struct weft__worker **workers;
    unsigned nworkers;
    size_t stack_size;
    char name[16];

    /* The global injection queue: wait-free enqueue from any thread. */
    struct cds_wfcq_head inject_head;
    struct cds_wfcq_tail inject_tail;
    weft__spinlock inject_lock;    /* dequeuers' mutual exclusion        */

    /* Parking (pool.c): the no-lost-wakeup protocol is at its top. */
    _Atomic uint32_t nspinning;
    _Atomic uint32_t nidle;
    weft__spinlock idle_lock;
    struct weft__worker *idle_list;

    /* Drain: tasks that got this pool as home on no worker of it. */
    _Atomic int64_t arrived_outside;
    _Atomic int64_t left_outside;
    _Atomic uint32_t shutdown;     /* destroy began: outside spawns refused */
    _Atomic uint32_t stop;         /* drained: workers exit                 */
    _Atomic uint32_t destroying;
    struct weft__parker *destroyer;
    /* Threads outside the pool between queueing a task on it and their
     * last touch of the pool (the wake): destroy waits for them before it
     * frees the pool, since the task they queued may end, and the pool
     * drain, before they are done. */
    _Atomic uint32_t outside_submitters;

    struct weft__netpoll net;      /* socket I/O (src/io/netpoll.h)      */
};

/* The worker running on this thread, or NULL.  Read afresh. */
struct weft__worker *weft__worker_current(void);

/*
 * weft__pool_submit - queue t (SCHEDULED, holding its queue reference) on
 * pool: on the calling worker's own queue if it is one of pool's, else on
 * the global queue; then wake a worker if none is searching.
 */
void weft__pool_submit(weft_pool *pool, struct weft_task *t);

/* Queue a task woken by the running one: into the calling worker's LIFO
 * slot if it is one of pool's, else as weft__pool_submit. */
void weft__pool_submit_woken(weft_pool *pool, struct weft_task *t);

/* Queue t behind everything already queued on pool (the global queue):
 * for a yield, which the local deque (LIFO) would run again at once. */
void weft__pool_submit_fifo(weft_pool *pool, struct weft_task *t);

/* On a worker of t's pool: queue a task that yields, behind what is queued
 * here (see pool.c). */
void weft__pool_submit_yield(struct weft__worker *w, struct weft_task *t);
/* For a yield on worker w: the yielded task that the scheduler loop would
 * run next, claimed (RUNNING), when nothing else would come first; NULL
 * when the loop must decide (other work, idle workers, a fairness tick)
 * or when w's FIFO is empty (*alone is then set: nothing else waits here,
 * the yield can return at once). */
struct weft_task *weft__pool_yield_next(struct weft__worker *w, bool *alone);

/* Something changed that a sleeping worker must see (an earlier timer, a
 * socket the netpoller should watch): make sure some worker is awake to
 * notice (wakes an idle one unless one is searching). */
void weft__pool_kick(weft_pool *pool);

/*
 * weft__pool_timer_add - arm tm for a task of pool: on the calling
 * worker's timers (or the first worker's, from a thread outside the pool),
 * waking an idle worker to shorten its sleep when tm is now the pool's
 * earliest.  Stores the heap it went on in *where (for the disarm).
 * Returns 0, or -ENOMEM (nothing armed).
 */
int weft__pool_timer_add(weft_pool *pool, struct weft__timer *tm,
                         struct weft__timers **where);

/* Count a task arriving at (getting home) / leaving pool, on the calling
 * thread (the drain accounting of shutdown, pool.c).  An arrival from
 * outside the pool fails with -ESHUTDOWN once destroy began; one from the
 * pool's own workers (its tasks spawning more) never does. */
int weft__pool_arrive(weft_pool *pool);
void weft__pool_leave(weft_pool *pool);

/*
 * weft__task_timer_add - set tm's deadline and callback and arm it for
 * task t on the timers its home runs: its pool's (weft__pool_timer_add)
 * or its sync_wait driver's.  Returns the heap it went on (for the
 * disarm), or NULL for no memory (nothing armed).
 */
struct weft__timers *weft__task_timer_add(struct weft_task *t,
                                          struct weft__timer *tm,
                                          uint64_t deadline,
                                          void (*fire)(struct weft__timer *));

/* ---------------------------------------------------------------- drivers */

/*
 * A plain thread inside weft_sync_wait runs tasks that belong to it (a lazy
 * task it started, and the lazy tasks that one awaits) until its target
 * ends.  The driver lives on that thread's stack.
 */
struct weft__driver {
    struct weft__parker parker;
    pthread_mutex_t lock;             /* guards the queue                 */
    struct weft_task *queue_head;     /* woken tasks to run (FIFO), linked */
    struct weft_task **queue_tail;    /* through weft_task.link           */
    _Atomic uint32_t done;            /* the target ended                 */
    _Atomic uint32_t wakers;          /* wakes in flight (see task.c)     */
    struct weft__timers timers;       /* timed waits of its tasks         */
};

#endif /* WEFT_RUNTIME_H */
