/*
 * live_limit.h — how many coroutines a test may keep alive at once.
 *
 * ThreadSanitizer gives every coroutine (a TSan "fiber") a slot in its
 * thread table, which holds 8128 at once, and maps memory for each (so the default
 * vm.max_map_count runs out sooner); tests of large live counts
 * shrink to fit under it.  Everywhere else they run at full size.
 */
#ifndef WEFT_TEST_LIVE_LIMIT_H
#define WEFT_TEST_LIVE_LIMIT_H

#if defined(__SANITIZE_THREAD__)
#define WT_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WT_UNDER_TSAN 1
#endif
#endif

#ifdef WT_UNDER_TSAN
#define WT_LIVE(n) ((n) < 2000 ? (n) : 2000)
/* Iteration counts of the heavier unit tests: TSan runs them ~20x slower,
 * and the CI budget is minutes. */
#define WT_HEAVY(n) ((n) / 10)
#else
#define WT_LIVE(n) (n)
#define WT_HEAVY(n) (n)
#endif

#endif
