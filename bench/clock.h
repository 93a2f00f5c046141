/*
 * clock.h — the one clock every bench implementation uses (weft and peers).
 *
 * CLOCK_MONOTONIC, in nanoseconds: wall time that NTP slews but never steps,
 * which is what a throughput figure needs.  Each implementation reads it
 * itself around its timed loop, so setup (creating the first coroutine,
 * allocating a stack pool) stays outside the figure for all of them alike.
 *
 * Header-only and valid C11 and C++17, so C peers, C++ peers and the runner
 * share it without a library.
 */
#ifndef WEFT_BENCH_CLOCK_H
#define WEFT_BENCH_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* WEFT_BENCH_CLOCK_H */
