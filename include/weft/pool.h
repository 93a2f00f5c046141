/*
 * weft/pool.h — a fixed pool of worker threads that runs tasks
 * (coroutines) through lock-free run queues with work stealing.
 *
 * Each worker runs a scheduler loop on its own thread.  Idle workers search
 * other workers' queues for a bounded time and then sleep on a futex (one
 * of them in the pool's netpoller instead while tasks wait on fds,
 * weft/io.h); a submitter wakes a sleeping worker only when no worker is
 * searching.
 *
 * Time, not rounds.  A busy worker fires its due timers and polls the
 * netpoller at every scheduling point (a task switch: a wait, a yield, a
 * task's end) once some 25 us have passed since it last looked, so a
 * timer or a ready socket waits at most for the task running when it
 * came due (weft/timer.h has the figures).
 *
 * Stuck workers.  A task that runs without a switch (a long computation,
 * a blocking system call, a library's pthread mutex) holds its worker: it
 * cannot be preempted.  A monitor thread (one per pool) watches the
 * workers; one that has run one task for 10 ms without a switch, while it
 * holds up other work (tasks queued behind it, a due timer on its heap,
 * or, when every worker is stuck, anything queued, armed or waiting on
 * I/O), gets covered: a spare thread joins the pool's workers, takes the
 * stuck worker's queued tasks, fires its timers and serves the poller,
 * and leaves once the stuck task switches again.  Spare threads are made
 * when first needed, at most `spares` at once, and one that has waited
 * 10 s for a stuck worker to cover exits (the environment's
 * WEFT_SPARE_IDLE_MS, 1..3600000, sets that time).  The stuck task
 * itself goes on where it is.  The monitor sleeps while every worker
 * sleeps, and costs a busy pool one wake-up of its thread every 5 ms.
 * weft_pool_dump shows
 * what a stuck worker runs (weft/inspect.h); stall_warn_ms, or the
 * environment's WEFT_STALL_WARN_MS, prints a line when a task runs that
 * long without a switch.
 *
 * Ownership: the caller owns the pool from weft_pool_create until
 * weft_pool_destroy returns.  The options struct and its name are copied.
 */
#ifndef WEFT_POOL_H
#define WEFT_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <weft/error.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct weft_pool weft_pool;

/* Options; NULL or zero fields mean defaults (weft/weft.h, "Options"). */
typedef struct weft_pool_opts {
    unsigned threads;   /* worker threads; 0 = online CPUs                */
    size_t stack_size;  /* default task stack; 0 = WEFT_STACK_DEFAULT     */
    const char *name;   /* thread names are "<name>-<i>"; NULL = "weft"   */
    /* Memory the pool keeps cached (free stacks and task records) once
     * its workers have been idle for 0.1 s; the rest goes back to the
     * system (task records when at least 1 MiB of them would: each return
     * costs a TLB flush).  0 = WEFT_POOL_CACHE_DEFAULT. */
    size_t cache_bytes;
    /* The most spare threads that cover stuck workers at once (see the
     * top); 0 = WEFT_POOL_SPARES_DEFAULT. */
    unsigned spares;
    /* Print one line on stderr, once per stall, when a task has run this
     * long without a switch: the task, its worker, for how long, what its
     * thread does and its top frames.  0 = the environment's
     * WEFT_STALL_WARN_MS if set, else never. */
    unsigned stall_warn_ms;
    unsigned flags;     /* WEFT_POOL_* flags below                       */
    void *reserved_[2]; /* must be zero                                   */
} weft_pool_opts;

/* The default cache bound of a pool: 4 MiB. */
#define WEFT_POOL_CACHE_DEFAULT ((size_t)4 << 20)

/* Spare threads a pool may run at once by default, and at most. */
#define WEFT_POOL_SPARES_DEFAULT 256u
#define WEFT_POOL_SPARES_MAX 4096u

/* flags: no monitor thread, so no spares and no stall warnings (a stuck
 * worker stalls what is queued behind it, as it would without weft).  The
 * environment's WEFT_NO_MONITOR (set to anything but 0) does the same for
 * every pool. */
#define WEFT_POOL_NO_MONITOR 1u

/* The most worker threads a pool may have. */
#define WEFT_POOL_THREADS_MAX 1024u

/*
 * weft_pool_create - start a pool.  Any context.
 * Returns 0 and sets *out, -EINVAL (out NULL, more than
 * WEFT_POOL_THREADS_MAX threads, stack size over WEFT_STACK_MAX, more than
 * WEFT_POOL_SPARES_MAX spares, an unknown flag, a reserved option set),
 * -ENOMEM, -EAGAIN (a thread could not be started).
 */
WEFT_API int weft_pool_create(weft_pool **out, const weft_pool_opts *opts);

/*
 * weft_pool_destroy - drain and free the pool: new spawns and schedules
 * onto it from outside fail with -ESHUTDOWN from now on (its own tasks may
 * still spawn: their work may need helpers); it returns once every task on
 * the pool has ended (including tasks those tasks spawn), then joins the
 * workers and frees everything.  From a plain thread, a coroutine, or a
 * task that does not run on this pool (the task is parked meanwhile: a
 * helper thread, started for the call, does the destroy).
 * Returns 0 (the pool is freed), -EINVAL (NULL), -EDEADLK (called from one
 * of its own workers), -EBUSY (another destroy of this pool is in
 * progress), -EAGAIN (in a task: the helper thread could not be started),
 * -ECANCELED (in a task that was cancelled: before the call, and then
 * nothing was done; or while it waited, and then the pool is left
 * draining as after weft_pool_destroy_for's timeout).  After any other
 * error nothing was done.
 */
WEFT_API int weft_pool_destroy(weft_pool *pool);

/*
 * weft_pool_destroy_for - as weft_pool_destroy, waiting for the drain at
 * most timeout_ns; also -ETIMEDOUT: the destroy has begun (spawns and
 * schedules from outside are refused) and goes on (the pool's tasks run
 * to their end), but the pool is not freed: call
 * weft_pool_destroy or weft_pool_destroy_for again to wait for the rest
 * (timeout 0: the destroy begins, and ends now if the pool is drained).
 * Java's ExecutorService.awaitTermination is the model.
 */
WEFT_API int weft_pool_destroy_for(weft_pool *pool, uint64_t timeout_ns);

/* weft_pool_threads - the number of worker threads (spares not counted);
 * 0 for NULL. */
WEFT_API unsigned weft_pool_threads(const weft_pool *pool);

/* weft_pool_current - the pool whose worker runs the caller, else NULL.
 * Read afresh on every call (a task may have moved). */
WEFT_API weft_pool *weft_pool_current(void);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_POOL_H */
