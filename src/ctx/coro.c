/*
 * coro.c — standalone stackful coroutines (Lua's model, C error codes).
 *
 * Ownership protocol (DESIGN.md invariant 3): a coroutine's state word is
 * SUSPENDED (0), RUNNING, NORMAL or DEAD.  Only a compare-exchange from
 * SUSPENDED to RUNNING lets anyone switch to a coroutine, so two threads that
 * race to resume it cannot both win: the loser sees RUNNING and gets -EBUSY.
 * The CAS is acquire: it pairs with the release that made the coroutine
 * SUSPENDED, which carries its saved stack pointer and frame.
 *
 * Publish after save (invariant 1): a coroutine that stops running becomes
 * SUSPENDED (or DEAD) only after its registers are saved and it has left its
 * stack.  weft__ctx_jump stores the SUSPENDED word itself, on the far side
 * of the save (its `publish` argument); a finishing body marks itself DEAD in
 * a post-switch action on its resumer's stack, so a destroy racing on another
 * thread never frees a stack that is still in use.
 *
 * The chain: resume(co) makes the caller NORMAL and co's resumer; transfer
 * hands the resumer on; yield and return go to it.  Every coroutine on a
 * chain runs on the thread of the resume at its root, so the state words of
 * NORMAL coroutines are only touched by that thread (relaxed stores); only
 * SUSPENDED coroutines are visible to other threads.
 *
 * Thread-local state: the running coroutine lives in a thread-local pointer.
 * A coroutine may continue on another thread after any switch, and compilers
 * treat the thread pointer as constant within a function, so after a switch
 * this file reads thread-locals only through the noinline accessors below.
 * The public entry points are noinline too, so link-time optimisation cannot
 * merge the thread-local reads of two calls made on different threads.
 */
#include "coro.h"
#include "ctx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define WEFT_EXPORT __attribute__((visibility("default"), noinline))
#define TLS_IE __attribute__((tls_model("initial-exec")))

/* The running coroutine, or the thread's root record, or NULL before this
 * thread first resumed anything. */
static __thread struct weft_coro *tls_current TLS_IE;
/* Stands for the plain thread as a resumer: only sp and flags are used. */
static __thread struct weft_coro tls_root TLS_IE = {.flags = WEFT__CORO_ROOT};

__attribute__((noinline)) static struct weft_coro *current_fresh(void)
{
    return tls_current;
}

__attribute__((noinline)) static void set_current_fresh(struct weft_coro *c)
{
    tls_current = c;
}

static _Noreturn void die(const struct weft_coro *co, const char *what)
{
    fprintf(stderr, "weft: %s in coroutine '%s' (stack %zu KiB)\n", what,
            co->name, weft__stack_usable(&co->stack) / 1024);
    abort();
}

/* The canary check of unguarded stacks, done at every switch out. */
static void check_canary(const struct weft_coro *self)
{
    if (unlikely(!weft__stack_intact(&self->stack)))
        die(self, "stack overflow (canary broken)");
}

static int refused(uint32_t state)
{
    return state == WEFT_CORO_DEAD ? -ESRCH : -EBUSY;
}

/* A finished body's last step, run on its resumer's stack: only now that
 * nothing runs on the dead stack may anyone see DEAD and free it. */
static void *mark_dead(void *arg, void *val)
{
    struct weft_coro *co = arg;
    atomic_store_explicit(&co->state, WEFT_CORO_DEAD, memory_order_release);
    return val;
}

static void coro_entry(void *val, void *arg)
{
    struct weft_coro *co = arg;
    co->started = 1;
    void *ret = co->fn(val);

    /* We may be on another thread than the one that started us. */
    if (co->flags & WEFT__CORO_CANARY)
        check_canary(co);
    struct weft_coro *to = co->resumer;
    atomic_store_explicit(&to->state, WEFT_CORO_RUNNING, memory_order_relaxed);
    set_current_fresh(to);
    weft__ctx_jump_ontop(&co->sp, to->sp, ret, NULL, mark_dead, co);
    __builtin_unreachable();
}

WEFT_EXPORT int weft_coro_create(weft_coro **out, weft_fn fn,
                                 const weft_coro_opts *opts)
{
    static _Atomic unsigned stagger;
    weft__stack stack;

    if (!out || !fn)
        return -EINVAL;
    int err = weft__stack_alloc(&stack, opts ? opts->stack_size : 0);
    if (err)
        return err;

    /* The record goes at the top of the stack.  Successive coroutines put
     * it (and so their stack top) 0..7 cache lines lower, so that identical
     * stacks do not all map their hot frames to the same cache sets. */
    unsigned k = atomic_fetch_add_explicit(&stagger, 1, memory_order_relaxed);
    char *top = (char *)weft__stack_top(&stack) - (k % 8) * 64;
    struct weft_coro *co = (struct weft_coro *)(top - sizeof *co);
    co = (struct weft_coro *)((uintptr_t)co & ~(uintptr_t)63);

    memset(co, 0, sizeof *co);
    co->fn = fn;
    co->stack = stack;
    if (stack.canary)
        co->flags |= WEFT__CORO_CANARY;
    const char *name = opts && opts->name ? opts->name : "coro";
    strncpy(co->name, name, sizeof co->name - 1);
    co->sp = weft__ctx_make(co, coro_entry, co);
    atomic_init(&co->state, WEFT_CORO_SUSPENDED);
    *out = co;
    return 0;
}

