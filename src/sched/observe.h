/*
 * sched/observe.h — what the observers (stats.c, dump.c, trace.c; the gdb
 * commands of tools/gdb/weft.py) read, and what the rest of weft tells
 * them (internal).  weft/inspect.h is the public side.
 *
 * Nothing here may cost the hot paths an atomic read-modify-write or a
 * lock: the worker counters are written only by their worker, with plain
 * (relaxed) loads and stores; a wait records its kind and object in its
 * own record, and the tick count when it parks; everything counted by
 * state is found by walking the task records when asked (records.c keeps
 * every chunk of them).  Tracing costs one predictable branch on a global
 * flag while it is off.
 */
#ifndef WEFT_SCHED_OBSERVE_H
#define WEFT_SCHED_OBSERVE_H

#include <weft/pool.h>

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct weft__wait;
struct weft__task;

/* ------------------------------------------------------- wait kinds */

/* What a wait is for: the buckets of weft_pool_stats' parked_* fields. */
enum weft__wait_reason {
    WEFT__WR_OTHER,
    WEFT__WR_MUTEX,
    WEFT__WR_COND,
    WEFT__WR_SEM,
    WEFT__WR_WAIT_GROUP,
    WEFT__WR_CHAN_SEND,
    WEFT__WR_CHAN_RECV,
    WEFT__WR_EVENT,
    WEFT__WR_SLEEP,
    WEFT__WR_FD_READ,
    WEFT__WR_FD_WRITE,
    WEFT__WR_AWAIT,
    WEFT__WR_BLOCKING,
    WEFT__WR_COUNT
};

/*
 * A kind of wait, one static record per blocking call (each primitive
 * defines its own), named in every wait record (weft__wait_init).
 * describe, if not NULL, appends what the dump can say about the wait's
 * object to buf (at most n bytes, terminated): who holds the mutex, the
 * fd.  It runs on the dumping thread under the waiter's wait_lock, with
 * the waiter parked in the wait, so the object is alive; it must take no
 * lock (every primitive takes its own lock before a wait_lock, never
 * after) and must read what others write only with atomic loads.
 */
struct weft__wait_kind {
    unsigned reason;            /* enum weft__wait_reason                */
    const char *name;           /* "mutex", "chan recv"...               */
    /* Bit 0: the object is a function (weft_blocking's): the dump names
     * it.  Bit 1: cancellation does not end these waits
     * (weft__wait_init_nocancel). */
    unsigned flags;
    void (*describe)(const struct weft__wait *w, char *buf, size_t n);
};

#define WEFT__WK_CODE 1u
#define WEFT__WK_NOCANCEL 2u

/* The kinds sched/ itself waits for. */
extern const struct weft__wait_kind weft__wait_sleep;
extern const struct weft__wait_kind weft__wait_await;

/* For a describe: the id of the task record at p (a mutex owner token, an
 * awaited task), or 0 if p is not a live task record.  Only inside the
 * records' walk (task.h), as a dump's describes are. */
uint64_t weft__observe_task_id(const void *p);

/* --------------------------------------------------- worker counters */

/*
 * A worker's counters (struct weft_worker_stats has their meaning).
 * Plain words, written by the worker alone (x86 adds to one in a single
 * instruction: a relaxed atomic load and store would be three), and read
 * by stats.c with volatile loads of whole aligned words, from a function
 * left out of ThreadSanitizer's instrumentation: a value torn between two
 * increments cannot happen on the 64-bit machines weft supports, and a
 * stale one is what a snapshot of running counters is anyway.
 */
struct weft__worker_stats {
    uint64_t runs;           /* tasks the scheduler loop found and ran   */
    uint64_t lifo_hits;
    uint64_t steal_tries;
    uint64_t steals;
    uint64_t parks;
    uint64_t wakeups;
    uint64_t idle_ns;        /* sleeps that ended                        */
    uint64_t idle_since;     /* when the current sleep began, or 0       */
};

/* ------------------------------------------------ the pools' registry */

/* pool.c: a pool was made (it is listed for weft_dump_all, and the
 * environment's WEFT_DUMP_SIGNAL and WEFT_TRACE take effect on the first);
 * a pool is about to be freed (unlisted: a dump of all pools in progress
 * finishes first). */
void weft__observe_pool_made(weft_pool *pool);
void weft__observe_pool_gone(weft_pool *pool);

/* io/blocking.c: how many of weft_blocking's threads run a request and
 * how many wait for one (process-wide), once it has threads. */
extern void (*_Atomic weft__observe_blocking)(uint64_t *busy, uint64_t *idle);

/* --------------------------------------------------------------- trace */

/* Nonzero while a trace is being recorded (trace.c). */
extern int weft__tracing __attribute__((visibility("hidden")));

static inline int weft__trace_on(void)
{
    return __builtin_expect(__atomic_load_n(&weft__tracing, __ATOMIC_RELAXED),
                            0);
}

enum weft__trace_type {
    WEFT__TE_SPAWN,         /* id made; arg: the task that made it, or 0  */
    WEFT__TE_NAME,          /* id's name (weft__trace_name)               */
    WEFT__TE_RUN,           /* id starts running here; arg: the flow that
                               woke it, or 0                              */
    WEFT__TE_STOP,          /* id stops running here; arg: 1 + the reason
                               of the wait it parks in, or 0 (a yield, a
                               move, a lazy start)                        */
    WEFT__TE_FINISH,        /* id's body returned (its STOP follows)      */
    WEFT__TE_WAKE,          /* id was woken (queued) here; arg: the flow  */
    WEFT__TE_STEAL,         /* id was stolen here; arg: the victim's index */
    WEFT__TE_SLEEP,         /* this worker goes to sleep                  */
    WEFT__TE_AWAKE,         /* this worker woke up                        */
};

/* Record one event on the calling thread's buffer. */
void weft__trace(unsigned type, uint64_t id, uint64_t arg);
/* Record id's name. */
void weft__trace_name(uint64_t id, const char *name);
/* A wake of t: record it and leave its flow id in t, for t's next RUN. */
void weft__trace_wake(struct weft__task *t);
/* t starts running on this thread (takes the flow a wake left). */
void weft__trace_run(struct weft__task *t);

#endif /* WEFT_SCHED_OBSERVE_H */
