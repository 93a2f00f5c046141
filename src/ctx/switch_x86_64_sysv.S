/*
 * switch_x86_64_sysv.S — context switch for x86_64, System V ABI (ELF).
 *
 * Follows the System V AMD64 psABI, section 3.2.1 "Registers": rbx, rbp,
 * r12-r15 and rsp belong to the caller and must survive a call, as do the
 * control bits of MXCSR and the x87 control word (rounding mode, precision,
 * exception masks).  A switch is a call that returns on another stack, so it
 * saves exactly those.  Everything else is caller-saved and the compiler
 * already assumes a call clobbers it.  The MXCSR status flags (bits 0-5,
 * the sticky exception flags) are caller-saved too: they are stored with
 * the control bits but never decide anything (see below).
 *
 * Saved frame, at the saved stack pointer (which is 8 mod 16):
 *
 *        +------------------------------+  higher addresses
 *    64  | return address               |  pushed by the caller's `call`
 *    56  | rbp                          |
 *    48  | rbx                          |  fresh frame: entry function
 *    40  | r15                          |
 *    32  | r14                          |
 *    24  | r13                          |
 *    16  | r12                          |  fresh frame: entry argument
 *     8  | inbox (void **)              |  where our incoming value goes
 *     0  | mxcsr (4) | x87 cw (2) | 0 0 |  <- saved sp
 *        +------------------------------+  lower addresses
 *
 * Resuming jumps to the return address instead of `ret`: the two sides of a
 * ping-pong return to different call sites, which a `ret` would mispredict
 * from the return stack buffer on every switch, while the indirect-branch
 * predictor learns the alternation.
 *
 * The floating-point control words are compared with the destination's
 * before loading: ldmxcsr and fldcw are slow, and two contexts nearly always
 * hold the same control state.  Only MXCSR's control bits (6-15) take part:
 * a program that has divided or printed a double has raised the inexact
 * flag, and comparing the flags too made every switch between it and a
 * context that had not (or had raised others) pay both loads, about 60 ns
 * instead of 4.  When the control bits do differ, the destination's saved
 * word is loaded whole (its stale flags with it, which the ABI allows: the
 * flags are not preserved across a call).  Each word is read back at the
 * width it was stored so the loads forward from the stores.
 *
 * Not saved: vector and x87 data registers (caller-saved), rflags (DF is
 * clear at every call by the ABI; the rest are caller-saved), segment
 * registers and the fs base (thread state: a context that moves to another
 * thread must use that thread's TLS, see coro.c).
 *
 * C prototypes (ctx.h):
 *   int weft__ctx_jump(void **from_sp, void *to_sp, void *val, void **inbox,
 *                      uint32_t *publish, int rc);
 *   int weft__ctx_jump_ontop(void **from_sp, void *to_sp, void *val,
 *                            void **inbox, void *(*fn)(void *arg, void *val),
 *                            void *arg);
 * On arrival the destination gets rc in eax and val in rdx (a fresh
 * context's entry takes val from rdx).
 */
#include "ctx/ctx.h"

        .text

/* Push the caller's context; %rcx is the inbox.  Leaves sp at the frame. */
.macro SAVE_FRAME
        pushq   %rbp
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %rbp, 0
        pushq   %rbx
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %rbx, 0
        pushq   %r15
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r15, 0
        pushq   %r14
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r14, 0
        pushq   %r13
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r13, 0
        pushq   %r12
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r12, 0
        pushq   %rcx
        .cfi_adjust_cfa_offset 8
        pushq   $0
        .cfi_adjust_cfa_offset 8
        stmxcsr (%rsp)
        fnstcw  4(%rsp)
.endm

/* sp is at the destination's frame, past its fp word: deliver %rdx to its
 * inbox, restore its registers and jump to where it left off.  The frame
 * has the shape SAVE_FRAME pushed, so the CFI above stays true. */
