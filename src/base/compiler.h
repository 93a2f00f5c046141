/*
 * base/compiler.h — the few compiler attributes weft uses everywhere
 * (internal).
 */
#ifndef WEFT_BASE_COMPILER_H
#define WEFT_BASE_COMPILER_H

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/*
 * The definition of a public function.  noinline as well as exported: a
 * task may continue on another thread after any call that can switch, and
 * compilers treat the thread pointer as constant within a function, so no
 * public entry point may be merged into its caller (link-time optimisation
 * would do it), where the two calls' thread-local reads could be shared.
 */
#define WEFT_EXPORT __attribute__((visibility("default"), noinline))

/*
 * For the accessors of thread-local blocks that are read after a switch:
 * never inlined, never analysed as pure (gcc's whole-program pure/const
 * analysis under LTO did exactly that), so two calls made on different
 * threads return each its own thread's block.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define WEFT_OPAQUE __attribute__((noinline, noipa))
#else
#define WEFT_OPAQUE __attribute__((noinline))
#endif

/* Whether an options struct's reserved_ fields are all zero
 * (weft/weft.h, "Options"). */
static inline int weft__reserved_zero(void *const *reserved, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (reserved[i])
            return 0;
    return 1;
}

/* On a function that reads, on purpose, memory that other threads write
 * without synchronisation (the observers' walk of task records): leave its
 * accesses out of ThreadSanitizer's checks.  gcc does not inline a
 * function with other sanitizer attributes into one with this, so helpers
 * such a function calls carry it too. */
#if defined(__clang__) || __GNUC__ >= 8
#define WEFT_RACY_READS __attribute__((no_sanitize("thread")))
#else
#define WEFT_RACY_READS
#endif

#endif /* WEFT_BASE_COMPILER_H */
