/*
 * wl_pool.h — what the pooled workloads (wl_spawn_join.c, wl_skynet.c,
 * wl_fib.c, wl_yield.c, wl_ping_pong.c, wl_sync_wait.c, wl_timeout.c,
 * wl_mutex.c, wl_sleepers.c) share: making the pool outside the timed
 * region, running a root task on it from main, and carrying the first
 * error a task met back to main.
 *
 * Every function prints what failed (prefixed with the workload's name) and
 * returns its negative errno, so a run_weft can simply pass it on.
 */
#ifndef WEFT_BENCH_WL_POOL_H
#define WEFT_BENCH_WL_POOL_H

#include <stdatomic.h>

#include <weft/pool.h>
#include <weft/task.h>

/* weft_pool_create with `threads` workers and default stacks. */
int bench_pool_create(weft_pool **out, unsigned threads, const char *who);

/* weft_pool_destroy. */
int bench_pool_destroy(weft_pool *pool, const char *who);

/*
 * Spawns fn(arg) on pool and blocks the calling (plain) thread in
 * weft_sync_wait until it ends; *result (may be NULL) gets its value.
 */
int bench_pool_run(weft_pool *pool, weft_fn fn, void *arg, void **result,
                   const char *who);

typedef struct bench_task_err bench_task_err;

/*
 * One whole pooled run: reset err, create *pool (the root reads it to
 * spawn onto), run root(arg) to its end from this thread, destroy the pool
 * (and clear *pool), then report the first error among these and the ones
 * the tasks recorded in err.  Returns 0 or that negative errno.
 */
int bench_pool_session(weft_pool **pool, unsigned threads, weft_fn root,
                       void *arg, bench_task_err *err, const char *who);

/*
 * The first error a task body met (0 = none).  Bodies cannot return an
 * error code through a result that is also the workload's value, so they
 * record it here with bench_task_error(), and run_weft reports it after
 * the root task has ended.
 */
struct bench_task_err {
    _Atomic int rc;
    const char *what;   /* the call that failed; written by the first only */
};

void bench_task_err_reset(bench_task_err *e);
/* Records rc (if nonzero and the first) with the name of the failed call. */
void bench_task_error(bench_task_err *e, int rc, const char *what);
/* 0, or prints "<who>: <what> in a task: <error>" and returns the error. */
int bench_task_err_check(bench_task_err *e, const char *who);

#endif /* WEFT_BENCH_WL_POOL_H */
