/*
 * test_cancel.c — weft_task_cancel ends a hooked wait with -1 and errno
 * ECANCELED (hooked build only).
 *
 * A victim task makes a blocking call that nothing will end (recv on a
 * blocking socket nobody writes to, send on a full one, poll with no
 * timeout, a connect whose SYN is dropped, a 100 s nanosleep...).  A canceller task, on the same 1-worker pool, yields
 * until the victim is parked (the pool's count; the canceller itself
 * never parks), cancels it, and awaits it.  The victim reports what its
 * call returned and errno.  A hook that blocked the worker in the real
 * call would never let the canceller run: the watchdog fails the case.
 *
 * After the cancel, the socket is as it was: still blocking, and a byte
 * written then is read whole by a plain recv (the cancelled call took
 * nothing).
 */
#include "hk.h"

#include <sys/select.h>

struct victim {
    int fd;          /* the socket it waits on (-1: none)   */
    int fd2;         /* a second one (v_poll_two)           */
    struct sockaddr_in addr; /* where v_connect connects    */
    long ret;        /* what the call returned              */
    int err;         /* errno after it                      */
    long tid_before, tid_after;
};

struct cancel_run {
    weft_pool *pool;
    weft_task *victim_task;
};

static void *canceller(void *arg)
{
    struct cancel_run *r = arg;
    while (hk_parked(r->pool) < 1)
        CHECK_EQ(weft_yield(), 0);
    CHECK_EQ(weft_task_cancel(r->victim_task), 0);
    CHECK_EQ(weft_await(r->victim_task, NULL), 0);
    return NULL;
}

/* Run victim body fn(v) and cancel it once it parks. */
static void cancel_case(weft_fn fn, struct victim *v)
{
    struct cancel_run r;
    r.pool = hk_pool(1, WEFT_POOL_NO_MONITOR);
    v->ret = -12345;
    v->err = -1;
    assert_int_equal(weft_spawn(&r.victim_task, r.pool, fn, v, NULL), 0);
    wt_run(r.pool, canceller, &r);
    wt_destroy(r.pool);
    /* The call came back on the thread it parked on. */
    assert_int_equal(v->tid_before, v->tid_after);
}

#define VICTIM_CALL(v, call)                                            \
    do {                                                                \
        errno = 0;                                                      \
        (v)->tid_before = hk_tid();                                     \
        (v)->ret = (long)(call);                                        \
        (v)->err = errno;                                               \
        (v)->tid_after = hk_tid();                                      \
    } while (0)

static void *v_recv(void *arg)
{
    struct victim *v = arg;
    char b[16];
    VICTIM_CALL(v, recv(v->fd, b, 16, 0));
    return NULL;
}

static void *v_read(void *arg)
{
    struct victim *v = arg;
    char b[16];
    VICTIM_CALL(v, read(v->fd, b, 16));
    return NULL;
}

static void *v_poll(void *arg)
{
    struct victim *v = arg;
    struct pollfd pf = {.fd = v->fd, .events = POLLIN};
    VICTIM_CALL(v, poll(&pf, 1, -1));
    return NULL;
}

static void *v_select(void *arg)
{
    struct victim *v = arg;
    fd_set rd;
    FD_ZERO(&rd);
    FD_SET(v->fd, &rd);
    VICTIM_CALL(v, select(v->fd + 1, &rd, NULL, NULL, NULL));
    return NULL;
}

static void *v_accept(void *arg)
{
    struct victim *v = arg;
    VICTIM_CALL(v, accept(v->fd, NULL, NULL));
    return NULL;
}

static void *v_send_full(void *arg)
{
    struct victim *v = arg;
    VICTIM_CALL(v, send(v->fd, "z", 1, 0));
    return NULL;
}

static void *v_write_full(void *arg)
{
    struct victim *v = arg;
    VICTIM_CALL(v, write(v->fd, "z", 1));
    return NULL;
}

