/*
 * sched/worker.h — the pool and its workers (internal): the records, and
 * the calls the rest of sched/ and the layers above make into pool.c.
 */
#ifndef WEFT_SCHED_WORKER_H
#define WEFT_SCHED_WORKER_H

#include <weft/pool.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <urcu/wfcqueue.h>

#include "base/clock.h"
#include "base/spinlock.h"
#include "sched/observe.h"
#include "sched/parker.h"
#include "sched/poller.h"
#include "sched/runq.h"
#include "sched/task.h"
#include "sched/timer.h"
#include "sched/yielded.h"

struct weft__worker {
    struct weft__runq q;          /* first: the hot, aligned part          */
    /* The task most recently woken by a task running here: it runs next,
     * on this warm core (message passing), and thieves take it only as a
     * last resort, or at once from a stuck worker.  Holds a queue entry's
     * reference. */
    _Atomic(struct weft__task *) lifo;
    unsigned lifo_streak;         /* slot runs in a row (capped)           */
    /* Tasks that yielded here, FIFO, owner only but for a thief's seize
     * while this worker is stuck (sched/yielded.h; no bound: a yielder is
     * already counted in the pool, so this cannot grow past the live
     * tasks): they run after the deque and the global queue, in the order
     * they yielded.  Each holds a queue entry's reference. */
    struct weft__yielded yielded;
    /* Woken tasks pinned to this worker's thread (weft_task.pin): any
     * thread enqueues (wait-free), only this worker dequeues, nobody
     * steals (pool.c, "Pinned tasks").  Each holds a queue entry's
     * reference. */
    struct __cds_wfcq_head pinned_head;
    struct cds_wfcq_tail pinned_tail;
    /* Its thread's ctx block (ctx/coro.h), set when the thread starts:
     * what it runs now (`current`) and its count of scheduling points
     * (`switches`, bumped at every switch to a task, inline run and
     * yield), the monitor's and the dump's signs of life
     * (weft__worker_switches, weft__worker_running). */
    struct weft__thread *_Atomic th;
    /* When this worker next fires its due timers and polls (pool.c,
     * "Time, not rounds"), in ticks; its own. */
    uint64_t service_at;
    /* The heap its tasks' timed waits arm their timers on, and that it
     * fires at its scheduling points: its own, or for a spare the heap of
     * the worker it covers (monitor.c), so that a spare's timers outlive
     * its cover. */
    struct weft__timers *home;
    weft_pool *pool;
    unsigned index;               /* < nworkers: a worker; else a spare    */
    pthread_t thread;
    _Atomic pid_t tid;            /* its kernel thread id (dump, monitor)  */
    /* The CPU clock of the thread that runs its place (monitor.c). */
    _Atomic clockid_t cpu_clock;
    /* Its own thread's th, tid and CPU clock: while its place is lent
     * (pool.c, "Lending"), th, tid and cpu_clock are the borrower's, so
     * that the monitor watches the thread that runs its tasks. */
    struct weft__thread *own_th;
    pid_t own_tid;
    clockid_t own_clock;
    struct weft__parker parker;
    uint64_t rng;                 /* victim choice                          */
    uint32_t tick;
    bool spinning;                /* counted in pool->nspinning             */
    bool idle;                    /* on the idle list (under idle_lock)     */
    bool woken;                   /* taken off the idle list by a waker,
                                     counted as spinning (under idle_lock) */
    bool in_poll;                 /* holds the poller and sleeps in it,
                                     not on parker (under idle_lock)     */
    bool dirty;                   /* ran tasks since it last parked
                                     (pool.c, "Memory")                 */
    /* Lent to a thread in weft_sync_wait (pool.c, "Lending"): taken off
     * the idle list, its place held by that thread while it runs the task
     * it waits for; lent_wait: its own thread woke meanwhile and waits to
     * be given its place back.  Both under idle_lock. */
    bool lent;
    bool lent_wait;
    /* What a borrower made is given back too (pool.c, "Lending"):
     * lent_ran, a borrower ran tasks on this worker since its own thread
     * last looked (then it owes a trim, as if it ran them); trim_armed,
     * its sleep ends for a trim it owes; both under idle_lock.  made_seen:
     * pool.c's memory_made() when it last trimmed (or started), written
     * by its own thread, read by a giving back. */
    bool lent_ran;
    bool trim_armed;
    _Atomic uint64_t made_seen;
    /* Its tasks parked in a hooked call, pinned to its thread (sched/
     * hook.c); only its thread changes it.  A worker with any is not lent:
     * their wakes need its own thread. */
    uint32_t pins;
    uint64_t trim_at;             /* when it gives memory back if still
                                     idle; 0: nothing owed              */
    struct weft__worker *idle_next;
    /* Timed waits armed by tasks running here (pool.c, "Timers"); a
     * spare's stays empty (see home). */
    struct weft__timers timers;
    /* Live-task accounting for drain, written by this worker only. */
    _Atomic int64_t arrived;      /* tasks that got this pool as home here */
    _Atomic int64_t left;         /* tasks of this pool that ended or left */
    /* The monitor's (monitor.c): set while this worker has run one task
     * for WEFT__STUCK_NS without a switch (thieves then take its LIFO slot
     * and its yielded FIFO too); for a spare, whether it is one of the
     * pool's workers now (active), the worker it covers, and the request
     * to stop covering (retire: it leaves at its next scheduling point);
     * for any worker, the spare that covers it. */
    _Atomic uint32_t stuck;
    _Atomic uint32_t active;
    _Atomic uint32_t retire;
    _Atomic(struct weft__worker *) covers;
    _Atomic(struct weft__worker *) covered_by;
    /* A spare's thread (monitor.c, "Spare threads"): none yet, waiting
     * to cover, covering, or gone (exited after its keep-alive: joined
     * by the monitor before a new one is made). */
    _Atomic uint32_t thread_state;
    /* Its counters, for weft_pool_stats (sched/observe.h). */
    struct weft__worker_stats stats;
};

