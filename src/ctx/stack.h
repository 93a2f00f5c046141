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
 * Freed stacks are recycled through a small per-thread cache (LIFO, warm)
 * and a bounded global depot (base/cache.h), so a create/destroy cycle
 * costs no system call.  A request takes a cached stack of exactly its
 * mapping size.
 *
 * In ThreadSanitizer builds each mapping also carries its TSan fiber, made
 * with the mapping and destroyed with it (sanitizer.h: making one costs
 * milliseconds, so every context on the stack uses the same one).
 *
 * All functions may be called from any thread.
 */
#ifndef WEFT_STACK_H
#define WEFT_STACK_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <weft/coro.h>

#include "base/cache.h"
#include "ctx/sanitizer_build.h"

typedef struct weft__stack {
    void *map;        /* mapping base (guard at the bottom)  */
    uint32_t size;    /* whole mapping, guard included (at
                         most WEFT_STACK_MAX and a guard)   */
    bool canary;      /* no guard: a canary sits at map      */
#ifdef WEFT_VALGRIND
    unsigned valgrind_id; /* its registration (stack.c)      */
#endif
#ifdef WEFT_TSAN
    void *tsan_fiber; /* its TSan fiber (sanitizer.h)        */
#endif
} weft__stack;

/* The cache of free stacks: a free stack carries this node in its top
 * bytes (already committed), keyed by its mapping size. */
struct weft__free_stack {
    struct weft__cache_node node;
    weft__stack stack;
    /* Its pages below this node went back to the kernel at a trim, and
     * it has not run since: the next trim has nothing to give (and its
     * madvise would cost a TLB flush for nothing). */
    bool trimmed;
};
extern struct weft__cache weft__stack_cache;
extern __thread struct weft__cache_local weft__stack_local
    __attribute__((tls_model("initial-exec")));

/* The page size, once known (stack.c). */
extern size_t weft__stack_page;
size_t weft__stack_page_init(void);

/* The mapping size (guard included) of a stack with `usable` bytes (0:
 * WEFT_STACK_DEFAULT), or 0 if usable is over WEFT_STACK_MAX: whole
 * pages, one more for the guard, and at least three (the coroutine record
 * plus a little room). */
static inline size_t weft__stack_mapping_size(size_t usable)
{
    /* Relaxed: the page size is the same whoever stored it. */
    size_t page = __atomic_load_n(&weft__stack_page, __ATOMIC_RELAXED);
    if (__builtin_expect(!page, 0))
        page = weft__stack_page_init();
    if (!usable)
        usable = WEFT_STACK_DEFAULT;
    if (usable > WEFT_STACK_MAX)
        return 0;
    size_t size = ((usable + page - 1) & ~(page - 1)) + page;
    return size < 3 * page ? 3 * page : size;
}

/* Map a fresh stack of `size` bytes (a mapping size), making room by
 * unmapping cached stacks if the first try fails.  Returns 0 or -ENOMEM. */

int weft__stack_map(weft__stack *out, size_t size);

/* Top of the usable region (highest address + 1). */
static inline void *weft__stack_top(const weft__stack *s)
{
    return (char *)s->map + s->size;
}

/*
 * weft__stack_alloc - get a stack with at least `usable` bytes below its top
 * (0 means WEFT_STACK_DEFAULT); rounded up to whole pages.
 * Returns 0, -EINVAL (usable > WEFT_STACK_MAX), -ENOMEM.
 */
static inline int weft__stack_alloc(weft__stack *out, size_t usable)
{
    size_t size = weft__stack_mapping_size(usable);
    if (__builtin_expect(!size, 0))
        return -EINVAL;
    struct weft__cache_node *n =
        weft__cache_get(&weft__stack_cache, &weft__stack_local, size);
    if (__builtin_expect(n != NULL, 1)) {
        *out = ((struct weft__free_stack *)n)->stack;
        return 0;
    }
    return weft__stack_map(out, size);
}

/* The node a free stack carries, in its top bytes. */
static inline struct weft__free_stack *weft__stack_node(const weft__stack *s)
{
    return (struct weft__free_stack *)((char *)s->map + s->size) - 1;
}

/* weft__stack_free - give a stack back (to the cache, or to the kernel). */
static inline void weft__stack_free(const weft__stack *s)
{
    struct weft__free_stack *f = weft__stack_node(s);
    f->stack = *s;
    f->trimmed = false;
    f->node.key = s->size;
    weft__cache_put(&weft__stack_cache, &weft__stack_local, &f->node);
}

/* The calling thread's cached stacks go to the global depot. */
void weft__stacks_spill(void);

/* Trim the global depot of free stacks to `keep`: the others are unmapped,
 * the kept ones keep only their top page committed.  Returns the bytes of
 * address space unmapped or pages given back (an upper bound of the
 * memory freed: untouched pages were never resident). */
size_t weft__stacks_trim(size_t keep);

/* How many stacks were ever mapped (relaxed, monotonic): the scheduler
 * compares two reads to learn whether memory was made between them
 * (sched/pool.c, "Lending"). */
uint64_t weft__stacks_made(void);

/* For the observers: stacks mapped now (in use or cached) and their bytes,
 * and those free in the shared depot (a per-thread cache's are not
 * counted there). */
void weft__stack_counts(size_t *mapped, size_t *bytes, size_t *cached,
                        size_t *cached_bytes);

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
