/*
 * sanitizer.h — telling AddressSanitizer, ThreadSanitizer and Valgrind
 * about context switches (internal).
 *
 * Both tools assume a thread runs on one stack.  ASan keeps the bounds of
 * that stack (to describe addresses, and to unpoison what a noreturn call
 * abandons) and a "fake stack" of frames moved off it; TSan keeps a shadow
 * call stack and a happens-before clock.  A stack switch they are not told
 * about corrupts all of these.  So every context carries a weft__san_fiber,
 * and every switch is announced:
 *
 *   weft__san_switch(from, to)    right before a jump from a context that
 *                                 may run again;
 *   weft__san_switch_last(from, to)  right before a context's last jump (it
 *                                 never runs again: ASan frees its fake
 *                                 stack, the NULL save slot of its API);
 *   weft__san_arrived(self)       first thing after a jump returns in self,
 *                                 and first thing a fresh context does.
 *
 * The post-switch ("ontop") action needs nothing of its own: it runs on the
 * destination stack between the start of the switch and the destination's
 * arrival, which ASan allows (while a switch is in flight it picks the
 * stack bounds from the stack pointer).  A context that moves between
 * threads needs nothing either: a switch starts and finishes on one thread,
 * and what ASan must carry along (the fake stack, the bounds) is kept in
 * the context's record, not in the thread.
 *
 * TSan switches synchronise (flags 0), not through
 * __tsan_switch_to_fiber_no_sync: a switch is a real ordering point between
 * the two contexts on one thread (the resumer writes co->resumer, then the
 * coroutine reads it), and with no_sync every such hand-off would be
 * reported.  What a switch cannot order is a context moving to another
 * thread; that still goes through weft's atomics (the claim, the queues),
 * which TSan checks, so a missing acquire or release there is still
 * reported.
 *
 * A TSan fiber belongs to a stack, not to a context.  To TSan a fiber is a
 * thread, with a slot in its thread table and a trace: made and destroyed
 * once per task, fibers made a task's spawn and sync_wait cost 6-9 ms
 * under gcc 12's runtime (0.18 ms under clang 14's), against 0.05 ms
 * with one fiber per stack.  So stack.c makes a fiber when it maps a
 * stack and destroys it when it unmaps the stack (the depot's bound, a
 * trim, a drain, a thread's spill at exit), and every context made on
 * that stack runs as its fiber.  Two things a fiber keeps from one
 * context to the next must then look to TSan as they would in a new one:
 *
 *   - Its clock.  A fresh fiber starts with its creator's clock, and its
 *     first switch-in adds the clock of whoever switches to it.  A reused
 *     fiber starts with what the last context on the stack knew, and the
 *     same switch-in adds its starter's clock.  The starter knew all of the
 *     former already: the last context's final switch released it to the
 *     context switched to, and the stack got from there to the starter
 *     only through hand-offs TSan sees (between contexts on one thread,
 *     every switch synchronises; between threads, the depot's mutex).  So
 *     the new context starts with the starter's clock, as in a fresh fiber:
 *     no race hidden, none made up.  The fiber's own epoch has moved past
 *     its last release, so no other thread has seen the new context's
 *     accesses yet.  TSan takes a fiber's accesses as ordered among
 *     themselves; those of two contexts on one stack are (the first ended
 *     before the stack was handed on).
 *
 *   - Its shadow call stack.  An instrumented function pushes a frame at
 *     entry and pops it at its return, and a context's entry function
 *     never returns: it ends with a jump, in itself or in a function it
 *     calls.  Those frames would stay on the fiber, one or two more with
 *     each context on the stack, until the shadow stack (64K entries)
 *     overflowed.  So the last switch pops them: a context's first arrival
 *     notes the frame of its entry function (entry_frame), and
 *     weft__san_switch_last, inlined into the function that makes the last
 *     jump, pops one frame if that is the entry function and two if the
 *     entry function called it (its saved frame pointer is the entry's
 *     frame: __builtin_frame_address makes both functions keep one).  Any
 *     other shape is a bug of the caller's, reported on the spot.
 *     tests/test_tsan_fibers.c checks that a stack's hundredth context
 *     shows the same shadow stack as its first.
 *
 * In a TSan report, then, a fiber ("thread Tn") stands for a stack, and
 * its "created at" names the call that first mapped it.  And the fibers
 * of cached stacks count as live threads: a process that forks after it
 * has used weft is a multi-threaded one to TSan (docs/testing.md).
 *
 * Everything here compiles to nothing in other builds, where a context's
 * record has no member for it (a task's record is 8 bytes smaller).
 */
