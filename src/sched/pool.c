/*
 * sched/pool.c — worker threads, the scheduler loop, work stealing and
 * parking.
 *
 * Shape (docs/design.md, "The scheduler"): each worker owns a bounded
 * work-stealing deque (runq.h) that it pushes and pops at the bottom;
 * thieves take up to half of a victim's deque from the top.  A global queue (liburcu's wait-free cds_wfcq) takes
 * tasks submitted from outside the pool and a full ring's overflow.  A
 * worker looks at the global queue first every 61 ticks, so tasks there
 * cannot starve behind a busy ring.  Rejected: one shared queue (every
 * submit and pop contends on one line), and per-worker queues without
 * stealing (one busy producer serialises everything).
 *
 * Idle workers search (steal) with at most half of the busy workers
 * searching at once, then park on their own parker (futex); while tasks
 * wait on sockets, one of them parks in the pool's poller instead
 * (sched/poller.h; io/netpoll.c has its protocol), and busy workers poll it
 * without blocking when they run out of local work and, by elapsed time,
 * at their scheduling points (below, "Time, not rounds").  A worker stuck
 * in one task is covered by a spare (below, "Spares"; the policy is
 * sched/monitor.c's).
 *
 * No lost wakeup.  Two mirrored patterns around one StoreLoad barrier:
 *
 *   submitter:  push the task;  BARRIER;  if nspinning == 0 && nidle > 0:
 *               wake one idle worker (and count it as spinning)
 *   searcher:   nspinning -= 1 (a locked RMW: BARRIER);  re-check every
 *               queue; if any has work, search again instead of parking
 *
 * Either the submitter's read of nspinning follows the searcher's
 * decrement, and then it sees 0 and wakes a worker (if the searcher was
 * the last one); or it precedes it, and then the searcher's re-check
 * follows the push and finds the task.  A submitter that sees
 * nspinning > 0 leaves the task to a searcher, which either finds it or
 * re-checks as above before it parks.  Workers park through their parker,
 * which keeps an unpark that arrives before the park (parker.h), or, the
 * one that holds the poller, in the poller, woken through its wake (an
 * eventfd, whose count likewise keeps a write that comes first): a waker
 * reads the worker's in_poll where it takes it off the idle list (under
 * idle_lock, where the worker set it before joining the list) and wakes it
 * the matching way.
 * The barrier on the submitter's side: a push to the global queue is an
 * atomic exchange (a full barrier).  A worker's push to its own ring has no
 * barrier: if a searcher misses that task, the pushing worker still runs it
 * itself, so only parallelism, never progress, depends on that race (Go
 * makes the same trade).
 *
 * A waker takes one worker off the idle list under idle_lock and counts it
 * as spinning (CAS of nspinning from 0 to 1: one waker at a time, and no
 * waking while someone already searches).  A worker that finds work while
 * spinning stops spinning, and if it was the last searcher it wakes another
 * one, since more work may be coming (Go's resetspinning).
 *
 * Shutdown (weft_pool_destroy), in order:
 *   1. Refuse a destroy from one of the pool's own workers (-EDEADLK: it
 *      would wait for itself) and a second concurrent destroy (-EBUSY).
 *   2. Set `shutdown`: from now on tasks cannot arrive from outside the pool
 *      (spawn, schedule: -ESHUTDOWN), so the set of live tasks can only
 *      shrink, apart from what live tasks spawn themselves.
 *   3. Wake every idle worker, so each re-checks drain before sleeping.
 *   4. A worker that is about to park while `shutdown` is set checks drain:
 *      tasks that arrived == tasks that left, with the per-worker counters
 *      read lefts first (so a task counted as left is counted as arrived).
 *      An arrival from outside that queues nothing after all leaves and
 *      wakes every worker to check again (weft__pool_leave_unqueued).
 *      When drained it sets `stop` and wakes every worker and the
 *      destroyer; workers exit their loops on `stop`.
 *   5. The destroyer joins the workers, waits for threads outside the pool
 *      that queued a task and are still waking a worker (their task may
 *      already have ended), or that left and are still waking the workers
 *      (outside_submitters), then drops the queue
 *      entries that are left (stale entries of tasks that were run inline),
 *      so no task record leaks, and frees the pool.
 */
#include "sched/worker.h"

#include "ctx/sanitizer_build.h"
#include "ctx/stack.h"
#include "sched/destroy.h"
#include "sched/monitor.h"

#include "base/alloc.h"
#include "base/backoff.h"
#include "base/compiler.h"
#include "base/utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef WEFT_ASAN
#include <sanitizer/lsan_interface.h>
#endif

#define GLOBAL_EVERY 61      /* ticks between fairness looks at the global queue */
#define STEAL_ROUNDS 4
#define LIFO_STREAK_MAX 16   /* slot runs in a row before the deque's turn */
WEFT_API weft_pool *weft_pool_current(void)
{
    struct weft__worker *w = weft__worker_current();
    return w ? w->pool : NULL;
}

WEFT_API unsigned weft_pool_threads(const weft_pool *pool)
{
    return pool ? pool->nworkers : 0;
}

/* ------------------------------------------------------------- accounting */

int weft__pool_arrive(weft_pool *p)
{
    struct weft__worker *w = weft__worker_current();
    if (w && w->pool == p) {
        /* Only this worker writes its counter. */
        atomic_store_explicit(&w->arrived,
                              atomic_load_explicit(&w->arrived,
                                                   memory_order_relaxed) + 1,
                              memory_order_release);
        return 0;
    }
    /* seq_cst pair with destroy's store of `shutdown`: either we see it and
     * back out, or the drain check sees our arrival. */
    atomic_fetch_add_explicit(&p->arrived_outside, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&p->shutdown, memory_order_seq_cst)) {
        weft__pool_leave_unqueued(p);
        return -ESHUTDOWN;
    }
    return 0;
}

static void wake_all(weft_pool *p);

/*
 * An arrival that queues nothing after all (the arrival's own back-out
 * above, a fill that weft_spawn_with's caller refused).  A worker that
 * checked drain between the arrival and this leave found the pool not
 * drained and may sleep for good: nothing of the pool parks after a leave
 * from outside it (a worker's own leave is followed by its next park,
 * which checks again).  So a leave from outside wakes every worker, each
 * of which checks drain at its next park (wake_all's unpark is kept by a
 * parker that has not parked yet, and orders this leave before that
 * check).  Both callers are rare: a destroy under way, a refusal.
 */
void weft__pool_leave_unqueued(weft_pool *p)
{
    struct weft__worker *w = weft__worker_current();
    if (w && w->pool == p) {
        weft__pool_leave(p);
        return;
    }
    /* Counted as an outside submitter from before the leave, which may
     * complete the drain, to after the wake: the destroyer frees the pool
     * only once none is left (as submit_outside). */
    atomic_fetch_add_explicit(&p->outside_submitters, 1, memory_order_seq_cst);
    weft__pool_leave(p);
    wake_all(p);
    atomic_fetch_sub_explicit(&p->outside_submitters, 1, memory_order_release);
}

void weft__pool_leave(weft_pool *p)
{
    struct weft__worker *w = weft__worker_current();
    if (w && w->pool == p)
        atomic_store_explicit(&w->left,
                              atomic_load_explicit(&w->left,
                                                   memory_order_relaxed) + 1,
                              memory_order_release);
    else
        atomic_fetch_add_explicit(&p->left_outside, 1, memory_order_release);
}

/* Step 4 of shutdown: no task of this pool is alive. */
static bool drained(weft_pool *p)
{
    /* Spares count too (active or not: what they counted stays).  The
     * arrivals are summed over the slots there are after the lefts were
     * read: a task counted as left arrived on a slot made before it left. */
    unsigned n = weft__pool_slots(p);
    int64_t left = atomic_load_explicit(&p->left_outside, memory_order_acquire);
    for (unsigned i = 0; i < n; i++)
        left += atomic_load_explicit(&p->workers[i]->left,
                                     memory_order_acquire);
    n = weft__pool_slots(p);
    int64_t arrived =
        atomic_load_explicit(&p->arrived_outside, memory_order_acquire);
    for (unsigned i = 0; i < n; i++)
        arrived += atomic_load_explicit(&p->workers[i]->arrived,
                                        memory_order_acquire);
    return arrived == left;
}

/* --------------------------------------------------------- queues, waking */

static void inject(weft_pool *p, struct weft__task *t)
{
    cds_wfcq_node_init(&t->qnode);
    /* An atomic exchange inside: the submitter's barrier (see the top). */
    cds_wfcq_enqueue(&p->inject_head, &p->inject_tail, &t->qnode);
}

/*
 * Whether the global queue looks empty.  The tail points back at the head
 * node exactly when the queue is empty; an enqueue moves it first (with
 * its xchg), so a queue with an enqueue in progress counts as non-empty
 * and the dequeue side waits for the link.  One relaxed load, inline: this
 * runs on every pass of the scheduler loop, where liburcu's out-of-line
 * cds_wfcq_empty cost a call and two loads.  Relaxed is enough: a stale
 * "empty" only delays the task to the next look (the fairness tick looks
 * again), and the task was published by the enqueue's own ordering.
 */
static bool inject_empty(weft_pool *p)
{
    return __atomic_load_n(&p->inject_tail.p, __ATOMIC_RELAXED) ==
           &p->inject_head.node;
}

/*
 * Under inject_lock: start loading the tasks the next takes will return.
 * A spawner whose deque overflows feeds the other workers through this
 * queue, and each task it made is, for the worker that takes it, a run
 * of cache misses (its handle's state, which the claim swaps, and the
 * lines of its run record) taken one after the other: the node is found
 * by following the previous one.  The next task's lines were asked for
 * at the previous take, so its handle's address can be read without a
 * stall, and the one after it is asked for now: the loads overlap the
 * task that runs meanwhile.
 * What is read here only feeds prefetches, which never fault and change
 * nothing: a stale or torn value costs a useless load, no more.  So the
 * reads are racy on purpose: volatile loads, as the observers' are, in a
 * function that ThreadSanitizer does not instrument (clang's would check
 * an atomic load even there).  The links are written by the enqueuer and
 * a record's fields by its maker, ordered by liburcu's barriers, which
 * TSan cannot see, and by the claim's acquire of `done`, which comes only
 * later.  The nodes are live all the same: the queue's entries hold
 * references, and nobody else dequeues under the lock.
 */
WEFT_RACY_READS static void prefetch_queued(weft_pool *p)
{
    struct cds_wfcq_node *next =
        *(struct cds_wfcq_node *const volatile *)&p->inject_head.node.next;
    if (!next)
        return;
    struct weft__task *t = caa_container_of(next, struct weft__task, qnode);
    __builtin_prefetch(*(struct weft_task *const volatile *)&t->done, 1);
    struct cds_wfcq_node *after =
        *(struct cds_wfcq_node *const volatile *)&next->next;
    if (!after)
        return;
    const char *r = (const char *)caa_container_of(after, struct weft__task, qnode);
    for (size_t off = 0; off < sizeof(struct weft__task); off += 64)
        __builtin_prefetch(r + off, 1);
    __builtin_prefetch(r + sizeof(struct weft__task) - 1, 1); /* unaligned */
}

