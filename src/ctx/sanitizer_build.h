/*
 * sanitizer_build.h — which sanitizer this build is compiled with
 * (internal): WEFT_TSAN under ThreadSanitizer, WEFT_ASAN under
 * AddressSanitizer, each from the compiler's own feature test (gcc
 * defines __SANITIZE_*__, clang answers __has_feature).
 *
 * On its own, apart from the annotations (sanitizer.h), because the stack
 * record (stack.h) holds a field of TSan builds, and sanitizer.h needs that
 * record: both include this.
 */
#ifndef WEFT_SANITIZER_BUILD_H
#define WEFT_SANITIZER_BUILD_H

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

#endif /* WEFT_SANITIZER_BUILD_H */
