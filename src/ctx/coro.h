/*
 * ctx/coro.h — the coroutine record and the per-thread block of the ctx
 * layer (internal), shared with the layers above.
 */
#ifndef WEFT_CORO_INTERNAL_H
#define WEFT_CORO_INTERNAL_H

#include <weft/coro.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/compiler.h"
#include "base/utf8.h"
#include "ctx/ctx.h"
#include "ctx/sanitizer.h"
#include "ctx/stack.h"

/* flags: anything set sends weft_coro_yield off its fast path. */
enum {
    WEFT__CORO_ROOT = 1u << 0,    /* a thread's own stack, not a coroutine */
    WEFT__CORO_CANCEL = 1u << 1,  /* being destroyed: waits end -ECANCELED */
    WEFT__CORO_CANARY = 1u << 2,  /* unguarded stack: check at switch-out  */
    /* Run by a scheduler of a layer above (a task, sched/): resume,
     * yield, transfer and destroy refuse it, and weft_coro_current does
     * not name it. */
    WEFT__CORO_HOSTED = 1u << 3,
    /* A layer above watches this context's switches (sched/trace.c): the
     * scheduler's switch-out takes its slow path, which already tests
     * for CANARY, so watching costs the fast path nothing. */
    WEFT__CORO_OBSERVED = 1u << 4,
};

#define WEFT__CORO_NAME_MAX 32

/* Copy at most the first WEFT__CORO_NAME_MAX - 1 bytes of name into buf
 * (a name buffer, see `name` below), NUL-terminated, never splitting a
 * UTF-8 character (base/utf8.h); name may lie in buf. */
static inline const char *weft__coro_name_copy(char *buf, const char *name)
{
    size_t n = weft__utf8_prefix(name, WEFT__CORO_NAME_MAX - 1);
    memmove(buf, name, n);
    buf[n] = '\0';
    return buf;
}

/*
 * The record sits at the top of the coroutine's own stack mapping, so a
 * coroutine costs one allocation and its record shares the first stack page.
 */
struct weft__claimer;

struct weft_coro {
    void *sp;                 /* saved stack pointer while not running     */
    _Atomic uint32_t state;   /* weft_coro_state; SUSPENDED must be 0      */
    uint16_t flags;           /* WEFT__CORO_*; written by its owner only   */
    uint16_t started;         /* body entered (published by the state CAS) */
    /* Process-unique (base/ident.h), never 0; set when the record is made
     * and not changed after (atomic for the observers' racy reads). */
    _Atomic uint64_t id;
    struct weft_coro *resumer;/* where yield and return go                 */
    /* The resumer's saved sp, while this one runs: the switch that resumes
     * saves the resumer's frame here rather than in the resumer's own
     * `sp`, so that yield finds it one load nearer (coro.c). */
    void *resumer_sp;
    /* thread that claimed it last: its fast claim path (claim.h) */
    _Atomic(struct weft__claimer *) owner;
    weft_fn fn;
    weft__stack stack;
    /* A static default, or a buffer of WEFT__CORO_NAME_MAX bytes that
     * lives as long as the record: above the record on a standalone
     * coroutine's stack (coro.c), in the record's chunk for a task
     * (sched/records.c), out of the record, so that a record that is
     * never named never touches it. */
    const char *name;
#ifdef WEFT__SAN_FIBERS
    struct weft__san_fiber san; /* for the sanitizers (sanitizer.h)      */
#endif
};

/*
 * Per-thread state, one block so the hot paths compute its address once.
 * `current` is never NULL: until the thread first resumes something it
 * points at a shared, read-only-in-practice record flagged ROOT, which makes
 * yield and transfer refuse (-EPERM) without a NULL test.  The first resume
 * on a thread (slow path) points it at the thread's own `root`.
 * After a switch, code may be on another thread: read this block afresh
 * (see coro.c), never through an address computed before the switch.
 * (The scheduler keeps its own per-thread block: sched/thread.h.)
 */
struct weft__thread {
    struct weft_coro *current;       /* running coroutine, or a root     */
    struct weft__claimer *claimer;   /* fast-claim record, or
                                        weft__no_claimer (claim.h)      */
    struct weft_coro root;           /* this thread as a resumer (and the
                                        context a scheduler above runs
                                        its loop in)                    */
    /* Bumped by a scheduler above at each of its scheduling points
     * (sched/: the monitor's sign of life, worker.h).  Written by this
     * thread only, a plain word (an add to memory on x86); others read it
     * racily, as a sample. */
    uint64_t switches;
};

extern __thread struct weft__thread weft__tls
    __attribute__((tls_model("initial-exec")));

/* Give the calling thread its own root record (idempotent). */
void weft__thread_setup(struct weft__thread *t);

/* The calling thread's block, read afresh: for use after a switch. */
struct weft__thread *weft__tls_fresh(void);

/* Print "weft: WHAT in coroutine 'NAME' (stack N KiB)" and abort.
 * Async-signal-safe: one write(2), no stdio. */
_Noreturn void weft__coro_die(const struct weft_coro *co, const char *what);

/* The same for a stack overflow, found by the guard's fault handler or
 * by a broken canary; `note` (or NULL) says how:
 * "weft: stack overflow in coroutine 'NAME' (stack N KiB[, NOTE])".
 * Async-signal-safe. */
_Noreturn void weft__coro_overflow(const struct weft_coro *co,
                                   const char *note);

_Static_assert(WEFT_CORO_SUSPENDED == 0,
               "the context switch publishes SUSPENDED by storing 0");
_Static_assert(offsetof(struct weft_coro, resumer_sp) -
                   offsetof(struct weft_coro, sp) == WEFT__CTX_BACK,
               "weft__ctx_resume and weft__ctx_yield find the resumer's "
               "slot WEFT__CTX_BACK bytes past the coroutine's");
_Static_assert(offsetof(struct weft_coro, state) -
                       offsetof(struct weft_coro, sp) == WEFT__CTX_PUBLISH &&
                   sizeof(((struct weft_coro *)0)->state) == 4,
               "weft__ctx_jump_publish stores to the word WEFT__CTX_PUBLISH "
               "bytes past the sp slot");

#endif /* WEFT_CORO_INTERNAL_H */
