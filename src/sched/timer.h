/*
 * timer.h — a set of timers (internal): a binary min-heap of deadlines
 * under a mutex.  Each pool worker has one (pool.c, "Timers"), and so does
 * each sync_wait driver.  Timers are rare next to task switches (a timed
 * wait arms one), and each heap is mostly used by its own worker, so a
 * lock is simpler than anything cleverer; the earliest deadline is mirrored
 * in an atomic so workers can test "anything due?" without it.
 *
 * A timer is embedded by its user (typically on a waiting task's stack).
 * fire() runs with the timers' lock held, which is what lets the user
 * disarm safely: after weft__timers_remove returns, fire() is not running
 * and will not run, so the timer's memory may be reused.
 */
#ifndef WEFT_SCHED_TIMER_H
#define WEFT_SCHED_TIMER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct weft__timer {
    uint64_t deadline;                     /* CLOCK_MONOTONIC ns           */
    void (*fire)(struct weft__timer *tm);  /* called under the lock        */
    size_t index;                          /* in the heap; SIZE_MAX if not */
};

/* A heap slot: the timer's deadline beside it, so that a sift compares
 * within the heap's array and does not visit the timers (each on its own
 * waiting task's stack: a cache miss apiece). */
struct weft__timer_slot {
    uint64_t deadline;
    struct weft__timer *tm;
};

struct weft__timers {
    pthread_mutex_t lock;
    struct weft__timer_slot *heap;
    size_t n, cap;
    _Atomic uint64_t next;                 /* earliest deadline, or max    */
};

void weft__timers_init(struct weft__timers *ts);
void weft__timers_fini(struct weft__timers *ts);

/* Arm tm.  Returns 1 if it is now the earliest (wake a sleeper so it
 * shortens its sleep), 0 if not, -ENOMEM. */
int weft__timers_add(struct weft__timers *ts, struct weft__timer *tm);

/* Disarm tm; true if it was still armed (so fire() never ran). */
bool weft__timers_remove(struct weft__timers *ts, struct weft__timer *tm);

/* Fire every timer due at `now`; returns how many fired. */
unsigned weft__timers_run(struct weft__timers *ts, uint64_t now);

/* The earliest deadline, or UINT64_MAX. */
static inline uint64_t weft__timers_next(struct weft__timers *ts)
{
    return atomic_load_explicit(&ts->next, memory_order_acquire);
}

#endif /* WEFT_SCHED_TIMER_H */
