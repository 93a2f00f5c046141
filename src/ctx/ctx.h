/*
 * ctx.h — the machine context switch (internal).
 *
 * A suspended context is nothing but a stack pointer: the callee-saved
 * registers and the floating-point control state sit in a frame at that
 * address, pushed by weft__ctx_jump and its variants.  The frame layouts
 * are described at the top of each architecture's .S file; the offsets
 * below are the ones C needs to build a fresh frame, and the .S files
 * include this header so the two cannot drift.
 *
 * Post-switch work (docs/design.md, "Publish after save"): nothing may
 * make a context visible to another thread until its registers are saved.
 * Two hooks run on the destination side of a switch, after the save:
 *   - weft__ctx_jump_publish's word: the switch stores 0 to it with release
 *     order after saving.  Coroutines use it to set their state word to
 *     SUSPENDED (== 0), so a thread that sees SUSPENDED by an acquire CAS
 *     also sees the saved stack pointer and frame.
 *   - weft__ctx_jump_ontop: calls fn(arg, val) on the destination stack
 *     before the destination continues (Boost.Context's ontop); its return
 *     value is what the destination receives.  Used to free a finished
 *     context's stack after leaving it, or to publish a waiter.
 */
#ifndef WEFT_CTX_H
#define WEFT_CTX_H

/* A context is named by its slot: the word that holds its saved stack
 * pointer while it is suspended.  weft__ctx_jump_publish stores 0 to the
 * 32-bit word this many bytes past the slot of the context it leaves
 * (struct weft_coro's state, coro.h checks the offset). */
#define WEFT__CTX_PUBLISH 8
/* weft__ctx_resume saves the resumer's frame in the slot this many bytes
 * past the resumed coroutine's own, and weft__ctx_yield continues it from
 * there (struct weft_coro's resumer_sp, coro.h checks the offset). */
#define WEFT__CTX_BACK 32

#if defined(__x86_64__)
/* Offsets in the saved frame (see switch_x86_64_sysv.S). */
#define WEFT__CTX_FP (-8)      /* mxcsr (u32), x87 control word (u16):    */
                               /* below the saved sp, in the red zone     */
#define WEFT__CTX_INBOX 0      /* where the value sent to us is stored   */
#define WEFT__CTX_R12 8
#define WEFT__CTX_RBX 40
#define WEFT__CTX_RBP 48
#define WEFT__CTX_RET 56
#define WEFT__CTX_FRAME 64     /* bytes above sp; the saved sp is 16-aligned */
#define WEFT__CTX_ENTRY_FN WEFT__CTX_RBX
#define WEFT__CTX_ENTRY_ARG WEFT__CTX_R12
#elif defined(__aarch64__)
/* Offsets in the saved frame (see switch_aarch64_aapcs.S). */
#define WEFT__CTX_FP 0         /* fpcr (u64)                              */
#define WEFT__CTX_INBOX 8
#define WEFT__CTX_X19 16       /* x19..x28 at 16..88                      */
#define WEFT__CTX_X20 24
#define WEFT__CTX_X29 96       /* frame pointer                          */
#define WEFT__CTX_RET 104      /* x30, the link register                 */
#define WEFT__CTX_D8 112       /* d8..d15 at 112..168                     */
#define WEFT__CTX_FRAME 176    /* bytes; the saved sp is 16-aligned       */
#define WEFT__CTX_ENTRY_FN WEFT__CTX_X19
#define WEFT__CTX_ENTRY_ARG WEFT__CTX_X20
#else
#error "weft: no context switch for this architecture"
#endif

#ifndef __ASSEMBLER__
#include <stdint.h>

/*
 * weft__ctx_jump - save the running context, store its stack pointer in
 * *from, and continue the context saved at *to.
 *
 * The destination's own pending jump then returns 0, after storing `val`
 * to the `inbox` it passed (if not NULL).  A fresh context instead starts
 * its entry function with `val`.
 *
 * This call returns when some other context jumps back here, with what that
 * one sent.  Callers tail-call it where they can: the switch then returns
 * straight to their caller, with nothing left to do on this side.
 *
 * The argument order is weft_coro_resume's (co, in, out), as for
 * weft__ctx_resume below: the entries take their arguments where their
 * hot caller already holds them.
 */
