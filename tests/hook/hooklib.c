/*
 * hooklib.c — see hooklib.h.  Built at -O2 in its own static library
 * (meson.build), so nothing here is inlined into the tests.
 *
 * hooklib_read_errno keeps the address of errno across the blocking call,
 * as optimised code does: glibc declares __errno_location const, so the
 * compiler may compute &errno once and reuse it after a call.  Here that
 * is forced rather than hoped for: the address goes through an empty asm
 * that the compiler must assume changes it, before and after the call,
 * so it can neither compute it late nor compute it again; the value read
 * afterwards is *that* thread's errno.  If a task that parked inside
 * read(2) came back on another thread, it would read the old thread's
 * errno.  (The disassembly shows one call of __errno_location, before
 * the read; tests/hook/meson.build's comment says how to look.)
 */
/* The plain entry points, never __read_chk (hk.h says why). */
#undef _FORTIFY_SOURCE

#include "hooklib.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Not inlined, and not const: a fresh system call every time. */
__attribute__((noinline)) static long tid(void)
{
    return syscall(SYS_gettid);
}

int hooklib_read_errno(int fd, int use_recv, char *buf, ssize_t *ret,
                       struct hooklib_ids *ids)
{
    int *e = &errno;
    __asm__ volatile("" : "+r"(e));
    ids->before = tid();
    ssize_t r = use_recv ? recv(fd, buf, 1, 0) : read(fd, buf, 1);
    ids->after = tid();
    __asm__ volatile("" : "+r"(e));
    *ret = r;
    return *e;
}

ssize_t hooklib_locked_recv(pthread_mutex_t *m, int depth, int fd,
                            char *out, atomic_int *holders,
                            atomic_int *overlaps)
{
    for (int i = 0; i < depth; i++)
        if (pthread_mutex_lock(m) != 0)
            return -2;
    if (atomic_fetch_add(holders, 1) > 0)
        atomic_fetch_add(overlaps, 1);
    ssize_t r = recv(fd, out, 1, 0);
    atomic_fetch_sub(holders, 1);
    for (int i = 0; i < depth; i++)
        pthread_mutex_unlock(m);
    return r;
}