/*
 * An enqueue in liburcu's queue is two steps: an exchange of the tail,
 * then the store that links the old tail to the new node.  A dequeue that
 * meets a node whose link is not stored yet must wait for the enqueuer.
 * liburcu's blocking dequeue spins ten rounds and then sleeps 10 ms in
 * poll(): where threads outnumber CPUs (plain threads that spawn, as a
 * server's or a test's), an enqueuer preempted between its two steps is
 * common, and each time the worker that dequeued slept 10 ms with
 * inject_lock held while every task behind it waited (stress_sync_wait:
 * 97 us a round trip instead of 1.1, in one run of five).  So the
 * dequeues here never block: a take that meets an unfinished link stops
 * (take_link_wait below), the queue still looks non-empty, so no worker
 * parks on it (any_work), and the search comes back to it.
 */
/* Dequeue one node of (head, tail), whose dequeuers are mutually excluded
 * by the caller; NULL if empty, CDS_WFCQ_WOULDBLOCK if an enqueue is
 * still linking the next node after weft__backoff's spin (base/backoff.h),
 * whose yield is the caller's, made once it has dropped its lock. */
static struct cds_wfcq_node *dequeue_linked(cds_wfcq_head_ptr_t head,
                                            struct cds_wfcq_tail *tail)
{
    for (unsigned spins = 0;;) {
        struct cds_wfcq_node *node = __cds_wfcq_dequeue_nonblocking(head, tail);
        if (node != CDS_WFCQ_WOULDBLOCK || ++spins == WEFT__BACKOFF_SPINS)
            return node;
        weft__cpu_relax();
    }
}

/* The enqueuer did not link within the spin: it is most likely preempted,
 * and may be waiting for this CPU.  Give it the CPU, as weft__backoff
 * would (a system call, paid only here), rather than sleep a fixed time,
 * as liburcu would. */
static void take_link_wait(void)
{
    sched_yield();
}

/*
 * Take up to `max` tasks from the global queue into out[].  liburcu's
 * dequeue needs mutual exclusion between dequeuers; with `wait` false a
 * worker that finds another one dequeuing leaves it to that one.  Fewer
 * than `max` while the queue is not empty: an enqueue is linking (above).
 */
static unsigned inject_take(weft_pool *p, struct weft__task **out, unsigned max,
                            bool wait)
{
    unsigned n = 0;
    if (inject_empty(p))
        return 0;
    if (wait)
        weft__spin_lock(&p->inject_lock);
    else if (!weft__spin_trylock(&p->inject_lock))
        return 0;
    bool linking = false;
    while (n < max) {
        struct cds_wfcq_node *node =
            dequeue_linked(&p->inject_head, &p->inject_tail);
        if (node == CDS_WFCQ_WOULDBLOCK) {
            linking = true;
            break;
        }
        if (!node)
            break;
        out[n++] = caa_container_of(node, struct weft__task, qnode);
    }
    prefetch_queued(p);
    weft__spin_unlock(&p->inject_lock);
    if (linking && !n)
        take_link_wait();
    return n;
}

/* Wake one idle worker as a searcher, unless someone already searches. */
static void wakep(weft_pool *p)
{
    uint32_t zero = 0;
    if (!atomic_compare_exchange_strong_explicit(&p->nspinning, &zero, 1,
                                                 memory_order_seq_cst,
                                                 memory_order_relaxed))
        return;
    weft__spin_lock(&p->idle_lock);
    struct weft__worker **link = &p->idle_list;
    /* Leave the poller's worker in it if another sleeps. */
    if (*link && (*link)->in_poll && (*link)->idle_next)
        link = &(*link)->idle_next;
    struct weft__worker *w = *link;
    bool in_poll = false;
    if (w) {
        *link = w->idle_next;
        w->idle = false;
        w->woken = true;
        in_poll = w->in_poll;
        atomic_fetch_sub_explicit(&p->nidle, 1, memory_order_relaxed);
    } else {
        /* Everyone is awake; they will find the work.  The count goes back
         * under the lock: a worker that parks after we looked (it joins
         * the list under the lock) must not see a searcher that is not
         * there, nor a submitter leave its task to one (found by the Spin
         * model, verify/pool.pml). */
        atomic_fetch_sub_explicit(&p->nspinning, 1, memory_order_seq_cst);
    }
    weft__spin_unlock(&p->idle_lock);
    if (!w)
        return;
    if (in_poll)
        weft__pool_poller(p)->ops->wake(weft__pool_poller(p));
    else
        weft__parker_unpark(&w->parker);
}

struct weft__poller *weft__pool_attach_poller(weft_pool *p,
                                              struct weft__poller *poller)
{
    struct weft__poller *none = NULL;
    /* acq_rel: a worker that loads it (acquire) sees it set up; a loser
     * sees the winner's. */
    if (atomic_compare_exchange_strong_explicit(&p->poller, &none, poller,
                                                memory_order_acq_rel,
                                                memory_order_acquire))
        return poller;
    return none;
}

void weft__pool_kick(weft_pool *p)
{
    /* A searcher re-reads the timers before it sleeps; otherwise wake one
     * sleeper so it recomputes its deadline. */
    wakep(p);
}

/* ---------------------------------------------------------------- timers */

/*
 * Timers: one heap per worker (timer.h), not one per pool.  A timed wait
 * arms its timer on the heap of the worker it runs on, so two workers
 * arming at once take different locks; the disarm takes that same heap's
 * lock from wherever the task was woken.  Measured with the bench's
 * `timeout` workload against the single pool heap (see the issue note).
 *
 * Who fires them: each worker fires its own heap when it runs out of local
 * work and at its scheduling points ("Time, not rounds"); a worker with
 * nothing to do also fires every other worker's due timers (a busy worker may not look at its own
 * for a while: Go's timer stealing), and an idle worker sleeps until the
 * earliest deadline of all the heaps.  A timer that becomes the pool's
 * earliest wakes an idle worker to shorten its sleep, so a timer armed by
 * a worker that then stays busy still fires on time.
 */

/* The earliest deadline on any of p's workers, or UINT64_MAX.  Each
 * heap's `next` is read without its lock: a stale value is corrected by
 * the kick that follows every new earliest timer. */
static uint64_t timers_earliest(weft_pool *p)
{
    uint64_t next = UINT64_MAX;
    for (unsigned i = 0; i < p->nworkers; i++) {
        uint64_t n = weft__timers_next(&p->workers[i]->timers);
        if (n < next)
            next = n;
    }
    return next;
}

/* Fire every worker's due timers (spares have none of their own: see
 * worker.h, home); true if any fired (their tasks are queued here).  On
 * the scheduler loop's path: the clock is read only once some heap holds
 * a timer. */
static bool run_all_timers(struct weft__worker *w)
{
    weft_pool *p = w->pool;
    uint64_t now = 0;
    bool fired = false;
    for (unsigned i = 0; i < p->nworkers; i++) {
        struct weft__timers *ts = &p->workers[i]->timers;
        if (weft__timers_next(ts) == UINT64_MAX)
            continue;
        if (!now)
            now = weft__now_ns();
        if (weft__timers_run(ts, now))
            fired = true;
    }
    return fired;
}

int weft__pool_timer_add(weft_pool *p, struct weft__timer *tm,
                         struct weft__timers **where)
{
    struct weft__worker *w = weft__worker_current();
    struct weft__timers *ts =
        w && w->pool == p ? w->home : &p->workers[0]->timers;
    int r = weft__timers_add(ts, tm);
    if (r < 0)
        return r;
    *where = ts;
    /* Earliest on its heap and no earlier one elsewhere: sleepers may be
     * waiting for a later deadline. */
    if (r == 1 && timers_earliest(p) >= tm->deadline)
        wakep(p);
    /* And the monitor, which finds a worker blocked in a system call by
     * its timer's lateness, may be about to look later than that. */
    if (r == 1)
        weft__monitor_timer_armed(p, tm->deadline);
    return 0;
}

/*
 * Time, not rounds.  A busy worker fires its due timers and polls the
 * netpoller by elapsed time, checked at every scheduling point: the top of
 * the scheduler loop (each task it picks), a yield that would switch
 * straight to the next yielded task (weft__pool_yield_next), and an ended
 * task's switch straight to its awaiter (task_run.c).  So a due timer or
 * a ready socket waits for at most the task running when it came due, not
 * for a number of rounds that could each be a long task (Tokio counts 61
 * polls of microseconds; a stackful task can run for seconds).  The check
 * costs two loads where nothing is armed and nobody waits on I/O (the
 * fork-join paths), else a read of the tick counter per scheduling point
 * (11 ns on the bench machine, against 25 for the clock: base/clock.h);
 * the clock itself is read, and the timers and poller looked at, once
 * per service_ticks (about 12-50 us: pool_create).  The poller is polled
 * only if no worker holds it (an idle one sleeping in it serves it) and
 * nobody polled it for POLL_EVERY_NS, so a pool whose workers never run
 * dry polls at most that often.  A worker stuck in one task checks
 * nothing: the monitor covers it (monitor.c).  The global queue's
 * fairness look stays a count (GLOBAL_EVERY): it is one relaxed load of
 * the queue's tail, where a clock would cost more than the look, and a
 * task in the global queue is also taken by any worker that runs dry.
 */
#define POLL_EVERY_NS ((uint64_t)500 * 1000)
#define SERVICE_EVERY_NS 25000u

static void service(struct weft__worker *w)
{
    weft_pool *p = w->pool;
    uint64_t now = weft__now_ns();
    w->service_at = weft__ticks() + p->service_ticks;
    if (weft__timers_next(w->home) <= now)
        weft__timers_run(w->home, now);
    struct weft__poller *poller = weft__pool_poller(p);
    if (poller &&
        atomic_load_explicit(poller->waiting, memory_order_relaxed) &&
        now - atomic_load_explicit(&poller->polled_at, memory_order_relaxed) >=
            POLL_EVERY_NS)
        poller->ops->poll_now(poller);
}

static void wake_if_needed(weft_pool *p)
{
    if (atomic_load_explicit(&p->nspinning, memory_order_seq_cst) == 0 &&
        atomic_load_explicit(&p->nidle, memory_order_seq_cst) > 0)
        wakep(p);
}

/* The deque is full: move its older half, and t, to the global queue.
 * In one batch: one CAS takes the half (runq.h, take_oldest), a queue of
 * our own links it (exchanges on a line no other thread touches) and one
 * splice appends it (one exchange on the global queue's tail).  One by
 * one, a steal's CAS on top and an enqueue on the shared tail per task
 * were 5-30% of a million-task spawn-join's samples, run to run. */
static __attribute__((noinline, cold)) void overflow(struct weft__worker *w,
                                                  struct weft__task *t)
{
    struct __cds_wfcq_head head;
    struct cds_wfcq_tail tail;
    __cds_wfcq_init(&head, &tail);
    uint32_t from;
    uint32_t n = weft__runq_take_oldest(&w->q, WEFT__RUNQ_SIZE / 2, &from);
    for (uint32_t i = 0; i < n; i++) {
        struct weft__task *old = weft__runq_at(&w->q, from + i);
        cds_wfcq_node_init(&old->qnode);
        cds_wfcq_enqueue(&head, &tail, &old->qnode);
    }
    cds_wfcq_node_init(&t->qnode);
    cds_wfcq_enqueue(&head, &tail, &t->qnode);
    /* An exchange inside: the submitter's barrier (see the top). */
    __cds_wfcq_splice_blocking(&w->pool->inject_head, &w->pool->inject_tail,
                               &head, &tail);
}

