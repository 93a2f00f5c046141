/*
 * test_poll.c — hooked poll, ppoll and select over several fds, as
 * libcurl and friends use them (hooked build only).
 *
 * Two unix stream pairs, a and b, on a 1-worker pool without monitor.
 * The poller task waits on both; only b becomes readable, written by a
 * second task of the same worker, which does so only once the poller is
 * parked (the pool's count) and it has itself run 3 more rounds: the
 * worker was free while the poller waited.  The call must say 1, with
 * POLLIN for b only.  Then a timeout of 50 ms with nothing ready: 0,
 * after at least 50 ms, with a ticker running meanwhile.  And the cases
 * that must not wait (an fd ready already, a closed fd, a negative one)
 * answer at once, without a switch.
 */
#include "hk.h"

#include <sys/select.h>

struct poll_run {
    weft_pool *pool;
    int a[2], b[2];
    atomic_bool inside;   /* the poller is in (or about to make) its call */
    atomic_int want;      /* bytes the poller has asked for on b so far   */
    atomic_ulong ticks;   /* the other task's rounds                      */
    atomic_bool stop;
    int which;            /* the call under test: POLL, PPOLL, SELECT     */
    int mode;             /* WAIT_B or TIMEOUT                            */
};

enum { POLL, PPOLL, SELECT };
enum { WAIT_B, TIMEOUT };

/* The other task: rounds of yield; in WAIT_B mode, each time the poller
 * wants a byte on b, it writes one once the poller is parked and it has
 * run 3 more rounds. */
static void *other(void *arg)
{
    struct poll_run *r = arg;
    int written = 0;
    unsigned long seen_parked = 0;
    while (!atomic_load(&r->stop)) {
        unsigned long t = atomic_fetch_add(&r->ticks, 1) + 1;
        if (r->mode == WAIT_B && written < atomic_load(&r->want) &&
            atomic_load(&r->inside)) {
            if (!seen_parked && hk_parked(r->pool) >= 1)
                seen_parked = t;
            if (seen_parked && t >= seen_parked + 3) {
                CHECK_EQ(write(r->b[1], "b", 1), 1);
                written++;
                seen_parked = 0;
            }
        }
        CHECK_EQ(weft_yield(), 0);
    }
    return NULL;
}

/* The call on {a: POLLIN or POLLOUT (a_out), b: POLLIN}, in that order
 * or (b_first) the other, timeout_ms (-1: none).  Returns its value;
 * *a_ev and *b_ev the events it gave. */
static int call_two(int which, int a, int b, bool a_out, bool b_first,
                    int timeout_ms, int *a_ev, int *b_ev, int *err)
{
    int r;
    errno = 0;
    if (which == SELECT) {
        fd_set rd, wr;
        FD_ZERO(&rd);
        FD_ZERO(&wr);
        FD_SET(a, a_out ? &wr : &rd);
        FD_SET(b, &rd);
        struct timeval tv = {.tv_sec = timeout_ms / 1000,
                             .tv_usec = (timeout_ms % 1000) * 1000};
        r = select((a > b ? a : b) + 1, &rd, &wr, NULL,
                   timeout_ms < 0 ? NULL : &tv);
        *err = errno;
        *a_ev = FD_ISSET(a, a_out ? &wr : &rd) ? (a_out ? POLLOUT : POLLIN)
                                                : 0;
        *b_ev = FD_ISSET(b, &rd) ? POLLIN : 0;
        /* Linux's select leaves the time not slept in *tv: none, after a
         * timeout. */
        if (timeout_ms >= 0 && r == 0)
            CHECK(tv.tv_sec == 0 && tv.tv_usec == 0);
        return r;
    }
    int ia = b_first ? 1 : 0, ib = 1 - ia;
    struct pollfd pf[2];
    pf[ia] = (struct pollfd){.fd = a, .events = a_out ? POLLOUT : POLLIN};
    pf[ib] = (struct pollfd){.fd = b, .events = POLLIN};
    if (which == POLL) {
        r = poll(pf, 2, timeout_ms);
    } else {
        struct timespec ts = {.tv_sec = timeout_ms / 1000,
                              .tv_nsec = (timeout_ms % 1000) * 1000000L};
        r = ppoll(pf, 2, timeout_ms < 0 ? NULL : &ts, NULL);
    }
    *err = errno;
    *a_ev = pf[ia].revents;
    *b_ev = pf[ib].revents;
    return r;
}

