/*
 * weft/weft.h — the umbrella header: includes every public weft header,
 * and states once the rules that every call follows.  Each rule below
 * holds for every call; where a call is an exception, it is named here,
 * and its declaration says exactly what it does.
 *
 * Errors.  A call that can fail returns a negative errno value on failure:
 * an int that is 0 on success (or a count or fd, as its declaration
 * says), or (the byte-moving I/O calls) an ssize_t that is the byte count.
 * Each declaration lists every code it returns, including those of the
 * calls it makes; weft_strerror names any of them (weft/error.h).  Calls
 * that cannot fail return void or a value, and say what they do with NULL.
 *
 * A call that fails has no other effect: every object it was given is as
 * it was, an out-parameter is not written, and a handle it would have
 * consumed is not consumed.  The exceptions are failures that come after
 * the call started something it cannot take back; each declaration says
 * what is left:
 *   - weft_write, weft_write_for: an error after part of the buffer went
 *     out does not say how much went (weft_write_some, which fails only
 *     with nothing written, does);
 *   - weft_connect, weft_connect_for: -ETIMEDOUT or -ECANCELED leave the
 *     handshake going on in the kernel;
 *   - weft_accept, weft_accept_for: -ENOMEM or -EINVAL for weft's record
 *     of the connection it accepted closes that connection;
 *   - weft_close: the fd number is released whatever it returns (but
 *     -EBADF, for a number that was not open), as close(2) on Linux;
 *   - weft_blocking, weft_blocking_for: -ECANCELED or -ETIMEDOUT while fn
 *     runs leave it running on its thread (its result is dropped);
 *   - weft_await, weft_await_for, weft_await_all, weft_await_all_for: a
 *     lazy task they started runs on after their failure (its handle is
 *     not consumed: await it again; on no pool, it runs on the thread in
 *     weft_sync_wait, which waits for it too: weft/task.h);
 *   - weft_cond_wait, weft_cond_wait_for: -ETIMEDOUT and -ECANCELED come
 *     after the mutex was released and locked again;
 *   - weft_pool_destroy, weft_pool_destroy_for: -ETIMEDOUT or -ECANCELED
 *     leave the pool being destroyed (shut to new work, draining);
 *   - weft_pool_dump, weft_dump_all, weft_trace_stop: -EIO comes after
 *     part was written (the trace is stopped and its events lost).
 *
 * Timeouts.  Every call that can wait has a plain form, which waits as
 * long as it takes, and a _for form with a last argument
 * `uint64_t timeout_ns`, which gives up with -ETIMEDOUT once timeout_ns
 * nanoseconds (of CLOCK_MONOTONIC) have passed since the call began, for
 * the whole call however many waits it makes, in every context (a plain
 * thread too).  A timeout of 0 never waits: the call does what it can at
 * once and returns -ETIMEDOUT where it would have had to wait, in a
 * cancelled task as well (it would not have parked).  UINT64_MAX
 * is no limit.  The exceptions: weft_sleep, which is a timed wait itself;
 * weft_sync_wait, which has no _for form (the thread that calls it may be
 * the one running the task, which cannot be left at a deadline), nor have
 * weft_task_join, weft_task_take and weft_task_result, which wait as
 * weft_sync_wait does on a plain thread (in a task, weft_await_for
 * bounds the same wait); and the condition variable, whose waits lock the
 * mutex again after their timeout, for as long as that takes (as
 * pthread_cond_timedwait does).
 *
 * Cancellation.  weft_task_cancel(t) sets a flag in t that stays set.
 * From then on every call of t's that would wait (park) returns
 * -ECANCELED instead, at once, and a wait already in progress ends with
 * -ECANCELED; a call that can complete without waiting does so even in a
 * cancelled task (a free mutex, a set event, a ready fd, an ended task,
 * weft_sleep(0)), as a ready case wins over a cancelled context in Go's
 * select.  A task that computes without such calls asks for the flag
 * with weft_task_cancelled.  Only tasks are cancelled: on a plain thread
 * nothing returns -ECANCELED.  The exceptions: the condition variable's
 * re-lock, which waits for the mutex even in a cancelled task
 * (weft_cond_wait returns -ECANCELED holding it); and the I/O calls in a
 * task that weft_sync_wait runs on no pool, which block its thread in
 * poll(2) and see a cancellation only when they start (weft/io.h).  (A
 * standalone coroutine's -ECANCELED is its destruction, weft/coro.h.)
 *
 * Handles and ownership.  A weft_task handle (weft_task_create,
 * weft_task_create_with, weft_spawn, weft_spawn_with, weft_spawn_copy) is
 * consumed by exactly one call that returns 0 of: weft_await, weft_await_for,
 * weft_await_all, weft_await_all_for, weft_sync_wait, weft_task_take,
 * weft_task_result, weft_task_detach; a call that fails consumes nothing.
 * After that the handle must not be used.  weft_task_join waits for the
 * task's end without consuming the handle; weft_task_start queues a lazy
 * one, the handle still the caller's.  A handle has one holder, and one
 * waiter at a time: a wait for a spawned task (await, join, take,
 * sync_wait) that finds another wait for it already parked returns
 * -EBUSY and changes nothing (the first gets the end); a handle shared
 * between threads must be waited on from one place at a time all the
 * same, since an overlap is not always seen (an await may be running the
 * task's body inline, and a lazy task is started by whoever waits).
 * weft_task_current returns a borrowed pointer, which names a task but is
 * not a handle.  An object
 * made by weft_X_create (pool, channel, coroutine) is the caller's until
 * weft_X_destroy returns 0.  An fd is owned by weft or borrowed
 * (weft/io.h).  Values sent through a channel, arguments and results are
 * the program's: weft never frees or dereferences them.
 *
 * Contexts.  "A task" is code running in a task's body (weft/task.h), on
 * whatever worker runs it now; "a plain thread" is any other thread, and
 * "a standalone coroutine" one made by weft_coro_create (weft/coro.h),
 * which runs on the thread that resumed it.  Each declaration says where
 * it may be called.  A task that waits is parked (its worker runs other
 * tasks); a plain thread or a standalone coroutine that waits blocks its
 * thread.  After any call that can wait, a task may be running on another
 * thread: do not keep the address of a thread-local variable (errno
 * included) across such a call.
 *
 * fork(2).  A pool's threads do not go to a child: in a child of a
 * process that has used weft, weft's objects made before the fork (pools,
 * tasks, channels, coroutines, sync objects others may hold) must not be
 * used, and, as in any multi-threaded process, the child may call only
 * async-signal-safe functions until it execs (POSIX).  A task may fork
 * and exec, and reaps the child with waitpid offloaded (weft_blocking,
 * weft/blocking.h): a plain waitpid blocks the worker, and the hook
 * (docs/foreign.md) does not take waitpid.
 *
 * Signals.  A pool's workers (and weft_blocking's threads) run the
 * program's code and start with the signal mask of the thread that made
 * them, as any pthread does: a program that takes a signal with sigwait
 * or a signalfd blocks it before it makes its first pool.  weft's own
 * threads that run none of the program's code (a pool's monitor, the
 * "weft-dump" thread, weft_pool_destroy_for's helper, weft_blocking's
 * watchdog) block every asynchronous signal, so a signal sent to the
 * process never lands on one of them: made before the program blocked
 * that signal, they would have taken its default action (ending the
 * process) instead of leaving it pending for the program's threads.
 *
 * Objects.  Objects the program keeps are opaque and made by
 * weft_X_create(&out, ...) (pool, channel, coroutine) or by
 * weft_task_create and weft_spawn (tasks).  Small ones meant to be
 * embedded by value (event, mutex, condition, semaphore, wait group) are
 * structs of opaque storage, set up with weft_X_init; their size is fixed
 * for the major version.
 *
 * Options.  An options struct may be NULL (all defaults); a zero field
 * means that field's default; reserved_ fields must be zero (a call that
 * finds one set answers -EINVAL, so a program built for a later version
 * that sets a newer option fails clearly instead of being ignored).
 *
 * Version: weft/version.h.  Everything declared under include/weft/ is the
 * stable API: within a major version no call, type or constant changes in
 * an incompatible way, and the shared library's soname carries the major
 * version.
 */
#ifndef WEFT_WEFT_H
#define WEFT_WEFT_H

#include <weft/version.h>
#include <weft/error.h>
#include <weft/coro.h>
#include <weft/pool.h>
#include <weft/task.h>
#include <weft/event.h>
#include <weft/timer.h>
#include <weft/blocking.h>
#include <weft/sync.h>
#include <weft/chan.h>
#include <weft/io.h>
#include <weft/inspect.h>

#endif /* WEFT_WEFT_H */
