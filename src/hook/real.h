/*
 * hook/real.h — libc's own functions behind the ones the interposition
 * library defines (internal to libweft-hook).
 *
 * Each is looked up once, with dlsym(RTLD_NEXT): the next definition
 * after this library in the program's lookup order, libc's (or a
 * sanitizer's interceptor placed before us, which then calls libc's).
 * The lookups run in a constructor, and again on the first call of any
 * hooked function that comes before it (another library's constructor);
 * a lookup stores the same value whichever thread makes it.
 */
#ifndef WEFT_HOOK_REAL_H
#define WEFT_HOOK_REAL_H

#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

struct weft_hook_real {
    ssize_t (*read)(int, void *, size_t);
    ssize_t (*write)(int, const void *, size_t);
    ssize_t (*readv)(int, const struct iovec *, int);
    ssize_t (*writev)(int, const struct iovec *, int);
    ssize_t (*recv)(int, void *, size_t, int);
    ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *,
                        socklen_t *);
    ssize_t (*recvmsg)(int, struct msghdr *, int);
    ssize_t (*send)(int, const void *, size_t, int);
    ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *,
                      socklen_t);
    ssize_t (*sendmsg)(int, const struct msghdr *, int);
    int (*connect)(int, const struct sockaddr *, socklen_t);
    int (*accept)(int, struct sockaddr *, socklen_t *);
    int (*accept4)(int, struct sockaddr *, socklen_t *, int);
    int (*poll)(struct pollfd *, nfds_t, int);
    int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *,
                 const sigset_t *);
    int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
    int (*nanosleep)(const struct timespec *, struct timespec *);
    int (*clock_nanosleep)(clockid_t, int, const struct timespec *,
                           struct timespec *);
    int (*usleep)(useconds_t);
    unsigned (*sleep)(unsigned);
    int (*getaddrinfo)(const char *, const char *, const struct addrinfo *,
                       struct addrinfo **);
    int (*getnameinfo)(const struct sockaddr *, socklen_t, char *, socklen_t,
                       char *, socklen_t, int);
    int (*pthread_mutex_lock)(pthread_mutex_t *);
    int (*pthread_mutex_trylock)(pthread_mutex_t *);
    int (*pthread_mutex_unlock)(pthread_mutex_t *);
    int (*pthread_join)(pthread_t, void **);
    int (*pthread_tryjoin_np)(pthread_t, void **);
    int (*close)(int);
    int (*socket)(int, int, int);
    int (*socketpair)(int, int, int, int[2]);
    int (*dup)(int);
    int (*dup2)(int, int);
    int (*dup3)(int, int, int);
    int (*fcntl)(int, int, ...);
    int (*fcntl64)(int, int, ...);
    int (*ioctl)(int, unsigned long, ...);
    int (*setsockopt)(int, int, int, const void *, socklen_t);
};

extern struct weft_hook_real weft_hook_real;

/* Look everything up (idempotent). */
void weft_hook_resolve(void);

/* The real function `name`, looked up first if the constructor has not
 * run yet. */
#define REAL(name)                                                       \
    (__builtin_expect(weft_hook_real.name != NULL, 1)                    \
         ? weft_hook_real.name                                           \
         : (weft_hook_resolve(), weft_hook_real.name))

#endif /* WEFT_HOOK_REAL_H */
