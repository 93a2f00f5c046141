/*
 * switch_aarch64_aapcs.S — context switch for AArch64, AAPCS64 (ELF).
 *
 * Follows the Procedure Call Standard for the Arm 64-bit Architecture,
 * section 6.1 "General-purpose registers" and 6.1.2 "SIMD and
 * floating-point registers": x19-x28, x29 (frame pointer), x30 (link
 * register), sp and the low 64 bits of v8-v15 (d8-d15) must survive a call.
 * The FPCR (rounding mode, flush-to-zero, exception enables) is saved too: a
 * context keeps its own floating-point control state when it changes thread.
 * Everything else is caller-saved and the compiler already assumes a call
 * clobbers it; FPSR holds only cumulative status flags and is not saved.
 *
 * Saved frame, at the saved stack pointer (16-byte aligned):
 *
 *        +-------------------+  higher addresses
 *   160  | d14      | d15    |
 *   144  | d12      | d13    |
 *   128  | d10      | d11    |
 *   112  | d8       | d9     |
 *    96  | x29      | x30    |  x30: where the context resumes
 *    80  | x27      | x28    |
 *    64  | x25      | x26    |
 *    48  | x23      | x24    |
 *    32  | x21      | x22    |
 *    16  | x19      | x20    |  fresh frame: entry function, argument
 *     0  | fpcr     | inbox  |  <- saved sp
 *        +-------------------+  lower addresses
 *
 * The context resumes through `br x30`, not `ret`: the two sides of a
 * ping-pong return to different call sites, which the return-address
 * stack would mispredict on every switch.  The FPCR is written only when
 * it differs (an msr to FPCR can stall the pipeline).  It holds control
 * bits only (the sticky exception flags live in FPSR, which is not saved),
 * so raised flags never make a switch write it.
 *
 * Why each instruction of weft__ctx_jump is there (36, and a msr when the
 * FPCRs differ):
 *   sub sp, 10 stp     the callee-saved registers, in pairs.
 *   mrs fpcr, stp      our FPCR, with the inbox (where the value sent to us
 *                      goes when we are resumed) in the same pair.
 *   mov, str           our sp to our slot (str cannot take sp).
 *   ldr, mov sp        the destination's sp from its slot.
 *   ldr, cmp, b.eq     its FPCR, written only when it differs.
 *   ldr, cbz, str      the value to its inbox, if it named one.
 *   mov w0             the code its call returns.
 *   10 ldp, add sp, br x30   its registers, and where it resumes.
 * weft__ctx_jump_publish and weft__ctx_yield add add and stlr (stlr takes
 * no offset).
 *
 * A context is named by its slot, the word that holds its saved stack
 * pointer while it is suspended (struct weft_coro's `sp`).  Each entry
 * takes its arguments in the registers its one hot caller already holds
 * them in, as on x86_64, so that the C side moves nothing; the publish
 * step and the code sent are each entry's own, not tested at run time.
 *
 * C prototypes and their register assignment (ctx.h):
 *   int weft__ctx_resume(void **co, void *val, void **inbox);
 *       x0 x1 x2                 (weft_coro_resume's own; the resumer's
 *                          slot is WEFT__CTX_BACK bytes past co's)
 *   int weft__ctx_yield(void *val, void **inbox, void **self);
 *       x0 x1 x2                 (weft_coro_yield's own; the resumer's slot
 *                          is WEFT__CTX_BACK bytes past self's)
 *   int weft__ctx_jump(void **to, void *val, void **inbox, void **from);
 *       x0 x1 x2 x3
 *   int weft__ctx_jump_rc(void **to, void *val, void **inbox, void **from,
 *                         int rc);              w4: the code sent
 *   int weft__ctx_jump_publish(void *val, void **inbox, void **to,
 *                              void **from);
 *       x0 x1 x2 x3
 *   int weft__ctx_jump_ontop(void **to, void *val, void **inbox,
 *                            void **from, void *(*fn)(void *, void *),
 *                            void *arg);
 * On arrival the destination's call returns the code in w0; the value
 * goes to its inbox (a fresh context's inbox is a word its entry reads).
 */
#include "ctx/ctx.h"

        .text

/* Save the caller's context below sp; \inbox is its inbox, the word
 * \fromoff bytes past \from its slot.  Leaves the fpcr value in x9. */
