/*
 * stack.c — guarded, pooled coroutine stacks.  See stack.h for the layout.
 */
#include "stack.h"

#include <weft/coro.h>

#include "fault.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/*
 * Valgrind tells a switch to another stack from a frame pushed or popped on
 * the same one by how far the stack pointer moves (--max-stackframe, 2 MB).
 * Stacks of 256 KiB mapped next to each other are closer than that: a
 * switch would look like a pop, and memcheck would mark everything in
 * between, other contexts' live frames included, as gone.  So every stack
 * weft maps is registered with Valgrind while it is mapped.  Only in builds
 * configured with -Dvalgrind=true: the client requests themselves cost a few
 * instructions on a path that makes system calls anyway, but they need
 * valgrind.h at build time and a stack id in every stack record, and a plain
 * build should depend on neither.
 */
#ifdef WEFT_VALGRIND
#include <valgrind/valgrind.h>
#endif

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102 /* Linux 6.13; older headers lack it */
#endif

enum guard_mode {
    GUARD_MADVISE_UNCHECKED, /* MADV_GUARD_INSTALL, not yet seen to work */
    GUARD_MADVISE, /* MADV_GUARD_INSTALL: no VMA cost                  */
    GUARD_MPROTECT,/* PROT_NONE page: one more VMA per stack           */
    GUARD_CANARY,  /* no guard left to install: canary checks only     */
};

/* Confirmed once, downgraded once, never upgraded: relaxed is enough,
 * each stack records what it got. */
static _Atomic int guard_mode = GUARD_MADVISE_UNCHECKED;

#define CANARY_WORDS 4
static const uint64_t canary_value = 0x5745465443414e52ull; /* "WEFTCANR" */

/* A cached stack carries this record in its top bytes (already committed). */
struct free_stack {
    struct free_stack *next;
    weft__stack stack;
};

#define CACHE_SLOTS WEFT__STACK_CACHE_SLOTS

__thread struct weft__stack_cache weft__stack_cache
    __attribute__((tls_model("initial-exec")));

/* The global pool: a list under a mutex.  Touched only when a thread's cache
 * spills or runs dry, a batch at a time. */
#define POOL_MAX 256
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct free_stack *pool_head;
static unsigned pool_count;

/* Made on first need, under pool_lock; a failed attempt is retried by the
 * next thread that needs it (meanwhile that thread caches nothing). */
static atomic_bool key_made;
static pthread_key_t cache_key;

static size_t page_size(void)
{
    static _Atomic size_t cached;
    size_t p = atomic_load_explicit(&cached, memory_order_relaxed);
    if (!p) {
        p = (size_t)sysconf(_SC_PAGESIZE);
        atomic_store_explicit(&cached, p, memory_order_relaxed);
    }
    return p;
}

static uint64_t *canary_at(const weft__stack *s)
{
    /* The top of the guard page: an overflow running down out of the usable
     * region writes here first. */
    return (uint64_t *)((char *)s->map + page_size()) - CANARY_WORDS;
}

bool weft__stack_intact(const weft__stack *s)
{
    if (!s->canary)
        return true;
    const uint64_t *c = canary_at(s);
    for (int i = 0; i < CANARY_WORDS; i++)
        if (c[i] != canary_value)
            return false;
    return true;
}

size_t weft__stack_guard(void)
{
    return page_size();
}

static void say_unguarded_once(void)
{
    static atomic_flag said = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&said))
        fprintf(stderr,
                "weft: cannot install more stack guard pages (the kernel's "
                "vm.max_map_count is reached); new coroutine stacks are "
                "unguarded and checked by canary only. Raise "
                "vm.max_map_count (sysctl -w vm.max_map_count=N) to keep "
                "guards.\n");
}

/* For tests of the other paths: WEFT_STACK_GUARD=mprotect or =canary in
 * the environment (read once) gives every new stack an mprotect guard, or
 * makes it a canary stack. */
static pthread_once_t mode_once = PTHREAD_ONCE_INIT;

static void read_mode(void)
{
    const char *env = getenv("WEFT_STACK_GUARD");
    if (env && strcmp(env, "mprotect") == 0)
        atomic_store_explicit(&guard_mode, GUARD_MPROTECT,
                              memory_order_relaxed);
    else if (env && strcmp(env, "canary") == 0)
        atomic_store_explicit(&guard_mode, GUARD_CANARY, memory_order_relaxed);
}

