/*
 * test_join.c — pthread_join in a pool task (hooked build only): the
 * task parks while the thread runs, its worker runs the others, and the
 * join ends with the thread's value once it has ended, cancelled or not
 * (hook/join.c).
 *
 * One worker and no monitor: a join that blocked the worker would keep
 * the task that lets the thread end from ever running, and the case
 * would hang until the watchdog fails it.
 */
#include "hk.h"

/* ThreadSanitizer's own pthread_join forgets the thread it is asked to
 * join before it calls libc's, the caller too: the pool's join of that
 * worker then fails one of its checks.  No self-join under it. */
#if defined(__SANITIZE_THREAD__)
#define JOIN_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define JOIN_UNDER_TSAN 1
#endif
#endif

struct join_run {
    weft_pool *pool;
    atomic_bool release; /* the thread ends once this is set */
    atomic_int joined;   /* 1 once the joiner's join returned */
    weft_task *joiner;
};

static void *held_thread(void *arg)
{
    struct join_run *r = arg;
    while (!atomic_load(&r->release))
        sched_yield();
    return (void *)(uintptr_t)42;
}

static void *joiner(void *arg)
{
    struct join_run *r = arg;
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, held_thread, r), 0);
    void *ret = NULL;
    errno = EDOM;
    CHECK_EQ(pthread_join(th, &ret), 0);
    CHECK_EQ(errno, EDOM);
    CHECK_EQ((uintptr_t)ret, 42);
    /* The join returned after the thread ended, which it does only once
     * released. */
    CHECK(atomic_load(&r->release));
    atomic_store(&r->joined, 1);
    return NULL;
}

/* Runs on the same (only) worker while the joiner is parked. */
static void *releaser(void *arg)
{
    struct join_run *r = arg;
    CHECK_EQ(atomic_load(&r->joined), 0);
    atomic_store(&r->release, true);
    return NULL;
}

static void test_join_parks(void **state)
{
    (void)state;
    assert_true(hk_hook_loaded());
    static struct join_run r;
    memset(&r, 0, sizeof r);
    r.pool = hk_pool(1, WEFT_POOL_NO_MONITOR);
    assert_int_equal(weft_spawn(&r.joiner, r.pool, joiner, &r, NULL), 0);
    hk_wait_parked(r.pool, 1);
    wt_run(r.pool, releaser, &r);
    assert_int_equal(weft_sync_wait(r.joiner, NULL), 0);
    assert_int_equal(atomic_load(&r.joined), 1);
    wt_destroy(r.pool);
    WT_CLEAN();
}

/* A cancel does not end the join: the thread is joined all the same. */
static void test_join_cancel(void **state)
{
    (void)state;
    static struct join_run r;
    memset(&r, 0, sizeof r);
    r.pool = hk_pool(1, WEFT_POOL_NO_MONITOR);
    assert_int_equal(weft_spawn(&r.joiner, r.pool, joiner, &r, NULL), 0);
    hk_wait_parked(r.pool, 1);
    assert_int_equal(weft_task_cancel(r.joiner), 0);
    /* Parked still, cancel or not, until the thread ends. */
    hk_wait_parked(r.pool, 1);
    assert_int_equal(atomic_load(&r.joined), 0);
    atomic_store(&r.release, true);
    assert_int_equal(weft_sync_wait(r.joiner, NULL), 0);
    assert_int_equal(atomic_load(&r.joined), 1);
    wt_destroy(r.pool);
    WT_CLEAN();
}

static void *returns_7(void *arg)
{
    (void)arg;
    return (void *)(uintptr_t)7;
}

/* A thread already ended: joined at once.  The caller itself: EDEADLK,
 * as libc says (the try would say EBUSY for ever). */
static void *join_edges(void *arg)
{
    (void)arg;
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, returns_7, NULL), 0);
    void *ret = NULL;
    CHECK_EQ(pthread_join(th, &ret), 0);
    CHECK_EQ((uintptr_t)ret, 7);
#ifndef JOIN_UNDER_TSAN
    CHECK_EQ(pthread_join(pthread_self(), NULL), EDEADLK);
#endif
    return NULL;
}

static void test_join_edges(void **state)
{
    (void)state;
    weft_pool *p = hk_pool(1, WEFT_POOL_NO_MONITOR);
    wt_run(p, join_edges, NULL);
    wt_destroy(p);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST1(test_join_parks),
        WT_TEST1(test_join_cancel),
        WT_TEST1(test_join_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