.macro SAVE_FRAME inbox, from, fromoff
        sub     sp, sp, #176
        stp     x19, x20, [sp, #16]
        stp     x21, x22, [sp, #32]
        stp     x23, x24, [sp, #48]
        stp     x25, x26, [sp, #64]
        stp     x27, x28, [sp, #80]
        stp     x29, x30, [sp, #96]
        stp     d8,  d9,  [sp, #112]
        stp     d10, d11, [sp, #128]
        stp     d12, d13, [sp, #144]
        stp     d14, d15, [sp, #160]
        mrs     x9, fpcr
        stp     x9, \inbox, [sp, #0]
        mov     x10, sp
        str     x10, [\from, #\fromoff]
.endm

/* sp is at the destination's frame and x9 holds our fpcr: load its fpcr
 * if it differs. */
.macro LOAD_FP
        ldr     x10, [sp, #0]
        cmp     x9, x10
        b.eq    1f
        msr     fpcr, x10
1:
.endm

/* Deliver \val to the destination's inbox, then restore its registers
 * and resume it; w0 is set between the two, by \code. */
.macro DELIVER_AND_RESUME val, code
        ldr     x3, [sp, #8]
        cbz     x3, 2f
        str     \val, [x3]
2:
        \code
        ldp     x19, x20, [sp, #16]
        ldp     x21, x22, [sp, #32]
        ldp     x23, x24, [sp, #48]
        ldp     x25, x26, [sp, #64]
        ldp     x27, x28, [sp, #80]
        ldp     x29, x30, [sp, #96]
        ldp     d8,  d9,  [sp, #112]
        ldp     d10, d11, [sp, #128]
        ldp     d12, d13, [sp, #144]
        ldp     d14, d15, [sp, #160]
        add     sp, sp, #176
        br      x30
.endm

.macro RC_ZERO
        mov     w0, wzr
.endm
.macro RC_W4
        mov     w0, w4
.endm
/* publish: the save is complete (release). */
.macro PUBLISH_X3
        add     x12, x3, #WEFT__CTX_PUBLISH
        stlr    wzr, [x12]
.endm
.macro PUBLISH_X2
        add     x12, x2, #WEFT__CTX_PUBLISH
        stlr    wzr, [x12]
.endm

/* One switch entry: the two slots are \tooff bytes past \to and
 * \fromoff past \from, \inbox and \val are ours and the value sent,
 * \code sets w0, \pub (if any) runs once our frame and sp are stored. */
.macro JUMP name, to, tooff, val, inbox, from, fromoff, code, pub=
        .globl  \name
        .hidden \name
        .type   \name, %function
        .p2align 4
\name:
        .cfi_startproc
        SAVE_FRAME \inbox, \from, \fromoff
        ldr     x11, [\to, #\tooff]
        mov     sp, x11                 /* now on the destination stack */
        \pub
        LOAD_FP
        DELIVER_AND_RESUME \val, \code
        .cfi_endproc
        .size   \name, .-\name
.endm

        JUMP    weft__ctx_jump, x0, 0, x1, x2, x3, 0, RC_ZERO
        JUMP    weft__ctx_jump_rc, x0, 0, x1, x2, x3, 0, RC_W4
        JUMP    weft__ctx_jump_publish, x2, 0, x0, x1, x3, 0, RC_ZERO, PUBLISH_X3
        /* resume's and yield's own: the resumer's slot is found from the
         * coroutine's, so that the C side computes no address. */
        JUMP    weft__ctx_resume, x0, 0, x1, x2, x0, WEFT__CTX_BACK, RC_ZERO
        JUMP    weft__ctx_yield, x2, WEFT__CTX_BACK, x0, x1, x2, 0, RC_ZERO, PUBLISH_X2

        .globl  weft__ctx_jump_ontop
        .hidden weft__ctx_jump_ontop
        .type   weft__ctx_jump_ontop, %function
        .p2align 4
weft__ctx_jump_ontop:
        .cfi_startproc
        SAVE_FRAME x2, x3, 0
        ldr     x11, [x0]
        mov     sp, x11                 /* destination stack, 16-aligned */
        mov     x0, x5                  /* fn(arg, val): val is in x1 */
        blr     x4
        mrs     x9, fpcr                /* fn preserved it: still ours */
        LOAD_FP
        DELIVER_AND_RESUME x0, RC_ZERO  /* fn's result is the value sent */
        .cfi_endproc
        .size   weft__ctx_jump_ontop, .-weft__ctx_jump_ontop

/*
 * First code of a fresh context, reached by the `br x30` that resumes the
 * frame weft__ctx_make built: the word at sp holds the value sent (the
 * fresh frame's inbox points at it), x19 the entry function, x20 its
 * argument.  The link register is marked undefined so unwinders and
 * debuggers stop here.
 */
        .globl  weft__ctx_entry
        .hidden weft__ctx_entry
        .type   weft__ctx_entry, %function
        .p2align 4
weft__ctx_entry:
        .cfi_startproc
        .cfi_undefined x30
        ldr     x0, [sp]
        mov     x1, x20
        blr     x19
        /* entry functions never return */
        bl      weft__ctx_entry_returned
        brk     #0
        .cfi_endproc
        .size   weft__ctx_entry, .-weft__ctx_entry

        .section .note.GNU-stack,"",%progbits
