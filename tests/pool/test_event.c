/*
 * test_event.c — weft/event.h: a fire-once event shared by plain threads,
 * tasks on pools, tasks driven by sync_wait and standalone coroutines.
 *
 * Task bodies report through CHECK (see wt.h), never through cmocka asserts.
 */
#include "wt.h"
#include "../live_limit.h"

static void *ret_arg(void *arg) { return arg; }

/* ------------------------------------------------------------------ */
/* Basics                                                               */

static void basic_semantics(void)
{
    weft_event ev;
    weft_event_init(&ev);
    CHECK(!weft_event_is_set(&ev));
    CHECK_EQ(weft_event_wait_for(&ev, 0), -ETIMEDOUT);
    CHECK(!weft_event_is_set(&ev));
    weft_event_set(&ev);
    CHECK(weft_event_is_set(&ev));
    weft_event_set(&ev); /* harmless */
    CHECK(weft_event_is_set(&ev));
    uint64_t t0 = wt_now_ns();
    CHECK_EQ(weft_event_wait(&ev), 0);
    CHECK_EQ(weft_event_wait(&ev), 0);
    CHECK_EQ(weft_event_wait_for(&ev, 0), 0);
    CHECK_EQ(weft_event_wait_for(&ev, MS(10000)), 0);
    CHECK_EQ(weft_event_wait_for(&ev, UINT64_MAX), 0);
    CHECK(wt_now_ns() - t0 < MS(1000));
    CHECK(weft_event_is_set(&ev));
    /* init again: unset */
    weft_event_init(&ev);
    CHECK(!weft_event_is_set(&ev));
    CHECK_EQ(weft_event_wait_for(&ev, 1000), -ETIMEDOUT);
}

static void *basic_in_task(void *arg)
{
    basic_semantics();
    return arg;
}

static void test_basic(void **state)
{
    unsigned n = WT_NTHREADS(state);
    basic_semantics();              /* plain thread */
    wt_run_lazy(basic_in_task, NULL); /* task on no pool */
    weft_pool *p = wt_pool(n);
    assert_int_equal(I(wt_run(p, basic_in_task, P(3))), 3); /* pool task */
    wt_destroy(p);
    WT_CLEAN();
}

static void *null_in_task(void *arg)
{
    CHECK_EQ(weft_event_wait(NULL), -EINVAL);
    CHECK_EQ(weft_event_wait_for(NULL, 0), -EINVAL);
    CHECK_EQ(weft_event_wait_for(NULL, MS(10)), -EINVAL);
    CHECK(!weft_event_is_set(NULL));
    return arg;
}

static void test_null(void **state)
{
    unsigned n = WT_NTHREADS(state);
    assert_int_equal(weft_event_wait(NULL), -EINVAL);
    assert_int_equal(weft_event_wait_for(NULL, 0), -EINVAL);
    assert_int_equal(weft_event_wait_for(NULL, MS(10)), -EINVAL);
    assert_false(weft_event_is_set(NULL));
    weft_pool *p = wt_pool(n);
    wt_run(p, null_in_task, NULL);
    wt_destroy(p);
    WT_CLEAN();
}

/* weft/weft.h, "Errors": a bad argument is an error return, never a crash — the
 * void functions ignore NULL. */
