/*
 * test_sleep.c — the hooked sleeps park the task (hooked build only):
 * nanosleep, clock_nanosleep (relative and absolute), usleep, sleep(0),
 * poll and select with no fds.  glibc's usleep and sleep call its
 * internal nanosleep, which no interposition of nanosleep reaches: each
 * needs its own entry, and each is checked here.
 *
 * A 1-worker pool without monitor: the sleeper and a ticker task that
 * only yields.  Each sleep of 20 ms must return what libc's returns
 * (0), take at least its time, and let the ticker run meanwhile (3
 * rounds at least): a sleep that blocked the worker would leave it
 * still.  Invalid arguments get libc's answers at once.
 */
#include "hk.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/select.h>
#include <sys/wait.h>

struct sleep_run {
    atomic_ulong ticks;
    atomic_bool stop;
};

static void *ticker(void *arg)
{
    struct sleep_run *r = arg;
    while (!atomic_load(&r->stop)) {
        atomic_fetch_add(&r->ticks, 1);
        CHECK_EQ(weft_yield(), 0);
    }
    return NULL;
}

enum { NANO, CLOCK_REL, CLOCK_ABS, USLEEP, POLL0, SELECT0, NKINDS };
static const char *const names[] = {"nanosleep", "clock_nanosleep",
                                    "clock_nanosleep TIMER_ABSTIME", "usleep",
                                    "poll with no fds", "select with no fds"};

static long sleep_20ms(int kind)
{
    struct timespec ts = {.tv_nsec = 20000000};
    switch (kind) {
    case NANO:
        return nanosleep(&ts, NULL);
    case CLOCK_REL:
        return clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
    case CLOCK_ABS: {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        now.tv_nsec += 20000000;
        if (now.tv_nsec >= 1000000000) {
            now.tv_nsec -= 1000000000;
            now.tv_sec++;
        }
        return clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &now, NULL);
    }
    case USLEEP:
        return usleep(20000);
    case POLL0:
        return poll(NULL, 0, 20);
    default: {
        struct timeval tv = {.tv_usec = 20000};
        return select(0, NULL, NULL, NULL, &tv);
    }
    }
}

static void *sleeper(void *arg)
{
    struct sleep_run *r = arg;
    for (int k = 0; k < NKINDS; k++) {
        unsigned long t0 = atomic_load(&r->ticks);
        uint64_t start = wt_now_ns();
        errno = EDOM;
        long ret = sleep_20ms(k);
        int err = errno;
        uint64_t took = wt_now_ns() - start;
        unsigned long t1 = atomic_load(&r->ticks);
        if (ret != 0 || took < MS(20) || t1 < t0 + 3)
            fprintf(stderr, "%s: %ld, %" PRIu64 " ns, ticker %lu rounds\n",
                    names[k], ret, took, t1 - t0);
        CHECK_EQ(ret, 0);
        CHECK_EQ(err, EDOM);
        CHECK(took >= MS(20));
        CHECK(t1 >= t0 + 3);
    }

    /* sleep(0) returns 0 at once. */
    CHECK_EQ(sleep(0), 0);

    /* What libc says to a bad time, at once: EINVAL. */
    unsigned long t0 = atomic_load(&r->ticks);
    struct timespec bad = {.tv_sec = 0, .tv_nsec = 1000000000};
    errno = 0;
    CHECK_EQ(nanosleep(&bad, NULL), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(clock_nanosleep(CLOCK_MONOTONIC, 0, &bad, NULL), EINVAL);
    bad = (struct timespec){.tv_sec = -1};
    errno = 0;
    CHECK_EQ(nanosleep(&bad, NULL), -1);
    CHECK_EQ(errno, EINVAL);
    /* A clock that cannot sleep. */
    struct timespec ts = {.tv_nsec = 1000};
    CHECK_EQ(clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &ts, NULL), EINVAL);
    CHECK_EQ(atomic_load(&r->ticks), t0);

    atomic_store(&r->stop, true);
    return NULL;
}

