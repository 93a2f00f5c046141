/*
 * hook/fdkind.h — what the hook has learnt of an fd: a socket, or not
 * (internal to libweft-hook).
 *
 * read(2) and write(2) on a socket are recv and send with no flags, so
 * the hook makes them with MSG_DONTWAIT (the fd's own flags untouched);
 * on anything else (a file, a pipe, a terminal) it calls libc's read and
 * write unchanged.  It learns which an fd is from the first try:
 * ENOTSOCK marks it "other".  The mark is only a hint, and wrong in the
 * safe direction only: a socket marked "other" (its number reused by a
 * path the hook does not see, fclose or a library's own close) is read
 * with the real read, which blocks the worker as libc would, and an
 * "other" marked a socket fails the try with ENOTSOCK and is re-marked.
 * socket, accept, close and dup2 keep the marks up to date where they
 * can.  fds at or above FDKIND_MAX are always tried.
 */
#ifndef WEFT_HOOK_FDKIND_H
#define WEFT_HOOK_FDKIND_H

#include <stdatomic.h>

enum { FD_UNKNOWN = 0, FD_SOCKET = 1, FD_OTHER = 2 };
#define FDKIND_MAX 65536

extern _Atomic unsigned char weft_hook_fdkind[FDKIND_MAX];

/* Relaxed: a hint (see the top), never a guard of other memory. */
static inline unsigned fdkind_get(int fd)
{
    return fd >= 0 && fd < FDKIND_MAX
               ? atomic_load_explicit(&weft_hook_fdkind[fd],
                                      memory_order_relaxed)
               : FD_UNKNOWN;
}

static inline void fdkind_set(int fd, unsigned kind)
{
    if (fd >= 0 && fd < FDKIND_MAX)
        atomic_store_explicit(&weft_hook_fdkind[fd], (unsigned char)kind,
                              memory_order_relaxed);
}

#endif /* WEFT_HOOK_FDKIND_H */
