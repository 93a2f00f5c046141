/*
 * parker_futex.c — parker on a Linux futex.
 *
 * No lost wakeup: unpark stores the permit (1) before FUTEX_WAKE; park
 * sleeps only through FUTEX_WAIT(permit, 0), which the kernel refuses if
 * the permit is no longer 0.  So an unpark either lands before the wait
 * (which then returns at once) or wakes it.  FUTEX_WAIT returns early on
 * EINTR and spuriously, so park loops on the permit.
 *
 * Last touch: unpark's final memory access is the exchange that sets the
 * permit; FUTEX_WAKE only names the address.  If the owner has already
 * returned, the wake hits whatever waits there now, and every futex waiter
 * loops on its condition, so that is harmless.
 */
#include "parker.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SPINS 200

uint64_t weft__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void weft__parker_init(struct weft__parker *p)
{
    atomic_init(&p->permit, 0);
}

void weft__parker_fini(struct weft__parker *p)
{
    (void)p;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

bool weft__parker_park(struct weft__parker *p, uint64_t deadline_ns)
{
    for (int i = 0; i < SPINS; i++) {
        /* Look before the exchange: a locked instruction per spin would
         * steal the line from the unparker.  Acquire: what the unparker
         * wrote before unparking is visible. */
        if (atomic_load_explicit(&p->permit, memory_order_relaxed) &&
            atomic_exchange_explicit(&p->permit, 0, memory_order_acquire))
            return true;
        cpu_relax();
    }
    for (;;) {
        if (atomic_exchange_explicit(&p->permit, 0, memory_order_acquire))
            return true;
        struct timespec ts, *tsp = NULL;
        if (deadline_ns) {
            uint64_t now = weft__now_ns();
            if (now >= deadline_ns)
                return false;
            uint64_t left = deadline_ns - now;
            ts.tv_sec = (time_t)(left / 1000000000u);
            ts.tv_nsec = (long)(left % 1000000000u);
            tsp = &ts;
        }
        /* Private futex: the parker is never shared between processes.
         * Sleeps only while permit == 0 (see the top). */
        syscall(SYS_futex, &p->permit, FUTEX_WAIT_PRIVATE, 0, tsp, NULL, 0);
    }
}

void weft__parker_unpark(struct weft__parker *p)
{
    /* Release: pairs with park's acquire exchange. */
    if (atomic_exchange_explicit(&p->permit, 1, memory_order_release) == 0)
        syscall(SYS_futex, &p->permit, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
