/*
 * sched/task.h — the task record and its state machine (internal), shared
 * by the files of sched/ and by the layers above that park tasks.
 *
 * Files: task_state.c (the state word's transitions), task_run.c (running a
 * task on a thread, suspending it, its end), await.c (await and its inline
 * and lazy starts), driver.c (weft_sync_wait), yield.c (schedule, yield),
 * records.c (where task records come from), task.c (creation and the
 * public calls on a handle).
 */
#ifndef WEFT_SCHED_TASK_H
#define WEFT_SCHED_TASK_H

#include <weft/pool.h>
#include <weft/task.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <urcu/wfcqueue.h>

#include "base/cache.h"
#include "base/compiler.h"
#include "base/spinlock.h"
#include "ctx/coro.h"
#include "ctx/ctx.h"
#include "sched/thread.h"

/* ---------------------------------------------------------------- state */

/*
 * The task state word (docs/design.md, "The task state machine"): a
 * lifecycle in the low two bits, the NOTIFIED and STARTED flags, and a
 * reference count above.
 *
 *   IDLE       not queued, not running (new, or suspended and registered
 *              wherever it waits)
 *   SCHEDULED  in a run queue (that queue entry holds one reference)
 *   RUNNING    claimed by exactly one thread, which runs it
 *   COMPLETE   its body returned (and it left its stack)
 *
 * Only a CAS moves a task out of IDLE or SCHEDULED, so exactly one thread
 * wins the right to run it ("One owner").  A wake that finds the task
 * RUNNING sets NOTIFIED instead, and the task's own post-switch step
 * requeues it (nothing lost, nothing run twice).  A task stops RUNNING only
 * in a post-switch action, after its registers are saved ("Publish after
 * save").
 *
 * References: the handle (until await, sync_wait or detach consumes it;
 * HANDLE is set while it is held), the task's life (until COMPLETE), one
 * per run-queue entry, and one that weft_task_cancel holds for a moment.
 * A queue entry can outlive its purpose: an awaiter may claim a queued
 * task that never started and run it inline (await.c); the stale entry is
 * dropped when popped.  Both records are freed when the count reaches
 * zero; the run record earlier, when the only reference left is the
 * handle's and KEEP is clear (weft__task_settle): nobody gains a
 * reference to a COMPLETE task, so that moment comes once, to the owner
 * whose drop made it.
 */
enum {
    WEFT__T_IDLE = 0,
    WEFT__T_SCHEDULED = 1,
    WEFT__T_RUNNING = 2,
    WEFT__T_COMPLETE = 3,
    WEFT__T_LIFECYCLE = 3,
    WEFT__T_NOTIFIED = 4,
    WEFT__T_STARTED = 8,   /* has been claimed to run at least once */
    WEFT__T_HANDLE = 16,   /* the handle is held (and counted)          */
    WEFT__T_KEEP = 32,     /* the run record lives as long as the handle */
    WEFT__T_LAZY = 64,     /* made by weft_task_create, not yet started
                              (the handle holder's flag)                */
    WEFT__T_ROOM = 128,    /* has a room (and KEEP): fixed when made    */
};
#define WEFT__T_REF ((uint64_t)1 << 8)

/*
 * The waiter slot: NULL, an awaiting task (its run record, 64-byte
 * aligned), a thread waiting in weft_sync_wait (its driver, tagged with
 * bit 0), or, once the body has returned, the end's mark: the task's id
 * shifted past two tag bits, with ENDED (bit 1) set, and bit 0 set too
 * once weft_await_all's check for a handle given twice has seen it
 * (await.c).  The mark carries the id because the run record, which
 * holds it while the task can run, may go back to its cache at the end
 * while the handle stays (weft__handle_id).  Ids never reach bit 61.
 */
#define WEFT__WAITER_THREAD ((uintptr_t)1)
#define WEFT__WAITER_ENDED ((uintptr_t)2)
#define WEFT__WAITER_SEEN ((uintptr_t)1) /* with ENDED */

