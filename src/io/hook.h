/*
 * io/hook.h — what the io layer exports for the interposition library
 * (io/io.c has the definition; src/hook/ the library).  Not public: the
 * two are built and installed together.
 */
#ifndef WEFT_IO_HOOK_H
#define WEFT_IO_HOOK_H

#include <stdbool.h>
#include <stdint.h>

#include <weft/coro.h>

int weft__hook_wait_fd(int fd, unsigned events, uint64_t timeout_ns);

/* weft_blocking, also saying, on -ECANCELED, whether fn runs all the same
 * (*runs: a blocking thread had taken it, and it runs on to its end) or
 * never will (withdrawn, or cancelled before the call): a caller whose
 * request fn frees must know which (hook/resolve.c). */
int weft__hook_blocking(weft_fn fn, void *arg, void **result, bool *runs);

#endif /* WEFT_IO_HOOK_H */