struct weft__monitor;

struct weft_pool {
    /* The workers, then the spares made so far (monitor.c): slots
     * [0, nworkers) are the workers, [nworkers, nslots) spares, each
     * published (release) before nslots counts it; the array has room
     * for nworkers + max_spares. */
    struct weft__worker **workers;
    unsigned nworkers;
    _Atomic unsigned nslots;
    unsigned max_spares;
    size_t stack_size;
    size_t cache_bytes;            /* kept cached once idle (pool.c)     */
    char name[16];
    /* Ticks between a busy worker's timer checks (pool.c, service). */
    uint64_t service_ticks;

    /* The global injection queue: wait-free enqueue from any thread. */
    struct cds_wfcq_head inject_head;
    struct cds_wfcq_tail inject_tail;
    weft__spinlock inject_lock;    /* dequeuers' mutual exclusion        */

    /* Parking (pool.c): the no-lost-wakeup protocol is at its top. */
    _Atomic uint32_t nspinning;
    /* Readers of a worker's th (weft__worker_switches, _running) now: a
     * lent place's th is its borrower's block, in that thread's TLS, and
     * the borrower waits for them when it gives the place back (pool.c,
     * weft__pool_unlend) before its thread may exit. */
    _Atomic uint32_t th_readers;
    _Atomic uint32_t nidle;
    weft__spinlock idle_lock;
    struct weft__worker *idle_list;
    /* Active workers: nworkers plus the spares that cover now (changed
     * under idle_lock). */
    _Atomic uint32_t nactive;
    /* The monitor sleeps until a worker wakes (under idle_lock: a worker
     * that leaves the idle list wakes it, monitor.c). */
    bool monitor_asleep;
    /* The worker whose sleep ends for the pool's next trim (pool.c,
     * "Memory"); under idle_lock.  It trims for the pool while it is on
     * the idle list; other idle workers gave their caches to the depots
     * when they parked and sleep without a deadline of their own. */
    struct weft__worker *trim_owner;

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

    /* Socket I/O: NULL until a task first waits on an fd (sched/poller.h).
     * Set once; acquire on load pairs with the attaching CAS. */
    _Atomic(struct weft__poller *) poller;

    /* The stuck-worker monitor and its spares, NULL when off (monitor.c).
     * The monitor, which starts the spares, blocks every signal (weft.h,
     * "Signals"); a spare runs the program's tasks, so it starts with the
     * mask its pool's workers started with, that of the thread that made
     * the pool. */
    struct weft__monitor *monitor;
    sigset_t worker_mask;

    /* The observers' (stats.c, dump.c): when it was made, and its link in
     * the list of pools (under that list's lock). */
    uint64_t made_ns;
    weft_pool *observe_next;
};

/* The number of worker slots made so far (workers and spares): loops
 * over queues and counters go to it.  Acquire: the slots it counts are
 * set up. */
static inline unsigned weft__pool_slots(weft_pool *p)
{
    return atomic_load_explicit(&p->nslots, memory_order_acquire);
}

/* Whether w should fire its due timers and poll now (pool.c, "Time, not
 * rounds"): something is armed on its heap or waits on I/O, and its
 * service interval has passed.  At every scheduling point. */
static inline bool weft__pool_service_due(struct weft__worker *w)
{
    if (atomic_load_explicit(&w->home->next, memory_order_relaxed) ==
        UINT64_MAX) {
        /* Acquire: the poller's fields are set up (the attaching CAS). */
        struct weft__poller *poller =
            atomic_load_explicit(&w->pool->poller, memory_order_acquire);
        if (!poller ||
            !atomic_load_explicit(poller->waiting, memory_order_relaxed))
            return false;
    }
    return weft__ticks() >= w->service_at;
}

/* What the monitor and the dump sample of another worker: its count of
 * scheduling points, and the context it runs (NULL: its scheduler loop,
 * or its thread has not started).  Racy reads of plain words its thread
 * writes (a stale value is what a sample is), left out of
 * ThreadSanitizer's checks. */
