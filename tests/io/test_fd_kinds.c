/*
 * test_fd_kinds.c — owned and borrowed fds (weft/io.h): what a program
 * that embeds weft meets when the libraries it calls own their sockets
 * and close them with close(2).
 *
 *   - the reuse scenario: fds used through weft, closed with close(2), the
 *     numbers reused by new sockets, 4 MiB through a 1-worker pool: it
 *     must complete (it hung when weft trusted what it knew of a number);
 *   - a stand-in for a client library: a blocking TCP socket it connects
 *     and closes itself, waited on by tasks with weft_wait_fd, closed and
 *     reconnected many times across tasks and workers: no wait lost or
 *     stuck, and the socket's flags never changed by weft;
 *   - a close(2) or a dup2(2) under a parked wait: the wait ends (-EBADF or
 *     a wake-up) instead of hanging;
 *   - the rules for borrowed non-sockets (a blocking pipe is waited on but
 *     not read), and owned fds (made non-blocking, closed with weft_close,
 *     a close(2) of one noticed when its number comes back).
 * Every wait is bounded: a hang fails the case at its timeout.
 */
#include "iot.h"

#include <poll.h>
#include <sys/wait.h>

#define BIG (4u << 20)
#define BIG_SEED 11

/* O_NONBLOCK and the other status flags of fd. */
static int flags_of(int fd)
{
    int f = fcntl(fd, F_GETFL);
    CHECK(f >= 0);
    return f;
}

/* ------------------------------------------------------------------ */
/* Numbers reused behind weft's back                                    */

struct big {
    int fd;
    size_t got, bad;
};

static void *big_read(void *arg)
{
    struct big *b = arg;
    unsigned char *buf = malloc(65536);
    while (b->got < BIG) {
        ssize_t n = weft_read_for(b->fd, buf, 65536, MS(30000));
        if (n <= 0) {
            CHECK_EQ(n, 1);
            break;
        }
        b->bad += iot_bad(buf, (size_t)n, BIG_SEED, b->got);
        b->got += (size_t)n;
    }
    free(buf);
    return NULL;
}

static void *big_write(void *arg)
{
    int fd = *(int *)arg;
    unsigned char *buf = malloc(BIG);
    iot_fill(buf, BIG, BIG_SEED, 0);
    ssize_t n = weft_write_for(fd, buf, BIG, MS(30000));
    free(buf);
    return P(n);
}

static void *one_write(void *arg)
{
    int fd = *(int *)arg;
    return P(weft_write(fd, "x", 1));
}

/* Write and read 4 MiB through sv on p (the writer waits for room many
 * times, so both ends park). */
static void pump(weft_pool *p, int sv[2])
{
    struct big b = {sv[1], 0, 0};
    weft_task *reader;
    assert_int_equal(weft_spawn(&reader, p, big_read, &b, NULL), 0);
    assert_int_equal(I(wt_run(p, big_write, &sv[0])), (intptr_t)BIG);
    assert_int_equal(weft_sync_wait(reader, NULL), 0);
    assert_int_equal(b.got, BIG);
    assert_int_equal(b.bad, 0);
}

