/*
 * claim.c — the slow half of the claim protocol and the per-thread claim
 * records.  The protocol and its proof are at the top of claim.h.
 */
#include "ctx/claim.h"

#include "base/alloc.h"
#include "base/backoff.h"
#include "base/membarrier.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

struct weft__claimer weft__no_claimer;

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static bool membarrier_ok;
static pthread_key_t exit_key;

/* Records are never freed (no release): a slow claim may read the record
 * of a thread that has just exited.  An exited thread's record is
 * recycled through the depot (no per-thread list: a thread has one record
 * and frees it only as it exits); a thread that inherits it inherits fast
 * ownership of the coroutines the old one claimed last, which is harmless
 * since the old thread is gone. */
static struct weft__cache records = WEFT__CACHE_INIT(0, 1, 0, NULL);
static __thread struct weft__cache_local records_local;

static void record_release(void *p)
{
    struct weft__claimer *r = p;
    r->node.key = 0;
    weft__cache_put(&records, &records_local, &r->node);
}

static void setup(void)
{
    /* Without the key (no memory), records could not be recycled: then
     * every claim is a plain CAS, as without membarrier. */
    if (weft__membarrier_ok() &&
        weft__pthread_key_create(&exit_key, record_release) == 0)
        membarrier_ok = true;
}

struct weft__claimer *weft__claimer_get(void)
{
    struct weft__claimer *r = weft__tls.claimer;
    if (r != &weft__no_claimer)
        return r;
    pthread_once(&setup_once, setup);
    if (!membarrier_ok)
        return NULL;
    /* The fast resume path relies on this: a thread with a record has its
     * own root record. */
    weft__thread_setup(&weft__tls);

    struct weft__cache_node *n = weft__cache_get(&records, &records_local, 0);
    r = n ? (struct weft__claimer *)((char *)n -
                                     offsetof(struct weft__claimer, node))
          : NULL;
    if (!r) {
        r = weft__calloc(1, sizeof *r);
        if (!r)
            return NULL; /* this thread claims the slow way */
    }
    if (weft__pthread_setspecific(exit_key, r) != 0) {
        record_release(r);
        return NULL;
    }
    weft__tls.claimer = r;
    return r;
}

uint32_t weft__claim_slow(struct weft_coro *co)
{
    struct weft__claimer *me = weft__claimer_get();
    uint32_t seen = WEFT_CORO_SUSPENDED;

    if (!membarrier_ok) {
        /* No fast claims exist anywhere: the CAS alone decides. */
        atomic_compare_exchange_strong_explicit(
            &co->state, &seen, WEFT_CORO_RUNNING, memory_order_acquire,
            memory_order_acquire);
        return seen;
    }

    /* Serialise slow claims of co and stop new fast ones. */
    unsigned spins = 0;
    struct weft__claimer *o =
        atomic_load_explicit(&co->owner, memory_order_acquire);
    for (;;) {
        if (o == WEFT__CLAIM_LOCKED) {
            weft__backoff(&spins);
            o = atomic_load_explicit(&co->owner, memory_order_acquire);
            continue;
        }
        if (atomic_compare_exchange_weak_explicit(
                &co->owner, &o, WEFT__CLAIM_LOCKED, memory_order_acq_rel,
                memory_order_acquire))
            break;
    }

    /* A fast claim by the owner may be in flight: make its claiming store
     * visible to us (or our LOCKED visible to it), then let it finish. */
    if (o != NULL && o != me) {
        /* A membarrier that failed ran no barrier: try again (the kernel's
         * failure is an allocation's, which passes). */
        spins = 0;
        while (!weft__membarrier())
            weft__backoff(&spins);
        spins = 0;
        while (atomic_load_explicit(&o->claiming, memory_order_acquire) == co)
            weft__backoff(&spins);
    }

    /* Acquire on failure too: a destroy that sees DEAD frees the stack. */
    bool won = atomic_compare_exchange_strong_explicit(
        &co->state, &seen, WEFT_CORO_RUNNING, memory_order_acquire,
        memory_order_acquire);
    atomic_store_explicit(&co->owner, won && me ? me : o,
                          memory_order_release);
    return seen;
}
