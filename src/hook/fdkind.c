/*
 * hook/fdkind.c — the table of hook/fdkind.h, and the calls that keep
 * it: socket, socketpair, close, dup, dup2, dup3, fcntl's F_DUPFD
 * (accept's are in hook/connect.c, fds received with SCM_RIGHTS in
 * hook/io.c), and
 * fcntl, ioctl and setsockopt, whose changes of a blocking mode or a
 * timeout make every kept mode stale.  Each is libc's call, then the
 * note.
 */
#include "hook/fdkind.h"

#include "hook/real.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HOOK_API __attribute__((visibility("default")))

_Atomic uint32_t weft_hook_fdinfo[FDKIND_MAX];
_Atomic uint32_t weft_hook_mode_gen;
atomic_bool weft_hook_rcvlowat_seen;

HOOK_API int socket(int domain, int type, int protocol)
{
    int fd = REAL(socket)(domain, type, protocol);
    fdkind_set(fd, FD_SOCKET);
    return fd;
}

HOOK_API int socketpair(int domain, int type, int protocol, int sv[2])
{
    int r = REAL(socketpair)(domain, type, protocol, sv);
    if (r == 0) {
        fdkind_set(sv[0], FD_SOCKET);
        fdkind_set(sv[1], FD_SOCKET);
    }
    return r;
}

HOOK_API int dup(int oldfd)
{
    int r = REAL(dup)(oldfd);
    if (r >= 0)
        fdkind_set(r, fdkind_get(oldfd));
    return r;
}

HOOK_API int close(int fd)
{
    /* Before the close: once it is closed, another thread may get the
     * number and mark it. */
    fdkind_set(fd, FD_UNKNOWN);
    return REAL(close)(fd);
}

HOOK_API int dup2(int oldfd, int newfd)
{
    int r = REAL(dup2)(oldfd, newfd);
    if (r >= 0)
        fdkind_set(r, fdkind_get(oldfd));
    return r;
}

HOOK_API int dup3(int oldfd, int newfd, int flags)
{
    int r = REAL(dup3)(oldfd, newfd, flags);
    if (r >= 0)
        fdkind_set(r, fdkind_get(oldfd));
    return r;
}

/* What an fcntl that returned r changed: a new fd (a dup), or the
 * flags. */
static void fcntl_done(int fd, int cmd, int r)
{
    if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && r >= 0)
        fdkind_set(r, fdkind_get(fd));
    else if (cmd == F_SETFL && r == 0)
        mode_changed();
}

/* fcntl's third argument, whatever its type: read as a pointer, which on
 * the ABIs weft supports carries an int or a pointer alike (glibc's own
 * fcntl reads it so).  Named by assembler labels: with 64-bit file
 * offsets, <fcntl.h> renames fcntl to fcntl64, and both symbols are
 * called (older programs and libraries call fcntl). */
HOOK_API int hook_fcntl(int fd, int cmd, ...) __asm__("fcntl");
HOOK_API int hook_fcntl64(int fd, int cmd, ...) __asm__("fcntl64");

/* The argument read as a pointer, handed to libc's function of the same
 * name, then noted. */
#define FORWARD_FCNTL(real)                                             \
    do {                                                                \
        va_list ap;                                                     \
        va_start(ap, cmd);                                              \
        void *arg = va_arg(ap, void *);                                 \
        va_end(ap);                                                     \
        int r = REAL(real)(fd, cmd, arg);                               \
        fcntl_done(fd, cmd, r);                                         \
        return r;                                                       \
    } while (0)

HOOK_API int hook_fcntl(int fd, int cmd, ...)
{
    FORWARD_FCNTL(fcntl);
}

HOOK_API int hook_fcntl64(int fd, int cmd, ...)
{
    FORWARD_FCNTL(fcntl64);
}

HOOK_API int ioctl(int fd, unsigned long request, ...)
{
    va_list ap;
    va_start(ap, request);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    int r = REAL(ioctl)(fd, request, arg);
    if (request == FIONBIO && r == 0)
        mode_changed();
    return r;
}

/* SO_RCVTIMEO and SO_SNDTIMEO, and their explicitly old and new (64-bit
 * time) names where the headers have them. */
static bool is_timeout_option(int name)
{
    switch (name) {
    case SO_RCVTIMEO:
    case SO_SNDTIMEO:
#if defined(SO_RCVTIMEO_NEW) && SO_RCVTIMEO_NEW != SO_RCVTIMEO
    case SO_RCVTIMEO_NEW:
    case SO_SNDTIMEO_NEW:
#endif
#if defined(SO_RCVTIMEO_OLD) && SO_RCVTIMEO_OLD != SO_RCVTIMEO
    case SO_RCVTIMEO_OLD:
    case SO_SNDTIMEO_OLD:
#endif
        return true;
    default:
        return false;
    }
}

HOOK_API int setsockopt(int fd, int level, int name, const void *value,
                        socklen_t len)
{
    int r = REAL(setsockopt)(fd, level, name, value, len);
    if (level == SOL_SOCKET && r == 0 && is_timeout_option(name))
        mode_changed();
    int mark;
    if (level == SOL_SOCKET && r == 0 && name == SO_RCVLOWAT &&
        len >= sizeof mark) {
        memcpy(&mark, value, sizeof mark);
        if (mark > 1)
            atomic_store_explicit(&weft_hook_rcvlowat_seen, true,
                                  memory_order_release);
    }
    return r;
}
