/*
 * runq.h — a worker's local run queue (internal).
 *
 * A bounded Chase-Lev work-stealing deque (Chase & Lev, SPAA 2005), with
 * the C11 orderings of Lê, Pop, Cohen and Zappa Nardelli, "Correct and
 * Efficient Work-Stealing for Weak Memory Models" (PPoPP 2013).  The owner
 * pushes and pops at the bottom (LIFO: a fork-join awaiter finds the child
 * it just spawned there and runs it inline, and a task woken by the running
 * one runs next on this warm core); thieves take from the top (FIFO: the
 * oldest, typically largest, work moves).  The owner also takes from the
 * top every 61 ticks, so nothing at the top starves under a stream of
 * bottom pushes (the role Go and Tokio give to capping their LIFO slot).
 *
 *   operation    | who             | synchronisation
 *   -------------+-----------------+----------------------------------------
 *   push         | owner only      | slot store, then release store of
 *                |                 | bottom: a thief that sees the new
 *                |                 | bottom sees the slot; top read
 *                |                 | (acquire) only when the top read
 *                |                 | last says the ring is full
 *   pop          | owner only      | seq_cst exchange of bottom-1 (the
 *                |                 | store, StoreLoad-safe), seq_cst read
 *                |                 | of top; a CAS on top only for the
 *                |                 | last element, which a thief may take
 *   steal        | anyone          | seq_cst reads of top then bottom, read
 *                |                 | the slot, CAS top (one element)
 *   take_oldest  | owner only      | steal's read of top and CAS, for up
 *                |                 | to k elements, all below bottom
 *   drop_bottom  | owner only      | pop's exchange of bottom-k and
 *                |                 | read of top, once for k elements;
 *                |                 | only if k < bottom - top (no CAS)
 *   peek_bottom  | owner only      | a plain look at the newest slot
 *   len          | anyone          | a racy estimate
 *
 * Why the owner's pop and a thief's steal never both get one element: the
 * owner stores bottom then reads top, the thief reads top then bottom and
 * CASes top, all seq_cst, so in their single total order at least one side
 * sees the other's change.  (The paper's fences are written as seq_cst
 * accesses, the owner's store as an exchange: base/storeload.h.)  When
 * exactly one element is left both CAS top, and one CAS fails.
 * drop_bottom takes the k newest at once by the same argument: a thief
 * whose read of top follows the owner's store of bottom - k sees it, and
 * one whose read comes before read a top no larger than the owner's read,
 * which is below bottom - k, so it targets an element the owner keeps.
 * When that cannot be shown (k reaches down to top) the owner restores
 * bottom and takes nothing.  take_oldest moves top by k at once, which a
 * thief may not do (its range could reach the element a concurrent pop
 * takes without a CAS); the owner may, as it is not popping meanwhile: its
 * CAS and a thief's CAS of the same top exclude each other, and a thief
 * that comes after reads the new top.  The taken slots keep their entries
 * until the owner pushes again.
 *
 * A slot is never overwritten while a thief may still read it: a push into
 * slot i (mod size) needs bottom - top < size, so the element a thief could
 * be reading at top has been taken (top moved) before its slot is reused,
 * and then that thief's CAS fails.  The top that push compares with is
 * top_seen, the value of the owner's last acquire load of top: top only
 * grows, so top_seen is never above it, and bottom - top_seen < size
 * implies bottom - top < size; the CAS that moved top past the slot's
 * previous element happened before that acquire load, which comes before
 * the push.  So a push reads top, a line the thieves' CASes keep taking
 * from the owner's core, once per ring's worth of steals instead of once
 * per push.  Indices are free-running 32-bit counters compared by signed
 * difference.
 */
#ifndef WEFT_RUNQ_H
#define WEFT_RUNQ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct weft__task;

/* 64 KiB of address space a worker, resident as far as it was ever
 * filled (the worker's memory comes zeroed from mmap: pool.c, slot_new).
 * With 256 (Go's size), a task spawning a million children on 2 workers
 * kept spilling half its ring to the global queue (a locked enqueue and
 * dequeue per task): spawn-join 154 ms, 117 with 1024.  And a thief
 * steals from a ring faster than it takes from the global queue, whose
 * every entry is a chain of misses: with 8192, fewer of spawn-join's
 * tasks wait unrun at the end of its spawn loop, and its peak RSS fell
 * from 95 to 87 MB (docs/performance.md). */
