/*
 * base/backoff.h — how weft waits a short while for another thread
 * (internal): the spin-then-yield helper, and the timed spin before a
 * sleep.
 *
 * weft__backoff is for waits of a few instructions of another thread (a
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
#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"

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

/*
 * A spin with a time budget, for a thread that is about to sleep and
 * expects work (or a wake) within microseconds: a searching worker, a
 * thread in weft_sync_wait.  Sleeping and being woken costs 30-60 us on
 * the machines weft is measured on, a hand-off to a core that is awake
 * well under one; spinning for about as long as the sleep would cost
 * wastes at most half of the time (the ski-rental bound).
 *
 * The first PAUSE_ROUNDS rounds (about 1.5 us) only pause: with a core
 * free, the event comes within them.  After that every round yields: if
 * it has not come, the thread that would produce it may be waiting for
 * this core (more busy threads than cores), and a yield hands it over at
 * once where a pause-only spin held the core for its time slice (a
 * sync_wait round trip on a loaded two-core machine: 9 us with a yield
 * every 256 rounds, 1.8 us this way).  With nothing else to run, a yield
 * is a 165 ns system call.
 */
struct weft__timed_spin {
    uint64_t end;
    unsigned round;
};

#define WEFT__TIMED_SPIN_PAUSE_ROUNDS 128u /* then a sched_yield per round */
#define WEFT__TIMED_SPIN_CLOCK_EVERY 32u   /* pauses between clock reads   */

static inline void weft__timed_spin_start(struct weft__timed_spin *s,
                                          uint64_t end_ns)
{
    s->end = end_ns;
    s->round = 0;
}

/* One round of the spin; false once the budget is spent.  The clock is
 * read after every yield: a yield to a thread that does not yield back
 * (a task that computes) can last its whole time slice (4 ms here), and
 * reading it only every 32 rounds let a 30 us budget run for over 100 ms
 * with three busy threads on one core (tests/stress/stress_handoff.c). */
static inline bool weft__timed_spin_more(struct weft__timed_spin *s)
{
    unsigned r = ++s->round;
    if (r <= WEFT__TIMED_SPIN_PAUSE_ROUNDS) {
        weft__cpu_relax();
        return r % WEFT__TIMED_SPIN_CLOCK_EVERY != 0 ||
               weft__now_ns() < s->end;
    }
    sched_yield();
    return weft__now_ns() < s->end;
}

#endif /* WEFT_BASE_BACKOFF_H */
