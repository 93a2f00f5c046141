/*
 * runq.c — the local run queue, a bounded Chase-Lev deque.  The protocol,
 * its proof sketch and the table of who may call what are in runq.h.
 */
#include "sched/runq.h"

#include "base/storeload.h"

#define MASK (WEFT__RUNQ_SIZE - 1)

void weft__runq_init(struct weft__runq *q)
{
    atomic_init(&q->top, 0);
    atomic_init(&q->bottom, 0);
    q->top_seen = 0;
    /* The slots are not written: q's memory comes zeroed (all NULL), and
     * a slot is read only once a push wrote it, so pages of the ring
     * that no push reached are never touched (runq.h). */
}

bool weft__runq_push(struct weft__runq *q, struct weft__task *t)
{
    uint32_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
    if ((int32_t)(b - q->top_seen) >= (int32_t)WEFT__RUNQ_SIZE) {
        /* Full as far as we know: look again.  Acquire: a thief's CAS of
         * top (it read the slot) happens before we reuse that slot, now
         * and in the pushes that use this value later (runq.h). */
        q->top_seen = atomic_load_explicit(&q->top, memory_order_acquire);
        if ((int32_t)(b - q->top_seen) >= (int32_t)WEFT__RUNQ_SIZE)
            return false;
    }
    atomic_store_explicit(&q->slot[b & MASK], t, memory_order_relaxed);
    /* Release: a thief that reads the new bottom reads the slot. */
    atomic_store_explicit(&q->bottom, b + 1, memory_order_release);
    return true;
}

struct weft__task *weft__runq_pop(struct weft__runq *q)
{
    uint32_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed) - 1;
    /* StoreLoad: thieves see the smaller bottom, or we see their top.  An
     * exchange and a seq_cst load rather than a fence: on x86 the same
     * instructions as a seq_cst store (a locked exchange), ThreadSanitizer
     * models them, and qemu keeps their order (base/storeload.h). */
    weft__storeload_store(&q->bottom, b);
    uint32_t tp = atomic_load_explicit(&q->top, memory_order_seq_cst);
    if ((int32_t)(b - tp) < 0) {
        atomic_store_explicit(&q->bottom, b + 1, memory_order_relaxed);
        return NULL; /* was empty */
    }
    struct weft__task *t =
        atomic_load_explicit(&q->slot[b & MASK], memory_order_relaxed);
    if (b == tp) {
        /* The last one: a thief may be taking it too; one CAS wins. */
        if (!atomic_compare_exchange_strong_explicit(
                &q->top, &tp, tp + 1, memory_order_seq_cst,
                memory_order_relaxed))
            t = NULL;
        atomic_store_explicit(&q->bottom, b + 1, memory_order_relaxed);
    }
    return t;
}

bool weft__runq_drop_bottom(struct weft__runq *q, uint32_t k)
{
    uint32_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
    uint32_t nb = b - k;
    /* pop's StoreLoad, once for all k. */
    weft__storeload_store(&q->bottom, nb);
    uint32_t tp = atomic_load_explicit(&q->top, memory_order_seq_cst);
    if ((int32_t)(nb - tp) > 0)
        return true;
    /* A thief may be taking one of them: give them all back.  Release:
     * a thief that reads this bottom reads the slots (which we wrote). */
    atomic_store_explicit(&q->bottom, b, memory_order_release);
    return false;
}

uint32_t weft__runq_take_oldest(struct weft__runq *q, uint32_t max,
                                uint32_t *from)
{
    /* Only we write bottom. */
    uint32_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
    uint32_t tp = atomic_load_explicit(&q->top, memory_order_seq_cst);
    for (;;) {
        int32_t n = (int32_t)(b - tp);
        if (n <= 0)
            return 0;
        if ((uint32_t)n > max)
            n = (int32_t)max;
        /* seq_cst as steal's; a failed CAS reloads tp (a thief took one). */
        if (atomic_compare_exchange_strong_explicit(
                &q->top, &tp, tp + (uint32_t)n, memory_order_seq_cst,
                memory_order_seq_cst)) {
            q->top_seen = tp + (uint32_t)n;
            *from = tp;
            return (uint32_t)n;
        }
    }
}

struct weft__task *weft__runq_steal(struct weft__runq *q)
{
    /* seq_cst: ordered with the owner's pop (see there); and acquire,
     * pairing with push's release of bottom (the slot is there). */
    uint32_t tp = atomic_load_explicit(&q->top, memory_order_seq_cst);
    uint32_t b = atomic_load_explicit(&q->bottom, memory_order_seq_cst);
    if ((int32_t)(b - tp) <= 0)
        return NULL;
    struct weft__task *t =
        atomic_load_explicit(&q->slot[tp & MASK], memory_order_relaxed);
    if (!atomic_compare_exchange_strong_explicit(&q->top, &tp, tp + 1,
                                                 memory_order_seq_cst,
                                                 memory_order_relaxed))
        return NULL; /* the owner or another thief took it */
    return t;
}
