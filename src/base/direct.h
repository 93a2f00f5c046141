/*
 * base/direct.h — weft's own calls to the libc functions that the
 * interposition library (libweft-hook, src/hook/, docs/foreign.md)
 * replaces (internal).
 *
 * The hook turns a blocking call made by a pool task into a park of that
 * task.  weft's own calls of those functions must never be turned into a
 * park: they are made inside the runtime, where a park would re-enter the
 * wait machinery (a stack cache's mutex taken during a spawn, a listening
 * socket's accept, a clock calibration's sleep).  So they are made
 * "direct": a counter in the calling thread says so, and the hook passes
 * a call straight to libc while it is not zero (weft__hook_here,
 * sched/hook.c).  A thread-local, not a task-local, is right here: none
 * of these calls parks, so the thread that raised the counter is the one
 * that lowers it, with no other task run in between.
 */
#ifndef WEFT_BASE_DIRECT_H
#define WEFT_BASE_DIRECT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

/* Relaxed atomic loads and stores, not increments: plain moves, as a
 * plain variable's would be, but ThreadSanitizer, which sees the tasks
 * that a thread runs in turn as fibers, does not take their accesses to
 * their thread's counter for a race. */
extern __thread _Atomic unsigned weft__direct_calls
    __attribute__((tls_model("initial-exec")));

static inline void weft__direct_begin(void)
{
    atomic_store_explicit(
        &weft__direct_calls,
        atomic_load_explicit(&weft__direct_calls, memory_order_relaxed) + 1,
        memory_order_relaxed);
}

static inline void weft__direct_end(void)
{
    atomic_store_explicit(
        &weft__direct_calls,
        atomic_load_explicit(&weft__direct_calls, memory_order_relaxed) - 1,
        memory_order_relaxed);
}

/* Whether the calling thread is inside one of weft's direct calls. */
static inline bool weft__direct_now(void)
{
    return atomic_load_explicit(&weft__direct_calls, memory_order_relaxed);
}

/* pthread_mutex_lock for weft's own mutexes (never a park; see above). */
static inline void weft__lock(pthread_mutex_t *m)
{
    weft__direct_begin();
    pthread_mutex_lock(m);
    weft__direct_end();
}

#endif /* WEFT_BASE_DIRECT_H */
