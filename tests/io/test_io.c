/*
 * test_io.c — weft/io.h: waiting on fds, read/write/accept/connect over
 * socket pairs and loopback TCP, timeouts, cancellation, weft_close waking
 * parked tasks, several waiters on one fd, pools sharing an fd, and the
 * same calls from plain threads and from sync_wait's thread.
 *
 * Task bodies report through CHECK (wt.h).  "Parked" is checked on the
 * netpoller's record (iot.h), never guessed with a sleep.  Every fd a
 * weft call has used is closed with weft_close, as io.h asks: the next
 * case gets the same numbers for new sockets.
 */
#include "iot.h"

#include <signal.h>


/* ------------------------------------------------------------------ */
/* weft_wait_fd                                                         */

/* What does not need a second party; sv is a fresh blocking pair. */
static void wait_fd_alone(int sv[2])
{
    CHECK_EQ(weft_wait_fd_for(sv[0], WEFT_OUT, 0), WEFT_OUT);
    CHECK_EQ(weft_wait_fd(sv[0], WEFT_IN | WEFT_OUT), WEFT_OUT);
    CHECK_EQ(weft_wait_fd_for(sv[0], WEFT_IN, 0), -ETIMEDOUT);
    uint64_t t0 = wt_now_ns();
    CHECK_EQ(weft_wait_fd_for(sv[0], WEFT_IN, MS(20)), -ETIMEDOUT);
    CHECK(wt_now_ns() - t0 >= MS(20));
    CHECK_EQ(weft_wait_fd_for(sv[0], 0, 0), -EINVAL);
    CHECK_EQ(weft_wait_fd_for(sv[0], 2, 0), -EINVAL);
    CHECK_EQ(weft_wait_fd_for(sv[0], WEFT_IN | 8, 0), -EINVAL);
    CHECK_EQ(weft_wait_fd_for(-1, WEFT_IN, 0), -EBADF);
    CHECK_EQ(weft_wait_fd_for(1 << 23, WEFT_IN, 0), -EINVAL);
    /* Readable now: no wait, whatever the timeout. */
    CHECK_EQ(write(sv[1], "x", 1), 1);
    CHECK_EQ(weft_wait_fd_for(sv[0], WEFT_IN, 0), WEFT_IN);
    CHECK_EQ(weft_wait_fd_for(sv[0], WEFT_IN | WEFT_OUT, MS(10)),
             WEFT_IN | WEFT_OUT);
    char c = 0;
    CHECK_EQ(read(sv[0], &c, 1), 1);
    CHECK_EQ(c, 'x');
    CHECK_EQ(weft_wait_fd_for(sv[0], WEFT_IN, 0), -ETIMEDOUT);
}

static void *wait_fd_alone_task(void *arg)
{
    wait_fd_alone(arg);
    return NULL;
}

static void *wait_in_forever(void *arg)
{
    int fd = *(int *)arg;
    return P(weft_wait_fd(fd, WEFT_IN));
}

static void test_wait_fd(void **state)
{
    int sv[2];
    iot_pair(sv);
    wait_fd_alone(sv);                        /* plain thread */
    wt_run_lazy(wait_fd_alone_task, sv);      /* task without a pool */
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    wt_run(p, wait_fd_alone_task, sv);        /* task on a pool */

    /* No timeout: parked until data comes. */
    weft_task *t;
    assert_int_equal(weft_spawn(&t, p, wait_in_forever, &sv[0], NULL), 0);
    iot_wait_parked(sv[0], 1);
    assert_int_equal(write(sv[1], "y", 1), 1);
    assert_int_equal(iot_result(t), WEFT_IN);
    assert_int_equal(iot_parked(sv[0]), 0);

    /* A closed fd. */
    int fd = dup(sv[0]);
    close(fd);
    assert_int_equal(weft_wait_fd(fd, WEFT_IN), -EBADF);

    wt_destroy(p);
    iot_close_pair(sv);
    WT_CLEAN();
}

static void *read_forever(void *arg)
{
    int fd = *(int *)arg;
    char c;
    return P(weft_read(fd, &c, 1));
}

static void *wait_after_cancel(void *arg)
{
    int fd = *(int *)arg;
    /* weft_task_cancel came before: every blocking point says so. */
    while (!weft__cancelled())
        weft_yield();
    CHECK_EQ(weft_wait_fd(fd, WEFT_IN), -ECANCELED);
    char c;
    CHECK_EQ(weft_read_for(fd, &c, 1, MS(10)), -ECANCELED);
    /* One that need not wait still completes. */
    CHECK_EQ(weft_wait_fd(fd, WEFT_OUT), WEFT_OUT);
    return P(1);
}

