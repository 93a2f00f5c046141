/*
 * sched/driver.h — the scheduler that weft_sync_wait makes of a plain
 * thread (internal).
 *
 * A plain thread inside weft_sync_wait runs the tasks that belong to it (a
 * lazy task it started, and the lazy tasks that one awaits, until they
 * move to a pool) until its target has ended, and with it every task that
 * still belongs to it (a lazy task an await started and then gave up on,
 * detached, runs on there: nothing else could run it).  The driver lives
 * on that thread's stack; driver.c has the hand-off that makes that safe.
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
    /* Tasks that belong to it and have not ended (a lazy target, the lazy
     * tasks they started: await.c), but for those that moved to a pool.
     * Only its thread counts, in those tasks' starts, ends and moves. */
    unsigned bound;
};

/* t, which belongs to d (t->driver), ended or moved to a pool: its count
 * in d goes.  On d's thread. */
static inline void weft__driver_unbind(struct weft__driver *d)
{
    d->bound--;
}

/* Queue t (SCHEDULED, holding its entry's reference) on d and wake d's
 * thread.  Any thread. */
void weft__driver_submit(struct weft__driver *d, struct weft__task *t);

/* d's target ended: wake d's thread for good.  Any thread. */
void weft__driver_finish(struct weft__driver *d);

#endif /* WEFT_SCHED_DRIVER_H */
