/*
 * ctx/unwind.c — the frame-pointer walk of a suspended context
 * (ctx/unwind.h has the method and why it is safe).
 */
#include "ctx/unwind.h"

#include "ctx/ctx.h"
#include "ctx/sanitizer.h"

#include <stdbool.h>

#if defined(__x86_64__)
#define FRAME_FP WEFT__CTX_RBP
#elif defined(__aarch64__)
#define FRAME_FP WEFT__CTX_X29
#endif

/*
 * One word of another context's stack.  Not instrumented: the context is
 * suspended, and may even be running again on another thread (the caller
 * says why the mapping stays), so the word is a racy read by design, and
 * AddressSanitizer may have poisoned parts of a suspended stack (its
 * frames' redzones), which a frame record is never in, but a bad frame
 * pointer may point at.
 */
#if defined(__clang__) || __GNUC__ >= 8
__attribute__((no_sanitize("address", "thread")))
#endif
static bool read_word(uintptr_t at, uintptr_t low, uintptr_t high,
                      uintptr_t *out)
{
    if (at < low || at >= high || high - at < sizeof(uintptr_t) ||
        (at & (sizeof(uintptr_t) - 1)))
        return false;
    *out = *(const volatile uintptr_t *)at;
    return true;
}

unsigned weft__ctx_backtrace(const void *sp, uintptr_t low, uintptr_t high,
                             uintptr_t *pcs, unsigned max)
{
    uintptr_t frame = (uintptr_t)sp;
    uintptr_t pc, fp;
    unsigned n = 0;
    if (!max || !read_word(frame + WEFT__CTX_RET, low, high, &pc) ||
        !read_word(frame + FRAME_FP, low, high, &fp) || !pc)
        return 0;
    pcs[n++] = pc;
    /* Each record is above the saved frame and above the one before: a
     * loop, or a pointer into a dead part of the stack, ends the walk. */
    uintptr_t floor = frame + WEFT__CTX_FRAME;
    while (n < max && fp >= floor) {
        uintptr_t next;
        if (!read_word(fp + sizeof(uintptr_t), low, high, &pc) || !pc ||
            !read_word(fp, low, high, &next))
            break;
        pcs[n++] = pc;
        floor = fp + 2 * sizeof(uintptr_t);
        fp = next;
    }
    return n;
}
