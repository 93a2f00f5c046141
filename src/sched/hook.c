/*
 * sched/hook.c — the runtime's side of the interposition library
 * (src/hook/, docs/foreign.md): which calls it may turn into parks, and
 * the pin that keeps a task that parks inside one on its thread.
 *
 * These are exported for libweft-hook.so alone: they are declared in no
 * public header and may change with any release (the two are built and
 * installed together).
 *
 * Why a pin.  A library that blocks in read(2) reads errno afterwards,
 * and a compiler may keep the address of errno (__errno_location is
 * declared const) from before the call: if the task continued on another
 * thread, it would read that thread's errno.  The same holds for any
 * thread-local whose address its owner keeps across the call (OpenSSL's
 * error queue, a library's per-thread cache), and for a pthread mutex
 * whose owner is a thread id.  So a task that parks inside a hooked call
 * is pinned to the worker it parked on: its wake queues it on that
 * worker's own pinned queue (weft__pool_submit_pinned), which no other
 * worker takes from, and it continues on the same thread.  Between two
 * hooked calls it may move, as at any of weft's own calls.
 *
 * Only a pool's own workers pin.  A spare (sched/monitor.c) covers a
 * stuck worker for a while and then leaves: a task that makes a hooked
 * call there blocks the spare's thread in the real call instead, which
 * is what a spare is for.
 */
#include "base/compiler.h"
#include "base/direct.h"
#include "base/clock.h"
#include "sched/hook.h"
#include "sched/task.h"
#include "sched/thread.h"
#include "sched/wait.h"
#include "sched/worker.h"

#include <errno.h>
#include <pthread.h>

/* A child of fork(2) has one thread, the one that forked, whose block
 * still names the worker it was in the parent: its hooked calls would
 * park and run the copied pool's scheduler in the child (another task's
 * body ran there; a read waited for a poller that has no thread).  In
 * the child it is a plain thread: every hooked call is libc's, and the
 * parked task weft/weft.h forbids touching stays untouched. */
static void leave_pool_in_child(void)
{
    weft__sched_tls.worker = NULL;
    weft__sched_tls.driver = NULL;
    weft__sched_tls.tid = 0; /* the child's own, looked up again */
}

__attribute__((constructor)) static void watch_forks(void)
{
    pthread_atfork(NULL, NULL, leave_pool_in_child);
}

/* Whether a hooked call made here may park: the caller is a task (not a
 * standalone coroutine, not the scheduler), run by one of its pool's own
 * workers, outside weft's own calls (base/direct.h). */
WEFT_EXPORT int weft__hook_here(void)
{
    struct weft__worker *w = weft__sched_tls.worker;
    /* Not on a worker's place lent to a thread in weft_sync_wait (pool.c,
     * "Lending"): a pinned task must come back to the thread it parked
     * on, and that thread gives the place back when the task parks. */
    if (!w || w->index >= w->pool->nworkers || weft__sched_tls.driver ||
        weft__direct_now())
        return 0;
    return weft__task_current() != NULL;
}

/* Pin the calling task to its worker's thread until weft__hook_unpin.
 * Only where weft__hook_here said yes. */
WEFT_EXPORT void weft__hook_pin(void)
{
    struct weft__worker *w = weft__sched_tls.worker;
    w->pins++; /* its own thread's count: a worker with pins is not lent */
    weft__task_current()->pin = w;
}

WEFT_EXPORT void weft__hook_unpin(void)
{
    struct weft__task *t = weft__task_current();
    t->pin->pins--; /* on the pinned thread, so its own count */
    t->pin = NULL;
}

static const struct weft__wait_kind nap_kinds[] = {
    [WEFT__HOOK_NAP_MUTEX] = {WEFT__WR_MUTEX, "pthread mutex",
                              WEFT__WK_NOCANCEL, NULL},
    [WEFT__HOOK_NAP_JOIN] = {WEFT__WR_OTHER, "pthread join",
                             WEFT__WK_NOCANCEL, NULL},
};

/* Park the calling task for ns, pinned, whatever a cancel says: the wait
 * of a pthread_mutex_lock or a pthread_join, which cannot fail that way.
 * Returns 0, or -ENOMEM when the timer cannot be armed (nothing waited). */
WEFT_EXPORT int weft__hook_nap(uint64_t ns, enum weft__hook_nap_for what)
{
    struct weft__wait w;
    weft__wait_init_nocancel(&w, weft__deadline_after(ns), &nap_kinds[what],
                             NULL);
    uint32_t outcome = weft__wait_block(&w);
    return outcome == WEFT__W_TIMEDOUT && !w.nomem ? 0 : -ENOMEM;
}
