/*
 * test_fortify.c — the fortified entry points (hooked build only).
 *
 * A program built with -D_FORTIFY_SOURCE (Debian and Fedora build their
 * packages so, and this project its own code) does not call read(2) where
 * the compiler knows the buffer's size but not the length: glibc's
 * headers make that __read_chk(fd, buf, n, buflen), which checks n and
 * calls libc's internal read, not the interposable `read`.  Likewise
 * recv -> __recv_chk, recvfrom -> __recvfrom_chk, poll -> __poll_chk,
 * ppoll -> __ppoll_chk.  A hook that defines only the plain names misses
 * these calls: they block the worker.
 *
 * Each case: a task on a 1-worker pool (no monitor) makes the call on a
 * blocking socket with nothing to read.  A plain "judge" thread then
 * waits for one of two things: the task parked (the pool's count: the
 * hook has it), or the worker thread blocked in the kernel in the very
 * system call (read from /proc/self/task/TID/syscall, seen twice: the
 * hook was bypassed).  Either way it then writes a byte, which ends the
 * call, and the case asserts the first.  The calls are declared here
 * (hk.h turns fortification off, so the headers do not) and called
 * directly, whatever this build's flags.
 */
#include "hk.h"

#include <signal.h>

extern ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
extern ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen,
                          int flags);
extern ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen,
                              int flags, struct sockaddr *addr,
                              socklen_t *addr_len);
extern int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout,
                      size_t fdslen);
extern int __ppoll_chk(struct pollfd *fds, nfds_t nfds,
                       const struct timespec *timeout, const sigset_t *ss,
                       size_t fdslen);

enum verdict { V_NONE, V_PARKED, V_BLOCKED };

struct fort_run {
    weft_pool *pool;
    int sv[2];
    int which;
    atomic_long tid;      /* the worker thread, once the task is in */
    atomic_int verdict;
    long ret;
};

enum { F_READ, F_RECV, F_RECVFROM, F_POLL, F_PPOLL };

static void *victim(void *arg)
{
    struct fort_run *r = arg;
    char b[16];
    struct pollfd pf = {.fd = r->sv[0], .events = POLLIN};
    atomic_store(&r->tid, hk_tid());
    switch (r->which) {
    case F_READ:
        r->ret = __read_chk(r->sv[0], b, 16, sizeof b);
        break;
    case F_RECV:
        r->ret = __recv_chk(r->sv[0], b, 16, sizeof b, 0);
        break;
    case F_RECVFROM:
        r->ret = __recvfrom_chk(r->sv[0], b, 16, sizeof b, 0, NULL, NULL);
        break;
    case F_POLL:
        r->ret = __poll_chk(&pf, 1, -1, sizeof pf);
        break;
    case F_PPOLL:
        r->ret = __ppoll_chk(&pf, 1, NULL, NULL, sizeof pf);
        break;
    }
    return NULL;
}

/* The system call thread tid is blocked in now, or -1 (running, or
 * unreadable). */
static long blocked_in(long tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%ld/syscall", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long nr = -1;
    if (fscanf(f, "%ld", &nr) != 1)
        nr = -1;
    fclose(f);
    return nr;
}

static bool is_the_call(long nr)
{
    return nr == SYS_read || nr == SYS_recvfrom || nr == SYS_ppoll
#ifdef SYS_poll
           || nr == SYS_poll
#endif
        ;
}

static void *judge(void *arg)
{
    struct fort_run *r = arg;
    long tid;
    while ((tid = atomic_load(&r->tid)) == 0)
        sched_yield();
    int seen = 0;
    for (;;) {
        if (hk_parked(r->pool) >= 1) {
            atomic_store(&r->verdict, V_PARKED);
            break;
        }
        seen = is_the_call(blocked_in(tid)) ? seen + 1 : 0;
        if (seen == 2) {
            atomic_store(&r->verdict, V_BLOCKED);
            break;
        }
        sched_yield();
    }
    CHECK_EQ(write(r->sv[1], "x", 1), 1);
    return NULL;
}

static void run(int which, const char *name)
{
    assert_true(hk_hook_loaded());
    static struct fort_run r;
    memset(&r, 0, sizeof r);
    r.which = which;
    hk_pair(r.sv);
    r.pool = hk_pool(1, WEFT_POOL_NO_MONITOR);
    pthread_t j = wt_thread(judge, &r);
    wt_run(r.pool, victim, &r);
    wt_join(j);
    wt_destroy(r.pool);
    close(r.sv[0]);
    close(r.sv[1]);
    if (atomic_load(&r.verdict) != V_PARKED)
        fprintf(stderr, "%s: the worker blocked in the kernel: the hook "
                        "did not take the call\n", name);
    assert_int_equal(atomic_load(&r.verdict), V_PARKED);
    assert_int_equal(r.ret, 1);
    WT_CLEAN();
}

static void test_read_chk(void **state) { (void)state; run(F_READ, "__read_chk"); }
static void test_recv_chk(void **state) { (void)state; run(F_RECV, "__recv_chk"); }
static void test_recvfrom_chk(void **state)
{
    (void)state;
    run(F_RECVFROM, "__recvfrom_chk");
}
static void test_poll_chk(void **state) { (void)state; run(F_POLL, "__poll_chk"); }
static void test_ppoll_chk(void **state)
{
    (void)state;
    run(F_PPOLL, "__ppoll_chk");
}

int main(void)
{
    wt_main_init();
    /* The judge needs to see a blocked thread's system call. */
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%ld/syscall", hk_tid());
    if (access(path, R_OK) != 0) {
        printf("no %s: skipped\n", path);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        WT_TEST1(test_read_chk),     WT_TEST1(test_recv_chk),
        WT_TEST1(test_recvfrom_chk), WT_TEST1(test_poll_chk),
        WT_TEST1(test_ppoll_chk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
