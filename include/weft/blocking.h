/*
 * weft/blocking.h — running blocking code (getaddrinfo, a disk read, a
 * library that knows nothing of weft) without stalling a worker.
 *
 * The functions go to a process-wide set of "blocking threads", separate
 * from every weft_pool's workers and shared by all of them.  The policy:
 *
 *   - A call goes to an idle blocking thread, or a new one is started for
 *     it, as long as fewer than max_threads exist (default
 *     WEFT_BLOCKING_THREADS_DEFAULT, 1,024): up to that many calls run at
 *     once, and none waits for another to end.  A burst of slow calls
 *     therefore does not hold up a call that comes during it.
 *   - Once max_threads threads are all busy, a call waits, first come
 *     first served, for one to come free, at most queue_ns (default
 *     WEFT_BLOCKING_QUEUE_DEFAULT_NS, 10 s): a call still waiting then
 *     returns -EAGAIN and fn never runs.  That is the longest any call
 *     waits to start; its own timeout (weft_blocking_for) and a
 *     cancellation end the wait sooner, and a call that ends while it
 *     waits to start is withdrawn: fn never runs either.
 *   - A thread that has had nothing to do for idle_ns (default
 *     WEFT_BLOCKING_IDLE_DEFAULT_NS, 5 s) exits; threads start again as
 *     calls need them.
 *
 * The threads are detached: at process exit nobody waits for them, so an
 * exit neither hangs on idle ones nor waits for a function still running.
 *
 * Set-up: weft_blocking_configure, or, until the program calls it, three
 * environment variables, read once when the threads are first needed:
 *
 *   WEFT_BLOCKING_THREADS   max_threads: 1..WEFT_BLOCKING_THREADS_MAX
 *   WEFT_BLOCKING_IDLE_MS   idle time in ms; 0: idle threads never exit
 *   WEFT_BLOCKING_QUEUE_MS  queue bound in ms; 0: no bound
 *
 * A value that is not a number in range means the default.  A call of
 * weft_blocking_configure replaces what they set (the program's own word
 * wins, as a call of runtime.GOMAXPROCS does over the GOMAXPROCS variable
 * in Go).
 */
#ifndef WEFT_BLOCKING_H
#define WEFT_BLOCKING_H

#include <stdint.h>
#include <weft/coro.h>
#include <weft/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The default and the largest bound on blocking threads. */
#define WEFT_BLOCKING_THREADS_DEFAULT 1024u
#define WEFT_BLOCKING_THREADS_MAX 16384u
/* The default idle time (5 s) and queue bound (10 s), in ns. */
#define WEFT_BLOCKING_IDLE_DEFAULT_NS (5ull * 1000000000u)
#define WEFT_BLOCKING_QUEUE_DEFAULT_NS (10ull * 1000000000u)

/* The blocking threads' set-up; NULL or zero fields mean defaults
 * (weft/weft.h, "Options"). */
typedef struct weft_blocking_opts {
    unsigned max_threads; /* threads at most; 0: the default              */
    uint64_t idle_ns;     /* idle time before a thread exits; UINT64_MAX:
                             never                                        */
    uint64_t queue_ns;    /* longest wait to start once every thread is
                             busy; UINT64_MAX: no bound                   */
    void *reserved_[4];   /* must be zero                                 */
} weft_blocking_opts;

/*
 * weft_blocking_configure - set the blocking threads up as opts says (NULL:
 * every default), process-wide, from now on: a lower max_threads makes
 * the threads beyond it exit as soon as they are idle (a running fn is
 * never stopped), a higher one starts threads for the calls that wait; a
 * new queue bound counts for calls that start waiting from now on (and
 * none of those is refused before a call that waited before it).  Any
 * context.  Returns 0, -EINVAL (max_threads over
 * WEFT_BLOCKING_THREADS_MAX, a reserved field set: nothing changed).
 */
WEFT_API int weft_blocking_configure(const weft_blocking_opts *opts);

/*
 * weft_blocking - run fn(arg) where it may block, and wait for it.
 * In a task: fn runs on a blocking thread while the task is parked (its
 * worker runs other tasks); the task resumes when fn returns.  On a plain
 * thread, or in a standalone coroutine: fn is called right there (nothing
 * could end the wait sooner: weft_blocking_for runs it on a blocking
 * thread).  *result (may be NULL) gets fn's return value, only on 0.
 * Returns 0, -EINVAL (fn NULL), -ENOMEM (no memory for the request: fn
 * did not run), -EAGAIN (no blocking thread took fn: every one stayed busy
 * for the queue bound, or none exists and none could be started; fn did
 * not run), -ECANCELED (in a task that was cancelled: before the call, or
 * while fn waited to start, and then fn does not run; or while fn ran,
 * and then the call returns at once while fn runs on to its end on its
 * thread and its return value is dropped: a result that owns memory or a
 * descriptor is leaked then).
 */
WEFT_API int weft_blocking(weft_fn fn, void *arg, void **result);

/*
 * weft_blocking_for - as weft_blocking, waiting for fn at most timeout_ns,
 * in every context: on a plain thread or in a standalone coroutine too, fn
 * then runs on a blocking thread while the calling thread blocks (timeout
 * UINT64_MAX, no limit: it is called right there, as by weft_blocking);
 * also -ETIMEDOUT (before fn started, which then never runs; or while it
 * ran: it runs on to its end and its return value is dropped, as after a
 * cancellation; timeout 0: fn does not run), and -ENOMEM for no memory
 * for its timer as well (fn did not run).
 */
WEFT_API int weft_blocking_for(weft_fn fn, void *arg, void **result,
                               uint64_t timeout_ns);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_BLOCKING_H */
