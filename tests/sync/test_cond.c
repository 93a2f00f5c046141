/*
 * test_cond.c — weft_cond: misuse, signal vs broadcast, timeouts and
 * cancellation (both return holding the mutex), a producer/consumer queue
 * shared by tasks and a plain thread.
 */
#include "st.h"

/* ------------------------------------------------------------------ */
/* Misuse and timeouts, in each context                                 */

static void basic_semantics(void)
{
    weft_mutex m;
    weft_cond c;
    weft_mutex_init(&m);
    weft_cond_init(&c);
    weft_cond_signal(&c);    /* nobody waits: nothing happens */
    weft_cond_broadcast(&c);
    CHECK_EQ(weft_cond_wait(&c, &m), -EPERM);
    CHECK_EQ(weft_cond_wait_for(&c, &m, MS(1)), -EPERM);
    CHECK_EQ(weft_cond_wait(NULL, &m), -EINVAL);
    CHECK_EQ(weft_cond_wait(&c, NULL), -EINVAL);
    CHECK_EQ(weft_cond_wait_for(NULL, &m, 1), -EINVAL);
    CHECK_EQ(weft_cond_wait_for(&c, NULL, 1), -EINVAL);
    weft_cond_init(NULL);
    weft_cond_signal(NULL);
    weft_cond_broadcast(NULL);

    CHECK_EQ(weft_mutex_lock(&m), 0);
    CHECK_EQ(weft_cond_wait_for(&c, &m, 0), -ETIMEDOUT);
    uint64_t t0 = wt_now_ns();
    CHECK_EQ(weft_cond_wait_for(&c, &m, MS(15)), -ETIMEDOUT);
    CHECK(wt_now_ns() - t0 >= MS(15));
    CHECK_EQ(weft_mutex_trylock(&m), -EAGAIN); /* held again */
    CHECK_EQ(weft_mutex_unlock(&m), 0);
    CHECK_EQ(weft_mutex_unlock(&m), -EPERM);
}