/* Owner: push t on the local deque, spilling to the global queue. */
static inline __attribute__((always_inline)) void
push_local(struct weft__worker *w, struct weft__task *t)
{
    if (!weft__runq_push(&w->q, t))
        overflow(w, t);
}

/* Queue t from a thread that is not one of p's workers (see
 * outside_submitters). */
static void submit_outside(weft_pool *p, struct weft__task *t)
{
    atomic_fetch_add_explicit(&p->outside_submitters, 1, memory_order_seq_cst);
    inject(p, t);
    wake_if_needed(p);
    /* Our last touch of the pool. */
    atomic_fetch_sub_explicit(&p->outside_submitters, 1, memory_order_release);
}

void weft__pool_submit(weft_pool *p, struct weft__task *t)
{
    struct weft__worker *w = weft__worker_current();
    if (!w || w->pool != p) {
        submit_outside(p, t);
        return;
    }
    push_local(w, t);
    wake_if_needed(p);
}

/*
 * Tokio's rule for the LIFO slot: filling an empty slot wakes nobody (the
 * waker's worker runs the task as soon as the waker suspends, typically
 * within a microsecond, while waking a sleeping worker costs tens); a task
 * it displaces goes to the deque and is announced like any push.
 */
void weft__pool_submit_woken(weft_pool *p, struct weft__task *t)
{
    struct weft__worker *w = weft__worker_current();
    if (!w || w->pool != p) {
        submit_outside(p, t);
        return;
    }
    struct weft__task *old =
        atomic_exchange_explicit(&w->lifo, t, memory_order_acq_rel);
    if (old) {
        push_local(w, old);
        wake_if_needed(p);
    }
}

/*
 * Pinned tasks.  A task that parks inside a call of the interposition
 * library must continue on the thread it parked on (docs/design.md,
 * "Foreign blocking calls"), so its wake queues it on that worker's own
 * pinned queue, which only that worker takes from: after its LIFO slot
 * and its deque, before the global queue, and at the fairness tick right
 * after the global queue, so that neither side starves the other (a
 * hundred pinned clients per worker, each woken by the netpoller, keep
 * the queue full; taken first on every pass, they kept a timer's task
 * waiting 10 ms).  No lost wakeup, by the idle lock: the waker's enqueue
 * comes before its critical section, where it reads whether w is on the
 * idle list (and how it sleeps); w joins the list in its own critical
 * section and only then looks at its pinned queue (park_worker).  If the waker's section comes first, w's look follows
 * it and sees the task; if w's comes first, the waker sees w idle and
 * wakes it (the parker and the poller's eventfd keep a wake that comes
 * before the sleep).  A waker outside the pool counts itself in
 * outside_submitters, as submit_outside does: the task may run and end,
 * and the pool be destroyed, before its wake is done.
 */
static bool pinned_waiting(struct weft__worker *w)
{
    /* Relaxed, as inject_empty: a stale "empty" is corrected by the
     * idle lock's order before w sleeps (above). */
    return __atomic_load_n(&w->pinned_tail.p, __ATOMIC_RELAXED) !=
           &w->pinned_head.node;
}

static struct weft__task *take_pinned(struct weft__worker *w)
{
    while (pinned_waiting(w)) {
        /* Single consumer: liburcu's dequeue needs no lock then. */
        struct cds_wfcq_node *node =
            dequeue_linked(&w->pinned_head, &w->pinned_tail);
        if (node == CDS_WFCQ_WOULDBLOCK) {
            /* An enqueue linking (see dequeue_linked): pinned_waiting
             * stays true, so the worker comes back before it parks. */
            take_link_wait();
            return NULL;
        }
        if (!node)
            return NULL;
        struct weft__task *t = caa_container_of(node, struct weft__task, qnode);
        if (weft__task_claim_queued(t))
            return t;
    }
    return NULL;
}

void weft__pool_submit_pinned(struct weft__worker *w, struct weft__task *t)
{
    weft_pool *p = w->pool;
    struct weft__worker *self = weft__worker_current();
    bool outside = !self || self->pool != p;
    if (outside)
        atomic_fetch_add_explicit(&p->outside_submitters, 1,
                                  memory_order_seq_cst);
    cds_wfcq_node_init(&t->qnode);
    cds_wfcq_enqueue(&w->pinned_head, &w->pinned_tail, &t->qnode);
    if (self != w) {
        weft__spin_lock(&p->idle_lock);
        bool idle = w->idle;
        bool in_poll = w->in_poll;
        weft__spin_unlock(&p->idle_lock);
        if (idle) {
            if (in_poll)
                weft__pool_poller(p)->ops->wake(weft__pool_poller(p));
            else
                weft__parker_unpark(&w->parker);
        }
    }
    if (outside)
        atomic_fetch_sub_explicit(&p->outside_submitters, 1,
                                  memory_order_release);
}

void weft__pool_submit_fifo(weft_pool *p, struct weft__task *t)
{
    struct weft__worker *w = weft__worker_current();
    if (!w || w->pool != p) {
        submit_outside(p, t);
        return;
    }
    inject(p, t);
    wake_if_needed(p);
}

/*
 * A task that yields goes to this worker's own FIFO of yielded tasks: no
 * shared line, no atomic, and round-robin order on this worker.  Those
 * tasks cannot be stolen, so while some worker is idle a yield goes to the
 * global queue instead, where it can be picked up; as tasks keep yielding,
 * a worker's backlog drains that way to idle workers.  The FIFO is linked
 * through the tasks themselves, so it has no capacity to overflow into the
 * (locked) global queue: with 1,000 tasks yielding on one worker, a
 * bounded ring sent three yields in four through the global queue.
 */
void weft__pool_submit_yield(struct weft__worker *w, struct weft__task *t)
{
    weft_pool *p = w->pool;
    if (atomic_load_explicit(&p->nidle, memory_order_relaxed) > 0) {
        inject(p, t);
        wake_if_needed(p);
        return;
    }
    weft__yielded_append(&w->yielded, t, t);
}

static inline __attribute__((always_inline)) struct weft__task *
pop_yielded(struct weft__worker *w)
{
    struct weft__task *t;
    if (weft__yielded_looks_empty(&w->yielded))
        return NULL;
    while ((t = weft__yielded_pop(&w->yielded)))
        if (weft__task_claim_queued(t))
            return t;
    return NULL;
}

struct weft__task *weft__pool_yield_next(struct weft__worker *w, bool *alone)
{
    weft_pool *p = w->pool;
    *alone = false;
    /* A scheduling point, for the monitor (worker.h, th), even when the
     * yield returns at once: a task that yields is not stuck. */
    weft__worker_note(w);
    /* The loop's order (find_work): due timers and polling, its fairness
     * tick, the LIFO slot, the deque, the global queue, then the yielded.
     * Anything ahead of the yielded FIFO, or an idle worker that a yielder
     * should go to, sends the yield through the loop. */
    if (weft__pool_service_due(w) || (w->tick + 1) % GLOBAL_EVERY == 0 ||
        atomic_load_explicit(&w->lifo, memory_order_relaxed) ||
        weft__runq_len(&w->q) || !inject_empty(p) ||
        atomic_load_explicit(&p->nidle, memory_order_relaxed) > 0)
        return NULL;
    w->tick++;
    /* One pop, no loop: an entry of this FIFO is never stale (a yielded
     * task is claimed only through its entry), and if one were, the
     * scheduler loop would drop it. */
    struct weft__task *t = weft__yielded_pop(&w->yielded);
    *alone = !t;
    return t && weft__task_claim_queued(t) ? t : NULL;
}

static void wake_all(weft_pool *p)
{
    /* Spares too, covering or waiting to (monitor.c). */
    unsigned n = weft__pool_slots(p);
    for (unsigned i = 0; i < n; i++)
        weft__parker_unpark(&p->workers[i]->parker);
    struct weft__poller *poller = weft__pool_poller(p);
    if (poller)
        poller->ops->wake(poller); /* whoever sleeps there */
}

/* ------------------------------------------------------------ the search */

static struct weft__task *pop_local(struct weft__worker *w)
{
    struct weft__task *t;
    /* Only we push, so a deque that looks empty to us is empty (thieves
     * only take): skip pop's locked store then. */
    if (!weft__runq_len(&w->q))
        return NULL;
    while ((t = weft__runq_pop(&w->q)))
        if (weft__task_claim_queued(t))
            return t;
    return NULL;
}

/*
 * One task from the global queue.  One, not a batch: a batch moved into the
 * local deque would be reordered (LIFO), and tasks that yield go through
 * the global queue, so yielding tasks must come out of it in FIFO order
 * for round-robin to hold.
 */
static struct weft__task *take_global(struct weft__worker *w)
{
    struct weft__task *t;
    while (inject_take(w->pool, &t, 1, false))
        if (weft__task_claim_queued(t))
            return t;
    return NULL;
}

static uint32_t next_rand(struct weft__worker *w)
{
    /* xorshift64*: victim choice only. */
    uint64_t x = w->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    w->rng = x;
    return (uint32_t)((x * 0x2545F4914F6CDD1Dull) >> 32);
}

/* Take one task from v's top, and move up to half of the rest of v's
 * queue to ours (we are idle, so ours is empty): one steal then serves
 * several tasks. */
static struct weft__task *steal_from(struct weft__worker *w,
                                    struct weft__worker *v)
{
    struct weft__task *run = NULL;
    uint32_t n = (weft__runq_len(&v->q) + 1) / 2;
    for (uint32_t i = 0; i < n; i++) {
        struct weft__task *t = weft__runq_steal(&v->q);
        if (!t)
            break;
        if (!run) {
            if (weft__task_claim_queued(t))
                run = t;
        } else {
            push_local(w, t);
        }
    }
    return run;
}

/* For the observers: w took t from v's queues. */
static void stolen(struct weft__worker *w, struct weft__worker *v,
                   struct weft__task *t)
{
    w->stats.steals++;
    if (weft__trace_on())
        weft__trace(WEFT__TE_STEAL,
                    atomic_load_explicit(&t->co.id, memory_order_relaxed),
                    v->index);
}

/* v's LIFO slot's task, claimed, or NULL. */
static struct weft__task *steal_lifo(struct weft__worker *v)
{
    if (!atomic_load_explicit(&v->lifo, memory_order_relaxed))
        return NULL;
    struct weft__task *t =
        atomic_exchange_explicit(&v->lifo, NULL, memory_order_acq_rel);
    return t && weft__task_claim_queued(t) ? t : NULL;
}

/*
 * What w can take from v.  From a worker that is stuck in one task
 * (monitor.c) everything: its LIFO slot first (the task it would have run
 * next), its deque, then its yielded FIFO (a seize, which costs a
 * membarrier: sched/yielded.h).  From any other worker its deque, and its
 * slot in the last round (v has had a few rounds of our search to run it
 * itself).
 */
static struct weft__task *steal_one(struct weft__worker *w,
                                   struct weft__worker *v, bool last_round)
{
    bool stuck = atomic_load_explicit(&v->stuck, memory_order_relaxed);
    struct weft__task *t = stuck ? steal_lifo(v) : NULL;
    if (!t)
        t = steal_from(w, v);
    if (!t)
        t = pop_local(w); /* what we moved, if the first was stale */
    if (!t && last_round && !stuck)
        t = steal_lifo(v);
    struct weft__task *first, *last;
    if (!t && stuck && weft__yielded_seize(&v->yielded, &first, &last)) {
        weft__yielded_append(&w->yielded, first, last);
        t = pop_yielded(w);
    }
    return t;
}