.macro DELIVER_AND_RESUME
        popq    %rcx
        testq   %rcx, %rcx
        jz      1f
        movq    %rdx, (%rcx)
1:
        popq    %r12
        popq    %r13
        popq    %r14
        popq    %r15
        popq    %rbx
        popq    %rbp
        popq    %rcx
        jmp     *%rcx
.endm

        .globl  weft__ctx_jump
        .hidden weft__ctx_jump
        .type   weft__ctx_jump, @function
        .p2align 4
weft__ctx_jump:
        .cfi_startproc
        endbr64
        SAVE_FRAME
        movl    (%rsp), %r10d           /* our mxcsr */
        movzwl  4(%rsp), %r11d          /* our x87 control word */
        movq    %rsp, (%rdi)
        movq    %rsi, %rsp              /* now on the destination stack */
        testq   %r8, %r8
        jz      .Lpublished
        /* Registers and sp are stored above; x86 stores become visible in
         * program order, so a plain store is a release. */
        movl    $0, (%r8)
.Lpublished:
        movl    %r9d, %eax
        xorl    (%rsp), %r10d           /* bits 16-31 are reserved (0) */
        shrl    $6, %r10d               /* drop the status flags */
        jnz     .Lload_fp
        cmpw    %r11w, 4(%rsp)
        jne     .Lload_fp
        addq    $8, %rsp
        DELIVER_AND_RESUME
.Lload_fp:
        ldmxcsr (%rsp)
        fldcw   4(%rsp)
        addq    $8, %rsp
        DELIVER_AND_RESUME
        .cfi_endproc
        .size   weft__ctx_jump, .-weft__ctx_jump

        .globl  weft__ctx_jump_ontop
        .hidden weft__ctx_jump_ontop
        .type   weft__ctx_jump_ontop, @function
        .p2align 4
weft__ctx_jump_ontop:
        .cfi_startproc
        endbr64
        SAVE_FRAME
        /* Our control words, in registers that are saved already and that
         * fn preserves; the destination's frame restores them. */
        movl    (%rsp), %r12d
        movzwl  4(%rsp), %r13d
        movq    %rsp, (%rdi)
        movq    %rsi, %rsp              /* destination stack, 8 mod 16 */
        subq    $8, %rsp                /* align for the call */
        movq    %r9, %rdi               /* fn(arg, val) */
        movq    %rdx, %rsi
        call    *%r8
        addq    $8, %rsp
        movq    %rax, %rdx              /* fn's result is the value sent */
        xorl    %eax, %eax
        xorl    (%rsp), %r12d           /* as in weft__ctx_jump */
        shrl    $6, %r12d
        jnz     .Lontop_load_fp
        cmpw    %r13w, 4(%rsp)
        jne     .Lontop_load_fp
        addq    $8, %rsp
        DELIVER_AND_RESUME
.Lontop_load_fp:
        ldmxcsr (%rsp)
        fldcw   4(%rsp)
        addq    $8, %rsp
        DELIVER_AND_RESUME
        .cfi_endproc
        .size   weft__ctx_jump_ontop, .-weft__ctx_jump_ontop

/*
 * First code of a fresh context, reached by the jump that resumes the frame
 * weft__ctx_make built: %rdx holds the value sent, %rbx the entry function,
 * %r12 its argument, and sp is 16-byte aligned.  The return address is
 * marked undefined so unwinders and debuggers stop here.
 */
        .globl  weft__ctx_entry
        .hidden weft__ctx_entry
        .type   weft__ctx_entry, @function
        .p2align 4
weft__ctx_entry:
        .cfi_startproc
        .cfi_undefined rip
        endbr64
        movq    %rdx, %rdi
        movq    %r12, %rsi
        call    *%rbx
        /* entry functions never return */
        call    weft__ctx_entry_returned
        ud2
        .cfi_endproc
        .size   weft__ctx_entry, .-weft__ctx_entry

        .section .note.GNU-stack,"",%progbits
