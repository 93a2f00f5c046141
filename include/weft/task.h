/*
 * weft/task.h — tasks: coroutines run by a pool, awaited or waited on.
 *
 * A task is a coroutine plus a completion record (its result, the one
 * waiting for it, a reference count).  The handle a create or spawn
 * returns is consumed by exactly one of weft_await, weft_sync_wait or
 * weft_task_detach; after that the handle must not be used.  A task's stack
 * is recycled the moment its body returns; only the small record waits for
 * the handle.
 *
 * Contexts: "in a task" means code running in a task's body (or a function
 * it calls), on whatever thread currently runs it.  A task may continue on
 * another thread after any call that can suspend (await, schedule, yield,
 * event waits): see the README on thread-local storage.
 */
#ifndef WEFT_TASK_H
#define WEFT_TASK_H

#include <weft/coro.h>
#include <weft/pool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct weft_task weft_task;

/*
 * weft_task_create - a lazy task: it does not run until it is awaited (it
 * then starts on the awaiter's thread, by symmetric transfer) or passed to
 * weft_sync_wait (it then starts on the calling thread).  opts as for
 * weft_coro_create (NULL: defaults).  Any context.
 * Returns 0, -EINVAL (out or fn NULL, stack size over 1 GiB), -ENOMEM.
 */
WEFT_API int weft_task_create(weft_task **out, weft_fn fn, void *arg,
                              const weft_coro_opts *opts);

/*
 * weft_spawn - an eager task: queued on pool at once.  out NULL means
 * detached (nobody will wait for it).  Any context; from a worker of pool
 * it goes to that worker's own queue.
 * Returns 0, -EINVAL (pool or fn NULL), -ENOMEM, -ESHUTDOWN (pool is being
 * destroyed: nothing was queued).
 * Its stack is taken when a worker starts it (an await may even run it
 * inline, with none).  A task that runs out of memory there is not lost:
 * it goes back to the end of the pool's queue and starts once a stack can
 * be had (stacks of tasks that end are reused).
 */
WEFT_API int weft_spawn(weft_pool *pool, weft_fn fn, void *arg,
                        weft_task **out);

/*
 * weft_await - wait in a task for t to end; consumes t.  If t has ended,
 * returns at once; if t is lazy, it starts now on this thread (its result
 * comes back to this task, which resumes where t's last worker is);
 * otherwise the calling task suspends and the worker that finishes t
 * switches straight to it.  *result (may be NULL) gets fn's return value.
 * Returns 0, -EINVAL (t NULL or t is the calling task), -EPERM (not in a
 * task; t is not consumed), -ENOMEM (t is lazy and no stack could be had
 * to start it: t is not consumed and may be awaited again), -ECANCELED
 * (the calling task was cancelled, before or while it waited: t is not
 * consumed; it runs on and may be awaited again).
 */
WEFT_API int weft_await(weft_task *t, void **result);

/*
 * weft_await_all - in a task: weft_await each of ts[0..n-1] in order;
 * results (may be NULL) gets their return values.  Each handle consumed is
 * set to NULL in ts, so after an error the ones left are those not NULL.
 * Returns 0, -EINVAL (ts NULL with n > 0, or a NULL handle: nothing
 * consumed), -EPERM (not in a task), or the first weft_await error
 * (-ECANCELED, -ENOMEM).
 */
WEFT_API int weft_await_all(weft_task **ts, size_t n, void **results);

/*
 * weft_task_cancel - cancel t: its current blocking point, and every later
 * one (weft_sleep, weft_await, the event, sync, channel and I/O waits,
 * weft_blocking), returns -ECANCELED at once.  What t does then is up to
 * its body; the handle is still to be awaited (or detached).  Cancelling
 * a task that has ended does nothing.  Any context; the flag stays set.
 * A task whose body runs inline on its awaiter's stack (weft_await's fast
 * path) blocks as its awaiter: cancel the awaiter to reach it.
 * Returns 0, -EINVAL (NULL).
 */
WEFT_API int weft_task_cancel(weft_task *t);

/*
 * weft_sync_wait - block a plain thread until t ends; consumes t.  A lazy t
 * starts on the calling thread and runs there until it first suspends
 * (typically weft_schedule onto a pool); if it suspends while belonging to
 * no pool, it is resumed on this same thread when woken.
 * Returns 0, -EINVAL (t NULL), -EDEADLK (called on a pool worker or inside a
 * coroutine: t is not consumed), -ENOMEM (t is lazy and no stack could be
 * had to start it: t is not consumed).
 */
WEFT_API int weft_sync_wait(weft_task *t, void **result);

/* weft_task_detach - give up the handle; the task runs on and its record
 * is freed when it ends.  Returns 0, -EINVAL (NULL).  A detached lazy task
 * that never ran is freed at once without running. */
WEFT_API int weft_task_detach(weft_task *t);

/*
 * weft_schedule - in a task: suspend and continue on a worker of pool.
 * From a worker of the same pool it is a yield.
 * Returns 0 (now on pool), -EINVAL (pool NULL), -EPERM (not in a task),
 * -ESHUTDOWN (pool is being destroyed: the caller did not move).
 */
WEFT_API int weft_schedule(weft_pool *pool);

/* weft_yield - in a task on a pool: let the tasks already queued run
 * first.  Returns 0, -EPERM (not in a task on a pool). */
WEFT_API int weft_yield(void);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_TASK_H */