static void test_cancel(void **state)
{
    int sv[2];
    iot_pair(sv);
    weft_pool *p = wt_pool(WT_NTHREADS(state));

    /* Parked in wait_fd, and in read. */
    weft_fn fns[] = {wait_in_forever, read_forever};
    for (int i = 0; i < 2; i++) {
        weft_task *t;
        assert_int_equal(weft_spawn(&t, p, fns[i], &sv[0], NULL), 0);
        iot_wait_parked(sv[0], 1);
        assert_int_equal(weft_task_cancel(t), 0);
        assert_int_equal(iot_result(t), -ECANCELED);
        assert_int_equal(iot_parked(sv[0]), 0);
    }

    /* Cancelled before it waits. */
    weft_task *t;
    assert_int_equal(weft_spawn(&t, p, wait_after_cancel, &sv[0], NULL), 0);
    assert_int_equal(weft_task_cancel(t), 0);
    assert_int_equal(iot_result(t), 1);

    wt_destroy(p);
    iot_close_pair(sv);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Loopback TCP: accept, connect, read, write                           */

struct echo_server {
    int lfd;
    size_t echoed;
};

/* Accept one connection, echo it until EOF. */
static void *echo_serve(void *arg)
{
    struct echo_server *s = arg;
    struct sockaddr_in peer;
    socklen_t len = sizeof peer;
    int fd = weft_accept_for(s->lfd, (struct sockaddr *)&peer, &len, MS(20000));
    CHECK(fd >= 0);
    if (fd < 0)
        return NULL;
    CHECK_EQ(len, sizeof peer);
    CHECK_EQ(peer.sin_family, AF_INET);
    CHECK_EQ(ntohl(peer.sin_addr.s_addr), INADDR_LOOPBACK);
    CHECK(fcntl(fd, F_GETFL) & O_NONBLOCK);
    CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    unsigned char *buf = malloc(8192);
    for (;;) {
        ssize_t n = weft_read_for(fd, buf, 8192, MS(20000));
        if (n <= 0) {
            CHECK_EQ(n, 0);
            break;
        }
        CHECK_EQ(weft_write_for(fd, buf, (size_t)n, MS(20000)), n);
        s->echoed += (size_t)n;
    }
    free(buf);
    CHECK_EQ(weft_close(fd), 0);
    return NULL;
}

static const size_t echo_sizes[] = {1, 100, 4096, 65536, 1 << 20};
#define ECHO_SEED 7

static size_t echo_total(void)
{
    size_t total = 0;
    for (size_t i = 0; i < sizeof echo_sizes / sizeof *echo_sizes; i++)
        total += echo_sizes[i];
    return total;
}

/* The client's reader: everything comes back, byte for byte. */
static void *echo_check(void *arg)
{
    int fd = *(int *)arg;
    size_t total = echo_total(), off = 0, bad = 0;
    unsigned char *buf = malloc(65536);
    while (off < total) {
        size_t want = total - off < 65536 ? total - off : 65536;
        ssize_t n = weft_read_for(fd, buf, want, MS(20000));
        if (n <= 0) {
            CHECK_EQ(n, 1);
            break;
        }
        bad += iot_bad(buf, (size_t)n, ECHO_SEED, off);
        off += (size_t)n;
    }
    CHECK_EQ(off, total);
    CHECK_EQ(bad, 0);
    char c;
    CHECK_EQ(weft_read_for(fd, &c, 1, MS(20000)), 0); /* the server closed */
    free(buf);
    return NULL;
}

/* A socket connected to addr (weft_connect: any context); owned. */
static int echo_connect(const struct sockaddr_in *addr)
{
    int fd = weft_socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    CHECK_EQ(weft_connect_for(fd, (const struct sockaddr *)addr, sizeof *addr, MS(20000)),
             0);
    CHECK(fcntl(fd, F_GETFL) & O_NONBLOCK);
    return fd;
}

/* Write the sizes in turn (someone else reads), then end the stream. */
static void echo_send(int fd)
{
    size_t off = 0;
    for (size_t i = 0; i < sizeof echo_sizes / sizeof *echo_sizes; i++) {
        unsigned char *b = malloc(echo_sizes[i]);
        iot_fill(b, echo_sizes[i], ECHO_SEED, off);
        CHECK_EQ(weft_write_for(fd, b, echo_sizes[i], MS(20000)),
                 (ssize_t)echo_sizes[i]);
        off += echo_sizes[i];
        free(b);
    }
    CHECK_EQ(shutdown(fd, SHUT_WR), 0);
}

/* The client: a second task reads while this one writes. */
static void *echo_client(void *arg)
{
    int fd = echo_connect(arg);
    weft_task *reader;
    CHECK_EQ(weft_spawn(&reader, weft_pool_current(), echo_check, &fd, NULL), 0);
    echo_send(fd);
    CHECK_EQ(weft_await(reader, NULL), 0);
    CHECK_EQ(weft_close(fd), 0);
    return NULL;
}

static void test_tcp_echo(void **state)
{
    struct sockaddr_in addr;
    struct echo_server s = {iot_listener(&addr, 16), 0};
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_task *server;
    assert_int_equal(weft_spawn(&server, p, echo_serve, &s, NULL), 0);
    wt_run(p, echo_client, &addr);
    assert_int_equal(weft_sync_wait(server, NULL), 0);
    assert_int_equal(s.echoed, echo_total());
    assert_int_equal(weft_close(s.lfd), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* The same, every party a plain thread. */
static void *echo_serve_thread(void *arg) { return echo_serve(arg); }

static void *echo_client_thread(void *arg)
{
    int fd = echo_connect(arg);
    pthread_t reader;
    CHECK_EQ(pthread_create(&reader, NULL, echo_check, &fd), 0);
    echo_send(fd);
    CHECK_EQ(pthread_join(reader, NULL), 0);
    CHECK_EQ(weft_close(fd), 0);
    return NULL;
}

static void test_tcp_echo_threads(void **state)
{
    (void)state;
    struct sockaddr_in addr;
    struct echo_server s = {iot_listener(&addr, 16), 0};
    pthread_t server = wt_thread(echo_serve_thread, &s);
    pthread_t client = wt_thread(echo_client_thread, &addr);
    wt_join(client);
    wt_join(server);
    assert_int_equal(s.echoed, echo_total());
    assert_int_equal(weft_close(s.lfd), 0);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* A write much larger than the socket buffer                           */

#define BIG (4u << 20)
#define BIG_SEED 3

static void *big_write(void *arg)
{
    int fd = *(int *)arg;
    unsigned char *b = malloc(BIG);
    iot_fill(b, BIG, BIG_SEED, 0);
    ssize_t n = weft_write_for(fd, b, BIG, MS(60000));
    free(b);
    return P(n);
}

/* The same stream through weft_write_some: each call writes what the
 * socket takes (some bytes, never none) and says how much; the loop goes
 * on from there.  A small send buffer makes it take many calls. */
static void *big_write_some(void *arg)
{
    int fd = *(int *)arg;
    unsigned char *b = malloc(BIG);
    iot_fill(b, BIG, BIG_SEED, 0);
    size_t off = 0, calls = 0;
    while (off < BIG) {
        ssize_t n = weft_write_some_for(fd, b + off, BIG - off, MS(60000));
        if (n <= 0) {
            CHECK_EQ(n, 1);
            break;
        }
        CHECK((size_t)n <= BIG - off);
        off += (size_t)n;
        calls++;
    }
    free(b);
    CHECK(calls > 1);
    return P(off);
}

/* Reads in small pieces, letting others run between them. */
static void *slow_read(void *arg)
{
    int fd = *(int *)arg;
    unsigned char buf[1000];
    size_t off = 0, bad = 0;
    while (off < BIG) {
        ssize_t n = weft_read_for(fd, buf, sizeof buf, MS(60000));
        if (n <= 0) {
            CHECK_EQ(n, 1);
            break;
        }
        bad += iot_bad(buf, (size_t)n, BIG_SEED, off);
        off += (size_t)n;
        weft_yield();
    }
    CHECK_EQ(off, BIG);
    CHECK_EQ(bad, 0);
    return NULL;
}

static void big_write_with(void **state, weft_fn writer)
{
    int sv[2];
    iot_pair(sv);
    int small = 4096;
    assert_int_equal(
        setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_task *w, *r;
    assert_int_equal(weft_spawn(&w, p, writer, &sv[0], NULL), 0);
    /* The buffer is full and the writer parked for room. */
    iot_wait_parked(sv[0], 1);
    assert_int_equal(weft_spawn(&r, p, slow_read, &sv[1], NULL), 0);
    assert_int_equal(iot_result(w), BIG);
    assert_int_equal(weft_sync_wait(r, NULL), 0);
    wt_destroy(p);
    iot_close_pair(sv);
    WT_CLEAN();
}

static void test_big_write(void **state) { big_write_with(state, big_write); }

static void test_big_write_some(void **state)
{
    big_write_with(state, big_write_some);
}

/* ------------------------------------------------------------------ */
/* Closing and shutting down an fd with parked tasks                    */

static void *wait_out_forever_full(void *arg)
{
    /* sv[0]'s buffer is full: this waits for room. */
    int fd = *(int *)arg;
    return P(weft_wait_fd(fd, WEFT_OUT));
}

static void fill_up(int fd)
{
    assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
    char junk[4096] = {0};
    while (write(fd, junk, sizeof junk) > 0)
        ;
    assert_int_equal(errno, EAGAIN);
}

static void test_close_wakes(void **state)
{
    int sv[2];
    iot_pair(sv);
    fill_up(sv[0]);
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_task *t[3];
    assert_int_equal(weft_spawn(&t[0], p, read_forever, &sv[0], NULL), 0);
    assert_int_equal(weft_spawn(&t[1], p, wait_in_forever, &sv[0], NULL), 0);
    assert_int_equal(weft_spawn(&t[2], p, wait_out_forever_full, &sv[0], NULL), 0);
    iot_wait_parked(sv[0], 3);
    assert_int_equal(weft_close(sv[0]), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(iot_result(t[i]), -EBADF);
    }
    assert_int_equal(iot_parked(sv[0]), 0);
    assert_int_equal(weft_close(sv[0]), -EBADF);
    assert_int_equal(weft_close(-1), -EBADF);
    assert_int_equal(weft_close(sv[1]), 0);

    /* shutdown(2) of the fd itself (epoll reports a hang-up): the read
     * sees the end of the stream. */
    iot_pair(sv);
    weft_task *s;
    assert_int_equal(weft_spawn(&s, p, read_forever, &sv[0], NULL), 0);
    iot_wait_parked(sv[0], 1);
    assert_int_equal(shutdown(sv[0], SHUT_RDWR), 0);
    assert_int_equal(iot_result(s), 0);
    iot_close_pair(sv);
    wt_destroy(p);
    WT_CLEAN();
}

/*
 * weft_close wakes a task parked in weft_write, weft_accept or
 * weft_connect with -EBADF, and the number is taken at once by another
 * owned socket, before the woken task runs: that task's -EBADF is
 * weft_close's, not the kernel's, and must leave the new socket alone.
 * It took the wake's -EBADF for "closed behind weft's back" and forgot the
 * new socket: a read parked on it failed with -EBADF, and it was no
 * longer owned.  One worker, so that the closer finishes before the woken
 * task runs.
 */
enum reuse_call { REUSE_WRITE, REUSE_ACCEPT, REUSE_CONNECT };

struct reuse {
    enum reuse_call call;
    int fd;               /* what the parked task waits on */
    int next;             /* an owned socket whose number it takes */
    struct sockaddr_in to; /* REUSE_CONNECT: a listener that never accepts */
};

static void *reuse_parked(void *arg)
{
    struct reuse *r = arg;
    static char big[1 << 20];
    switch (r->call) {
    case REUSE_WRITE:
        return P(weft_write(r->fd, big, sizeof big));
    case REUSE_ACCEPT:
        return P(weft_accept(r->fd, NULL, NULL));
    default:
        return P(weft_connect(r->fd, (struct sockaddr *)&r->to, sizeof r->to));
    }
}

static void *reuse_closer(void *arg)
{
    struct reuse *r = arg;
    int number = r->fd;
    CHECK_EQ(weft_close(number), 0); /* wakes the parked task: queued */
    CHECK_EQ(dup2(r->next, number), number);
    CHECK_EQ(weft_close(r->next), 0);
    CHECK_EQ(weft_fd_adopt(number), 0);
    /* Now the woken task runs (its -EBADF), then this read times out. */
    char b[8];
    CHECK_EQ(weft_read_for(number, b, sizeof b, 20 * 1000000ull),
             -ETIMEDOUT);
    CHECK_EQ(weft_fd_adopt(number), -EEXIST); /* still owned */
    return NULL;
}

static void test_close_then_reuse(void **state)
{
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    for (int call = REUSE_WRITE; call <= REUSE_CONNECT; call++) {
        weft_pool *p = wt_pool(1);
        struct reuse r = {.call = (enum reuse_call)call};
        int peer = -1, other[2], lfd = -1;
        if (call == REUSE_WRITE) {
            int sv[2];
            iot_pair(sv);
            assert_int_equal(weft_fd_adopt(sv[0]), 0);
            fill_up(sv[0]);
            r.fd = sv[0];
            peer = sv[1];
        } else if (call == REUSE_ACCEPT) {
            r.fd = iot_listener(&r.to, 1);
        } else {
            /* A backlog that is full once one handshake is queued: the
             * next connect stays in progress. */
            lfd = iot_listener(&r.to, 0);
            int first = weft_socket(AF_INET, SOCK_STREAM, 0);
            assert_true(first >= 0);
            (void)connect(first, (struct sockaddr *)&r.to, sizeof r.to);
            peer = first;
            r.fd = weft_socket(AF_INET, SOCK_STREAM, 0);
            assert_true(r.fd >= 0);
        }
        iot_pair(other);
        assert_int_equal(weft_fd_adopt(other[0]), 0);
        r.next = other[0];
        weft_task *parked, *closer;
        assert_int_equal(weft_spawn(&parked, p, reuse_parked, &r, NULL), 0);
        iot_wait_parked(r.fd, 1);
        int number = r.fd;
        assert_int_equal(weft_spawn(&closer, p, reuse_closer, &r, NULL), 0);
        assert_int_equal(iot_result(closer), 0);
        assert_int_equal(iot_result(parked), -EBADF);
        assert_int_equal(weft_close(number), 0);
        assert_int_equal(weft_close(other[1]), 0);
        if (peer >= 0)
            assert_int_equal(weft_close(peer), 0);
        if (lfd >= 0)
            assert_int_equal(weft_close(lfd), 0);
        wt_destroy(p);
    }
    WT_CLEAN();
}

/* weft_fd_adopt of a borrowed fd a task is parked on: the same file, so
 * the task goes on waiting (now on an owned fd) and reads what comes; it
 * got -EBADF before, the code of a closed fd. */
static void *read_two_for(void *arg)
{
    char b[8];
    return P(weft_read_for(*(int *)arg, b, sizeof b, 10000 * 1000000ull));
}

static void test_adopt_while_parked(void **state)
{
    int sv[2];
    iot_pair(sv);
    assert_int_equal(
        fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK), 0);
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_task *t;
    assert_int_equal(weft_spawn(&t, p, read_two_for, &sv[0], NULL), 0);
    iot_wait_parked(sv[0], 1);
    assert_int_equal(weft_fd_adopt(sv[0]), 0);
    assert_int_equal(write(sv[1], "hi", 2), 2);
    assert_int_equal(iot_result(t), 2);
    assert_int_equal(weft_fd_adopt(sv[0]), -EEXIST);
    iot_close_pair(sv);

    /* accept and connect on an owned fd that is no socket: the kernel's
     * ENOTSOCK, which says nothing of a close behind weft's back (the fd
     * stays owned, and no warning). */
    int pfd[2];
    assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
    assert_int_equal(weft_fd_adopt(pfd[0]), 0);
    assert_int_equal(weft_accept(pfd[0], NULL, NULL), -ENOTSOCK);
    struct sockaddr_in to = {.sin_family = AF_INET};
    assert_int_equal(
        weft_connect(pfd[0], (struct sockaddr *)&to, sizeof to), -ENOTSOCK);
    assert_int_equal(weft_fd_adopt(pfd[0]), -EEXIST);
    assert_int_equal(weft_close(pfd[0]), 0);
    assert_int_equal(close(pfd[1]), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* weft_pool_destroy waits for a task parked on I/O, and the pool keeps
 * polling meanwhile. */
static void *destroy_thread(void *arg)
{
    return P(weft_pool_destroy(arg));
}

static void test_destroy_waits(void **state)
{
    int sv[2];
    iot_pair(sv);
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    assert_int_equal(weft_spawn(NULL, p, read_forever, &sv[0], NULL), 0);
    iot_wait_parked(sv[0], 1);
    pthread_t th = wt_thread(destroy_thread, p);
    /* Shutdown has begun once spawning from outside is refused. */
    weft_task *t = NULL;
    while (weft_spawn(&t, p, read_forever, &sv[0], NULL) == 0) {
        assert_int_equal(weft_task_cancel(t), 0);
        assert_int_equal(weft_sync_wait(t, NULL), 0);
    }
    assert_int_equal(iot_parked(sv[0]), 1);
    assert_int_equal(write(sv[1], "d", 1), 1);
    assert_int_equal(I(wt_join(th)), 0);
    assert_int_equal(iot_parked(sv[0]), 0);
    iot_close_pair(sv);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Several tasks parked on one fd                                       */

#define READERS 4

static void test_many_waiters(void **state)
{
    int sv[2];
    iot_pair(sv);
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    for (int round = 0; round < 20; round++) {
        weft_task *t[READERS];
        for (int i = 0; i < READERS; i++)
            assert_int_equal(weft_spawn(&t[i], p, read_forever, &sv[0], NULL), 0);
        iot_wait_parked(sv[0], READERS);
        /* One edge for all of them: each must get its byte. */
        assert_int_equal(write(sv[1], "abcd", READERS), READERS);
        for (int i = 0; i < READERS; i++) {
            assert_int_equal(iot_result(t[i]), 1);
        }
    }
    wt_destroy(p);
    iot_close_pair(sv);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Timeouts and errors                                                  */

static void timeouts(void)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
        CHECK(0);
        return;
    }
    char buf[16];
    uint64_t t0 = wt_now_ns();
    CHECK_EQ(weft_read_for(sv[0], buf, sizeof buf, MS(20)), -ETIMEDOUT);
    CHECK(wt_now_ns() - t0 >= MS(20));
    CHECK_EQ(weft_read_for(sv[0], buf, sizeof buf, 0), -ETIMEDOUT);
    CHECK_EQ(weft_write_for(sv[1], "hello", 5, 0), 5);
    CHECK_EQ(weft_read_for(sv[0], buf, sizeof buf, 0), 5);
    CHECK_EQ(memcmp(buf, "hello", 5), 0);
    CHECK_EQ(weft_write_for(sv[1], buf, 0, 0), 0);
    /* No reader: the write runs out of room, then out of time. */
    unsigned char *big = calloc(1, BIG);
    t0 = wt_now_ns();
    CHECK_EQ(weft_write_for(sv[1], big, BIG, MS(20)), -ETIMEDOUT);
    CHECK(wt_now_ns() - t0 >= MS(20));
    free(big);
    CHECK_EQ(weft_read_for(-1, buf, 1, 0), -EBADF);
    CHECK_EQ(weft_write_for(-1, buf, 1, 0), -EBADF);
    CHECK_EQ(weft_write_for(sv[1], buf, (size_t)SSIZE_MAX + 1, 0), -EINVAL);
    /* A bad buffer: the kernel's error (it may look for data first). */
    ssize_t nul = weft_read_for(sv[0], NULL, 1, 0);
    CHECK(nul == -EFAULT || nul == -ETIMEDOUT);
    CHECK_EQ(weft_close(sv[0]), 0);
    CHECK_EQ(weft_close(sv[1]), 0);

    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int lfd = weft_socket(AF_INET, SOCK_STREAM, 0);
    socklen_t len = sizeof addr;
    CHECK_EQ(bind(lfd, (struct sockaddr *)&addr, sizeof addr), 0);
    CHECK_EQ(listen(lfd, 4), 0);
    CHECK_EQ(getsockname(lfd, (struct sockaddr *)&addr, &len), 0);
    t0 = wt_now_ns();
    CHECK_EQ(weft_accept_for(lfd, NULL, NULL, MS(20)), -ETIMEDOUT);
    CHECK(wt_now_ns() - t0 >= MS(20));
    CHECK_EQ(weft_accept_for(-1, NULL, NULL, 0), -EBADF);
    int notlistening = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_EQ(weft_accept_for(notlistening, NULL, NULL, 0), -EINVAL);
    CHECK_EQ(weft_close(notlistening), 0);
    /* Nobody listens on that port once it is closed. */
    CHECK_EQ(weft_close(lfd), 0);
    int fd = weft_socket(AF_INET, SOCK_STREAM, 0);
    CHECK_EQ(weft_connect_for(fd, (struct sockaddr *)&addr, sizeof addr, MS(20000)),
             -ECONNREFUSED);
    CHECK_EQ(weft_close(fd), 0);
    CHECK_EQ(weft_connect_for(-1, (struct sockaddr *)&addr, sizeof addr, 0),
             -EBADF);
}

static void *timeouts_task(void *arg)
{
    timeouts();
    return arg;
}

static void test_timeouts(void **state)
{
    timeouts();                       /* plain thread */
    wt_run_lazy(timeouts_task, NULL); /* task without a pool */
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    wt_run(p, timeouts_task, NULL);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* After a short read, data is read when the call may not wait          */

/* An owned stream socket read short (its queue emptied), then more comes:
 * a call that ends without waiting (timeout 0, a cancelled task) reads
 * it, though no readiness report has been counted since (the task has
 * not let its worker poll; a plain thread has no poller). */
static void short_read_then_more(int sv[2], bool cancel)
{
    char buf[100];
    CHECK_EQ(write(sv[1], "x", 1), 1);
    CHECK_EQ(weft_read(sv[0], buf, sizeof buf), 1); /* short: 1 of 100 */
    CHECK_EQ(write(sv[1], "yz", 2), 2);
    if (cancel)
        CHECK_EQ(weft_read(sv[0], buf, sizeof buf), 2);
    else
        CHECK_EQ(weft_read_for(sv[0], buf, sizeof buf, 0), 2);
    CHECK(memcmp(buf, "yz", 2) == 0);
    /* Nothing more: now it would have to wait. */
    CHECK_EQ(weft_read_for(sv[0], buf, sizeof buf, 0), -ETIMEDOUT);
}

static void *short_read_task(void *arg)
{
    int *sv = arg;
    short_read_then_more(sv, false);
    CHECK_EQ(weft_task_cancel(weft_task_current()), 0);
    short_read_then_more(sv, true);
    return NULL;
}

static void test_short_read_then_ready(void **state)
{
    int sv[2];
    iot_pair(sv);
    assert_int_equal(weft_fd_adopt(sv[0]), 0);
    short_read_then_more(sv, false); /* plain thread */
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    wt_run(p, short_read_task, sv);
    wt_destroy(p);
    iot_close_pair(sv);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* A timeout holds under a stream of signals                            */

/* The reading thread, and whether it still waits: a signal every 2 ms
 * goes to it until it returns (or 20 s pass: then the timeout was lost,
 * restarted by each signal, and the read would never have returned). */
static pthread_t signalled;
static atomic_bool reading;
static atomic_bool signals_ran_out;

static void on_usr1(int sig) { (void)sig; }

static void *signaller(void *arg)
{
    (void)arg;
    uint64_t stop = wt_now_ns() + MS(20000);
    while (atomic_load(&reading)) {
        if (wt_now_ns() >= stop) {
            atomic_store(&signals_ran_out, true);
            break;
        }
        pthread_kill(signalled, SIGUSR1);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* A 100 ms read on fd, with signals: -ETIMEDOUT, and before the signals
 * stopped.  With and without SA_RESTART (ppoll is never restarted). */
static void read_for_under_signals(int fd, int flags)
{
    struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = flags}, old;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    signalled = pthread_self();
    atomic_store(&reading, true);
    atomic_store(&signals_ran_out, false);
    pthread_t th = wt_thread(signaller, NULL);
    char c;
    ssize_t r = weft_read_for(fd, &c, 1, MS(100));
    int w = weft_wait_fd_for(fd, WEFT_IN, MS(100));
    atomic_store(&reading, false);
    wt_join(th);
    assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
    assert_int_equal(r, -ETIMEDOUT);
    assert_int_equal(w, -ETIMEDOUT);
    assert_false(atomic_load(&signals_ran_out));
}

static void test_timeout_under_signals(void **state)
{
    (void)state;
    int sv[2];
    iot_pair(sv);
    read_for_under_signals(sv[0], 0);
    read_for_under_signals(sv[0], SA_RESTART);
    iot_close_pair(sv);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* The netpoller's worker still runs the timers                         */

static void *sleeper(void *arg)
{
    (void)arg;
    uint64_t t0 = wt_now_ns();
    CHECK_EQ(weft_sleep(MS(20)), 0);
    uint64_t took = wt_now_ns() - t0;
    CHECK(took >= MS(20));
    return P(took < MS(2000));
}

static void test_timer_while_polling(void **state)
{
    int sv[2];
    iot_pair(sv);
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_task *reader;
    assert_int_equal(weft_spawn(&reader, p, read_forever, &sv[0], NULL), 0);
    iot_wait_parked(sv[0], 1);
    for (int i = 0; i < 5; i++)
        assert_int_equal(I(wt_run(p, sleeper, NULL)), 1);
    assert_int_equal(write(sv[1], "z", 1), 1);
    assert_int_equal(iot_result(reader), 1);
    wt_destroy(p);
    iot_close_pair(sv);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* An fd first waited on by another pool                                */

/* Long enough to park (and so register the fd) however slow the build:
 * a wait whose deadline passed before it would park returns -ETIMEDOUT
 * without parking (weft.h, "Timeouts"), which ASan's run of the pool's
 * first netpoller set-up once made a 1 ms wait do. */
static void *wait_briefly(void *arg)
{
    int fd = *(int *)arg;
    return P(weft_wait_fd_for(fd, WEFT_IN, MS(50)));
}

static void test_other_pool(void **state)
{
    unsigned n = WT_NTHREADS(state);
    int sv[2];
    iot_pair(sv);
    weft_pool *a = wt_pool_named(n, "a");
    weft_pool *b = wt_pool_named(n, "b");
    /* Registered with a's netpoller by a's task. */
    assert_int_equal(I(wt_run(a, wait_briefly, &sv[0])), -ETIMEDOUT);
    struct weft__fd *rec;
    assert_int_equal(weft__fd_get(sv[0], &rec), 0);
    assert_ptr_equal(&rec->poller->base, weft__pool_poller(a));

    /* b's task parks there; a's netpoller wakes it. */
    for (int i = 0; i < 10; i++) {
        weft_task *t;
        assert_int_equal(weft_spawn(&t, b, read_forever, &sv[0], NULL), 0);
        iot_wait_parked(sv[0], 1);
        assert_int_equal(write(sv[1], "q", 1), 1);
        assert_int_equal(iot_result(t), 1);
    }

    /* a goes away under a parked task of b's: it moves to b's. */
    weft_task *t;
    assert_int_equal(weft_spawn(&t, b, read_forever, &sv[0], NULL), 0);
    iot_wait_parked(sv[0], 1);
    wt_destroy(a);
    iot_wait_parked(sv[0], 1);
    assert_ptr_equal(&rec->poller->base, weft__pool_poller(b));
    assert_int_equal(write(sv[1], "r", 1), 1);
    assert_int_equal(iot_result(t), 1);
    wt_destroy(b);
    iot_close_pair(sv);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Ping-pong: a lost wake-up hangs here (watchdog)                      */

#define PAIRS 8
#define ROUNDS 2000

static void *ping(void *arg)
{
    int fd = *(int *)arg;
    unsigned char c = 0;
    for (unsigned i = 0; i < ROUNDS; i++) {
        unsigned char out = (unsigned char)i, in = 0;
        CHECK_EQ(weft_write(fd, &out, 1), 1);
        CHECK_EQ(weft_read(fd, &in, 1), 1);
        CHECK_EQ(in, (unsigned char)(out + 1));
        c = in;
    }
    return P(c);
}

static void *pong(void *arg)
{
    int fd = *(int *)arg;
    for (unsigned i = 0; i < ROUNDS; i++) {
        unsigned char in = 0;
        CHECK_EQ(weft_read(fd, &in, 1), 1);
        CHECK_EQ(in, (unsigned char)i);
        in++;
        CHECK_EQ(weft_write(fd, &in, 1), 1);
    }
    return NULL;
}

static void test_ping_pong(void **state)
{
    int sv[PAIRS][2];
    weft_task *t[PAIRS][2];
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    for (int i = 0; i < PAIRS; i++) {
        iot_pair(sv[i]);
        assert_int_equal(weft_spawn(&t[i][1], p, pong, &sv[i][1], NULL), 0);
        assert_int_equal(weft_spawn(&t[i][0], p, ping, &sv[i][0], NULL), 0);
    }
    for (int i = 0; i < PAIRS; i++) {
        assert_int_equal(iot_result(t[i][0]), (unsigned char)ROUNDS);
        assert_int_equal(weft_sync_wait(t[i][1], NULL), 0);
        assert_int_equal(weft_close(sv[i][0]), 0);
        assert_int_equal(weft_close(sv[i][1]), 0);
    }
    wt_destroy(p);
    WT_CLEAN();
}

/* A task on a pool and a plain thread on the two ends. */
static void *pong_thread(void *arg) { return pong(arg); }

static void test_task_and_thread(void **state)
{
    int sv[2];
    iot_pair(sv);
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    pthread_t th = wt_thread(pong_thread, &sv[1]);
    assert_int_equal(I(wt_run(p, ping, &sv[0])), (unsigned char)ROUNDS);
    wt_join(th);
    wt_destroy(p);
    iot_close_pair(sv);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST(test_wait_fd),
        WT_TEST(test_cancel),
        WT_TEST(test_tcp_echo),
        WT_TEST1(test_tcp_echo_threads),
        WT_TEST(test_big_write),
        WT_TEST(test_big_write_some),
        WT_TEST(test_close_wakes),
        WT_TEST1(test_close_then_reuse),
        WT_TEST(test_adopt_while_parked),
        WT_TEST(test_destroy_waits),
        WT_TEST(test_many_waiters),
        WT_TEST(test_timeouts),
        WT_TEST1(test_timeout_under_signals),
        WT_TEST(test_short_read_then_ready),
        WT_TEST(test_timer_while_polling),
        WT_TEST(test_other_pool),
        WT_TEST(test_ping_pong),
        WT_TEST(test_task_and_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
