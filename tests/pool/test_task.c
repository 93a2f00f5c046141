/*
 * test_task.c — weft/task.h: spawn, await, sync_wait, detach, schedule,
 * yield, and their error returns.
 *
 * Task bodies report through CHECK (see wt.h), never through cmocka asserts.
 */
#include <weft/inspect.h>
#include <weft/timer.h>

#include "wt.h"
#include "../live_limit.h"

static int sentinel_obj;
#define SENTINEL_TASK ((weft_task *)(void *)&sentinel_obj)
#define SENTINEL_VAL ((void *)&sentinel_obj)

static void *ret_arg(void *arg) { return arg; }
static void *times3(void *arg) { return P(I(arg) * 3); }

/* ------------------------------------------------------------------ */
/* spawn + await                                                        */

static void *await_children(void *arg)
{
    intptr_t k = I(arg);
    weft_pool *p = weft_pool_current();
    CHECK(p != NULL);
    weft_task **t = calloc((size_t)k, sizeof *t);
    CHECK(t != NULL);
    if (!t)
        return P(-1);
    for (intptr_t i = 0; i < k; i++)
        CHECK_EQ(weft_spawn(&t[i], p, times3, P(i), NULL), 0);
    intptr_t bad = 0;
    /* await in reverse order */
    for (intptr_t i = k - 1; i >= 0; i--) {
        void *r = P(-1);
        CHECK_EQ(weft_await(t[i], &r), 0);
        if (I(r) != 3 * i)
            bad++;
        CHECK_PTR_EQ(weft_pool_current(), p);
    }
    free(t);
    return P(bad);
}