/* The end's mark for a task with this id. */
static inline uintptr_t weft__waiter_done(uint64_t id)
{
    return (uintptr_t)(id << 2) | WEFT__WAITER_ENDED;
}

/* Whether the slot holds the end's mark (seen or not). */
static inline bool weft__waiter_ended(uintptr_t w)
{
    return (w & WEFT__WAITER_ENDED) != 0;
}

struct weft__driver;
struct weft__wait;
struct weft__worker;

/*
 * A task is two records (docs/design.md, "The task state machine"):
 *
 *   - its handle, struct weft_task (the public weft_task): the state word,
 *     the waiter slot (the id, after the end), the result and the run
 *     record's address (with three flags), 32 bytes, from a cache of
 *     its own (records.c).  It lives while anyone holds a reference: the
 *     handle, the task's life, a queue entry.
 *   - its run record, struct weft__task (below): the context, the links,
 *     everything a task needs while it can still run.  A plain task's
 *     run record goes back to its cache as soon as nothing but the handle
 *     refers to the task (it ended, and no queue entry is left), so a
 *     finished task that nobody has awaited yet costs its handle only
 *     (Go reuses a dead goroutine's g the same way).  A task with a room
 *     or a name keeps its run record as long as its handle (KEEP below):
 *     the room and the name are read through the handle after the end.
 *
 * Whoever holds a reference may read the run record through the handle
 * only while the state word says the task has one: not ended, or KEEP.
 * The scheduler's code holds the run record (queues, waits, the running
 * task) and reaches the state through `done`.
 */
struct weft_task {
    /* result and waiter first: a free handle's cache node covers them
     * (records.c), not the state word, which await's look at a deque's
     * bottom may read in a handle just freed (await.c, is_complete). */
    void *result;
    _Atomic uintptr_t waiter;     /* see WEFT__WAITER_*, and the id after
                                     the end                            */
    _Atomic uint64_t state;       /* lifecycle | flags | refs             */
    /* Its run record (see above), fixed for the handle's life, with the
     * flags below in its low bits (a run record is 64-byte aligned). */
    _Atomic uintptr_t run;
};
/* 32 bytes: a task that has ended and is not awaited yet, in a program
 * that keeps a million handles, costs that and no more. */
_Static_assert(sizeof(struct weft_task) == 32, "a handle is 32 bytes");

/*
 * A cancel of a task that has not started yet (SCHEDULED or lazy IDLE,
 * not STARTED) takes no reference: await's inline start (await.c,
 * try_inline) makes it RUNNING with a plain store, which would undo an
 * RMW made between its load and that store (a lazy task, too, once its
 * holder has queued it with weft_task_start).  The cancel sets this bit
 * in the handle's run word, and whoever starts the task (try_inline,
 * weft__task_claim_queued, weft__task_start_here) passes it on to the run
 * record's `cancelled` before the body runs.  An asymmetric
 * Dekker pair (base/membarrier.h): the starter stores STARTED and then
 * loads the run word, in that order for the compiler; the canceller sets
 * the bit, runs weft__membarrier, and then loads the state.  So either the
 * canceller sees STARTED and takes a reference by CAS, which comes after
 * the starter's store in the state word's order (nothing is undone), or
 * the starter sees the bit.
 */
#define WEFT__H_CANCEL ((uintptr_t)1)

/*
 * weft_task_fail's mark: the body's result is a struct weft_failure *.
 * Set by the task itself (a relaxed RMW: the run word is shared with a
 * cancel's request) before its fn returns, so whoever sees its end (the
 * waiter slot's mark, COMPLETE) sees the mark.
 */
#define WEFT__H_FAILED ((uintptr_t)2)

/*
 * Nobody will consume the result: the handle was given up
 * (weft_task_detach), or never made (weft_spawn with out NULL).  A failure
 * is then dropped by whichever of the handle's drop and the task's end
 * comes second in the state word's order: the end (task_run.c,
 * finish_failed), when its RMW to COMPLETE finds HANDLE clear and this
 * mark, or the detacher (task_state.c, weft__task_detach_handle), when it
 * finds COMPLETE before its own RMW.  Set before the handle's drop, whose
 * release RMW on the state carries it to the end's acq_rel RMW.
 */