static void test_sleeps(void **state)
{
    (void)state;
    assert_true(hk_hook_loaded());
    static struct sleep_run r;
    memset(&r, 0, sizeof r);
    weft_pool *p = hk_pool(1, WEFT_POOL_NO_MONITOR);
    weft_task *tk;
    assert_int_equal(weft_spawn(&tk, p, ticker, &r, NULL), 0);
    wt_run(p, sleeper, &r);
    assert_int_equal(weft_sync_wait(tk, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* errno after a sleep that succeeds is what it was before, though another
 * task ran on the thread meanwhile and set its own (docs/foreign.md). */
static atomic_bool g_noise_stop;

static void *errno_noise(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_noise_stop)) {
        errno = EIO;
        CHECK_EQ(weft_yield(), 0);
    }
    return NULL;
}

static void *sleeps_keep_errno(void *arg)
{
    (void)arg;
    struct timespec ts = {.tv_nsec = 2000000};
    errno = 777;
    CHECK_EQ(usleep(2000), 0);
    CHECK_EQ(errno, 777);
    CHECK_EQ(nanosleep(&ts, NULL), 0);
    CHECK_EQ(errno, 777);
    CHECK_EQ(clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL), 0);
    CHECK_EQ(errno, 777);
    atomic_store(&g_noise_stop, true);
    return NULL;
}

static void test_sleeps_keep_errno(void **state)
{
    (void)state;
    assert_true(hk_hook_loaded());
    atomic_store(&g_noise_stop, false);
    weft_pool *p = hk_pool(1, WEFT_POOL_NO_MONITOR);
    weft_task *noise;
    assert_int_equal(weft_spawn(&noise, p, errno_noise, NULL, NULL), 0);
    wt_run(p, sleeps_keep_errno, NULL);
    assert_int_equal(weft_sync_wait(noise, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* A child of fork(2) is a plain thread: its hooked sleep is libc's.  It
 * parked before, and the child's one thread ran the copied pool's
 * scheduler: another task's body ran in the child (the ticker's check),
 * or the child hung. */
static int g_fork_pipe[2];
static pid_t g_parent;
static atomic_bool g_fork_stop;

static void *fork_ticker(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_fork_stop)) {
        if (getpid() != g_parent) {
            (void)!write(g_fork_pipe[1], "B", 1); /* ran in the child */
            _exit(3);
        }
        CHECK_EQ(weft_sleep(1000000), 0);
    }
    return NULL;
}

static void *forker(void *arg)
{
    (void)arg;
    pid_t pid = fork();
    if (pid == 0) {
        /* Async-signal-safe calls only, as weft.h asks of a child. */
        struct timespec ts = {.tv_nsec = 20000000};
        char ok = nanosleep(&ts, NULL) == 0 ? '1' : '0';
        (void)!write(g_fork_pipe[1], &ok, 1);
        _exit(0);
    }
    return P(pid);
}

static void test_fork_child_is_plain(void **state)
{
    (void)state;
    assert_true(hk_hook_loaded());
    g_parent = getpid();
    atomic_store(&g_fork_stop, false);
    assert_int_equal(pipe2(g_fork_pipe, O_CLOEXEC), 0);
    weft_pool *p = hk_pool(1, WEFT_POOL_NO_MONITOR);
    weft_task *tk, *f;
    assert_int_equal(weft_spawn(&tk, p, fork_ticker, NULL, NULL), 0);
    assert_int_equal(weft_spawn(&f, p, forker, NULL, NULL), 0);
    void *r;
    assert_int_equal(weft_sync_wait(f, &r), 0);
    pid_t pid = (pid_t)I(r);
    assert_true(pid > 0);
    struct pollfd pe = {g_fork_pipe[0], POLLIN, 0};
    assert_int_equal(poll(&pe, 1, 10000), 1); /* 10 s: a hung child */
    char got = 0;
    assert_int_equal(read(g_fork_pipe[0], &got, 1), 1);
    assert_int_equal(got, '1');
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    atomic_store(&g_fork_stop, true);
    assert_int_equal(weft_sync_wait(tk, NULL), 0);
    wt_destroy(p);
    close(g_fork_pipe[0]);
    close(g_fork_pipe[1]);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST1(test_sleeps),
        WT_TEST1(test_sleeps_keep_errno),
        WT_TEST1(test_fork_child_is_plain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
