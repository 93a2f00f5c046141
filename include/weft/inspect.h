/*
 * weft/inspect.h — seeing inside a running program: a pool's counters, a
 * dump of its live tasks with their stacks, and a trace of scheduler
 * events.  (Ids and names: weft_task_id, weft_task_set_name in
 * weft/task.h, weft_coro_id in weft/coro.h.)  docs/debugging.md walks
 * through all of it on a deadlocked program, and through the gdb commands
 * of tools/gdb/weft.py, which read the same records from a live process
 * or a core file without the program's help.
 *
 * Costs.  The counters are written by the thread they describe, with
 * plain stores; what is counted by state (running, parked on a mutex...)
 * is found when asked, by walking the task records.  Each wait records
 * its kind, its object and the tick count when it parked.  Tracing is off
 * unless started, and costs one predictable branch per event point then.
 *
 * Consistency.  Counters and the dump are read while the pool runs: each
 * number is one that was true at some moment of the call, not all at the
 * same moment.  A task is shown with its stack only while it is parked in
 * a wait (its stack cannot go away then); running and queued tasks are
 * listed without one.
 */
#ifndef WEFT_INSPECT_H
#define WEFT_INSPECT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <weft/error.h>
#include <weft/pool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One worker's counters (weft_pool_worker_stats).  Since the pool was
 * created, except where "now" says.  (Struct tags, not typedefs: the
 * names are the calls'.) */
struct weft_worker_stats {
    size_t size;             /* in: sizeof(struct weft_worker_stats); out: bytes
                                filled                                     */
    uint64_t runs;           /* tasks started or resumed here              */
    uint64_t spawned;        /* tasks that got the pool as their home here
                                (weft_spawn by one of its tasks, a lazy task
                                started by one, weft_schedule from one)   */
    uint64_t steal_attempts; /* other workers' queues searched             */
    uint64_t steals;         /* searches that brought back a task          */
    uint64_t lifo_hits;      /* tasks run from the slot of the one just woken */
    uint64_t parks;          /* times the worker went to sleep             */
    uint64_t wakeups;        /* times another thread woke it               */
    uint64_t busy_ns;        /* awake (running tasks, or looking for them) */
    uint64_t idle_ns;        /* asleep                                     */
    uint64_t queued;         /* now: entries in its own run queue          */
    uint64_t timers;         /* now: timed waits armed on its heap         */
};

/* A pool's counters (weft_pool_stats). */
struct weft_pool_stats {
    size_t size;             /* in: sizeof(struct weft_pool_stats); out: bytes
                                filled                                     */
    unsigned workers;
    /* The workers' counters, summed (see struct weft_worker_stats). */
    uint64_t runs, spawned, steal_attempts, steals, lifo_hits, parks,
        wakeups, busy_ns, idle_ns, local_queued, timers;
    uint64_t submitted;      /* tasks that got the pool as home from outside
                                it (weft_spawn from a plain thread...)     */
    uint64_t global_queued;  /* now: entries in the pool's global queue    */
    /* Now: the pool's live tasks (started or queued, not yet ended), by
     * what they do; parked = the sum of the parked_* fields. */
    uint64_t tasks, running, runnable, parked;
    uint64_t parked_mutex, parked_cond, parked_sem, parked_wait_group,
        parked_chan_send, parked_chan_recv, parked_event, parked_sleep,
        parked_fd_read, parked_fd_write, parked_await, parked_blocking,
        parked_other;
    uint64_t poll_waits;     /* now: waits registered with its netpoller   */
    uint64_t stacks;         /* now: stacks its live tasks hold            */
    uint64_t stack_bytes;    /*      and their mappings' size (reserved)   */
    /* Process-wide, now: every coroutine and task stack mapped (in use or
     * cached), the free ones in the shared depot (each thread also keeps a
     * few of its own, counted only in stacks_mapped), and the blocking
     * threads of weft_blocking. */
    uint64_t stacks_mapped, stacks_mapped_bytes;
    uint64_t stacks_cached, stacks_cached_bytes;
    uint64_t blocking_busy, blocking_idle;
    uint64_t stale_queued;   /* now: run-queue entries whose task has
                                ended (run inline by an await; dropped when
                                reached), part of local_queued            */
    uint64_t records_bytes;  /* process-wide, now: task records' and
                                handles' memory (64 KiB chunks, live and
                                cached; an idle pool's trim unmaps chunks
                                with no live one)                         */
    /* Stuck workers (weft/pool.h, "Stuck workers"): workers found stuck
     * (one per stall), spares sent to cover one, spare threads started;
     * now: spares covering, spare threads alive (covering or waiting to).
     * The counters of the spares' work (runs, steals...) are in the sums
     * above, but for their time (busy_ns, idle_ns): the workers'. */
    uint64_t stalls, covers, spares_started, spares_active, spare_threads;
};

#if defined(__cplusplus) && defined(__GNUC__) && !defined(__clang__)
/* weft_pool_stats and its struct share a name, as stat(2) and struct
 * stat do; g++'s -Wshadow reads that as the function hiding the struct's
 * constructor. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
/*
 * weft_pool_stats - fill *out with pool's counters.  Set out->size to
 * sizeof *out first: a program built against a later weft, with a larger
 * struct, gets the fields this library knows (the rest zeroed), and
 * out->size says how many bytes were filled.  Any context; walks every
 * task record (some tens of nanoseconds each: about 1.5 ms for 20,000
 * parked tasks on the 2-core machine of docs/performance.md).
 * Returns 0, -EINVAL (pool or out NULL, or out->size smaller than the
 * struct of weft 1.0).
 */
WEFT_API int weft_pool_stats(weft_pool *pool, struct weft_pool_stats *out);
#if defined(__cplusplus) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/* weft_pool_worker_stats - the same for worker `index` (0 to
 * weft_pool_threads(pool) - 1) alone, or for spare index - threads
 * (weft/pool.h, "Stuck workers"; pool stats' spares_started says how many
 * there have been at most: a spare slot is reused, and its counters go
 * on; its busy_ns and idle_ns are 0).  Returns 0, -EINVAL (pool or out
 * NULL, index beyond the workers and the spares made so far, or out->size
 * too small). */
