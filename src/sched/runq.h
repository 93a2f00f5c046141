/*
 * runq.h — a worker's local run queue (internal).
 *
 * A bounded ring of task pointers, Go's runq shape: the owning worker
 * pushes at the tail and pops at the head; thieves take half of it from the
 * head.  head and tail are free-running 32-bit counters (slot = counter mod
 * size), so a stale head can only be mistaken for a current one after 2^32
 * operations in the window between a thief's load and its CAS.
 *
 *   operation  | who               | synchronisation
 *   -----------+-------------------+----------------------------------------
 *   push       | owner only        | store-release of tail publishes slot
 *   pop        | owner only        | CAS on head (thieves race for it)
 *   steal      | any other worker  | copies, then CAS on head; a failed CAS
 *              |                   | discards the copy (the owner may have
 *              |                   | reused the slots)
 *   len        | anyone            | a racy estimate
 *
 * Owner pushes never overwrite slots a thief may still be copying: a push
 * needs tail - head < size with the head it loaded, and a thief's copy is
 * of slots [head, head+n) that stay unwritten until head moves past them,
 * which makes the thief's CAS fail.
 */
#ifndef WEFT_RUNQ_H
#define WEFT_RUNQ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct weft_task;

#define WEFT__RUNQ_SIZE 256u

struct weft__runq {
    _Alignas(64) _Atomic uint32_t head;  /* next to pop; CAS by all      */
    _Alignas(64) _Atomic uint32_t tail;  /* next free; owner writes      */
    _Atomic(struct weft_task *) slot[WEFT__RUNQ_SIZE];
};

void weft__runq_init(struct weft__runq *q);

/* Owner: append t.  Returns false if the ring is full (the caller moves
 * work to the global queue, see weft__runq_take_half). */
bool weft__runq_push(struct weft__runq *q, struct weft_task *t);

/* Owner: the oldest task, or NULL if empty. */
struct weft_task *weft__runq_pop(struct weft__runq *q);

/* Owner: remove up to half of the ring (oldest first) into out[] (room
 * for WEFT__RUNQ_SIZE/2); returns the count.  For overflow to the global
 * queue. */
unsigned weft__runq_take_half(struct weft__runq *q, struct weft_task **out);

/* Thief (the owner of dst): move half of src into dst, which must be
 * empty, and return one of them to run now (not left in dst); NULL if src
 * had nothing. */
struct weft_task *weft__runq_steal(struct weft__runq *dst,
                                   struct weft__runq *src);

/* Anyone: roughly how many tasks are queued. */
static inline uint32_t weft__runq_len(struct weft__runq *q)
{
    uint32_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
    uint32_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
    return t - h;
}

#endif /* WEFT_RUNQ_H */