#define WEFT__H_DETACHED ((uintptr_t)4)
#define WEFT__H_FLAGS (WEFT__H_CANCEL | WEFT__H_FAILED | WEFT__H_DETACHED)

/* The handle's run record.  Who holds a reference may follow it only
 * while the state word says the task has one (see above). */
static inline struct weft__task *weft__handle_run(const struct weft_task *h)
{
    return (struct weft__task *)(atomic_load_explicit(
                                     &((struct weft_task *)h)->run,
                                     memory_order_relaxed) &
                                 ~WEFT__H_FLAGS);
}

/* The handle's id: the end's mark has it, else the run record (task.c).
 * The _walking one for a caller that holds the records' walk
 * (weft__records_walk_begin, below). */
uint64_t weft__handle_id(const struct weft_task *h);
uint64_t weft__handle_id_walking(const struct weft_task *h);

/* Whether the task's body called weft_task_fail (seen by whoever has seen
 * its end, or by the task itself). */
static inline bool weft__handle_failed(const struct weft_task *h)
{
    return atomic_load_explicit(&((struct weft_task *)h)->run,
                                memory_order_relaxed) &
           WEFT__H_FAILED;
}

/* A failure nobody will consume: its drop, once (see WEFT__H_DETACHED). */
void weft__failure_drop(struct weft_task *h);

/* A starter's look for the request above, once its store of STARTED is
 * made (its caller orders the two for the compiler). */
#define weft__handle_cancel_requested(h)                                    \
    (atomic_load_explicit(&(h)->run, memory_order_relaxed) & WEFT__H_CANCEL)

struct weft__task {
    struct weft_coro co;          /* context and chain record; HOSTED     */
    struct weft_task *done;       /* its handle record                    */
    struct cds_wfcq_node qnode;   /* link in a global queue               */
    weft_pool *pool;              /* home: the pool it belongs to, or     */
    struct weft__driver *driver;  /* the sync_wait thread it belongs to   */
    void *arg;
    /* In at most one list at a time: a driver's queue, a worker's yielded
     * FIFO (both hold a SCHEDULED task), or a free list of records. */
    struct weft__task *link;
    /* The task whose body runs inline on this task's stack now (the
     * innermost, see await.c), or NULL: the calling task, to weft_await. */
    struct weft__task *inlined;
    /* The worker whose thread it must continue on, or NULL: set by the
     * task itself around a park inside a call of the interposition
     * library (sched/hook.c), whose caller may keep a thread-local's
     * address across that call (errno).  A wake queues a pinned task on
     * that worker alone (weft__pool_submit_pinned).  Only the running
     * task writes it; a waker reads it before its wake's CAS, as it reads
     * the home, and the wait record that the waker took from the task
     * carries the happens-before (wait.c). */
    struct weft__worker *pin;
    /* For the observers (sched/observe.h), who read it racily: the
     * worker that ran it last (set by the scheduler loop that found it,
     * and by a continuation's switch; stale for a task run elsewhere
     * since: compared, never followed, by the dump). */
    const struct weft__worker *ran_on;
    /* The trace's flow from the wake that queued it last (trace.c; taken
     * by each run; in a fresh record, whatever was there, which the
     * trace's writer drops: a flow that ends without a start). */
    _Atomic uint64_t trace_flow;
    /* Cancellation (wait.c): the flag stays set once cancelled; the
     * current wait is the record weft_task_cancel decides, under the
     * lock. */
    _Atomic uint32_t cancelled;
    weft__spinlock wait_lock;
    struct weft__wait *cur_wait;
    /* Set by weft_spawn and weft_task_start, never changed after; atomic
     * because await's inline start reads it through a handle before it
     * owns the task (await.c, try_inline). */
    _Atomic(weft_pool *) spawned_on;
    bool started;                 /* has a context (its runner's field)   */
    /* In a free record: `done` is a free handle that stays with it, for
     * the next task made from it (records.c, "Pairs"). */
    bool paired;
    /* Where arg, the room of weft_task_create_with, lives (WEFT__ROOM_*),
     * so that the record's free frees it too. */
    uint8_t room;
    /* Its index in its chunk (records.c), set when the chunk is made and
     * never changed: where its room and name are (weft__record_room). */
    uint8_t slot;
    /* 0: the pool's (or the default).  32 bits (WEFT_STACK_MAX is 1 GiB)
     * beside the flags, where it costs the record nothing.  Atomic: read
     * as spawned_on is. */
    _Atomic uint32_t stack_size;
};

