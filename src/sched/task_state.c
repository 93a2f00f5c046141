/*
 * sched/task_state.c — the task state word's transitions (sched/task.h has
 * the states; docs/design.md, "The task state machine", the invariants).
 *
 * Two kinds of transition:
 *   - a claim (IDLE or SCHEDULED -> RUNNING) is a CAS from a lifecycle that
 *     others may also try to leave: exactly one claimer wins ("One
 *     owner");
 *   - every other transition is made by the thread that holds the task
 *     RUNNING, or by its only owner (a creator before it publishes the
 *     task): weft__task_set's CAS loop only has to carry along what others
 *     may change meanwhile, which is NOTIFIED and the reference count.
 * A wake of a RUNNING task sets NOTIFIED; the holder's park (after the
 * task's registers are saved) turns it into a requeue.
 */
#include "sched/task.h"

#include "sched/driver.h"
#include "sched/observe.h"
#include "sched/worker.h"

static inline uint64_t with_lifecycle(uint64_t s, uint64_t lc)
{
    return (s & ~(uint64_t)WEFT__T_LIFECYCLE) | lc;
}

uint64_t weft__task_set(struct weft__task *t, uint64_t lc, uint64_t clear,
                        int64_t refs, memory_order mo)
{
    uint64_t s = atomic_load_explicit(&t->done->state, memory_order_relaxed);
    uint64_t n;
    do
        n = (with_lifecycle(s, lc) & ~clear) + (uint64_t)refs * WEFT__T_REF;
    while (!atomic_compare_exchange_weak_explicit(&t->done->state, &s, n, mo,
                                                  memory_order_relaxed));
    return n;
}

/*
 * Move t from lifecycle `from` to `to`, setting `flags` and adding `refs`
 * references, if it is in `from`; false (nothing changed) if it is not.
 * Either way *seen is the state it read last (before the move).
 * Acquire: the claimer sees what the releasing side (a park after its
 * save, a spawn or wake that queued it) wrote.  The first load is
 * acquire too: it may be the one that meets the creator's release
 * (ThreadSanitizer checks that); and so is a failed exchange's, so that
 * *seen is always an acquire's (unref_seen needs it).
 */
static bool move(struct weft__task *t, uint64_t from, uint64_t to,
                 uint64_t flags, int64_t refs, uint64_t *seen)
{
    /* The handle is read before the state, so the same holds for it: an
     * acquire that meets task_new's release (task.c), for a claimer
     * whose record came through liburcu's queue. */
    struct weft_task *h = __atomic_load_n(&t->done, __ATOMIC_ACQUIRE);
    uint64_t s = atomic_load_explicit(&h->state, memory_order_acquire);
    do {
        if (weft__task_lifecycle(s) != from) {
            *seen = s;
            return false;
        }
    } while (!atomic_compare_exchange_weak_explicit(
        &h->state, &s,
        (with_lifecycle(s, to) | flags) + (uint64_t)refs * WEFT__T_REF,
        memory_order_acquire, memory_order_acquire));
    *seen = s;
    return true;
}

static void unref_seen(struct weft__task *t, uint64_t s, uint64_t n);

bool weft__task_claim_idle(struct weft__task *t)
{
    uint64_t seen;
    return move(t, WEFT__T_IDLE, WEFT__T_RUNNING, 0, 0, &seen);
}

bool weft__task_claim_queued(struct weft__task *t)
{
    /* The entry's reference goes with the entry.  Acquire pairs with the
     * release that queued it (spawn, wake), also when the queue in between
     * is liburcu's, which ThreadSanitizer cannot see. */
    uint64_t seen;
    if (move(t, WEFT__T_SCHEDULED, WEFT__T_RUNNING, WEFT__T_STARTED, -1,
             &seen)) {
        /* Its first start: a cancel's request (task.h, WEFT__H_CANCEL).
         * After the CAS that stored STARTED (an acquire: the load is not
         * made before it). */
        if (!(seen & WEFT__T_STARTED) &&
            weft__handle_cancel_requested(t->done))
            atomic_store_explicit(&t->cancelled, 1, memory_order_relaxed);
        return true;
    }
    /* A stale entry: the task was claimed inline meanwhile.  Its drop
     * starts from the state the claim read (an acquire), not a new load. */
    unref_seen(t, seen, 1);
    return false;
}

