/*
 * iot.h — helpers for the socket I/O tests (suite 'io'): sockets on
 * loopback, byte patterns, and a look at the netpoller's records so a test
 * can tell that a task really is parked on an fd (no sleep standing in for
 * it).  Built against the internal view (weft_internal_dep).
 */
#ifndef IOT_H
#define IOT_H

#include "../pool/wt.h"

#include <weft/io.h>
#include <weft/timer.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "io/netpoll.h"
#include "sched/task.h"
#include "sched/wait.h"
#include "sched/worker.h"

/* A connected AF_UNIX stream pair (blocking: the calls must make them
 * non-blocking themselves). */
static inline void iot_pair(int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
                     0);
}

/* A TCP listener on 127.0.0.1, port chosen by the kernel, in *addr; owned
 * by weft (weft_socket). */
static inline int iot_listener(struct sockaddr_in *addr, int backlog)
{
    int fd = weft_socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    int one = 1;
    assert_int_equal(
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one), 0);
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)addr, sizeof *addr), 0);
    assert_int_equal(listen(fd, backlog), 0);
    socklen_t len = sizeof *addr;
    assert_int_equal(getsockname(fd, (struct sockaddr *)addr, &len), 0);
    return fd;
}

/* sync_wait t (main thread); its result. */
static inline intptr_t iot_result(weft_task *t)
{
    void *r = P(-12345);
    assert_int_equal(weft_sync_wait(t, &r), 0);
    return I(r);
}

/* weft_close both ends (io.h: fds weft has used are closed that way). */
static inline void iot_close_pair(int sv[2])
{
    assert_int_equal(weft_close(sv[0]), 0);
    assert_int_equal(weft_close(sv[1]), 0);
}

/* Waits parked on fd's record now (under its lock). */
static inline unsigned iot_parked(int fd)
{
    struct weft__fd *rec;
    if (weft__fd_get(fd, &rec))
        return 0;
    unsigned n = 0;
    weft__spin_lock(&rec->lock);
    for (struct weft__wait *w = rec->waiters; w; w = w->next)
        n++;
    weft__spin_unlock(&rec->lock);
    return n;
}

/* Waits parked on fds registered with p's netpoller (0 before it has one). */
static inline unsigned iot_netpoll_waiters(weft_pool *p)
{
    struct weft__poller *poller = weft__pool_poller(p);
    return poller ? atomic_load(&((struct weft__netpoll *)poller)->nwaiters)
                  : 0;
}

/* Block (any thread) until at least n waits are parked on fd. */
static inline void iot_wait_parked(int fd, unsigned n)
{
    while (iot_parked(fd) < n)
        sched_yield();
}

/* The byte at offset i of stream `seed`. */
static inline unsigned char iot_byte(unsigned seed, size_t i)
{
    return (unsigned char)((i * 2654435761u) >> 13 ^ seed);
}

static inline void iot_fill(unsigned char *b, size_t n, unsigned seed,
                            size_t off)
{
    for (size_t i = 0; i < n; i++)
        b[i] = iot_byte(seed, off + i);
}

/* Bytes of b[0..n) (stream offset off) that differ from the pattern. */
static inline size_t iot_bad(const unsigned char *b, size_t n, unsigned seed,
                             size_t off)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += b[i] != iot_byte(seed, off + i);
    return bad;
}

/* Read exactly n bytes with weft_read (any context); the count read. */
static inline size_t iot_read_all(int fd, unsigned char *b, size_t n,
                                  int64_t timeout_ns)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = weft_read_for(fd, b + got, n - got, timeout_ns);
        if (r <= 0) {
            CHECK_EQ(r, 1); /* shows the error */
            break;
        }
        got += (size_t)r;
    }
    return got;
}

/* The soft fd limit raised to the hard one; returns the new soft one. */
static inline rlim_t iot_raise_nofile(void)
{
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    rl.rlim_cur = rl.rlim_max;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    return rl.rlim_cur;
}

#endif /* IOT_H */
