/*
 * runq.c — the local run queue.  The protocol and the table of who may
 * call what are at the top of runq.h.
 */
#include "runq.h"

#include <stddef.h>

#define MASK (WEFT__RUNQ_SIZE - 1)

void weft__runq_init(struct weft__runq *q)
{
    atomic_init(&q->head, 0);
    atomic_init(&q->tail, 0);
    for (unsigned i = 0; i < WEFT__RUNQ_SIZE; i++)
        atomic_init(&q->slot[i], NULL);
}

bool weft__runq_push(struct weft__runq *q, struct weft_task *t)
{
    /* Acquire: pairs with a thief's CAS release on head, so the slots it
     * copied out are free again before we reuse them. */
    uint32_t h = atomic_load_explicit(&q->head, memory_order_acquire);
    uint32_t tl = atomic_load_explicit(&q->tail, memory_order_relaxed);
    if (tl - h >= WEFT__RUNQ_SIZE)
        return false;
    atomic_store_explicit(&q->slot[tl & MASK], t, memory_order_relaxed);
    /* Release: a thief that sees the new tail sees the slot. */
    atomic_store_explicit(&q->tail, tl + 1, memory_order_release);
    return true;
}

struct weft_task *weft__runq_pop(struct weft__runq *q)
{
    uint32_t h = atomic_load_explicit(&q->head, memory_order_acquire);
    for (;;) {
        uint32_t tl = atomic_load_explicit(&q->tail, memory_order_relaxed);
        if (h == tl)
            return NULL;
        struct weft_task *t =
            atomic_load_explicit(&q->slot[h & MASK], memory_order_relaxed);
        /* Release: orders our read of the slot before the slot can be
         * reused by a push that sees the new head. */
        if (atomic_compare_exchange_weak_explicit(&q->head, &h, h + 1,
                                                  memory_order_release,
                                                  memory_order_acquire))
            return t;
    }
}

unsigned weft__runq_take_half(struct weft__runq *q, struct weft_task **out)
{
    uint32_t h = atomic_load_explicit(&q->head, memory_order_acquire);
    for (;;) {
        uint32_t tl = atomic_load_explicit(&q->tail, memory_order_relaxed);
        uint32_t n = (tl - h) / 2;
        if (n == 0)
            return 0;
        for (uint32_t i = 0; i < n; i++)
            out[i] = atomic_load_explicit(&q->slot[(h + i) & MASK],
                                          memory_order_relaxed);
        if (atomic_compare_exchange_weak_explicit(&q->head, &h, h + n,
                                                  memory_order_release,
                                                  memory_order_acquire))
            return n;
    }
}

struct weft_task *weft__runq_steal(struct weft__runq *dst,
                                   struct weft__runq *src)
{
    uint32_t dt = atomic_load_explicit(&dst->tail, memory_order_relaxed);
    for (;;) {
        /* Acquire on both: the tail publishes the slots we copy. */
        uint32_t h = atomic_load_explicit(&src->head, memory_order_acquire);
        uint32_t tl = atomic_load_explicit(&src->tail, memory_order_acquire);
        uint32_t n = tl - h;
        n -= n / 2;
        if (n == 0)
            return NULL;
        if (n > WEFT__RUNQ_SIZE / 2)
            continue; /* read head and tail at different times: retry */
        for (uint32_t i = 0; i < n; i++) {
            struct weft_task *t = atomic_load_explicit(
                &src->slot[(h + i) & MASK], memory_order_relaxed);
            atomic_store_explicit(&dst->slot[(dt + i) & MASK], t,
                                  memory_order_relaxed);
        }
        /* Release: the owner's next push, acquiring head, sees our reads
         * done before it overwrites those slots.  A failed CAS means the
         * owner or another thief took some of them: discard and retry. */
        if (atomic_compare_exchange_weak_explicit(&src->head, &h, h + n,
                                                  memory_order_release,
                                                  memory_order_relaxed)) {
            n--;
            struct weft_task *run = atomic_load_explicit(
                &dst->slot[(dt + n) & MASK], memory_order_relaxed);
            if (n)
                atomic_store_explicit(&dst->tail, dt + n,
                                      memory_order_release);
            return run;
        }
    }
}