static struct weft__task *steal_work(struct weft__worker *w)
{
    weft_pool *p = w->pool;
    unsigned n = weft__pool_slots(p);
    /* A spare looks first at the worker it covers (monitor.c). */
    struct weft__worker *covered =
        atomic_load_explicit(&w->covers, memory_order_relaxed);
    for (int round = 0; round < STEAL_ROUNDS; round++) {
        struct weft__task *t;
        if (covered && (t = steal_one(w, covered, round == STEAL_ROUNDS - 1))) {
            stolen(w, covered, t);
            return t;
        }
        unsigned start = next_rand(w) % n;
        for (unsigned i = 0; i < n; i++) {
            struct weft__worker *v = p->workers[(start + i) % n];
            /* A spare that is not covering has nothing queued. */
            if (v == w || v == covered ||
                !atomic_load_explicit(&v->active, memory_order_relaxed))
                continue;
            w->stats.steal_tries++;
            t = steal_one(w, v, round == STEAL_ROUNDS - 1);
            if (t) {
                stolen(w, v, t);
                return t;
            }
        }
        if ((t = take_global(w)))
            return t;
    }
    return NULL;
}

/*
 * The last look of a worker about to park (see the top): a queued task
 * (any_queued), a due timer, or waits parked on fds that no worker is
 * polling (then this one must: the kick that a poller holder gives up
 * with can find someone counted as searching, us, and do nothing;
 * verify/pool.pml).  The loads are seq_cst: C11 orders a seq_cst
 * read-modify-write (the caller's, on nidle and nspinning) before later
 * seq_cst loads, not before relaxed ones (x86's locked instructions do
 * order those; AArch64's ldaxr/stlxr do not): that is the protocol's
 * StoreLoad barrier (verify/pool.pml, the rmw_not_fence twin).  On x86
 * they are plain loads all the same.
 */
static inline bool queued_with(weft_pool *p, memory_order mo)
{
    if (__atomic_load_n(&p->inject_tail.p, (int)mo) != &p->inject_head.node)
        return true;
    /* Spares too: one that covers queues like any worker (a spare made
     * after this read queues only what it then runs itself, or hands to
     * the global queue with a wake: monitor.c). */
    unsigned n = weft__pool_slots(p);
    for (unsigned i = 0; i < n; i++) {
        struct weft__worker *v = p->workers[i];
        uint32_t b = atomic_load_explicit(&v->q.bottom, mo);
        uint32_t t = atomic_load_explicit(&v->q.top, mo);
        if ((int32_t)(b - t) > 0 || atomic_load_explicit(&v->lifo, mo))
            return true;
    }
    return false;
}

static bool any_queued(weft_pool *p)
{
    return queued_with(p, memory_order_seq_cst);
}

static bool poller_unattended(weft_pool *p)
{
    struct weft__poller *poller = weft__pool_poller(p);
    return poller && poller->ops->unattended(poller);
}

static bool any_work(weft_pool *p)
{
    if (any_queued(p) || poller_unattended(p))
        return true;
    /* The clock only when a timer is armed: most looks find none. */
    uint64_t next = timers_earliest(p);
    return next != UINT64_MAX && next <= weft__now_ns();
}

/*
 * A searcher found work: stop searching.  While it searched, whoever
 * queued work, armed the earliest timer or gave the poller up left the
 * wake-up to it (wakep does nothing while someone searches); so the last
 * searcher to stop wakes another worker if any of that may be waiting:
 * queued tasks, an unattended poller, or any armed timer (the sleepers'
 * deadlines may be later than a new one).  Go's resetspinning wakes one
 * unconditionally; on a sync_wait round trip that put a futex wake on the
 * critical path and a third spinning thread on a two-core machine
 * (docs/performance.md, "sync_wait").  Nothing is left unannounced by the
 * condition: the decrement is a seq_cst RMW before the seq_cst loads of
 * the look, the StoreLoad pattern of park_worker's re-check (see the
 * top): a submitter that read nspinning before the decrement queued
 * before it, and the look sees the task; one that reads it after sees 0
 * and wakes a worker itself.  Work that the found task creates is
 * announced by its own submit.
 */
static void found_work(struct weft__worker *w)
{
    if (!w->spinning)
        return;
    w->spinning = false;
    weft_pool *p = w->pool;
    if (atomic_fetch_sub_explicit(&p->nspinning, 1, memory_order_seq_cst) ==
            1 &&
        (any_queued(p) || poller_unattended(p) ||
         timers_earliest(p) != UINT64_MAX))
        wake_if_needed(p);
}

static void leave_idle_list(weft_pool *p, struct weft__worker *w)
{
    struct weft__worker **link = &p->idle_list;
    while (*link != w)
        link = &(*link)->idle_next;
    *link = w->idle_next;
    w->idle = false;
    atomic_fetch_sub_explicit(&p->nidle, 1, memory_order_relaxed);
}

/* Step 4 of shutdown; idle_lock is held. */
static bool check_stop(weft_pool *p)
{
    if (atomic_load_explicit(&p->stop, memory_order_acquire))
        return true;
    if (!atomic_load_explicit(&p->shutdown, memory_order_acquire) ||
        !drained(p))
        return false;
    atomic_store_explicit(&p->stop, 1, memory_order_release);
    wake_all(p);
    weft__parker_unpark(p->destroyer);
    return true;
}

bool weft__pool_stop_or_give_up(weft_pool *p, struct weft__parker *sink)
{
    weft__spin_lock(&p->idle_lock);
    bool stopped = check_stop(p);
    if (!stopped)
        p->destroyer = sink;
    weft__spin_unlock(&p->idle_lock);
    return stopped;
}

/* ------------------------------------------------------------- memory */

/*
 * Memory (docs/design.md, "Memory").  A worker keeps up to 16 free stacks
 * and 512 free task records in its own caches, and the process-wide depots
 * keep more (base/cache.h), so that a burst of work finds them warm.  Once
 * a worker that ran tasks has been idle for TRIM_AFTER_NS, the depots are
 * trimmed to the pool's cache bound: free stacks beyond it are unmapped
 * and the kept ones keep only their top page resident; record chunks that
 * hold no live record are unmapped beyond it.  So an idle pool holds about
 * cache_bytes (and the memory of other threads' small caches), whatever
 * its busiest moment needed.  The depots are process-wide: each pool
 * trims them to its own bound.
 *
 * One wake trims for the whole pool.  A worker's own caches can be given
 * to the depots by its own thread only, and a worker woken by its sleep's
 * deadline costs 40-60 us of CPU on a 2-vCPU guest (a futex timeout, with
 * no work done after it), as much as the rest of an idle second: with a
 * deadline per worker, an idle pool of two woke twice after each burst
 * (0.25-0.37 CPU ms per idle second against 0.07-0.15 without the trim;
 * Go's idle pool, 0.11-0.30).  So a worker that ran tasks gives its own
 * caches to the depots when it parks (its own lists, warm: a few
 * microseconds for full ones), and the depots' trim is the trim owner's
 * (weft_pool.trim_owner): the first to park with a trim owed while no
 * owner sleeps on the idle list.  A worker that parks while an owner
 * sleeps there arms no deadline: the owner's trim covers what it gave to
 * the depots, if sooner than TRIM_AFTER_NS after its own park (the trim
 * keeps the cache bound's worth, so a burst soon after still finds them).
 * An owner that leaves the idle list (woken, lent) stops being one for
 * the next parker, and if it parks again after that, defers in turn.
 */
#define TRIM_AFTER_NS ((uint64_t)100 * 1000000u)

/* Stacks and record chunks ever made: two reads that differ tell that
 * memory was made between them. */
static uint64_t memory_made(void)
{
    return weft__stacks_made() + weft__records_made();
}

/* A worker's own caches to the depots: its own thread only. */
static void spill_caches(void)
{
    weft__stacks_spill();
    weft__records_spill();
}

static void give_back_memory(struct weft__worker *w)
{
    weft_pool *p = w->pool;
    w->dirty = false;
    w->trim_at = 0;
    weft__spin_lock(&p->idle_lock);
    if (p->trim_owner == w)
        p->trim_owner = NULL;
    weft__spin_unlock(&p->idle_lock);
    /* Before the depots are taken: what is made from now on is not
     * covered by this trim.  Relaxed: a giving back that reads a stale
     * value wakes this worker once more than needed, nothing worse. */
    atomic_store_explicit(&w->made_seen, memory_made(), memory_order_relaxed);
    spill_caches();
    /* Half the bound each: a kept stack costs a page, a record its size. */
    size_t half = p->cache_bytes / 2;
    size_t page = weft__stack_guard();
    weft__stacks_trim(half / page);
    weft__records_trim(half / sizeof(struct weft__task));
}

/* A worker that ran tasks since it last parked owes a trim TRIM_AFTER_NS
 * from now; one that owes it already keeps its deadline (see above).
 * So does one that ran none but freed records: a search that claims a
 * stale entry (steal_from, take_global: a fork-join child awaited inline,
 * its claim fails) drops its last reference and frees the pair into this
 * thread's own lists, which only this thread can spill.  Left there, a
 * worker that parked again without running a task slept holding up to
 * 512 of them, spread over as many chunks, and every trim kept those
 * chunks (stress_soak: 385 records holding 17-38 chunks after a trim, and
 * once all 104, nothing trimmed).  Returns whether it is to spill. */
static bool owe_trim(struct weft__worker *w)
{
    if (!w->dirty && !weft__records_held())
        return false;
    w->dirty = false;
    w->trim_at = weft__now_ns() + TRIM_AFTER_NS;
    return true;
}

/* Under idle_lock, for a worker about to park that owes a trim: it becomes
 * the pool's trim owner, or, if an owner sleeps on the idle list, leaves
 * the trim to it (see "Memory"; it gave its caches to the depots). */
static void take_or_leave_trim(weft_pool *p, struct weft__worker *w)
{
    struct weft__worker *o = p->trim_owner;
    if (!w->trim_at || o == w)
        return;
    if (o && o->idle) {
        w->trim_at = 0;
        /* The owner's trim covers what was made until now: a giving back
         * of this worker after a borrower (weft__pool_unlend) wakes it
         * only for memory made after this. */
        atomic_store_explicit(&w->made_seen, memory_made(),
                              memory_order_relaxed);
    } else {
        p->trim_owner = w;
    }
}

/* For the observers: the sleep of park_worker, its time and its trace.
 * A system call follows or came before: two clock reads are nothing. */
static void sleep_begins(struct weft__worker *w)
{
    w->stats.parks++;
    w->stats.idle_since = weft__now_ns();
    if (weft__trace_on())
        weft__trace(WEFT__TE_SLEEP, 0, w->index);
}

static void sleep_ends(struct weft__worker *w)
{
    w->stats.idle_ns += weft__now_ns() - w->stats.idle_since;
    w->stats.idle_since = 0;
    if (weft__trace_on())
        weft__trace(WEFT__TE_AWAKE, 0, w->index);
}