#define WEFT__RUNQ_SIZE 8192u

struct weft__runq {
    _Alignas(64) _Atomic uint32_t top;     /* oldest; CAS by thieves   */
    _Alignas(64) _Atomic uint32_t bottom;  /* next free; owner writes  */
    uint32_t top_seen;                     /* owner only: a top it read */
    _Atomic(struct weft__task *) slot[WEFT__RUNQ_SIZE];
};

void weft__runq_init(struct weft__runq *q);

/* Owner: push t at the bottom.  false if full (the caller moves work to the
 * global queue with weft__runq_steal). */
bool weft__runq_push(struct weft__runq *q, struct weft__task *t);

/* Owner: the newest task, or NULL if empty (or a thief took the last). */
struct weft__task *weft__runq_pop(struct weft__runq *q);

/* Anyone: the oldest task, or NULL if empty or lost to another taker. */
struct weft__task *weft__runq_steal(struct weft__runq *q);

/* Owner: take up to max of the oldest entries with one CAS on top; how
 * many (0 if empty), the first at index *from.  The caller reads them with
 * weft__runq_at(q, *from + i) before its next push, which may reuse
 * their slots. */
uint32_t weft__runq_take_oldest(struct weft__runq *q, uint32_t max,
                                uint32_t *from);

/* Owner: the entry at index i (of an earlier take_oldest). */
static inline struct weft__task *weft__runq_at(struct weft__runq *q,
                                              uint32_t i)
{
    return atomic_load_explicit(&q->slot[i & (WEFT__RUNQ_SIZE - 1)],
                                memory_order_relaxed);
}

/* Owner: remove the k newest entries (the caller has looked at them with
 * peek_below), if no thief can be taking one of them; false, with
 * nothing removed, if one could (k reaches down to the oldest). */
bool weft__runq_drop_bottom(struct weft__runq *q, uint32_t k);

/* Owner: the (i+1)-th newest task without taking it (NULL if there are not
 * that many). */
static inline struct weft__task *weft__runq_peek_below(struct weft__runq *q,
                                                      uint32_t i)
{
    uint32_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
    uint32_t t = atomic_load_explicit(&q->top, memory_order_relaxed);
    if ((int32_t)(b - t) <= (int32_t)i)
        return NULL;
    return atomic_load_explicit(&q->slot[(b - 1 - i) & (WEFT__RUNQ_SIZE - 1)],
                                memory_order_relaxed);
}

/* Owner: the newest task without taking it (NULL if empty). */
static inline struct weft__task *weft__runq_peek_bottom(struct weft__runq *q)
{
    return weft__runq_peek_below(q, 0);
}

/* Anyone (the observers): how many queued entries hold an ended task (run
 * inline by an await, dropped when the owner or a thief reaches them).  A
 * racy count; memory-safe only while the caller holds the records' walk
 * (weft__records_walk_begin, task.h), taken before these loads: an entry
 * inside the window read here was pushed, with a live task, after a value
 * of top that is no older than the walk's start (the lock orders every
 * earlier take, free and trim before it), and bottom's acquire makes the
 * slot at least that push's; its record stays mapped until the walk
 * ends.  `ended` decides from a task's state. */
static inline uint32_t weft__runq_count_ended(
    struct weft__runq *q, bool (*ended)(struct weft__task *))
{
    uint32_t t = atomic_load_explicit(&q->top, memory_order_relaxed);
    uint32_t b = atomic_load_explicit(&q->bottom, memory_order_acquire);
    int32_t len = (int32_t)(b - t);
    uint32_t n = 0;
    if (len > (int32_t)WEFT__RUNQ_SIZE)
        len = (int32_t)WEFT__RUNQ_SIZE;
    for (int32_t i = 0; i < len; i++) {
        struct weft__task *e = atomic_load_explicit(
            &q->slot[(t + (uint32_t)i) & (WEFT__RUNQ_SIZE - 1)],
            memory_order_relaxed);
        if (e && ended(e))
            n++;
    }
    return n;
}

/* Anyone: roughly how many tasks are queued. */
static inline uint32_t weft__runq_len(struct weft__runq *q)
{
    uint32_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
    uint32_t t = atomic_load_explicit(&q->top, memory_order_relaxed);
    int32_t n = (int32_t)(b - t);
    return n > 0 ? (uint32_t)n : 0;
}

#endif /* WEFT_RUNQ_H */
