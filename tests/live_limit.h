/*
 * live_limit.h — how many coroutines a test may keep alive at once, and how
 * long the heavier unit tests run.
 *
 * ThreadSanitizer gives every coroutine (a TSan "fiber") a slot in its
 * thread table, which holds 8128 at once, and maps memory for each (so the
 * default vm.max_map_count runs out sooner).  Valgrind looks every
 * registered stack up in a list when the stack pointer moves to another
 * one, so 100K live stacks make each switch slow.  Tests of large live
 * counts shrink to fit under both.  Both tools also run code 20x or more
 * slower, and the CI budget is minutes, so the heavier unit tests run a
 * tenth of their iterations.  Everywhere else they run at full size.
 *
 * Valgrind builds (-Dvalgrind=true, which defines WEFT_VALGRIND) shrink
 * even when run without Valgrind: the sizes must be compile-time constants,
 * and that build exists to be run under it.
 */
#ifndef WEFT_TEST_LIVE_LIMIT_H
#define WEFT_TEST_LIVE_LIMIT_H

#if defined(__SANITIZE_THREAD__)
#define WT_SLOW_TOOL 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WT_SLOW_TOOL 1
#endif
#endif
#ifdef WEFT_VALGRIND
#define WT_SLOW_TOOL 1
#endif

#ifdef WT_SLOW_TOOL
#define WT_LIVE(n) ((n) < 2000 ? (n) : 2000)
#define WT_HEAVY(n) ((n) / 10)
#else
#define WT_LIVE(n) (n)
#define WT_HEAVY(n) (n)
#endif

#endif
