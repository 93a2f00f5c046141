/*
 * test_io_idle.c — 10,000 idle connections parked on the netpoller while
 * 100 active ones make progress (issue 6).
 *
 * The idle connections' client ends live in a forked child (the process
 * limit here is 20,000 fds), which connects them all and then holds them
 * until told to go.  In this process one task per connection parks in
 * weft_read; the test waits until the netpoller counts them all as parked,
 * runs 100 echo connections (200 round trips of 64 bytes each, every byte
 * checked) beside them, checks that no idle task woke meanwhile, then lets
 * the child exit: every idle task must see the end of its stream.
 *
 * WEFT_STRESS_SCALE (as for suite 'stress') scales the idle count (down to
 * 500), for the sanitizer builds.
 */
#include "iot.h"

#include <weft/inspect.h>

#define IDLE_FULL 10000
#define ACTIVE 100
#define MSGS 200
#define MSG 64
#define TASK_STACK (64u * 1024u)

static atomic_uint idle_eof, idle_done, active_done;

static void *idle_conn(void *arg)
{
    int fd = (int)I(arg);
    char c;
    ssize_t r = weft_read(fd, &c, 1);
    CHECK_EQ(r, 0);
    if (r == 0)
        atomic_fetch_add(&idle_eof, 1);
    CHECK_EQ(weft_close(fd), 0);
    atomic_fetch_add(&idle_done, 1);
    return NULL;
}

struct acceptor {
    int lfd;
    unsigned n;
    weft_fn fn;
};

/* Accept n connections, one detached task each. */
static void *accept_all(void *arg)
{
    struct acceptor *a = arg;
    for (unsigned i = 0; i < a->n; i++) {
        int fd = weft_accept_for(a->lfd, NULL, NULL, MS(60000));
        CHECK(fd >= 0);
        if (fd < 0)
            break;
        CHECK_EQ(weft_spawn(NULL, weft_pool_current(), a->fn, P(fd), NULL), 0);
    }
    return NULL;
}

static void *echo_conn(void *arg)
{
    int fd = (int)I(arg);
    unsigned char buf[MSG];
    for (;;) {
        ssize_t n = weft_read_for(fd, buf, sizeof buf, MS(60000));
        if (n <= 0) {
            CHECK_EQ(n, 0);
            break;
        }
        CHECK_EQ(weft_write_for(fd, buf, (size_t)n, MS(60000)), n);
    }
    CHECK_EQ(weft_close(fd), 0);
    return NULL;
}

static void *active_client(void *arg)
{
    const struct sockaddr_in *addr = arg;
    int fd = weft_socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    CHECK_EQ(weft_connect_for(fd, (const struct sockaddr *)addr, sizeof *addr, MS(60000)),
             0);
    unsigned seed = (unsigned)fd;
    unsigned char out[MSG], in[MSG];
    size_t bad = 0;
    for (unsigned m = 0; m < MSGS; m++) {
        iot_fill(out, MSG, seed, (size_t)m * MSG);
        CHECK_EQ(weft_write_for(fd, out, MSG, MS(60000)), MSG);
        CHECK_EQ(iot_read_all(fd, in, MSG, MS(60000)), MSG);
        bad += iot_bad(in, MSG, seed, (size_t)m * MSG);
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(weft_close(fd), 0);
    atomic_fetch_add(&active_done, 1);
    return NULL;
}

/* The child: on a byte from `go`, connect n sockets to addr; then hold
 * them until `hold` reaches end of file. */
static void child(int go, int hold, const struct sockaddr_in *addr,
                  unsigned n)
{
    char c;
    if (read(go, &c, 1) != 1)
        _exit(3);
    for (unsigned i = 0; i < n; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 ||
            connect(fd, (const struct sockaddr *)addr, sizeof *addr) != 0) {
            perror("io_idle child: connect");
            _exit(2);
        }
    }
    while (read(hold, &c, 1) > 0)
        ;
    _exit(0);
}

static void wait_until(atomic_uint *v, unsigned n)
{
    while (atomic_load(v) < n)
        sched_yield();
}

