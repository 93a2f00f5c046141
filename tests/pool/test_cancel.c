/*
 * test_cancel.c — weft_sleep, weft_task_cancel and weft_await_all.
 *
 * Cancellation is attacked where it races: a cancel that lands before the
 * task blocks, while it parks, and against the end of an awaited task (the
 * await's waiter slot is taken back by one CAS or handed to the completer).
 */
#include "wt.h"

#include <weft/timer.h>

#include "sched/task.h"

#define FOREVER ((uint64_t)3600 * 1000000000u)

/* ------------------------------------------------------------ sleep */

static void *sleeper(void *arg)
{
    uint64_t ns = (uint64_t)I(arg);
    uint64_t t0 = wt_now_ns();
    int r = weft_sleep(ns);
    CHECK_EQ(r, 0);
    CHECK(wt_now_ns() - t0 >= ns); /* never early */
    return P(r);
}

static void test_sleep_task(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    wt_run(p, sleeper, P(MS(20)));
    wt_run(p, sleeper, P(0));
    wt_destroy(p);
    WT_CLEAN();
}

/* A lazy task run by sync_wait on this thread, with no pool: its sleep is
 * on the sync_wait driver's timers. */
static void test_sleep_no_pool(void **state)
{
    (void)state;
    wt_run_lazy(sleeper, P(MS(10)));
    WT_CLEAN();
}

static void test_sleep_thread(void **state)
{
    (void)state;
    uint64_t t0 = wt_now_ns();
    assert_int_equal(weft_sleep(MS(5)), 0);
    assert_true(wt_now_ns() - t0 >= MS(5));
    WT_CLEAN();
}

/* Many sleepers at once on few workers: every one wakes, none early, and
 * they wake in deadline order per worker count of one. */
struct many {
    atomic_int woke;
};

static void *short_sleeper(void *arg)
{
    struct many *m = arg;
    uint64_t t0 = wt_now_ns();
    uint64_t ns = (t0 % 7) * 100000u; /* 0 .. 0.6 ms */
    CHECK_EQ(weft_sleep(ns), 0);
    CHECK(wt_now_ns() - t0 >= ns);
    atomic_fetch_add(&m->woke, 1);
    return NULL;
}