/*
 * The sleep of park_worker ended at its trim deadline, and nothing else
 * happened: the worker trims and sleeps again without leaving the idle
 * list.  Leaving it would wake the monitor (the first worker off the list
 * does), and the search that follows a park would spin and yield before
 * parking again: on the 2-core AMD guest, half of an idle second's CPU
 * (docs/performance.md, "Idle").  Staying on the list loses no wake: a
 * waker that picks this worker meanwhile takes it off the list and
 * unparks it, whose permit ends the next park at once, and work queued
 * without a wake has a searcher, as for the first sleep.  The wakes that
 * leave a worker on the list each leave a sign looked at here: a task
 * pinned to it (pinned_waiting), a spare's recall (retire), shutdown's
 * wake-all (shutdown, stop).  Not in the poller (its holder must finish
 * it first, below) and not while lent (the borrower has the worker's
 * records).
 */
static bool trim_in_sleep(struct weft__worker *w)
{
    weft_pool *p = w->pool;
    if (w->in_poll || !w->trim_at || weft__now_ns() < w->trim_at ||
        any_work(p) || pinned_waiting(w) ||
        atomic_load_explicit(&w->retire, memory_order_acquire))
        return false;
    /* Not once shutdown began: its wake-all (weft__pool_destroy) unparks
     * every worker without taking it off the idle list, so that each one
     * checks drain at its next park (check_stop): a worker that trimmed
     * and slept again here would skip that check, and with every worker
     * doing so the destroyer waited for ever (seen: 6 ASan runs of
     * test_task at once, all four workers asleep here).  Acquire, as the
     * destroyer's store comes before its unpark. */
    weft__spin_lock(&p->idle_lock);
    bool quiet = w->idle && !w->lent &&
                 !atomic_load_explicit(&p->shutdown, memory_order_acquire) &&
                 !atomic_load_explicit(&p->stop, memory_order_acquire);
    if (quiet) {
        /* The trim below covers what borrowers freed so far; one that
         * gives this worker back after new memory was made wakes it (no
         * trim armed). */
        w->lent_ran = false;
        w->trim_armed = false;
    }
    weft__spin_unlock(&p->idle_lock);
    return quiet;
}

/*
 * Nothing found: go idle and sleep until woken or a timer is due.  Returns
 * false when the pool stops.  On return the worker may be spinning (it was
 * woken as a searcher, or found work on the re-check).
 */
static bool park_worker(struct weft__worker *w)
{
    weft_pool *p = w->pool;

    /* A worker that ran tasks gives its own caches to the depots now, and
     * the depots are trimmed once it has been idle a while ("Memory"
     * above): counted from the first park after them, so that wakes that
     * find nothing (a periodic check, a timer of another worker) do not
     * put it off for ever; by it, or by the trim owner if one sleeps. */
    if (owe_trim(w))
        spill_caches();
    weft__spin_lock(&p->idle_lock);
    if (check_stop(p)) {
        weft__spin_unlock(&p->idle_lock);
        return false;
    }
    take_or_leave_trim(p, w);
    w->trim_armed = w->trim_at != 0;
    w->idle = true;
    w->woken = false;
    w->idle_next = p->idle_list;
    p->idle_list = w;
    /* Sleep in the poller if tasks wait on I/O and nobody else does. */
    struct weft__poller *poller = weft__pool_poller(p);
    w->in_poll = poller && poller->ops->take(poller);
    atomic_fetch_add_explicit(&p->nidle, 1, memory_order_seq_cst);
    weft__spin_unlock(&p->idle_lock);

    /* The searcher's barrier (see the top): the seq_cst RMW on nidle
     * above, and for a searcher the one on nspinning here, come before the
     * re-check below. */
    if (w->spinning) {
        w->spinning = false;
        atomic_fetch_sub_explicit(&p->nspinning, 1, memory_order_seq_cst);
    }

    /* A spare asked to stop covering does not sleep: read after joining
     * the idle list under idle_lock, where the request looks for it
     * (weft__pool_spare_recall), so one of the two sees the other. */
    bool sleep = !any_work(p) && !pinned_waiting(w) &&
                 !atomic_load_explicit(&w->retire, memory_order_acquire);
    while (sleep) {
        uint64_t next = timers_earliest(p);
        if (w->trim_at && w->trim_at < next)
            next = w->trim_at;
        sleep_begins(w);
        if (w->in_poll)
            poller->ops->block(poller, next);
        else
            weft__parker_park(&w->parker, next == UINT64_MAX ? 0 : next, 0);
        sleep_ends(w);
        if (!trim_in_sleep(w))
            break;
        give_back_memory(w);
    }

    weft__spin_lock(&p->idle_lock);
    /* Lent meanwhile ("Lending" below): its place is another thread's
     * until weft__pool_unlend, which wakes it as a waker would. */
    while (w->lent) {
        w->lent_wait = true;
        weft__spin_unlock(&p->idle_lock);
        weft__parker_park(&w->parker, 0, 0);
        weft__spin_lock(&p->idle_lock);
    }
    bool polled = w->in_poll;
    w->in_poll = false;
    /* A borrower ran tasks here: their memory is this worker's to give
     * back ("Lending"). */
    if (w->lent_ran) {
        w->lent_ran = false;
        w->dirty = true;
    }
    if (w->idle) {
        /* Re-check found work, a timer is due, or a wake-all: leave the
         * list ourselves.  Search again if there is work. */
        leave_idle_list(p, w);
        if (!sleep) {
            w->spinning = true;
            atomic_fetch_add_explicit(&p->nspinning, 1, memory_order_seq_cst);
        }
    } else {
        /* A waker took us off the list and counted us as spinning.  If we
         * did not sleep, its unpark is still to come: the permit makes our
         * next park return at once, which is harmless. */
        w->woken = false;
        w->spinning = true;
        if (sleep)
            w->stats.wakeups++;
    }
    bool stop = atomic_load_explicit(&p->stop, memory_order_acquire);
    /* The monitor sleeps while every worker does (monitor.c): the first
     * to leave the idle list wakes it.  Under idle_lock, where it went to
     * sleep, so neither misses the other. */
    bool wake_monitor = p->monitor_asleep;
    p->monitor_asleep = false;
    weft__spin_unlock(&p->idle_lock);
    if (wake_monitor)
        weft__monitor_wake(p);
    /* Off the idle list first, so the wakes do not pick this worker. */
    if (polled)
        poller->ops->finish(poller);
    /* A trim that came due: now, unless tasks or timers are waiting to
     * run.  Not put off for the poller that this worker has just given
     * up with waits in it (any_work counts that as work): this worker is
     * the one that will take it again at its next park, and a trim left
     * due would end that park at once, and the next, and so on: with one
     * worker and a task waiting on an fd, 80% of a CPU spent in
     * epoll_pwait with timeout 0 until the fd or its timeout woke it. */
    uint64_t now = weft__now_ns();
    if (w->trim_at && !w->dirty && now >= w->trim_at && !any_queued(p) &&
        timers_earliest(p) > now)
        give_back_memory(w);
    if (stop) {
        found_work(w);
        return false;
    }
    return true;
}

/*
 * Lending (weft/task.h, weft_sync_wait; Go's handing of a P to the thread
 * that runs the main goroutine).  A task started by weft_sync_wait that
 * moves to a pool would cost two sleeps and two wakes per round trip if a
 * worker ran it while the waiting thread slept: the waiting thread
 * instead takes the place of an idle worker and runs the task itself, so
 * the pool keeps its number of running threads and nothing sleeps.  The
 * place is given back when the task first switches back to the waiting
 * thread's scheduler (it ends, waits or yields): the thread runs no other
 * task meanwhile, so a lock it held around weft_sync_wait is taken by
 * nothing it runs (TBB's isolation problem).
 *
 * Who may be lent: a worker (not a spare) that sleeps on its parker (not
 * in the poller, which it holds), with nothing of its own pending: its
 * deque, LIFO slot and yielded FIFO empty, no timer armed on its heap
 * (its sleep may end at that deadline), no task pinned to its thread
 * (their wakes go to it alone).  Taking it off the idle list under
 * idle_lock hands its records (deque owner's side, counters, timers,
 * stats) to the borrowing thread, as a wake hands them to its own thread;
 * giving it back under idle_lock hands them back.  Its own thread does not
 * know: it still sleeps.  If it wakes meanwhile (its sleep's deadline, a
 * wake-all), it finds `lent` under idle_lock and sleeps again with
 * lent_wait set, and the giving back wakes it, counted as a searcher, as
 * wakep would.  The giving back also wakes it when the borrower left it
 * something to do (a spawned task in its deque, a woken one in its slot, a
 * timer on its heap), the pool is shutting down (its drain check), or
 * memory (stacks, record chunks) was made since the worker last gave
 * memory back and its sleep does not end for a trim: what a borrower
 * made is given back by the worker's own trim ("Memory"), so it wakes to
 * arm one (a burst run by a borrower wakes it once; round trips that
 * reuse their stack and record, never).  Otherwise it goes back on the
 * idle list, still asleep, as it was.
 * No lost wakeup: a lent worker is neither idle nor spinning, like a busy
 * worker, and the giving back looks where a busy worker would when its
 * task switches out: at its own queues, and, once it is idle again, at
 * the pool's (any_work: a plain thread's spawn, a spare's hand-over, which
 * found no idle worker to wake meanwhile).
 */
static bool has_own_work(struct weft__worker *w)
{
    return weft__runq_len(&w->q) ||
           atomic_load_explicit(&w->lifo, memory_order_relaxed) ||
           !weft__yielded_looks_empty(&w->yielded) || pinned_waiting(w) ||
           atomic_load_explicit(&w->timers.next, memory_order_relaxed) !=
               UINT64_MAX;
}

struct weft__worker *weft__pool_lend(weft_pool *p)
{
    if (!atomic_load_explicit(&p->nidle, memory_order_relaxed) ||
        atomic_load_explicit(&p->shutdown, memory_order_relaxed))
        return NULL;
    weft__spin_lock(&p->idle_lock);
    struct weft__worker **link = &p->idle_list, *w;
    while ((w = *link) &&
           (w->in_poll || w->index >= p->nworkers || w->pins || has_own_work(w)))
        link = &w->idle_next;
    bool wake_monitor = false;
    if (w) {
        *link = w->idle_next;
        w->idle = false;
        w->lent = true;
        atomic_fetch_sub_explicit(&p->nidle, 1, memory_order_relaxed);
        /* Off the idle list, as a worker that wakes: the monitor, asleep
         * while every worker was idle, watches again (see "The monitor's
         * deep sleep" below: lending is a way off the list too). */
        wake_monitor = p->monitor_asleep;
        p->monitor_asleep = false;
    }
    weft__spin_unlock(&p->idle_lock);
    if (wake_monitor)
        weft__monitor_wake(p);
    if (w) {
        /* The monitor watches the thread that runs the place: this one
         * (its signs of life, its kernel state, its CPU time), so that a
         * task that blocks or computes here is covered as on the worker's
         * own thread.  Its ids are looked up once per thread. */
        struct weft__sched_thread *st = &weft__sched_tls;
        if (!st->tid) {
            st->tid = (pid_t)syscall(SYS_gettid);
            if (pthread_getcpuclockid(pthread_self(), &st->cpu_clock) != 0)
                st->cpu_clock = w->own_clock;
        }
        atomic_store_explicit(&w->cpu_clock, st->cpu_clock,
                              memory_order_relaxed);
        atomic_store_explicit(&w->tid, st->tid, memory_order_relaxed);
        atomic_store_explicit(&w->th, &weft__tls, memory_order_release);
    }
    return w;
}