/* Whether a task record is in use (for the observers, who walk free
 * records too): task_new makes co.flags HOSTED, and a free record's
 * flags are 0 (records.c). */
WEFT_RACY_READS static inline bool
weft__task_record_live(const struct weft__task *t)
{
    return *(const volatile uint16_t *)&t->co.flags & WEFT__CORO_HOSTED;
}

/* t's handle, for a reader who may not own t (the observers, await's look
 * at a deque's bottom): task_new stores it atomically for them.  A
 * handle stays mapped while a walk holds chunks_lock (records.c). */
static inline struct weft_task *weft__task_done_racy(struct weft__task *t)
{
    return __atomic_load_n(&t->done, __ATOMIC_RELAXED);
}

static inline uint64_t weft__task_refs(uint64_t s)
{
    return s >> 8;
}

static inline uint64_t weft__task_lifecycle(uint64_t s)
{
    return s & WEFT__T_LIFECYCLE;
}

static inline struct weft__task *weft__task_of(struct weft_coro *co)
{
    return (struct weft__task *)co; /* co is the first member */
}

/* The task running on this thread, or NULL (plain thread, or a standalone
 * coroutine).  Read afresh: safe after a switch. */
static inline struct weft__task *weft__task_current(void)
{
    struct weft_coro *c = weft__tls_fresh()->current;
    return (c->flags & WEFT__CORO_HOSTED) ? weft__task_of(c) : NULL;
}

/* The task whose body runs on self's stack now: the innermost task run
 * inline there (await.c), or self.  Cancellation belongs to it.  Only
 * self's own code changes `inlined`, so no ordering is needed. */
static inline struct weft__task *weft__task_body(struct weft__task *self)
{
    return self->inlined ? self->inlined : self;
}

/* ---------------------------------------------- transitions (task_state.c) */

/*
 * weft__task_set - the caller holds t RUNNING (or is its only owner): make
 * its lifecycle `lc`, clear the flags in `clear`, add `refs` references
 * (negative: drop), with memory order `mo` on the store.  Returns the new
 * word.
 */
uint64_t weft__task_set(struct weft__task *t, uint64_t lc, uint64_t clear,
                        int64_t refs, memory_order mo);

/* Claim an IDLE task for running (IDLE -> RUNNING); false if it was not
 * IDLE (then a wake or another claim has it). */
bool weft__task_claim_idle(struct weft__task *t);

/* Claim a task taken from a run queue (SCHEDULED -> RUNNING, STARTED set,
 * the entry's reference consumed); false if the entry was stale (its
 * reference is dropped then). */
bool weft__task_claim_queued(struct weft__task *t);

/* RUNNING -> SCHEDULED (dropping NOTIFIED: being queued answers it), plus
 * the queue entry's reference; the caller then queues it. */
void weft__task_make_scheduled(struct weft__task *t);

/* Wake t: queue it on its home (it must be IDLE or RUNNING; any other state
 * means a wake is already under way, or it ended). */
void weft__task_wake(struct weft__task *t);
/* The same, behind everything already queued on its pool (the global
 * queue): for a batch of wakes, as the netpoller's, that must run in the
 * order they came rather than newest first (the LIFO slot and the deque's
 * owner end), or a stream of new readiness starves the oldest. */
