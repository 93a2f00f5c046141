/*
 * sched/driver.h — the scheduler that weft_sync_wait makes of a plain
 * thread (internal).
 *
 * A plain thread inside weft_sync_wait runs the tasks that belong to it (a
 * lazy task it started, and the lazy tasks that one awaits, until they
 * move to a pool) until its target ends.  The driver lives on that
 * thread's stack; driver.c has the hand-off that makes that safe.
 */
#ifndef WEFT_SCHED_DRIVER_H
#define WEFT_SCHED_DRIVER_H

#include <stdatomic.h>
#include <stdint.h>

#include "base/spinlock.h"
#include "sched/parker.h"
#include "sched/task.h"
#include "sched/timer.h"

struct weft__driver {
    struct weft__parker parker;
    weft__spinlock lock;              /* guards the queue                 */
    struct weft__task *queue_head;     /* woken tasks to run (FIFO), linked */
    struct weft__task **queue_tail;    /* through weft_task.link           */
    _Atomic uint32_t done;            /* the target ended                 */
    _Atomic uint32_t wakers;          /* wakes in flight (driver.c)       */
    struct weft__timers timers;       /* timed waits of its tasks         */
};

/* Queue t (SCHEDULED, holding its entry's reference) on d and wake d's
 * thread.  Any thread. */
void weft__driver_submit(struct weft__driver *d, struct weft__task *t);

/* d's target ended: wake d's thread for good.  Any thread. */
void weft__driver_finish(struct weft__driver *d);

#endif /* WEFT_SCHED_DRIVER_H */