static void *poller(void *arg)
{
    struct poll_run *r = arg;
    int a_ev = -1, b_ev = -1, err = 0;
    if (r->mode == WAIT_B) {
        /* a readable-wait, then a write-wait on a full a; b last in the
         * array, then first. */
        for (int k = 0; k < 4; k++) {
            bool a_out = k >= 2, b_first = k & 1;
            if (k == 2)
                hk_fill(r->a[0]);
            atomic_store(&r->inside, true);
            atomic_fetch_add(&r->want, 1);
            int n = call_two(r->which, r->a[0], r->b[0], a_out, b_first, -1,
                             &a_ev, &b_ev, &err);
            atomic_store(&r->inside, false);
            CHECK_EQ(n, 1);
            CHECK_EQ(a_ev, 0);
            CHECK_EQ(b_ev, POLLIN);
            char c = 0;
            CHECK_EQ(recv(r->b[0], &c, 1, 0), 1);
            CHECK_EQ(c, 'b');
        }
    } else {
        unsigned long t0 = atomic_load(&r->ticks);
        uint64_t start = wt_now_ns();
        int n = call_two(r->which, r->a[0], r->b[0], false, false, 50, &a_ev,
                         &b_ev, &err);
        uint64_t took = wt_now_ns() - start;
        CHECK_EQ(n, 0);
        CHECK_EQ(a_ev, 0);
        CHECK_EQ(b_ev, 0);
        CHECK(took >= MS(50));
        CHECK(atomic_load(&r->ticks) >= t0 + 3);
    }
    atomic_store(&r->stop, true);
    return NULL;
}

static void run(int which, int mode)
{
    assert_true(hk_hook_loaded());
    static struct poll_run r;
    memset(&r, 0, sizeof r);
    hk_pair(r.a);
    hk_pair(r.b);
    r.which = which;
    r.mode = mode;
    r.pool = hk_pool(1, WEFT_POOL_NO_MONITOR);
    weft_task *o, *pl;
    assert_int_equal(weft_spawn(&o, r.pool, other, &r, NULL), 0);
    assert_int_equal(weft_spawn(&pl, r.pool, poller, &r, NULL), 0);
    assert_int_equal(weft_sync_wait(pl, NULL), 0);
    assert_int_equal(weft_sync_wait(o, NULL), 0);
    wt_destroy(r.pool);
    for (int i = 0; i < 2; i++) {
        close(r.a[i]);
        close(r.b[i]);
    }
    WT_CLEAN();
}

static void test_poll_two(void **state) { (void)state; run(POLL, WAIT_B); }
static void test_ppoll_two(void **state) { (void)state; run(PPOLL, WAIT_B); }
static void test_select_two(void **state) { (void)state; run(SELECT, WAIT_B); }
static void test_poll_timeout(void **state) { (void)state; run(POLL, TIMEOUT); }
static void test_ppoll_timeout(void **state)
{
    (void)state;
    run(PPOLL, TIMEOUT);
}
static void test_select_timeout(void **state)
{
    (void)state;
    run(SELECT, TIMEOUT);
}

/* ------------------------------------------------------------------ */
/* Calls that need not wait                                             */

struct at_once {
    atomic_ulong ticks;
    atomic_bool stop;
};

static void *at_once_ticker(void *arg)
{
    struct at_once *t = arg;
    while (!atomic_load(&t->stop)) {
        atomic_fetch_add(&t->ticks, 1);
        CHECK_EQ(weft_yield(), 0);
    }
    return NULL;
}

