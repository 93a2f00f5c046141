/*
 * weft/blocking.h — running blocking code (getaddrinfo, a disk read, a
 * library that knows nothing of weft) without stalling a worker.
 *
 * The functions go to a process-wide pool of "blocking threads", separate
 * from every weft_pool's workers.  It starts empty and grows on demand: a
 * thread is created when a call finds every existing one busy, up to a
 * bound; past the bound calls queue (FIFO) until a thread is free.  A
 * thread that has had nothing to do for a while exits.  Two environment
 * variables, read once at the first call from a task, set it up:
 *
 *   WEFT_BLOCKING_THREADS   the bound: 1..4096 (default 64)
 *   WEFT_BLOCKING_IDLE_MS   how long an idle thread waits for work before
 *                           it exits, in ms (default 5000); 0: idle
 *                           threads never exit
 *
 * A value that is not a number in range means the default.
 *
 * The threads are detached: at process exit nobody waits for them, so an
 * exit neither hangs on idle ones nor waits for a function still running.
 */
#ifndef WEFT_BLOCKING_H
#define WEFT_BLOCKING_H

#include <stdint.h>
#include <weft/coro.h>
#include <weft/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * weft_blocking - run fn(arg) where it may block, and wait for it.
 * In a task: fn runs on a blocking thread while the task is parked (its
 * worker runs other tasks); the task resumes when fn returns.  On a plain
 * thread, or in a standalone coroutine: fn is called right there.
 * *result (may be NULL) gets fn's return value.
 * Returns 0, -EINVAL (fn NULL), -ENOMEM (no memory for the request, or no
 * blocking thread exists and none could be started: fn did not run),
 * -ECANCELED (the calling task was cancelled: before the call, and then fn
 * does not run; or while it waited, and then it returns at once while fn
 * runs on to the end on its thread and its return value is dropped: a
 * result that owns memory or a descriptor is leaked then).
 */
WEFT_API int weft_blocking(weft_fn fn, void *arg, void **result);

/* weft_blocking_for - as weft_blocking, waiting for fn at most timeout_ns
 * (on a plain thread fn runs to its end regardless); also -ETIMEDOUT: fn
 * runs on to the end on its thread and its return value is dropped, as
 * after a cancellation (with timeout_ns 0, in a task, fn does not run). */
WEFT_API int weft_blocking_for(weft_fn fn, void *arg, void **result,
                               uint64_t timeout_ns);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_BLOCKING_H */
