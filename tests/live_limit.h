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
 * AddressSanitizer keeps the iterations but caps the live count (below).
 *
 * Valgrind builds (-Dvalgrind=true, which defines WEFT_VALGRIND) shrink
 * even when run without Valgrind: the sizes must be compile-time constants,
 * and that build exists to be run under it.
 */
#ifndef WEFT_TEST_LIVE_LIMIT_H
#define WEFT_TEST_LIVE_LIMIT_H

#if defined(__SANITIZE_THREAD__)
#define WT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WT_TSAN 1
#endif
#endif
#if defined(WT_TSAN) || defined(WEFT_VALGRIND)
#define WT_SLOW_TOOL 1
#endif

#if defined(__SANITIZE_ADDRESS__)
#define WT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WT_ASAN 1
#endif
#endif

/* Any of the three tools: a case that runs at several pool sizes
 * natively may run at one of them under a tool (wt.h, WT_TEST_SLOW). */
#if defined(WT_SLOW_TOOL) || defined(WT_ASAN)
#define WT_UNDER_TOOL 1
#endif

#ifdef WT_SLOW_TOOL
/* 500: gcc 12's TSan takes about 6 ms to make each fiber, and 2,000 live
 * took 13 s a case (test_coro's two, test_task's chains); the tools find
 * what they find at 500 as at 2,000, and the plain build counts to the
 * full size. */
#define WT_LIVE(n) ((n) < 500 ? (n) : 500)
#define WT_HEAVY(n) ((n) / 10)
#elif defined(WT_ASAN)
/* AddressSanitizer: every iteration, but at most 5,000 live at once: it
 * intercepts each stack's mapping and keeps its own record of each, and
 * 100,000 live default stacks took 37 s of CI's ASan build, 20,000 about
 * 10 s (and a 10,000-deep chain of lazy awaits 5-6 s a case), with
 * nothing more to find than at 5,000 (the count itself is the plain
 * build's). */
#define WT_LIVE(n) ((n) < 5000 ? (n) : 5000)
#define WT_HEAVY(n) (n)
#else
#define WT_LIVE(n) (n)
#define WT_HEAVY(n) (n)
#endif

#endif
