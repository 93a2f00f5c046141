/*
 * stack.c — guarded, pooled coroutine stacks.  See stack.h for the layout.
 */
#include "ctx/stack.h"

#include <weft/coro.h>

#include "base/alloc.h"
#include "base/direct.h"
#include "ctx/sanitizer.h"

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

static void release_stack(struct weft__cache_node *n);

/* Each thread keeps a few free stacks (a fork-join tree's worth on a
 * worker); the depot keeps up to 4,096, enough for a burst of tasks that
 * park at once (a server's connections, 10,000 tasks each in a sleep),
 * and unmaps the rest.  A stack unmapped at the end of one burst is
 * mapped, guarded and faulted in again at the start of the next (about
 * 20 us of CPU a stack on the 2-vCPU AMD guest, where the munmap's TLB
 * flush reaches the other vCPU too): 10,000 tasks that each sleep 1 ms
 * ten times took 170-190 ms a run with 256, 45-53 with 4,096
 * (docs/performance.md, "Many tasks asleep").  What the depot holds costs
 * its stacks' touched pages until a pool goes idle and trims it to half
 * its cache bound (weft__stacks_trim), and 1 GiB of address space at most
 * (4,096 default stacks). */
struct weft__cache weft__stack_cache =
    WEFT__CACHE_INIT(16, 8, 4096, release_stack);
__thread struct weft__cache_local weft__stack_local
    __attribute__((tls_model("initial-exec")));

size_t weft__stack_page;

size_t weft__stack_page_init(void)
{
    size_t p = (size_t)sysconf(_SC_PAGESIZE);
    __atomic_store_n(&weft__stack_page, p, __ATOMIC_RELAXED);
    return p;
}

static size_t page_size(void)
{
    size_t p = __atomic_load_n(&weft__stack_page, __ATOMIC_RELAXED);
    return p ? p : weft__stack_page_init();
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

/* Stacks mapped now, and their bytes, for the observers (weft__stack_
 * counts): an atomic add at each map and unmap, next to the system call. */
static _Atomic size_t mapped_count, mapped_bytes;

void weft__stack_counts(size_t *mapped, size_t *bytes, size_t *cached,
                        size_t *cached_bytes)
{
    *mapped = atomic_load_explicit(&mapped_count, memory_order_relaxed);
    *bytes = atomic_load_explicit(&mapped_bytes, memory_order_relaxed);
    *cached_bytes = weft__cache_depot_keys(&weft__stack_cache, cached);
}

static void unmap_stack(const weft__stack *s)
{
    atomic_fetch_sub_explicit(&mapped_count, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&mapped_bytes, s->size, memory_order_relaxed);
#ifdef WEFT_VALGRIND
    VALGRIND_STACK_DEREGISTER(s->valgrind_id);
#endif
    weft__san_stack_unmapped(s);
    munmap(s->map, s->size);
}

/* Every mapping map_stack made (weft__stacks_made). */
static _Atomic uint64_t stacks_made;

static int map_stack(weft__stack *out, size_t size)
{
    /* Callers validate against WEFT_STACK_MAX; the record keeps 32 bits. */
    if (size > UINT32_MAX)
        return -ENOMEM;
    void *map = weft__mmap(NULL, size, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
                              MAP_STACK,
                          -1, 0);
    if (map == MAP_FAILED)
        return -ENOMEM;
    /* Huge pages would commit 2 MiB per stack on first touch. */
    (void)madvise(map, size, MADV_NOHUGEPAGE);
    out->map = map;
    out->size = (uint32_t)size;
    out->canary = false;
    install_guard(out);
    atomic_fetch_add_explicit(&mapped_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&mapped_bytes, size, memory_order_relaxed);
#ifdef WEFT_VALGRIND
    out->valgrind_id = VALGRIND_STACK_REGISTER(weft__stack_low(out),
                                               (char *)map + size - 1);
#endif
    weft__san_stack_mapped(out);
    atomic_fetch_add_explicit(&stacks_made, 1, memory_order_relaxed);
    return 0;
}

uint64_t weft__stacks_made(void)
{
    return atomic_load_explicit(&stacks_made, memory_order_relaxed);
}

static void release_stack(struct weft__cache_node *n)
{
    weft__stack st = ((struct weft__free_stack *)n)->stack; /* n is inside */
    unmap_stack(&st);
}

int weft__stack_map(weft__stack *out, size_t size)
{
    int err = map_stack(out, size);
    /* No mapping to be had (address space, or vm.max_map_count): the
     * cached stacks, of other sizes than this one, may hold the room. */
    if (err && weft__cache_drain(&weft__stack_cache, &weft__stack_local))
        err = map_stack(out, size);
    return err;
}

void weft__stacks_spill(void)
{
    weft__cache_spill_all(&weft__stack_cache, &weft__stack_local);
}

size_t weft__stacks_trim(size_t keep)
{
    static pthread_mutex_t trim_lock = PTHREAD_MUTEX_INITIALIZER;
    weft__lock(&trim_lock);
    size_t n, given = 0, page = page_size();
    struct weft__cache_node *list =
        weft__cache_take_depot(&weft__stack_cache, &n);
    struct weft__cache_node *kept = NULL;
    size_t nkept = 0;
    for (struct weft__cache_node *o = list, *next; o; o = next) {
        next = o->next; /* o lives in the stack it describes */
        struct weft__free_stack *f = (struct weft__free_stack *)o;
        weft__stack st = f->stack;
        if (nkept >= keep) {
            given += st.size;
            unmap_stack(&st);
            continue;
        }
        /* Kept: its pages go back to the kernel but the top one, which
         * holds this node (a reuse faults them in again, zeroed); once,
         * until it runs again (each worker that goes idle trims, and the
         * same kept stacks were given back twice, seen with strace). */
        char *low = (char *)weft__stack_low(&st);
        char *top_page = (char *)weft__stack_top(&st) - page;
        if (!f->trimmed && top_page > low &&
            madvise(low, (size_t)(top_page - low), MADV_DONTNEED) == 0) {
            given += (size_t)(top_page - low);
            f->trimmed = true;
        }
        o->next = kept;
        kept = o;
        nkept++;
    }
    weft__cache_return_depot(&weft__stack_cache, kept, nkept);
    pthread_mutex_unlock(&trim_lock);
    return given;
}