void weft__task_wake_fifo(struct weft__task *t);

/*
 * weft__task_park - in a post-switch action: t (whose context is saved)
 * stops RUNNING.  If a wake arrived meanwhile (NOTIFIED), t is queued again
 * on its home; else it is IDLE.  Returns NULL (nothing for the action to
 * run next).
 */
struct weft__task *weft__task_park(struct weft__task *t);

/* Drop n references that are not the handle's; frees the records (or the
 * run record alone: see the top) when that was the last. */
void weft__task_unref(struct weft__task *t, uint64_t n);

/* weft__task_settle: below, after the records it frees. */

/* Drop the handle's reference (await, sync_wait, detach consume it). */
void weft__task_drop_handle(struct weft_task *h);

/* weft_task_detach's drop of the handle of a started task: as
 * weft__task_drop_handle, and a failure left to it dropped
 * (WEFT__H_DETACHED). */
void weft__task_detach_handle(struct weft_task *h);

/* Take the result and drop the handle's reference: the end of an await
 * or a sync_wait that consumes h. */
static inline void weft__task_consume(struct weft_task *h, void **result)
{
    if (result)
        *result = h->result;
    else if (unlikely(weft__handle_failed(h)))
        weft__failure_drop(h); /* a failure nobody takes (weft/task.h) */
    weft__task_drop_handle(h);
}

/* A lazy task that its handle's holder starts on this thread (an await,
 * a sync_wait): nobody else knows it yet, so a plain store makes it
 * RUNNING and STARTED, and no longer LAZY. */
static inline void weft__task_start_here(struct weft_task *h)
{
    /* IDLE and LAZY to RUNNING and STARTED.  An add, not a store of what
     * was read: a weft_task_cancel through a borrowed pointer may be
     * adding or dropping its reference meanwhile (task.c). */
    atomic_fetch_add_explicit(&h->state,
                              (uint64_t)WEFT__T_RUNNING + WEFT__T_STARTED -
                                  WEFT__T_LAZY,
                              memory_order_relaxed);
    /* A starter: STARTED stored, then the cancel's request looked at, in
     * this order for the compiler (WEFT__H_CANCEL above). */
    atomic_signal_fence(memory_order_seq_cst);
    if (weft__handle_cancel_requested(h))
        atomic_store_explicit(&weft__handle_run(h)->cancelled, 1, memory_order_relaxed);
}

/* ----------------------------------------------------- running (task_run.c) */

/*
 * weft__task_run - on a worker or driver thread, in its scheduler context:
 * run t (claimed, RUNNING) and whatever the post-switch actions hand back,
 * until control returns with nothing to run.
 */
void weft__task_run(struct weft__task *t);

/*
 * weft__task_suspend - in a task: save its context, switch to this
 * thread's scheduler context, and there run action(arg) (which must call
 * weft__task_park(self), or queue self, to publish the suspension).  The
 * action returns a claimed (RUNNING) task to run next, or NULL.  Returns
 * when the task is resumed (possibly on another thread).
 */
void weft__task_suspend(weft__ctx_action action, void *arg);

/* Leave the running task for `to` (a context with a saved frame), running
 * action(arg) on to's stack once the task's own frame is saved. */
void weft__task_switch_to(struct weft_coro *to, weft__ctx_action action,
                          void *arg);

/* In task self: suspend until something wakes it (weft__task_wake); the
 * caller has already made itself findable by its waker. */
void weft__task_block(struct weft__task *self);

/* Give t its stack and first context on the thread that starts it, in
 * home `pool` (its stack size may come from there; NULL: a driver).
 * Returns 0, or -ENOMEM with nothing changed. */
int weft__task_prepare(struct weft__task *t, const weft_pool *pool);

/* The stack size t's body is promised (its own, its pool's, or the
 * default). */
size_t weft__task_declared_stack(const struct weft__task *t,
                                 const weft_pool *pool);

/* --------------------------------------------- join (driver.c) */

