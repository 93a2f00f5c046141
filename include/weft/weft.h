/*
 * weft/weft.h — the umbrella header: includes every public weft header,
 * and states once the conventions that all of them follow.
 *
 * Errors.  A call that can fail returns a negative errno value on failure:
 * an int that is 0 on success, or (the byte-moving I/O calls weft_read and
 * weft_write) an ssize_t that is the byte count.  A call that fails has no
 * other effect: every object it was given is as it was, and a handle it
 * would have consumed is not consumed.  Each declaration lists every code
 * it returns; weft_strerror names any of them (weft/error.h).  Calls that
 * cannot fail return void or a value, and say what they do with NULL.
 *
 * Timeouts.  Every call that can wait has a plain form, which waits as
 * long as it takes, and a _for form with a last argument
 * `uint64_t timeout_ns`, which gives up with -ETIMEDOUT once timeout_ns
 * nanoseconds (of CLOCK_MONOTONIC) have passed since the call began, for
 * the whole call however many waits it makes.  A timeout of 0 never waits:
 * the call does what it can at once and returns -ETIMEDOUT where it would
 * have had to wait.  UINT64_MAX is no limit.  Every wait in a task can also
 * end with -ECANCELED (weft_task_cancel); a call that can proceed without
 * waiting does so even in a cancelled task.  (weft_sync_wait has no _for
 * form: the thread that calls it may be the one running the task.)
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
