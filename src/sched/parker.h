/*
 * sched/parker.h — blocking a plain thread until another thread wakes it
 * (internal).  The one place where weft chooses how threads sleep: a Linux
 * futex (parker_futex.c) or a pthread mutex + condition variable
 * (parker_condvar.c, the -Devent=condvar build), so a port stays possible.
 *
 * A parker holds a permit, like Java's LockSupport or Rust's thread::park:
 * weft__parker_unpark makes one available and wakes the owner;
 * weft__parker_park consumes it, blocking while there is none.  An unpark
 * before the park is not lost.  Spurious returns do not happen: park
 * returns with the permit consumed, or on the deadline.
 *
 * Who calls what: park only by the parker's owning thread; unpark by any
 * thread.  The parker may live on its owner's stack: unpark's last access
 * to its memory happens before the owner's park returns, so the owner may
 * return and reuse the memory at once.
 */
#ifndef WEFT_PARKER_H
#define WEFT_PARKER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"

#if defined(WEFT_EVENT_CONDVAR)
#include <pthread.h>
#endif

struct weft__parker {
    _Atomic uint32_t permit;   /* 1 = an unpark is pending */
#if defined(WEFT_EVENT_CONDVAR)
    pthread_mutex_t lock;
    pthread_cond_t cond;
#endif
};

void weft__parker_init(struct weft__parker *p);
void weft__parker_fini(struct weft__parker *p);

/* How long a thread that expects a wake soon spins before it sleeps
 * (base/backoff.h, weft__timed_spin_more, has the reasoning). */
#define WEFT__PARK_SPIN_NS 30000u

/*
 * weft__parker_park - wait for the permit and consume it.  deadline_ns is
 * an absolute CLOCK_MONOTONIC time, or 0 for none.  Spins for up to
 * spin_ns first (WEFT__PARK_SPIN_NS for a thread that expects the permit
 * within microseconds; 0 for one that has already spun, like a worker
 * that searched before parking).
 * Returns true if the permit was consumed, false at the deadline.
 */
bool weft__parker_park(struct weft__parker *p, uint64_t deadline_ns,
                       uint64_t spin_ns);

/* weft__parker_unpark - make the permit available and wake the owner. */
void weft__parker_unpark(struct weft__parker *p);

#endif /* WEFT_PARKER_H */