/*
 * Whether the MADV_GUARD_INSTALL guard that madvise said it put on the page
 * at `guard` is there: the kernel, asked to read the page (write() one byte
 * of it into a pipe), must fail with EFAULT.  qemu-user answers every
 * madvise it does not pass on, MADV_GUARD_INSTALL included, with success
 * and installs nothing (docs/testing.md): there the read succeeds.  A
 * fresh stack's guard page is never written, so the byte is a zero read
 * from an untouched page.  -1: cannot tell (no pipe to be had).
 */
static int guard_took(const void *guard)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    ssize_t n = write(fds[1], guard, 1);
    int took = n < 0 && errno == EFAULT;
    close(fds[0]);
    close(fds[1]);
    return n == 1 ? 0 : took ? 1 : -1;
}

/* Protect the lowest page of a fresh mapping, with the best means left. */
static void install_guard(weft__stack *s)
{
    size_t guard = page_size();
    pthread_once(&mode_once, read_mode);
    int mode = atomic_load_explicit(&guard_mode, memory_order_relaxed);

    if (mode == GUARD_MADVISE || mode == GUARD_MADVISE_UNCHECKED) {
        if (weft__madvise(s->map, guard, MADV_GUARD_INSTALL) == 0) {
            if (mode == GUARD_MADVISE)
                return;
            /* The first guard: check it took (once; a stack made while
             * another thread checks may check too). */
            int took = guard_took(s->map);
            if (took != 0) {
                if (took > 0) {
                    int expected = GUARD_MADVISE_UNCHECKED;
                    atomic_compare_exchange_strong_explicit(
                        &guard_mode, &expected, GUARD_MADVISE,
                        memory_order_relaxed, memory_order_relaxed);
                }
                return;
            }
            /* Success that installed nothing (qemu-user): for good. */
            mode = GUARD_MPROTECT;
            atomic_store_explicit(&guard_mode, mode, memory_order_relaxed);
        } else {
            /* EINVAL: kernel older than 6.13, for good.  Anything else
             * (no memory for page tables) fails this stack only. */
            mode = GUARD_MPROTECT;
            if (errno == EINVAL)
                atomic_store_explicit(&guard_mode, mode,
                                      memory_order_relaxed);
        }
    }
    if (mode == GUARD_MPROTECT) {
        if (weft__mprotect(s->map, guard, PROT_NONE) == 0)
            return;
        /* ENOMEM: no VMA left to split the mapping with.  Stay on mprotect
         * (unmaps may free VMAs again) but make this one a canary stack. */
        say_unguarded_once();
    }
    s->canary = true;
    uint64_t *c = canary_at(s);
    for (int i = 0; i < CANARY_WORDS; i++)
        c[i] = canary_value;
}

static void unmap_stack(const weft__stack *s)
{
#ifdef WEFT_VALGRIND
    VALGRIND_STACK_DEREGISTER(s->valgrind_id);
#endif
    munmap(s->map, s->size);
}

static int map_stack(weft__stack *out, size_t size)
{
    void *map = weft__mmap(NULL, size, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
                              MAP_STACK,
                          -1, 0);
    if (map == MAP_FAILED)
        return -ENOMEM;
    /* Huge pages would commit 2 MiB per stack on first touch. */
    (void)madvise(map, size, MADV_NOHUGEPAGE);
    out->map = map;
    out->size = size;
    out->canary = false;
    install_guard(out);
#ifdef WEFT_VALGRIND
    out->valgrind_id = VALGRIND_STACK_REGISTER(weft__stack_low(out),
                                               (char *)map + size - 1);
#endif
    return 0;
}

static struct free_stack *record_of(const weft__stack *s)
{
    return (struct free_stack *)weft__stack_top(s) - 1;
}

/* Move up to n cached stacks from the thread cache to the global pool;
 * unmap what the pool has no room for. */
static void spill(struct weft__stack_cache *c, unsigned n)
{
    weft__stack excess[CACHE_SLOTS];
    unsigned nexcess = 0;

    pthread_mutex_lock(&pool_lock);
    while (n-- > 0 && c->n > 0) {
        weft__stack s = c->slot[--c->n];
        if (pool_count >= POOL_MAX) {
            excess[nexcess++] = s;
            continue;
        }
        struct free_stack *r = record_of(&s);
        r->stack = s;
        r->next = pool_head;
        pool_head = r;
        pool_count++;
    }
    pthread_mutex_unlock(&pool_lock);
    for (unsigned i = 0; i < nexcess; i++)
        unmap_stack(&excess[i]);
}

