/*
 * base/spinlock.h — the test-and-test-and-set lock for weft's tiny
 * critical sections (internal).
 *
 * The pool's idle list, the global queue's dequeue side, a task's wait
 * slot, an fd record and every sync primitive's waiter list are held for a
 * handful of instructions.  A pthread mutex there sleeps in the kernel
 * whenever two threads meet (seen: several futex calls per sync_wait round
 * trip), while spinning for a few hundred nanoseconds costs nothing; the
 * backoff (base/backoff.h) yields to a holder that was preempted.
 *
 * The lock is a bare uint32_t used through __atomic builtins, so that it
 * can sit in the opaque storage of a public struct as well as in internal
 * records.  Acquire on taking, release on dropping: the critical sections
 * of one lock are totally ordered, each seeing what the previous one wrote.
 */
#ifndef WEFT_BASE_SPINLOCK_H
#define WEFT_BASE_SPINLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "base/backoff.h"

typedef uint32_t weft__spinlock;

#define WEFT__SPINLOCK_INIT 0u

static inline void weft__spin_init(weft__spinlock *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELAXED);
}

static inline bool weft__spin_trylock(weft__spinlock *l)
{
    /* Look first: a failed exchange would steal the line from the holder. */
    return !__atomic_load_n(l, __ATOMIC_RELAXED) &&
           !__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE);
}

static inline void weft__spin_lock(weft__spinlock *l)
{
    unsigned spins = 0;
    while (!weft__spin_trylock(l))
        weft__backoff(&spins);
}

static inline void weft__spin_unlock(weft__spinlock *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

#endif /* WEFT_BASE_SPINLOCK_H */
