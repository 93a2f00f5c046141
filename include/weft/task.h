/*
 * weft/task.h — tasks: coroutines run by a pool, awaited or waited on.
 *
 * A task is a coroutine plus a completion record (its result, the one
 * waiting for it, a reference count).  There are two ways to make one,
 * with the same arguments: weft_task_create makes a lazy task, which runs
 * only once something waits for it; weft_spawn makes an eager one, queued
 * on a pool at once.  The handle either returns is consumed by exactly one
 * call that returns 0 of weft_await, weft_await_for, weft_await_all,
 * weft_await_all_for, weft_sync_wait, weft_task_take (a task with a room)
 * and weft_task_detach (weft/weft.h,
 * "Handles and ownership": a call that fails consumes nothing); after that
 * the handle must not be used.  A task's stack is recycled the moment its
 * body returns; only the small record waits for the handle.
 *
 * Stacks.  A task's stack is reserved when it starts (committed as it is
 * touched): its own stack_size if it has one; else, starting on a pool
 * (spawned, or lazy and awaited by one of the pool's tasks), that pool's;
 * else, the lazy task that weft_sync_wait starts on its thread gets room
 * for the pools it may move to: WEFT_STACK_NO_POOL (where the system
 * refuses that much, vm.overcommit_memory=2, WEFT_STACK_DEFAULT), and a
 * lazy task awaited by a task on no pool WEFT_STACK_DEFAULT.  A task keeps
 * its stack when it moves (weft_schedule): one that moves to a pool of
 * larger stacks than it got needs a stack_size of its own.
 *
 * Contexts (weft/weft.h, "Contexts"): "in a task" means code running in a
 * task's body (or a function it calls), on whatever thread currently runs
 * it.  A task may continue on another thread after any call that can wait.
 */
#ifndef WEFT_TASK_H
#define WEFT_TASK_H

#include <stdint.h>
#include <weft/coro.h>
#include <weft/pool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct weft_task weft_task;

/* The stack size weft_sync_wait gives the lazy task it starts, when it
 * has no stack_size of its own (see "Stacks" above): 8 MiB, a thread's
 * default stack in glibc. */
#define WEFT_STACK_NO_POOL ((size_t)8 << 20)

/* Options of a task, lazy or eager; NULL or zero fields mean defaults
 * (weft/weft.h, "Options"). */
typedef struct weft_task_opts {
    size_t stack_size;  /* bytes; 0: its pool's (see "Stacks" above)      */
    const char *name;   /* copied (first 31 bytes); NULL = "task"          */
    void *reserved_[4]; /* must be zero                                    */
} weft_task_opts;

/*
 * weft_task_create - a lazy task that will run fn(arg): it does not run
 * until it is awaited (it then starts on the awaiter's thread, by
 * symmetric transfer, and belongs to the awaiter's pool) or passed to
 * weft_sync_wait (it then starts on the calling thread).  Any context.
 * Returns 0 and sets *out, -EINVAL (out or fn NULL, stack size over
 * WEFT_STACK_MAX, a reserved option set), -ENOMEM.
 */
WEFT_API int weft_task_create(weft_task **out, weft_fn fn, void *arg,
                              const weft_task_opts *opts);

/* The room weft_task_create_with (and weft_spawn_with, weft_spawn_copy)
 * hands out at no cost beyond the task's own record: a room of at most
 * this many bytes is a slot of its own that every task record has beside
 * it (no malloc); a larger one is one allocation, freed with the task's
 * record. */
#define WEFT_TASK_ROOM 64

/*
 * weft_task_create_with - a lazy task, as weft_task_create, whose argument
 * is a room of `size` bytes that weft keeps with the task: fn is called
 * with the room's address.  *room gets that address (aligned to
 * alignof(max_align_t)); the caller fills the room before anything can
 * run the task (weft_task_start, an await, weft_sync_wait).  The room
 * stays valid until the handle is consumed, or, for a detached task,
 * until the task ends; weft never reads or writes it (a body may keep its
 * result there, for weft_task_join's caller to read).  A task detached
 * before it started is freed without running: what its room holds is the
 * caller's to undo first.  Any context.
 * Returns 0 and sets *out and *room, -EINVAL (out, fn or room NULL, stack
 * size over WEFT_STACK_MAX, a reserved option set), -ENOMEM.
 */
