/*
 * hooklib_lfs.c — part of the test "library" (hooklib.h) built with 64-bit
 * file offsets, as autoconf's AC_SYS_LARGEFILE builds many libraries:
 * <fcntl.h> then renames fcntl to fcntl64, a second entry point.
 */
#define _FILE_OFFSET_BITS 64

#include "hooklib.h"

#include <fcntl.h>

int hooklib_set_nonblock_lfs(int fd, int on)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return -1;
    return fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}
