/*
 * io/hook.h — what the io layer exports for the interposition library
 * (io/io.c has the definition; src/hook/ the library).  Not public: the
 * two are built and installed together.
 */
#ifndef WEFT_IO_HOOK_H
#define WEFT_IO_HOOK_H

#include <stdint.h>

int weft__hook_wait_fd(int fd, unsigned events, uint64_t timeout_ns);

#endif /* WEFT_IO_HOOK_H */