WEFT_API int weft_task_create_with(weft_task **out, weft_fn fn, size_t size,
                                   void **room, const weft_task_opts *opts);

/* What weft_spawn_with calls to fill a room: 0, or a negative errno of
 * the caller's choosing, which weft_spawn_with returns (nothing made). */
typedef int (*weft_fill_fn)(void *room, void *arg);

/*
 * weft_spawn_with - an eager task with a room, in one call: as
 * weft_task_create_with and weft_task_start together, with the room
 * filled in between by fill(room, arg), which runs in this call, on this
 * thread, before the task is queued.  fill returns 0, or a negative errno
 * (of its own choosing) when it could not fill the room: nothing is made
 * then, and that value is returned; fill must have undone what it wrote.
 * (weft.hpp's spawn is this call: one call where the two would cost the
 * fork-join hot path a call and a second look at the task's state.)
 * Any context.
 * Returns 0 and sets *out, -EINVAL (out, pool, fn or fill NULL, stack
 * size over WEFT_STACK_MAX, a reserved option set), -ENOMEM, -ESHUTDOWN
 * (pool is being destroyed and the caller is not one of its tasks; fill
 * was not called), or fill's negative return.
 */
WEFT_API int weft_spawn_with(weft_task **out, weft_pool *pool, weft_fn fn,
                             size_t size, weft_fill_fn fill, void *arg,
                             const weft_task_opts *opts);

/*
 * weft_spawn_copy - an eager task with a room that holds a copy of the
 * size bytes at src: fn(room) gets its argument by value, as a thread or
 * a goroutine gets one, so the caller's copy may go as soon as this
 * returns.  The room is as weft_spawn_with's (aligned as max_align_t,
 * no malloc up to WEFT_TASK_ROOM bytes, freed with the handle); fn may
 * leave its results there for weft_task_take or weft_task_room.  (weft.hpp's
 * spawn uses it for callables that a byte copy moves.)  Any context.
 * Returns 0 and sets *out, -EINVAL (out, pool or fn NULL, src NULL with
 * size not 0, stack size over WEFT_STACK_MAX, a reserved option set),
 * -ENOMEM, -ESHUTDOWN (pool is being destroyed and the caller is not one
 * of its tasks).
 */
WEFT_API int weft_spawn_copy(weft_task **out, weft_pool *pool, weft_fn fn,
                             const void *src, size_t size,
                             const weft_task_opts *opts);

/*
 * weft_task_room - t's room (weft_task_create_with, weft_spawn_with,
 * weft_spawn_copy), valid as long as the handle is; NULL for NULL or a
 * task without one.  Reading what the body leaves there needs the body
 * to have ended (weft_task_join).  Any context.
 */
WEFT_API void *weft_task_room(const weft_task *t);

/*
 * weft_task_start - queue a lazy task that has not started (made by
 * weft_task_create or weft_task_create_with, and not yet awaited, waited
 * for or started) on pool, as weft_spawn would have: from then on it is
 * an eager task of pool, and the handle is still the caller's.  Any
 * context.  Returns 0, -EINVAL (t or pool NULL, t not lazy or started
 * already), -ESHUTDOWN (pool is being destroyed and the caller is not one
 * of its tasks: t is still lazy).
 */
WEFT_API int weft_task_start(weft_task *t, weft_pool *pool);