/* weft_task_join (await.c) on a plain thread: as weft_sync_wait, but
 * returns 0 once t has ended with its handle unconsumed. */
int weft__sync_wait_keep(struct weft_task *h);

/* ----------------------------------------------------- records (records.c) */

/* What a task's room is (its `room` field): none; the record's own slot
 * in its chunk (records.c, weft__record_room); memory of its own
 * (malloc), freed with the record. */
enum { WEFT__ROOM_NONE = 0, WEFT__ROOM_RECORD = 1, WEFT__ROOM_HEAP = 2 };

/* A record from this thread's cache (or a fresh chunk); NULL: no memory. */
struct weft__task *weft__record_alloc(void);
/* A handle record, the same way; NULL: no memory.  Inline: one per
 * spawn and one per await, beside the record's. */
extern struct weft__cache weft__handles;
extern __thread struct weft__cache_local weft__handles_local
    __attribute__((tls_model("initial-exec")));
struct weft_task *weft__handles_from_chunk(void);
static inline struct weft_task *weft__handle_alloc(void)
{
    struct weft__cache_node *n =
        weft__cache_get(&weft__handles, &weft__handles_local, 0);
    if (__builtin_expect(n != NULL, 1))
        return (struct weft_task *)(void *)n;
    return weft__handles_from_chunk();
}
/* Back to this thread's cache (a free handle's node covers its result
 * and id, not its state: records.c). */
static inline void weft__handle_free(struct weft_task *h)
{
    struct weft__cache_node *n = (struct weft__cache_node *)(void *)h;
    n->key = 0;
    weft__cache_put(&weft__handles, &weft__handles_local, n);
}
/* Back to this thread's cache, with its room's memory. */
void weft__record_free(struct weft__task *t);
/* The same, with its handle (t->done, free too) paired to it: a task
 * whose records go back together (records.c, "Pairs"). */
void weft__record_free_pair(struct weft__task *t);
/*
 * A record chunk (records.c): an aligned block of this many bytes, its
 * header (a cache line), the records, then a room of WEFT_TASK_ROOM bytes
 * and a name buffer of WEFT__CORO_NAME_MAX bytes for each record, at the
 * chunk's end rather than in the record: only a task with a room writes
 * its room, and only a named task its name, so those pages are never
 * touched (nor faulted in) while a chunk's tasks have neither, and a
 * record is 192 bytes, not 288.  (The 64 bytes less in the count are the
 * slack for aligning the rooms down to a cache line.)
 */
#define WEFT__RECORD_CHUNK_BYTES ((size_t)64 * 1024)
#define WEFT__RECORDS_AT 64
#define WEFT__RECORDS_PER_CHUNK                                             \
    ((WEFT__RECORD_CHUNK_BYTES - WEFT__RECORDS_AT - 64) /                   \
     (sizeof(struct weft__task) + WEFT_TASK_ROOM + WEFT__CORO_NAME_MAX))
#define WEFT__RECORD_NAMES_AT                                               \
    (WEFT__RECORD_CHUNK_BYTES - WEFT__RECORDS_PER_CHUNK * WEFT__CORO_NAME_MAX)
#define WEFT__RECORD_ROOMS_AT                                               \
    ((WEFT__RECORD_NAMES_AT - WEFT__RECORDS_PER_CHUNK * WEFT_TASK_ROOM) &    \
     ~(size_t)63)
_Static_assert(WEFT_TASK_ROOM % 64 == 0 && _Alignof(max_align_t) <= 64,
               "each room is whole cache lines, aligned for anything");
_Static_assert(WEFT__RECORDS_AT +
                       WEFT__RECORDS_PER_CHUNK * sizeof(struct weft__task) <=
                   WEFT__RECORD_ROOMS_AT &&
                   WEFT__RECORD_ROOMS_AT +
                           WEFT__RECORDS_PER_CHUNK * WEFT_TASK_ROOM <=
                       WEFT__RECORD_NAMES_AT,
               "the records, the rooms, the names");

_Static_assert(WEFT__RECORDS_PER_CHUNK <= 256, "a slot index is a byte");