/* Counted in th_readers around the reads (seq_cst: the Dekker pair of
 * weft__pool_unlend's store of th and its look at the count). */
WEFT_RACY_READS static inline uint64_t
weft__worker_switches(const struct weft__worker *w)
{
    atomic_fetch_add_explicit(&w->pool->th_readers, 1, memory_order_seq_cst);
    const struct weft__thread *th =
        atomic_load_explicit(&w->th, memory_order_seq_cst);
    uint64_t n = th ? *(const volatile uint64_t *)&th->switches : 0;
    atomic_fetch_sub_explicit(&w->pool->th_readers, 1, memory_order_release);
    return n;
}

WEFT_RACY_READS static inline const struct weft_coro *
weft__worker_running(const struct weft__worker *w)
{
    atomic_fetch_add_explicit(&w->pool->th_readers, 1, memory_order_seq_cst);
    const struct weft__thread *th =
        atomic_load_explicit(&w->th, memory_order_seq_cst);
    const struct weft_coro *c = NULL;
    if (th) {
        c = *(const struct weft_coro *const volatile *)&th->current;
        if (c == &th->root)
            c = NULL;
    }
    atomic_fetch_sub_explicit(&w->pool->th_readers, 1, memory_order_release);
    return c;
}

/* A scheduling point of worker w, on its own thread (worker.h, th). */
static inline void weft__worker_note(struct weft__worker *w)
{
    atomic_load_explicit(&w->th, memory_order_relaxed)->switches++;
}

/* The worker running on this thread, or NULL.  Read afresh. */
static inline struct weft__worker *weft__worker_current(void)
{
    return weft__sched_fresh()->worker;
}

/*
 * weft__pool_submit - queue t (SCHEDULED, holding its queue reference) on
 * pool: on the calling worker's own queue if it is one of pool's, else on
 * the global queue; then wake a worker if none is searching.
 */
void weft__pool_submit(weft_pool *pool, struct weft__task *t);

/* Queue a task woken by the running one: into the calling worker's LIFO
 * slot if it is one of pool's, else as weft__pool_submit. */
void weft__pool_submit_woken(weft_pool *pool, struct weft__task *t);

/* Queue t behind everything already queued on pool (the global queue):
 * for a yield, which the local deque (LIFO) would run again at once. */
void weft__pool_submit_fifo(weft_pool *pool, struct weft__task *t);

/* On a worker of t's pool: queue a task that yields, behind what is queued
 * here (see pool.c). */
void weft__pool_submit_yield(struct weft__worker *w, struct weft__task *t);
/* For a yield on worker w: the yielded task that the scheduler loop would
 * run next, claimed (RUNNING), when nothing else would come first; NULL
 * when the loop must decide (other work, idle workers, a fairness tick)
 * or when w's FIFO is empty (*alone is then set: nothing else waits here,
 * the yield can return at once). */
struct weft__task *weft__pool_yield_next(struct weft__worker *w, bool *alone);

/* Queue t (SCHEDULED, holding its queue reference), pinned to worker w,
 * on w's own queue of pinned tasks, and wake w if it sleeps: from any
 * thread. */
void weft__pool_submit_pinned(struct weft__worker *w, struct weft__task *t);

/* Something changed that a sleeping worker must see (an earlier timer, an
 * fd the poller should watch): make sure some worker is awake to notice
 * (wakes an idle one unless one is searching). */
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

/* Lending (pool.c): a thread in weft_sync_wait takes the place of an idle
 * worker of pool, or gets NULL; it gives the place back with
 * weft__pool_unlend, from the same thread. */
struct weft__worker *weft__pool_lend(weft_pool *pool);
void weft__pool_unlend(struct weft__worker *w);

/* Count a task arriving at (getting home) / leaving pool, on the calling
 * thread (the drain accounting of shutdown, pool.c).  An arrival from
 * outside the pool fails with -ESHUTDOWN once destroy began; one from the
 * pool's own workers (its tasks spawning more) never does. */
int weft__pool_arrive(weft_pool *pool);
void weft__pool_leave(weft_pool *pool);
/* The leave of an arrival that queued nothing after all: also wakes the
 * workers once a destroy may be waiting on that arrival (pool.c). */
void weft__pool_leave_unqueued(weft_pool *pool);

/*
 * weft__pool_poller - the pool's poller, or NULL.  weft__pool_attach_poller
 * - make p the pool's poller if it has none yet; returns the pool's poller
 * afterwards (p, or the one another thread attached first: then the caller
 * frees p).  The pool frees its poller (ops->fini) when it is destroyed.
 */
static inline struct weft__poller *weft__pool_poller(weft_pool *pool)
{
    return atomic_load_explicit(&pool->poller, memory_order_acquire);
}
struct weft__poller *weft__pool_attach_poller(weft_pool *pool,
                                              struct weft__poller *p);

#endif /* WEFT_SCHED_WORKER_H */
