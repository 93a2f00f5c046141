/*
 * stack.h — coroutine stacks (internal).
 *
 * A stack is one anonymous mapping, reserved with MAP_NORESERVE so its pages
 * commit only when touched, with a guard region at its low end:
 *
 *   map                      map + guard                       map + size
 *   | guard (no access) ...  | usable, grows down  <--------   |
 *
 * The guard is installed, in order of preference, with
 * madvise(MADV_GUARD_INSTALL) (Linux >= 6.13: no extra VMA), mprotect(PROT_NONE)
 * (splits the mapping in two VMAs, so vm.max_map_count caps the count near
 * 32K stacks), or not at all: then a canary at the low end of the usable
 * region is checked each time a coroutine switches out (weft__stack_intact).
 * The first MADV_GUARD_INSTALL guard is checked to have taken (stack.c,
 * guard_took): qemu-user answers it with success and installs nothing, and
 * then every stack gets an mprotect guard.  WEFT_STACK_GUARD=mprotect or
 * =canary in the environment forces the second or the last, for tests.
 * An overflow into a guard is reported by the handler of overflow.h.
 *
 * Freed stacks go to a small per-thread cache (LIFO, warm), which spills to
 * and refills from a bounded global pool, so a create/destroy cycle costs no
 * system call.  Both keep stacks of any size; a request takes a cached stack
 * of exactly its size.
 *
 * All functions may be called from any thread.
 */
#ifndef WEFT_STACK_H
#define WEFT_STACK_H

#include <stdbool.h>
#include <stddef.h>

/* Largest stack we agree to reserve; larger requests are -EINVAL. */
#define WEFT__STACK_MAX ((size_t)1 << 30)

typedef struct weft__stack {
    void *map;        /* mapping base (guard at the bottom)  */
    size_t size;      /* whole mapping, guard included       */
    size_t asked;     /* the size it was allocated for (cache key) */
    bool canary;      /* no guard: a canary sits at map      */
#ifdef WEFT_VALGRIND
    unsigned valgrind_id; /* its registration (stack.c)      */
#endif
} weft__stack;

/* The per-thread cache of free stacks (LIFO).  Its fast paths are inline
 * below; stack.c does the rest. */
#define WEFT__STACK_CACHE_SLOTS 16
struct weft__stack_cache {
    unsigned n;
    bool registered;  /* the thread-exit destructor knows about it */
    weft__stack slot[WEFT__STACK_CACHE_SLOTS];
};
extern __thread struct weft__stack_cache weft__stack_cache
    __attribute__((tls_model("initial-exec")));

int weft__stack_alloc_slow(weft__stack *out, size_t usable);
void weft__stack_free_slow(const weft__stack *s);

/* Top of the usable region (highest address + 1). */
static inline void *weft__stack_top(const weft__stack *s)
{
    return (char *)s->map + s->size;
}

/*
 * weft__stack_alloc - get a stack with at least `usable` bytes below its top
 * (0 means WEFT_STACK_DEFAULT); rounded up to whole pages.
 * Returns 0, -EINVAL (usable > WEFT__STACK_MAX), -ENOMEM.
 */
static inline int weft__stack_alloc(weft__stack *out, size_t usable)
{
    struct weft__stack_cache *c = &weft__stack_cache;
    /* The most recently freed stack is the warmest, and in a create/
     * destroy loop it was asked for with the same size. */
    if (__builtin_expect(c->n != 0, 1) && c->slot[c->n - 1].asked == usable) {
        *out = c->slot[--c->n];
        return 0;
    }
    return weft__stack_alloc_slow(out, usable);
}

/* weft__stack_free - give a stack back (to the cache, or to the kernel). */
static inline void weft__stack_free(const weft__stack *s)
{
    struct weft__stack_cache *c = &weft__stack_cache;
    if (__builtin_expect(c->registered && c->n < WEFT__STACK_CACHE_SLOTS, 1))
        c->slot[c->n++] = *s;
    else
        weft__stack_free_slow(s);
}

/* weft__stack_intact - false if an unguarded stack's canary is broken. */
bool weft__stack_intact(const weft__stack *s);

/* The guard below the usable region (one page). */
size_t weft__stack_guard(void);

/* Usable bytes of a stack (what the coroutine may use). */
static inline size_t weft__stack_usable(const weft__stack *s)
{
    return s->size - weft__stack_guard();
}

/* Lowest usable address of a stack. */
static inline void *weft__stack_low(const weft__stack *s)
{
    return (char *)s->map + weft__stack_guard();
}

#endif /* WEFT_STACK_H */
