/*
 * sched/monitor.h — the monitor of stuck workers and its spares
 * (internal): what pool.c, the dump and the counters call.  The policy is
 * at the top of monitor.c; the spares' mechanics in pool.c ("Spares").
 */
#ifndef WEFT_SCHED_MONITOR_H
#define WEFT_SCHED_MONITOR_H

#include <weft/pool.h>

#include <stdbool.h>
#include <stdint.h>

struct weft__worker;

/* A spare's thread (worker.h, thread_state; pool.c, "Spares"). */
enum {
    WEFT__SPARE_NONE,
    WEFT__SPARE_WAITING,
    WEFT__SPARE_COVERING,
    WEFT__SPARE_GONE,
};

/* A worker that has run one task this long without a switch is stuck. */
#define WEFT__STUCK_NS ((uint64_t)10 * 1000000u)

/* ------------------------------------------------- pool.c -> monitor.c */

/* Make pool's monitor (no thread yet); stall_warn_ms as weft_pool_opts'.
 * Returns 0 or -ENOMEM. */
int weft__monitor_make(weft_pool *pool, unsigned stall_warn_ms);
/* Start its thread.  Returns 0 or -EAGAIN. */
int weft__monitor_start(weft_pool *pool);
/* Wake it (a worker left the idle list while it slept). */
void weft__monitor_wake(weft_pool *pool);
/* A timer came first on a heap: wake the monitor if its next look is
 * later than the timer's deadline and slack (monitor.c, next_look). */
void weft__monitor_timer_armed(weft_pool *pool, uint64_t deadline);
/* The pool has stopped and its workers are joined: stop the monitor, join
 * it and every spare's thread. */
void weft__monitor_stop(weft_pool *pool);
/* Free it (NULL: none). */
void weft__monitor_free(weft_pool *pool);

/* ------------------------------------------------- monitor.c -> pool.c */

/* A new spare slot (no thread), published in the pool's slots; NULL at
 * the bound or without memory. */
struct weft__worker *weft__pool_spare_add(weft_pool *pool);
/* Make spare s one of the pool's workers, covering x: its thread is
 * woken or made.  Returns 0, -EBUSY (s is still leaving its last cover),
 * -EAGAIN (no thread could be made: nothing changed). */
int weft__pool_spare_cover(struct weft__worker *s, struct weft__worker *x);
/* Ask spare s to stop covering (it leaves at its next scheduling point,
 * or at once if it is idle). */
void weft__pool_spare_recall(struct weft__worker *s);
/* Join spare s's thread if it has one (the pool has stopped). */
void weft__pool_spare_join(struct weft__worker *s);
/* If every active worker sleeps: note that the monitor sleeps too (the
 * first worker to wake wakes it) and return true. */
bool weft__pool_monitor_may_sleep(weft_pool *pool);

/* --------------------------------------------------------- observers */

struct weft__monitor_counts {
    uint64_t stalls;        /* workers found stuck (episodes)            */
    uint64_t covers;        /* spares sent to cover one                  */
    uint64_t spares_made;   /* spare threads started                     */
    uint64_t spares_active; /* now: spares covering                      */
    uint64_t spare_threads; /* now: spare threads alive                  */
};

/* The monitor's counters; all 0 without a monitor. */
void weft__monitor_counts(weft_pool *pool, struct weft__monitor_counts *out);

/* Since when (ns) w has run its current task without a switch, as the
 * monitor last saw it; 0 if it does not know (no monitor, w in its
 * scheduler loop, or not looked at yet).  Up to one monitor period
 * (5 ms) late. */
uint64_t weft__monitor_running_since(weft_pool *pool,
                                     const struct weft__worker *w);

#endif /* WEFT_SCHED_MONITOR_H */