int weft__ctx_jump(void **to, void *val, void **inbox, void **from);

#if defined(__x86_64__)
/* Non-zero where the switch loads the destination's MXCSR without
 * comparing it with ours first (see switch_x86_64_sysv.S): set once, from
 * the CPU's vendor, before main.  Both ways are correct on any x86_64. */
extern unsigned char weft__ctx_mxcsr_load
    __attribute__((visibility("hidden")));

/* Choose the way (and the entries that go with it); for ctx.c's start-up
 * and for tests, before any switch. */
void weft__ctx_mxcsr_choose(int load);
#endif

/* weft__ctx_jump, but the destination's jump returns rc. */
int weft__ctx_jump_rc(void **to, void *val, void **inbox, void **from,
                      int rc);

/*
 * weft__ctx_jump_publish - weft__ctx_jump, and once the save is complete,
 * 0 is stored with release order to the 32-bit word WEFT__CTX_PUBLISH
 * bytes past `from`.  Coroutines use it to set their state word to
 * SUSPENDED (== 0), so a thread that sees SUSPENDED by an acquire CAS also
 * sees the saved stack pointer and frame.  The argument order is
 * weft_coro_yield's (out, in).
 */
int weft__ctx_jump_publish(void *val, void **inbox, void **to, void **from);

/*
 * weft_coro_resume's and weft_coro_yield's own entries, which find the
 * second slot from the first (WEFT__CTX_BACK):
 *   weft__ctx_resume - weft__ctx_jump(co, val, inbox, co + BACK)
 *   weft__ctx_yield - weft__ctx_jump_publish(val, inbox, self + BACK, self)
 */
#if defined(__x86_64__)
/* Two builds of each on x86_64, one per way of restoring MXCSR (see
 * switch_x86_64_sysv.S), so that the hot switch does not test which: the
 * names are pointers to the pair in use (weft__ctx_mxcsr_choose).  The
 * call syntax is the same. */
int weft__ctx_resume_cmp(void **co, void *val, void **inbox);
int weft__ctx_resume_load(void **co, void *val, void **inbox);
int weft__ctx_yield_cmp(void *val, void **inbox, void **self);
int weft__ctx_yield_load(void *val, void **inbox, void **self);
extern int (*weft__ctx_resume)(void **co, void *val, void **inbox)
    __attribute__((visibility("hidden")));
extern int (*weft__ctx_yield)(void *val, void **inbox, void **self)
    __attribute__((visibility("hidden")));
#else
int weft__ctx_resume(void **co, void *val, void **inbox);
int weft__ctx_yield(void *val, void **inbox, void **self);
#endif

/* A post-switch action: runs on the destination stack, after the save; its
 * result is the value the destination receives. */
typedef void *(*weft__ctx_action)(void *arg, void *val);

/*
 * weft__ctx_jump_ontop - like weft__ctx_jump, but fn(arg, val) runs on the
 * destination stack first and its result is what the destination
 * receives.  fn may publish the context just saved (it is complete) and
 * may free it if it will never run again.
 */
int weft__ctx_jump_ontop(void **to, void *val, void **inbox, void **from,
                         weft__ctx_action fn, void *arg);

/*
 * A fresh context's entry: the first jump to it calls entry(val, arg).
 * entry must never return (it leaves by jumping away for good); if it
 * does, the process aborts with a message.
 */
typedef void (*weft__ctx_entry_fn)(void *val, void *arg);

/*
 * weft__ctx_make - build a fresh context's frame below stack_top (which
 * need not be aligned) and return its stack pointer.  The fresh context
 * starts with the calling thread's floating-point control state.
 */
void *weft__ctx_make(void *stack_top, weft__ctx_entry_fn entry, void *arg);

#endif /* !__ASSEMBLER__ */
#endif /* WEFT_CTX_H */
