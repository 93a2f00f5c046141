/*
 * ctx.c — the C half of the context switch: building a fresh frame.
 *
 * The frame's layout is fixed by the .S file of each architecture; ctx.h
 * holds the offsets both sides use.
 */
#include "ctx/ctx.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>

/* Until the constructor below runs, the compare way: correct anywhere. */
unsigned char weft__ctx_mxcsr_load;
int (*weft__ctx_resume)(void **, void *, void **) = weft__ctx_resume_cmp;
int (*weft__ctx_yield)(void *, void **, void **) = weft__ctx_yield_cmp;

void weft__ctx_mxcsr_choose(int load)
{
    weft__ctx_mxcsr_load = load != 0;
    weft__ctx_resume = load ? weft__ctx_resume_load : weft__ctx_resume_cmp;
    weft__ctx_yield = load ? weft__ctx_yield_load : weft__ctx_yield_cmp;
}

/*
 * Which way the switch restores MXCSR (switch_x86_64_sysv.S says why):
 * on AMD it loads the destination's word every time, elsewhere it first
 * compares the control bits.  Decided before main, and so before any
 * thread of ours; a switch made earlier (another constructor's) used the
 * compare way, which is correct anywhere.
 */
__attribute__((constructor)) static void choose_mxcsr_load(void)
{
    unsigned max, b, c, d;
    if (__get_cpuid(0, &max, &b, &c, &d) &&
        b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u)
        weft__ctx_mxcsr_choose(1); /* "AuthenticAMD" */
}
#endif

/* Defined in the .S file: the first code a fresh context runs. */
extern void weft__ctx_entry(void);

/* Reached only if a context's entry function returns, which would leave it
 * with nothing to return to. */
void weft__ctx_entry_returned(void);
void weft__ctx_entry_returned(void)
{
    fputs("weft: a context's entry function returned (internal error)\n",
          stderr);
    abort();
}

void *weft__ctx_make(void *stack_top, weft__ctx_entry_fn entry, void *arg)
{
    /* When the first jump pops this frame, sp must be 16-aligned for the
     * entry trampoline's call; the 16 bytes it then points at hold the
     * value sent (the frame's inbox points there, the trampoline reads
     * it). */
    uintptr_t top = ((uintptr_t)stack_top & ~(uintptr_t)15) - 16;
    unsigned char *frame = (unsigned char *)(top - WEFT__CTX_FRAME);
    void *entry_pc = (void *)weft__ctx_entry;
    void *inbox = (void *)top;

    /* Only what the first switch uses is set; the other callee-saved
     * slots are loaded into registers the entry does not read. */
    void *zero = NULL;
    memcpy(frame + WEFT__CTX_INBOX, &inbox, sizeof inbox);
    memcpy((void *)top, &zero, sizeof zero);
#if defined(__x86_64__)
    memcpy(frame + WEFT__CTX_FP, &zero, sizeof zero); /* pad bytes too */
    memcpy(frame + WEFT__CTX_RBP, &zero, sizeof zero); /* ends frame chains */
#elif defined(__aarch64__)
    memcpy(frame + WEFT__CTX_X29, &zero, sizeof zero);
#endif
    memcpy(frame + WEFT__CTX_ENTRY_FN, &entry, sizeof entry);
    memcpy(frame + WEFT__CTX_ENTRY_ARG, &arg, sizeof arg);
    memcpy(frame + WEFT__CTX_RET, &entry_pc, sizeof entry_pc);

    /* A fresh context inherits its creator's floating-point control state,
     * as a new thread does. */
#if defined(__x86_64__)
    __asm__ volatile("stmxcsr (%0)\n\tfnstcw 4(%0)"
                     : : "r"(frame + WEFT__CTX_FP) : "memory");
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    memcpy(frame + WEFT__CTX_FP, &fpcr, sizeof fpcr);
#endif
    return frame;
}
