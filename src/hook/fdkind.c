/*
 * hook/fdkind.c — the marks of hook/fdkind.h, and the calls that keep
 * them: socket, socketpair, close, dup2, dup3 (accept's are in
 * hook/connect.c).  Each is libc's call, then the mark.
 */
#include "hook/fdkind.h"

#include "hook/real.h"

#include <errno.h>
#include <unistd.h>

#define HOOK_API __attribute__((visibility("default")))

_Atomic unsigned char weft_hook_fdkind[FDKIND_MAX];

HOOK_API int socket(int domain, int type, int protocol)
{
    int fd = REAL(socket)(domain, type, protocol);
    fdkind_set(fd, FD_SOCKET);
    return fd;
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
