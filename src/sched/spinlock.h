/*
 * spinlock.h — a test-and-test-and-set lock for the pool's few, tiny
 * critical sections (internal).
 *
 * The pool's idle list and the global queue's dequeue side are held for a
 * handful of instructions.  A pthread mutex there sleeps in the kernel
 * whenever two threads meet (seen: several futex calls per sync_wait round
 * trip), while spinning for a few hundred nanoseconds costs nothing.  After
 * a bounded spin it yields the CPU, so a holder that was preempted gets to
 * run (two cores, more threads).
 */
#ifndef WEFT_SPINLOCK_H
#define WEFT_SPINLOCK_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

typedef struct {
    _Atomic bool held;
} weft__spinlock;

#define WEFT__SPINLOCK_INIT {false}

static inline void weft__cpu_relax(void)
{
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

static inline bool weft__spin_trylock(weft__spinlock *l)
{
    /* Look first: a failed exchange would steal the line from the holder. */
    return !atomic_load_explicit(&l->held, memory_order_relaxed) &&
           !atomic_exchange_explicit(&l->held, true, memory_order_acquire);
}

static inline void weft__spin_lock(weft__spinlock *l)
{
    unsigned spins = 0;
    while (!weft__spin_trylock(l)) {
        if (++spins < 64)
            weft__cpu_relax();
        else
            sched_yield();
    }
}

static inline void weft__spin_unlock(weft__spinlock *l)
{
    atomic_store_explicit(&l->held, false, memory_order_release);
}

#endif /* WEFT_SPINLOCK_H */