static void *v_ppoll(void *arg)
{
    struct victim *v = arg;
    struct pollfd pf = {.fd = v->fd, .events = POLLIN};
    VICTIM_CALL(v, ppoll(&pf, 1, NULL, NULL));
    return NULL;
}

/* Two fds: the hook waits on both through an epoll instance of its own. */
static void *v_poll_two(void *arg)
{
    struct victim *v = arg;
    struct pollfd pf[2] = {{.fd = v->fd, .events = POLLIN},
                           {.fd = v->fd2, .events = POLLIN}};
    VICTIM_CALL(v, poll(pf, 2, -1));
    return NULL;
}

static void *v_connect(void *arg)
{
    struct victim *v = arg;
    VICTIM_CALL(v, connect(v->fd, (struct sockaddr *)&v->addr, sizeof v->addr));
    return NULL;
}

/* sleep(3) reports the seconds not slept. */
static void *v_sleep(void *arg)
{
    struct victim *v = arg;
    VICTIM_CALL(v, sleep(100));
    return NULL;
}

static void *v_nanosleep(void *arg)
{
    struct victim *v = arg;
    struct timespec ts = {.tv_sec = 100}, rem = {0, 0};
    VICTIM_CALL(v, nanosleep(&ts, &rem));
    return NULL;
}

static void *v_usleep(void *arg)
{
    struct victim *v = arg;
    VICTIM_CALL(v, usleep(900000)); /* under 1 s: POSIX's limit */
    return NULL;
}

/* clock_nanosleep returns the error number instead of setting errno. */
static void *v_clock_nanosleep(void *arg)
{
    struct victim *v = arg;
    struct timespec ts = {.tv_sec = 100};
    VICTIM_CALL(v, clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL));
    return NULL;
}

/* A victim waiting on sv[0]; afterwards the socket still works. */
static void socket_case(weft_fn fn)
{
    int sv[2];
    hk_pair(sv);
    int fl = hk_fl(sv[0]);
    struct victim v = {.fd = sv[0]};
    cancel_case(fn, &v);
    assert_int_equal(v.ret, -1);
    assert_int_equal(v.err, ECANCELED);
    assert_int_equal(hk_fl(sv[0]), fl);
    assert_int_equal(write(sv[1], "abc", 3), 3);
    char b[16];
    assert_int_equal(recv(sv[0], b, 16, 0), 3);
    close(sv[0]);
    close(sv[1]);
    WT_CLEAN();
}

static void test_cancel_recv(void **state)
{
    (void)state;
    assert_true(hk_hook_loaded());
    socket_case(v_recv);
}

static void test_cancel_read(void **state)
{
    (void)state;
    socket_case(v_read);
}

static void test_cancel_poll(void **state)
{
    (void)state;
    socket_case(v_poll);
}

static void test_cancel_select(void **state)
{
    (void)state;
    socket_case(v_select);
}

/* A send on a full socket. */
static void full_case(weft_fn fn)
{
    int sv[2];
    hk_pair(sv);
    int fl = hk_fl(sv[0]);
    size_t filled = hk_fill(sv[0]);
    assert_true(filled > 0);
    struct victim v = {.fd = sv[0]};
    cancel_case(fn, &v);
    assert_int_equal(v.ret, -1);
    assert_int_equal(v.err, ECANCELED);
    assert_int_equal(hk_fl(sv[0]), fl);
    /* Nothing of the cancelled send went. */
    hk_drain(sv[1], filled);
    char b[16];
    assert_int_equal(recv(sv[1], b, 16, MSG_DONTWAIT), -1);
    close(sv[0]);
    close(sv[1]);
    WT_CLEAN();
}

static void test_cancel_send(void **state)
{
    (void)state;
    full_case(v_send_full);
}

static void test_cancel_write(void **state)
{
    (void)state;
    full_case(v_write_full);
}

static void test_cancel_ppoll(void **state)
{
    (void)state;
    socket_case(v_ppoll);
}

