/*
 * sched/thread.h — the scheduler's per-thread block (internal).
 *
 * Beside the ctx layer's block (ctx/coro.h: the running context), a thread
 * that the scheduler uses knows whether it is a pool worker and whether it
 * is inside weft_sync_wait.  Code that may run after a switch (a task may
 * have moved to another thread) reads it through weft__sched_fresh, never
 * through an address computed before the switch (base/compiler.h,
 * WEFT_OPAQUE).
 */
#ifndef WEFT_SCHED_THREAD_H
#define WEFT_SCHED_THREAD_H

#include <sys/types.h>
#include <time.h>

struct weft__worker;
struct weft__driver;

struct weft__sched_thread {
    struct weft__worker *worker;  /* the pool worker running here, or NULL */
    struct weft__driver *driver;  /* weft_sync_wait driving here, or NULL  */
    /* This thread's kernel id and CPU clock, for a worker's place it
     * borrows (pool.c, "Lending"); looked up at its first lend. */
    pid_t tid;                    /* 0 until looked up                     */
    clockid_t cpu_clock;
};

extern __thread struct weft__sched_thread weft__sched_tls
    __attribute__((tls_model("initial-exec")));

/* The calling thread's block, read afresh: for use after a switch. */
struct weft__sched_thread *weft__sched_fresh(void);

#endif /* WEFT_SCHED_THREAD_H */