static void test_idle_and_active(void **state)
{
    (void)state;
    const char *s = getenv("WEFT_STRESS_SCALE");
    double scale = s ? atof(s) : 1.0;
    unsigned idle = (unsigned)(IDLE_FULL * scale);
    if (idle < 500)
        idle = 500;
    if (idle > IDLE_FULL)
        idle = IDLE_FULL;
    rlim_t limit = iot_raise_nofile();
    if (limit < idle + 2 * ACTIVE + 64) {
        fprintf(stderr, "io_idle: fd limit %llu too low for %u\n",
                (unsigned long long)limit, idle);
        skip();
    }

    struct sockaddr_in idle_addr, active_addr;
    int idle_lfd = iot_listener(&idle_addr, 4096);
    int active_lfd = iot_listener(&active_addr, 256);
    int go[2], hold[2];
    assert_int_equal(pipe2(go, O_CLOEXEC), 0);
    assert_int_equal(pipe2(hold, O_CLOEXEC), 0);
    /* Before any thread exists. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(go[1]);
        close(hold[1]);
        close(idle_lfd);
        close(active_lfd);
        child(go[0], hold[0], &idle_addr, idle);
    }
    close(go[0]);
    close(hold[0]);

    weft_pool_opts o = {.threads = 2, .stack_size = TASK_STACK, .name = "io"};
    weft_pool *p = NULL;
    assert_int_equal(weft_pool_create(&p, &o), 0);

    /* Idle: all accepted, all parked. */
    uint64_t t0 = wt_now_ns();
    struct acceptor ia = {idle_lfd, idle, idle_conn};
    weft_task *acc;
    assert_int_equal(weft_spawn(&acc, p, accept_all, &ia, NULL), 0);
    assert_int_equal(write(go[1], "g", 1), 1);
    assert_int_equal(weft_sync_wait(acc, NULL), 0);
    while (iot_netpoll_waiters(p) < idle)
        sched_yield();
    uint64_t t1 = wt_now_ns();

    /* Active, beside them. */
    struct acceptor aa = {active_lfd, ACTIVE, echo_conn};
    assert_int_equal(weft_spawn(&acc, p, accept_all, &aa, NULL), 0);
    for (unsigned i = 0; i < ACTIVE; i++)
        assert_int_equal(weft_spawn(NULL, p, active_client, &active_addr, NULL), 0);
    wait_until(&active_done, ACTIVE);
    assert_int_equal(weft_sync_wait(acc, NULL), 0);
    uint64_t t2 = wt_now_ns();
    assert_int_equal(atomic_load(&idle_done), 0);
    assert_true(iot_netpoll_waiters(p) >= idle);

    /* The child goes: every idle connection ends. */
    close(hold[1]);
    wait_until(&idle_done, idle);
    uint64_t t3 = wt_now_ns();
    assert_int_equal(atomic_load(&idle_eof), idle);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    wt_destroy(p);
    assert_int_equal(weft_close(idle_lfd), 0);
    assert_int_equal(weft_close(active_lfd), 0);
    close(go[1]);
    printf("io_idle: %u idle parked in %.0f ms; %u active x %u round trips "
           "in %.0f ms (%.0f msg/s); all idle ended in %.0f ms\n",
           idle, (double)(t1 - t0) / 1e6, ACTIVE, MSGS,
           (double)(t2 - t1) / 1e6,
           (double)ACTIVE * MSGS / ((double)(t2 - t1) / 1e9),
           (double)(t3 - t2) / 1e6);
    WT_CLEAN();
}

/* One worker that ran tasks (so it owes its caches' trim, 100 ms after
 * it parks), then one task waiting 400 ms on an fd: the worker sleeps in
 * the poller until the timeout, waking for the trim once.  It used to
 * give the poller up at the trim's deadline, skip the trim (the waits it
 * had just left unattended counted as work), and park again with the
 * deadline already past: a park a few microseconds long, over and over,
 * 80% of a CPU, until the read's timeout.  Counted in the worker's parks,
 * not in time. */
static void *small(void *arg) { return arg; }

static void *dirty_then_wait(void *arg)
{
    int fd = (int)I(arg);
    weft_pool *p = weft_pool_current();
    for (int i = 0; i < 100; i++) {
        weft_task *t;
        CHECK_EQ(weft_spawn(&t, p, small, P(i), NULL), 0);
        CHECK_EQ(weft_yield(), 0); /* runs it, not inline in the await */
        void *r = NULL;
        CHECK_EQ(weft_await(t, &r), 0);
        CHECK_EQ(I(r), i);
    }
    char c;
    CHECK_EQ(weft_read_for(fd, &c, 1, MS(400)), -ETIMEDOUT);
    return NULL;
}

static void test_fd_wait_parks_quietly(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
                     0);
    weft_pool_opts o = {.threads = 1, .flags = WEFT_POOL_NO_MONITOR};
    weft_pool *p = NULL;
    assert_int_equal(weft_pool_create(&p, &o), 0);
    struct weft_worker_stats before = {.size = sizeof before};
    struct weft_worker_stats after = {.size = sizeof after};
    assert_int_equal(weft_pool_worker_stats(p, 0, &before), 0);
    weft_task *t;
    assert_int_equal(weft_spawn(&t, p, dirty_then_wait, P(sv[0]), NULL), 0);
    assert_int_equal(weft_sync_wait(t, NULL), 0);
    assert_int_equal(weft_pool_worker_stats(p, 0, &after), 0);
    printf("parks while the task waited: %llu\n",
           (unsigned long long)(after.parks - before.parks));
    assert_true(after.parks - before.parks < 50);
    wt_destroy(p);
    close(sv[0]);
    close(sv[1]);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST1(test_idle_and_active),
        WT_TEST1(test_fd_wait_parks_quietly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