/* A connected TCP pair of plain (blocking) sockets over loopback. */
static void tcp_pair(int sv[2])
{
    struct sockaddr_in addr;
    int lfd = iot_listener(&addr, 4);
    sv[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(sv[0] >= 0);
    assert_int_equal(connect(sv[0], (struct sockaddr *)&addr, sizeof addr), 0);
    sv[1] = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    assert_true(sv[1] >= 0);
    assert_int_equal(weft_close(lfd), 0);
}

static void reuse(void **state, bool tcp)
{
    (void)state;
    weft_pool *p = wt_pool(1);
    for (int round = 0; round < 8; round++) {
        int sv[2];
        if (tcp)
            tcp_pair(sv);
        else
            iot_pair(sv);
        int f0 = flags_of(sv[0]);
        /* Used through weft once... */
        assert_int_equal(I(wt_run(p, one_write, &sv[0])), 1);
        char c;
        assert_int_equal(weft_read(sv[1], &c, 1), 1);
        assert_int_equal(flags_of(sv[0]), f0); /* borrowed: untouched */
        /* ...closed behind weft's back, and the numbers reused. */
        int old0 = sv[0], old1 = sv[1];
        close(sv[0]);
        close(sv[1]);
        if (tcp)
            tcp_pair(sv);
        else
            iot_pair(sv);
        /* The kernel hands out the lowest free numbers: the same ones,
         * unless the listener took one (then the test proves less). */
        if (!tcp) {
            assert_true((sv[0] == old0 && sv[1] == old1) ||
                        (sv[0] == old1 && sv[1] == old0));
        }
        pump(p, sv);
        assert_int_equal(flags_of(sv[0]) & O_NONBLOCK, 0);
        close(sv[0]);
        close(sv[1]);
    }
    wt_destroy(p);
    WT_CLEAN();
}

static void test_reuse_socketpair(void **state) { reuse(state, false); }
static void test_reuse_tcp(void **state) { reuse(state, true); }

/* ------------------------------------------------------------------ */
/* A client library that owns its sockets                               */

#define LIB_TASKS 8
#define LIB_ROUNDS 150

struct lib_server {
    int lfd;
    atomic_bool stop;
};

/* The "database": answers each connection's byte with two bytes, after a
 * little while (so the client's wait parks), then closes. */
static void *lib_server_main(void *arg)
{
    struct lib_server *s = arg;
    for (;;) {
        struct pollfd pfd = {s->lfd, POLLIN, 0};
        if (poll(&pfd, 1, 50) == 0) {
            if (atomic_load(&s->stop))
                break;
            continue;
        }
        int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        char c;
        if (read(fd, &c, 1) == 1) {
            wt_sleep_ms(c & 1); /* 0 or 1 ms */
            CHECK_EQ(write(fd, "ab", 2), 2);
        }
        close(fd);
    }
    return NULL;
}

struct lib_client {
    const struct sockaddr_in *addr;
    unsigned rounds, numbers_reused;
};

/* The library: its own blocking socket, its own connect and close(2); the
 * task only waits on it (weft_wait_fd) and reads it (weft_read). */
static void *lib_client_task(void *arg)
{
    struct lib_client *c = arg;
    int last = -1;
    for (unsigned r = 0; r < LIB_ROUNDS; r++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(fd >= 0);
        CHECK_EQ(connect(fd, (const struct sockaddr *)c->addr,
                         sizeof *c->addr), 0);
        c->numbers_reused += fd == last;
        last = fd;
        int before = flags_of(fd);
        char q = (char)r;
        CHECK_EQ(send(fd, &q, 1, 0), 1);
        CHECK_EQ(weft_wait_fd_for(fd, WEFT_IN, MS(20000)), WEFT_IN);
        char buf[2];
        size_t got = 0;
        while (got < 2) {
            ssize_t n = weft_read_for(fd, buf + got, 2 - got, MS(20000));
            if (n <= 0) {
                CHECK_EQ(n, 1);
                break;
            }
            got += (size_t)n;
        }
        CHECK_EQ(got, 2);
        CHECK_EQ(flags_of(fd), before);
        close(fd); /* as the library does */
        c->rounds++;
    }
    return NULL;
}

static void test_client_library(void **state)
{
    struct sockaddr_in addr;
    struct lib_server s = {iot_listener(&addr, 64), false};
    /* The server is plain: let its blocking accept see the listener's
     * non-blocking flag (weft_socket set it) and poll instead. */
    pthread_t th = wt_thread(lib_server_main, &s);
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    struct lib_client c[LIB_TASKS];
    weft_task *t[LIB_TASKS];
    for (int i = 0; i < LIB_TASKS; i++) {
        c[i] = (struct lib_client){&addr, 0, 0};
        assert_int_equal(weft_spawn(&t[i], p, lib_client_task, &c[i], NULL),
                         0);
    }
    unsigned reused = 0;
    for (int i = 0; i < LIB_TASKS; i++) {
        assert_int_equal(weft_sync_wait(t[i], NULL), 0);
        assert_int_equal(c[i].rounds, LIB_ROUNDS);
        reused += c[i].numbers_reused;
    }
    /* The point of the case: numbers did come back while weft had seen
     * them. */
    assert_true(reused > 0);
    atomic_store(&s.stop, true);
    wt_join(th);
    wt_destroy(p);
    assert_int_equal(weft_close(s.lfd), 0);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* A close or a dup2 under a parked wait                                */

static void *wait_in(void *arg)
{
    return P(weft_wait_fd_for(*(int *)arg, WEFT_IN, MS(30000)));
}

static void *read_in(void *arg)
{
    char c;
    return P(weft_read_for(*(int *)arg, &c, 1, MS(30000)));
}

/* Park a task on fd (borrowed), then let `undo` take the file away from
 * under it (it returns whether sv[0] is still open); the wait must end
 * without its timeout, in a defined way. */
static void under_parked(void **state, weft_fn fn, bool (*undo)(int sv[2]),
                         intptr_t want_a, intptr_t want_b)
{
    int sv[2];
    iot_pair(sv);
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_task *t;
    assert_int_equal(weft_spawn(&t, p, fn, &sv[0], NULL), 0);
    iot_wait_parked(sv[0], 1);
    uint64_t t0 = wt_now_ns();
    bool open = undo(sv);
    intptr_t r = iot_result(t);
    /* Well before the task's own 30 s timeout: the netpoller's check runs
     * about once a second. */
    assert_true(wt_now_ns() - t0 < MS(10000));
    assert_true(r == want_a || r == want_b);
    wt_destroy(p);
    close(sv[1]);
    if (open)
        close(sv[0]);
    WT_CLEAN();
}

/* These race on purpose with the parked wait (tests/tsan.supp names them
 * for ThreadSanitizer, which treats an fd like memory). */
__attribute__((noinline)) static bool close_first(int sv[2])
{
    close(sv[0]);
    return false;
}

__attribute__((noinline)) static bool dup2_over_first(int sv[2])
{
    int other[2];
    iot_pair(other);
    assert_int_equal(dup2(other[0], sv[0]), sv[0]);
    close(other[0]);
    close(other[1]);
    return true;
}

__attribute__((noinline)) static bool weft_close_first(int sv[2])
{
    assert_int_equal(weft_close(sv[0]), 0);
    return false;
}

static void test_close_under_wait(void **state)
{
    under_parked(state, wait_in, close_first, -EBADF, -EBADF);
}

static void test_close_under_read(void **state)
{
    under_parked(state, read_in, close_first, -EBADF, -EBADF);
}

/* dup2 puts another file under the number: the wait may end as -EBADF
 * (the check saw the old registration gone) or as a wake-up that found the
 * new file (hung up: its peer is closed) readable. */
static void test_dup2_under_wait(void **state)
{
    under_parked(state, wait_in, dup2_over_first, -EBADF, WEFT_IN);
}

/* close(2) under a parked read, the number taken at once by a new socket
 * that another task then waits on: the old read ends with -EBADF, and
 * never reads the new socket's bytes.  (The new wait registered the new
 * file under the old waiters, which the check then never found, and the
 * new file's report woke them to read its data.) */
static void *read_one(void *arg)
{
    char c[16];
    return P(weft_read(*(int *)arg, c, sizeof c));
}

static void *wait_briefly(void *arg)
{
    return P(weft_wait_fd_for(*(int *)arg, WEFT_IN, MS(20)));
}

static void test_close_then_reuse_under_read(void **state)
{
    int sv[2], other[2];
    iot_pair(sv);
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_task *old;
    assert_int_equal(weft_spawn(&old, p, read_one, &sv[0], NULL), 0);
    iot_wait_parked(sv[0], 1);
    int n = sv[0];
    close_first(sv);
    iot_pair(other);
    if (other[0] != n) {
        assert_int_equal(dup2(other[0], n), n);
        close(other[0]);
        other[0] = n;
    }
    weft_task *fresh;
    assert_int_equal(weft_spawn(&fresh, p, wait_briefly, &other[0], NULL), 0);
    assert_int_equal(iot_result(fresh), -ETIMEDOUT);
    assert_int_equal(write(other[1], "for the new", 11), 11);
    assert_int_equal(iot_result(old), -EBADF);
    /* The bytes are still the new socket's. */
    char buf[16];
    assert_int_equal(read(other[0], buf, sizeof buf), 11);
    wt_destroy(p);
    close(sv[1]);
    close(other[0]);
    close(other[1]);
    WT_CLEAN();
}

static void test_weft_close_under_wait(void **state)
{
    under_parked(state, wait_in, weft_close_first, -EBADF, -EBADF);
}

/* ------------------------------------------------------------------ */
/* Borrowed non-sockets, owned fds                                      */

static void *pipe_rules(void *arg)
{
    int *pp = arg;
    char c;
    int before = flags_of(pp[0]);
    /* Blocking and not a socket: only waited on. */
    CHECK_EQ(weft_read(pp[0], &c, 1), -EINVAL);
    CHECK_EQ(weft_write(pp[1], "p", 1), -EINVAL);
    CHECK_EQ(write(pp[1], "p", 1), 1);
    CHECK_EQ(weft_wait_fd_for(pp[0], WEFT_IN, MS(10000)), WEFT_IN);
    CHECK_EQ(read(pp[0], &c, 1), 1);
    CHECK_EQ(flags_of(pp[0]), before);
    /* Non-blocking: read and written, parking while empty. */
    CHECK_EQ(fcntl(pp[0], F_SETFL, before | O_NONBLOCK), 0);
    CHECK_EQ(fcntl(pp[1], F_SETFL, flags_of(pp[1]) | O_NONBLOCK), 0);
    CHECK_EQ(weft_read_for(pp[0], &c, 1, MS(5)), -ETIMEDOUT);
    CHECK_EQ(weft_write(pp[1], "q", 1), 1);
    CHECK_EQ(weft_read_for(pp[0], &c, 1, MS(10000)), 1);
    CHECK_EQ(c, 'q');
    return NULL;
}

static void test_borrowed_pipe(void **state)
{
    int pp[2];
    assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    wt_run(p, pipe_rules, pp);
    /* The same rules on a plain thread (poll(2) there). */
    int qq[2];
    assert_int_equal(pipe2(qq, O_CLOEXEC), 0);
    pipe_rules(qq);
    wt_destroy(p);
    close(pp[0]);
    close(pp[1]);
    close(qq[0]);
    close(qq[1]);
    WT_CLEAN();
}

/* A child whose stderr we read: weft says so when an owned fd's number
 * comes back from the kernel after a close(2). */
static void test_owned_close_noticed(void **state)
{
    (void)state;
    int err[2];
    assert_int_equal(pipe(err), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(err[1], 2);
        int fd = weft_socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || !(fcntl(fd, F_GETFL) & O_NONBLOCK))
            _exit(2);
        if (weft_fd_adopt(fd) != -EEXIST)
            _exit(3);
        close(fd); /* the bug weft must notice */
        int again = weft_socket(AF_INET, SOCK_STREAM, 0);
        _exit(again == fd && weft_close(again) == 0 ? 0 : 4);
    }
    close(err[1]);
    char buf[512] = {0};
    size_t n = 0;
    ssize_t r;
    while (n < sizeof buf - 1 && (r = read(err[0], buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)r;
    close(err[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_non_null(strstr(buf, "was closed without weft_close"));
}

/* Owned: weft_fd_adopt sets O_NONBLOCK, waits are edge-triggered, and
 * weft_close ends them. */
static void *adopted_echo(void *arg)
{
    int fd = *(int *)arg;
    char buf[64];
    ssize_t n = weft_read_for(fd, buf, sizeof buf, MS(20000));
    CHECK_EQ(n, 5);
    CHECK_EQ(weft_write(fd, buf, (size_t)n), n);
    return P(weft_read_for(fd, buf, sizeof buf, MS(20000)));
}

static void test_adopt(void **state)
{
    int sv[2];
    iot_pair(sv);
    assert_int_equal(flags_of(sv[0]) & O_NONBLOCK, 0);
    assert_int_equal(weft_fd_adopt(sv[0]), 0);
    assert_true(flags_of(sv[0]) & O_NONBLOCK);
    assert_int_equal(weft_fd_adopt(sv[0]), -EEXIST);
    assert_int_equal(weft_fd_adopt(-1), -EBADF);
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_task *t;
    assert_int_equal(weft_spawn(&t, p, adopted_echo, &sv[0], NULL), 0);
    assert_int_equal(write(sv[1], "hello", 5), 5);
    char buf[8];
    assert_int_equal(read(sv[1], buf, sizeof buf), 5);
    iot_wait_parked(sv[0], 1);
    assert_int_equal(weft_close(sv[0]), 0); /* wakes it: -EBADF */
    assert_int_equal(iot_result(t), -EBADF);
    wt_destroy(p);
    close(sv[1]);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST1(test_reuse_socketpair),
        WT_TEST1(test_reuse_tcp),
        WT_TEST(test_client_library),
        WT_TEST(test_close_under_wait),
        WT_TEST(test_close_under_read),
        WT_TEST(test_dup2_under_wait),
        WT_TEST(test_close_then_reuse_under_read),
        WT_TEST(test_weft_close_under_wait),
        WT_TEST(test_borrowed_pipe),
        WT_TEST1(test_owned_close_noticed),
        WT_TEST(test_adopt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
