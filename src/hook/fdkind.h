/*
 * hook/fdkind.h — what the hook has learnt of an fd (internal to
 * libweft-hook): whether it is a socket, and whether it is blocking and
 * has send or receive timeouts.
 *
 * Socket or not.  read(2) and write(2) on a socket are recv and send with
 * no flags, so the hook makes them with MSG_DONTWAIT (the fd's own flags
 * untouched); on anything else (a file, a pipe, a terminal) it calls
 * libc's read and write unchanged.  It learns which an fd is from the
 * first try: ENOTSOCK marks it "other".  The mark is a hint, wrong in the
 * safe direction only: a socket marked "other" (its number reused by a
 * path the hook does not see, fclose or a library's own close) is read
 * with the real read, which blocks the worker as libc would, and an
 * "other" marked a socket fails the try with ENOTSOCK and is re-marked.
 * socket, accept, close and dup2 keep the marks up to date where they
 * can.
 *
 * Mode.  A call that would block must know whether the caller's fd is
 * non-blocking (then EAGAIN, not a park) and its SO_RCVTIMEO or
 * SO_SNDTIMEO: an fcntl and a getsockopt, two system calls per park that
 * a client making one request after another would pay on every one.  So
 * the answer is kept, stamped with a generation that every change of
 * those settings made through the hooked fcntl, ioctl(FIONBIO) and
 * setsockopt moves on, for all fds at once (a setting belongs to the open
 * file, which other fd numbers may share: dup).  A change the hook cannot
 * see (another process sharing the socket, a library's direct system
 * call) leaves a stale answer: a socket made non-blocking that way could
 * park where libc says EAGAIN (docs/foreign.md says so).
 *
 * Request and reply.  A client that sends a request and reads the reply
 * finds nothing to read on its first try, every time: a system call that
 * fails.  So a socket whose last receive had to park parks first on the
 * next one (its registration is level-triggered: a reply that is already
 * there is reported at once), until a receive fills the caller's buffer
 * (a stream, where a try would have found data).
 *
 * fds at or above FDKIND_MAX are always tried and always asked.
 */
#ifndef WEFT_HOOK_FDKIND_H
#define WEFT_HOOK_FDKIND_H

#include <stdatomic.h>
#include <stdint.h>

enum { FD_UNKNOWN = 0, FD_SOCKET = 1, FD_OTHER = 2, FD_KIND = 3 };
/* The mode bits, valid when MODE_KNOWN is set and the generation (bits
 * 8-31) is the current one. */
enum {
    FD_MODE_KNOWN = 4,
    FD_NONBLOCK = 8,
    FD_RCVTIMEO = 16,
    FD_SNDTIMEO = 32,
};
/* Not a mode bit (kept across generations): the last receive on this
 * socket had to park, so the next one parks first (hook/io.c,
 * parks_first). */
enum { FD_WAITS = 64 };
#define FD_GEN_SHIFT 8
#define FDKIND_MAX 65536

extern _Atomic uint32_t weft_hook_fdinfo[FDKIND_MAX];
extern _Atomic uint32_t weft_hook_mode_gen;
/* Whether the program has set SO_RCVLOWAT above 1 on some socket through
 * the hooked setsockopt (hook/io.c, waits_for_mark).  Release when set,
 * acquire when read: a receive that follows the setsockopt in the
 * program's order sees it. */
extern atomic_bool weft_hook_rcvlowat_seen;

/* Relaxed throughout: hints (see the top), never a guard of other
 * memory. */
static inline uint32_t fdinfo_get(int fd)
{
    return fd >= 0 && fd < FDKIND_MAX
               ? atomic_load_explicit(&weft_hook_fdinfo[fd],
                                      memory_order_relaxed)
               : 0;
}

static inline void fdinfo_set(int fd, uint32_t info)
{
    if (fd >= 0 && fd < FDKIND_MAX)
        atomic_store_explicit(&weft_hook_fdinfo[fd], info,
                              memory_order_relaxed);
}

static inline unsigned fdkind_get(int fd)
{
    return fdinfo_get(fd) & FD_KIND;
}

/* A new kind: what was known of the mode goes. */
static inline void fdkind_set(int fd, unsigned kind)
{
    fdinfo_set(fd, kind);
}

static inline uint32_t mode_gen(void)
{
    return atomic_load_explicit(&weft_hook_mode_gen, memory_order_relaxed) &
           0xffffffu;
}

/* A setting changed somewhere: every answer kept so far is stale. */
static inline void mode_changed(void)
{
    atomic_fetch_add_explicit(&weft_hook_mode_gen, 1, memory_order_relaxed);
}

#endif /* WEFT_HOOK_FDKIND_H */
