/*
 * base/clock.h — the monotonic clock and deadline arithmetic (internal).
 *
 * Every time in weft is CLOCK_MONOTONIC nanoseconds in a uint64_t, which
 * holds 584 years.  A deadline is such an absolute time; 0 in a deadline
 * field means "none".  Timeouts (relative) become deadlines once, at the
 * start of a call (weft/weft.h, "Timeouts"), so a call that waits several
 * times still ends on time.
 */
#ifndef WEFT_BASE_CLOCK_H
#define WEFT_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

#define WEFT__NS_PER_S 1000000000u

/* CLOCK_MONOTONIC now, in ns (vDSO: no system call). */
static inline uint64_t weft__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * WEFT__NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* The deadline `ns` from now, never 0 (none) and saturating just below
 * UINT64_MAX, so a huge timeout is simply one that never comes. */
static inline uint64_t weft__deadline_after(uint64_t ns)
{
    uint64_t now = weft__now_ns();
    uint64_t d = now + ns;
    return d < now || d >= UINT64_MAX - 1 ? UINT64_MAX - 1 : d;
}

/* ns as a timespec (relative, or absolute when ns is a time). */
static inline struct timespec weft__timespec_of(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / WEFT__NS_PER_S),
                          .tv_nsec = (long)(ns % WEFT__NS_PER_S)};
    return ts;
}

/* What is left until deadline, as a timespec (zero once it has passed). */
static inline struct timespec weft__timespec_until(uint64_t deadline)
{
    uint64_t now = weft__now_ns();
    return weft__timespec_of(deadline > now ? deadline - now : 0);
}

/*
 * Ticks: the CPU's constant-rate counter (the x86 time-stamp counter, the
 * AArch64 virtual counter), read in one unprivileged instruction with no
 * call, for times that only the observers read (when a wait began,
 * sched/wait.c): a vDSO clock_gettime costs some twenty instructions more,
 * on every park.  weft__tick_ns converts a difference of ticks to ns.
 * Assumes the counter runs at one rate on every CPU (x86's "constant" and
 * "nonstop" TSC, which every x86_64 CPU of the last fifteen years has; the
 * AArch64 counter always does); where it does not, wait times are off, and
 * nothing else.
 */
static inline uint64_t weft__ticks(void)
{
#if defined(__x86_64__)
    return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return weft__now_ns();
#endif
}

/* A number of ticks that lasts about ns or less, without measuring: the
 * AArch64 counter's rate is read from the CPU; the x86 time-stamp counter
 * is taken to run at 1 GHz, the floor of the CPUs weft runs on, so the
 * count lasts ns at most (ns / 4 at 4 GHz).  For intervals that may come
 * sooner but never later (how often a busy worker looks at its timers). */
static inline uint64_t weft__ticks_at_most(uint64_t ns)
{
#if defined(__aarch64__)
    uint64_t f;
    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(f));
    return f ? ns * f / WEFT__NS_PER_S : ns;
#else
    return ns;
#endif
}

/* Nanoseconds per tick: read from the CPU (AArch64) or measured once
 * against CLOCK_MONOTONIC over a few milliseconds (x86; the first call
 * sleeps that long). */
double weft__tick_ns(void);

#endif /* WEFT_BASE_CLOCK_H */
