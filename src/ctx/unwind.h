/*
 * ctx/unwind.h — the return addresses of a suspended context (internal),
 * by a frame-pointer walk from its saved frame, for the dump.
 *
 * A suspended context is its saved stack pointer (ctx.h): at that address
 * the switch's frame holds, among the callee-saved registers, the frame
 * pointer and the return address of the code that switched away
 * (WEFT__CTX_RBP / WEFT__CTX_X29 and WEFT__CTX_RET).  From there each
 * frame record of the System V and AAPCS64 ABIs is two words, the
 * caller's frame pointer and the return address into the caller, so the
 * walk is: the saved return address; then, while the frame pointer points
 * into the stack and above the previous one, fp[1] and fp = fp[0].  The
 * library is built with frame pointers (meson.build); frames of code built
 * without them are skipped or end the walk early, and gdb (tools/gdb)
 * unwinds those from the debug information instead.
 *
 * Safety: the walk reads only whole, aligned words inside [low, high),
 * the context's stack mapping, which its caller keeps mapped for the
 * duration; it never follows a pointer out of it.  If the context runs
 * meanwhile the words it reads may be anything, and so may the result,
 * but the reads stay inside the mapping.
 */
#ifndef WEFT_CTX_UNWIND_H
#define WEFT_CTX_UNWIND_H

#include <stdint.h>

/* Up to max return addresses of the context saved at sp, innermost
 * first, reading only inside [low, high).  Returns how many. */
unsigned weft__ctx_backtrace(const void *sp, uintptr_t low, uintptr_t high,
                             uintptr_t *pcs, unsigned max);

#endif /* WEFT_CTX_UNWIND_H */