#ifndef WEFT_SANITIZER_H
#define WEFT_SANITIZER_H

#include <stddef.h>

#include "ctx/sanitizer_build.h"
#include "ctx/stack.h"

/* What the sanitizers need to know about one context: a member of the
 * context's record in sanitized builds only (a record of none in others,
 * where every call below takes NULL and compiles to nothing).  Reach it
 * with weft__san_of(co). */
#if defined(WEFT_TSAN) || defined(WEFT_ASAN)
#define WEFT__SAN_FIBERS 1
struct weft__san_fiber {
#ifdef WEFT_TSAN
    void *tsan;               /* its stack's TSan fiber                  */
    void *entry_frame;        /* its entry function's frame, once started */
#endif
#ifdef WEFT_ASAN
    void *fake_stack;         /* ASan's fake frames while switched out   */
    const void *bottom;       /* its stack, lowest address and size      */
    size_t size;
#endif
};
#define weft__san_of(co) (&(co)->san)
#else
struct weft__san_fiber;
#define weft__san_of(co) ((void)(co), (struct weft__san_fiber *)NULL)
#endif

#ifdef WEFT_TSAN
#include <stdio.h>
#include <stdlib.h>

void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
void __tsan_func_exit(void);
void __tsan_release(void *addr);
#endif

#ifdef WEFT_ASAN
#include <pthread.h>

void __sanitizer_start_switch_fiber(void **fake_stack_save,
                                    const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save,
                                     const void **bottom_old,
                                     size_t *size_old);
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#endif

#ifdef WEFT_VALGRIND
#include <valgrind/memcheck.h>
#endif

/* A new context, about to be made on stack s: before anything is written
 * to that stack. */
static inline void weft__san_fiber_new(struct weft__san_fiber *f,
                                       const weft__stack *s)
{
#ifdef WEFT_VALGRIND
    /* Memcheck marked what the last context on this stack popped as
     * unaddressable.  Defined is right for the whole stack: frames pushed
     * from now on are marked undefined as the stack pointer moves down. */
    VALGRIND_MAKE_MEM_DEFINED(weft__stack_low(s), weft__stack_usable(s));
#endif
#ifdef WEFT_TSAN
    f->tsan = s->tsan_fiber;
    f->entry_frame = NULL;
#endif
#ifdef WEFT_ASAN
    /* The stack may come from a context that died on it: the frames it
     * never returned from left their redzones poisoned. */
    __asan_unpoison_memory_region(weft__stack_low(s), weft__stack_usable(s));
    f->fake_stack = NULL;
    f->bottom = weft__stack_low(s);
    f->size = weft__stack_usable(s);
#endif
    (void)f;
    (void)s;
}

/* A thread's own context: the stack and TSan fiber it already runs on. */
static inline void weft__san_fiber_thread(struct weft__san_fiber *f)
{
#ifdef WEFT_TSAN
    f->tsan = __tsan_get_current_fiber();
    f->entry_frame = NULL;
#endif
#ifdef WEFT_ASAN
    /* The same bounds ASan computes for the thread (it asks glibc too). */
    pthread_attr_t attr;
    void *bottom = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        (void)pthread_attr_getstack(&attr, &bottom, &size);
        pthread_attr_destroy(&attr);
    }
    f->fake_stack = NULL;
    f->bottom = bottom;
    f->size = size;
#endif
    (void)f;
}

/* A stack just mapped (stack.c): its fiber, for every context on it. */
static inline void weft__san_stack_mapped(weft__stack *s)
{
#ifdef WEFT_TSAN
    s->tsan_fiber = __tsan_create_fiber(0);
#endif
    (void)s;
}

/* A stack about to be unmapped: no context runs on it any more.  Under
 * ASan its shadow is cleared: frames that never returned (a context's
 * entry, a switch) left their redzones poisoned, and the shadow outlives
 * the mapping, so memory mapped there later (a library the dump maps, a
 * user's mmap) would read as a stack-buffer-underflow. */