static void test_cancel_poll_two(void **state)
{
    (void)state;
    int sv[2], other[2];
    hk_pair(sv);
    hk_pair(other);
    struct victim v = {.fd = sv[0], .fd2 = other[0]};
    cancel_case(v_poll_two, &v);
    assert_int_equal(v.ret, -1);
    assert_int_equal(v.err, ECANCELED);
    close(sv[0]);
    close(sv[1]);
    close(other[0]);
    close(other[1]);
    WT_CLEAN();
}

/* A blocking connect that waits: the listener's accept queue is full
 * (backlog 0, one connection not accepted), so the kernel drops the SYN
 * and the handshake would go on for seconds.  The cancelled connect says
 * ECANCELED, and the socket is still blocking. */
static void test_cancel_connect(void **state)
{
    (void)state;
    struct victim v = {.fd = -1};
    int l = hk_listener(&v.addr, 0);
    int c1 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(c1, (struct sockaddr *)&v.addr, sizeof v.addr),
                     0);
    v.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int fl = hk_fl(v.fd);
    assert_false(fl & O_NONBLOCK);
    cancel_case(v_connect, &v);
    assert_int_equal(v.ret, -1);
    assert_int_equal(v.err, ECANCELED);
    assert_int_equal(hk_fl(v.fd), fl);
    close(v.fd);
    close(c1);
    close(l);
    WT_CLEAN();
}

static void test_cancel_accept(void **state)
{
    (void)state;
    struct sockaddr_in addr;
    int l = hk_listener(&addr, 4);
    int fl = hk_fl(l);
    struct victim v = {.fd = l};
    cancel_case(v_accept, &v);
    assert_int_equal(v.ret, -1);
    assert_int_equal(v.err, ECANCELED);
    assert_int_equal(hk_fl(l), fl);
    close(l);
    WT_CLEAN();
}

/* want_err < 0: errno not checked. */
static void sleep_case(weft_fn fn, long want_ret, int want_err)
{
    struct victim v = {.fd = -1};
    uint64_t t0 = wt_now_ns();
    cancel_case(fn, &v);
    assert_int_equal(v.ret, want_ret);
    if (want_err >= 0)
        assert_int_equal(v.err, want_err);
    /* Ended by the cancel, long before its time. */
    assert_true(wt_now_ns() - t0 < MS(60000));
    WT_CLEAN();
}

static void test_cancel_nanosleep(void **state)
{
    (void)state;
    sleep_case(v_nanosleep, -1, ECANCELED);
}

static void test_cancel_usleep(void **state)
{
    (void)state;
    sleep_case(v_usleep, -1, ECANCELED);
}

static void test_cancel_sleep(void **state)
{
    (void)state;
    struct victim v = {.fd = -1};
    cancel_case(v_sleep, &v);
    /* The seconds not slept, rounded up: all of them, give or take. */
    assert_true(v.ret >= 99 && v.ret <= 100);
    WT_CLEAN();
}

static void test_cancel_clock_nanosleep(void **state)
{
    (void)state;
    /* It returns the error number; errno is not its channel (not
     * checked). */
    sleep_case(v_clock_nanosleep, ECANCELED, -1);
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST1(test_cancel_recv),
        WT_TEST1(test_cancel_read),
        WT_TEST1(test_cancel_poll),
        WT_TEST1(test_cancel_select),
        WT_TEST1(test_cancel_accept),
        WT_TEST1(test_cancel_send),
        WT_TEST1(test_cancel_write),
        WT_TEST1(test_cancel_ppoll),
        WT_TEST1(test_cancel_poll_two),
        WT_TEST1(test_cancel_connect),
        WT_TEST1(test_cancel_sleep),
        WT_TEST1(test_cancel_nanosleep),
        WT_TEST1(test_cancel_usleep),
        WT_TEST1(test_cancel_clock_nanosleep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