static void test_null_void_no_crash(void **state)
{
    (void)state;
    weft_event_init(NULL);
    weft_event_set(NULL);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Thread <-> task                                                      */

struct pair {
    weft_event ev;
    unsigned delay_ms;
    atomic_int waiting;
};

static void *set_after_delay(void *arg)
{
    struct pair *pr = arg;
    /* wait until the waiter is (about to be) blocked, then some more */
    while (!atomic_load(&pr->waiting))
        sched_yield();
    wt_sleep_ms(pr->delay_ms);
    weft_event_set(&pr->ev);
    return NULL;
}

static void *wait_event(void *arg)
{
    struct pair *pr = arg;
    atomic_store(&pr->waiting, 1);
    return P(weft_event_wait(&pr->ev));
}

/* A plain thread waits; a task sets. */
static void test_thread_waits_for_task(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    for (int i = 0; i < 50; i++) {
        struct pair pr;
        weft_event_init(&pr.ev);
        pr.delay_ms = (unsigned)(i % 3);
        atomic_store(&pr.waiting, 1);
        weft_task *t = NULL;
        assert_int_equal(weft_spawn(&t, p, set_after_delay, &pr, NULL), 0);
        assert_int_equal(weft_event_wait(&pr.ev), 0);
        assert_true(weft_event_is_set(&pr.ev));
        assert_int_equal(weft_sync_wait(t, NULL), 0);
    }
    wt_destroy(p);
    WT_CLEAN();
}

/* A task (on a pool, and one driven by sync_wait) waits; a thread sets. */
static void test_task_waits_for_thread(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    for (int i = 0; i < 50; i++) {
        struct pair pr;
        weft_event_init(&pr.ev);
        pr.delay_ms = (unsigned)(i % 3);
        atomic_store(&pr.waiting, 0);
        weft_task *t = NULL;
        assert_int_equal(weft_spawn(&t, p, wait_event, &pr, NULL), 0);
        pthread_t th = wt_thread(set_after_delay, &pr);
        void *r = P(-1);
        assert_int_equal(weft_sync_wait(t, &r), 0);
        assert_int_equal(I(r), 0);
        wt_join(th);
    }
    for (int i = 0; i < 20; i++) {
        struct pair pr;
        weft_event_init(&pr.ev);
        pr.delay_ms = (unsigned)(i % 3);
        atomic_store(&pr.waiting, 0);
        pthread_t th = wt_thread(set_after_delay, &pr);
        assert_int_equal(I(wt_run_lazy(wait_event, &pr)), 0);
        wt_join(th);
    }
    wt_destroy(p);
    WT_CLEAN();
}

/* A standalone coroutine waiting on an event blocks its thread. */
static void test_coro_waits_for_thread(void **state)
{
    (void)state;
    for (int i = 0; i < 10; i++) {
        struct pair pr;
        weft_event_init(&pr.ev);
        pr.delay_ms = 2;
        atomic_store(&pr.waiting, 0);
        pthread_t th = wt_thread(set_after_delay, &pr);
        weft_coro *co = NULL;
        assert_int_equal(weft_coro_create(&co, wait_event, NULL), 0);
        void *out = P(-1);
        assert_int_equal(weft_coro_resume(co, &pr, &out), 0);
        assert_int_equal(I(out), 0);
        assert_int_equal(weft_coro_status(co), WEFT_CORO_DEAD);
        assert_int_equal(weft_coro_destroy(co), 0);
        wt_join(th);
    }
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Task <-> task                                                        */

/* The waiter parks, its worker runs the setter: works on one thread. */
static void *set_now(void *arg)
{
    struct pair *pr = arg;
    weft_event_set(&pr->ev);
    return NULL;
}

static void *wait_then_spawn_setter(void *arg)
{
    struct pair *pr = arg;
    weft_task *t = NULL;
    /* the waiter is queued first, the setter second */
    CHECK_EQ(weft_spawn(&t, weft_pool_current(), wait_event, pr, NULL), 0);
    CHECK_EQ(weft_yield(), 0);
    weft_task *s = NULL;
    CHECK_EQ(weft_spawn(&s, weft_pool_current(), set_now, pr, NULL), 0);
    void *r = P(-1);
    CHECK_EQ(weft_await(t, &r), 0);
    CHECK_EQ(I(r), 0);
    CHECK_EQ(weft_await(s, NULL), 0);
    return NULL;
}

static void test_task_waits_for_task_same_pool(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    for (int i = 0; i < 100; i++) {
        struct pair pr;
        weft_event_init(&pr.ev);
        atomic_store(&pr.waiting, 0);
        wt_run(p, wait_then_spawn_setter, &pr);
    }
    wt_destroy(p);
    WT_CLEAN();
}

/* Ping-pong between two tasks through fresh events. */
enum { PP = WT_HEAVY(2000) };

struct pp {
    weft_event ping[PP], pong[PP];
};

static void *pinger(void *arg)
{
    struct pp *pp = arg;
    for (int i = 0; i < PP; i++) {
        weft_event_set(&pp->ping[i]);
        CHECK_EQ(weft_event_wait(&pp->pong[i]), 0);
    }
    return NULL;
}

static void *ponger(void *arg)
{
    struct pp *pp = arg;
    for (int i = 0; i < PP; i++) {
        CHECK_EQ(weft_event_wait(&pp->ping[i]), 0);
        weft_event_set(&pp->pong[i]);
    }
    return NULL;
}

static void test_task_ping_pong(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    struct pp *pp = malloc(sizeof *pp);
    assert_non_null(pp);
    for (int i = 0; i < PP; i++) {
        weft_event_init(&pp->ping[i]);
        weft_event_init(&pp->pong[i]);
    }
    weft_task *a = NULL, *b = NULL;
    assert_int_equal(weft_spawn(&b, p, ponger, pp, NULL), 0);
    assert_int_equal(weft_spawn(&a, p, pinger, pp, NULL), 0);
    assert_int_equal(weft_sync_wait(a, NULL), 0);
    assert_int_equal(weft_sync_wait(b, NULL), 0);
    free(pp);
    wt_destroy(p);
    WT_CLEAN();
}

/* Two tasks pinned to different pools (so on different workers). */
static void test_task_ping_pong_two_pools(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n), *q = wt_pool(n);
    struct pp *pp = malloc(sizeof *pp);
    assert_non_null(pp);
    for (int i = 0; i < PP; i++) {
        weft_event_init(&pp->ping[i]);
        weft_event_init(&pp->pong[i]);
    }
    weft_task *a = NULL, *b = NULL;
    assert_int_equal(weft_spawn(&b, q, ponger, pp, NULL), 0);
    assert_int_equal(weft_spawn(&a, p, pinger, pp, NULL), 0);
    assert_int_equal(weft_sync_wait(a, NULL), 0);
    assert_int_equal(weft_sync_wait(b, NULL), 0);
    free(pp);
    wt_destroy(p);
    wt_destroy(q);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* wait_for                                                             */

static void *timeout_check(void *arg)
{
    uint64_t timeout = (uint64_t)I(arg);
    weft_event ev;
    weft_event_init(&ev);
    uint64_t t0 = wt_now_ns();
    int rc = weft_event_wait_for(&ev, timeout);
    uint64_t dt = wt_now_ns() - t0;
    CHECK_EQ(rc, -ETIMEDOUT);
    if (dt < timeout)
        fprintf(stderr, "wait_for(%" PRIu64 " ns) returned after %" PRIu64
                " ns\n", timeout, dt);
    CHECK(dt >= timeout);
    CHECK(dt < timeout + MS(5000));
    CHECK(!weft_event_is_set(&ev));
    return P(rc);
}

static void test_wait_for_timeout(void **state)
{
    unsigned n = WT_NTHREADS(state);
    const uint64_t tmo[] = { 1000, MS(1), MS(20), MS(50) };
    weft_pool *p = wt_pool(n);
    for (unsigned i = 0; i < sizeof tmo / sizeof tmo[0]; i++) {
        timeout_check(P(tmo[i]));                    /* plain thread */
        wt_run_lazy(timeout_check, P(tmo[i]));       /* task on no pool */
        wt_run(p, timeout_check, P(tmo[i]));         /* pool task */
    }
    /* several timed waits at once on the pool */
    weft_task *t[16];
    for (int i = 0; i < 16; i++)
        assert_int_equal(weft_spawn(&t[i], p, timeout_check, P(MS(10 + i)), NULL), 0);
    for (int i = 0; i < 16; i++)
        assert_int_equal(weft_sync_wait(t[i], NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* wait_for satisfied before the timeout returns 0, well before it. */
static void *timed_wait_event(void *arg)
{
    struct pair *pr = arg;
    atomic_store(&pr->waiting, 1);
    uint64_t t0 = wt_now_ns();
    int rc = weft_event_wait_for(&pr->ev, MS(10000));
    CHECK(wt_now_ns() - t0 < MS(5000));
    CHECK(weft_event_is_set(&pr->ev));
    return P(rc);
}

static void *timed_wait_event_forever(void *arg)
{
    struct pair *pr = arg;
    atomic_store(&pr->waiting, 1);
    int rc = weft_event_wait_for(&pr->ev, UINT64_MAX);
    CHECK(weft_event_is_set(&pr->ev));
    return P(rc);
}

static void test_wait_for_satisfied(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    weft_fn waiters[2] = { timed_wait_event, timed_wait_event_forever };
    for (int w = 0; w < 2; w++) {
        for (int i = 0; i < 10; i++) {
            struct pair pr;
            weft_event_init(&pr.ev);
            pr.delay_ms = 5;
            atomic_store(&pr.waiting, 0);
            /* pool task waits, thread sets */
            weft_task *t = NULL;
            assert_int_equal(weft_spawn(&t, p, waiters[w], &pr, NULL), 0);
            pthread_t th = wt_thread(set_after_delay, &pr);
            void *r = P(-1);
            assert_int_equal(weft_sync_wait(t, &r), 0);
            assert_int_equal(I(r), 0);
            wt_join(th);

            /* thread waits, pool task sets */
            weft_event_init(&pr.ev);
            atomic_store(&pr.waiting, 1);
            assert_int_equal(weft_spawn(&t, p, set_after_delay, &pr, NULL), 0);
            assert_int_equal(I(waiters[w](&pr)), 0);
            assert_int_equal(weft_sync_wait(t, NULL), 0);

            /* lazy task on this thread waits, thread sets */
            weft_event_init(&pr.ev);
            atomic_store(&pr.waiting, 0);
            th = wt_thread(set_after_delay, &pr);
            assert_int_equal(I(wt_run_lazy(waiters[w], &pr)), 0);
            wt_join(th);
        }
    }
    wt_destroy(p);
    WT_CLEAN();
}

/* A task in wait_for is parked: on a 1-thread pool, another task runs and
 * sets the event long before the timeout. */
static void *timed_waiter_then_setter(void *arg)
{
    (void)arg;
    struct pair pr;
    weft_event_init(&pr.ev);
    atomic_store(&pr.waiting, 0);
    weft_pool *p = weft_pool_current();
    weft_task *w = NULL, *s = NULL;
    CHECK_EQ(weft_spawn(&w, p, timed_wait_event, &pr, NULL), 0);
    CHECK_EQ(weft_yield(), 0);
    CHECK_EQ(weft_spawn(&s, p, set_now, &pr, NULL), 0);
    void *r = P(-1);
    CHECK_EQ(weft_await(w, &r), 0);
    CHECK_EQ(I(r), 0);
    CHECK_EQ(weft_await(s, NULL), 0);
    return NULL;
}

static void test_wait_for_parks_task(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    for (int i = 0; i < 20; i++)
        wt_run(p, timed_waiter_then_setter, NULL);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Broadcast                                                            */

enum { NWAIT_TASKS = 100, NWAIT_THREADS = 4 };

struct bc {
    weft_event ev;
    atomic_int arrived;
    atomic_int woke;
};

static void *bc_task(void *arg)
{
    struct bc *b = arg;
    int k = atomic_fetch_add(&b->arrived, 1);
    int rc = (k % 2) ? weft_event_wait(&b->ev)
                                            : weft_event_wait_for(&b->ev, MS(60000));
    CHECK_EQ(rc, 0);
    CHECK(weft_event_is_set(&b->ev));
    atomic_fetch_add(&b->woke, 1);
    return NULL;
}

static void test_broadcast(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    for (int round = 0; round < 10; round++) {
        struct bc b;
        weft_event_init(&b.ev);
        atomic_store(&b.arrived, 0);
        atomic_store(&b.woke, 0);
        weft_task *t[NWAIT_TASKS];
        for (int i = 0; i < NWAIT_TASKS; i++)
            assert_int_equal(weft_spawn(&t[i], p, bc_task, &b, NULL), 0);
        pthread_t th[NWAIT_THREADS];
        for (int i = 0; i < NWAIT_THREADS; i++)
            th[i] = wt_thread(bc_task, &b);
        while (atomic_load(&b.arrived) < NWAIT_TASKS + NWAIT_THREADS)
            sched_yield();
        wt_sleep_ms(5);
        assert_int_equal(atomic_load(&b.woke), 0);
        weft_event_set(&b.ev);
        for (int i = 0; i < NWAIT_TASKS; i++)
            assert_int_equal(weft_sync_wait(t[i], NULL), 0);
        for (int i = 0; i < NWAIT_THREADS; i++)
            wt_join(th[i]);
        assert_int_equal(atomic_load(&b.woke), NWAIT_TASKS + NWAIT_THREADS);
    }
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* An event on the waiter's stack                                       */

/* The waiter publishes the address of an event on its own stack, waits,
 * returns from the frame and at once scribbles over that stack memory and
 * checks it: a setter that touches the event after the wait returned
 * corrupts the pattern (and ASan/TSan see the late access). */
enum { STACK_ROUNDS = WT_HEAVY(10000) };

struct mailbox {
    _Atomic(weft_event *) slot;
    atomic_int stop;
    atomic_long sets;
};

static __attribute__((noinline)) int wait_on_stack_event(struct mailbox *mb)
{
    weft_event ev;
    weft_event_init(&ev);
    atomic_store(&mb->slot, &ev);
    int rc = weft_event_wait(&ev);
    if (!weft_event_is_set(&ev))
        rc = -1000;
    return rc;
}

static __attribute__((noinline)) int scribble(void)
{
    volatile unsigned char buf[512];
    for (unsigned i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(0xA5 ^ i);
    wt_spin(200);
    int bad = 0;
    for (unsigned i = 0; i < sizeof buf; i++)
        bad += buf[i] != (unsigned char)(0xA5 ^ i);
    return bad;
}

static long stack_waiter_rounds(struct mailbox *mb, int rounds)
{
    long bad = 0;
    for (int i = 0; i < rounds; i++) {
        int rc = wait_on_stack_event(mb);
        if (rc != 0) {
            CHECK_EQ(rc, 0);
            bad++;
        }
        bad += scribble();
    }
    return bad;
}

static void *stack_waiter_task(void *arg)
{
    return P(stack_waiter_rounds(arg, STACK_ROUNDS));
}

/* Setter: take the address, set it; `yielding` makes it polite on a
 * pool (a task setter must let the waiter task run on a 1-thread pool). */
static void setter_loop(struct mailbox *mb, int yielding)
{
    unsigned idle = 0;
    while (!atomic_load(&mb->stop)) {
        weft_event *ev = atomic_exchange(&mb->slot, NULL);
        if (ev) {
            weft_event_set(ev);
            atomic_fetch_add(&mb->sets, 1);
            idle = 0;
        } else {
            if (yielding)
                CHECK_EQ(weft_yield(), 0);
            /* give the CPU away now and then: CI machines are small */
            if (++idle % 64 == 0)
                sched_yield();
        }
    }
}

static void *setter_thread(void *arg)
{
    setter_loop(arg, 0);
    return NULL;
}

static void *setter_task(void *arg)
{
    setter_loop(arg, 1);
    return NULL;
}

/* Timing note on stderr for a slow variant (10,000 rounds should take
 * well under a second). */
static void slow_note(const char *what, unsigned n, uint64_t *t0)
{
    uint64_t now = wt_now_ns();
    if (now - *t0 > MS(1000))
        fprintf(stderr, "note: %s, %u workers: %d rounds took %.3f s\n",
                what, n, STACK_ROUNDS, (double)(now - *t0) / 1e9);
    *t0 = now;
}

static void test_event_on_waiter_stack(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    struct mailbox mb;

    /* waiter: pool task; setter: plain thread */
    uint64_t t0 = wt_now_ns();
    atomic_store(&mb.slot, NULL);
    atomic_store(&mb.stop, 0);
    atomic_store(&mb.sets, 0);
    pthread_t th = wt_thread(setter_thread, &mb);
    assert_int_equal(I(wt_run(p, stack_waiter_task, &mb)), 0);
    atomic_store(&mb.stop, 1);
    wt_join(th);
    assert_int_equal(atomic_load(&mb.sets), STACK_ROUNDS);
    slow_note("waiter task, setter thread", n, &t0);

    /* waiter: plain thread (main); setter: pool task */
    atomic_store(&mb.stop, 0);
    atomic_store(&mb.sets, 0);
    weft_task *s = NULL;
    assert_int_equal(weft_spawn(&s, p, setter_task, &mb, NULL), 0);
    assert_int_equal(stack_waiter_rounds(&mb, STACK_ROUNDS), 0);
    atomic_store(&mb.stop, 1);
    assert_int_equal(weft_sync_wait(s, NULL), 0);
    assert_int_equal(atomic_load(&mb.sets), STACK_ROUNDS);
    slow_note("waiter thread, setter task", n, &t0);

    /* waiter: pool task; setter: pool task */
    atomic_store(&mb.stop, 0);
    atomic_store(&mb.sets, 0);
    assert_int_equal(weft_spawn(&s, p, setter_task, &mb, NULL), 0);
    assert_int_equal(I(wt_run(p, stack_waiter_task, &mb)), 0);
    atomic_store(&mb.stop, 1);
    assert_int_equal(weft_sync_wait(s, NULL), 0);
    assert_int_equal(atomic_load(&mb.sets), STACK_ROUNDS);
    slow_note("waiter task, setter task", n, &t0);

    wt_destroy(p);
    WT_CLEAN();
}

/* The same with wait_for (a generous timeout), waiter on a pool task. */
static __attribute__((noinline)) int wait_for_on_stack_event(struct mailbox *mb)
{
    weft_event ev;
    weft_event_init(&ev);
    atomic_store(&mb->slot, &ev);
    int rc = weft_event_wait_for(&ev, MS(60000));
    if (!weft_event_is_set(&ev))
        rc = -1000;
    return rc;
}

static void *stack_timed_waiter_task(void *arg)
{
    long bad = 0;
    for (int i = 0; i < STACK_ROUNDS / 4; i++) {
        int rc = wait_for_on_stack_event(arg);
        CHECK_EQ(rc, 0);
        bad += rc != 0;
        bad += scribble();
    }
    return P(bad);
}

static void test_timed_event_on_waiter_stack(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    struct mailbox mb;
    atomic_store(&mb.slot, NULL);
    atomic_store(&mb.stop, 0);
    atomic_store(&mb.sets, 0);
    pthread_t th = wt_thread(setter_thread, &mb);
    assert_int_equal(I(wt_run(p, stack_timed_waiter_task, &mb)), 0);
    atomic_store(&mb.stop, 1);
    wt_join(th);
    assert_int_equal(atomic_load(&mb.sets), STACK_ROUNDS / 4);
    assert_int_equal(I(wt_run(p, ret_arg, P(1))), 1);
    wt_destroy(p);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST(test_basic),
        WT_TEST(test_null),
        WT_TEST1(test_null_void_no_crash),
        WT_TEST(test_thread_waits_for_task),
        WT_TEST(test_task_waits_for_thread),
        WT_TEST1(test_coro_waits_for_thread),
        WT_TEST(test_task_waits_for_task_same_pool),
        WT_TEST(test_task_ping_pong),
        WT_TEST(test_task_ping_pong_two_pools),
        WT_TEST(test_wait_for_timeout),
        WT_TEST(test_wait_for_satisfied),
        WT_TEST(test_wait_for_parks_task),
        WT_TEST(test_broadcast),
        WT_TEST(test_event_on_waiter_stack),
        WT_TEST(test_timed_event_on_waiter_stack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
