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
 * A context is named by its slot, the word that holds its saved stack
 * pointer while it is suspended (struct weft_coro's `sp`).  Saved frame, at
 * the saved stack pointer (which is 16-byte aligned):
 *
 *        +------------------------------+  higher addresses
 *    56  | return address               |  pushed by the caller's `call`
 *    48  | rbp                          |
 *    40  | rbx                          |  fresh frame: entry function
 *    32  | r15                          |
 *    24  | r14                          |
 *    16  | r13                          |
 *     8  | r12                          |  fresh frame: entry argument
 *     0  | inbox (void **)              |  <- saved sp: our incoming value
 *    -8  | mxcsr (4) | x87 cw (2) | -   |  below sp, in the red zone
 *        +------------------------------+  lower addresses
 *
 * Why each instruction of a switch is there (weft__ctx_resume: 27 on AMD,
 * 30 elsewhere, against 24 in Boost.Context's jump_fcontext;
 * weft__ctx_yield one more, the general entries two more):
 *
 *   7 pushes    the six callee-saved registers, and the inbox: where the
 *               value sent to us must go when we are resumed.  Pushes are
 *               the shortest way to store them and move sp at once.
 *   stmxcsr, fnstcw   the FP control state, stored in the red zone (which
 *               the ABI keeps from signal handlers) so that no instruction
 *               is spent on making room.  The costliest part of a switch
 *               on Zen 5: 2.1 ns of 5.4 for stmxcsr, microcoded, read back
 *               or not (Boost.Context's switch runs the same two), and
 *               the one way to learn whether the code that ran changed
 *               the state (docs/performance.md, "Where a Zen 5 switch's
 *               time goes").  Nothing writes below a suspended
 *               context's sp; weft__ctx_jump_ontop, the one code that runs
 *               below a saved sp, steps over the word.
 *   store our sp, load the destination's straight into sp: 2 (the
 *               words of ours that the compare below needs are read first).
 *   publish     (weft__ctx_yield and weft__ctx_jump_publish) store
 *               SUSPENDED (0) to the leaving coroutine's state word, once
 *               its frame and sp are stored: a plain store is a release on
 *               x86, so whoever claims it sees them.
 *   restore the control words, one of two ways chosen once from the CPU's
 *               vendor (weft__ctx_mxcsr_choose, called in ctx.c before
 *               main).  weft__ctx_resume and weft__ctx_yield are built
 *               once per way and called through pointers, so they do not
 *               test which; the general entries (the scheduler's, destroy,
 *               transfer) test weft__ctx_mxcsr_load (a compare with memory
 *               and a branch).
 *     compare (not AMD, 7): ldmxcsr and fldcw are slow when the value
 *               changes (ldmxcsr of a different value costs about 50 ns
 *               on Intel, where Boost.Context's switch-fp, which loads a
 *               different MXCSR at every switch, takes 57 ns), and two
 *               contexts nearly always hold the same control state, so
 *               both are skipped when the control bits are equal.  Only
 *               MXCSR's control bits (6-15) take part: a program that has
 *               divided or printed a double has raised the inexact flag,
 *               and comparing the flags too made every switch between it
 *               and a context that had not pay both loads.  Our two words
 *               are read before sp moves (2), xor-ed with the
 *               destination's, MXCSR's shifted past the flags, and both
 *               or-ed into one branch (5).  When the control bits differ,
 *               the destination's saved words are loaded whole (its stale
 *               flags with them, which the ABI allows: the flags are not
 *               preserved across a call).
 *     load (AMD, 4): on Zen 5 ldmxcsr costs the same whatever it loads
 *               (there Boost.Context's switch-fp runs as fast as its
 *               switch), while reading back the word stmxcsr has just
 *               stored costs about 2.5 ns a switch (that store does not
 *               forward: the load waits for it to reach the cache, and
 *               retirement with it).  So MXCSR is loaded without a
 *               compare; the x87 word, whose fnstcw store does forward, is
 *               still compared with ours (read before sp moves) and loaded
 *               only if it differs (3): an fldcw at every switch, as
 *               Boost.Context's, took the switch from 5.40 to 5.73 ns
 *               (best of 15 runs each, interleaved).
 *               Not measured on other AMD cores; both ways are correct
 *               everywhere (tests/test_coro.c runs under each).
 *   xor eax     the destination's call returns 0 (weft__ctx_jump_rc sends
 *               another code: a cancelled coroutine's -ECANCELED).
 *   pop, jrcxz, store   deliver the value to the destination's inbox, if
 *               it named one (jrcxz: test and branch in one).
 *   6 pops      the destination's callee-saved registers.
 *   pop, jmp    resume at its return address.  A `jmp`, not a `ret`: the
 *               two sides of a ping-pong return to different call sites,
 *               which a `ret` would mispredict from the return stack buffer
 *               on every switch, while the indirect-branch predictor learns
 *               the alternation (measured again on Zen 5: with `ret` the
 *               switch takes 13.8 ns instead of 5.5).
 *
 * Not here on purpose: `endbr64` (the entries are reached by direct calls
 * or through weft__ctx_resume's and weft__ctx_yield's pointers, and the
 * library is not marked for IBT: this file carries no IBT property, and
 * the resume itself lands on return addresses by `jmp`, which IBT would
 * refuse anyway), a publish test (the publishing entries are their own),
 * argument moves (each entry takes its arguments in the registers its one
 * hot caller already has them in).
 *
 * Not saved: vector and x87 data registers (caller-saved), rflags (DF is
 * clear at every call by the ABI; the rest are caller-saved), segment
 * registers and the fs base (thread state: a context that moves to another
 * thread must use that thread's TLS, see coro.c).
 *
 * C prototypes and their register assignment (ctx.h):
 *   int weft__ctx_resume(void **co, void *val, void **inbox);
 *       rdi rsi rdx              (weft_coro_resume's own; the resumer's
 *                          slot is WEFT__CTX_BACK bytes past co's)
 *   int weft__ctx_yield(void *val, void **inbox, void **self);
 *       rdi rsi rdx              (weft_coro_yield's own; the resumer's slot
 *                          is WEFT__CTX_BACK bytes past self's)
 *   int weft__ctx_jump(void **to, void *val, void **inbox, void **from);
 *       rdi rsi rdx rcx
 *   int weft__ctx_jump_rc(void **to, void *val, void **inbox, void **from,
 *                         int rc);              r8d: the code sent
 *   int weft__ctx_jump_publish(void *val, void **inbox, void **to,
 *                              void **from);
 *       rdi rsi rdx rcx
 *   int weft__ctx_jump_ontop(void **to, void *val, void **inbox,
 *                            void **from, void *(*fn)(void *, void *),
 *                            void *arg);
 * On arrival the destination's call returns the code in eax; the value
 * goes to its inbox (a fresh context's inbox is a word its entry reads).
 */
#include "ctx/ctx.h"

        .text

/* Push the caller's context; \inbox is its inbox.  Leaves sp at the frame
 * and the control words below it. */
.macro SAVE_FRAME inbox
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
        pushq   \inbox
        .cfi_adjust_cfa_offset 8
        stmxcsr -8(%rsp)
        fnstcw  -4(%rsp)
.endm

/* sp is the destination's saved sp; eax and r11d hold our mxcsr and x87
 * control word.  Sets ZF when the two contexts' control bits are equal.
 * Clobbers eax, r11d. */
.macro COMPARE_FP
        xorl    -8(%rsp), %eax          /* bits 16-31 are 0 */
        shrl    $6, %eax                /* drop the status flags */
        xorw    -4(%rsp), %r11w
        orl     %r11d, %eax
.endm

/* sp is at the destination's frame: deliver \val to its inbox, restore its
 * registers and jump to where it left off.  The frame has the shape
 * SAVE_FRAME pushed, so the CFI above stays true. */
.macro DELIVER_AND_RESUME val
        popq    %rcx
        jrcxz   1f
        movq    \val, (%rcx)
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

/* The destination's control words are loaded (they differ from ours). */
.macro LOAD_FP
        ldmxcsr -8(%rsp)
        fldcw   -4(%rsp)
.endm

/*
 * One switch entry: \to and \from are the two slots (memory operands),
 * \inbox and \val ours and the value sent; \code sets eax, \pub (if any)
 * runs once our frame and sp are stored.
 */
.macro JUMP name, to, val, inbox, from, code, pub=, way=auto
        .globl  \name
        .hidden \name
        .type   \name, @function
        .p2align 4
\name:
        .cfi_startproc
        SAVE_FRAME \inbox
.ifc \way, auto
        cmpb    $0, weft__ctx_mxcsr_load(%rip)
        je      4f
.endif
.ifnc \way, cmp
        /* Load the destination's MXCSR without comparing (see the top),
         * its x87 word only if it differs from ours. */
        movzwl  -4(%rsp), %r11d         /* our x87 control word */
        movq    %rsp, \from
        movq    \to, %rsp               /* now on the destination stack */
        \pub
        ldmxcsr -8(%rsp)
        cmpw    -4(%rsp), %r11w
        jne     3f
        \code
        DELIVER_AND_RESUME \val
3:
        fldcw   -4(%rsp)
        \code
        DELIVER_AND_RESUME \val
.endif
.ifnc \way, load
4:
        movl    -8(%rsp), %eax          /* our mxcsr */
        movzwl  -4(%rsp), %r11d         /* our x87 control word */
        movq    %rsp, \from
        movq    \to, %rsp               /* now on the destination stack */
        \pub
        COMPARE_FP
        jnz     2f
        \code
        DELIVER_AND_RESUME \val
2:
        LOAD_FP
        \code
        DELIVER_AND_RESUME \val
.endif
        .cfi_endproc
        .size   \name, .-\name
.endm

/* The codes and the publish step the entries below plug in. */
.macro RC_ZERO
        xorl    %eax, %eax
.endm
.macro RC_R8
        movl    %r8d, %eax
.endm
/* Registers and sp are stored above; x86 stores become visible in program
 * order, so a plain store is a release. */
.macro PUBLISH_RCX
        movl    $0, WEFT__CTX_PUBLISH(%rcx)
.endm
.macro PUBLISH_RDX
        movl    $0, WEFT__CTX_PUBLISH(%rdx)
.endm

        JUMP    weft__ctx_jump, (%rdi), %rsi, %rdx, (%rcx), RC_ZERO
        JUMP    weft__ctx_jump_rc, (%rdi), %rsi, %rdx, (%rcx), RC_R8
        JUMP    weft__ctx_jump_publish, (%rdx), %rdi, %rsi, (%rcx), RC_ZERO, PUBLISH_RCX
        /* resume's and yield's own: the resumer's slot is found from the
         * coroutine's, so that the C side computes no address.  One build
         * per way of restoring MXCSR, so that they need not test which:
         * weft__ctx_resume and weft__ctx_yield point at the pair in use
         * (ctx.c). */
        JUMP    weft__ctx_resume_load, (%rdi), %rsi, %rdx, WEFT__CTX_BACK(%rdi), RC_ZERO, , load
        JUMP    weft__ctx_resume_cmp, (%rdi), %rsi, %rdx, WEFT__CTX_BACK(%rdi), RC_ZERO, , cmp
        JUMP    weft__ctx_yield_load, WEFT__CTX_BACK(%rdx), %rdi, %rsi, (%rdx), RC_ZERO, PUBLISH_RDX, load
        JUMP    weft__ctx_yield_cmp, WEFT__CTX_BACK(%rdx), %rdi, %rsi, (%rdx), RC_ZERO, PUBLISH_RDX, cmp

        .globl  weft__ctx_jump_ontop
        .hidden weft__ctx_jump_ontop
        .type   weft__ctx_jump_ontop, @function
        .p2align 4
weft__ctx_jump_ontop:
        .cfi_startproc
        SAVE_FRAME %rdx
        movl    -8(%rsp), %eax
        movzwl  -4(%rsp), %r11d
        movq    %rsp, (%rcx)
        movq    (%rdi), %rsp            /* destination stack, 16-aligned */
        /* Decide and load the control state now, while its words are
         * intact: fn's frames go below the destination's sp, over them.
         * fn is weft's own code, which keeps the state.  Not the hot
         * path: always the compare way. */
        COMPARE_FP
        jz      1f
        LOAD_FP
1:
        subq    $16, %rsp               /* step over the control words */
        movq    %r9, %rdi               /* fn(arg, val) */
        call    *%r8
        addq    $16, %rsp
        movq    %rax, %rdx              /* fn's result is the value sent */
        xorl    %eax, %eax
        DELIVER_AND_RESUME %rdx
        .cfi_endproc
        .size   weft__ctx_jump_ontop, .-weft__ctx_jump_ontop

/*
 * First code of a fresh context, reached by the jump that resumes the frame
 * weft__ctx_make built: the word at sp holds the value sent (the fresh
 * frame's inbox points at it), %rbx the entry function, %r12 its argument,
 * and sp is 16-byte aligned.  The return address is marked undefined so
 * unwinders and debuggers stop here.
 */
        .globl  weft__ctx_entry
        .hidden weft__ctx_entry
        .type   weft__ctx_entry, @function
        .p2align 4
weft__ctx_entry:
        .cfi_startproc
        .cfi_undefined rip
        endbr64
        movq    (%rsp), %rdi
        movq    %r12, %rsi
        call    *%rbx
        /* entry functions never return */
        call    weft__ctx_entry_returned
        ud2
        .cfi_endproc
        .size   weft__ctx_entry, .-weft__ctx_entry

        .section .note.GNU-stack,"",%progbits
