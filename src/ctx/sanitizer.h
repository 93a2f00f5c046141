/*
 * sanitizer.h — telling ThreadSanitizer about context switches (internal).
 *
 * TSan keeps a shadow call stack and a happens-before clock per thread; a
 * stack switch it does not know about corrupts both.  Each context gets a
 * TSan fiber, and every switch announces its destination first.
 *
 * The switches synchronise (flags 0), unlike DESIGN.md's suggestion of
 * __tsan_switch_to_fiber_no_sync: a switch is a real ordering point between
 * the two contexts on one thread (the resumer writes co->resumer, then the
 * coroutine reads it), and with no_sync every such hand-off would be
 * reported.  What a switch cannot order is a context moving to another
 * thread; that still goes through weft's atomics (the claim, the queues),
 * which TSan checks, so a missing acquire or release there is still
 * reported.  Everything here compiles to nothing in other builds.
 */
#ifndef WEFT_SANITIZER_H
#define WEFT_SANITIZER_H

#if defined(__SANITIZE_THREAD__)
#define WEFT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WEFT_TSAN 1
#endif
#endif

#include "coro.h"

#ifdef WEFT_TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);

/* A new context, about to be made. */
static inline void weft__san_fiber_new(struct weft_coro *co)
{
    co->tsan_fiber = __tsan_create_fiber(0);
}

/* A thread's own context: the fiber TSan already runs it on. */
static inline void weft__san_fiber_thread(struct weft_coro *root)
{
    root->tsan_fiber = __tsan_get_current_fiber();
}

/* A context that will never run again (not the current one). */
static inline void weft__san_fiber_gone(struct weft_coro *co)
{
    if (co->tsan_fiber)
        __tsan_destroy_fiber(co->tsan_fiber);
    co->tsan_fiber = 0;
}

/* Right before switching to `to`. */
static inline void weft__san_switch(struct weft_coro *to)
{
    __tsan_switch_to_fiber(to->tsan_fiber, 0);
}
#else
static inline void weft__san_fiber_new(struct weft_coro *co) { (void)co; }
static inline void weft__san_fiber_thread(struct weft_coro *root) { (void)root; }
static inline void weft__san_fiber_gone(struct weft_coro *co) { (void)co; }
static inline void weft__san_switch(struct weft_coro *to) { (void)to; }
#endif

#endif /* WEFT_SANITIZER_H */