static inline void weft__san_stack_unmapped(const weft__stack *s)
{
#ifdef WEFT_TSAN
    __tsan_destroy_fiber(s->tsan_fiber);
#endif
#ifdef WEFT_ASAN
    __asan_unpoison_memory_region(weft__stack_low(s), weft__stack_usable(s));
#endif
    (void)s;
}

/*
 * The annotations must be inlined into the function that jumps (or, for
 * weft__san_arrived, that a jump returns to or a fresh context starts in).
 * TSan's instrumentation pops a function's frame from the shadow stack of
 * the fiber current at its return: a helper that switched fibers and then
 * returned would pop the destination's shadow stack instead of its own
 * (clang 14 left weft__san_switch out of line: most tests crashed).  And
 * the frames that the last switch pops are found by the frame addresses
 * of those functions.
 */
#define WEFT__SAN_INLINE static inline __attribute__((always_inline))

/*
 * Right before weft__san_switch, for a switch that publishes the leaving
 * context's state word (SUSPENDED: a yield, a transfer).  The switch's
 * store is a plain one in assembly, which TSan does not see; a resume
 * from another thread claims the context with an acquire on that word
 * (claim.h's slow claim), and without a release there to pair with TSan
 * took what the leaving context wrote (its resumer, its resumer's slot)
 * and the next owner's writes of the same fields for a race
 * (tests/test_coro_threads.c, test_resume_race_unordered).
 */
WEFT__SAN_INLINE void weft__san_publish(void *state)
{
#ifdef WEFT_TSAN
    __tsan_release(state);
#endif
    (void)state;
}

/* Right before a jump from `from`, which will be resumed later, to `to`. */
WEFT__SAN_INLINE void weft__san_switch(struct weft__san_fiber *from,
                                    const struct weft__san_fiber *to)
{
#ifdef WEFT_TSAN
    __tsan_switch_to_fiber(to->tsan, 0);
#endif
#ifdef WEFT_ASAN
    __sanitizer_start_switch_fiber(&from->fake_stack, to->bottom, to->size);
#endif
    (void)from;
    (void)to;
}

#ifdef WEFT_TSAN
/* The last switch was made neither in its context's entry function nor in
 * a function that the entry called: the frames left on the fiber's shadow
 * stack are not known, and reusing the fiber would pile them up. */
__attribute__((noinline, cold, noreturn, unused)) static void
weft__san_unknown_end(void)
{
    fputs("weft: ThreadSanitizer annotations: a context's last switch must "
          "be made in its entry function or in a function that the entry "
          "calls (src/ctx/sanitizer.h)\n",
          stderr);
    abort();
}
#endif

/* Right before the last jump of the running context, `from`, to `to`. */
WEFT__SAN_INLINE void weft__san_switch_last(struct weft__san_fiber *from,
                                         const struct weft__san_fiber *to)
{
#ifdef WEFT_TSAN
    /* The frames this context never returns from leave the fiber's shadow
     * stack now, while it is current (see the top). */
    void *const *frame = __builtin_frame_address(0);
    if (frame == from->entry_frame) {
        __tsan_func_exit();
    } else if (frame[0] == from->entry_frame) {
        __tsan_func_exit();
        __tsan_func_exit();
    } else {
        weft__san_unknown_end();
    }
    __tsan_switch_to_fiber(to->tsan, 0);
#endif
#ifdef WEFT_ASAN
    __sanitizer_start_switch_fiber(NULL, to->bottom, to->size);
#endif
    (void)from;
    (void)to;
}

/* First thing on arrival in `self`, after a jump or at a fresh start. */
WEFT__SAN_INLINE void weft__san_arrived(struct weft__san_fiber *self)
{
#ifdef WEFT_TSAN
    /* The first arrival is the entry function's (weft__san_switch_last). */
    if (!self->entry_frame)
        self->entry_frame = __builtin_frame_address(0);
#endif
#ifdef WEFT_ASAN
    __sanitizer_finish_switch_fiber(self->fake_stack, NULL, NULL);
#endif
    (void)self;
}

#endif /* WEFT_SANITIZER_H */
