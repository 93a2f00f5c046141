/*
 * coro.c — standalone stackful coroutines (Lua's model, C error codes).
 *
 * Ownership protocol (docs/design.md, "One owner"): a coroutine's state
 * word is SUSPENDED (0), RUNNING, NORMAL or DEAD.  Only a claim (claim.h:
 * SUSPENDED to RUNNING, by exactly one thread, with acquire order) lets
 * anyone switch to a coroutine, so two threads that race to resume it
 * cannot both win: the loser sees RUNNING and gets -EBUSY.  The claim pairs
 * with the release that made the coroutine SUSPENDED, which carries its
 * saved stack pointer and frame.
 *
 * Publish after save (docs/design.md): a coroutine that stops running
 * becomes SUSPENDED (or DEAD) only after its registers are saved and it has
 * left its stack.  The switch stores the SUSPENDED word itself, on the
 * far side of the save (weft__ctx_yield, weft__ctx_jump_publish); a
 * finishing body marks
 * itself DEAD in a post-switch action on its resumer's stack, so a destroy
 * racing on another thread never frees a stack that is still in use.
 *
 * The chain: resume(co) makes the caller NORMAL and co's resumer; transfer
 * hands the resumer on; yield and return go to it.  The resumer's frame is
 * saved in co->resumer_sp, not in its own `sp`: yield then reaches it in
 * two dependent loads from the thread's `current` (co, co->resumer_sp)
 * instead of three (co, co->resumer, its sp), and those loads are the
 * critical path of a resume/yield ping-pong.  Nothing else needs a NORMAL
 * context's sp: only the one it resumed (or a transfer's successor, which
 * inherits resumer_sp) ever switches back to it.  Every coroutine on a
 * chain runs on the thread of the resume at its root, so the state words of
 * NORMAL coroutines are only touched by that thread (relaxed stores); only
 * SUSPENDED coroutines are visible to other threads.
 *
 * Thread-local state (struct weft__thread): a coroutine may continue on
 * another thread after any switch, and compilers treat the thread pointer
 * as constant within a function.  So no function here touches weft__tls
 * after a switch it made, except through the noinline accessor below; the
 * switches are tail calls, so most functions have no "after".  The public
 * entry points are noinline too, so link-time optimisation cannot merge the
 * thread-local reads of two calls made on different threads.
 */
#include "base/compiler.h"
#include "base/ident.h"
#include "ctx/claim.h"
#include "ctx/coro.h"
#include "ctx/ctx.h"
#include "ctx/overflow.h"
#include "ctx/sanitizer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Stands for "a plain thread that has not resumed anything yet": only its
 * flags are ever read. */
static struct weft_coro no_thread_root = {.flags = WEFT__CORO_ROOT};

__thread struct weft__thread weft__tls __attribute__((tls_model(
    "initial-exec"))) = {.current = &no_thread_root,
                         .claimer = &weft__no_claimer};

/*
 * For use after a switch: the thread-local block of the thread we are on
 * now.  Opaque (base/compiler.h), and an empty volatile asm, so that no
 * optimiser treats two calls as returning the same value.
 */
WEFT_OPAQUE struct weft__thread *weft__tls_fresh(void)
{
    struct weft__thread *t = &weft__tls;
    __asm__ volatile("" : "+r"(t));
    return t;
}

/* Append s to line[*n], keeping the last byte for the newline. */
static void put(char *line, size_t cap, size_t *n, const char *s)
{
    while (*s && *n < cap - 1)
        line[(*n)++] = *s++;
}

/* The line is built by hand and written at once: the stack overflow
 * handler calls this, where stdio (locks, buffers) is unsafe. */
static _Noreturn void die_line(const struct weft_coro *co, const char *what,
                               const char *note)
{
    char line[256], num[24];
    size_t n = 0, cap = sizeof line;
    char *d = num + sizeof num;
    size_t kib = weft__stack_usable(&co->stack) / 1024;
    *--d = '\0';
    do
        *--d = (char)('0' + kib % 10);
    while ((kib /= 10) != 0);

    put(line, cap, &n, "weft: ");
    put(line, cap, &n, what);
    put(line, cap, &n, " in coroutine '");
    put(line, cap, &n, co->name);
    put(line, cap, &n, "' (stack ");
    put(line, cap, &n, d);
    put(line, cap, &n, " KiB");
    if (note) {
        put(line, cap, &n, ", ");
        put(line, cap, &n, note);
    }
    put(line, cap, &n, ")");
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, n);
    (void)w; /* nothing better to do on the way to abort */
    abort();
}

_Noreturn void weft__coro_die(const struct weft_coro *co, const char *what)
{
    die_line(co, what, NULL);
}

_Noreturn void weft__coro_overflow(const struct weft_coro *co,
                                   const char *note)
{
    die_line(co, "stack overflow", note);
}

