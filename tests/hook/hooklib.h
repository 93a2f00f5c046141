/*
 * hooklib.h — "a library that knows nothing of weft": code compiled
 * apart (its own static library, at -O2) that the hook tests call from
 * pool tasks, as a program would call a database or HTTP client.
 */
#ifndef HOOKLIB_H
#define HOOKLIB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>

/* Thread ids seen by hooklib_read_errno around its call. */
struct hooklib_ids {
    long before, after;
};

/*
 * hooklib_read_errno - take the address of errno, then read(2) (use_recv
 * 0) or recv(2) (1) one byte from blocking fd into buf, and return what
 * that address holds afterwards: the errno of the thread that took the
 * address.  *ret gets the call's return value, *ids the thread before and
 * after the call.
 */
int hooklib_read_errno(int fd, int use_recv, char *buf, ssize_t *ret,
                       struct hooklib_ids *ids);

/*
 * hooklib_locked_recv - lock m `depth` times (a recursive mutex: more
 * than once), recv(2) one byte from blocking fd into *out, unlock as many
 * times.  Inside, *holders counts the callers in there at once, and
 * *overlaps how often one came in while another was.  Returns recv's
 * return value.
 */
ssize_t hooklib_locked_recv(pthread_mutex_t *m, int depth, int fd,
                            char *out, atomic_int *holders,
                            atomic_int *overlaps);

/*
 * hooklib_set_nonblock_lfs - set (on) or clear O_NONBLOCK on fd with
 * fcntl, from code built with _FILE_OFFSET_BITS=64 (hooklib_lfs.c: the
 * call is fcntl64).  Returns fcntl's.
 */
int hooklib_set_nonblock_lfs(int fd, int on);

#endif /* HOOKLIB_H */