void weft__task_make_scheduled(struct weft__task *t)
{
    /* Release: the context saved before this action is visible to the
     * thread that claims the queue entry. */
    weft__task_set(t, WEFT__T_SCHEDULED, WEFT__T_NOTIFIED, 1,
                   memory_order_release);
}

/* Both records go: nobody refers to the task any more.  A run record
 * given back earlier (see below) is not given back again. */
static void free_task(struct weft__task *t, struct weft_task *h,
                      bool run_gone)
{
    if (run_gone)
        weft__handle_free(h);
    else
        weft__record_free_pair(t);
}

/* weft__task_unref, from the state `s` read by an acquire. */
static void unref_seen(struct weft__task *t, uint64_t s, uint64_t n)
{
    /* An ended task whose references are all ours is ours alone: nobody
     * else holds one, and nobody can gain one (a wake and a cancel add a
     * reference only to a task that has not ended), so `s` is final.  Then
     * no RMW (TBB's rule: the shared count only on the last transition):
     * a stale queue entry of an awaited fork-join child.  (The handle's
     * reference is never ours here, so a held handle takes the RMW.)  The
     * acquire that read `s` read the last of the other owners' release
     * RMWs, so their writes come before the free. */
    if (weft__task_lifecycle(s) == WEFT__T_COMPLETE &&
        weft__task_refs(s) == n) {
        weft__record_free_pair(t);
        return;
    }
    /* acq_rel: the last one out sees every other owner's writes. */
    uint64_t old = atomic_fetch_sub_explicit(&t->done->state, n * WEFT__T_REF,
                                             memory_order_acq_rel);
    weft__task_settle(t, old - n * WEFT__T_REF);
}

void weft__task_unref(struct weft__task *t, uint64_t n)
{
    unref_seen(t,
               atomic_load_explicit(&t->done->state, memory_order_acquire),
               n);
}

void weft__task_drop_handle(struct weft_task *h)
{
    /* An ended task whose one reference is the handle's (awaited, or
     * joined as weft.hpp's get() does): ours alone, freed without an RMW.
     * Its run record went when the handle's became the only reference,
     * unless KEEP kept it.  Acquire: as weft__task_unref's. */
    uint64_t s = atomic_load_explicit(&h->state, memory_order_acquire);
    if (weft__task_lifecycle(s) == WEFT__T_COMPLETE &&
        weft__task_refs(s) == 1) {
        free_task(weft__handle_run(h), h, !(s & WEFT__T_KEEP));
        return;
    }
    /* HANDLE is set while the handle is held: subtracting it clears it. */
    uint64_t old = atomic_fetch_sub_explicit(
        &h->state, WEFT__T_REF + WEFT__T_HANDLE, memory_order_acq_rel);
    if (weft__task_refs(old) == 1)
        /* The run side's last drop left only ours: it gave the run
         * record back then, unless KEEP. */
        free_task(weft__handle_run(h), h, !(old & WEFT__T_KEEP));
}

void weft__failure_drop(struct weft_task *h)
{
    /* The result was written before the end that our caller has seen
     * (its acquire, or its own write); nobody else reads it now. */
    struct weft_failure *f = h->result;
    h->result = NULL;
    if (f && f->drop)
        f->drop(f);
}

void weft__task_detach_handle(struct weft_task *h)
{
    /* Not ended: drop the handle's reference by CAS, so that the state
     * it leaves is one the task's end has not passed; the end then finds
     * HANDLE clear (and DETACHED, set before this, carried by the
     * release) and drops a failure itself.  The task's life reference
     * stays until its end, so this never drops the last one. */
    uint64_t s = atomic_load_explicit(&h->state, memory_order_acquire);
    while (weft__task_lifecycle(s) != WEFT__T_COMPLETE)
        if (atomic_compare_exchange_weak_explicit(
                &h->state, &s, s - (WEFT__T_REF + WEFT__T_HANDLE),
                memory_order_acq_rel, memory_order_acquire))
            return;
    /* Ended while the handle was held (the acquire that saw COMPLETE saw
     * the body's writes): the end left its failure to us, and the handle
     * is still ours to read. */
    if (weft__handle_failed(h))
        weft__failure_drop(h);
    weft__task_drop_handle(h);
}