/* The canary check of unguarded stacks, done at every switch out. */
static void check_canary(const struct weft_coro *self)
{
    if (unlikely(!weft__stack_intact(&self->stack)))
        weft__coro_overflow(self, "canary broken");
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
    weft__san_arrived(weft__san_of(co));
    co->started = 1;
    void *ret = co->fn(val);

    /* We may be on another thread than the one that started us. */
    if (co->flags & WEFT__CORO_CANARY)
        check_canary(co);
    struct weft_coro *to = co->resumer;
    atomic_store_explicit(&to->state, WEFT_CORO_RUNNING, memory_order_relaxed);
    weft__tls_fresh()->current = to;
    weft__san_switch_last(weft__san_of(co), weft__san_of(to));
    weft__ctx_jump_ontop(&co->resumer_sp, ret, NULL, &co->sp, mark_dead, co);
    __builtin_unreachable();
}

WEFT_EXPORT int weft_coro_create(weft_coro **out, weft_fn fn,
                                 const weft_coro_opts *opts)
{
    static __thread unsigned stagger;
    weft__stack stack;

    if (!out || !fn || (opts && !weft__reserved_zero(opts->reserved_, 4)))
        return -EINVAL;
    int err = weft__stack_alloc(&stack, opts ? opts->stack_size : 0);
    if (err)
        return err;

    /* The record goes at the top of the stack, below the name's buffer.
     * Successive coroutines put it (and so their stack top) 0..7 cache
     * lines lower, so that identical stacks do not all map their hot
     * frames to the same cache sets. */
    char *top = (char *)weft__stack_top(&stack) - (stagger++ % 8) * 64;
    struct weft_coro *co =
        (struct weft_coro *)(top - WEFT__CORO_NAME_MAX - sizeof *co);
    co = (struct weft_coro *)((uintptr_t)co & ~(uintptr_t)63);
    char *name_buf = (char *)(co + 1);
    weft__san_fiber_new(weft__san_of(co), &stack);

    /* Every field is set here: no memset on the create path. */
    co->resumer = NULL;
    co->fn = fn;
    co->started = 0;
    co->stack = stack;
    co->flags = stack.canary ? WEFT__CORO_CANARY : 0;
    atomic_init(&co->id, weft__id_new());
    co->name = "coro";
    if (opts && opts->name) {
        co->name = weft__coro_name_copy(name_buf, opts->name);
    }
    co->sp = weft__ctx_make(co, coro_entry, co);
    atomic_init(&co->state, WEFT_CORO_SUSPENDED);
    /* The creating thread usually resumes it first: let it claim fast
     * (if it has a claim record yet). */
    atomic_init(&co->owner, weft__claimer_owner());
    *out = co;
    return 0;
}

/*
 * Switch from self, the current context, to co, which the caller has
 * claimed.  Returns, through the switch, the `rc` of whoever comes back to
 * us: 0 from a yield or a return, which also stored the value in *out.
 *
 * This is a tail call: when control comes back, the context switch returns
 * straight to our caller, on this same thread (co's side restored
 * weft__tls.current and our state).
 */
static inline int run_claimed(struct weft__thread *t, struct weft_coro *self,
                              struct weft_coro *co, void *in, void **out,
                              int rc)
{
    atomic_store_explicit(&self->state, WEFT_CORO_NORMAL, memory_order_relaxed);
    co->resumer = self;
    t->current = co;
    weft__san_switch(weft__san_of(self), weft__san_of(co));
    int back = rc ? weft__ctx_jump_rc(&co->sp, in, out, &co->resumer_sp, rc)
                  : weft__ctx_resume(&co->sp, in, out);
    weft__san_arrived(weft__san_of(self));
    return back;
}

/* Called before a thread gets its claim record, and so before any fast
 * resume on it: a plain thread's own root record replaces the shared one. */
void weft__thread_setup(struct weft__thread *t)
{
    if (t->current == &no_thread_root) {
        /* Before the first switch away from this thread's stack: a
         * coroutine that overflows here needs the handler's altstack. */
        weft__overflow_thread_init();
        t->root.flags = WEFT__CORO_ROOT;
        weft__san_fiber_thread(weft__san_of(&t->root));
        t->current = &t->root;
    }
}

static struct weft_coro *thread_self(struct weft__thread *t)
{
    weft__thread_setup(t);
    return t->current;
}

/* resume off the fast path: first use on this thread, a claim from another
 * thread than the last, no fast claims at all, or a refusal. */
__attribute__((noinline)) static int resume_slow(weft_coro *co, void *in,
                                                 void **out)
{
    if (!co)
        return -EINVAL;
    uint32_t seen = weft__claim_slow(co);
    if (seen != WEFT_CORO_SUSPENDED)
        return refused(seen);
    struct weft__thread *t = &weft__tls;
    return run_claimed(t, thread_self(t), co, in, out, 0);
}

WEFT_EXPORT int weft_coro_resume(weft_coro *co, void *in, void **out)
{
    struct weft__thread *t = &weft__tls;
    /* Never NULL (weft__no_claimer, claim.h).  A real record is set only
     * by a slow path that also set up t->current, and only a real record
     * is ever an owner, so a fast claim that wins had one. */
    struct weft__claimer *me = t->claimer;
    if (unlikely(!co))
        return resume_slow(co, in, out);
    uint32_t seen = weft__claim_fast(co, me);
    if (unlikely(seen != WEFT_CORO_SUSPENDED)) {
        if (seen == WEFT__CLAIM_NOT_OWNER)
            return resume_slow(co, in, out);
        return refused(seen);
    }
    return run_claimed(t, t->current, co, in, out, 0);
}