/*
 * weft_task_join - wait until t ends, without consuming the handle.  In a
 * task it waits as weft_await does (a lazy t starts here, a spawned t that
 * no worker has started yet may run here inline, and a cancelled caller
 * gets -ECANCELED); on a plain thread as weft_sync_wait does (a lazy t
 * starts on this thread).  Once it returned 0, t has ended: its room
 * (weft_task_create_with) holds what its body left there, and the handle
 * is still to be consumed as usual: weft_await, weft_await_for and
 * weft_sync_wait then return at once (with fn's return value), and
 * weft_task_detach frees the record at once.  Joining again returns 0 at
 * once.  Like weft_sync_wait it has no _for form on a plain thread; in a
 * task, weft_await_for bounds the wait (but consumes the handle).
 * Returns 0, -EINVAL (t NULL, or t is the calling task), -EDEADLK (on a
 * plain thread: called on a pool worker outside a task, or inside a
 * coroutine), -ENOMEM (t is lazy and no stack could be had to start it:
 * it did not start), -ECANCELED (in a task: the calling task was
 * cancelled, before or while it waited; t runs on, a lazy t that this
 * call started included), -EBUSY (another wait for t is parked:
 * weft/weft.h, "Handles and ownership").  On an error t is not consumed
 * either.
 */
WEFT_API int weft_task_join(weft_task *t);

/* What weft_task_take hands an ended task's room, and the value its fn
 * returned, to. */
typedef void (*weft_take_fn)(void *room, void *result, void *arg);

/*
 * weft_task_take - wait as weft_task_join does until t, a task with a room
 * (weft_task_create_with, weft_spawn_with, weft_spawn_copy), ends; then
 * call take(room, result, arg), result being what fn returned, on this
 * thread, and consume t: the room is freed once take returns.  take must
 * neither wait nor unwind (it moves the outcome out of the room).  In a
 * task, a spawned t that no worker has started runs here
 * inline, and take runs right after its body, as weft_await consumes t.
 * Like weft_task_join it has no _for form (weft/weft.h, "Timeouts").
 * Returns 0 (take was called, t consumed), -EINVAL (t or take NULL, t has
 * no room, or t is the calling task), -EDEADLK (on a plain thread: called
 * on a pool worker outside a task, or inside a coroutine), -ENOMEM (t is
 * lazy and no stack could be had to start it: it did not start),
 * -ECANCELED (in a task: the calling task was cancelled, before or while
 * it waited), -EBUSY (another wait for t is parked: weft/weft.h, "Handles
 * and ownership").  On an error take was not called and t is not
 * consumed.
 */
WEFT_API int weft_task_take(weft_task *t, weft_take_fn take, void *arg);

/*
 * Failures: a body may end with a failure instead of a value (weft.hpp's
 * exceptions travel this way).  It calls weft_task_fail, then returns a
 * pointer to a struct weft_failure of its own making (the struct first in
 * a larger one, say), whose drop frees it.  weft_task_result hands that
 * pointer to its caller and says it is a failure; every other way of
 * consuming the task (weft_await, weft_await_all, weft_sync_wait,
 * weft_task_take) hands it over as the result, the caller's to drop
 * (weft drops it where the caller asks for no result: NULL); and
 * if nobody will consume the task (weft_task_detach, or weft_spawn with
 * out NULL), weft calls drop once the task has ended, on whichever
 * thread comes last of the end and the detach.  drop must neither wait
 * nor unwind.
 */
struct weft_failure {
    void (*drop)(struct weft_failure *self);
};

/* weft_task_result's code for a failure. */
#define WEFT_TASK_FAILED 1

/*
 * weft_task_fail - in a task's body: what fn returns is a failure (see
 * above), a struct weft_failure *, not a value.  The mark stays: call it
 * only as the body is about to return its failure.  Returns 0, -EPERM (not
 * in a task).
 */
WEFT_API int weft_task_fail(void);

/*
 * weft_task_result - wait for t and consume it as weft_await does in a
 * task (a spawned t no worker has started runs here inline), or as
 * weft_sync_wait does on a plain thread; *result is what its fn returned.
 * Returns 0 (a value), WEFT_TASK_FAILED (the body called weft_task_fail:
 * *result is its struct weft_failure *, now the caller's to drop), or the
 * errors of weft_task_take: -EINVAL (t or result NULL, or t is the calling
 * task), -EDEADLK, -ENOMEM, -ECANCELED, -EBUSY, with t not consumed.
 */
WEFT_API int weft_task_result(weft_task *t, void **result);

