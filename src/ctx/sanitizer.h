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
 *   weft__san_switch_last(to)     right before a context's last jump (it
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
 * Everything here compiles to nothing in other builds, and the record keeps
 * the layout it has there, so the hot paths' code is the same with or
 * without this header.
 */
#ifndef WEFT_SANITIZER_H
#define WEFT_SANITIZER_H

#include <stddef.h>

#include "ctx/stack.h"

#if defined(__SANITIZE_THREAD__)
#define WEFT_TSAN 1
#endif
#if defined(__SANITIZE_ADDRESS__)
#define WEFT_ASAN 1
#endif
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WEFT_TSAN 1
#endif
#if __has_feature(address_sanitizer)
#define WEFT_ASAN 1
#endif
#endif

/* What the sanitizers need to know about one context. */
struct weft__san_fiber {
    void *tsan;               /* its TSan fiber (TSan builds)            */
#ifdef WEFT_ASAN
    void *fake_stack;         /* ASan's fake frames while switched out   */
    const void *bottom;       /* its stack, lowest address and size      */
    size_t size;
#endif
};

#ifdef WEFT_TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
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
    f->tsan = __tsan_create_fiber(0);
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

/* A context that will never run again (not the current one). */
static inline void weft__san_fiber_gone(struct weft__san_fiber *f)
{
#ifdef WEFT_TSAN
    if (f->tsan)
        __tsan_destroy_fiber(f->tsan);
    f->tsan = NULL;
#endif
    (void)f;
}

/*
 * The two switch announcements must be inlined into the function that
 * jumps.  TSan's instrumentation pops a function's frame from the shadow
 * stack of the fiber current at its return: a helper that switched fibers
 * and then returned would pop the destination's shadow stack instead of its
 * own (clang 14 left weft__san_switch out of line: most tests crashed).
 */
#define WEFT__SAN_INLINE static inline __attribute__((always_inline))

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

/* Right before the last jump of the running context, to `to`. */
WEFT__SAN_INLINE void weft__san_switch_last(const struct weft__san_fiber *to)
{
#ifdef WEFT_TSAN
    __tsan_switch_to_fiber(to->tsan, 0);
#endif
#ifdef WEFT_ASAN
    __sanitizer_start_switch_fiber(NULL, to->bottom, to->size);
#endif
    (void)to;
}

/* First thing on arrival in `self`, after a jump or at a fresh start. */
static inline void weft__san_arrived(struct weft__san_fiber *self)
{
#ifdef WEFT_ASAN
    __sanitizer_finish_switch_fiber(self->fake_stack, NULL, NULL);
#endif
    (void)self;
}

#endif /* WEFT_SANITIZER_H */