void weft__pool_unlend(struct weft__worker *w)
{
    weft_pool *p = w->pool;
    /* The worker's own view back, then no reader of ours left: this
     * thread's block (its TLS) may go once it returns (seq_cst: the
     * store before the load, against weft__worker_switches' pair). */
    atomic_store_explicit(&w->cpu_clock, w->own_clock, memory_order_relaxed);
    atomic_store_explicit(&w->tid, w->own_tid, memory_order_relaxed);
    atomic_store_explicit(&w->th, w->own_th, memory_order_seq_cst);
    while (atomic_load_explicit(&p->th_readers, memory_order_seq_cst))
        weft__cpu_relax();
    weft__spin_lock(&p->idle_lock);
    w->lent = false;
    /* What the borrower made is given back by this worker's next trim
     * ("Memory"): if memory was made since its last trim and its sleep
     * does not end for one already, it is woken to arm one.  A run of
     * round trips that reuses what it made wakes nobody. */
    w->lent_ran = true;
    bool wake = w->lent_wait || has_own_work(w) ||
                (!w->trim_armed &&
                 memory_made() !=
                     atomic_load_explicit(&w->made_seen,
                                          memory_order_relaxed)) ||
                atomic_load_explicit(&p->shutdown, memory_order_relaxed);
    w->lent_wait = false;
    if (wake) {
        /* As wakep: off the list, counted as searching. */
        w->woken = true;
        atomic_fetch_add_explicit(&p->nspinning, 1, memory_order_seq_cst);
    } else {
        w->idle = true;
        w->idle_next = p->idle_list;
        p->idle_list = w;
        /* seq_cst, as park_worker's: a submitter that reads nidle after
         * this sees a sleeper to wake. */
        atomic_fetch_add_explicit(&p->nidle, 1, memory_order_seq_cst);
    }
    weft__spin_unlock(&p->idle_lock);
    if (wake) {
        weft__parker_unpark(&w->parker);
    } else if (any_work(p)) {
        /* Work that came while the place was lent and woke nobody: a
         * plain thread's spawn to the global queue, a spare's hand-over
         * (spare_leave), a poller given up: their wake_if_needed found
         * no worker idle, as the lent one counts as busy, and a busy
         * worker looks at them when its task switches out.  The borrower
         * looks in its stead, as park_worker's re-check does: the
         * seq_cst increment of nidle above comes before any_work's
         * seq_cst loads, and a submitter queues before it reads nidle,
         * so one of the two sees the other. */
        wake_if_needed(p);
    }
}

/*
 * A searcher that found nothing keeps looking for a while before it parks
 * (Go's spinning threads, TBB's prolonged pause): while it is counted in
 * nspinning, submitters queue without waking anyone (wake_if_needed), and
 * it picks their task up within a few hundred nanoseconds, where waking a
 * parked worker costs 30-60 us here.  The budget is about that cost
 * (base/backoff.h, weft__timed_spin_more); at most half of the busy workers
 * search at once (find_work), so spinning never takes more than half of
 * the pool's CPUs, and an idle pool stops spinning within the budget.
 * The look is relaxed loads of what steal_work and take_global would
 * take: it only decides whether to search again; what parks the worker
 * safely is park_worker's seq_cst re-check.  It stops at once when the
 * pool stops or the poller has waits that nobody polls (park_worker
 * takes the poller).
 */
#define SEARCH_SPIN_NS WEFT__PARK_SPIN_NS

static bool looks_queued(weft_pool *p)
{
    return queued_with(p, memory_order_relaxed);
}

/* True if something may be there to take: search again; false when the
 * budget is spent (or searching should stop): park. */
static bool search_spin(struct weft__worker *w, uint64_t *spin_end)
{
    weft_pool *p = w->pool;
    if (!*spin_end)
        *spin_end = weft__now_ns() + SEARCH_SPIN_NS;
    struct weft__timed_spin spin;
    weft__timed_spin_start(&spin, *spin_end);
    while (weft__timed_spin_more(&spin)) {
        if (looks_queued(p) || pinned_waiting(w))
            return true;
        if (spin.round % WEFT__TIMED_SPIN_CLOCK_EVERY == 0) {
            if (atomic_load_explicit(&p->stop, memory_order_relaxed) ||
                poller_unattended(p))
                return false;
            if (timers_earliest(p) <= weft__now_ns())
                return true;
        }
    }
    return false;
}

/* Poll the pool's poller without blocking, if it has one; how many waits
 * that woke. */
static unsigned poll_now(weft_pool *p)
{
    struct weft__poller *poller = weft__pool_poller(p);
    return poller ? poller->ops->poll_now(poller) : 0;
}

static void spare_leave(struct weft__worker *w);

static inline __attribute__((always_inline)) struct weft__task *
find_work(struct weft__worker *w)
{
    weft_pool *p = w->pool;
    uint64_t spin_end = 0; /* search_spin's budget, from its first round */
    for (;;) {
        struct weft__task *t = NULL;
        if (weft__pool_service_due(w))
            service(w);
        if (unlikely(atomic_load_explicit(&w->retire, memory_order_acquire))) {
            spare_leave(w);
            return NULL;
        }
        if (++w->tick % GLOBAL_EVERY == 0) {
            /* Fairness: the global queue, the pinned, the yielded, then
             * our own oldest task. */
            t = take_global(w);
            if (!t && unlikely(pinned_waiting(w)))
                t = take_pinned(w);
            if (!t)
                t = pop_yielded(w);
            while (!t && weft__runq_len(&w->q)) {
                struct weft__task *old = weft__runq_steal(&w->q);
                if (old && weft__task_claim_queued(old))
                    t = old;
                else if (!old)
                    break;
            }
        }
        if (!t && w->lifo_streak < LIFO_STREAK_MAX &&
            atomic_load_explicit(&w->lifo, memory_order_relaxed)) {
            struct weft__task *l =
                atomic_exchange_explicit(&w->lifo, NULL, memory_order_acq_rel);
            if (l && weft__task_claim_queued(l)) {
                w->lifo_streak++;
                w->stats.lifo_hits++;
                found_work(w);
                return l;
            }
        }
        w->lifo_streak = 0;
        if (!t)
            t = pop_local(w);
        if (!t && unlikely(pinned_waiting(w)))
            t = take_pinned(w);
        if (!t)
            t = take_global(w);
        if (!t)
            t = pop_yielded(w);
        if (!t && atomic_load_explicit(&w->lifo, memory_order_relaxed)) {
            /* The streak cap let others go first; now the slot's turn. */
            t = atomic_exchange_explicit(&w->lifo, NULL, memory_order_acq_rel);
            if (t && !weft__task_claim_queued(t))
                t = NULL;
            if (t)
                w->stats.lifo_hits++;
        }
        if (t) {
            found_work(w);
            return t;
        }
        if (run_all_timers(w))
            continue; /* fired timers queue tasks */
        if (atomic_load_explicit(&p->stop, memory_order_acquire))
            return NULL;
        if (poll_now(p))
            continue; /* woken I/O waits are queued here */

        /* Search, with at most half of the busy workers searching, and
         * never more than half of the pool's places: a spare holds the
         * place of a worker stuck in the kernel, which uses no CPU, so
         * with many stuck (a blocking library called from every task)
         * the busy threads are many but the CPUs to spin on are still
         * nworkers (Go bounds its spinning Ms by GOMAXPROCS alike).
         * Measured: 200 tasks in hiredis calls, 256 spares, search_spin
         * was 29% of the process's CPU before this bound. */
        if (!w->spinning) {
            uint32_t spinning =
                atomic_load_explicit(&p->nspinning, memory_order_relaxed);
            uint32_t idle = atomic_load_explicit(&p->nidle, memory_order_relaxed);
            uint32_t active =
                atomic_load_explicit(&p->nactive, memory_order_relaxed);
            uint32_t busy = active > idle ? active - idle : 0;
            if (busy > p->nworkers)
                busy = p->nworkers;
            if (2 * spinning < busy) {
                w->spinning = true;
                atomic_fetch_add_explicit(&p->nspinning, 1,
                                          memory_order_seq_cst);
            }
        }
        if (w->spinning && (t = steal_work(w))) {
            found_work(w);
            return t;
        }
        if (w->spinning && search_spin(w, &spin_end))
            continue;
        if (!park_worker(w))
            return NULL;
        spin_end = 0; /* woken as a searcher: a new budget */
    }
}

/* A worker's or a spare's thread: its blocks and its name ("<pool>-<i>"
 * for a worker, "<pool>-s<k>" for spare k). */
static void thread_begin(struct weft__worker *w)
{
    weft__thread_setup(&weft__tls);
    weft__sched_tls.worker = w;
    weft__records_worker_thread();
    /* Nothing made before it ran is its to give back ("Lending"). */
    atomic_store_explicit(&w->made_seen, memory_made(), memory_order_relaxed);
    /* Its own view, which a lend of its place replaces for a while. */
    w->own_th = &weft__tls;
    w->own_tid = (pid_t)syscall(SYS_gettid);
    if (pthread_getcpuclockid(pthread_self(), &w->own_clock) != 0)
        w->own_clock = CLOCK_THREAD_CPUTIME_ID; /* never: its own thread */
    atomic_store_explicit(&w->cpu_clock, w->own_clock, memory_order_relaxed);
    atomic_store_explicit(&w->tid, w->own_tid, memory_order_relaxed);
    /* Release: the monitor that reads it sees the block set up. */
    atomic_store_explicit(&w->th, &weft__tls, memory_order_release);
    weft_pool *p = w->pool;
    char name[32];
    if (w->index < p->nworkers)
        snprintf(name, sizeof name, "%s-%u", p->name, w->index);
    else
        snprintf(name, sizeof name, "%s-s%u", p->name, w->index - p->nworkers);
    name[weft__utf8_prefix(name, 15)] = '\0'; /* the kernel keeps 15 bytes */
    pthread_setname_np(pthread_self(), name);
}

/* Run what find_work finds until the pool stops (or a spare leaves). */
static inline __attribute__((always_inline)) void
run_tasks(struct weft__worker *w)
{
    struct weft__task *task;
    while ((task = find_work(w))) {
        /* For the observers (sched/observe.h). */
        w->stats.runs++;
        task->ran_on = w;
        weft__task_run(task);
        w->dirty = true;
    }
}

static void *worker_main(void *arg)
{
    struct weft__worker *w = arg;
    thread_begin(w);
    run_tasks(w);
    weft__sched_fresh()->worker = NULL;
    return NULL;
}

/* ---------------------------------------------------------------- spares */

