/*
 * test_sem.c — weft_sem: counting, try/timed waits, direct hand-off to
 * waiters, cancellation, a semaphore as a limit on concurrency, plain
 * thread <-> task ping-pong, and no unit lost when timeouts race posts.
 */
#include "st.h"

static void basic_semantics(void)
{
    weft_sem s;
    weft_sem_init(&s, 2);
    CHECK_EQ(weft_sem_trywait(&s), 0);
    CHECK_EQ(weft_sem_wait(&s), 0);
    CHECK_EQ(weft_sem_trywait(&s), -EAGAIN);
    CHECK_EQ(weft_sem_wait_for(&s, 0), -ETIMEDOUT);
    uint64_t t0 = wt_now_ns();
    CHECK_EQ(weft_sem_wait_for(&s, MS(15)), -ETIMEDOUT);
    CHECK(wt_now_ns() - t0 >= MS(15));
    weft_sem_post(&s);
    weft_sem_post(&s);
    weft_sem_post(&s);
    CHECK_EQ(weft_sem_wait_for(&s, 0), 0);
    CHECK_EQ(weft_sem_wait_for(&s, MS(10)), 0);
    CHECK_EQ(weft_sem_trywait(&s), 0);
    CHECK_EQ(weft_sem_trywait(&s), -EAGAIN);

    CHECK_EQ(weft_sem_wait(NULL), -EINVAL);
    CHECK_EQ(weft_sem_wait_for(NULL, 1), -EINVAL);
    CHECK_EQ(weft_sem_trywait(NULL), -EINVAL);
    weft_sem_post(NULL);
    weft_sem_init(NULL, 3);
}

