/*
 * test_pool.c — weft/pool.h: create, destroy (drain, -EDEADLK, -EBUSY,
 * -ESHUTDOWN), weft_pool_current, weft_pool_threads, worker names, the
 * stack_size option.
 *
 * Task bodies report through CHECK (see wt.h), never through cmocka asserts.
 */
#include "wt.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                              */

static void *ret_arg(void *arg) { return arg; }
static void *ret_current_pool(void *arg) { (void)arg; return weft_pool_current(); }

static int sentinel_obj;
#define SENTINEL_POOL ((weft_pool *)(void *)&sentinel_obj)
#define SENTINEL_TASK ((weft_task *)(void *)&sentinel_obj)

/* ------------------------------------------------------------------ */
/* create                                                               */

/* NULL options and zeroed options: one worker per online CPU. */
static void test_create_defaults(void **state)
{
    (void)state;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    assert_true(ncpu > 0);

    weft_pool *p = NULL;
    assert_int_equal(weft_pool_create(&p, NULL), 0);
    assert_non_null(p);
    assert_int_equal(weft_pool_threads(p), (unsigned)ncpu);
    assert_ptr_equal(wt_run(p, ret_current_pool, NULL), p);
    assert_int_equal(I(wt_run(p, ret_arg, P(77))), 77);
    wt_destroy(p);

    weft_pool_opts o;
    memset(&o, 0, sizeof o);
    p = NULL;
    assert_int_equal(weft_pool_create(&p, &o), 0);
    assert_non_null(p);
    assert_int_equal(weft_pool_threads(p), (unsigned)ncpu);
    assert_ptr_equal(wt_run(p, ret_current_pool, NULL), p);
    wt_destroy(p);
    WT_CLEAN();
}

struct who {
    pthread_t tid;
    weft_pool *pool;
};

static void *record_who(void *arg)
{
    struct who *w = arg;
    w->tid = wt_self();
    w->pool = weft_pool_current();
    wt_sleep_ms(1); /* give the other workers a chance to take some */
    return NULL;
}

/* threads = n: weft_pool_threads says n, tasks run on at most n distinct
 * threads, none of them the caller's. */
static void test_create_threads(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    assert_int_equal(weft_pool_threads(p), n);

    enum { K = 64 };
    struct who w[K];
    weft_task *t[K];
    memset(w, 0, sizeof w);
    for (int i = 0; i < K; i++)
        assert_int_equal(weft_spawn(&t[i], p, record_who, &w[i], NULL), 0);
    for (int i = 0; i < K; i++)
        assert_int_equal(weft_sync_wait(t[i], NULL), 0);

    pthread_t distinct[K];
    unsigned nd = 0;
    for (int i = 0; i < K; i++) {
        assert_ptr_equal(w[i].pool, p);
        assert_false(pthread_equal(w[i].tid, pthread_self()));
        unsigned j;
        for (j = 0; j < nd; j++)
            if (pthread_equal(distinct[j], w[i].tid))
                break;
        if (j == nd)
            distinct[nd++] = w[i].tid;
    }
    assert_true(nd >= 1 && nd <= n);
    wt_destroy(p);
    WT_CLEAN();
}