/*
 * Spares (monitor.c has the policy: which worker is stuck, when it needs
 * a cover, when the cover goes).  A spare is a worker slot beyond the
 * pool's own, with a thread of its own, made the first time the monitor
 * needs it and reused after.  While it covers a stuck worker it is one
 * of the pool's workers in every respect (it runs find_work: it is on the
 * idle list when idle, counted in nactive, searched by thieves), but its
 * timed waits arm their timers on the covered worker's heap (worker.h,
 * home), and it searches the covered worker first, taking its LIFO slot
 * and seizing its yielded FIFO as any thief does from a stuck worker.
 *
 * Its thread's states (thread_state): NONE (never made, or joined), then
 * COVERING while it is one of the pool's workers, WAITING once it has
 * left (spare_leave) and waits on its parker to cover again, GONE when it
 * waited its keep-alive for nothing and exited (the monitor joins
 * it before it makes a new one).  COVERING is set by the monitor (from
 * NONE, GONE, or by CAS from WAITING, then the unpark); WAITING by the
 * spare; GONE by the spare's CAS from WAITING, which a CAS to COVERING
 * that comes first makes fail: exactly one of the two wins.
 *
 * A recalled spare always leaves (weft__pool_spare_recall against
 * park_worker).  The recall stores retire, then, under idle_lock, takes
 * the spare off the idle list if it is there, as wakep would, and
 * unparks it.  The spare joins the idle list under idle_lock and reads
 * retire after that, before it would sleep.  idle_lock orders the two
 * critical sections: if the recall's comes first, its store of retire
 * (release, before it locked) is visible to the spare's acquire load
 * after the spare's own lock, and the spare does not sleep; if the
 * spare's comes first, the recall finds it on the list and unparks it
 * (the parker keeps an unpark that comes before the park).  Either way
 * it comes back to find_work's top, which reads retire and leaves; a
 * spare that is not parking reads it there at its next pass (at least
 * once in GLOBAL_EVERY yields that switch straight to the next yielded
 * task).  The recall counts the spare as searching, as wakep does: a
 * spare found off the list takes itself for woken by a waker and drops
 * that count when it stops searching (found_work); without the count
 * nspinning would wrap and no submitter would wake anyone again.
 *
 * Leaving keeps the no-lost-wakeup proof (the top).  That proof lets a
 * worker's push to its own deque go unannounced, because the pusher runs
 * the task itself if no searcher saw it; a spare that leaves will not.
 * So spare_leave hands its LIFO slot, deque and yielded FIFO to the
 * global queue (each inject an exchange: the submitter's barrier), leaves
 * the active set, stops searching (found_work: the last searcher looks
 * again and wakes another worker if work is queued), and then announces
 * what it handed over as a submitter does (wake_if_needed).
 *
 * The monitor's deep sleep (weft__pool_monitor_may_sleep against
 * park_worker).  The monitor sleeps only when, under idle_lock, every
 * active worker is on the idle list (nidle == nactive: both change only
 * under idle_lock, so that look is exact), and it sets monitor_asleep in
 * the same critical section.  Every worker that goes from the idle list
 * back to work passes park_worker's second critical section (whether it
 * left the list itself or a waker or a recall took it off), which reads
 * and clears monitor_asleep under idle_lock and, after unlocking,
 * unparks the monitor; a spare made active (weft__pool_spare_cover)
 * counts in nactive, under idle_lock, before its thread runs.  A worker
 * off the list when the monitor looks makes the counts differ, one that
 * leaves it after sees the flag, and the monitor's parker keeps an
 * unpark that comes first: the monitor is never asleep, with no unpark on
 * its way, while an active worker runs.
 *
 * verify/pool.pml checks these three (-DSPARE -DMONITOR), with a broken
 * twin for each step: park_worker without the retire check, a recall
 * without the wake or without the count, spare_leave without its wake,
 * the monitor's look without idle_lock, park_worker without the
 * monitor's wake.
 */
/* How long a spare's thread waits to cover again before it exits:
 * WEFT_SPARE_IDLE_MS (1..3600000, read once), else 10 s (Tokio's keep-alive
 * for its blocking threads). */
static uint64_t spare_keep_alive_ns(void)
{
    static _Atomic uint64_t keep;
    uint64_t ns = atomic_load_explicit(&keep, memory_order_relaxed);
    if (!ns) {
        const char *s = getenv("WEFT_SPARE_IDLE_MS");
        char *end = NULL;
        unsigned long ms = s ? strtoul(s, &end, 10) : 0;
        if (!s || !*s || *end || s[0] == '-' || ms < 1 || ms > 3600000)
            ms = 10000;
        ns = (uint64_t)ms * 1000000u;
        atomic_store_explicit(&keep, ns, memory_order_relaxed);
    }
    return ns;
}

/*
 * At the top of find_work, asked to leave (weft__pool_spare_recall): hand
 * everything queued here to the global queue, leave the active set, stop
 * searching (waking another worker if work is left: found_work's rule),
 * and tell the covered worker it is uncovered.  Nothing else refers to
 * the spare's queues after that but thieves, which find them empty.
 */
static void spare_leave(struct weft__worker *w)
{
    weft_pool *p = w->pool;
    bool handed = false;
    struct weft__task *t =
        atomic_exchange_explicit(&w->lifo, NULL, memory_order_acq_rel);
    if (t) {
        inject(p, t);
        handed = true;
    }
    /* Oldest first, and the yielded after them: their order here. */
    while ((t = weft__runq_steal(&w->q))) {
        inject(p, t);
        handed = true;
    }
    while ((t = weft__yielded_pop(&w->yielded))) {
        /* This FIFO wrote t->link after t's release (its queueing):
         * order that write before whoever claims t from the global queue
         * (a claim acquires t's state; liburcu's own order is one
         * ThreadSanitizer cannot see). */
        atomic_fetch_or_explicit(&t->done->state, 0, memory_order_release);
        inject(p, t);
        handed = true;
    }
    weft__spin_lock(&p->idle_lock);
    atomic_store_explicit(&w->active, 0, memory_order_relaxed);
    atomic_fetch_sub_explicit(&p->nactive, 1, memory_order_relaxed);
    weft__spin_unlock(&p->idle_lock);
    found_work(w);
    if (handed)
        wake_if_needed(p);
    struct weft__worker *covered =
        atomic_exchange_explicit(&w->covers, NULL, memory_order_relaxed);
    struct weft__worker *me = w;
    if (covered)
        atomic_compare_exchange_strong_explicit(&covered->covered_by, &me,
                                                NULL, memory_order_relaxed,
                                                memory_order_relaxed);
    atomic_store_explicit(&w->stuck, 0, memory_order_relaxed);
    atomic_store_explicit(&w->retire, 0, memory_order_relaxed);
    /* Release: the monitor that sees WAITING sees all of the above. */
    atomic_store_explicit(&w->thread_state, WEFT__SPARE_WAITING,
                          memory_order_release);
}

/* After spare_leave: wait to cover again.  False when the pool stops or
 * the keep-alive passed (then the thread exits).  A spare that waited
 * TRIM_AFTER_NS gives its caches back as an idle worker does ("Memory"):
 * it is on no idle list, so the workers' trims cannot reach what it
 * holds, and an idle pool would keep up to a cache of records per spare,
 * each pinning a whole chunk. */
static bool spare_wait(struct weft__worker *w)
{
    weft_pool *p = w->pool;
    uint64_t until = weft__now_ns() + spare_keep_alive_ns();
    owe_trim(w);
    for (;;) {
        if (atomic_load_explicit(&p->stop, memory_order_acquire))
            return false;
        /* Acquire: the monitor's set-up of the cover comes before. */
        if (atomic_load_explicit(&w->thread_state, memory_order_acquire) ==
            WEFT__SPARE_COVERING)
            return true;
        if (w->trim_at && weft__now_ns() >= w->trim_at)
            give_back_memory(w);
        uint64_t wake = w->trim_at && w->trim_at < until ? w->trim_at : until;
        if (!weft__parker_park(&w->parker, wake, 0) &&
            weft__now_ns() >= until) {
            uint32_t waiting = WEFT__SPARE_WAITING;
            if (atomic_compare_exchange_strong_explicit(
                    &w->thread_state, &waiting, WEFT__SPARE_GONE,
                    memory_order_acq_rel, memory_order_acquire)) {
                /* What it still holds goes back before its thread ends:
                 * the exit's spill (cache.h) trims nothing. */
                if (w->trim_at)
                    give_back_memory(w);
                return false;
            }
        }
    }
}

static void *spare_main(void *arg)
{
    struct weft__worker *w = arg;
    weft_pool *p = w->pool;
    thread_begin(w);
    do
        run_tasks(w);
    while (!atomic_load_explicit(&p->stop, memory_order_acquire) &&
           spare_wait(w));
    /* The thread's caches go back to the depots as it exits (cache.h). */
    weft__sched_fresh()->worker = NULL;
    return NULL;
}

/* A worker's record is mostly its run queue's ring, which must start
 * zeroed (runq.c) and should stay untouched where no push reached it: an
 * anonymous mapping, page-aligned, gives both. */
#define SLOT_BYTES                                                          \
    (((sizeof(struct weft__worker) + 4095) / 4096) * 4096)

