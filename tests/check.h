/*
 * check.h — checks usable on any thread, in task bodies too.
 *
 * cmocka's asserts longjmp out of the test, which must not happen on a
 * worker thread or inside a task.  CHECK and CHECK_EQ instead count a
 * failure (and print the first 20); the main thread asserts at the end of
 * each case (pool tests) or of the run (stress tests) that the count is 0.
 */
#ifndef WEFT_TEST_CHECK_H
#define WEFT_TEST_CHECK_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

__attribute__((unused)) static atomic_long check_failures;

static inline void check_fail(const char *file, int line, const char *expr,
                              long long a, long long b, int has_values)
{
    if (atomic_fetch_add(&check_failures, 1) < 20) {
        if (has_values)
            fprintf(stderr, "%s:%d: check failed: %s (%lld vs %lld)\n",
                    file, line, expr, a, b);
        else
            fprintf(stderr, "%s:%d: check failed: %s\n", file, line, expr);
    }
}

#define CHECK(c)                                                        \
    do {                                                                \
        if (!(c))                                                       \
            check_fail(__FILE__, __LINE__, #c, 0, 0, 0);                \
    } while (0)

#define CHECK_EQ(a, b)                                                  \
    do {                                                                \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b); \
        if (check_a_ != check_b_)                                       \
            check_fail(__FILE__, __LINE__, #a " == " #b, check_a_,      \
                       check_b_, 1);                                    \
    } while (0)

#define CHECK_PTR_EQ(a, b)                                              \
    do {                                                                \
        const void *check_pa_ = (const void *)(a);                      \
        const void *check_pb_ = (const void *)(b);                      \
        if (check_pa_ != check_pb_)                                     \
            check_fail(__FILE__, __LINE__, #a " == " #b,                \
                       (long long)(uintptr_t)check_pa_,                 \
                       (long long)(uintptr_t)check_pb_, 1);             \
    } while (0)

#endif
