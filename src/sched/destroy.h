/*
 * sched/destroy.h — weft_pool_destroy's two halves (internal): the
 * shutdown itself (pool.c, which owns the pool's records) and the public
 * calls, which decide how the destroyer waits (destroy.c).
 */
#ifndef WEFT_SCHED_DESTROY_H
#define WEFT_SCHED_DESTROY_H

#include <weft/pool.h>

#include <stdbool.h>

#include "sched/parker.h"

/*
 * weft__pool_destroy - shut p down and free it (pool.c, "Shutdown", steps
 * 1 to 5, less the caller's checks): claim `destroying`, make `parker` the
 * destroyer (the worker that finds the pool drained unparks it), set
 * `shutdown`, wake the workers, then wait_stop(p, arg).  That returns 0
 * once `stop` is set, and then the workers are joined and p is freed; or
 * an error once it gave up waiting, after it made `parker` no longer the
 * destroyer and released `destroying` (weft__pool_give_up): p is left to
 * drain, with `shutdown` set.  Returns 0, -EBUSY (another destroy is in
 * progress: nothing done), or wait_stop's error.
 */
int weft__pool_destroy(weft_pool *p, struct weft__parker *parker,
                       int (*wait_stop)(weft_pool *p, void *arg), void *arg);

/*
 * weft__pool_stop_or_give_up - the destroyer's last look before it gives
 * up waiting: under idle_lock, as a parking worker's, sets `stop` (and
 * wakes the workers) if p is drained; if `stop` is not set then, makes
 * `sink` the destroyer, so that no unpark of the old one can come any
 * more.  Returns whether `stop` is set (the destroy goes on).
 */
bool weft__pool_stop_or_give_up(weft_pool *p, struct weft__parker *sink);

#endif /* WEFT_SCHED_DESTROY_H */
