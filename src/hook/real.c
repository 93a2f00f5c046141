/*
 * hook/real.c — the lookups of hook/real.h, and the symbol that programs
 * built in this tree reference to keep the library linked
 * (src/hook/anchor.c).
 */
#include "hook/real.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((visibility("default"))) const int weft_hook_linked = 1;

struct weft_hook_real weft_hook_real;

/* A function pointer from dlsym's object pointer (POSIX guarantees the
 * conversion; ISO C does not say, hence the memcpy). */
static void look_up(void *slot, const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        /* libc always has these: a lookup failing means the library was
         * loaded in a way it cannot work (statically linked program). */
        static const char msg[] = "weft-hook: a libc function is missing\n";
        /* Not write(): that is ours, and may be the one missing. */
        long w = syscall(SYS_write, STDERR_FILENO, msg, sizeof msg - 1);
        (void)w;
        abort();
    }
    __atomic_store((void **)slot, &p, __ATOMIC_RELAXED);
}

#define LOOK_UP(name) look_up(&weft_hook_real.name, #name)

__attribute__((constructor(101))) void weft_hook_resolve(void)
{
    LOOK_UP(read);
    LOOK_UP(write);
    LOOK_UP(readv);
    LOOK_UP(writev);
    LOOK_UP(recv);
    LOOK_UP(recvfrom);
    LOOK_UP(recvmsg);
    LOOK_UP(send);
    LOOK_UP(sendto);
    LOOK_UP(sendmsg);
    LOOK_UP(connect);
    LOOK_UP(accept);
    LOOK_UP(accept4);
    LOOK_UP(poll);
    LOOK_UP(ppoll);
    LOOK_UP(select);
    LOOK_UP(nanosleep);
    LOOK_UP(clock_nanosleep);
    LOOK_UP(usleep);
    LOOK_UP(sleep);
    LOOK_UP(getaddrinfo);
    LOOK_UP(getnameinfo);
    LOOK_UP(close);
    LOOK_UP(socket);
    LOOK_UP(socketpair);
    LOOK_UP(dup);
    LOOK_UP(dup2);
    LOOK_UP(dup3);
    LOOK_UP(fcntl);
    LOOK_UP(pthread_mutex_trylock);
    LOOK_UP(pthread_mutex_unlock);
    LOOK_UP(pthread_join);
    LOOK_UP(pthread_tryjoin_np);
    LOOK_UP(fcntl64);
    LOOK_UP(ioctl);
    LOOK_UP(setsockopt);
    /* Last: REAL() tests the first field only through its own name, so
     * every name is tested; the mutex is what libc calls most. */
    LOOK_UP(pthread_mutex_lock);
}
