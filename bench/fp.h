/*
 * fp.h — the floating-point side of the -fp workloads (switch-fp, yield-fp,
 * ping-pong-fp), shared by weft's implementations and the C/C++ peers.
 *
 * User code that computes with doubles leaves the sticky exception flags
 * raised (inexact, above all: 1.0 / 3.0 raises it), and code that has not
 * computed, or that cleared them, has them clear.  On x86_64 the flags of
 * double arithmetic live in MXCSR bits 0-5 (SSE; the x87 status word has
 * its own, which SSE code never raises); on aarch64 in FPSR.  They are not
 * part of the control state a switch must carry (the ABIs make them
 * caller-saved), but a switch that compares the whole MXCSR with the
 * destination's to skip the reload pays the reload between every two
 * contexts whose flags differ (weft's did: ~60 ns a switch instead of ~4),
 * and one that always reloads it (Boost.Context's fcontext) writes a new
 * value at each such switch.  The -fp workloads make the contexts they
 * switch between differ in exactly that way:
 *
 *   bench_fp_raise()  one double division of volatile operands (1.0 / 3.0:
 *                     raises inexact, nothing else), done at run time;
 *   bench_fp_clear()  clears every flag of double arithmetic: on x86_64
 *                     MXCSR's (_MM_SET_EXCEPTION_STATE(0), SSE code's own
 *                     way: stmxcsr, and, ldmxcsr), elsewhere
 *                     feclearexcept(FE_ALL_EXCEPT) (on aarch64 an FPSR read
 *                     and write).  glibc's x86_64 feclearexcept clears the
 *                     x87 flags too, with fnstenv + fldenv: ~65 ns here,
 *                     about what a whole yield costs, for flags that
 *                     doubles never raise; -DBENCH_FP_FECLEAR selects it
 *                     anyway.
 *
 * What writing MXCSR costs by itself: on the x86_64 VM measured, an
 * ldmxcsr that changes the value makes the next stmxcsr wait for it (tens
 * of ns).  A context that clears its flags and then switches pays that in
 * any switch that reads MXCSR to save it (weft's and fcontext's both do),
 * whatever the switch then compares; that is part of what yield-fp and
 * ping-pong-fp measure, for weft and the peers alike.
 *
 * Header-only, valid C11 and C++17.  glibc keeps the fenv functions in
 * libm: C programs that include this link with -lm.
 */
#ifndef WEFT_BENCH_FP_H
#define WEFT_BENCH_FP_H

#include <fenv.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

static inline void bench_fp_raise(void)
{
    volatile double num = 1.0, den = 3.0;
    volatile double q = num / den;

    (void)q;
}

static inline void bench_fp_clear(void)
{
#if defined(__x86_64__) && !defined(BENCH_FP_FECLEAR)
    _MM_SET_EXCEPTION_STATE(0);
#else
    feclearexcept(FE_ALL_EXCEPT);
#endif
}

#endif /* WEFT_BENCH_FP_H */
