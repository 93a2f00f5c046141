/*
 * sched/yielded.c — the slow halves of the yielded FIFO's protocol (the
 * protocol and its proof: sched/yielded.h).
 */
#include "sched/yielded.h"

#include "base/backoff.h"
#include "base/membarrier.h"

void weft__yielded_wait(struct weft__yielded *y)
{
    for (;;) {
        /* Out of the way while the thief holds the list... */
        atomic_store_explicit(&y->busy, 0, memory_order_release);
        unsigned spins = 0;
        while (atomic_load_explicit(&y->seized, memory_order_acquire))
            weft__backoff(&spins);
        /* ...then the owner's entry again (O1 and its load). */
        atomic_store_explicit(&y->busy, 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
        if (!atomic_load_explicit(&y->seized, memory_order_acquire))
            return;
    }
}

bool weft__yielded_seize(struct weft__yielded *y, struct weft__task **first,
                         struct weft__task **last)
{
    if (weft__yielded_looks_empty(y) || !weft__membarrier_ok())
        return false;
    uint32_t free_ = 0;
    /* T1.  seq_cst: the store must be visible before membarrier runs the
     * owner's barrier (a locked RMW, and the system call, order it). */
    if (!atomic_compare_exchange_strong_explicit(&y->seized, &free_, 1,
                                                 memory_order_seq_cst,
                                                 memory_order_relaxed))
        return false;
    bool got = false;
    /* T2, then T3.  Without the barrier (membarrier failed) the owner
     * may be inside unseen: give up.  Acquire: pairs with the owner's
     * last release of busy. */
    if (weft__membarrier() &&
        !atomic_load_explicit(&y->busy, memory_order_acquire)) {
        *first = atomic_load_explicit(&y->head, memory_order_relaxed);
        *last = y->tail;
        got = *first != NULL;
        atomic_store_explicit(&y->head, NULL, memory_order_relaxed);
        y->tail = NULL;
    }
    /* T4.  Release: an owner that waited sees the emptied list. */
    atomic_store_explicit(&y->seized, 0, memory_order_release);
    return got;
}