static void test_many_sleepers(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    struct many m = {0};
    enum { N = 2000 };
    weft_task **ts = calloc(N, sizeof *ts);
    assert_non_null(ts);
    for (int i = 0; i < N; i++)
        assert_int_equal(weft_spawn(&ts[i], p, short_sleeper, &m, NULL), 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(weft_sync_wait(ts[i], NULL), 0);
    assert_int_equal(atomic_load(&m.woke), N);
    free(ts);
    wt_destroy(p);
    WT_CLEAN();
}

/* A sleeping task parks: on one worker, a task spawned behind it runs to
 * its end while it sleeps. */
struct park_check {
    atomic_int other_done;
    weft_event go;
};

static void *other(void *arg)
{
    struct park_check *pc = arg;
    atomic_store(&pc->other_done, 1);
    return NULL;
}

static void *sleep_then_look(void *arg)
{
    struct park_check *pc = arg;
    weft_task *o = NULL;
    CHECK_EQ(weft_spawn(&o, weft_pool_current(), other, pc, NULL), 0);
    CHECK_EQ(weft_sleep(MS(30)), 0);
    CHECK_EQ(atomic_load(&pc->other_done), 1);
    CHECK_EQ(weft_await(o, NULL), 0);
    return NULL;
}

static void test_sleep_parks(void **state)
{
    (void)state;
    weft_pool *p = wt_pool(1);
    struct park_check pc = {0};
    wt_run(p, sleep_then_look, &pc);
    wt_destroy(p);
    WT_CLEAN();
}

/*
 * A timer armed on a worker that then stays busy: the task that arms it
 * spawns a spinner behind it, which usually runs next on the same worker
 * and never yields until the sleep has ended.  Only another worker can
 * fire that timer (per-worker heaps, pool.c "Timers"); if none did, the
 * spinner would give up after its bound and the round fails.  Rounds where
 * the spinner was stolen to the other worker test the plain path.
 */
struct busy_round {
    atomic_int slept;      /* the sleep returned */
    atomic_int gave_up;    /* the spinner hit its bound first */
    atomic_int same;       /* the spinner ran on the sleeper's thread */
    pthread_t sleeper_thread;
};

static void *spinner(void *arg)
{
    struct busy_round *r = arg;
    atomic_store(&r->same, pthread_equal(wt_self(), r->sleeper_thread) != 0);
    uint64_t t0 = wt_now_ns();
    while (!atomic_load(&r->slept))
        if (wt_now_ns() - t0 > MS(5000)) {
            atomic_store(&r->gave_up, 1);
            break;
        }
    return NULL;
}

static void *sleep_beside_spinner(void *arg)
{
    struct busy_round *r = arg;
    weft_task *s = NULL;
    r->sleeper_thread = wt_self();
    CHECK_EQ(weft_spawn(&s, weft_pool_current(), spinner, r, NULL), 0);
    CHECK_EQ(weft_sleep(MS(2)), 0);
    atomic_store(&r->slept, 1);
    CHECK_EQ(weft_await(s, NULL), 0);
    return NULL;
}

static void test_timer_of_busy_worker(void **state)
{
    (void)state;
    weft_pool *p = wt_pool(2);
    int same = 0;
    for (int i = 0; i < 20; i++) {
        struct busy_round r = {0};
        wt_run(p, sleep_beside_spinner, &r);
        assert_int_equal(atomic_load(&r.gave_up), 0);
        same += atomic_load(&r.same);
    }
    print_message("spinner on the sleeper's worker in %d of 20 rounds\n",
                  same);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------ cancel */

struct blocker {
    weft_event entered; /* set just before the task blocks */
    weft_event never;   /* never set */
    weft_event child_in; /* the awaited task is running */
    int kind;
    int result;
};

enum { K_SLEEP, K_EVENT, K_EVENT_FOR, K_AWAIT, K_AWAIT_LAZY };

static void *wait_never(void *arg)
{
    struct blocker *b = arg;
    weft_event_set(&b->child_in);
    return P(weft_event_wait(&b->never));
}

static void *block(void *arg)
{
    struct blocker *b = arg;
    weft_task *t = NULL;
    switch (b->kind) {
    case K_SLEEP:
        weft_event_set(&b->entered);
        b->result = weft_sleep(FOREVER);
        return NULL;
    case K_EVENT:
        weft_event_set(&b->entered);
        b->result = weft_event_wait(&b->never);
        return NULL;
    case K_EVENT_FOR:
        weft_event_set(&b->entered);
        b->result = weft_event_wait_for(&b->never, FOREVER);
        return NULL;
    case K_AWAIT:
        /* Started before we await it, so it is not run inline here. */
        CHECK_EQ(weft_spawn(&t, weft_pool_current(), wait_never, b, NULL), 0);
        CHECK_EQ(weft_event_wait(&b->child_in), 0);
        break;
    default:
        CHECK_EQ(weft_task_create(&t, wait_never, b, NULL), 0);
        break;
    }
    weft_event_set(&b->entered);
    b->result = weft_await(t, NULL);
    /* Cancelled: t was not consumed; it is the caller's to finish. */
    return b->result == -ECANCELED ? t : NULL;
}

static void cancel_kind(unsigned threads, int kind)
{
    weft_pool *p = wt_pool(threads);
    struct blocker b = {.kind = kind, .result = 1};
    weft_event_init(&b.entered);
    weft_event_init(&b.never);
    weft_event_init(&b.child_in);
    weft_task *t = NULL;
    assert_int_equal(weft_spawn(&t, p, block, &b, NULL), 0);
    assert_int_equal(weft_event_wait(&b.entered), 0);
    assert_int_equal(weft_task_cancel(t), 0);
    void *left = NULL;
    assert_int_equal(weft_sync_wait(t, &left), 0);
    assert_int_equal(b.result, -ECANCELED);
    if (kind == K_AWAIT || kind == K_AWAIT_LAZY) {
        /* The awaited task still waits on `never`: release and finish it. */
        assert_non_null(left);
        weft_event_set(&b.never);
        void *r = P(1);
        assert_int_equal(weft_sync_wait(left, &r), 0);
        assert_int_equal(I(r), 0);
    }
    wt_destroy(p);
    WT_CLEAN();
}

static void test_cancel_sleep(void **state) { cancel_kind(WT_NTHREADS(state), K_SLEEP); }
static void test_cancel_event(void **state) { cancel_kind(WT_NTHREADS(state), K_EVENT); }
static void test_cancel_event_for(void **state) { cancel_kind(WT_NTHREADS(state), K_EVENT_FOR); }
static void test_cancel_await(void **state) { cancel_kind(WT_NTHREADS(state), K_AWAIT); }
static void test_cancel_await_lazy(void **state) { cancel_kind(WT_NTHREADS(state), K_AWAIT_LAZY); }

/* Cancelled before it ever ran: every call that would wait refuses at
 * once, and keeps refusing (the flag stays set); one with nothing to wait
 * for does what it does. */
static void *all_refused(void *arg)
{
    (void)arg;
    weft_event ev;
    weft_event_init(&ev);
    CHECK_EQ(weft_sleep(MS(1)), -ECANCELED);
    CHECK_EQ(weft_sleep(0), 0); /* nothing to wait for: done */
    CHECK_EQ(weft_event_wait(&ev), -ECANCELED);
    CHECK_EQ(weft_event_wait_for(&ev, MS(1)), -ECANCELED);
    weft_event_set(&ev);
    CHECK_EQ(weft_event_wait(&ev), 0); /* set: nothing to block on */
    return P(7);
}

static void *noop(void *arg)
{
    return arg;
}

/* In a task: a child spawned and cancelled before the await runs it
 * inline (on one worker nobody else starts it): its start takes the
 * cancel's request (sched/task.h, WEFT__H_CANCEL). */
static void *cancel_then_await(void *arg)
{
    weft_pool *p = arg;
    for (int i = 0; i < 100; i++) {
        weft_task *c = NULL;
        CHECK_EQ(weft_spawn(&c, p, all_refused, NULL, NULL), 0);
        CHECK_EQ(weft_task_cancel(c), 0);
        void *r = NULL;
        CHECK_EQ(weft_await(c, &r), 0);
        CHECK_EQ(I(r), 7);
    }
    return NULL;
}

static void test_cancel_before_start(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_task *t = NULL;
    /* A lazy task, run by this thread's sync_wait; and a spawned one. */
    assert_int_equal(weft_task_create(&t, all_refused, NULL, NULL), 0);
    assert_int_equal(weft_task_cancel(t), 0);
    assert_int_equal(weft_task_cancel(t), 0); /* twice: same */
    void *r = NULL;
    assert_int_equal(weft_sync_wait(t, &r), 0);
    assert_int_equal(I(r), 7);
    assert_int_equal(weft_task_create(&t, all_refused, NULL, NULL), 0);
    assert_int_equal(weft_task_cancel(t), 0);
    assert_int_equal(weft_spawn(NULL, p, noop, NULL, NULL), 0);
    /* Queued after its cancel (weft_task_start).  Not weft_spawn and then
     * weft_task_cancel: a worker may start the task between the two, and
     * if this thread is held up for its 1 ms sleep, the sleep ends before
     * the cancel comes (ASan's CI step saw it once).  A queued task that a
     * cancel finds not started is cancel_then_await's case below, on a
     * pool whose one worker runs the canceller. */
    weft_task *s = NULL;
    assert_int_equal(weft_task_create(&s, all_refused, NULL, NULL), 0);
    assert_int_equal(weft_task_cancel(s), 0);
    assert_int_equal(weft_task_start(s, p), 0);
    assert_int_equal(weft_sync_wait(s, &r), 0);
    assert_int_equal(I(r), 7);
    assert_int_equal(weft_task_detach(t), 0);
    wt_destroy(p);
    p = wt_pool(1);
    assert_int_equal(weft_spawn(&s, p, cancel_then_await, p, NULL), 0);
    assert_int_equal(weft_sync_wait(s, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/*
 * A body that weft_await runs inline on its awaiter's stack (on one
 * worker, a task spawned and at once awaited is never started elsewhere):
 * cancelling that task ends the wait its body is in, and cancelling the
 * awaiter does not, but is seen at the awaiter's next blocking point.
 */
struct inline_case {
    bool cancel_host;      /* else cancel the inline task */
    weft_event entered;    /* the inline body is about to wait */
    weft_event release;    /* ends that wait (cancel_host case) */
    struct weft__task *host_task; /* the awaiter (the running task) */
    weft_task *host, *inner;
    bool was_inline;
    int inner_rc, host_next_rc;
};

static void *inline_body(void *arg)
{
    struct inline_case *c = arg;
    /* Inline: the running task (not the body) is still the host. */
    c->was_inline = weft__task_current() == c->host_task;
    weft_event_set(&c->entered);
    /* Bounded: a lost cancel fails as -ETIMEDOUT instead of hanging. */
    int rc = weft_event_wait_for(&c->release, MS(10000));
    /* The body's own cancel, not its host's (weft_task_current's). */
    CHECK_EQ(weft_task_cancelled(), !c->cancel_host);
    return P(rc);
}

static void *inline_host(void *arg)
{
    struct inline_case *c = arg;
    void *r = NULL;
    c->host_task = weft__task_current();
    CHECK_EQ(weft_task_cancelled(), 0);
    CHECK_EQ(weft_spawn(&c->inner, weft_pool_current(), inline_body, c, NULL), 0);
    CHECK_EQ(weft_await(c->inner, &r), 0);
    c->inner_rc = (int)I(r);
    /* Which of the two was cancelled, as the next wait says below. */
    CHECK_EQ(weft_task_cancelled(), c->cancel_host);
    c->host_next_rc = weft_sleep(1);
    return NULL;
}

static void test_cancel_inline_body(void **state)
{
    (void)state;
    weft_pool *p = wt_pool(1);
    for (int host = 0; host < 2; host++) {
        struct inline_case c = {.cancel_host = host};
        weft_event_init(&c.entered);
        weft_event_init(&c.release);
        assert_int_equal(weft_spawn(&c.host, p, inline_host, &c, NULL), 0);
        assert_int_equal(weft_event_wait(&c.entered), 0);
        assert_true(c.was_inline);
        if (c.cancel_host) {
            assert_int_equal(weft_task_cancel(c.host), 0);
            weft_event_set(&c.release);
        } else {
            assert_int_equal(weft_task_cancel(c.inner), 0);
        }
        assert_int_equal(weft_sync_wait(c.host, NULL), 0);
        assert_int_equal(c.inner_rc, c.cancel_host ? 0 : -ECANCELED);
        assert_int_equal(c.host_next_rc, c.cancel_host ? -ECANCELED : 0);
    }
    wt_destroy(p);
    WT_CLEAN();
}

static void test_cancel_finished_is_noop(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_task *t = NULL;
    assert_int_equal(weft_spawn(&t, p, noop, P(42), NULL), 0);
    /* Whether it finished already or not, the result comes back. */
    assert_int_equal(weft_task_cancel(t), 0);
    void *r = NULL;
    assert_int_equal(weft_sync_wait(t, &r), 0);
    assert_int_equal(I(r), 42);
    assert_int_equal(weft_task_cancel(NULL), -EINVAL);
    wt_destroy(p);
    WT_CLEAN();
}

/* Cancel racing the end of the awaited task: the awaiter gets either the
 * result (await won) or -ECANCELED with the handle intact; never both,
 * never neither, never a hang. */
struct race {
    weft_task *awaited;
    atomic_int started;
};

static void *short_work(void *arg)
{
    for (int i = 0; i < (int)(I(arg) % 4); i++)
        weft_yield();
    return P(1000 + I(arg));
}

static void *racer(void *arg)
{
    struct race *r = arg;
    atomic_store(&r->started, 1);
    void *v = NULL;
    int err = weft_await(r->awaited, &v);
    if (err == 0) {
        CHECK_EQ(I(v) >= 1000, 1);
        r->awaited = NULL;
        return v;
    }
    CHECK_EQ(err, -ECANCELED);
    return NULL;
}

static void test_cancel_await_race(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    int cancelled = 0, completed = 0;
    for (int i = 0; i < 3000; i++) {
        struct race r = {0};
        assert_int_equal(weft_spawn(&r.awaited, p, short_work, P(i), NULL), 0);
        weft_task *a = NULL;
        assert_int_equal(weft_spawn(&a, p, racer, &r, NULL), 0);
        while (i % 2 && !atomic_load(&r.started))
            sched_yield();
        assert_int_equal(weft_task_cancel(a), 0);
        void *v = NULL;
        assert_int_equal(weft_sync_wait(a, &v), 0);
        if (r.awaited) {
            /* Cancelled: the handle is still ours. */
            assert_null(v);
            void *w = NULL;
            assert_int_equal(weft_sync_wait(r.awaited, &w), 0);
            assert_int_equal(I(w), 1000 + i);
            cancelled++;
        } else {
            assert_int_equal(I(v), 1000 + i);
            completed++;
        }
    }
    print_message("await vs cancel: %d cancelled, %d completed\n", cancelled,
                  completed);
    assert_int_equal(cancelled + completed, 3000);
    wt_destroy(p);
    WT_CLEAN();
}

/* Cancel racing sleeps that end by themselves. */
static void *nap(void *arg)
{
    int r = weft_sleep((uint64_t)(I(arg) % 5) * 50000u);
    CHECK(r == 0 || r == -ECANCELED);
    return P(r);
}

static void test_cancel_sleep_race(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    enum { N = 2000 };
    weft_task **ts = calloc(N, sizeof *ts);
    assert_non_null(ts);
    for (int i = 0; i < N; i++)
        assert_int_equal(weft_spawn(&ts[i], p, nap, P(i), NULL), 0);
    for (int i = 0; i < N; i += 2)
        assert_int_equal(weft_task_cancel(ts[i]), 0);
    int zero = 0;
    for (int i = 0; i < N; i++) {
        void *r = P(1);
        assert_int_equal(weft_sync_wait(ts[i], &r), 0);
        if (i % 2)
            assert_int_equal(I(r), 0); /* not cancelled: slept */
        zero += I(r) == 0;
    }
    assert_true(zero >= N / 2);
    free(ts);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------ await_all */

static void *gather(void *arg)
{
    enum { N = 16 };
    weft_task *ts[N];
    void *rs[N];
    for (int i = 0; i < N; i++)
        CHECK_EQ(weft_spawn(&ts[i], weft_pool_current(), short_work, P(i), NULL), 0);
    weft_task *one[2] = {ts[0], NULL};
    CHECK_EQ(weft_await_all(one, 2, NULL), -EINVAL); /* nothing consumed */
    CHECK_EQ(weft_await_all(NULL, 1, NULL), -EINVAL);
    CHECK_EQ(weft_await_all(NULL, 0, NULL), 0);
    CHECK_EQ(weft_await_all(ts, N, rs), 0);
    for (int i = 0; i < N; i++) {
        CHECK(ts[i] == NULL);
        CHECK_EQ(I(rs[i]), 1000 + i);
    }
    (void)arg;
    return NULL;
}

static void test_await_all(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    wt_run(p, gather, NULL);
    weft_task *t = NULL;
    assert_int_equal(weft_spawn(&t, p, noop, NULL, NULL), 0);
    assert_int_equal(weft_await_all(&t, 1, NULL), -EPERM);
    assert_int_equal(weft_sync_wait(t, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST(test_sleep_task),
        WT_TEST1(test_sleep_thread),
        WT_TEST1(test_sleep_no_pool),
        WT_TEST(test_many_sleepers),
        WT_TEST1(test_sleep_parks),
        WT_TEST1(test_timer_of_busy_worker),
        WT_TEST(test_cancel_sleep),
        WT_TEST(test_cancel_event),
        WT_TEST(test_cancel_event_for),
        WT_TEST(test_cancel_await),
        WT_TEST(test_cancel_await_lazy),
        WT_TEST(test_cancel_before_start),
        WT_TEST(test_cancel_finished_is_noop),
        WT_TEST1(test_cancel_inline_body),
        WT_TEST(test_cancel_await_race),
        WT_TEST(test_cancel_sleep_race),
        WT_TEST(test_await_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