static void *at_once_body(void *arg)
{
    struct at_once *t = arg;
    int sv[2];
    if (hk_pair_task(sv))
        return NULL;
    int closed = dup(sv[0]);
    CHECK(closed >= 0);
    CHECK_EQ(close(closed), 0);
    CHECK_EQ(write(sv[1], "x", 1), 1);
    unsigned long t0 = atomic_load(&t->ticks);

    /* sv[0] readable, a negative fd ignored, a closed fd POLLNVAL: 2
     * entries with events, and no wait although the timeout is -1. */
    struct pollfd pf[3] = {{.fd = sv[0], .events = POLLIN},
                           {.fd = -1, .events = POLLIN},
                           {.fd = closed, .events = POLLIN}};
    CHECK_EQ(poll(pf, 3, -1), 2);
    CHECK_EQ(pf[0].revents, POLLIN);
    CHECK_EQ(pf[1].revents, 0);
    CHECK_EQ(pf[2].revents, POLLNVAL);
    /* Writable at once. */
    struct pollfd w = {.fd = sv[0], .events = POLLOUT};
    CHECK_EQ(poll(&w, 1, -1), 1);
    CHECK_EQ(w.revents, POLLOUT);
    /* Timeout 0 with nothing: 0. */
    struct pollfd none = {.fd = sv[1], .events = POLLIN};
    CHECK_EQ(poll(&none, 1, 0), 0);
    /* select on a closed fd: EBADF. */
    fd_set rd;
    FD_ZERO(&rd);
    FD_SET(closed, &rd);
    struct timeval tv = {0, 0};
    errno = 0;
    CHECK_EQ(select(closed + 1, &rd, NULL, NULL, &tv), -1);
    CHECK_EQ(errno, EBADF);
    /* None of it switched. */
    CHECK_EQ(atomic_load(&t->ticks), t0);

    /* poll with no fds and a timeout: a sleep, parked. */
    uint64_t start = wt_now_ns();
    CHECK_EQ(poll(NULL, 0, 20), 0);
    CHECK(wt_now_ns() - start >= MS(20));
    CHECK(atomic_load(&t->ticks) >= t0 + 3);

    CHECK_EQ(close(sv[0]), 0);
    CHECK_EQ(close(sv[1]), 0);
    atomic_store(&t->stop, true);
    return NULL;
}

static void test_poll_at_once(void **state)
{
    (void)state;
    static struct at_once t;
    memset(&t, 0, sizeof t);
    weft_pool *p = hk_pool(1, WEFT_POOL_NO_MONITOR);
    weft_task *tk;
    assert_int_equal(weft_spawn(&tk, p, at_once_ticker, &t, NULL), 0);
    wt_run(p, at_once_body, &t);
    assert_int_equal(weft_sync_wait(tk, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* A poll for POLLRDHUP alone on a socket with unread data: nothing it
 * asked for is ready, so it parks until its timeout, with no CPU spent
 * (it was mapped onto "readable", woke at once, found nothing on its
 * look and parked again, for the whole timeout: a spin). */
static void *rdhup_body(void *arg)
{
    (void)arg;
    int sv[2];
    if (hk_pair_task(sv) != 0)
        return NULL;
    CHECK_EQ(write(sv[1], "data", 4), 4);
    struct timespec c0, c1;
    /* The task is pinned while it parks in the hooked poll: the same
     * thread's clock before and after. */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    uint64_t start = wt_now_ns();
    struct pollfd pf = {.fd = sv[0], .events = POLLRDHUP};
    CHECK_EQ(poll(&pf, 1, 200), 0);
    CHECK(wt_now_ns() - start >= MS(200));
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    uint64_t cpu = (uint64_t)(c1.tv_sec - c0.tv_sec) * 1000000000u +
                   (uint64_t)c1.tv_nsec - (uint64_t)c0.tv_nsec;
    if (cpu >= MS(50))
        fprintf(stderr, "rdhup poll: %llu ns of CPU\n", (unsigned long long)cpu);
    CHECK(cpu < MS(50));
    /* The peer's half close is what it waits for. */
    CHECK_EQ(shutdown(sv[1], SHUT_WR), 0);
    CHECK_EQ(poll(&pf, 1, 1000), 1);
    CHECK(pf.revents & POLLRDHUP);
    CHECK_EQ(close(sv[0]), 0);
    CHECK_EQ(close(sv[1]), 0);
    return NULL;
}

static void test_poll_rdhup_alone(void **state)
{
    (void)state;
    weft_pool *p = hk_pool(1, WEFT_POOL_NO_MONITOR);
    wt_run(p, rdhup_body, NULL);
    wt_destroy(p);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST1(test_poll_two),      WT_TEST1(test_ppoll_two),
        WT_TEST1(test_select_two),    WT_TEST1(test_poll_timeout),
        WT_TEST1(test_ppoll_timeout), WT_TEST1(test_select_timeout),
        WT_TEST1(test_poll_at_once),   WT_TEST1(test_poll_rdhup_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