/*
 * weft_spawn - an eager task that will run fn(arg), queued on pool at
 * once; out NULL means detached (nobody will wait for it).  Any context;
 * from a worker of pool it goes to that worker's own queue.
 * Returns 0 (and sets *out if out is not NULL), -EINVAL (pool or fn NULL,
 * stack size over WEFT_STACK_MAX, a reserved option set), -ENOMEM,
 * -ESHUTDOWN (pool is being destroyed and the caller is not one of its
 * tasks: nothing was queued).
 * Its stack is taken when a worker starts it (an await may even run it
 * inline, with none).  A task that runs out of memory there is not lost:
 * it goes back to the end of the pool's queue and starts once a stack can
 * be had (stacks of tasks that end are reused).
 */
WEFT_API int weft_spawn(weft_task **out, weft_pool *pool, weft_fn fn,
                        void *arg, const weft_task_opts *opts);

/*
 * weft_await - wait in a task for t to end; consumes t (on 0).  If t has
 * ended, returns at once; if t is lazy, it starts now on this thread (its
 * result comes back to this task, which resumes on its own pool: where
 * t ended if t stayed there, else queued back to its pool, or to its
 * weft_sync_wait thread, once t ends on the pool it moved to); if t was
 * spawned and no worker has started it yet, its body runs here as a
 * plain call; otherwise the calling task is parked and the worker that
 * finishes t switches straight to it (if that worker is of the calling
 * task's pool: else it is queued there).  *result (may be NULL)
 * gets fn's return value.
 * Returns 0, -EINVAL (t NULL, or t is the calling task), -EPERM (not in a
 * task), -ENOMEM (t is lazy and no stack could be had to start it: it did
 * not start), -ECANCELED (the calling task was cancelled, before or while
 * it waited: t runs on, a lazy t that this call started included),
 * -EBUSY (another wait for t is parked: weft/weft.h, "Handles and
 * ownership").  On an error t is not consumed: await it again (or detach
 * it).
 */
WEFT_API int weft_await(weft_task *t, void **result);

/* weft_await_for - as weft_await, waiting at most timeout_ns; also
 * -ETIMEDOUT (t is not consumed: it runs on, and may be awaited again),
 * and -ENOMEM for no memory for its timer as well (a lazy t did not
 * start).  It never runs a spawned t's body inline (a worker runs it),
 * since nothing could end that at the deadline; a lazy t starts as with
 * weft_await (timeout 0: it does not start). */
WEFT_API int weft_await_for(weft_task *t, void **result, uint64_t timeout_ns);

/*
 * weft_await_all - in a task: wait for each of ts[0..n-1] to end, as
 * weft_await does (each handle given once), then consume them all:
 * results (may be NULL) gets their return values and every ts[i] is set to
 * NULL.  All or nothing: on an error no handle is consumed, ts and results
 * are untouched, and the tasks that ended meanwhile can still be awaited
 * (at once).  Returns 0, -EPERM (not in a task, n == 0 too), -EINVAL (ts
 * NULL with n > 0, a NULL handle, or the calling task's own; or a handle
 * given twice, found once all have ended), -ENOMEM (a
 * lazy one could get no stack), -ECANCELED, -EBUSY (another wait for one
 * of them is parked).
 */
WEFT_API int weft_await_all(weft_task **ts, size_t n, void **results);

/* weft_await_all_for - as weft_await_all, waiting at most timeout_ns for
 * all of them together; also -ETIMEDOUT (nothing consumed), and -ENOMEM
 * for no memory for its timer as well. */
WEFT_API int weft_await_all_for(weft_task **ts, size_t n, void **results,
                                uint64_t timeout_ns);

/*
 * weft_task_cancel - cancel t (weft/weft.h, "Cancellation"): the wait it
 * is in, and every later call of its that would wait (weft_sleep,
 * weft_await, the event, sync, channel and I/O waits, weft_blocking,
 * weft_pool_destroy), returns -ECANCELED at once; a call that can complete
 * without waiting still does.  What t does then is up to its body; the
 * handle is still to be awaited (or detached).  Cancelling a task that has
 * ended does nothing.  Any context; the flag stays set.
 * A task whose body runs inline on its awaiter's stack (weft_await's fast
 * path) is cancelled like any other: its own waits end; cancelling the
 * awaiter is seen by the awaiter's next wait after the body returns.
 * A task that has not started yet gets the request when it starts; the
 * call then makes one membarrier(2) system call (a barrier on each CPU
 * that runs a thread of the process), so that it never races that start.
 * Returns 0, -EINVAL (NULL).
 */