static void test_basic(void **state)
{
    st_everywhere(state, basic_semantics);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Signal wakes one, broadcast wakes all                                 */

struct sig {
    weft_mutex m;
    weft_cond c;
    int woken;             /* under m */
};

static void *sig_waiter(void *arg)
{
    struct sig *s = arg;
    CHECK_EQ(weft_mutex_lock(&s->m), 0);
    CHECK_EQ(weft_cond_wait(&s->c, &s->m), 0);
    s->woken++;
    CHECK_EQ(weft_mutex_unlock(&s->m), 0);
    return NULL;
}

static void test_signal_broadcast(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    enum { N = 5 };
    struct sig s = {.woken = 0};
    weft_mutex_init(&s.m);
    weft_cond_init(&s.c);
    weft_task *ts[N];
    for (int i = 0; i < N; i++) {
        ts[i] = st_spawn(p, sig_waiter, &s);
        st_await_listed(ST_Q(&s.c), (unsigned)i + 1);
    }
    weft_cond_signal(&s.c);
    assert_int_equal(st_listed(ST_Q(&s.c)), N - 1);
    st_join(ts[0]); /* FIFO: the first to wait is the one woken */
    weft_cond_signal(&s.c);
    assert_int_equal(st_listed(ST_Q(&s.c)), N - 2);
    st_join(ts[1]);
    assert_int_equal(weft_mutex_lock(&s.m), 0);
    assert_int_equal(s.woken, 2);
    weft_cond_broadcast(&s.c); /* with m held: they wake, then wait for m */
    assert_int_equal(st_listed(ST_Q(&s.c)), 0);
    assert_int_equal(weft_mutex_unlock(&s.m), 0);
    for (int i = 2; i < N; i++)
        st_join(ts[i]);
    assert_int_equal(s.woken, N);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Timeout and cancellation return holding the mutex                    */

struct rehold {
    weft_mutex m;
    weft_cond c;
    uint64_t timeout;           /* 0: untimed wait */
    _Atomic int returned;
    _Atomic int main_unlocking; /* the main thread is about to unlock */
    int saw_unlocking;
    int held;
};

static void *rehold_waiter(void *arg)
{
    struct rehold *r = arg;
    CHECK_EQ(weft_mutex_lock(&r->m), 0);
    int rc = r->timeout ? weft_cond_wait_for(&r->c, &r->m, r->timeout)
                        : weft_cond_wait(&r->c, &r->m);
    atomic_store(&r->returned, 1);
    r->saw_unlocking = atomic_load(&r->main_unlocking);
    r->held = weft_mutex_unlock(&r->m) == 0;
    return P(rc);
}

/* The waiter's wait ends (timer or cancel) while the main thread holds
 * the mutex: it must not return before the main thread unlocks.  False if
 * the timer was faster than the main thread's lock (then there was
 * nothing to test: the caller tries again with a longer timeout). */
static bool rehold_case(weft_pool *p, uint64_t timeout, bool cancel)
{
    struct rehold r = {.timeout = timeout};
    weft_mutex_init(&r.m);
    weft_cond_init(&r.c);
    weft_task *t = st_spawn(p, rehold_waiter, &r);
    st_await_listed(ST_Q(&r.c), 1);
    assert_int_equal(weft_mutex_lock(&r.m), 0); /* it released m */
    if (atomic_load(&r.returned)) {
        assert_false(cancel);
        assert_int_equal(weft_mutex_unlock(&r.m), 0);
        assert_int_equal(st_join(t), -ETIMEDOUT);
        assert_int_equal(r.held, 1);
        return false;
    }
    if (cancel)
        assert_int_equal(weft_task_cancel(t), 0);
    /* Once its wait is over (cancelled, or timed out) it queues for the
     * mutex we hold. */
    st_await_listed(ST_Q(&r.m), 1);
    assert_int_equal(atomic_load(&r.returned), 0);
    atomic_store(&r.main_unlocking, 1);
    assert_int_equal(weft_mutex_unlock(&r.m), 0);
    assert_int_equal(st_join(t), cancel ? -ECANCELED : -ETIMEDOUT);
    assert_int_equal(r.saw_unlocking, 1);
    assert_int_equal(r.held, 1);
    return true;
}

static void test_rehold(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    uint64_t timeout = MS(10);
    while (!rehold_case(p, timeout, false))
        timeout *= 4; /* the watchdog bounds this */
    assert_true(rehold_case(p, 0, true));
    assert_true(rehold_case(p, MS(10000), true));
    wt_destroy(p);
    WT_CLEAN();
}

/* Cancelled before the wait: -ECANCELED at once, the mutex never let go. */
static void *cancelled_body(void *arg)
{
    struct rehold *r = arg;
    CHECK_EQ(weft_mutex_lock(&r->m), 0); /* free: taken even if cancelled */
    CHECK_EQ(weft_cond_wait(&r->c, &r->m), -ECANCELED);
    CHECK_EQ(weft_cond_wait_for(&r->c, &r->m, MS(10000)), -ECANCELED);
    CHECK_EQ(weft_mutex_unlock(&r->m), 0);
    return NULL;
}

static void test_cancelled_before(void **state)
{
    (void)state;
    struct rehold r;
    weft_mutex_init(&r.m);
    weft_cond_init(&r.c);
    weft_task *t;
    assert_int_equal(weft_task_create(&t, cancelled_body, &r, NULL), 0);
    assert_int_equal(weft_task_cancel(t), 0);
    st_join(t);
    assert_int_equal(st_listed(ST_Q(&r.c)), 0);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Producer / consumer                                                   */

#define QCAP 4

struct pc {
    weft_mutex m;
    weft_cond not_full, not_empty;
    long q[QCAP];
    unsigned head, len;
    unsigned per_producer;
    unsigned consumed;        /* under m: values taken, all consumers */
    unsigned total;
    long sum;                 /* under m */
};

static void produce(struct pc *x, long base)
{
    for (unsigned i = 0; i < x->per_producer; i++) {
        CHECK_EQ(weft_mutex_lock(&x->m), 0);
        while (x->len == QCAP)
            CHECK_EQ(weft_cond_wait(&x->not_full, &x->m), 0);
        x->q[(x->head + x->len++) % QCAP] = base + i;
        weft_cond_signal(&x->not_empty);
        CHECK_EQ(weft_mutex_unlock(&x->m), 0);
    }
}

static void *producer_task(void *arg)
{
    struct pc *x = ((void **)arg)[0];
    produce(x, I(((void **)arg)[1]));
    return NULL;
}

static void *producer_thread(void *arg)
{
    return producer_task(arg);
}

static void *consumer_task(void *arg)
{
    struct pc *x = arg;
    CHECK_EQ(weft_mutex_lock(&x->m), 0);
    for (;;) {
        while (x->len == 0 && x->consumed < x->total)
            CHECK_EQ(weft_cond_wait(&x->not_empty, &x->m), 0);
        if (x->consumed == x->total)
            break;
        x->sum += x->q[x->head];
        x->head = (x->head + 1) % QCAP;
        x->len--;
        if (++x->consumed == x->total)
            weft_cond_broadcast(&x->not_empty); /* the others end too */
        weft_cond_signal(&x->not_full);
    }
    CHECK_EQ(weft_mutex_unlock(&x->m), 0);
    return NULL;
}

static void test_producer_consumer(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    enum { PT = 3, PTH = 1, CONS = 3 }; /* producer tasks, threads */
    struct pc x = {.head = 0, .len = 0, .consumed = 0, .sum = 0};
    x.per_producer = st_scaled(3000);
    x.total = (PT + PTH) * x.per_producer;
    weft_mutex_init(&x.m);
    weft_cond_init(&x.not_full);
    weft_cond_init(&x.not_empty);
    void *args[PT + PTH][2];
    long want = 0;
    for (int i = 0; i < PT + PTH; i++) {
        long base = (long)i * 1000000;
        args[i][0] = &x;
        args[i][1] = P(base);
        want += base * x.per_producer +
                (long)x.per_producer * (x.per_producer - 1) / 2;
    }
    weft_task *cs[CONS], *ps[PT];
    for (int i = 0; i < CONS; i++)
        cs[i] = st_spawn(p, consumer_task, &x);
    for (int i = 0; i < PT; i++)
        ps[i] = st_spawn(p, producer_task, args[i]);
    pthread_t th = wt_thread(producer_thread, args[PT]);
    for (int i = 0; i < PT; i++)
        st_join(ps[i]);
    wt_join(th);
    for (int i = 0; i < CONS; i++)
        st_join(cs[i]);
    assert_int_equal(x.consumed, x.total);
    assert_int_equal(x.len, 0);
    assert_int_equal(x.sum, want);
    wt_destroy(p);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST(test_basic),
        WT_TEST(test_signal_broadcast),
        WT_TEST(test_rehold),
        WT_TEST1(test_cancelled_before),
        WT_TEST(test_producer_consumer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
