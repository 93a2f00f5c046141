/*
 * hook/join.c — pthread_join in a pool task.
 *
 * A library that starts a thread and joins it (libcurl's threaded
 * resolver: when a transfer times out or is cancelled during a lookup,
 * curl joins the resolver's thread, which runs until the lookup itself
 * gives up, seconds later) would block the worker in the join, and with
 * it every task pinned there.  So a pool task's pthread_join tries the
 * join (pthread_tryjoin_np: EBUSY while the thread runs, and nothing
 * changed), and while the thread runs, naps (pinned, as any park in a
 * hooked call) and tries again, the naps growing from 20 us to 1 ms.  A
 * cancel does not end the wait: a join cannot fail that way, and a thread
 * not joined would leak (weft__hook_nap).  What it costs: a join returns
 * up to a nap after the thread ended.
 *
 * The try is libc's, not the program's view of it: a sanitizer that
 * intercepts both (ThreadSanitizer) records the join once, in its own
 * pthread_join, which called this one.
 *
 * A join of the calling thread itself goes to libc (EDEADLK), since the
 * try would say EBUSY for ever; so does a join that cannot nap (no timer).
 */
#include "hook/real.h"
#include "hook/wait.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>

struct join_try {
    pthread_t th;
    void **ret;
};

static int try_join(void *arg)
{
    struct join_try *j = arg;
    return REAL(pthread_tryjoin_np)(j->th, j->ret);
}

HOOK_API int pthread_join(pthread_t th, void **ret)
{
    if (!weft__hook_here() || pthread_equal(th, pthread_self()))
        return REAL(pthread_join)(th, ret);
    struct join_try j = {th, ret};
    int r = try_join(&j);
    if (r != EBUSY)
        return r;
    r = hook_nap_retry(try_join, &j, WEFT__HOOK_NAP_JOIN);
    /* -1: no timer to nap on: block the thread, as libc. */
    return r == -1 ? REAL(pthread_join)(th, ret) : r;
}
