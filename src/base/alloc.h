/*
 * base/alloc.h — the one door through which weft asks the system for
 * resources (internal): memory (malloc and friends, mmap), guard pages
 * (mprotect, madvise), threads and thread-specific keys.
 *
 * In a normal build each wrapper below is the plain call: the `err`
 * argument is the constant 0, and the inline function folds away.
 *
 * In a build with -Dfault_injection=true (tests only; WEFT_FAULT_INJECTION)
 * each call first counts itself, and the call whose number was armed fails
 * the way the system fails when it is out of memory: NULL, MAP_FAILED or -1
 * with errno ENOMEM, and EAGAIN for pthread_create and pthread_key_create.
 * Only that one call fails, so a test can sweep the number over every call
 * a program makes (tests/fault/, base/fault.c) and check that each failure is handled.
 * WEFT_FAULT_OLD_KERNEL=1 in the environment also makes every
 * madvise(MADV_GUARD_INSTALL) fail with EINVAL, uncounted, as on Linux
 * before 6.13, so that a sweep reaches the mprotect guards.
 */
#ifndef WEFT_BASE_ALLOC_H
#define WEFT_BASE_ALLOC_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#ifdef WEFT_FAULT_INJECTION
/* Count one call at a site; the errno it must fail with, or 0. */
int weft__fault_hit(const char *file, int line, const char *func,
                    const char *what);
#define WEFT__FAULT(what) weft__fault_hit(__FILE__, __LINE__, __func__, what)

/* For the tests.  Arm call number k (from 1; 0 disarms) and restart the
 * count; WEFT_FAULT_AT=k in the environment arms it at start-up. */
void weft__fault_arm(unsigned long k);
/* While on, every counted call fails (process-wide), and the object
 * caches (base/cache.h) look empty: the state of a process out of memory,
 * for a test that checks a call's -ENOMEM. */
void weft__fault_fail_all(bool on);
bool weft__fault_failing_all(void);
/* Calls counted so far, and whether the armed one has failed. */
unsigned long weft__fault_calls(void);
bool weft__fault_fired(void);
/* Calls to `what` ("malloc", "mmap"...) since the start, armed or not. */
unsigned long weft__fault_calls_of(const char *what);
/* Print every site that made a call, one "site <file>:<line> <func>
 * <what>" line each. */
void weft__fault_print_sites(FILE *to);
#else
#define WEFT__FAULT(what) 0
#endif

static inline void *weft__malloc_(int err, size_t n)
{
    if (err) {
        errno = err;
        return NULL;
    }
    return malloc(n);
}

static inline void *weft__calloc_(int err, size_t n, size_t size)
{
    if (err) {
        errno = err;
        return NULL;
    }
    return calloc(n, size);
}

static inline void *weft__realloc_(int err, void *p, size_t n)
{
    if (err) {
        errno = err;
        return NULL;
    }
    return realloc(p, n);
}

static inline void *weft__mmap_(int err, void *addr, size_t len, int prot,
                                int flags, int fd, off_t off)
{
    if (err) {
        errno = err;
        return MAP_FAILED;
    }
    return mmap(addr, len, prot, flags, fd, off);
}

static inline int weft__mprotect_(int err, void *addr, size_t len, int prot)
{
    if (err) {
        errno = err;
        return -1;
    }
    return mprotect(addr, len, prot);
}

static inline int weft__madvise_(int err, void *addr, size_t len, int advice)
{
    if (err) {
        errno = err;
        return -1;
    }
    return madvise(addr, len, advice);
}

static inline int weft__pthread_create_(int err, pthread_t *th,
                                        const pthread_attr_t *attr,
                                        void *(*fn)(void *), void *arg)
{
    if (err)
        return err == ENOMEM ? EAGAIN : err;
    return pthread_create(th, attr, fn, arg);
}

/* A thread of weft's own that runs none of the program's code (weft.h,
 * "Signals"): made with every asynchronous signal blocked, which it keeps
 * (a thread inherits its maker's mask); the maker's mask is put back.
 * The synchronous signals stay open: a fault on it must still be one. */
static inline int weft__quiet_thread_create_(int err, pthread_t *th,
                                             const pthread_attr_t *attr,
                                             void *(*fn)(void *), void *arg)
{
    if (err)
        return err == ENOMEM ? EAGAIN : err;
    static const int sync_signals[] = {SIGSEGV, SIGBUS, SIGFPE,
                                       SIGILL,  SIGTRAP, SIGSYS};
    sigset_t quiet, old;
    sigfillset(&quiet);
    for (size_t i = 0; i < sizeof sync_signals / sizeof sync_signals[0]; i++)
        sigdelset(&quiet, sync_signals[i]);
    pthread_sigmask(SIG_SETMASK, &quiet, &old);
    int rc = pthread_create(th, attr, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

static inline int weft__pthread_key_create_(int err, pthread_key_t *key,
                                            void (*dtor)(void *))
{
    if (err)
        return err == ENOMEM ? EAGAIN : err;
    return pthread_key_create(key, dtor);
}

static inline int weft__pthread_setspecific_(int err, pthread_key_t key,
                                             const void *value)
{
    if (err)
        return err;
    return pthread_setspecific(key, value);
}

/* The counted site is where the macro is used. */
#define weft__malloc(n) weft__malloc_(WEFT__FAULT("malloc"), n)
#define weft__calloc(n, size) weft__calloc_(WEFT__FAULT("calloc"), n, size)
#define weft__realloc(p, n) weft__realloc_(WEFT__FAULT("realloc"), p, n)
#define weft__mmap(addr, len, prot, flags, fd, off)                     \
    weft__mmap_(WEFT__FAULT("mmap"), addr, len, prot, flags, fd, off)
#define weft__mprotect(addr, len, prot)                                 \
    weft__mprotect_(WEFT__FAULT("mprotect"), addr, len, prot)
#define weft__madvise(addr, len, advice)                                \
    weft__madvise_(WEFT__FAULT("madvise"), addr, len, advice)
#define weft__pthread_create(th, attr, fn, arg)                         \
    weft__pthread_create_(WEFT__FAULT("pthread_create"), th, attr, fn, arg)
#define weft__quiet_thread_create(th, attr, fn, arg)                    \
    weft__quiet_thread_create_(WEFT__FAULT("pthread_create"), th, attr, fn, \
                               arg)
#define weft__pthread_key_create(key, dtor)                             \
    weft__pthread_key_create_(WEFT__FAULT("pthread_key_create"), key, dtor)
#define weft__pthread_setspecific(key, value)                           \
    weft__pthread_setspecific_(WEFT__FAULT("pthread_setspecific"), key, value)

#endif /* WEFT_BASE_ALLOC_H */