/* A worker slot's records, set up; NULL: no memory. */
static struct weft__worker *slot_new(weft_pool *p, unsigned index)
{
    void *m = weft__mmap(NULL, SLOT_BYTES, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    struct weft__worker *w = m; /* zeroed */
#ifdef WEFT_ASAN
    /* LeakSanitizer looks for pointers in the heap, stacks and globals,
     * not in our mappings: what only a worker points to (its timer heap)
     * would look leaked in a program that exits with a pool alive. */
    __lsan_register_root_region(m, SLOT_BYTES);
#endif
    atomic_init(&w->lifo, NULL);
    weft__runq_init(&w->q);
    __cds_wfcq_init(&w->pinned_head, &w->pinned_tail);
    weft__parker_init(&w->parker);
    weft__timers_init(&w->timers);
    w->home = &w->timers;
    w->pool = p;
    w->index = index;
    w->rng = 0x9E3779B97F4A7C15ull * (index + 1);
    return w;
}

struct weft__worker *weft__pool_spare_add(weft_pool *p)
{
    unsigned n = atomic_load_explicit(&p->nslots, memory_order_relaxed);
    if (n >= p->nworkers + p->max_spares)
        return NULL;
    struct weft__worker *w = slot_new(p, n);
    if (!w)
        return NULL;
    p->workers[n] = w;
    /* Release: whoever reads the new count sees the slot set up. */
    atomic_store_explicit(&p->nslots, n + 1, memory_order_release);
    return w;
}

/*
 * Join a spare's thread that has exited (or is exiting).  Its ctx block
 * (w->th) lives in the thread's static TLS, which glibc keeps until the
 * join: the dump reads it (weft__worker_running) holding the records'
 * walk, so the join waits for any dump in progress, and a later one sees
 * no block.
 */
static void join_spare(struct weft__worker *s)
{
    weft__records_walk_begin();
    atomic_store_explicit(&s->th, NULL, memory_order_relaxed);
    weft__records_walk_end();
    pthread_join(s->thread, NULL);
}

int weft__pool_spare_cover(struct weft__worker *s, struct weft__worker *x)
{
    weft_pool *p = s->pool;
    if (atomic_load_explicit(&s->thread_state, memory_order_acquire) ==
        WEFT__SPARE_COVERING)
        return -EBUSY; /* still leaving: the monitor picks another */
    atomic_store_explicit(&s->retire, 0, memory_order_relaxed);
    atomic_store_explicit(&s->covers, x, memory_order_relaxed);
    atomic_store_explicit(&x->covered_by, s, memory_order_relaxed);
    /* The covered worker's heap: its timers fire wherever it is armed
     * from (a spare of a spare covers the first one's heap). */
    s->home = x->home;
    s->service_at = 0;
    weft__spin_lock(&p->idle_lock);
    atomic_store_explicit(&s->active, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->nactive, 1, memory_order_relaxed);
    weft__spin_unlock(&p->idle_lock);

    uint32_t st =
        atomic_load_explicit(&s->thread_state, memory_order_acquire);
    if (st == WEFT__SPARE_WAITING &&
        atomic_compare_exchange_strong_explicit(
            &s->thread_state, &st, WEFT__SPARE_COVERING,
            memory_order_acq_rel, memory_order_acquire)) {
        weft__parker_unpark(&s->parker);
        return 0;
    }
    if (st == WEFT__SPARE_GONE)
        join_spare(s);
    atomic_store_explicit(&s->thread_state, WEFT__SPARE_COVERING,
                          memory_order_relaxed);
    /* On the monitor's thread, which blocks every signal: the spare gets
     * the workers' mask (worker.h, worker_mask). */
    sigset_t monitor_mask;
    pthread_sigmask(SIG_SETMASK, &p->worker_mask, &monitor_mask);
    int err = weft__pthread_create(&s->thread, NULL, spare_main, s);
    pthread_sigmask(SIG_SETMASK, &monitor_mask, NULL);
    if (err == 0)
        return 0;
    /* No thread: the slot stays as it was, uncovering. */
    atomic_store_explicit(&s->thread_state, WEFT__SPARE_NONE,
                          memory_order_relaxed);
    weft__spin_lock(&p->idle_lock);
    atomic_store_explicit(&s->active, 0, memory_order_relaxed);
    atomic_fetch_sub_explicit(&p->nactive, 1, memory_order_relaxed);
    weft__spin_unlock(&p->idle_lock);
    s->home = &s->timers;
    atomic_store_explicit(&x->covered_by, NULL, memory_order_relaxed);
    atomic_store_explicit(&s->covers, NULL, memory_order_relaxed);
    return -EAGAIN;
}

void weft__pool_spare_recall(struct weft__worker *s)
{
    weft_pool *p = s->pool;
    /* Release: pairs with find_work's and park_worker's acquire. */
    atomic_store_explicit(&s->retire, 1, memory_order_release);
    /* If it sleeps on the idle list, wake it as wakep would (counted as
     * searching: spare_leave stops that); else it sees the request at
     * its next scheduling point or before it sleeps (park_worker). */
    weft__spin_lock(&p->idle_lock);
    bool in_poll = false, woken = s->idle;
    if (woken) {
        struct weft__worker **link = &p->idle_list;
        while (*link != s)
            link = &(*link)->idle_next;
        *link = s->idle_next;
        s->idle = false;
        s->woken = true;
        in_poll = s->in_poll;
        atomic_fetch_sub_explicit(&p->nidle, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&p->nspinning, 1, memory_order_seq_cst);
    }
    weft__spin_unlock(&p->idle_lock);
    if (!woken)
        return;
    if (in_poll)
        weft__pool_poller(p)->ops->wake(weft__pool_poller(p));
    else
        weft__parker_unpark(&s->parker);
}

void weft__pool_spare_join(struct weft__worker *s)
{
    uint32_t st = atomic_load_explicit(&s->thread_state, memory_order_acquire);
    if (st != WEFT__SPARE_NONE) {
        join_spare(s);
        atomic_store_explicit(&s->thread_state, WEFT__SPARE_NONE,
                              memory_order_relaxed);
    }
}

bool weft__pool_monitor_may_sleep(weft_pool *p)
{
    weft__spin_lock(&p->idle_lock);
    bool all_idle = atomic_load_explicit(&p->nidle, memory_order_relaxed) ==
                    atomic_load_explicit(&p->nactive, memory_order_relaxed);
    if (all_idle)
        p->monitor_asleep = true;
    weft__spin_unlock(&p->idle_lock);
    return all_idle;
}

/* ------------------------------------------------------ create, destroy */

/* After the drain: the global queue, LIFO slots and deques can hold stale
 * entries (tasks run inline by an await).  The yielded FIFOs cannot: a
 * yielded task is claimed only through its entry, so a drained pool's
 * FIFOs are empty. */
static void drop_queued(weft_pool *p)
{
    struct weft__task *batch[256];
    unsigned n;
    while ((n = inject_take(p, batch, 256, true)) || !inject_empty(p))
        for (unsigned i = 0; i < n; i++)
            if (weft__task_claim_queued(batch[i]))
                weft__coro_die(&batch[i]->co,
                               "a live task was left in a drained pool");
    unsigned slots = weft__pool_slots(p);
    for (unsigned i = 0; i < slots; i++) {
        struct weft__task *t = atomic_exchange(&p->workers[i]->lifo, NULL);
        if (t && weft__task_claim_queued(t))
            weft__coro_die(&t->co, "a live task was left in a drained pool");
        while ((t = weft__runq_steal(&p->workers[i]->q)))
            if (weft__task_claim_queued(t))
                weft__coro_die(&t->co, "a live task was left in a drained pool");
    }
}

static void free_pool(weft_pool *p, unsigned nmade)
{
    for (unsigned i = 0; i < nmade; i++) {
        weft__parker_fini(&p->workers[i]->parker);
        weft__timers_fini(&p->workers[i]->timers);
#ifdef WEFT_ASAN
        __lsan_unregister_root_region(p->workers[i], SLOT_BYTES);
#endif
        munmap(p->workers[i], SLOT_BYTES);
    }
    free(p->workers);
    weft__monitor_free(p);
    cds_wfcq_destroy(&p->inject_head, &p->inject_tail);
    struct weft__poller *poller = weft__pool_poller(p);
    if (poller)
        poller->ops->fini(poller);
    free(p);
}

/* WEFT_NO_MONITOR set (to anything but "" or "0"): every pool as with
 * WEFT_POOL_NO_MONITOR.  Read at each create: cheap, and a test may set it
 * between pools. */
static bool monitor_off_by_env(void)
{
    const char *s = getenv("WEFT_NO_MONITOR");
    return s && *s && strcmp(s, "0") != 0;
}

/* The pool could not start: stop the threads started so far (nothing was
 * ever queued, so the pool is drained) and free it. */
static void abandon(weft_pool *p, unsigned nstarted)
{
    struct weft__parker parker;
    weft__parker_init(&parker);
    p->destroyer = &parker;
    atomic_store(&p->shutdown, 1);
    atomic_store(&p->stop, 1);
    wake_all(p);
    for (unsigned j = 0; j < nstarted; j++)
        pthread_join(p->workers[j]->thread, NULL);
    weft__parker_fini(&parker);
    free_pool(p, p->nworkers);
}

WEFT_API int weft_pool_create(weft_pool **out, const weft_pool_opts *opts)
{
    if (!out)
        return -EINVAL;
    unsigned n = opts ? opts->threads : 0;
    if (n == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        n = cpus > 0 ? (unsigned)cpus : 1;
    }
    if (n > WEFT_POOL_THREADS_MAX)
        return -EINVAL;
    size_t stack = opts ? opts->stack_size : 0;
    unsigned spares = opts && opts->spares ? opts->spares
                                           : WEFT_POOL_SPARES_DEFAULT;
    unsigned flags = opts ? opts->flags : 0;
    if (stack > WEFT_STACK_MAX || spares > WEFT_POOL_SPARES_MAX ||
        (flags & ~(unsigned)WEFT_POOL_NO_MONITOR) ||
        (opts && !weft__reserved_zero(opts->reserved_, 2)))
        return -EINVAL;
    bool monitor = !(flags & WEFT_POOL_NO_MONITOR) && !monitor_off_by_env();
    if (!monitor)
        spares = 0;

    weft_pool *p = weft__calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->workers = weft__calloc(n + spares, sizeof *p->workers);
    if (!p->workers) {
        free(p);
        return -ENOMEM;
    }
    p->nworkers = n;
    p->max_spares = spares;
    p->stack_size = stack;
    p->cache_bytes = opts && opts->cache_bytes ? opts->cache_bytes
                                               : WEFT_POOL_CACHE_DEFAULT;
    const char *name = opts && opts->name ? opts->name : "weft";
    snprintf(p->name, sizeof p->name, "%.*s", (int)weft__utf8_prefix(name, 10),
             name);
    for (char *c = p->name; *c; c++)
        *c = weft__printable(*c); /* it names threads and dump lines */
    p->made_ns = weft__now_ns();
    pthread_sigmask(SIG_BLOCK, NULL, &p->worker_mask);
    p->service_ticks = weft__ticks_at_most(SERVICE_EVERY_NS);
    cds_wfcq_init(&p->inject_head, &p->inject_tail);
    weft__spin_init(&p->idle_lock);
    weft__spin_init(&p->inject_lock);
    atomic_init(&p->poller, NULL);

    for (unsigned i = 0; i < n; i++) {
        struct weft__worker *w = slot_new(p, i);
        if (!w) {
            free_pool(p, i);
            return -ENOMEM;
        }
        atomic_init(&w->active, 1);
        p->workers[i] = w;
    }
    atomic_init(&p->nslots, n);
    atomic_init(&p->nactive, n);
    if (monitor) {
        int err = weft__monitor_make(p, opts ? opts->stall_warn_ms : 0);
        if (err) {
            free_pool(p, n);
            return err;
        }
    }
    for (unsigned i = 0; i < n; i++) {
        if (weft__pthread_create(&p->workers[i]->thread, NULL, worker_main,
                                 p->workers[i]) != 0) {
            abandon(p, i);
            return -EAGAIN;
        }
    }
    if (monitor && weft__monitor_start(p) != 0) {
        abandon(p, n);
        return -EAGAIN;
    }
    weft__observe_pool_made(p);
    *out = p;
    return 0;
}

/* Steps 1 (but for the checks, which sched/destroy.c's public calls make)
 * to 5 of shutdown (see the top).  The destroyer parks on `parker`;
 * wait_stop (destroy.c) returns 0 once `stop` is set, or an error once it
 * gave up waiting, having released `destroying` (the pool drains on). */
int weft__pool_destroy(weft_pool *p, struct weft__parker *parker,
                       int (*wait_stop)(weft_pool *p, void *arg), void *arg)
{
    uint32_t zero = 0;
    if (!atomic_compare_exchange_strong(&p->destroying, &zero, 1))
        return -EBUSY;

    weft__spin_lock(&p->idle_lock);
    p->destroyer = parker;
    weft__spin_unlock(&p->idle_lock);
    atomic_store_explicit(&p->shutdown, 1, memory_order_seq_cst);
    wake_all(p);
    int err = wait_stop(p, arg);
    if (err)
        return err;

    /* Unlisted first: a dump of every pool (weft_dump_all) reads the
     * workers' thread blocks, which go with their threads. */
    weft__observe_pool_gone(p);
    /* The monitor, then the spares' threads (monitor.c), before the
     * workers: a look of the monitor's reads each worker's thread block
     * and its pthread_t (its CPU clock), which a joined thread no longer
     * has (its stack, where the block is, may be unmapped): the monitor
     * of a pool being destroyed crashed there, under pools made and
     * destroyed from three threads.  After `stop` nothing needs the
     * monitor: every task has ended, and a worker that still wakes it on
     * its way out only unparks a parker that lives until free_pool. */
    weft__monitor_stop(p);
    for (unsigned i = 0; i < p->nworkers; i++)
        pthread_join(p->workers[i]->thread, NULL);
    /* Outside submitters still between their queueing and their wake. */
    unsigned spins = 0;
    while (atomic_load_explicit(&p->outside_submitters, memory_order_acquire))
        weft__backoff(&spins);
    drop_queued(p);
    free_pool(p, weft__pool_slots(p));
    return 0;
}