/*
 * Suspend self and continue `to`, which is already RUNNING and current,
 * from its frame saved at *slot.  Our SUSPENDED state is published by the
 * switch once our registers are saved.  Returns 0 with *in set when
 * resumed, or -ECANCELED when resumed by weft_coro_destroy.
 */
static inline int switch_out(struct weft_coro *self, struct weft_coro *to,
                             void **slot, void *val, void **in)
{
    weft__san_publish(&self->state);
    weft__san_switch(weft__san_of(self), weft__san_of(to));
    /* Publishes SUSPENDED to self->state (WEFT__CTX_PUBLISH, coro.h). */
    int back = slot == &self->resumer_sp
                   ? weft__ctx_yield(val, in, &self->sp)
                   : weft__ctx_jump_publish(val, in, slot, &self->sp);
    weft__san_arrived(weft__san_of(self));
    return back;
}

/* yield off the fast path: a plain thread, a cancelled coroutine, or an
 * unguarded stack whose canary must be checked. */
__attribute__((noinline)) static int yield_slow(struct weft_coro *self,
                                                void *out, void **in)
{
    /* A task suspends through its scheduler (weft_yield, weft_await...). */
    if (self->flags & (WEFT__CORO_ROOT | WEFT__CORO_HOSTED))
        return -EPERM;
    if (self->flags & WEFT__CORO_CANCEL)
        return -ECANCELED;
    check_canary(self);
    struct weft_coro *to = self->resumer;
    atomic_store_explicit(&to->state, WEFT_CORO_RUNNING, memory_order_relaxed);
    weft__tls.current = to;
    return switch_out(self, to, &self->resumer_sp, out, in);
}

WEFT_EXPORT int weft_coro_yield(void *out, void **in)
{
    struct weft__thread *t = &weft__tls;
    struct weft_coro *self = t->current;
    if (unlikely(self->flags))
        return yield_slow(self, out, in);
    struct weft_coro *to = self->resumer;
    atomic_store_explicit(&to->state, WEFT_CORO_RUNNING, memory_order_relaxed);
    t->current = to;
    return switch_out(self, to, &self->resumer_sp, out, in);
}

WEFT_EXPORT int weft_coro_transfer(weft_coro *to, void *in, void **out)
{
    if (!to)
        return -EINVAL;
    struct weft_coro *self = weft__tls.current;
    if (self->flags & (WEFT__CORO_ROOT | WEFT__CORO_HOSTED))
        return -EPERM;
    if (self->flags & WEFT__CORO_CANCEL)
        return -ECANCELED;
    uint32_t seen = weft__claim(to);
    if (seen != WEFT_CORO_SUSPENDED)
        return refused(seen);
    if (self->flags & WEFT__CORO_CANARY)
        check_canary(self);
    to->resumer = self->resumer;
    to->resumer_sp = self->resumer_sp;
    weft__tls.current = to;
    return switch_out(self, to, &to->sp, in, out);
}

WEFT_EXPORT int weft_coro_destroy(weft_coro *co)
{
    if (!co)
        return -EINVAL;
    /* Claim it, so nobody resumes it while we tear it down. */
    uint32_t seen = weft__claim(co);
    if (seen != WEFT_CORO_SUSPENDED) {
        /* DEAD was published after its body left the stack (mark_dead);
         * the claim read it with acquire. */
        if (seen != WEFT_CORO_DEAD)
            return -EBUSY;
    } else if (co->started) {
        /* Run it with cancellation: its pending yield/transfer and every
         * later one return -ECANCELED, so it runs to the end of its body.
         * It can no longer suspend, so control comes back here only once
         * it has returned, on this thread. */
        co->flags |= WEFT__CORO_CANCEL;
        /* The pending call fails, so its out-parameter stays as it was
         * (weft.h, "Errors"): its frame names no inbox now, and the switch
         * delivers nothing. */
        void *no_inbox = NULL;
        memcpy((unsigned char *)co->sp + WEFT__CTX_INBOX, &no_inbox,
               sizeof no_inbox);
        struct weft__thread *t = &weft__tls;
        run_claimed(t, thread_self(t), co, NULL, NULL, -ECANCELED);
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
    struct weft_coro *c = weft__tls_fresh()->current;
    return (c->flags & (WEFT__CORO_ROOT | WEFT__CORO_HOSTED)) ? NULL : c;
}

WEFT_EXPORT void weft_overflow_handler_disable(void)
{
    weft__overflow_disable();
}

WEFT_EXPORT const char *weft_coro_name(const weft_coro *co)
{
    return co ? co->name : "";
}

WEFT_EXPORT uint64_t weft_coro_id(const weft_coro *co)
{
    return co ? atomic_load_explicit(&co->id, memory_order_relaxed) : 0;
}