/*
 * Switch from the current context to co, which the caller has claimed
 * (state RUNNING).  Returns `rc` of whoever comes back to us: 0 from a
 * yield or a return, which also stored the value in *out.
 *
 * The switches below are tail calls: the context switch returns straight
 * to our caller when control comes back, with nothing left to do here.
 */
static inline int run_claimed(struct weft_coro *co, void *in, void **out,
                              int rc)
{
    struct weft_coro *self = tls_current;
    if (!self)
        self = &tls_root;
    atomic_store_explicit(&self->state, WEFT_CORO_NORMAL, memory_order_relaxed);
    co->resumer = self;
    tls_current = co;
    /* Back here when co (or one it transferred to) yields or returns; that
     * side restored tls_current and our state, on this same thread. */
    return weft__ctx_jump(&self->sp, co->sp, in, out, NULL, rc);
}

WEFT_EXPORT int weft_coro_resume(weft_coro *co, void *in, void **out)
{
    if (unlikely(!co))
        return -EINVAL;
    uint32_t seen = WEFT_CORO_SUSPENDED;
    if (unlikely(!atomic_compare_exchange_strong_explicit(
            &co->state, &seen, WEFT_CORO_RUNNING, memory_order_acquire,
            memory_order_relaxed)))
        return refused(seen);
    return run_claimed(co, in, out, 0);
}

/*
 * Suspend self and continue `to`, which is already RUNNING and current.
 * Our SUSPENDED state is published by the switch once our registers are
 * saved.  Returns 0 with *in set when resumed, or -ECANCELED when resumed
 * by weft_coro_destroy.
 */
static inline int switch_out(struct weft_coro *self, struct weft_coro *to,
                             void *val, void **in)
{
    return weft__ctx_jump(&self->sp, to->sp, val, in,
                          (uint32_t *)&self->state, 0);
}

/* yield off the fast path: a plain thread, a cancelled coroutine, or an
 * unguarded stack whose canary must be checked. */
__attribute__((noinline)) static int yield_slow(struct weft_coro *self,
                                                void *out, void **in)
{
    if (!self || (self->flags & WEFT__CORO_ROOT))
        return -EPERM;
    if (self->flags & WEFT__CORO_CANCEL)
        return -ECANCELED;
    check_canary(self);
    struct weft_coro *to = self->resumer;
    atomic_store_explicit(&to->state, WEFT_CORO_RUNNING, memory_order_relaxed);
    set_current_fresh(to);
    return switch_out(self, to, out, in);
}

WEFT_EXPORT int weft_coro_yield(void *out, void **in)
{
    struct weft_coro *self = tls_current;
    if (unlikely(!self || self->flags))
        return yield_slow(self, out, in);
    struct weft_coro *to = self->resumer;
    atomic_store_explicit(&to->state, WEFT_CORO_RUNNING, memory_order_relaxed);
    tls_current = to;
    return switch_out(self, to, out, in);
}

WEFT_EXPORT int weft_coro_transfer(weft_coro *to, void *in, void **out)
{
    if (!to)
        return -EINVAL;
    struct weft_coro *self = tls_current;
    if (!self || (self->flags & WEFT__CORO_ROOT))
        return -EPERM;
    if (self->flags & WEFT__CORO_CANCEL)
        return -ECANCELED;
    uint32_t seen = WEFT_CORO_SUSPENDED;
    if (!atomic_compare_exchange_strong_explicit(
            &to->state, &seen, WEFT_CORO_RUNNING, memory_order_acquire,
            memory_order_relaxed))
        return refused(seen);
    if (self->flags & WEFT__CORO_CANARY)
        check_canary(self);
    to->resumer = self->resumer;
    tls_current = to;
    return switch_out(self, to, in, out);
}

WEFT_EXPORT int weft_coro_destroy(weft_coro *co)
{
    if (!co)
        return -EINVAL;
    /* Claim it, so nobody resumes it while we tear it down. */
    uint32_t seen = WEFT_CORO_SUSPENDED;
    if (!atomic_compare_exchange_strong_explicit(
            &co->state, &seen, WEFT_CORO_RUNNING, memory_order_acquire,
            memory_order_relaxed)) {
        if (seen != WEFT_CORO_DEAD)
            return -EBUSY;
        /* DEAD was published after its body left the stack (mark_dead). */
        atomic_thread_fence(memory_order_acquire);
    } else if (co->started) {
        /* Run it with cancellation: its pending yield/transfer and every
         * later one return -ECANCELED, so it runs to the end of its body.
         * Since it can no longer suspend, control comes back only when it
         * has returned. */
        co->flags |= WEFT__CORO_CANCEL;
        run_claimed(co, NULL, NULL, -ECANCELED);
    }
    weft__stack stack = co->stack;
    weft__stack_free(&stack);
    return 0;
}

WEFT_EXPORT weft_coro_state weft_coro_status(const weft_coro *co)
{
    if (!co)
        return WEFT_CORO_DEAD;
    return (weft_coro_state)atomic_load_explicit(
        &((struct weft_coro *)co)->state, memory_order_acquire);
}

WEFT_EXPORT weft_coro *weft_coro_current(void)
{
    struct weft_coro *c = current_fresh();
    if (!c || (c->flags & WEFT__CORO_ROOT))
        return NULL;
    return c;
}

WEFT_EXPORT const char *weft_coro_name(const weft_coro *co)
{
    return co ? co->name : "";
}