WEFT_API int weft_pool_worker_stats(weft_pool *pool, unsigned index,
                                    struct weft_worker_stats *out);

/*
 * weft_pool_dump - write one block per live task of pool to out, Go-like:
 *     task 17 "conn 127.0.0.1:5421" [chan recv, 3.2 s] worker 1
 *       chan 0x5566d47a12a0
 *       #0 weft__task_switch_to+0x73 (libweft.so.1+0x9c53)
 *       ...
 * the state (or what it waits for, and for how long), the worker it
 * parked on, the object and what the dump knows of it (the task holding
 * a mutex, the task awaited, the fd, a deadline), and for a parked task
 * its stack, named from the modules' symbol tables (module offsets for
 * addr2line or gdb, which give file and line).  Any context; do not call
 * it from a signal handler (weft_dump_on_signal does it safely).
 * Returns 0, -EINVAL (pool or out NULL), -EIO (writing to out failed).
 */
WEFT_API int weft_pool_dump(weft_pool *pool, FILE *out);

/* weft_dump_all - weft_pool_dump for every pool of the process, one after
 * the other.  Returns 0, -EINVAL (out NULL), -EIO (writing failed). */
WEFT_API int weft_dump_all(FILE *out);

/*
 * weft_dump_on_signal - from now on, signal signo makes the process write
 * weft_dump_all to stderr and carry on: its handler only writes a byte to
 * a pipe, which a thread of weft's ("weft-dump") waits on and then dumps.
 * The environment variable WEFT_DUMP_SIGNAL (a number or a name, as
 * SIGQUIT or QUIT) does the same when the first pool is made.  Signal
 * dispositions belong to the process: the handler replaces whatever was
 * installed for signo.  Calling it again with the same signal does
 * nothing.  Any context.
 * Returns 0, -EINVAL (signo is no signal that can be caught), -EBUSY
 * (another signal was chosen already), -EAGAIN (the thread or its pipe
 * could not be made).
 */
WEFT_API int weft_dump_on_signal(int signo);

/*
 * weft_trace_start - record scheduler events from now on, process-wide:
 * tasks made, started or resumed, parked (and on what), woken (and by
 * which task), stolen, finished; workers going to sleep and waking up.
 * Each thread writes its own buffer (up to about a million events per
 * trace; later ones are counted and dropped).  weft_trace_stop writes
 * them to path as Chrome trace-event JSON, which Perfetto
 * (ui.perfetto.dev), chrome://tracing and tools/trace/viewer.html open: a
 * track per thread, a slice per stretch a task ran, an arrow from each
 * waker to the task it woke.  A stretch cut by the stop is drawn to the
 * stop ("still running"); one that began before the start is not drawn
 * (a task's slices begin at its first resume inside the trace: the hooks
 * on the way out of a task are armed by its way in), so a task that runs
 * through the whole trace without a switch has none: a worker stuck that
 * way is weft_pool_dump's to show.  Tasks made before the start are
 * named as they are then.  The environment variable
 * WEFT_TRACE=path starts a trace when the first pool is made, and stops
 * it at exit.  path is opened (created or truncated) now.  Any context.
 * Returns 0, -EINVAL (path NULL), -EBUSY (a trace is being recorded
 * already), -ENOENT (path's folder does not exist), -EISDIR (path is a
 * folder), or another error of open(2) as a negative errno value.
 */
WEFT_API int weft_trace_start(const char *path);

/*
 * weft_trace_stop - stop recording, write the events to the file given to
 * weft_trace_start, close it and free the buffers.  Any context (it waits
 * only for threads in the middle of writing one event).
 * Returns 0, -ESRCH (no trace is being recorded), -EIO (the file could not
 * be written; the events are lost).
 */
WEFT_API int weft_trace_stop(void);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_INSPECT_H */
