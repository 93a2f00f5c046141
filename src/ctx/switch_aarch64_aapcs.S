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
 * C prototypes (ctx.h):
 *   int weft__ctx_jump(void **from_sp, void *to_sp, void *val, void **inbox,
 *                      uint32_t *publish, int rc);
 *   int weft__ctx_jump_ontop(void **from_sp, void *to_sp, void *val,
 *                            void **inbox, void *(*fn)(void *arg, void *val),
 *                            void *arg);
 * On arrival the destination gets rc in w0 and val in x2 (a fresh context's
 * entry takes val from x2).
 */
#include "ctx/ctx.h"

        .text

/* Save the caller's context below sp; x3 is its inbox.  Leaves the fpcr
 * value in x9. */
.macro SAVE_FRAME
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
        stp     x9, x3, [sp, #0]
        mov     x10, sp
        str     x10, [x0]
.endm

/* sp is at the destination's frame and x10 holds its fpcr, already
 * loaded: deliver x2 to its inbox, restore its registers, resume it. */
.macro DELIVER_AND_RESUME
        ldr     x3, [sp, #8]
        cbz     x3, 1f
        str     x2, [x3]
1:
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

        .globl  weft__ctx_jump
        .hidden weft__ctx_jump
        .type   weft__ctx_jump, %function
        .p2align 4
weft__ctx_jump:
        .cfi_startproc
        SAVE_FRAME
        mov     sp, x1                  /* now on the destination stack */
        cbz     x4, 1f
        stlr    wzr, [x4]               /* publish: the save is complete */
1:
        mov     w0, w5
        ldr     x10, [sp, #0]
        cmp     x9, x10
        b.eq    2f
        msr     fpcr, x10
2:
        DELIVER_AND_RESUME
        .cfi_endproc
        .size   weft__ctx_jump, .-weft__ctx_jump

        .globl  weft__ctx_jump_ontop
        .hidden weft__ctx_jump_ontop
        .type   weft__ctx_jump_ontop, %function
        .p2align 4
weft__ctx_jump_ontop:
        .cfi_startproc
        SAVE_FRAME
        mov     sp, x1                  /* destination stack, 16-aligned */
        mov     x0, x5                  /* fn(arg, val) */
        mov     x1, x2
        blr     x4
        mov     x2, x0                  /* fn's result is the value sent */
        mov     w0, #0
        ldr     x10, [sp, #0]
        mrs     x9, fpcr                /* fn preserved it: still ours */
        cmp     x9, x10
        b.eq    2f
        msr     fpcr, x10
2:
        DELIVER_AND_RESUME
        .cfi_endproc
        .size   weft__ctx_jump_ontop, .-weft__ctx_jump_ontop

/*
 * First code of a fresh context, reached by the `br x30` that resumes the
 * frame weft__ctx_make built: x2 holds the value sent, x19 the entry
 * function, x20 its argument.  The link register is marked undefined so
 * unwinders and debuggers stop here.
 */
        .globl  weft__ctx_entry
        .hidden weft__ctx_entry
        .type   weft__ctx_entry, %function
        .p2align 4
weft__ctx_entry:
        .cfi_startproc
        .cfi_undefined x30
        mov     x0, x2
        mov     x1, x20
        blr     x19
        /* entry functions never return */
        bl      weft__ctx_entry_returned
        brk     #0
        .cfi_endproc
        .size   weft__ctx_entry, .-weft__ctx_entry

        .section .note.GNU-stack,"",%progbits