static void cache_destructor(void *p)
{
    struct weft__stack_cache *c = p;
    spill(c, CACHE_SLOTS);
}

/* Whether cache_key exists, making it if need be. */
static bool have_key(void)
{
    if (atomic_load_explicit(&key_made, memory_order_acquire))
        return true;
    pthread_mutex_lock(&pool_lock);
    if (!atomic_load_explicit(&key_made, memory_order_relaxed) &&
        weft__pthread_key_create(&cache_key, cache_destructor) == 0)
        atomic_store_explicit(&key_made, true, memory_order_release);
    pthread_mutex_unlock(&pool_lock);
    return atomic_load_explicit(&key_made, memory_order_relaxed);
}

/* Refill the thread cache with up to CACHE_SLOTS/2 pooled stacks of `size`. */
static void refill(struct weft__stack_cache *c, size_t size)
{
    pthread_mutex_lock(&pool_lock);
    struct free_stack **link = &pool_head;
    while (*link && c->n < CACHE_SLOTS / 2) {
        struct free_stack *r = *link;
        if (r->stack.size != size) {
            link = &r->next;
            continue;
        }
        *link = r->next;
        pool_count--;
        c->slot[c->n++] = r->stack;
    }
    pthread_mutex_unlock(&pool_lock);
}

static bool cache_take(struct weft__stack_cache *c, size_t size,
                       weft__stack *out)
{
    for (unsigned i = c->n; i-- > 0;) {
        if (c->slot[i].size == size) {
            *out = c->slot[i];
            c->slot[i] = c->slot[--c->n];
            return true;
        }
    }
    return false;
}

/*
 * No mapping to be had (address space, or vm.max_map_count): unmap every
 * cached stack, of the global pool and of this thread, which are then of
 * other sizes than the one wanted, so that a retry can use the room.
 * Returns whether anything was unmapped.
 */
static bool trim(struct weft__stack_cache *c)
{
    pthread_mutex_lock(&pool_lock);
    struct free_stack *r = pool_head;
    pool_head = NULL;
    pool_count = 0;
    pthread_mutex_unlock(&pool_lock);
    bool any = r || c->n;
    while (r) {
        struct free_stack *next = r->next; /* r is inside the mapping */
        weft__stack st = r->stack;
        unmap_stack(&st);
        r = next;
    }
    while (c->n) {
        c->n--;
        unmap_stack(&c->slot[c->n]);
    }
    return any;
}

/* A cached stack of the same mapping size serves any request that rounds to
 * it; the fast path in stack.h only matches the exact request. */
int weft__stack_alloc_slow(weft__stack *out, size_t usable)
{
    size_t page = page_size();
    size_t asked = usable;

    if (usable == 0)
        usable = WEFT_STACK_DEFAULT;
    if (usable > WEFT__STACK_MAX)
        return -EINVAL;
    size_t size = ((usable + page - 1) & ~(page - 1)) + page; /* + guard */
    if (size < 3 * page)
        size = 3 * page; /* the coroutine record plus a little room */

    struct weft__stack_cache *c = &weft__stack_cache;
    if (!cache_take(c, size, out)) {
        refill(c, size);
        if (!cache_take(c, size, out)) {
            int err = map_stack(out, size);
            if (err && trim(c))
                err = map_stack(out, size);
            if (err)
                return err;
        }
    }
    out->asked = asked;
    return 0;
}

void weft__stack_free_slow(const weft__stack *s)
{
    struct weft__stack_cache *c = &weft__stack_cache;

    if (!c->registered) {
        /* Make sure stacks cached by a thread that exits go back to the
         * pool instead of leaking; a thread that cannot arrange that
         * caches nothing (and tries again next time). */
        if (!have_key() || weft__pthread_setspecific(cache_key, c) != 0) {
            unmap_stack(s);
            return;
        }
        c->registered = true;
    }
    if (c->n == CACHE_SLOTS)
        spill(c, CACHE_SLOTS / 2);
    c->slot[c->n++] = *s;
}
