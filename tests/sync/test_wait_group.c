/*
 * test_wait_group.c — weft_wait_group: counting, timed waits, a done too
 * many, many tasks and a plain thread waiting for many jobs, cancellation.
 */
#include "st.h"

static void basic_semantics(void)
{
    weft_wait_group wg;
    weft_wait_group_init(&wg);
    CHECK_EQ(weft_wait_group_wait(&wg), 0);      /* nothing outstanding */
    CHECK_EQ(weft_wait_group_wait_for(&wg, 0), 0);
    weft_wait_group_add(&wg, 2);
    CHECK_EQ(weft_wait_group_wait_for(&wg, 0), -ETIMEDOUT);
    uint64_t t0 = wt_now_ns();
    CHECK_EQ(weft_wait_group_wait_for(&wg, MS(15)), -ETIMEDOUT);
    CHECK(wt_now_ns() - t0 >= MS(15));
    weft_wait_group_done(&wg);
    CHECK_EQ(weft_wait_group_wait_for(&wg, 0), -ETIMEDOUT);
    weft_wait_group_done(&wg);
    CHECK_EQ(weft_wait_group_wait(&wg), 0);
    weft_wait_group_add(&wg, 0);
    CHECK_EQ(weft_wait_group_wait_for(&wg, 0), 0);

    /* A done too many is ignored: the counter stays at zero, and the
     * next add counts from there. */
    weft_wait_group_done(&wg);
    CHECK_EQ(weft_wait_group_wait(&wg), 0);
    weft_wait_group_add(&wg, 1);
    CHECK_EQ(weft_wait_group_wait_for(&wg, 0), -ETIMEDOUT);
    weft_wait_group_done(&wg);
    CHECK_EQ(weft_wait_group_wait_for(&wg, 0), 0);

    CHECK_EQ(weft_wait_group_wait(NULL), -EINVAL);
    CHECK_EQ(weft_wait_group_wait_for(NULL, 1), -EINVAL);
    weft_wait_group_init(NULL);
    weft_wait_group_add(NULL, 1);
    weft_wait_group_done(NULL);
}

static void test_basic(void **state)
{
    st_everywhere(state, basic_semantics);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Many jobs, several waiters (tasks and the main thread)                */

struct jobs {
    weft_wait_group wg;
    _Atomic unsigned finished;
    unsigned n;
};

static void *job(void *arg)
{
    struct jobs *j = arg;
    CHECK_EQ(weft_yield(), 0);
    atomic_fetch_add(&j->finished, 1);
    weft_wait_group_done(&j->wg);
    return NULL;
}

static void *job_waiter(void *arg)
{
    struct jobs *j = arg;
    CHECK_EQ(weft_wait_group_wait(&j->wg), 0);
    CHECK_EQ(atomic_load(&j->finished), j->n);
    return NULL;
}

static void test_many_jobs(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    struct jobs j = {.finished = 0, .n = st_scaled(2000)};
    weft_wait_group_init(&j.wg);
    weft_wait_group_add(&j.wg, j.n);
    enum { WAITERS = 4 };
    weft_task *ws[WAITERS];
    for (int i = 0; i < WAITERS; i++) {
        ws[i] = st_spawn(p, job_waiter, &j);
        st_await_parked(ws[i]);
    }
    for (unsigned i = 0; i < j.n; i++)
        assert_int_equal(weft_spawn(NULL, p, job, &j, NULL), 0);
    assert_int_equal(weft_wait_group_wait(&j.wg), 0); /* plain thread */
    assert_int_equal(atomic_load(&j.finished), j.n);
    for (int i = 0; i < WAITERS; i++)
        st_join(ws[i]);
    wt_destroy(p);
    WT_CLEAN();
}

static void *wg_wait_body(void *arg)
{
    return P(weft_wait_group_wait(arg));
}

static void test_cancel(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_wait_group wg;
    weft_wait_group_init(&wg);
    weft_wait_group_add(&wg, 1);
    weft_task *t = st_spawn(p, wg_wait_body, &wg);
    st_await_parked(t);
    weft_task *u = st_spawn(p, wg_wait_body, &wg);
    st_await_parked(u);
    assert_int_equal(weft_task_cancel(t), 0);
    assert_int_equal(st_join(t), -ECANCELED);
    assert_int_equal(st_listed(ST_Q(&wg)), 1); /* u still waits */
    weft_wait_group_done(&wg);
    assert_int_equal(st_join(u), 0);
    wt_destroy(p);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST(test_basic),
        WT_TEST(test_many_jobs),
        WT_TEST(test_cancel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
