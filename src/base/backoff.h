/*
 * base/backoff.h — how weft waits a short while for another thread
 * (internal): the one spin-then-yield helper.
 *
 * Every such wait in weft is for a few instructions of another thread (a
 * lock holder, a waker's last touch of a record), so it spins with the
 * CPU's pause hint first.  After a bound it yields the CPU instead: with
 * more runnable threads than cores (two cores here), the thread being
 * waited for may be the one that needs this core.  The bound (64 pauses,
 * a few microseconds at most) is far above the waits' usual length and
 * far below a scheduler tick.
 */
#ifndef WEFT_BASE_BACKOFF_H
#define WEFT_BASE_BACKOFF_H

#include <sched.h>

/* The CPU's spin-wait hint. */
static inline void weft__cpu_relax(void)
{
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

#define WEFT__BACKOFF_SPINS 64u

/* One round of waiting; *spins starts at 0 and counts the rounds. */
static inline void weft__backoff(unsigned *spins)
{
    if (++*spins < WEFT__BACKOFF_SPINS)
        weft__cpu_relax();
    else
        sched_yield();
}

#endif /* WEFT_BASE_BACKOFF_H */
