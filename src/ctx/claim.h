/*
 * claim.h — deciding who may start a suspended coroutine (internal).
 *
 * docs/design.md, "One owner": one owner per coroutine at a time; a second
 * resumer gets -EBUSY, never a double run.  A compare-exchange on the state
 * word gives that, but a locked instruction drains the store buffer, and
 * right after a context switch (which just pushed a frame) that costs as
 * much as the whole switch on this hardware (measured: 15 ns against 7 ns a
 * switch).  Nearly every resume comes from the thread that resumed the
 * coroutine last, so that case is made free of atomic read-modify-writes
 * with an asymmetric Dekker protocol, and a claim from another thread pays
 * a membarrier(2) system call instead (the technique of liburcu's
 * urcu-memb flavour).
 *
 * Each thread that claims has a record (struct weft__claimer, type-stable:
 * never freed, recycled when its thread exits).  A coroutine's `owner` is
 * the record of the thread that claimed it last, LOCKED while a slow claim
 * is in progress, or NULL.
 *
 * Fast claim, by the thread T whose record is co->owner:
 *     T.claiming = co                 (F1)
 *     compiler barrier
 *     if co->owner != T: T.claiming = NULL, go slow
 *     s = co->state; if s == SUSPENDED: co->state = RUNNING
 *     T.claiming = NULL               (release)
 * Slow claim, by any thread U:
 *     o = co->owner; CAS co->owner o -> LOCKED (waiting while LOCKED)
 *     membarrier()                    (a full barrier on every thread)
 *     wait while o.claiming == co     (acquire)
 *     CAS co->state SUSPENDED -> RUNNING
 *     co->owner = U if it won, else o (release)
 *
 * Why a fast and a slow claim never both win: membarrier puts a full
 * barrier into T's instruction stream somewhere during the call.  If it
 * lands before T's F1, T's later read of co->owner sees LOCKED and T goes
 * slow (and waits for U to finish).  If it lands after F1, U's read of
 * T.claiming sees co and U waits until T stored NULL with release, after
 * T's state store: U's CAS then sees RUNNING and fails.  Only T writes
 * T.claiming, and only the record named by co->owner takes the fast path,
 * so no two fast claims race; slow claims are serialised by LOCKED and
 * decided by the CAS.  While T owns co, co runs on T's chain (resume and
 * transfer run the target on the calling thread), so every state change T
 * reads in its fast path was made by T itself and needs no acquire.
 *
 * Where membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) is unavailable, no
 * record is ever made, owners stay NULL, and every claim is a plain CAS.
 *
 * A thread without a record has weft__no_claimer instead of NULL, so that
 * the fast path needs no test for it: no coroutine's owner is ever
 * weft__no_claimer, so a fast claim with it always goes slow.  Its
 * `claiming` word is written by all such threads and read by nobody.
 */
#ifndef WEFT_CLAIM_H
#define WEFT_CLAIM_H

#include <stdatomic.h>
#include <stdint.h>

#include "base/cache.h"
#include "ctx/coro.h"

struct weft__claimer {
    _Atomic(struct weft_coro *) claiming; /* written by its thread only */
    struct weft__cache_node node;         /* while free (claim.c)       */
};

#define WEFT__CLAIM_LOCKED ((struct weft__claimer *)1)

/* A thread's claimer until it has a record (never anyone's owner). */
extern struct weft__claimer weft__no_claimer;

/* The record to name as a new coroutine's owner: the calling thread's,
 * or NULL if it has none. */
static inline struct weft__claimer *weft__claimer_owner(void)
{
    struct weft__claimer *me = weft__tls.claimer;
    return me == &weft__no_claimer ? NULL : me;
}

/* The calling thread's record, made on first use; NULL where the fast path
 * is unavailable (its weft__tls.claimer stays weft__no_claimer). */
struct weft__claimer *weft__claimer_get(void);

/* Slow claim, by any thread; same contract as weft__claim_fast's result. */
uint32_t weft__claim_slow(struct weft_coro *co);

/* Result of weft__claim_fast when co->owner is not `me`: claim slowly. */
#define WEFT__CLAIM_NOT_OWNER 0xffu

/*
 * weft__claim_fast - try to move co from SUSPENDED to RUNNING on the fast
 * path, where `me` is the calling thread's weft__tls.claimer.
 * Returns WEFT_CORO_SUSPENDED (0) if the caller now owns co, the state that
 * refused it, or WEFT__CLAIM_NOT_OWNER (then call weft__claim_slow).
 */
static inline uint32_t weft__claim_fast(struct weft_coro *co,
                                        struct weft__claimer *me)
{
    uint32_t s = WEFT__CLAIM_NOT_OWNER;
    atomic_store_explicit(&me->claiming, co, memory_order_relaxed);
    /* StoreLoad against a slow claim: compiler-only here, made a full
     * barrier by the slow side's membarrier (see the top). */
    atomic_signal_fence(memory_order_seq_cst);
    if (__builtin_expect(
            atomic_load_explicit(&co->owner, memory_order_relaxed) == me, 1)) {
        s = atomic_load_explicit(&co->state, memory_order_relaxed);
        if (s == WEFT_CORO_SUSPENDED)
            atomic_store_explicit(&co->state, WEFT_CORO_RUNNING,
                                  memory_order_relaxed);
    }
    /* Release: a slow claim that sees NULL sees our state store. */
    atomic_store_explicit(&me->claiming, NULL, memory_order_release);
    return s;
}

/* weft__claim - either path; returns 0 if the caller now owns co, else the
 * state that refused it. */
static inline uint32_t weft__claim(struct weft_coro *co)
{
    uint32_t s = weft__claim_fast(co, weft__tls.claimer);
    if (__builtin_expect(s != WEFT__CLAIM_NOT_OWNER, 1))
        return s;
    return weft__claim_slow(co);
}

#endif /* WEFT_CLAIM_H */