static void test_spawn_await_values(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    /* from main: sync_wait each */
    weft_task *t[64];
    for (int i = 0; i < 64; i++)
        assert_int_equal(weft_spawn(&t[i], p, times3, P(i), NULL), 0);
    for (int i = 0; i < 64; i++) {
        void *r = P(-1);
        assert_int_equal(weft_sync_wait(t[i], &r), 0);
        assert_int_equal(I(r), 3 * i);
    }
    /* from a task: await each; result pointer may be NULL */
    assert_int_equal(I(wt_run(p, await_children, P(64))), 0);
    weft_task *u = NULL;
    assert_int_equal(weft_spawn(&u, p, times3, P(1), NULL), 0);
    assert_int_equal(weft_sync_wait(u, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* await of a task that has already ended returns at once. */
struct fin {
    atomic_int done;
    weft_task *t;
};

static void *fin_body(void *arg)
{
    struct fin *f = arg;
    atomic_store(&f->done, 1);
    return P(42);
}

static void *await_finished_on_main(void *arg)
{
    struct fin *f = arg;
    pthread_t me = wt_self();
    void *r = P(-1);
    CHECK_EQ(weft_await(f->t, &r), 0);
    CHECK_EQ(I(r), 42);
    /* it did not wait anywhere: still on the driving thread, no pool */
    CHECK(pthread_equal(wt_self(), me));
    CHECK(weft_pool_current() == NULL);
    return P(1);
}

static void *await_finished_in_pool(void *arg)
{
    weft_pool *p = weft_pool_current();
    struct fin f;
    atomic_store(&f.done, 0);
    CHECK_EQ(weft_spawn(&f.t, p, fin_body, &f, NULL), 0);
    while (!atomic_load(&f.done))
        CHECK_EQ(weft_yield(), 0);
    /* let it finish returning */
    wt_sleep_ms(5);
    void *r = P(-1);
    CHECK_EQ(weft_await(f.t, &r), 0);
    CHECK_EQ(I(r), 42);
    return arg;
}

static void test_await_finished(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    for (int i = 0; i < 20; i++) {
        struct fin f;
        atomic_store(&f.done, 0);
        assert_int_equal(weft_spawn(&f.t, p, fin_body, &f, NULL), 0);
        /* make sure it has ended: it set done, then sync_wait a helper
         * spawned after it, then a short sleep */
        while (!atomic_load(&f.done))
            sched_yield();
        assert_int_equal(I(wt_run(p, ret_arg, P(3))), 3);
        wt_sleep_ms(2);
        assert_int_equal(I(wt_run_lazy(await_finished_on_main, &f)), 1);
    }
    assert_int_equal(I(wt_run(p, await_finished_in_pool, P(9))), 9);
    /* a finished task can also be sync_waited */
    struct fin f;
    atomic_store(&f.done, 0);
    assert_int_equal(weft_spawn(&f.t, p, fin_body, &f, NULL), 0);
    while (!atomic_load(&f.done))
        sched_yield();
    wt_sleep_ms(2);
    void *r = NULL;
    assert_int_equal(weft_sync_wait(f.t, &r), 0);
    assert_int_equal(I(r), 42);
    wt_destroy(p);
    WT_CLEAN();
}

/* 100,000 spawned tasks awaited by one task. */
enum { MANY = WT_HEAVY(100000) };

static void *ret_index(void *arg) { return arg; }

static void *await_many(void *arg)
{
    (void)arg;
    weft_pool *p = weft_pool_current();
    weft_task **t = malloc(MANY * sizeof *t);
    CHECK(t != NULL);
    if (!t)
        return P(-1);
    long long sum = 0;
    int spawn_fail = 0, wrong = 0;
    for (intptr_t i = 0; i < MANY; i++)
        if (weft_spawn(&t[i], p, ret_index, P(i), NULL) != 0) {
            spawn_fail++;
            t[i] = NULL;
        }
    CHECK_EQ(spawn_fail, 0);
    for (intptr_t i = 0; i < MANY; i++) {
        if (!t[i])
            continue;
        void *r = NULL;
        CHECK_EQ(weft_await(t[i], &r), 0);
        if (I(r) != i)
            wrong++;
        sum += I(r);
    }
    CHECK_EQ(wrong, 0);
    free(t);
    return P(sum);
}

static void test_await_100k(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    long long want = (long long)MANY * (MANY - 1) / 2;
    assert_int_equal(I(wt_run(p, await_many, NULL)), want);
    wt_destroy(p);
    WT_CLEAN();
}

/* A 10,000-deep chain of lazy awaits on default stacks. */
enum { CHAIN = WT_LIVE(10000) };
static atomic_long chain_max;

static void *chain(void *arg)
{
    intptr_t d = I(arg);
    long cur = atomic_load(&chain_max);
    while (d > cur && !atomic_compare_exchange_weak(&chain_max, &cur, d))
        ;
    if (d == CHAIN - 1)
        return P(d);
    weft_task *t = NULL;
    int rc = weft_task_create(&t, chain, P(d + 1), NULL);
    CHECK_EQ(rc, 0);
    if (rc != 0)
        return P(-1);
    void *r = P(-1);
    CHECK_EQ(weft_await(t, &r), 0);
    return r;
}

static void test_lazy_chain(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    atomic_store(&chain_max, -1);
    assert_int_equal(I(wt_run(p, chain, P(0))), CHAIN - 1);
    assert_int_equal(atomic_load(&chain_max), CHAIN - 1);
    wt_destroy(p);
    WT_CLEAN();
}

/* The same chain, driven by sync_wait on main with no pool at all. */
static void test_lazy_chain_on_main(void **state)
{
    (void)state;
    atomic_store(&chain_max, -1);
    assert_int_equal(I(wt_run_lazy(chain, P(0))), CHAIN - 1);
    assert_int_equal(atomic_load(&chain_max), CHAIN - 1);
    WT_CLEAN();
}

/* A chain of spawned (eager) tasks, each awaiting the next: every waiter
 * holds its stack while suspended. */
enum { SPAWN_CHAIN = 2000 };

static void *spawn_chain(void *arg)
{
    intptr_t d = I(arg);
    if (d == 0)
        return P(0);
    weft_task *t = NULL;
    int rc = weft_spawn(&t, weft_pool_current(), spawn_chain, P(d - 1), NULL);
    CHECK_EQ(rc, 0);
    if (rc != 0)
        return P(-100000);
    void *r = P(-100000);
    CHECK_EQ(weft_await(t, &r), 0);
    return P(I(r) + 1);
}

static void test_spawn_chain(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    assert_int_equal(I(wt_run(p, spawn_chain, P(SPAWN_CHAIN))), SPAWN_CHAIN);
    wt_destroy(p);
    WT_CLEAN();
}

/* A lazy task awaited by a pool task runs on that pool: it may yield and
 * schedule like any task of the pool. */
static void *lazy_on_worker(void *arg)
{
    weft_pool *p = arg;
    CHECK_PTR_EQ(weft_pool_current(), p);
    CHECK_EQ(weft_yield(), 0);
    CHECK_PTR_EQ(weft_pool_current(), p);
    CHECK_EQ(weft_schedule(p), 0);
    CHECK_PTR_EQ(weft_pool_current(), p);
    return P(31);
}

static void *await_lazy_on_worker(void *arg)
{
    weft_pool *p = weft_pool_current();
    intptr_t sum = 0;
    for (int i = 0; i < 100; i++) {
        weft_task *t = NULL;
        CHECK_EQ(weft_task_create(&t, lazy_on_worker, p, NULL), 0);
        void *r = P(-1);
        CHECK_EQ(weft_await(t, &r), 0);
        sum += I(r);
        CHECK_PTR_EQ(weft_pool_current(), p);
    }
    return P(sum + I(arg));
}

static void test_lazy_awaited_on_worker(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    assert_int_equal(I(wt_run(p, await_lazy_on_worker, P(1))), 3101);
    wt_destroy(p);
    WT_CLEAN();
}

/* A task's stack is recycled the moment it ends: 50,000 finished tasks
 * whose handles are still held (not awaited) must not hold 50,000 stacks.
 * Each touches 16 KiB of its stack; held stacks would show as ~800 MB of
 * resident memory (and, with mprotect guards, 50,000+ mappings). */
/* 50,000 natively, a tenth under TSan and Valgrind (WT_HEAVY); 20,000
 * under ASan, where each task's 16 KiB frame is a fake frame of its own
 * (11 s for 50,000): kept, their stacks would still be twice the RSS bound
 * below. */
#ifdef WT_ASAN
enum { NFIN = 20000 };
#else
enum { NFIN = WT_HEAVY(50000) };
#endif
static atomic_int fin_count;
static weft_event fin_all;

static void *touch_stack_and_end(void *arg)
{
    volatile char buf[16384];
    for (unsigned i = 0; i < sizeof buf; i += 512)
        buf[i] = (char)i;
    if (atomic_fetch_add(&fin_count, 1) + 1 == NFIN)
        weft_event_set(&fin_all);
    return P(I(arg) + buf[512]);
}

static long proc_rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = strtol(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

static long proc_map_count(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    long n = 0;
    int c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static void test_finished_tasks_release_stacks(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    /* warm up: stack caches, record slabs */
    for (int i = 0; i < 100; i++)
        wt_run(p, ret_arg, NULL);
    atomic_store(&fin_count, 0);
    weft_event_init(&fin_all);
    weft_task **t = malloc(NFIN * sizeof *t);
    assert_non_null(t);
    long rss0 = proc_rss_kb(), maps0 = proc_map_count();
    assert_true(rss0 > 0 && maps0 > 0);
    for (intptr_t i = 0; i < NFIN; i++)
        assert_int_equal(weft_spawn(&t[i], p, touch_stack_and_end, P(i), NULL), 0);
    assert_int_equal(weft_event_wait(&fin_all), 0);
    wt_sleep_ms(20);
    long rss1 = proc_rss_kb(), maps1 = proc_map_count();
    if (rss1 - rss0 > 200 * 1024 || maps1 - maps0 > 5000)
        fprintf(stderr, "%d finished, unawaited tasks: RSS grew by %ld KiB, "
                "mappings by %ld\n", NFIN, rss1 - rss0, maps1 - maps0);
#ifdef WT_TSAN
    /* TSan's own memory (a fiber per stack, its shadow) is not the
     * runtime's: only the mapping count is meaningful there. */
    (void)rss1;
#else
    assert_true(rss1 - rss0 <= 200 * 1024);
#endif
    assert_true(maps1 - maps0 <= 5000);
    for (intptr_t i = 0; i < NFIN; i++) {
        void *r = NULL;
        assert_int_equal(weft_sync_wait(t[i], &r), 0);
        assert_int_equal(I(r), i + (char)512);
    }
    free(t);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Misuse                                                               */

static atomic_int lazy_runs;

static void *count_run(void *arg)
{
    atomic_fetch_add(&lazy_runs, 1);
    return arg;
}

static void *await_in_coro(void *arg)
{
    weft_task *t = arg;
    void *r = SENTINEL_VAL;
    int rc = weft_await(t, &r);
    CHECK_PTR_EQ(r, SENTINEL_VAL);
    return P(rc);
}

static void *thread_await(void *arg)
{
    weft_task *t = arg;
    void *r = SENTINEL_VAL;
    int rc = weft_await(t, &r);
    CHECK_PTR_EQ(r, SENTINEL_VAL);
    return P(rc);
}

/* weft_await outside a task: -EPERM, and the handle is not consumed. */
static void test_await_outside_task(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    atomic_store(&lazy_runs, 0);

    /* lazy, on main */
    weft_task *t = NULL;
    assert_int_equal(weft_task_create(&t, count_run, P(5), NULL), 0);
    void *r = SENTINEL_VAL;
    assert_int_equal(weft_await(t, &r), -EPERM);
    assert_ptr_equal(r, SENTINEL_VAL);
    assert_int_equal(atomic_load(&lazy_runs), 0); /* it did not start */
    assert_int_equal(weft_sync_wait(t, &r), 0);
    assert_int_equal(I(r), 5);
    assert_int_equal(atomic_load(&lazy_runs), 1);

    /* spawned, on main */
    assert_int_equal(weft_spawn(&t, p, count_run, P(6), NULL), 0);
    assert_int_equal(weft_await(t, &r), -EPERM);
    assert_int_equal(weft_sync_wait(t, &r), 0);
    assert_int_equal(I(r), 6);

    /* spawned, on another plain thread */
    assert_int_equal(weft_spawn(&t, p, count_run, P(7), NULL), 0);
    assert_int_equal(I(wt_join(wt_thread(thread_await, t))), -EPERM);
    assert_int_equal(weft_sync_wait(t, &r), 0);
    assert_int_equal(I(r), 7);

    /* in a standalone coroutine (not a task) */
    assert_int_equal(weft_task_create(&t, count_run, P(8), NULL), 0);
    weft_coro *co = NULL;
    assert_int_equal(weft_coro_create(&co, await_in_coro, NULL), 0);
    void *out = NULL;
    assert_int_equal(weft_coro_resume(co, t, &out), 0);
    assert_int_equal(I(out), -EPERM);
    assert_int_equal(weft_coro_destroy(co), 0);
    assert_int_equal(weft_sync_wait(t, &r), 0);
    assert_int_equal(I(r), 8);

    wt_destroy(p);
    WT_CLEAN();
}

/* weft_sync_wait inside a task: -EDEADLK, not consumed. */
static atomic_int lazy_started;

static void *mark_started(void *arg)
{
    atomic_store(&lazy_started, 1);
    return arg;
}

static void *sync_wait_in_task(void *arg)
{
    (void)arg;
    weft_pool *p = weft_pool_current();
    int bad = 0;

    weft_task *t = NULL;
    CHECK_EQ(weft_spawn(&t, p, times3, P(7), NULL), 0);
    void *r = SENTINEL_VAL;
    CHECK_EQ(weft_sync_wait(t, &r), -EDEADLK);
    CHECK_PTR_EQ(r, SENTINEL_VAL);
    CHECK_EQ(weft_await(t, &r), 0);
    CHECK_EQ(I(r), 21);

    atomic_store(&lazy_started, 0);
    CHECK_EQ(weft_task_create(&t, mark_started, P(4), NULL), 0);
    CHECK_EQ(weft_sync_wait(t, &r), -EDEADLK);
    CHECK_EQ(atomic_load(&lazy_started), 0);
    CHECK_EQ(weft_await(t, &r), 0);
    CHECK_EQ(I(r), 4);
    CHECK_EQ(atomic_load(&lazy_started), 1);
    return P(bad);
}

static void *sync_wait_in_coro(void *arg)
{
    weft_task *t = arg;
    void *r = SENTINEL_VAL;
    int rc = weft_sync_wait(t, &r);
    CHECK_PTR_EQ(r, SENTINEL_VAL);
    return P(rc);
}

static void test_sync_wait_in_task(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    assert_int_equal(I(wt_run(p, sync_wait_in_task, NULL)), 0);

    /* in a lazy task driven by sync_wait on main: it is a coroutine */
    weft_task *t = NULL;
    assert_int_equal(weft_spawn(&t, p, times3, P(2), NULL), 0);
    assert_int_equal(I(wt_run_lazy(sync_wait_in_coro, t)), -EDEADLK);
    void *r = NULL;
    assert_int_equal(weft_sync_wait(t, &r), 0);
    assert_int_equal(I(r), 6);

    /* in a standalone coroutine */
    assert_int_equal(weft_spawn(&t, p, times3, P(3), NULL), 0);
    weft_coro *co = NULL;
    assert_int_equal(weft_coro_create(&co, sync_wait_in_coro, NULL), 0);
    void *out = NULL;
    assert_int_equal(weft_coro_resume(co, t, &out), 0);
    assert_int_equal(I(out), -EDEADLK);
    assert_int_equal(weft_coro_destroy(co), 0);
    assert_int_equal(weft_sync_wait(t, &r), 0);
    assert_int_equal(I(r), 9);

    wt_destroy(p);
    WT_CLEAN();
}

/* NULL and out-of-range arguments. */
static void *null_args_in_task(void *arg)
{
    (void)arg;
    CHECK_EQ(weft_await(NULL, NULL), -EINVAL);
    void *r = SENTINEL_VAL;
    CHECK_EQ(weft_await(NULL, &r), -EINVAL);
    CHECK_PTR_EQ(r, SENTINEL_VAL);
    CHECK_EQ(weft_schedule(NULL), -EINVAL);
    /* in a task sync_wait(NULL) is refused either way */
    int rc = weft_sync_wait(NULL, NULL);
    CHECK(rc == -EINVAL || rc == -EDEADLK);
    return P(1);
}

static void test_null_args(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);

    weft_task *t = SENTINEL_TASK;
    assert_int_equal(weft_spawn(&t, NULL, ret_arg, NULL, NULL), -EINVAL);
    assert_ptr_equal(t, SENTINEL_TASK);
    assert_int_equal(weft_spawn(NULL, NULL, ret_arg, NULL, NULL), -EINVAL);
    assert_int_equal(weft_spawn(&t, p, NULL, NULL, NULL), -EINVAL);
    assert_ptr_equal(t, SENTINEL_TASK);
    assert_int_equal(weft_spawn(NULL, p, NULL, NULL, NULL), -EINVAL);

    assert_int_equal(weft_task_create(NULL, ret_arg, NULL, NULL), -EINVAL);
    assert_int_equal(weft_task_create(&t, NULL, NULL, NULL), -EINVAL);
    assert_ptr_equal(t, SENTINEL_TASK);
    weft_task_opts big = { .stack_size = ((size_t)1 << 30) + 4096 };
    assert_int_equal(weft_task_create(&t, ret_arg, NULL, &big), -EINVAL);
    assert_ptr_equal(t, SENTINEL_TASK);

    assert_int_equal(weft_sync_wait(NULL, NULL), -EINVAL);
    void *r = SENTINEL_VAL;
    assert_int_equal(weft_sync_wait(NULL, &r), -EINVAL);
    assert_ptr_equal(r, SENTINEL_VAL);
    assert_int_equal(weft_task_detach(NULL), -EINVAL);

    assert_int_equal(I(wt_run(p, null_args_in_task, NULL)), 1);
    wt_destroy(p);
    WT_CLEAN();
}

/* weft_await of the calling task itself: -EINVAL, not consumed. */
struct self_await {
    weft_event go;
    weft_task *self;
};

static void *await_self(void *arg)
{
    struct self_await *sa = arg;
    CHECK_EQ(weft_event_wait(&sa->go), 0);
    void *r = SENTINEL_VAL;
    int rc = weft_await(sa->self, &r);
    CHECK_PTR_EQ(r, SENTINEL_VAL);
    return P(rc);
}

static void test_await_self(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    struct self_await sa;
    weft_event_init(&sa.go);
    weft_task *t = NULL;
    assert_int_equal(weft_spawn(&t, p, await_self, &sa, NULL), 0);
    sa.self = t;
    weft_event_set(&sa.go);
    void *r = NULL;
    assert_int_equal(weft_sync_wait(t, &r), 0);
    assert_int_equal(I(r), -EINVAL);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* detach                                                               */

enum { NDETACH = WT_HEAVY(20000) };
static atomic_int detach_count;
static weft_event detach_done;

static void *detached_body(void *arg)
{
    (void)arg;
    if (atomic_fetch_add(&detach_count, 1) + 1 == NDETACH)
        weft_event_set(&detach_done);
    return NULL;
}

static void test_detach_all_run(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    atomic_store(&detach_count, 0);
    weft_event_init(&detach_done);
    for (int i = 0; i < NDETACH; i++) {
        if (i % 2) {
            assert_int_equal(weft_spawn(NULL, p, detached_body, NULL, NULL), 0);
        } else {
            weft_task *t = NULL;
            assert_int_equal(weft_spawn(&t, p, detached_body, NULL, NULL), 0);
            assert_int_equal(weft_task_detach(t), 0);
        }
    }
    assert_int_equal(weft_event_wait(&detach_done), 0);
    assert_int_equal(atomic_load(&detach_count), NDETACH);
    wt_destroy(p);
    assert_int_equal(atomic_load(&detach_count), NDETACH);
    WT_CLEAN();
}

static atomic_int never_count;

static void *never_body(void *arg)
{
    (void)arg;
    atomic_fetch_add(&never_count, 1);
    return NULL;
}

static void *detach_lazy_in_task(void *arg)
{
    (void)arg;
    weft_task *t = NULL;
    CHECK_EQ(weft_task_create(&t, never_body, NULL, NULL), 0);
    CHECK_EQ(weft_task_detach(t), 0);
    return NULL;
}

/* A detached lazy task that never ran is freed without running. */
static void test_detach_lazy_never_runs(void **state)
{
    unsigned n = WT_NTHREADS(state);
    atomic_store(&never_count, 0);
    for (int i = 0; i < 1000; i++) {
        weft_task *t = NULL;
        assert_int_equal(weft_task_create(&t, never_body, NULL, NULL), 0);
        assert_int_equal(weft_task_detach(t), 0);
    }
    weft_pool *p = wt_pool(n);
    for (int i = 0; i < 100; i++)
        wt_run(p, detach_lazy_in_task, NULL);
    wt_destroy(p);
    wt_sleep_ms(10);
    assert_int_equal(atomic_load(&never_count), 0);
    WT_CLEAN();
}

/* Detach of a finished task, of a running (blocked) one, from a task. */
struct det {
    weft_event go;
    atomic_int ran;
    weft_event ended;
};

static void *det_wait_go(void *arg)
{
    struct det *d = arg;
    CHECK_EQ(weft_event_wait(&d->go), 0);
    atomic_fetch_add(&d->ran, 1);
    weft_event_set(&d->ended);
    return NULL;
}

static void *det_fast(void *arg)
{
    struct det *d = arg;
    atomic_fetch_add(&d->ran, 1);
    return NULL;
}

static void *det_from_task(void *arg)
{
    struct det *d = arg;
    weft_task *t = NULL;
    CHECK_EQ(weft_spawn(&t, weft_pool_current(), det_wait_go, d, NULL), 0);
    CHECK_EQ(weft_task_detach(t), 0);
    return NULL;
}

static void test_detach_states(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    struct det d;

    /* finished */
    weft_event_init(&d.go);
    weft_event_init(&d.ended);
    atomic_store(&d.ran, 0);
    weft_task *t = NULL;
    assert_int_equal(weft_spawn(&t, p, det_fast, &d, NULL), 0);
    while (atomic_load(&d.ran) == 0)
        sched_yield();
    wt_sleep_ms(2);
    assert_int_equal(weft_task_detach(t), 0);

    /* running, blocked on an event */
    atomic_store(&d.ran, 0);
    assert_int_equal(weft_spawn(&t, p, det_wait_go, &d, NULL), 0);
    assert_int_equal(weft_task_detach(t), 0);
    weft_event_set(&d.go);
    assert_int_equal(weft_event_wait(&d.ended), 0);
    assert_int_equal(atomic_load(&d.ran), 1);

    /* from a task */
    weft_event_init(&d.go);
    weft_event_init(&d.ended);
    atomic_store(&d.ran, 0);
    wt_run(p, det_from_task, &d);
    weft_event_set(&d.go);
    assert_int_equal(weft_event_wait(&d.ended), 0);
    wt_destroy(p);
    assert_int_equal(atomic_load(&d.ran), 1);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* sync_wait                                                            */

struct hop {
    weft_pool *p;
    pthread_t caller;
    weft_event *ev;
};

/* Lazy: runs on the caller until it hops with weft_schedule. */
static void *hop_body(void *arg)
{
    struct hop *h = arg;
    CHECK(weft_pool_current() == NULL);
    CHECK(pthread_equal(wt_self(), h->caller));
    CHECK(weft_task_current() != NULL);
    CHECK(weft_coro_current() == NULL); /* a task is no weft_coro */
    CHECK_EQ(weft_schedule(h->p), 0);
    /* On the pool: on one of its threads, or on the caller in the place of
     * an idle worker (weft/task.h, weft_sync_wait). */
    CHECK_PTR_EQ(weft_pool_current(), h->p);
    return P(123);
}

static void test_sync_wait_lazy_hop(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    struct hop h = { .p = p, .caller = pthread_self() };
    for (int i = 0; i < 200; i++)
        assert_int_equal(I(wt_run_lazy(hop_body, &h)), 123);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* sync_wait lends the waiting thread to the pool (weft/task.h)          */

/* Until the pool's only worker has gone to sleep once: a fresh pool's
 * worker that never ran a task sleeps with no deadline, so from then on it
 * stays idle and lendable between round trips. */
static weft_pool *lend_pool(void)
{
    weft_pool *p = wt_pool(1);
    struct weft_worker_stats ws;
    do {
        sched_yield();
        ws.size = sizeof ws;
        assert_int_equal(weft_pool_worker_stats(p, 0, &ws), 0);
    } while (ws.parks == 0);
    return p;
}

static uint64_t worker_wakeups(weft_pool *p)
{
    struct weft_worker_stats ws = { .size = sizeof ws };
    assert_int_equal(weft_pool_worker_stats(p, 0, &ws), 0);
    return ws.wakeups;
}

static void *hop_stays(void *arg)
{
    struct hop *h = arg;
    CHECK_EQ(weft_schedule(h->p), 0);
    CHECK_PTR_EQ(weft_pool_current(), h->p);
    return P(pthread_equal(wt_self(), h->caller) ? 1 : 0);
}

/* With an idle worker and nothing of its own pending, every hop runs on
 * the caller in its place, and the worker is never woken.  (A hop that
 * makes memory, a stack or a chunk of records, wakes it once, so that its
 * trim gives that back: the first hop runs on another pool, and leaves
 * its stack and record in the caches for these.) */
static void test_sync_wait_lends(void **state)
{
    (void)state;
    weft_pool *p = lend_pool();
    struct hop h = { .p = p, .caller = pthread_self() };
    (void)wt_run_lazy(hop_stays, &h);
    wt_destroy(p);
    p = lend_pool();
    h.p = p;
    uint64_t wakeups = worker_wakeups(p);
    int stayed = 0;
    for (int i = 0; i < 100; i++)
        stayed += (int)I(wt_run_lazy(hop_stays, &h));
    assert_int_equal(stayed, 100);
    assert_int_equal(worker_wakeups(p), wakeups);
    wt_destroy(p);
    WT_CLEAN();
}

static void *set_event(void *arg)
{
    weft_event_set(arg);
    return NULL;
}

/* What the lent place was given: a spawned task left in its queue runs
 * once the place is given back (the worker is woken for it). */
static void *hop_spawn_detached(void *arg)
{
    struct hop *h = arg;
    CHECK_EQ(weft_schedule(h->p), 0);
    CHECK(pthread_equal(wt_self(), h->caller));
    CHECK_EQ(weft_spawn(NULL, h->p, set_event, h->ev, NULL), 0);
    return NULL;
}

/* A timer armed on the lent place's heap fires: the sleep parks the task,
 * the place goes back, and the worker is woken to keep the deadline. */
static void *hop_sleep(void *arg)
{
    struct hop *h = arg;
    CHECK_EQ(weft_schedule(h->p), 0);
    CHECK(pthread_equal(wt_self(), h->caller));
    CHECK_EQ(weft_sleep(1000000), 0);
    CHECK(!pthread_equal(wt_self(), h->caller));
    CHECK_PTR_EQ(weft_pool_current(), h->p);
    return P(7);
}

/* A yield gives the place back: the caller runs no other task. */
static void *hop_yield(void *arg)
{
    struct hop *h = arg;
    CHECK_EQ(weft_schedule(h->p), 0);
    CHECK(pthread_equal(wt_self(), h->caller));
    CHECK_EQ(weft_yield(), 0);
    CHECK(!pthread_equal(wt_self(), h->caller));
    return P(8);
}

/* A plain thread's spawn while the only worker is lent goes to the
 * global queue and wakes nobody (no worker is idle: the lent one counts
 * as busy).  Giving the place back must look there as a worker that
 * finishes a task does, or the spawned task waits for the next wake. */
struct outside {
    struct hop *h;
    atomic_int spawned;
};

static void *outside_spawn(void *arg)
{
    struct outside *o = arg;
    CHECK_EQ(weft_spawn(NULL, o->h->p, set_event, o->h->ev, NULL), 0);
    atomic_store(&o->spawned, 1);
    return NULL;
}

static void *hop_wait_outside_spawn(void *arg)
{
    struct outside *o = arg;
    CHECK_EQ(weft_schedule(o->h->p), 0);
    CHECK(pthread_equal(wt_self(), o->h->caller));
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, outside_spawn, o), 0);
    /* Keep the place (no suspension) until the spawn is queued. */
    while (!atomic_load(&o->spawned))
        ;
    CHECK_EQ(pthread_detach(th), 0);
    return NULL;
}

static void test_sync_wait_unlend_sees_global_queue(void **state)
{
    (void)state;
    for (int i = 0; i < 20; i++) {
        weft_pool *p = lend_pool();
        weft_event ev;
        weft_event_init(&ev);
        struct hop h = { .p = p, .caller = pthread_self(), .ev = &ev };
        struct outside o = { .h = &h };
        atomic_init(&o.spawned, 0);
        wt_run_lazy(hop_wait_outside_spawn, &o);
        assert_int_equal(weft_event_wait_for(&ev, 10000000000ull), 0);
        wt_destroy(p);
    }
    WT_CLEAN();
}

static void test_sync_wait_lent_place_given_back(void **state)
{
    (void)state;
    for (int i = 0; i < 20; i++) {
        weft_pool *p = lend_pool();
        weft_event ev;
        weft_event_init(&ev);
        struct hop h = { .p = p, .caller = pthread_self(), .ev = &ev };
        wt_run_lazy(hop_spawn_detached, &h);
        assert_int_equal(weft_event_wait(&ev), 0);
        wt_destroy(p);

        p = lend_pool();
        h.p = p;
        assert_int_equal(I(wt_run_lazy(hop_sleep, &h)), 7);
        wt_destroy(p);

        p = lend_pool();
        h.p = p;
        assert_int_equal(I(wt_run_lazy(hop_yield, &h)), 8);
        wt_destroy(p);
    }
    WT_CLEAN();
}

static void *nohop_body(void *arg)
{
    struct hop *h = arg;
    CHECK(weft_pool_current() == NULL);
    CHECK(pthread_equal(wt_self(), h->caller));
    CHECK(weft_task_current() != NULL);
    return P(456);
}

/* Lazy that never hops: runs entirely on the calling thread. */
static void test_sync_wait_lazy_no_hop(void **state)
{
    (void)state;
    struct hop h = { .p = NULL, .caller = pthread_self() };
    for (int i = 0; i < 1000; i++)
        assert_int_equal(I(wt_run_lazy(nohop_body, &h)), 456);
    assert_null(weft_coro_current());
    WT_CLEAN();
}

static void *spawned_body(void *arg)
{
    struct hop *h = arg;
    CHECK_PTR_EQ(weft_pool_current(), h->p);
    CHECK(!pthread_equal(wt_self(), h->caller));
    return P(789);
}

static void test_sync_wait_spawned(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    struct hop h = { .p = p, .caller = pthread_self() };
    for (int i = 0; i < 1000; i++)
        assert_int_equal(I(wt_run(p, spawned_body, &h)), 789);
    wt_destroy(p);
    WT_CLEAN();
}

/* 8 plain threads sync_waiting at once, 1000 tasks each. */
struct swt {
    weft_pool *p;
    int id;
    int bad;
};

static void *sw_thread(void *arg)
{
    struct swt *s = arg;
    struct hop h = { .p = s->p, .caller = pthread_self() };
    for (int i = 0; i < 1000; i++) {
        weft_task *t = NULL;
        void *r = NULL;
        intptr_t want;
        int rc;
        switch (i % 3) {
        case 0:
            rc = weft_spawn(&t, s->p, times3, P(s->id * 10000 + i), NULL);
            want = 3 * (s->id * 10000 + i);
            break;
        case 1:
            rc = weft_task_create(&t, hop_body, &h, NULL);
            want = 123;
            break;
        default:
            rc = weft_task_create(&t, nohop_body, &h, NULL);
            want = 456;
            break;
        }
        CHECK_EQ(rc, 0);
        if (rc != 0) {
            s->bad++;
            continue;
        }
        CHECK_EQ(weft_sync_wait(t, &r), 0);
        if (I(r) != want)
            s->bad++;
    }
    return NULL;
}

static void test_sync_wait_threads(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    struct swt s[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        s[i] = (struct swt){ .p = p, .id = i, .bad = 0 };
        th[i] = wt_thread(sw_thread, &s[i]);
    }
    for (int i = 0; i < 8; i++) {
        wt_join(th[i]);
        assert_int_equal(s[i].bad, 0);
    }
    wt_destroy(p);
    WT_CLEAN();
}

/* A lazy task driven by sync_wait awaits a spawned task: it suspends on
 * the driving thread, then continues and gets the value. */
static void *slow_value(void *arg)
{
    wt_sleep_ms(3);
    return arg;
}

static void *lazy_hops_then_value(void *arg)
{
    weft_pool *p = arg;
    CHECK_EQ(weft_schedule(p), 0);
    wt_sleep_ms(1);
    return P(55);
}

struct drv {
    weft_pool *p;
    pthread_t caller;
    int check_thread;
};

static void *driven_awaits(void *arg)
{
    struct drv *d = arg;
    intptr_t sum = 0;
    for (int i = 0; i < 10; i++) {
        weft_task *t = NULL;
        CHECK_EQ(weft_spawn(&t, d->p, slow_value, P(i), NULL), 0);
        void *r = P(-1);
        CHECK_EQ(weft_await(t, &r), 0);
        CHECK_EQ(I(r), i);
        sum += I(r);
        if (d->check_thread) {
            /* belongs to no pool: resumed on the sync_wait thread */
            CHECK(pthread_equal(wt_self(), d->caller));
            CHECK(weft_pool_current() == NULL);
        }
    }
    /* a lazy child that hops to the pool */
    weft_task *c = NULL;
    CHECK_EQ(weft_task_create(&c, lazy_hops_then_value, d->p, NULL), 0);
    void *r = P(-1);
    CHECK_EQ(weft_await(c, &r), 0);
    CHECK_EQ(I(r), 55);
    return P(sum);
}

static void test_sync_wait_lazy_awaits_spawned(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    struct drv d = { .p = p, .caller = pthread_self(), .check_thread = 0 };
    for (int k = 0; k < 5; k++)
        assert_int_equal(I(wt_run_lazy(driven_awaits, &d)), 45);
    wt_destroy(p);
    WT_CLEAN();
}

/* weft/task.h (sync_wait): "if it suspends while belonging to no
 * pool, it is resumed on this same thread when woken". */
static void test_sync_wait_lazy_resumes_on_caller(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    struct drv d = { .p = p, .caller = pthread_self(), .check_thread = 1 };
    for (int k = 0; k < 5; k++)
        assert_int_equal(I(wt_run_lazy(driven_awaits, &d)), 45);
    wt_destroy(p);
    WT_CLEAN();
}

/* A task of weft_sync_wait's thread on no pool starts a lazy child with
 * an await that gives up (a timeout), detaches it and returns: the child
 * runs on, on that thread alone, so weft_sync_wait returns only once it
 * has ended too (weft/task.h).  The child waits on an event that a thread
 * sets once the parent has returned, or sleeps on the driver's timer. */
struct orphan {
    weft_event ev;
    bool sleep;
    atomic_bool parent_returned;
    atomic_bool child_done;
    pthread_t caller;
};

static void *orphan_child(void *arg)
{
    struct orphan *o = arg;
    CHECK_EQ(o->sleep ? weft_sleep(MS(20)) : weft_event_wait(&o->ev), 0);
    CHECK(pthread_equal(pthread_self(), o->caller));
    atomic_store(&o->child_done, true);
    return NULL;
}

static void *orphan_parent(void *arg)
{
    struct orphan *o = arg;
    weft_task *t;
    CHECK_EQ(weft_task_create(&t, orphan_child, o, NULL), 0);
    CHECK_EQ(weft_await_for(t, NULL, MS(2)), -ETIMEDOUT);
    CHECK_EQ(weft_task_detach(t), 0);
    atomic_store(&o->parent_returned, true);
    return NULL;
}

static void *orphan_setter(void *arg)
{
    struct orphan *o = arg;
    while (!atomic_load(&o->parent_returned))
        sched_yield();
    weft_event_set(&o->ev);
    return NULL;
}

static void test_sync_wait_outlived_lazy_child(void **state)
{
    (void)state;
    for (int sleep = 0; sleep < 2; sleep++) {
        struct orphan o = {.sleep = sleep, .caller = pthread_self()};
        weft_event_init(&o.ev);
        pthread_t th = wt_thread(orphan_setter, &o);
        weft_task *t;
        assert_int_equal(weft_task_create(&t, orphan_parent, &o, NULL), 0);
        assert_int_equal(weft_sync_wait(t, NULL), 0);
        assert_true(atomic_load(&o.parent_returned));
        assert_true(atomic_load(&o.child_done));
        wt_join(th);
    }
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* schedule / yield                                                     */

static void *sched_errors_in_coro(void *arg)
{
    int rc = weft_schedule(NULL); /* both are wrong: either error */
    CHECK(rc == -EINVAL || rc == -EPERM);
    return P(weft_schedule((weft_pool *)arg) * 1000 + weft_yield());
}

static void *yield_in_lazy(void *arg)
{
    (void)arg;
    return P(weft_yield());
}

static void *sched_null_in_task(void *arg)
{
    (void)arg;
    weft_pool *p = weft_pool_current();
    CHECK_EQ(weft_schedule(NULL), -EINVAL);
    CHECK_PTR_EQ(weft_pool_current(), p);
    /* same pool: a yield */
    CHECK_EQ(weft_schedule(p), 0);
    CHECK_PTR_EQ(weft_pool_current(), p);
    CHECK_EQ(weft_yield(), 0);
    CHECK_PTR_EQ(weft_pool_current(), p);
    return P(1);
}

static void test_schedule_errors(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    int rc = weft_schedule(NULL); /* both are wrong: either error */
    assert_true(rc == -EINVAL || rc == -EPERM);
    assert_int_equal(weft_schedule(p), -EPERM);
    assert_int_equal(weft_yield(), -EPERM);

    /* standalone coroutine: not a task */
    weft_coro *co = NULL;
    assert_int_equal(weft_coro_create(&co, sched_errors_in_coro, NULL), 0);
    void *out = NULL;
    assert_int_equal(weft_coro_resume(co, p, &out), 0);
    assert_int_equal(I(out), -EPERM * 1000 + -EPERM);
    assert_int_equal(weft_coro_destroy(co), 0);

    /* a task on no pool may not yield */
    assert_int_equal(I(wt_run_lazy(yield_in_lazy, NULL)), -EPERM);

    assert_int_equal(I(wt_run(p, sched_null_in_task, NULL)), 1);
    wt_destroy(p);
    WT_CLEAN();
}

/* A task moves between two pools. */
struct two {
    weft_pool *a, *b;
};

static int name_has_prefix(const char *prefix)
{
    char buf[32] = { 0 };
    if (pthread_getname_np(pthread_self(), buf, sizeof buf) != 0)
        return 0;
    return strncmp(buf, prefix, strlen(prefix)) == 0;
}

static void *hop_between(void *arg)
{
    struct two *tw = arg;
    CHECK_PTR_EQ(weft_pool_current(), tw->a);
    for (int i = 0; i < 200; i++) {
        weft_pool *to = (i % 2) ? tw->a : tw->b;
        CHECK_EQ(weft_schedule(to), 0);
        CHECK_PTR_EQ(weft_pool_current(), to);
        CHECK(name_has_prefix(to == tw->a ? "pa-" : "pb-"));
    }
    return P(7);
}

static void test_schedule_two_pools(void **state)
{
    unsigned n = WT_NTHREADS(state);
    struct two tw;
    tw.a = wt_pool_named(n, "pa");
    tw.b = wt_pool_named(n, "pb");
    for (int i = 0; i < 5; i++)
        assert_int_equal(I(wt_run(tw.a, hop_between, &tw)), 7);
    wt_destroy(tw.a);
    wt_destroy(tw.b);
    WT_CLEAN();
}

/* Yield round-robin on a 1-thread pool. */
enum { YROUNDS = 1000, YMAX = 3 };

struct ylog {
    atomic_int len;
    unsigned char log[YMAX * YROUNDS];
};

struct yarg {
    struct ylog *lg;
    int id;
};

static void *yielder(void *arg)
{
    struct yarg *y = arg;
    for (int i = 0; i < YROUNDS; i++) {
        int k = atomic_fetch_add(&y->lg->len, 1);
        y->lg->log[k] = (unsigned char)y->id;
        CHECK_EQ(weft_yield(), 0);
    }
    return NULL;
}

struct yroot {
    int ntasks;
    struct ylog *lg;
};

static void *yield_root(void *arg)
{
    struct yroot *yr = arg;
    struct yarg ya[YMAX];
    weft_task *t[YMAX];
    for (int i = 0; i < yr->ntasks; i++) {
        ya[i] = (struct yarg){ .lg = yr->lg, .id = i };
        CHECK_EQ(weft_spawn(&t[i], weft_pool_current(), yielder, &ya[i], NULL), 0);
    }
    for (int i = 0; i < yr->ntasks; i++)
        CHECK_EQ(weft_await(t[i], NULL), 0);
    return NULL;
}

/* While every task is alive (from the first index at which all have
 * appeared to the last entry of the first one to finish), between two
 * entries of one task every other task appears exactly once. */
static void check_round_robin(const struct ylog *lg, int k)
{
    int len = atomic_load(&lg->len);
    assert_int_equal(len, k * YROUNDS);
    int first[YMAX], last[YMAX];
    for (int i = 0; i < k; i++)
        first[i] = -1, last[i] = -1;
    for (int i = 0; i < len; i++) {
        int id = lg->log[i];
        if (first[id] < 0)
            first[id] = i;
        last[id] = i;
    }
    int start = 0, end = len - 1;
    for (int i = 0; i < k; i++) {
        assert_true(first[i] >= 0);
        if (first[i] > start)
            start = first[i];
        if (last[i] < end)
            end = last[i];
    }
    assert_true(end - start > k * (YROUNDS - 10)); /* they did overlap */
    for (int i = start + k; i <= end; i++) {
        if (lg->log[i] != lg->log[i - k]) {
            fprintf(stderr, "round-robin broken at log[%d]:", i);
            for (int j = i - k - 4 < 0 ? 0 : i - k - 4; j <= i + 4 && j < len; j++)
                fprintf(stderr, " %d", lg->log[j]);
            fprintf(stderr, "\n");
            fail();
        }
    }
    for (int i = start; i + k - 1 <= end && i < start + k; i++) {
        /* the first window holds each task once */
        unsigned seen = 0;
        for (int j = i; j < i + k; j++)
            seen |= 1u << lg->log[j];
        assert_int_equal(seen, (1u << k) - 1);
    }
}

static void test_yield_round_robin(void **state)
{
    (void)state;
    weft_pool *p = wt_pool(1);
    for (int k = 2; k <= 3; k++) {
        struct ylog *lg = calloc(1, sizeof *lg);
        assert_non_null(lg);
        struct yroot yr = { .ntasks = k, .lg = lg };
        wt_run(p, yield_root, &yr);
        check_round_robin(lg, k);
        free(lg);
    }
    /* spawned from main one after the other: alternation once both run */
    struct ylog *lg = calloc(1, sizeof *lg);
    assert_non_null(lg);
    struct yarg ya[2] = { { lg, 0 }, { lg, 1 } };
    weft_task *t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(weft_spawn(&t[i], p, yielder, &ya[i], NULL), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(weft_sync_wait(t[i], NULL), 0);
    /* no overlap assertion here: the first may finish before the second
     * is spawned; check alternation wherever both were alive */
    int len = atomic_load(&lg->len), first1 = -1, last0 = -1, first0 = -1,
        last1 = -1;
    for (int i = 0; i < len; i++) {
        if (lg->log[i] == 0) {
            if (first0 < 0)
                first0 = i;
            last0 = i;
        } else {
            if (first1 < 0)
                first1 = i;
            last1 = i;
        }
    }
    int s = first0 > first1 ? first0 : first1;
    int e = last0 < last1 ? last0 : last1;
    for (int i = s + 1; i <= e; i++)
        assert_int_not_equal(lg->log[i], lg->log[i - 1]);
    free(lg);
    wt_destroy(p);
    WT_CLEAN();
}

/* Yield on n threads lets a task waiting in a queue run (no starvation
 * while another task yields in a loop). */
static atomic_int flag_set;

static void *set_flag(void *arg)
{
    (void)arg;
    atomic_store(&flag_set, 1);
    return NULL;
}

static void *yield_until_flag(void *arg)
{
    (void)arg;
    weft_task *t = NULL;
    CHECK_EQ(weft_spawn(&t, weft_pool_current(), set_flag, NULL, NULL), 0);
    long spins = 0;
    while (!atomic_load(&flag_set)) {
        CHECK_EQ(weft_yield(), 0);
        if (++spins > 100000000L) {
            CHECK(!"yield starved the queued task");
            break;
        }
    }
    CHECK_EQ(weft_await(t, NULL), 0);
    return NULL;
}

static void test_yield_lets_queued_run(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    for (int i = 0; i < 100; i++) {
        atomic_store(&flag_set, 0);
        wt_run(p, yield_until_flag, NULL);
    }
    wt_destroy(p);
    WT_CLEAN();
}


/* ------------------------------------------------------------------ */
/* Rooms: weft_task_create_with, weft_task_start, weft_task_join        */

/* A job that lives in its task's room: the body checks what its creator
 * wrote, may yield (and so move), and leaves its answer beside it. */
struct job {
    uint64_t seed;
    uint64_t words[5];
    uint64_t out;
    uint32_t yields;
};
_Static_assert(sizeof(struct job) <= WEFT_TASK_ROOM, "a job fits the room");

static void job_fill(struct job *j, uint64_t seed, uint32_t yields)
{
    j->seed = seed;
    for (int i = 0; i < 5; i++)
        j->words[i] = seed * 31 + (uint64_t)i;
    j->out = 0;
    j->yields = yields;
}

static void *job_body(void *arg)
{
    struct job *j = arg;
    uint64_t sum = 0;
    for (uint32_t k = 0; k < j->yields; k++)
        (void)weft_yield(); /* -EPERM on no pool: then it just goes on */
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(j->words[i], j->seed * 31 + (uint64_t)i);
        sum += j->words[i];
        j->words[i] = ~j->words[i];
    }
    j->out = sum;
    return P(j->seed + 1);
}

static uint64_t job_sum(uint64_t seed)
{
    uint64_t sum = 0;
    for (int i = 0; i < 5; i++)
        sum += seed * 31 + (uint64_t)i;
    return sum;
}

static void job_check_done(const struct job *j, uint64_t seed)
{
    CHECK_EQ(j->out, job_sum(seed));
    for (int i = 0; i < 5; i++)
        CHECK_EQ(j->words[i], ~(seed * 31 + (uint64_t)i));
}

static weft_task *job_start(weft_pool *p, uint64_t seed, uint32_t yields,
                            struct job **jp)
{
    weft_task *t = NULL;
    void *room = NULL;
    CHECK_EQ(weft_task_create_with(&t, job_body, sizeof(struct job), &room,
                                   NULL), 0);
    CHECK((uintptr_t)room % _Alignof(max_align_t) == 0);
    job_fill(room, seed, yields);
    if (p)
        CHECK_EQ(weft_task_start(t, p), 0);
    *jp = room;
    return t;
}

/* Many rooms alive at once, each its own: the bodies run (and move between
 * workers) while others are made and filled; a room that overlapped
 * another, or a field the scheduler writes, would fail a check.  (500
 * under TSan and Valgrind: tests/live_limit.h.) */
#define ROOMS WT_LIVE(2000)

static void test_room_many(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    static weft_task *t[ROOMS];
    static struct job *j[ROOMS];
    for (int i = 0; i < ROOMS; i++)
        t[i] = job_start(p, (uint64_t)i * 7919u, (uint32_t)(i % 3), &j[i]);
    for (int i = 0; i < ROOMS; i++) {
        assert_int_equal(weft_task_join(t[i]), 0);
        job_check_done(j[i], (uint64_t)i * 7919u);
        /* Joined: joining again, and then consuming, return at once. */
        assert_int_equal(weft_task_join(t[i]), 0);
        if (i % 2) {
            assert_int_equal(weft_task_detach(t[i]), 0);
        } else {
            void *r = NULL;
            assert_int_equal(weft_sync_wait(t[i], &r), 0);
            assert_int_equal(I(r), (intptr_t)i * 7919 + 1);
        }
    }
    wt_destroy(p);
    WT_CLEAN();
}

/* In a task: a started room task joined at once (on one worker it is the
 * newest entry of our deque, and runs inline), a lazy one joined (it
 * starts here), then each awaited for its value. */
static void *room_joins_in_task(void *arg)
{
    (void)arg;
    struct job *a, *b;
    weft_task *ta = job_start(weft_pool_current(), 11, 0, &a);
    weft_task *tb = job_start(NULL, 12, 1, &b);
    CHECK_EQ(weft_task_start(tb, NULL), -EINVAL); /* refused: still lazy */
    CHECK_EQ(weft_task_join(ta), 0);
    job_check_done(a, 11);
    CHECK_EQ(weft_task_join(tb), 0);
    job_check_done(b, 12);
    CHECK_EQ(weft_task_start(tb, weft_pool_current()), -EINVAL); /* ran */
    void *r = NULL;
    CHECK_EQ(weft_await(ta, &r), 0);
    CHECK_EQ(I(r), 12);
    CHECK_EQ(weft_await(tb, &r), 0);
    CHECK_EQ(I(r), 13);
    return P(1);
}

static void test_room_join_in_task(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    assert_int_equal(I(wt_run(p, room_joins_in_task, NULL)), 1);
    wt_destroy(p);
    WT_CLEAN();
}

/* A lazy room task joined on a plain thread runs on this thread, then is
 * waited for at once. */
static void test_room_join_lazy_plain(void **state)
{
    (void)state;
    struct job *j;
    weft_task *t = job_start(NULL, 5, 2, &j);
    assert_int_equal(weft_task_join(t), 0);
    job_check_done(j, 5);
    void *r = NULL;
    assert_int_equal(weft_sync_wait(t, &r), 0);
    assert_int_equal(I(r), 6);
    WT_CLEAN();
}

/* A room larger than WEFT_TASK_ROOM: memory of its own, aligned too,
 * whole, freed with the record (ASan's leak check watches the detaches,
 * one of a task that never ran). */
#define BIG_ROOM 4096

static void *big_body(void *arg)
{
    unsigned char *b = arg;
    unsigned sum = 0;
    for (size_t i = 0; i < BIG_ROOM; i++) {
        CHECK_EQ(b[i], (unsigned char)i);
        sum += b[i];
        b[i] = (unsigned char)(255 - b[i]);
    }
    return P(sum);
}

static void test_room_big(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_task *t;
    void *room = NULL;
    assert_int_equal(weft_task_create_with(&t, big_body, BIG_ROOM, &room,
                                           NULL), 0);
    assert_true((uintptr_t)room % _Alignof(max_align_t) == 0);
    unsigned char *b = room;
    unsigned want = 0;
    for (size_t i = 0; i < BIG_ROOM; i++) {
        b[i] = (unsigned char)i;
        want += (unsigned char)i;
    }
    assert_int_equal(weft_task_start(t, p), 0);
    assert_int_equal(weft_task_join(t), 0);
    for (size_t i = 0; i < BIG_ROOM; i++)
        if (b[i] != (unsigned char)(255 - (unsigned char)i))
            fail_msg("room byte %zu is %u", i, b[i]);
    void *r = NULL;
    assert_int_equal(weft_sync_wait(t, &r), 0);
    assert_int_equal(I(r), want);
    /* Never started, detached: freed with its room at once. */
    assert_int_equal(weft_task_create_with(&t, big_body, BIG_ROOM, &room,
                                           NULL), 0);
    assert_int_equal(weft_task_detach(t), 0);
    /* Started and detached: its room lives until it ends. */
    assert_int_equal(weft_task_create_with(&t, big_body, BIG_ROOM, &room,
                                           NULL), 0);
    for (size_t i = 0; i < BIG_ROOM; i++)
        ((unsigned char *)room)[i] = (unsigned char)i;
    assert_int_equal(weft_task_start(t, p), 0);
    assert_int_equal(weft_task_detach(t), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* weft_spawn_with and weft_task_take: the room filled inside the spawn,
 * the outcome moved out of it inside the take. */
struct job_args {
    uint64_t seed;
    uint32_t yields;
};

static int job_fill_cb(void *room, void *arg)
{
    const struct job_args *a = arg;
    job_fill(room, a->seed, a->yields);
    return 0;
}

/* What a take saw: the room's job, copied, and how often it was called. */
struct took {
    struct job job;
    void *result;
    int calls;
};

static void job_take_cb(void *room, void *result, void *arg)
{
    struct took *k = arg;
    k->job = *(const struct job *)room;
    k->result = result;
    k->calls++;
}

static weft_task *job_spawn(weft_pool *p, uint64_t seed, uint32_t yields)
{
    struct job_args a = {seed, yields};
    weft_task *t = NULL;
    CHECK_EQ(weft_spawn_with(&t, p, job_body, sizeof(struct job),
                             job_fill_cb, &a, NULL), 0);
    CHECK(t != NULL);
    return t;
}

static void job_take_check(weft_task *t, uint64_t seed)
{
    struct took k = {.calls = 0};
    CHECK_EQ(weft_task_take(t, job_take_cb, &k), 0);
    CHECK_EQ(k.calls, 1);
    CHECK_EQ((uint64_t)(uintptr_t)k.result, seed + 1); /* job_body's value */
    job_check_done(&k.job, seed);
}

/* A fork-join task: on one worker each take runs its child inline (take
 * right after the body), on more a thief may have it (take after the
 * wait); every other child is joined first (take at once). */
#define TAKES 2000

static void *spawn_with_fork_join(void *arg)
{
    (void)arg;
    weft_pool *p = weft_pool_current();
    weft_task *t[16];
    for (uint64_t round = 0; round < TAKES / 16; round++) {
        for (uint64_t k = 0; k < 16; k++)
            t[k] = job_spawn(p, round * 16 + k, (uint32_t)(k % 3 == 0));
        for (uint64_t k = 0; k < 16; k++) {
            if (k % 2)
                CHECK_EQ(weft_task_join(t[k]), 0);
            job_take_check(t[k], round * 16 + k);
        }
    }
    return P(1);
}

static void test_spawn_with_take_in_task(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    assert_int_equal(I(wt_run(p, spawn_with_fork_join, NULL)), 1);
    wt_destroy(p);
    WT_CLEAN();
}

/* From a plain thread: take waits as sync_wait does; a lazy room task
 * starts on this thread. */
static void test_spawn_with_take_plain(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    static weft_task *t[ROOMS];
    for (int i = 0; i < ROOMS; i++)
        t[i] = job_spawn(p, (uint64_t)i * 31u, (uint32_t)(i % 3));
    for (int i = 0; i < ROOMS; i++)
        job_take_check(t[i], (uint64_t)i * 31u);
    struct job *j;
    weft_task *lazy = job_start(NULL, 77, 1, &j);
    job_take_check(lazy, 77);
    wt_destroy(p);
    WT_CLEAN();
}

/*
 * weft_spawn_copy: an argument by value.  A header and every size of
 * bytes after it from 0 to COPY_SIZES - 1 (the word copy, its tail, rooms
 * in a record and on the heap), each from a buffer the caller overwrites
 * as soon as the spawn returns: the body finds its own bytes and leaves
 * their sum in the header, and the room is the same one before and after
 * the join (weft_task_room).
 */
#define COPY_SIZES 130

struct copied {
    size_t size; /* the argument's bytes after this header */
    uint64_t sum;
    unsigned char bytes[COPY_SIZES];
};

static unsigned char copy_byte(size_t size, size_t i)
{
    return (unsigned char)(size * 7 + i * 13 + 1);
}

static void *copy_body(void *room)
{
    struct copied *c = room;
    uint64_t sum = 0;
    for (size_t i = 0; i < c->size; i++) {
        CHECK_EQ(c->bytes[i], copy_byte(c->size, i));
        sum += c->bytes[i];
    }
    if (c->size % 5 == 0)
        CHECK_EQ(weft_yield(), 0);
    c->sum = sum;
    return P(c->size);
}

static void *copy_none(void *room)
{
    CHECK(room != NULL);
    return NULL;
}

static void copy_take(void *room, void *result, void *arg)
{
    struct copied *c = room;
    CHECK_EQ((size_t)(uintptr_t)result, c->size); /* copy_body's value */
    *(uint64_t *)arg = c->sum;
}

static void copy_round(weft_pool *p, bool join_first)
{
    static weft_task *t[COPY_SIZES];
    static void *rooms[COPY_SIZES];
    struct copied c;
    for (size_t n = 0; n < COPY_SIZES; n++) {
        c.size = n;
        c.sum = 0;
        for (size_t i = 0; i < n; i++)
            c.bytes[i] = copy_byte(n, i);
        CHECK_EQ(weft_spawn_copy(&t[n], p, copy_body, &c,
                                 offsetof(struct copied, bytes) + n, NULL),
                 0);
        memset(&c, 0xee, sizeof c); /* the task has its own copy */
        rooms[n] = weft_task_room(t[n]);
        CHECK(rooms[n] != NULL);
        CHECK_EQ((uintptr_t)rooms[n] % _Alignof(max_align_t), 0);
    }
    for (size_t n = 0; n < COPY_SIZES; n++) {
        uint64_t want = 0, got = ~(uint64_t)0;
        for (size_t i = 0; i < n; i++)
            want += copy_byte(n, i);
        if (join_first) {
            CHECK_EQ(weft_task_join(t[n]), 0);
            CHECK_PTR_EQ(weft_task_room(t[n]), rooms[n]);
            CHECK_EQ(((struct copied *)rooms[n])->sum, want);
        }
        CHECK_EQ(weft_task_take(t[n], copy_take, &got), 0);
        CHECK_EQ(got, want);
    }
}

static void *spawn_copy_in_task(void *arg)
{
    (void)arg;
    copy_round(weft_pool_current(), false);
    copy_round(weft_pool_current(), true);
    return P(1);
}

static void test_spawn_copy(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    for (int round = 0; round < 4; round++) {
        copy_round(p, round % 2);
        assert_int_equal(I(wt_run(p, spawn_copy_in_task, NULL)), 1);
    }
    /* A room of no bytes: fn gets a room all the same. */
    weft_task *t;
    assert_int_equal(weft_spawn_copy(&t, p, copy_none, NULL, 0, NULL), 0);
    assert_true(weft_task_room(t) != NULL);
    assert_int_equal(weft_task_detach(t), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* A room larger than WEFT_TASK_ROOM, filled and taken through the calls;
 * a fill that refuses leaves nothing behind (ASan's leak check). */
static int big_fill(void *room, void *arg)
{
    (void)arg;
    for (size_t i = 0; i < BIG_ROOM; i++)
        ((unsigned char *)room)[i] = (unsigned char)i;
    return 0;
}

static int big_refuse(void *room, void *arg)
{
    (void)room;
    (void)arg;
    return -EIO;
}

static void big_take(void *room, void *result, void *arg)
{
    (void)result;
    const unsigned char *b = room;
    size_t *bad = arg;
    for (size_t i = 0; i < BIG_ROOM; i++)
        if (b[i] != (unsigned char)(255 - (unsigned char)i))
            (*bad)++;
}

static void test_spawn_with_big(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_task *t = NULL;
    assert_int_equal(weft_spawn_with(&t, p, big_body, BIG_ROOM, big_refuse,
                                     NULL, NULL), -EIO);
    assert_null(t);
    assert_int_equal(weft_spawn_with(&t, p, big_body, BIG_ROOM, big_fill,
                                     NULL, NULL), 0);
    size_t bad = 0;
    assert_int_equal(weft_task_take(t, big_take, &bad), 0);
    assert_int_equal(bad, 0);
    /* Detached: its room lives until it ends. */
    assert_int_equal(weft_spawn_with(&t, p, big_body, BIG_ROOM, big_fill,
                                     NULL, NULL), 0);
    assert_int_equal(weft_task_detach(t), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/*
 * A fill that refuses while the pool is being destroyed: its arrival kept
 * the pool from draining when the workers last looked, and its leave must
 * wake them to look again, or the destroy waits for ever (the watchdog).
 * The fill, on a thread outside the pool, says it runs, then probes the
 * pool with refused spawns (no task runs: the workers stay asleep with no
 * deadline, which a task's memory would arm) until one says the destroy
 * began, waits for the workers to have looked, and refuses.
 */
struct refusing_fill {
    weft_pool *p;
    atomic_int in_fill;
};

static int refuse_at_once(void *room, void *arg)
{
    (void)room;
    (void)arg;
    return -EIO;
}

static uint64_t worker_parks(weft_pool *p, unsigned i)
{
    struct weft_worker_stats st = {.size = sizeof st};
    CHECK_EQ(weft_pool_worker_stats(p, i, &st), 0);
    return st.parks;
}

static int fill_until_shutdown(void *room, void *arg)
{
    (void)room;
    struct refusing_fill *f = arg;
    atomic_store(&f->in_fill, 1);
    int rc;
    weft_task *t = NULL;
    while ((rc = weft_spawn_with(&t, f->p, job_body, sizeof(struct job),
                                 refuse_at_once, NULL, NULL)) == -EIO)
        sched_yield();
    CHECK_EQ(rc, -ESHUTDOWN);
    /* The window: each worker parks again (and finds the pool not
     * drained: this arrival) before the refusal.  A worker asleep already
     * parks no more, hence the bound. */
    unsigned n = weft_pool_threads(f->p);
    uint64_t seen[8];
    for (unsigned i = 0; i < n && i < 8; i++)
        seen[i] = worker_parks(f->p, i);
    uint64_t until = wt_now_ns() + MS(20);
    for (unsigned i = 0; i < n && i < 8; i++)
        while (worker_parks(f->p, i) == seen[i] && wt_now_ns() < until)
            sched_yield();
    return -EIO;
}

static void *spawn_with_refusing(void *arg)
{
    struct refusing_fill *f = arg;
    weft_task *t = NULL;
    CHECK_EQ(weft_spawn_with(&t, f->p, job_body, sizeof(struct job),
                             fill_until_shutdown, f, NULL), -EIO);
    CHECK(t == NULL);
    return NULL;
}

static void test_spawn_with_refused_while_destroyed(void **state)
{
    for (int round = 0; round < 50; round++) {
        struct refusing_fill f = {.p = wt_pool(WT_NTHREADS(state))};
        atomic_init(&f.in_fill, 0);
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, spawn_with_refusing, &f),
                         0);
        while (!atomic_load(&f.in_fill))
            sched_yield();
        wt_destroy(f.p); /* returns once the refused arrival has left */
        assert_int_equal(pthread_join(th, NULL), 0);
    }
    WT_CLEAN();
}

/* weft_task_start queues a lazy task exactly as weft_spawn would: it runs
 * on the pool (not here) without anyone waiting for it. */
static void *note_pool(void *arg)
{
    atomic_store((_Atomic(weft_pool *) *)arg, weft_pool_current());
    return NULL;
}

static void test_task_start_runs_on_pool(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    _Atomic(weft_pool *) seen = NULL;
    weft_task *t;
    assert_int_equal(weft_task_create(&t, note_pool, &seen, NULL), 0);
    assert_int_equal(weft_task_start(t, p), 0);
    assert_int_equal(weft_task_start(t, p), -EINVAL);
    uint64_t until = wt_now_ns() + MS(60000);
    while (!atomic_load(&seen) && wt_now_ns() < until)
        sched_yield();
    assert_ptr_equal(atomic_load(&seen), p);
    assert_int_equal(weft_sync_wait(t, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* an ended task's handle outlives its run record                       */

/* Spawn and await many trivial tasks, so that the run records that ended
 * tasks gave back are made into new tasks: named ones, so that a name
 * read from a record made anew would show. */
static void *churn(void *arg)
{
    weft_pool *p = weft_pool_current();
    weft_task_opts o = {.name = "churn"};
    for (intptr_t i = 0; i < I(arg); i++) {
        weft_task *t[16];
        for (int k = 0; k < 16; k++)
            CHECK_EQ(weft_spawn(&t[k], p, times3, P(k), &o), 0);
        for (int k = 0; k < 16; k++) {
            void *r = NULL;
            CHECK_EQ(weft_await(t[k], &r), 0);
            CHECK_EQ(I(r), 3 * k);
        }
    }
    return NULL;
}

/*
 * A task that ended with its handle held gives its run record back
 * (docs/design.md, "Memory"); what the handle promises stays: its result,
 * its id, its name ("task", or the one it was given), an await or a
 * detach.  Ended tasks of each kind, then churn that makes their records
 * into other tasks, then every call on the old handles.
 */
static void test_ended_handles_outlive_run_records(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    enum { N = 64 };
    weft_task *plain[N], *named[N], *lazy[N];
    uint64_t ids[3][N];
    weft_task_opts o = {.name = "kept"};
    for (int i = 0; i < N; i++) {
        assert_int_equal(weft_spawn(&plain[i], p, times3, P(i), NULL), 0);
        assert_int_equal(weft_spawn(&named[i], p, times3, P(i), &o), 0);
        assert_int_equal(weft_task_create(&lazy[i], times3, P(i), NULL), 0);
        assert_int_equal(weft_task_start(lazy[i], p), 0);
        ids[0][i] = weft_task_id(plain[i]);
        ids[1][i] = weft_task_id(named[i]);
        ids[2][i] = weft_task_id(lazy[i]);
    }
    /* Ended, handles kept. */
    for (int i = 0; i < N; i++) {
        assert_int_equal(weft_task_join(plain[i]), 0);
        assert_int_equal(weft_task_join(named[i]), 0);
        assert_int_equal(weft_task_join(lazy[i]), 0);
    }
    weft_task *c;
    assert_int_equal(weft_spawn(&c, p, churn, P(2000), NULL), 0);
    assert_int_equal(weft_sync_wait(c, NULL), 0);
    for (int i = 0; i < N; i++) {
        assert_int_equal(weft_task_id(plain[i]), ids[0][i]);
        assert_int_equal(weft_task_id(named[i]), ids[1][i]);
        assert_int_equal(weft_task_id(lazy[i]), ids[2][i]);
        assert_string_equal(weft_task_name(plain[i]), "task");
        assert_string_equal(weft_task_name(named[i]), "kept");
        /* Cancelling an ended task does nothing. */
        assert_int_equal(weft_task_cancel(plain[i]), 0);
        void *r = NULL;
        assert_int_equal(weft_sync_wait(plain[i], &r), 0);
        assert_int_equal(I(r), 3 * i);
        assert_int_equal(weft_sync_wait(named[i], &r), 0);
        assert_int_equal(I(r), 3 * i);
        if (i % 2)
            assert_int_equal(weft_task_detach(lazy[i]), 0);
        else {
            assert_int_equal(weft_sync_wait(lazy[i], &r), 0);
            assert_int_equal(I(r), 3 * i);
        }
    }
    wt_destroy(p);
    WT_CLEAN();
}

/* weft_task_cancel holds the task's run record while it looks at it: a
 * cancel racing the task's end, over and over, from main and from a task,
 * must neither touch a record given back (ThreadSanitizer, ASan) nor
 * lose the result. */
static void *cancel_racer(void *arg)
{
    weft_pool *p = weft_pool_current();
    for (intptr_t i = 0; i < I(arg); i++) {
        weft_task *t;
        CHECK_EQ(weft_spawn(&t, p, times3, P(i), NULL), 0);
        CHECK_EQ(weft_task_cancel(t), 0);
        void *r = NULL;
        CHECK_EQ(weft_await(t, &r), 0);
        CHECK_EQ(I(r), 3 * i);
    }
    return NULL;
}

static void test_cancel_races_end(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_task *racer;
    assert_int_equal(weft_spawn(&racer, p, cancel_racer, P(20000), NULL), 0);
    for (int i = 0; i < 2000; i++) {
        weft_task *t;
        assert_int_equal(weft_spawn(&t, p, times3, P(i), NULL), 0);
        assert_int_equal(weft_task_cancel(t), 0);
        void *r = NULL;
        assert_int_equal(weft_sync_wait(t, &r), 0);
        assert_int_equal(I(r), 3 * i);
    }
    assert_int_equal(weft_sync_wait(racer, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* Failures (weft_task_fail): a box that counts its drops.  arg: the
 * value, and in bit 30 whether the body yields first (so that it ends
 * after its spawner's next step, or before it). */
#define FAIL_YIELD ((intptr_t)1 << 30)
static atomic_int g_fail_drops;

struct fail_box {
    struct weft_failure base;
    intptr_t v;
};

static void fail_drop(struct weft_failure *f)
{
    atomic_fetch_add(&g_fail_drops, 1);
    free(f);
}

static void *fail_body(void *arg)
{
    if (I(arg) & FAIL_YIELD)
        CHECK_EQ(weft_yield(), 0);
    struct fail_box *b = malloc(sizeof *b);
    CHECK(b != NULL);
    b->base.drop = fail_drop;
    b->v = I(arg) & ~FAIL_YIELD;
    CHECK_EQ(weft_task_fail(), 0);
    return b;
}

/* A consumed failure is the consumer's: check its value, drop it. */
static void fail_check(void *r, intptr_t v)
{
    struct fail_box *b = r;
    CHECK(b != NULL);
    CHECK_EQ(b->v, v);
    b->base.drop(&b->base);
}

/* weft_task_result says which it was; weft_await hands the box over as
 * the result.  In a task (a child not started runs inline) and from a
 * plain thread. */
static void *fail_results(void *arg)
{
    weft_pool *p = arg;
    for (intptr_t i = 0; i < 200; i++) {
        intptr_t y = i & 1 ? FAIL_YIELD : 0;
        weft_task *t;
        void *r = NULL;
        CHECK_EQ(weft_spawn(&t, p, fail_body, P(i | y), NULL), 0);
        CHECK_EQ(weft_task_result(t, &r), WEFT_TASK_FAILED);
        fail_check(r, i);
        CHECK_EQ(weft_spawn(&t, p, times3, P(i), NULL), 0);
        CHECK_EQ(weft_task_result(t, &r), 0);
        CHECK_EQ(I(r), 3 * i);
        CHECK_EQ(weft_spawn(&t, p, fail_body, P(i | y), NULL), 0);
        CHECK_EQ(weft_await(t, &r), 0);
        fail_check(r, i);
        /* No result asked for: weft drops it. */
        CHECK_EQ(weft_spawn(&t, p, fail_body, P(i | y), NULL), 0);
        CHECK_EQ(weft_await(t, NULL), 0);
    }
    return NULL;
}

static void test_fail_result(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    atomic_store(&g_fail_drops, 0);
    weft_task *root;
    assert_int_equal(weft_spawn(&root, p, fail_results, p, NULL), 0);
    assert_int_equal(weft_sync_wait(root, NULL), 0);
    assert_int_equal(atomic_load(&g_fail_drops), 600);
    for (intptr_t i = 0; i < 100; i++) {
        weft_task *t;
        void *r = NULL;
        assert_int_equal(weft_spawn(&t, p, fail_body, P(i), NULL), 0);
        assert_int_equal(weft_task_result(t, &r), WEFT_TASK_FAILED);
        fail_check(r, i);
        assert_int_equal(weft_spawn(&t, p, times3, P(i), NULL), 0);
        assert_int_equal(weft_task_result(t, &r), 0);
        assert_int_equal(I(r), 3 * i);
        assert_int_equal(weft_spawn(&t, p, fail_body, P(i), NULL), 0);
        assert_int_equal(weft_sync_wait(t, NULL), 0);
    }
    assert_int_equal(atomic_load(&g_fail_drops), 800);
    wt_destroy(p);
    WT_CLEAN();
}

/* A failure nobody will consume is dropped once, by whichever of the
 * detach and the end comes second: detached at once (the end usually
 * second), after a join (the detach second), or never held (weft_spawn
 * with out NULL); a task that did not fail has nothing dropped. */
static void test_fail_detach_drops_once(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    atomic_store(&g_fail_drops, 0);
    int want = 0;
    for (intptr_t i = 0; i < 3000; i++) {
        intptr_t y = (i >> 1) & 1 ? FAIL_YIELD : 0;
        weft_task *t;
        switch (i % 4) {
        case 0:
            assert_int_equal(weft_spawn(&t, p, fail_body, P(i | y), NULL), 0);
            assert_int_equal(weft_task_detach(t), 0);
            break;
        case 1:
            assert_int_equal(weft_spawn(&t, p, fail_body, P(i | y), NULL), 0);
            assert_int_equal(weft_task_join(t), 0);
            assert_int_equal(weft_task_detach(t), 0);
            break;
        case 2:
            assert_int_equal(weft_spawn(NULL, p, fail_body, P(i | y), NULL), 0);
            break;
        default:
            assert_int_equal(weft_spawn(&t, p, times3, P(i), NULL), 0);
            assert_int_equal(weft_task_detach(t), 0);
            want--;
            break;
        }
        want++;
    }
    /* The pool's end waits for the detached tasks. */
    wt_destroy(p);
    assert_int_equal(atomic_load(&g_fail_drops), want);
    WT_CLEAN();
}

/* One waiter at a time (weft/task.h): while a task waits for a spawned
 * task, a second waiter, in a task or on a plain thread, gets -EBUSY at
 * once and the handle is as it was; the first still sees the end. */
static weft_event g_one_started, g_one_release, g_one_busy;
static weft_task *g_one_target;

static void *one_target(void *arg)
{
    weft_event_set(&g_one_started);
    CHECK_EQ(weft_event_wait(&g_one_release), 0);
    return arg;
}

static void *one_joiner(void *arg)
{
    (void)arg;
    int rc = weft_task_join(g_one_target);
    if (rc == -EBUSY)
        weft_event_set(&g_one_busy);
    return P(rc);
}

static void test_second_waiter_busy(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_event_init(&g_one_started);
    weft_event_init(&g_one_release);
    weft_event_init(&g_one_busy);
    assert_int_equal(weft_spawn(&g_one_target, p, one_target, P(42), NULL), 0);
    /* Started, so that no joiner runs it inline (that joiner would not be
     * in the waiter slot). */
    assert_int_equal(weft_event_wait(&g_one_started), 0);
    weft_task *j[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(weft_spawn(&j[i], p, one_joiner, NULL, NULL), 0);
    /* One joiner is in the slot once the other has been refused. */
    assert_int_equal(weft_event_wait(&g_one_busy), 0);
    assert_int_equal(weft_task_join(g_one_target), -EBUSY);
    void *r = NULL;
    weft_task *t2 = g_one_target;
    assert_int_equal(weft_sync_wait(t2, &r), -EBUSY);
    assert_ptr_equal(r, NULL);
    weft_event_set(&g_one_release);
    int rc[2];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(weft_sync_wait(j[i], &r), 0);
        rc[i] = (int)I(r);
    }
    assert_true((rc[0] == 0 && rc[1] == -EBUSY) ||
                (rc[0] == -EBUSY && rc[1] == 0));
    /* The handle is untouched: join, then consume. */
    assert_int_equal(weft_task_join(g_one_target), 0);
    assert_int_equal(weft_sync_wait(g_one_target, &r), 0);
    assert_int_equal(I(r), 42);
    wt_destroy(p);
    WT_CLEAN();
}

/* An awaiter resumes on its own pool (weft/task.h, weft_await) when the
 * lazy task it started moved to another pool and ended there. */
static weft_pool *g_home, *g_away;

static void *moves_away(void *arg)
{
    (void)arg;
    CHECK_EQ(weft_schedule(g_away), 0);
    return weft_pool_current();
}

static void *awaits_mover(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20; i++) {
        weft_task *t;
        CHECK_EQ(weft_task_create(&t, moves_away, NULL, NULL), 0);
        void *r = NULL;
        CHECK_EQ(weft_await(t, &r), 0);
        CHECK(r == g_away);                      /* it ended there */
        CHECK(weft_pool_current() == g_home);    /* we are back home */
    }
    return NULL;
}

static void test_await_lazy_mover_resumes_home(void **state)
{
    g_home = wt_pool(WT_NTHREADS(state));
    g_away = wt_pool(WT_NTHREADS(state));
    wt_run(g_home, awaits_mover, NULL);
    wt_destroy(g_home);
    wt_destroy(g_away);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST(test_spawn_await_values),
        WT_TEST(test_await_finished),
        WT_TEST(test_await_100k),
        WT_TEST_SLOW(test_lazy_chain),
        WT_TEST1(test_lazy_chain_on_main),
        WT_TEST(test_spawn_chain),
        WT_TEST(test_lazy_awaited_on_worker),
        WT_TEST_SLOW(test_finished_tasks_release_stacks),
        WT_TEST(test_await_outside_task),
        WT_TEST(test_sync_wait_in_task),
        WT_TEST(test_null_args),
        WT_TEST(test_await_self),
        WT_TEST(test_detach_all_run),
        WT_TEST(test_detach_lazy_never_runs),
        WT_TEST1(test_sync_wait_outlived_lazy_child),
        WT_TEST(test_detach_states),
        WT_TEST(test_sync_wait_lazy_hop),
        WT_TEST1(test_sync_wait_lazy_no_hop),
        WT_TEST1(test_sync_wait_lends),
        WT_TEST1(test_sync_wait_lent_place_given_back),
        WT_TEST1(test_sync_wait_unlend_sees_global_queue),
        WT_TEST(test_sync_wait_spawned),
        WT_TEST(test_sync_wait_threads),
        WT_TEST(test_sync_wait_lazy_awaits_spawned),
        WT_TEST(test_sync_wait_lazy_resumes_on_caller),
        WT_TEST(test_schedule_errors),
        WT_TEST(test_schedule_two_pools),
        WT_TEST1(test_yield_round_robin),
        WT_TEST(test_yield_lets_queued_run),
        WT_TEST(test_room_many),
        WT_TEST(test_room_join_in_task),
        WT_TEST1(test_room_join_lazy_plain),
        WT_TEST(test_room_big),
        WT_TEST(test_spawn_with_take_in_task),
        WT_TEST(test_spawn_with_take_plain),
        WT_TEST(test_spawn_with_big),
        WT_TEST(test_spawn_copy),
        WT_TEST(test_spawn_with_refused_while_destroyed),
        WT_TEST(test_task_start_runs_on_pool),
        WT_TEST(test_ended_handles_outlive_run_records),
        WT_TEST(test_cancel_races_end),
        WT_TEST(test_second_waiter_busy),
        WT_TEST(test_fail_result),
        WT_TEST(test_fail_detach_drops_once),
        WT_TEST(test_await_lazy_mover_resumes_home),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