static inline char *weft__record_chunk(const struct weft__task *t)
{
    return (char *)((uintptr_t)t &
                    ~(uintptr_t)(WEFT__RECORD_CHUNK_BYTES - 1));
}

/*
 * t's room, WEFT_TASK_ROOM bytes aligned to 64, as long as t's record
 * (weft_task_create_with, weft_spawn_with, weft_spawn_copy; a larger room
 * is malloc'ed): no allocation, nothing to give back, and one cache line,
 * which the spawner writes and the task and its awaiter read.  (Before, a
 * room was a window of a second record, taken from the cache and kept
 * with the first: two lines of three, and a second record per task in
 * use.)  Nobody but the task's owners reads a room, so the observers'
 * racy reads of records (above) never meet one.
 */
static inline char *weft__record_room(struct weft__task *t)
{
    return weft__record_chunk(t) + WEFT__RECORD_ROOMS_AT +
           (size_t)t->slot * WEFT_TASK_ROOM;
}

/* t's name buffer, WEFT__CORO_NAME_MAX bytes, as long as t's record. */
static inline char *weft__record_name_buf(struct weft__task *t)
{
    return weft__record_chunk(t) + WEFT__RECORD_NAMES_AT +
           (size_t)t->slot * WEFT__CORO_NAME_MAX;
}
/* The calling thread, a pool's, keeps a full cache of free records
 * (other threads keep one: records.c). */
void weft__records_worker_thread(void);
/* The calling thread's cached records go to the global depot. */
void weft__records_spill(void);
/* Whether the calling thread's own lists hold free records or handles. */
bool weft__records_held(void);
/* Give the chunks whose records are all free back to the system, but for
 * enough to hold `keep` records; returns the bytes given back.  A trim
 * that would give back less than WEFT__RECORDS_TRIM_MIN gives back
 * nothing (records.c: the TLB flush costs the same whatever the size),
 * so up to that much more than `keep` needs may stay. */
#define WEFT__RECORDS_TRIM_MIN ((size_t)1 << 20)
size_t weft__records_trim(size_t keep);
/* Bytes of records made (in chunks), live and free. */
size_t weft__records_bytes(void);
/* How many chunks were ever made (relaxed, monotonic): the scheduler
 * compares two reads to learn whether memory was made between them
 * (sched/pool.c, "Lending"). */
uint64_t weft__records_made(void);

/*
 * The observers' walk (dump.c, stats.c): every task record that exists,
 * live or free (weft__task_record_live), chunk by chunk, between
 * weft__records_walk_begin and _end.  Those hold chunks_lock, under which
 * chunks are listed and a trim unlinks the ones it unmaps (records.c), so
 * every chunk reached stays mapped until the walk ends.  A spawn that
 * needs a new chunk waits for the walk meanwhile; nothing else does.
 * Never from a signal handler (dump.c's signal wakes a thread).
 */
struct weft__record_chunk;
void weft__records_walk_begin(void);
void weft__records_walk_end(void);
const struct weft__record_chunk *weft__records_first(void);
const struct weft__record_chunk *
weft__records_next(const struct weft__record_chunk *c);
/* The records of chunk c, and how many (*n). */
struct weft__task *weft__records_of(const struct weft__record_chunk *c,
                                   unsigned *n);

/* After a drop of run-side references whose RMW left the state word `n`:
 * free what nobody refers to any more (see the top).  Inline: every
 * task's end and every await that runs a child inline comes here. */
static inline void weft__task_settle(struct weft__task *t, uint64_t n)
{
    if (weft__task_refs(n) == 0) {
        weft__record_free_pair(t);
    } else if (weft__task_refs(n) == 1 && (n & WEFT__T_HANDLE) &&
               !(n & WEFT__T_KEEP)) {
        /* Only the handle is left (so the task ended, and no queue entry
         * is left): the run record goes now, the handle when consumed. */
        weft__record_free(t);
    }
}

#endif /* WEFT_SCHED_TASK_H */
