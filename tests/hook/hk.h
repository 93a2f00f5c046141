/*
 * hk.h — helpers for the interposition library's tests (suite 'hook').
 *
 * These programs link libweft-hook.so (weft_hook_dep) or, for the "same
 * program without the hook" builds, the shared libweft alone
 * (weft_shared_dep).  Either way they see only the public API, so "the
 * task is parked inside the hooked call" is read from the pool's counters
 * (weft_pool_stats: poll_waits for a wait on an fd, parked for any park),
 * never guessed with a sleep.
 *
 * The pool fixtures, the watchdog (alarm per case: a hang aborts with the
 * case's name instead of waiting for meson's timeout) and CHECK come from
 * tests/pool/wt.h, which uses only public headers.
 *
 * Pools here are made with WEFT_POOL_NO_MONITOR where a test claims "the
 * worker was free": with the monitor on, a worker blocked in a real
 * system call would be covered by a spare thread after 10 ms, and a
 * ticker task would advance on the spare: a hook that blocks its worker
 * would pass.  Without the monitor, only a call that really parks the
 * task lets anything else run on a 1-worker pool.
 */
#ifndef HK_H
#define HK_H

/* These tests call the plain entry points (read, recv, poll...).  With
 * _FORTIFY_SOURCE, glibc's headers turn some calls whose buffer size
 * they know into __read_chk, __recv_chk, __poll_chk...: other entry
 * points, tested apart (test_fortify.c).  So no fortification here; this
 * must come before the first system header. */
#undef _FORTIFY_SOURCE

/* Each case's watchdog (wt.h): a hook that blocks a worker hangs a case;
 * it then fails in 30 s, well inside meson's timeout. */
#define WT_CASE_SECONDS 30
#include "../pool/wt.h"

#include <weft/blocking.h>
#include <weft/inspect.h>
#include <weft/timer.h>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>

/* A pool of `threads` workers with the given WEFT_POOL_* flags. */
static inline weft_pool *hk_pool(unsigned threads, unsigned flags)
{
    weft_pool_opts o = {.threads = threads, .flags = flags};
    weft_pool *p = NULL;
    assert_int_equal(weft_pool_create(&p, &o), 0);
    return p;
}

/* The pool's counters now (any context: CHECKs, no assert). */
static inline struct weft_pool_stats hk_stats(weft_pool *p)
{
    struct weft_pool_stats s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    CHECK_EQ(weft_pool_stats(p, &s), 0);
    return s;
}

/* Waits on fds registered with p's netpoller now: a hooked call parked on
 * an fd is one (a poll of n fds, n). */
static inline uint64_t hk_poll_waits(weft_pool *p)
{
    return hk_stats(p).poll_waits;
}

/* Tasks of p parked now, on anything. */
static inline uint64_t hk_parked(weft_pool *p)
{
    return hk_stats(p).parked;
}

/* From a plain thread: wait until p has at least n waits on fds. */
static inline void hk_wait_poll_waits(weft_pool *p, uint64_t n)
{
    while (hk_poll_waits(p) < n)
        sched_yield();
}

/* From a plain thread: wait until at least n tasks of p are parked. */
static inline void hk_wait_parked(weft_pool *p, uint64_t n)
{
    while (hk_parked(p) < n)
        sched_yield();
}

/* The kernel's id of the calling thread.  Not pthread_self(): glibc
 * declares that one const, so the compiler may reuse a value read before
 * a call that switched threads; a system call is always made afresh. */
static inline long hk_tid(void)
{
    return syscall(SYS_gettid);
}

/* Whether libweft-hook.so is in the process (its marker symbol). */
static inline bool hk_hook_loaded(void)
{
    return dlsym(RTLD_DEFAULT, "weft_hook_linked") != NULL;
}

/* The file status flags of fd (fcntl F_GETFL). */
static inline int hk_fl(int fd)
{
    return fcntl(fd, F_GETFL);
}

/* A connected AF_UNIX stream pair, blocking. */
static inline void hk_pair(int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
                     0);
}

/* The same from a task (CHECK, no assert). */
static inline int hk_pair_task(int sv[2])
{
    int r = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
    CHECK_EQ(r, 0);
    return r;
}

static inline void hk_set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    CHECK(fl >= 0);
    CHECK_EQ(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
}

/* A blocking TCP listener on 127.0.0.1, kernel-chosen port in *addr
 * (plain socket(2): the program's own, as a library's would be). */
static inline int hk_listener(struct sockaddr_in *addr, int backlog)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    int one = 1;
    CHECK_EQ(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one), 0);
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_EQ(bind(fd, (struct sockaddr *)addr, sizeof *addr), 0);
    CHECK_EQ(listen(fd, backlog), 0);
    socklen_t len = sizeof *addr;
    CHECK_EQ(getsockname(fd, (struct sockaddr *)addr, &len), 0);
    return fd;
}

/* Set SO_RCVTIMEO or SO_SNDTIMEO (opt) to ms milliseconds (0: none). */
static inline void hk_set_timeo(int fd, int opt, unsigned ms)
{
    struct timeval tv = {.tv_sec = ms / 1000,
                         .tv_usec = (suseconds_t)(ms % 1000) * 1000};
    CHECK_EQ(setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv), 0);
}

/* Fill the send buffer of fd (of a unix stream pair whose peer nobody
 * reads) without waiting: MSG_DONTWAIT sends until EAGAIN.  The bytes
 * sent. */
static inline size_t hk_fill(int fd)
{
    static const char junk[4096];
    size_t sent = 0;
    for (;;) {
        ssize_t n = send(fd, junk, sizeof junk, MSG_DONTWAIT);
        if (n < 0) {
            CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
            break;
        }
        sent += (size_t)n;
        CHECK(sent < ((size_t)64 << 20)); /* it does fill up */
        if (sent >= ((size_t)64 << 20))
            break;
    }
    return sent;
}

/* Read and drop exactly n bytes from blocking fd (a plain thread). */
static inline void hk_drain(int fd, size_t n)
{
    char buf[4096];
    while (n) {
        ssize_t r = read(fd, buf, n < sizeof buf ? n : sizeof buf);
        CHECK(r > 0);
        if (r <= 0)
            return;
        n -= (size_t)r;
    }
}

/* A ticker task: counts its rounds until *stop, yielding between them
 * (never parks, so hk_parked counts only the others).  On a 1-worker pool
 * it advances only while every other task is parked or between runs. */
struct hk_ticker {
    atomic_ulong ticks;
    atomic_bool stop;
    weft_task *task;
};

static inline void *hk_ticker_body(void *arg)
{
    struct hk_ticker *t = arg;
    while (!atomic_load(&t->stop)) {
        atomic_fetch_add(&t->ticks, 1);
        CHECK_EQ(weft_yield(), 0);
    }
    return NULL;
}

static inline void hk_ticker_start(struct hk_ticker *t, weft_pool *p)
{
    atomic_init(&t->ticks, 0);
    atomic_init(&t->stop, false);
    assert_int_equal(weft_spawn(&t->task, p, hk_ticker_body, t, NULL), 0);
}

static inline void hk_ticker_stop(struct hk_ticker *t)
{
    atomic_store(&t->stop, true);
    assert_int_equal(weft_sync_wait(t->task, NULL), 0);
}

/* From a plain thread: wait until the ticker has gone n more rounds. */
static inline void hk_ticker_advance(struct hk_ticker *t, unsigned long n)
{
    unsigned long t0 = atomic_load(&t->ticks);
    while (atomic_load(&t->ticks) < t0 + n)
        sched_yield();
}

#endif /* HK_H */