WEFT_API int weft_task_cancel(weft_task *t);

/*
 * weft_sync_wait - block a plain thread until t ends; consumes t (on 0).
 * A lazy t starts on the calling thread and runs there until it first
 * suspends (typically weft_schedule onto a pool); if it suspends while
 * belonging to no pool, it is resumed on this same thread when woken.
 * When it moves to a pool that has an idle worker, the calling thread
 * takes that worker's place and runs it on, on the pool (weft_pool_current
 * says so), until it ends, waits, yields or moves again: the pool keeps
 * its number of running threads, and the round trip sleeps and wakes
 * nobody (Go's main goroutine).  The calling thread runs the task it
 * waits for and the lazy tasks that one awaits, never another task: a
 * lock it holds around the call is safe from unrelated tasks.  A lazy
 * task that such an await started and gave up on (a timeout, a cancel)
 * runs on, on no pool, where nothing but this thread can run it: the call
 * returns once t has ended and those tasks too (one that never ends, say
 * detached while it waits for something that comes only after the call,
 * keeps it from returning).  As after
 * any call that can wait, t may continue on either thread.
 * Returns 0, -EINVAL (t NULL), -EDEADLK (called on a pool worker or inside a
 * coroutine: t is not consumed), -ENOMEM (t is lazy and no stack could be
 * had to start it: t is not consumed), -EBUSY (another wait for t is
 * parked: weft/weft.h, "Handles and ownership"; t is not consumed).
 */
WEFT_API int weft_sync_wait(weft_task *t, void **result);

/* weft_task_detach - give up the handle; the task runs on and its record
 * is freed when it ends (and a failure dropped: see weft_task_fail).  A
 * detached lazy task that never ran is freed at once without running.
 * Any context.  Returns 0, -EINVAL (NULL). */
WEFT_API int weft_task_detach(weft_task *t);

/*
 * weft_task_current - the task whose body is running (on the calling
 * thread), or NULL on a plain thread and in a standalone coroutine.  For a
 * body that weft_await runs inline on its awaiter's stack, that task.  The
 * pointer is borrowed: it names the task (weft_task_name, weft_task_cancel)
 * but is not a handle to consume.
 */
WEFT_API weft_task *weft_task_current(void);

/*
 * weft_task_cancelled - 1 if the calling task (the one weft_task_current
 * names) has been cancelled (weft_task_cancel), else 0; 0 on a plain
 * thread and in a standalone coroutine.  For a body that computes for long
 * without a call that can wait (Go's ctx.Err()): its waits would say
 * -ECANCELED, and a loop that makes none can ask.  Any context.
 */
WEFT_API int weft_task_cancelled(void);

/* weft_task_name - t's name ("task" by default); "" for NULL.  Valid while
 * the handle is; a rename by t itself (weft_task_set_name) rewrites it in
 * place. */
WEFT_API const char *weft_task_name(const weft_task *t);

/* weft_task_id - t's id: a number no other task or coroutine of this
 * process has had, fixed for t's life (never 0); 0 for NULL.  The dump,
 * the trace and the gdb commands name tasks by it (weft/inspect.h). */
WEFT_API uint64_t weft_task_id(const weft_task *t);

/*
 * weft_task_set_name - in a task: rename the calling task (the one
 * weft_task_current names) to a copy of the first 31 bytes of name, as it
 * appears in dumps and traces ("conn 10.0.0.7:5421").
 * Returns 0, -EINVAL (name NULL), -EPERM (not in a task).
 */
WEFT_API int weft_task_set_name(const char *name);

/*
 * weft_schedule - in a task: suspend and continue on a worker of pool
 * (from weft_sync_wait's thread, possibly in an idle worker's place on
 * that same thread: see weft_sync_wait).  From a worker of the same pool
 * it is a yield.
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
