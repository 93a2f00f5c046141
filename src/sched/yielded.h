/*
 * sched/yielded.h — a worker's FIFO of tasks that yielded (internal).
 *
 * A task that yields on a worker goes behind the tasks queued there, in
 * this FIFO, linked through the tasks themselves (pool.c,
 * weft__pool_submit_yield): no capacity, no shared line, and in the
 * common case no atomic read-modify-write either, since only the worker
 * that owns it touches it.  But a worker can be stuck in one task for a
 * long time (a long computation, a blocking system call), and the tasks
 * in its FIFO with it.  So a thief may take the whole list ("seize" it)
 * while the owner is away, which the monitor says (w->stuck, monitor.c).
 *
 * The seize is an asymmetric Dekker protocol (base/membarrier.h): the
 * owner's side, which runs on every yield, pays no barrier; the thief's,
 * which runs only for a stuck worker, pays a membarrier(2).
 *
 *   owner, around every operation:          thief (seize):
 *     busy = 1                    (O1)        CAS seized 0 -> 1     (T1)
 *     compiler barrier                        membarrier()          (T2)
 *     if seized: busy = 0, wait               if busy:              (T3)
 *        until seized == 0, retry                 seized = 0, give up
 *     ... the list ...                        take the whole list
 *     busy = 0                    (release)   seized = 0 (release)  (T4)
 *
 * Why the two never both touch the list: T2 runs a full barrier on the
 * owner's CPU at some point of its instruction stream.  If that point
 * comes before O1, the owner's load of `seized` after O1 sees T1's 1 (T1
 * was done before membarrier started) and it waits.  If it comes after
 * O1, the thief's T3, after membarrier returns, sees busy == 1 (or the 0
 * of the operation's end, by then complete: the acquire load of busy
 * pairs with that release, so the thief sees the list as the owner left
 * it) and gives up, or goes on with an operation that has ended.  While
 * `seized` is 1 no owner operation starts, and one that waited sees the
 * thief's list (acquire on `seized`, pairing with T4).  Thieves exclude
 * each other by T1's CAS.  An owner that waited must look at `seized`
 * again after its busy = 1, as at O1: a second seize may CAS `seized`
 * after the wait saw 0 and run its membarrier before that busy = 1, and
 * then it reads the wait's busy = 0 and takes the list.
 *
 * verify/yielded.pml checks it (two thieves, two seizes each, stores
 * buffered and reordered as AArch64 may: a task taken once, never by the
 * owner and a thief both), and rejects a twin for each step: no
 * membarrier, no look at busy, no second look at `seized` after the
 * wait, a relaxed T4, a relaxed busy = 0 at the owner's exit.
 *
 * Without membarrier(2) (an old kernel) the thief side never seizes: the
 * tasks wait for their worker, as before the monitor existed.
 */
#ifndef WEFT_SCHED_YIELDED_H
#define WEFT_SCHED_YIELDED_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/compiler.h"
#include "sched/task.h"

struct weft__yielded {
    /* Under the protocol: the owner inside busy, a thief inside seized.
     * Atomic (relaxed) only so that a look from outside (looks_empty) is
     * no data race. */
    _Atomic(struct weft__task *) head;
    struct weft__task *tail;
    _Atomic uint32_t busy;     /* written by the owner only */
    _Atomic uint32_t seized;   /* 1 while a thief holds the list */
};

/* The owner's wait while a thief holds the list (yielded.c). */
__attribute__((cold)) void weft__yielded_wait(struct weft__yielded *y);

static inline void weft__yielded_enter(struct weft__yielded *y)
{
    atomic_store_explicit(&y->busy, 1, memory_order_relaxed);
    /* O1 before the load of `seized`, for the compiler; the thief's
     * membarrier orders them for the CPU (see the top). */
    atomic_signal_fence(memory_order_seq_cst);
    if (unlikely(atomic_load_explicit(&y->seized, memory_order_acquire)))
        weft__yielded_wait(y);
}

static inline void weft__yielded_exit(struct weft__yielded *y)
{
    atomic_store_explicit(&y->busy, 0, memory_order_release);
}

/* Owner: append the list first..last (linked through ->link). */
static inline void weft__yielded_append(struct weft__yielded *y,
                                        struct weft__task *first,
                                        struct weft__task *last)
{
    weft__yielded_enter(y);
    last->link = NULL;
    if (y->tail)
        y->tail->link = first;
    else
        atomic_store_explicit(&y->head, first, memory_order_relaxed);
    y->tail = last;
    weft__yielded_exit(y);
}

/* Owner: take the oldest, or NULL. */
static inline struct weft__task *weft__yielded_pop(struct weft__yielded *y)
{
    weft__yielded_enter(y);
    struct weft__task *t = atomic_load_explicit(&y->head, memory_order_relaxed);
    if (t) {
        atomic_store_explicit(&y->head, t->link, memory_order_relaxed);
        if (!t->link)
            y->tail = NULL;
    }
    weft__yielded_exit(y);
    return t;
}

/* Anyone: whether the FIFO looks empty (a racy look: it only decides
 * whether to try). */
static inline bool weft__yielded_looks_empty(struct weft__yielded *y)
{
    return !atomic_load_explicit(&y->head, memory_order_relaxed);
}

/* A thief, for a worker that is away: take the whole list into *first and
 * *last; false if the owner is inside an operation, another thief holds
 * it, the list is empty, or membarrier(2) is missing (see the top). */
bool weft__yielded_seize(struct weft__yielded *y, struct weft__task **first,
                         struct weft__task **last);

#endif /* WEFT_SCHED_YIELDED_H */