static void test_basic(void **state)
{
    st_everywhere(state, basic_semantics);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */

static void *sem_wait_body(void *arg)
{
    return P(weft_sem_wait(arg));
}

/* A post with a waiter listed goes to that waiter, not to the count. */
static void test_handoff(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_sem s;
    weft_sem_init(&s, 0);
    weft_task *a = st_spawn(p, sem_wait_body, &s);
    st_await_parked(a);
    weft_task *b = st_spawn(p, sem_wait_body, &s);
    st_await_parked(b);
    weft_sem_post(&s);
    assert_int_equal(weft_sem_trywait(&s), -EAGAIN); /* a's, not ours */
    assert_int_equal(st_join(a), 0);
    assert_int_equal(st_listed(ST_Q(&s)), 1);  /* b still waits */
    weft_sem_post(&s);
    assert_int_equal(st_join(b), 0);
    assert_int_equal(weft_sem_trywait(&s), -EAGAIN);
    wt_destroy(p);
    WT_CLEAN();
}

static void test_cancel(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_sem s;
    weft_sem_init(&s, 0);
    weft_task *t = st_spawn(p, sem_wait_body, &s);
    st_await_parked(t);
    assert_int_equal(weft_task_cancel(t), 0);
    assert_int_equal(st_join(t), -ECANCELED);
    assert_int_equal(st_listed(ST_Q(&s)), 0);
    weft_sem_post(&s); /* nobody waits: it is counted */
    assert_int_equal(weft_sem_trywait(&s), 0);
    assert_int_equal(weft_sem_trywait(&s), -EAGAIN);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* At most LIMIT tasks at once inside                                    */

#define LIMIT 3

struct limit {
    weft_sem s;
    _Atomic int inside, max_inside;
    unsigned rounds;
};

static void *limited(void *arg)
{
    struct limit *l = arg;
    for (unsigned r = 0; r < l->rounds; r++) {
        CHECK_EQ(weft_sem_wait(&l->s), 0);
        int now = atomic_fetch_add(&l->inside, 1) + 1;
        int max = atomic_load(&l->max_inside);
        while (now > max &&
               !atomic_compare_exchange_weak(&l->max_inside, &max, now))
            ;
        CHECK(now <= LIMIT);
        CHECK_EQ(weft_yield(), 0);
        atomic_fetch_sub(&l->inside, 1);
        weft_sem_post(&l->s);
    }
    return NULL;
}

static void test_limit(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    struct limit l = {.rounds = st_scaled(200)};
    weft_sem_init(&l.s, LIMIT);
    enum { N = 20 };
    weft_task *ts[N];
    for (int i = 0; i < N; i++)
        ts[i] = st_spawn(p, limited, &l);
    for (int i = 0; i < N; i++)
        st_join(ts[i]);
    assert_true(atomic_load(&l.max_inside) >= 1);
    assert_true(atomic_load(&l.max_inside) <= LIMIT);
    /* Every unit came back. */
    for (int i = 0; i < LIMIT; i++)
        assert_int_equal(weft_sem_trywait(&l.s), 0);
    assert_int_equal(weft_sem_trywait(&l.s), -EAGAIN);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* A plain thread and a task take turns                                  */

struct turns {
    weft_sem to_task, to_thread;
    unsigned rounds;
    unsigned ball;       /* passed back and forth, never touched by both */
};

static void *turns_task(void *arg)
{
    struct turns *x = arg;
    for (unsigned i = 0; i < x->rounds; i++) {
        CHECK_EQ(weft_sem_wait(&x->to_task), 0);
        CHECK_EQ(x->ball, 2 * i + 1);
        x->ball++;
        weft_sem_post(&x->to_thread);
    }
    return NULL;
}

static void test_thread_turns(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    struct turns x = {.rounds = st_scaled(2000), .ball = 0};
    weft_sem_init(&x.to_task, 0);
    weft_sem_init(&x.to_thread, 0);
    weft_task *t = st_spawn(p, turns_task, &x);
    for (unsigned i = 0; i < x.rounds; i++) {
        x.ball++;
        weft_sem_post(&x.to_task);
        assert_int_equal(weft_sem_wait(&x.to_thread), 0);
        assert_int_equal(x.ball, 2 * i + 2);
    }
    st_join(t);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Timeouts racing posts: a unit goes to a waiter that takes it, or to  */
/* the count; never to one that already timed out.                       */

struct race {
    weft_sem s;
    unsigned rounds;
    _Atomic long taken;
};

static void *race_waiter(void *arg)
{
    struct race *r = arg;
    for (unsigned i = 0; i < r->rounds; i++) {
        int rc = weft_sem_wait_for(&r->s, 20000 + (i % 7) * 10000);
        CHECK(rc == 0 || rc == -ETIMEDOUT);
        if (rc == 0)
            atomic_fetch_add(&r->taken, 1);
    }
    return NULL;
}

static void *race_poster(void *arg)
{
    struct race *r = arg;
    for (unsigned i = 0; i < r->rounds; i++) {
        weft_sem_post(&r->s);
        if (i % 4 == 0)
            CHECK_EQ(weft_sleep(30000), 0);
    }
    return NULL;
}

static void test_timeout_race(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    struct race r = {.rounds = st_scaled(1500), .taken = 0};
    weft_sem_init(&r.s, 0);
    enum { W = 4, POSTERS = 2 };
    weft_task *ts[W + POSTERS];
    for (int i = 0; i < W; i++)
        ts[i] = st_spawn(p, race_waiter, &r);
    for (int i = 0; i < POSTERS; i++)
        ts[W + i] = st_spawn(p, race_poster, &r);
    for (int i = 0; i < W + POSTERS; i++)
        st_join(ts[i]);
    long left = 0;
    while (weft_sem_trywait(&r.s) == 0)
        left++;
    assert_int_equal(atomic_load(&r.taken) + left, (long)POSTERS * r.rounds);
    wt_destroy(p);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST(test_basic),
        WT_TEST(test_handoff),
        WT_TEST(test_cancel),
        WT_TEST(test_limit),
        WT_TEST(test_thread_turns),
        WT_TEST(test_timeout_race),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