/*
 * Queue a SCHEDULED task (holding its entry's reference) on its home, read
 * by the caller *before* the task became SCHEDULED: once it is, another
 * thread may claim, run and free it, and the queues' own ordering (liburcu's
 * global queue) is invisible to ThreadSanitizer.  Only a running task
 * changes its home, so the value read before is still right.
 */
static void enqueue_home(struct weft__task *t, weft_pool *pool,
                         struct weft__driver *driver,
                         struct weft__worker *pin, bool fifo)
{
    if (unlikely(pin))
        weft__pool_submit_pinned(pin, t);
    else if (!pool)
        weft__driver_submit(driver, t);
    else if (fifo)
        weft__pool_submit_fifo(pool, t);
    else
        weft__pool_submit_woken(pool, t);
}

/* A wake while tracing: its flow is recorded before the task is queued
 * (before anyone can claim it).  Out of line, and called last, so that
 * the untraced wake keeps nothing across a call. */
static __attribute__((noinline)) void wake_traced(struct weft__task *t,
                                                  weft_pool *pool,
                                                  struct weft__driver *driver,
                                                  struct weft__worker *pin,
                                                  bool fifo)
{
    weft__trace_wake(t);
    enqueue_home(t, pool, driver, pin, fifo);
}

static void wake(struct weft__task *t, bool fifo)
{
    uint64_t s = atomic_load_explicit(&t->done->state, memory_order_relaxed);
    for (;;) {
        switch (weft__task_lifecycle(s)) {
        case WEFT__T_IDLE: {
            weft_pool *pool = t->pool;
            struct weft__driver *driver = t->driver;
            struct weft__worker *pin = t->pin;
            if (atomic_compare_exchange_weak_explicit(
                    &t->done->state, &s,
                    with_lifecycle(s, WEFT__T_SCHEDULED) + WEFT__T_REF,
                    memory_order_acq_rel, memory_order_relaxed)) {
                if (weft__trace_on()) {
                    wake_traced(t, pool, driver, pin, fifo);
                    return;
                }
                enqueue_home(t, pool, driver, pin, fifo);
                return;
            }
            break;
        }
        case WEFT__T_RUNNING:
            /* Still switching out (or about to wait): its park requeues
             * it. */
            if (s & WEFT__T_NOTIFIED)
                return;
            /* Traced before the CAS: once NOTIFIED is set the park may
             * requeue it, and it may run, end and go, at once.  Until
             * then it is as alive as the load of its state needed.  A
             * failed CAS may record a second flow: its first start is
             * drawn without an end. */
            if (unlikely(weft__trace_on()))
                weft__trace_wake(t);
            if (atomic_compare_exchange_weak_explicit(
                    &t->done->state, &s, s | WEFT__T_NOTIFIED, memory_order_acq_rel,
                    memory_order_relaxed))
                return;
            break;
        default:
            return; /* already queued, or ended */
        }
    }
}

void weft__task_wake(struct weft__task *t)
{
    wake(t, false);
}

void weft__task_wake_fifo(struct weft__task *t)
{
    wake(t, true);
}

struct weft__task *weft__task_park(struct weft__task *t)
{
    uint64_t s = atomic_load_explicit(&t->done->state, memory_order_relaxed);
    for (;;) {
        if (s & WEFT__T_NOTIFIED) {
            /* A wake came while it was running: keep it, as a requeue. */
            weft_pool *pool = t->pool;
            struct weft__driver *driver = t->driver;
            struct weft__worker *pin = t->pin;
            weft__task_make_scheduled(t);
            enqueue_home(t, pool, driver, pin, false);
            return NULL;
        }
        /* Release: a thread that claims it (acquire) sees its context. */
        if (atomic_compare_exchange_weak_explicit(
                &t->done->state, &s, with_lifecycle(s, WEFT__T_IDLE),
                memory_order_release, memory_order_relaxed))
            return NULL;
    }
}
