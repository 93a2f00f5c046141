/*
 * parker_futex.c — parker on a Linux futex.
 *
 * The word is EMPTY (no permit), PERMIT, or SLEEPING (the owner is, or is
 * about to be, in FUTEX_WAIT and there is no permit).
 *
 * No lost wakeup: the owner sleeps only through FUTEX_WAIT(word, SLEEPING),
 * which the kernel refuses once the word has changed; unpark exchanges in
 * PERMIT before it wakes.  So an unpark either lands before the wait (the
 * wait returns at once) or wakes it.  FUTEX_WAIT also returns on EINTR and
 * spuriously, so park loops on the word.
 *
 * Cheap hand-offs: unpark makes the system call only if it replaced
 * SLEEPING.  An owner still spinning finds the permit with no system call
 * on either side, which is what keeps a round trip through an awake core
 * near a microsecond instead of the tens a sleeping core costs here.
 *
 * Last touch: unpark's final access to the parker's memory is the exchange;
 * FUTEX_WAKE only names the address.  If the owner has already returned,
 * the wake hits whatever waits there now, and every futex waiter loops on
 * its condition, so that is harmless.
 */
#include "sched/parker.h"

#include "base/backoff.h"

#include <errno.h>
#include <sched.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { EMPTY, PERMIT, SLEEPING };

void weft__parker_init(struct weft__parker *p)
{
    atomic_init(&p->permit, EMPTY);
}

void weft__parker_fini(struct weft__parker *p)
{
    (void)p;
}

/* Take the permit if there is one (acquire: what the unparker wrote before
 * unparking is visible). */
static inline bool take(struct weft__parker *p)
{
    return atomic_load_explicit(&p->permit, memory_order_relaxed) == PERMIT &&
           atomic_exchange_explicit(&p->permit, EMPTY, memory_order_acquire) ==
               PERMIT;
}

bool weft__parker_park(struct weft__parker *p, uint64_t deadline_ns,
                       uint64_t spin_ns)
{
    if (take(p))
        return true;
    if (spin_ns) {
        uint64_t spin_end = weft__now_ns() + spin_ns;
        if (deadline_ns && deadline_ns < spin_end)
            spin_end = deadline_ns;
        struct weft__timed_spin spin;
        weft__timed_spin_start(&spin, spin_end);
        while (weft__timed_spin_more(&spin))
            if (take(p))
                return true;
    }
    for (;;) {
        uint32_t seen = EMPTY;
        if (!atomic_compare_exchange_strong_explicit(
                &p->permit, &seen, SLEEPING, memory_order_acquire,
                memory_order_acquire)) {
            if (seen == PERMIT) {
                atomic_store_explicit(&p->permit, EMPTY, memory_order_relaxed);
                return true;
            }
            /* seen SLEEPING: still ours from a timed-out wait */
        }
        struct timespec ts, *tsp = NULL;
        if (deadline_ns) {
            uint64_t now = weft__now_ns();
            if (now >= deadline_ns) {
                /* Leave no SLEEPING behind; keep a permit that came. */
                seen = SLEEPING;
                if (atomic_compare_exchange_strong_explicit(
                        &p->permit, &seen, EMPTY, memory_order_acquire,
                        memory_order_acquire))
                    return false;
                atomic_store_explicit(&p->permit, EMPTY, memory_order_relaxed);
                return true;
            }
            ts = weft__timespec_of(deadline_ns - now);
            tsp = &ts;
        }
        /* Private futex: the parker is never shared between processes.
         * Sleeps only while the word is SLEEPING (see the top). */
        syscall(SYS_futex, &p->permit, FUTEX_WAIT_PRIVATE, SLEEPING, tsp, NULL,
                0);
    }
}

void weft__parker_unpark(struct weft__parker *p)
{
    /* Release: pairs with park's acquire. */
    if (atomic_exchange_explicit(&p->permit, PERMIT, memory_order_release) ==
        SLEEPING)
        syscall(SYS_futex, &p->permit, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