/* Bad arguments: -EINVAL and *out untouched. */
static void test_create_einval(void **state)
{
    (void)state;
    weft_pool_opts o = { .threads = 2 };
    assert_int_equal(weft_pool_create(NULL, &o), -EINVAL);
    assert_int_equal(weft_pool_create(NULL, NULL), -EINVAL);

    weft_pool *p = SENTINEL_POOL;
    o.threads = 100000;
    assert_int_equal(weft_pool_create(&p, &o), -EINVAL);
    assert_ptr_equal(p, SENTINEL_POOL);

    o.threads = 1025; /* "more than 1024 threads" */
    assert_int_equal(weft_pool_create(&p, &o), -EINVAL);
    assert_ptr_equal(p, SENTINEL_POOL);

    o.threads = 1;
    o.stack_size = ((size_t)1 << 30) + 4096; /* "stack size over 1 GiB" */
    assert_int_equal(weft_pool_create(&p, &o), -EINVAL);
    assert_ptr_equal(p, SENTINEL_POOL);

    assert_int_equal(weft_pool_destroy(NULL), -EINVAL);
    assert_int_equal(weft_pool_threads(NULL), 0);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* weft_pool_current                                                    */

static void *thread_current_pool(void *arg)
{
    (void)arg;
    return weft_pool_current();
}

static void *coro_current_pool(void *arg)
{
    (void)arg;
    return weft_pool_current();
}

static void test_current(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);

    assert_null(weft_pool_current());
    assert_null(wt_join(wt_thread(thread_current_pool, NULL)));

    /* a standalone coroutine resumed on main is on no pool */
    weft_coro *co = NULL;
    assert_int_equal(weft_coro_create(&co, coro_current_pool, NULL), 0);
    void *out = P(1);
    assert_int_equal(weft_coro_resume(co, NULL, &out), 0);
    assert_null(out);
    assert_int_equal(weft_coro_destroy(co), 0);

    for (int i = 0; i < 100; i++)
        assert_ptr_equal(wt_run(p, ret_current_pool, NULL), p);
    assert_null(weft_pool_current());
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* destroy                                                              */

static void *destroy_own_pool(void *arg)
{
    (void)arg;
    weft_pool *me = weft_pool_current();
    CHECK(me != NULL);
    int rc = weft_pool_destroy(me);
    CHECK_PTR_EQ(weft_pool_current(), me);
    return P(rc);
}

/* A lazy task awaited by a pool task runs on that worker too. */
static void *destroy_own_pool_nested(void *arg)
{
    (void)arg;
    weft_task *t = NULL;
    int rc = weft_task_create(&t, destroy_own_pool, NULL, NULL);
    CHECK_EQ(rc, 0);
    if (rc != 0)
        return P(rc);
    void *r = P(1);
    CHECK_EQ(weft_await(t, &r), 0);
    return r;
}

static void test_destroy_from_own_worker(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    assert_int_equal(I(wt_run(p, destroy_own_pool, NULL)), -EDEADLK);
    assert_int_equal(I(wt_run(p, destroy_own_pool_nested, NULL)), -EDEADLK);
    /* The pool still works. */
    for (int i = 0; i < 100; i++) {
        assert_int_equal(I(wt_run(p, ret_arg, P(i))), i);
        assert_ptr_equal(wt_run(p, ret_current_pool, NULL), p);
    }
    wt_destroy(p);
    WT_CLEAN();
}

/* Destroying pool B from a task running on pool A is allowed, and drains
 * B's work first. */
static atomic_int other_count;

static void *slow_incr(void *arg)
{
    (void)arg;
    wt_sleep_ms(2);
    atomic_fetch_add(&other_count, 1);
    return NULL;
}

static void *destroy_other(void *arg)
{
    weft_pool *b = arg;
    int rc = weft_pool_destroy(b);
    CHECK_EQ(atomic_load(&other_count), 20);
    return P(rc);
}

static void test_destroy_from_other_pool_task(void **state)
{
    unsigned n = WT_NTHREADS(state);
    atomic_store(&other_count, 0);
    weft_pool *a = wt_pool(n);
    weft_pool *b = wt_pool(n);
    for (int i = 0; i < 20; i++)
        assert_int_equal(weft_spawn(NULL, b, slow_incr, NULL, NULL), 0);
    assert_int_equal(I(wt_run(a, destroy_other, b)), 0);
    assert_int_equal(atomic_load(&other_count), 20);
    wt_destroy(a);
    WT_CLEAN();
}

/* A pool created, used and destroyed entirely from inside a task of
 * another pool. */
static void *create_use_destroy(void *arg)
{
    unsigned n = (unsigned)I(arg);
    weft_pool_opts o = { .threads = n, .name = "inner" };
    weft_pool *b = NULL;
    int rc = weft_pool_create(&b, &o);
    CHECK_EQ(rc, 0);
    if (rc != 0)
        return P(rc);
    CHECK_EQ(weft_pool_threads(b), n);
    atomic_store(&other_count, 0);
    for (int i = 0; i < 20; i++)
        CHECK_EQ(weft_spawn(NULL, b, slow_incr, NULL, NULL), 0);
    weft_task *t = NULL;
    CHECK_EQ(weft_spawn(&t, b, ret_current_pool, NULL, NULL), 0);
    void *r = NULL;
    CHECK_EQ(weft_await(t, &r), 0);
    CHECK_PTR_EQ(r, b);
    rc = weft_pool_destroy(b);
    CHECK_EQ(atomic_load(&other_count), 20);
    return P(rc);
}

static void test_create_destroy_in_task(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *a = wt_pool(n);
    for (int i = 0; i < 5; i++)
        assert_int_equal(I(wt_run(a, create_use_destroy, P(n))), 0);
    wt_destroy(a);
    WT_CLEAN();
}

/* After destroy has begun: spawn from a plain thread -> -ESHUTDOWN (and
 * *out untouched), a second destroy -> -EBUSY, schedule onto the pool ->
 * -ESHUTDOWN (the caller does not move); destroy waits for the blocked
 * task, and everything spawned before the refusal runs. */
struct sd {
    weft_pool *p;
    weft_event ev;
    atomic_int blocker_started;
    atomic_int blocker_done;
    atomic_int spawned_ran;
    atomic_int destroy_returned;
    int destroy_rc;
};

static void *sd_blocker(void *arg)
{
    struct sd *sd = arg;
    atomic_store(&sd->blocker_started, 1);
    CHECK_EQ(weft_event_wait(&sd->ev), 0);
    wt_sleep_ms(5); /* still in flight a little after the set */
    atomic_store(&sd->blocker_done, 1);
    return NULL;
}

static void *sd_count(void *arg)
{
    struct sd *sd = arg;
    atomic_fetch_add(&sd->spawned_ran, 1);
    return NULL;
}

static void *sd_destroyer(void *arg)
{
    struct sd *sd = arg;
    sd->destroy_rc = weft_pool_destroy(sd->p);
    atomic_store(&sd->destroy_returned, 1);
    return NULL;
}

static void *sd_schedule_onto(void *arg)
{
    struct sd *sd = arg;
    weft_pool *before = weft_pool_current();
    pthread_t tid = wt_self();
    int rc = weft_schedule(sd->p);
    CHECK_PTR_EQ(weft_pool_current(), before);
    if (before == NULL) /* driven by sync_wait on a plain thread */
        CHECK(pthread_equal(wt_self(), tid));
    return P(rc);
}

static void test_shutdown_refuses(void **state)
{
    unsigned n = WT_NTHREADS(state);
    struct sd sd;
    memset(&sd, 0, sizeof sd);
    weft_event_init(&sd.ev);
    sd.p = wt_pool(n);
    weft_pool *q = wt_pool(1);

    assert_int_equal(weft_spawn(NULL, sd.p, sd_blocker, &sd, NULL), 0);
    while (!atomic_load(&sd.blocker_started))
        sched_yield();

    pthread_t destroyer = wt_thread(sd_destroyer, &sd);

    /* Third thread (this one): spawn until refused. */
    int ok = 0, rc = 0;
    uint64_t t0 = wt_now_ns();
    for (;;) {
        rc = weft_spawn(NULL, sd.p, sd_count, &sd, NULL);
        if (rc != 0)
            break;
        ok++;
        if (wt_now_ns() - t0 > MS(10000))
            break;
        if (ok % 64 == 0)
            sched_yield();
    }
    assert_int_equal(rc, -ESHUTDOWN);

    weft_task *h = SENTINEL_TASK;
    assert_int_equal(weft_spawn(&h, sd.p, sd_count, &sd, NULL), -ESHUTDOWN);
    assert_ptr_equal(h, SENTINEL_TASK);

    /* destroy is waiting for the blocker */
    assert_int_equal(weft_pool_destroy(sd.p), -EBUSY);

    /* schedule onto the draining pool from another pool's task ... */
    assert_int_equal(I(wt_run(q, sd_schedule_onto, &sd)), -ESHUTDOWN);
    /* ... and from a lazy task driven on this thread */
    assert_int_equal(I(wt_run_lazy(sd_schedule_onto, &sd)), -ESHUTDOWN);

    wt_sleep_ms(20);
    assert_int_equal(atomic_load(&sd.destroy_returned), 0);
    assert_int_equal(atomic_load(&sd.blocker_done), 0);

    weft_event_set(&sd.ev);
    wt_join(destroyer);
    assert_int_equal(sd.destroy_rc, 0);
    assert_int_equal(atomic_load(&sd.blocker_done), 1);
    assert_int_equal(atomic_load(&sd.spawned_ran), ok);
    wt_destroy(q);
    WT_CLEAN();
}

/* destroy drains: a task spawned just before destroy, which spawns more
 * tasks (detached trees, awaited children, yields) after destroy has
 * begun: all of them run and end before destroy returns. */
static atomic_long drain_started, drain_ended;

static void *drain_tree(void *arg)
{
    intptr_t depth = I(arg);
    atomic_fetch_add(&drain_started, 1);
    if (depth % 3 == 0)
        CHECK_EQ(weft_yield(), 0);
    for (int i = 0; depth > 0 && i < 2; i++)
        CHECK_EQ(weft_spawn(NULL, weft_pool_current(), drain_tree, P(depth - 1), NULL), 0);
    atomic_fetch_add(&drain_ended, 1);
    return NULL;
}

static void *drain_child(void *arg)
{
    atomic_fetch_add(&drain_started, 1);
    CHECK_EQ(weft_spawn(NULL, weft_pool_current(), drain_tree, P(5), NULL), 0);
    wt_sleep_ms(1);
    atomic_fetch_add(&drain_ended, 1);
    return arg;
}

static void *drain_root(void *arg)
{
    (void)arg;
    atomic_fetch_add(&drain_started, 1);
    wt_sleep_ms(30); /* destroy has begun by now */
    weft_pool *p = weft_pool_current();
    CHECK_EQ(weft_spawn(NULL, p, drain_tree, P(9), NULL), 0);
    weft_task *c[4];
    for (int i = 0; i < 4; i++)
        CHECK_EQ(weft_spawn(&c[i], p, drain_child, P(i), NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *r = P(-1);
        CHECK_EQ(weft_await(c[i], &r), 0);
        CHECK_EQ(I(r), i);
    }
    CHECK_EQ(weft_yield(), 0);
    atomic_fetch_add(&drain_ended, 1);
    return NULL;
}

static void test_destroy_drains(void **state)
{
    unsigned n = WT_NTHREADS(state);
    /* root + tree(9) + 4 * (child + tree(5)) */
    const long want = 1 + 1023 + 4 * (1 + 63);
    for (int round = 0; round < 5; round++) {
        atomic_store(&drain_started, 0);
        atomic_store(&drain_ended, 0);
        weft_pool *p = wt_pool(n);
        assert_int_equal(weft_spawn(NULL, p, drain_root, NULL, NULL), 0);
        wt_destroy(p);
        assert_int_equal(atomic_load(&drain_started), want);
        assert_int_equal(atomic_load(&drain_ended), want);
    }
    WT_CLEAN();
}

/* Destroy of an idle pool, and of a pool that never ran anything. */
static void test_destroy_idle(void **state)
{
    unsigned n = WT_NTHREADS(state);
    for (int i = 0; i < 20; i++) {
        weft_pool *p = wt_pool(n);
        if (i % 2)
            assert_int_equal(I(wt_run(p, ret_arg, P(i))), i);
        wt_destroy(p);
    }
    WT_CLEAN();
}

/* weft_pool_destroy_for with timeout 0 on a pool with no task: drained,
 * so the destroy ends now (pool.h), from a plain thread and from a task
 * of another pool; its workers need not have parked since the shutdown. */
static void *destroy_now(void *arg)
{
    CHECK_EQ(weft_pool_destroy_for(arg, 0), 0);
    return NULL;
}

static void test_destroy_now_when_drained(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *other = wt_pool(1);
    for (int i = 0; i < 40; i++) {
        weft_pool *p = wt_pool(n);
        if (i % 4 == 1)
            assert_int_equal(I(wt_run(p, ret_arg, P(i))), i);
        if (i % 2)
            wt_run(other, destroy_now, p);
        else
            assert_int_equal(weft_pool_destroy_for(p, 0), 0);
    }
    wt_destroy(other);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Worker names                                                         */

struct names {
    char prefix[16];
    atomic_int bad;
    atomic_int min_idx, max_idx;
};

static void *read_name(void *arg)
{
    struct names *nm = arg;
    char buf[64];
    memset(buf, 0, sizeof buf);
    int rc = pthread_getname_np(pthread_self(), buf, sizeof buf);
    CHECK_EQ(rc, 0);
    size_t pl = strlen(nm->prefix);
    /* A spare that covers a worker stuck in this body's sleep (a loaded
     * machine can stretch 1 ms past the monitor's period) runs tasks as
     * "<prefix>-s<i>" (weft/pool.h, "Stuck workers"): a pool thread too,
     * with no worker index. */
    if (strncmp(buf, nm->prefix, pl) == 0 && buf[pl] == '-' &&
        buf[pl + 1] == 's' && buf[pl + 2] >= '0' && buf[pl + 2] <= '9') {
        wt_sleep_ms(1);
        return NULL;
    }
    if (strncmp(buf, nm->prefix, pl) != 0 || buf[pl] != '-' ||
        buf[pl + 1] < '0' || buf[pl + 1] > '9') {
        fprintf(stderr, "worker name \"%s\", want \"%s-<i>\"\n", buf,
                nm->prefix);
        atomic_fetch_add(&nm->bad, 1);
        return NULL;
    }
    char *end = NULL;
    long idx = strtol(buf + pl + 1, &end, 10);
    if (*end != '\0') {
        fprintf(stderr, "worker name \"%s\", want \"%s-<i>\"\n", buf,
                nm->prefix);
        atomic_fetch_add(&nm->bad, 1);
        return NULL;
    }
    int cur = atomic_load(&nm->min_idx);
    while (idx < cur && !atomic_compare_exchange_weak(&nm->min_idx, &cur, (int)idx))
        ;
    cur = atomic_load(&nm->max_idx);
    while (idx > cur && !atomic_compare_exchange_weak(&nm->max_idx, &cur, (int)idx))
        ;
    wt_sleep_ms(1);
    return NULL;
}

static void check_names(weft_pool *p, unsigned n, const char *prefix)
{
    struct names nm;
    memset(&nm, 0, sizeof nm);
    snprintf(nm.prefix, sizeof nm.prefix, "%s", prefix);
    atomic_store(&nm.min_idx, 1 << 20);
    atomic_store(&nm.max_idx, -1);
    enum { K = 32 };
    weft_task *t[K];
    for (int i = 0; i < K; i++)
        assert_int_equal(weft_spawn(&t[i], p, read_name, &nm, NULL), 0);
    for (int i = 0; i < K; i++)
        assert_int_equal(weft_sync_wait(t[i], NULL), 0);
    assert_int_equal(atomic_load(&nm.bad), 0);
    int lo = atomic_load(&nm.min_idx), hi = atomic_load(&nm.max_idx);
    /* indices are 0..n-1 (or 1..n) */
    assert_true(lo >= 0 && hi >= lo);
    assert_true(hi < (int)n || (lo >= 1 && hi <= (int)n));
}

static void test_thread_names(void **state)
{
    unsigned n = WT_NTHREADS(state);

    /* the name is copied: scribbling over the caller's buffer after
     * create changes nothing */
    char name[8];
    strcpy(name, "wtp");
    weft_pool *p = wt_pool_named(n, name);
    memset(name, 'X', sizeof name - 1);
    check_names(p, n, "wtp");
    wt_destroy(p);

    /* NULL name: "weft-<i>" */
    p = wt_pool(n);
    check_names(p, n, "weft");
    wt_destroy(p);

    /* a name too long for a Linux thread name (15 bytes) still works */
    p = wt_pool_named(n, "a-pool-name-far-longer-than-fifteen-bytes");
    assert_int_equal(I(wt_run(p, ret_arg, P(5))), 5);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* stack_size option                                                    */

/* Touch `arg` bytes of stack: more than the 256 KiB default. */
static __attribute__((noinline)) void *use_stack(void *arg)
{
    size_t bytes = (size_t)I(arg);
    volatile char *buf = __builtin_alloca(bytes);
    for (size_t i = 0; i < bytes; i += 512)
        buf[i] = (char)(1 + (i >> 9) % 7);
    size_t sum = 0, want = 0;
    for (size_t i = 0; i < bytes; i += 512) {
        sum += (size_t)buf[i];
        want += 1 + (i >> 9) % 7;
    }
    return P(sum == want);
}

static void test_stack_size_option(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool_opts o = { .threads = n, .stack_size = 4u << 20, .name = "big" };
    weft_pool *p = NULL;
    assert_int_equal(weft_pool_create(&p, &o), 0);
    for (int i = 0; i < 8; i++)
        assert_int_equal(I(wt_run(p, use_stack, P(3u << 20))), 1);
    wt_destroy(p);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST1(test_create_defaults),
        WT_TEST(test_create_threads),
        WT_TEST1(test_create_einval),
        WT_TEST(test_current),
        WT_TEST(test_destroy_from_own_worker),
        WT_TEST(test_destroy_from_other_pool_task),
        WT_TEST(test_create_destroy_in_task),
        WT_TEST(test_shutdown_refuses),
        WT_TEST(test_destroy_drains),
        WT_TEST(test_destroy_idle),
        WT_TEST(test_destroy_now_when_drained),
        WT_TEST(test_thread_names),
        WT_TEST(test_stack_size_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
