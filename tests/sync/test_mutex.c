/*
 * test_mutex.c — weft_mutex: semantics in each context, ownership, the
 * order of listed waiters, barging and its bound (the hand-off after
 * 1 ms), timeouts and cancellation.  The 10,000-task contention test is
 * in stress_sync.c.
 *
 * Task bodies report through CHECK (tests/check.h), never cmocka asserts.
 */
#include "st.h"

/* ------------------------------------------------------------------ */
/* Semantics, the same in a plain thread, a lazy task and a pool task   */

static void basic_semantics(void)
{
    weft_mutex m;
    weft_mutex_init(&m);
    CHECK_EQ(weft_mutex_unlock(&m), -EPERM); /* never locked */
    CHECK_EQ(weft_mutex_lock(&m), 0);
    CHECK_EQ(weft_mutex_trylock(&m), -EAGAIN);
    CHECK_EQ(weft_mutex_lock(&m), -EDEADLK);
    CHECK_EQ(weft_mutex_lock_for(&m, MS(1)), -EDEADLK);
    CHECK_EQ(weft_mutex_unlock(&m), 0);
    CHECK_EQ(weft_mutex_unlock(&m), -EPERM); /* twice */
    CHECK_EQ(weft_mutex_trylock(&m), 0);
    CHECK_EQ(weft_mutex_unlock(&m), 0);
    CHECK_EQ(weft_mutex_lock_for(&m, 0), 0);
    CHECK_EQ(weft_mutex_unlock(&m), 0);
    CHECK_EQ(weft_mutex_lock_for(&m, MS(10)), 0);
    CHECK_EQ(weft_mutex_unlock(&m), 0);

    CHECK_EQ(weft_mutex_lock(NULL), -EINVAL);
    CHECK_EQ(weft_mutex_lock_for(NULL, 5), -EINVAL);
    CHECK_EQ(weft_mutex_trylock(NULL), -EINVAL);
    CHECK_EQ(weft_mutex_unlock(NULL), -EINVAL);
    weft_mutex_init(NULL);
}

static void test_basic(void **state)
{
    st_everywhere(state, basic_semantics);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Ownership: a task is not the thread that holds it, and vice versa     */

struct own {
    weft_mutex m;
    weft_event locked, release;
};

/* Held by the main thread: a task may not unlock or take it. */
static void *not_the_owner(void *arg)
{
    weft_mutex *m = arg;
    CHECK_EQ(weft_mutex_unlock(m), -EPERM);
    CHECK_EQ(weft_mutex_trylock(m), -EAGAIN);
    uint64_t t0 = wt_now_ns();
    CHECK_EQ(weft_mutex_lock_for(m, MS(20)), -ETIMEDOUT);
    CHECK(wt_now_ns() - t0 >= MS(20));
    CHECK_EQ(weft_mutex_lock_for(m, 0), -ETIMEDOUT);
    return NULL;
}

/* Locks, then holds it across suspensions (it may move between workers)
 * until released; only then unlocks. */
static void *owner_task(void *arg)
{
    struct own *o = arg;
    CHECK_EQ(weft_mutex_lock(&o->m), 0);
    for (int i = 0; i < 20; i++)
        CHECK_EQ(weft_yield(), 0);
    weft_event_set(&o->locked);
    CHECK_EQ(weft_event_wait(&o->release), 0);
    CHECK_EQ(weft_sleep(MS(1)), 0);
    CHECK_EQ(weft_mutex_unlock(&o->m), 0);
    return NULL;
}

static void *plain_not_owner(void *arg)
{
    weft_mutex *m = arg;
    CHECK_EQ(weft_mutex_unlock(m), -EPERM);
    CHECK_EQ(weft_mutex_trylock(m), -EAGAIN);
    CHECK_EQ(weft_mutex_lock_for(m, MS(5)), -ETIMEDOUT);
    return NULL;
}

static void test_ownership(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    struct own o;
    weft_mutex_init(&o.m);
    weft_event_init(&o.locked);
    weft_event_init(&o.release);

    assert_int_equal(weft_mutex_lock(&o.m), 0);
    wt_run(p, not_the_owner, &o.m);
    wt_join(wt_thread(plain_not_owner, &o.m)); /* another thread */
    assert_int_equal(weft_mutex_unlock(&o.m), 0); /* unchanged: still ours */

    weft_task *t = st_spawn(p, owner_task, &o);
    assert_int_equal(weft_event_wait(&o.locked), 0);
    assert_int_equal(weft_mutex_unlock(&o.m), -EPERM);
    assert_int_equal(weft_mutex_trylock(&o.m), -EAGAIN);
    wt_run(p, not_the_owner, &o.m); /* another task */
    weft_event_set(&o.release);
    st_join(t);
    assert_int_equal(weft_mutex_trylock(&o.m), 0);
    assert_int_equal(weft_mutex_unlock(&o.m), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* A child that its parent's await runs on the parent's stack is a task of
 * its own, not its parent, to the mutex: it does not hold what its parent
 * holds (it unlocked the parent's mutex with 0, and its lock said
 * -EDEADLK).  One worker, and the child spawned by the awaiter: the await
 * runs it inline. */
static weft_mutex inline_m;
static weft_cond inline_c;

static void *inline_child(void *arg)
{
    (void)arg;
    CHECK_EQ(weft_mutex_unlock(&inline_m), -EPERM);
    CHECK_EQ(weft_mutex_trylock(&inline_m), -EAGAIN);
    CHECK_EQ(weft_cond_wait_for(&inline_c, &inline_m, MS(1)), -EPERM);
    return NULL;
}

static void *inline_parent(void *arg)
{
    (void)arg;
    weft_pool *p = weft_pool_current();
    CHECK_EQ(weft_mutex_lock(&inline_m), 0);
    weft_task *t;
    CHECK_EQ(weft_spawn(&t, p, inline_child, NULL, NULL), 0);
    CHECK_EQ(weft_await(t, NULL), 0);
    CHECK_EQ(weft_mutex_unlock(&inline_m), 0); /* still the parent's */
    return NULL;
}

static void test_inline_child_is_not_owner(void **state)
{
    (void)state;
    weft_pool *p = wt_pool(1);
    weft_mutex_init(&inline_m);
    weft_cond_init(&inline_c);
    wt_run(p, inline_parent, NULL);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Order: listed waiters get the mutex in the order they came            */

#define FIFO_N 6

struct fifo {
    weft_mutex m;
    int order[FIFO_N];
    int next; /* under m */
};

struct fifo_arg {
    struct fifo *f;
    int id;
};

static void *fifo_waiter(void *arg)
{
    struct fifo_arg *a = arg;
    CHECK_EQ(weft_mutex_lock(&a->f->m), 0);
    a->f->order[a->f->next++] = a->id;
    /* A switch while holding it: the next waiter may run meanwhile, and
     * must still not get it out of turn. */
    CHECK_EQ(weft_yield(), 0);
    CHECK_EQ(weft_mutex_unlock(&a->f->m), 0);
    return NULL;
}

static void test_fifo(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    struct fifo f = {.next = 0};
    struct fifo_arg args[FIFO_N];
    weft_task *ts[FIFO_N];
    weft_mutex_init(&f.m);
    assert_int_equal(weft_mutex_lock(&f.m), 0);
    for (int i = 0; i < FIFO_N; i++) {
        args[i] = (struct fifo_arg){&f, i};
        ts[i] = st_spawn(p, fifo_waiter, &args[i]);
        st_await_parked(ts[i]); /* listed before the next one comes */
    }
    assert_int_equal(st_listed(ST_Q(&f.m)), FIFO_N);
    assert_int_equal(weft_mutex_unlock(&f.m), 0);
    for (int i = 0; i < FIFO_N; i++)
        st_join(ts[i]);
    assert_int_equal(f.next, FIFO_N);
    for (int i = 0; i < FIFO_N; i++)
        assert_int_equal(f.order[i], i);
    assert_int_equal(weft_mutex_trylock(&f.m), 0);
    assert_int_equal(weft_mutex_unlock(&f.m), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Barging: a running locker may take a mutex whose waiter was woken but */
/* has not run yet; and it is the woken waiter that gets it next         */

struct barge {
    weft_mutex m;
    atomic_bool spinning, release, got;
};

static void *barge_waiter(void *arg)
{
    struct barge *b = arg;
    CHECK_EQ(weft_mutex_lock(&b->m), 0);
    atomic_store(&b->got, true);
    CHECK_EQ(weft_mutex_unlock(&b->m), 0);
    return NULL;
}

/* Keeps the pool's one worker until released, with no scheduling point:
 * a task woken meanwhile waits in its queue. */
static void *barge_spinner(void *arg)
{
    struct barge *b = arg;
    atomic_store(&b->spinning, true);
    uint64_t until = wt_now_ns() + MS(60000);
    while (!atomic_load(&b->release) && wt_now_ns() < until)
        ;
    return NULL;
}

/* On p (one worker): this thread holds b->m, a task waits for it, and a
 * spinner keeps the worker; then this thread unlocks (the waiter is woken
 * into the busy worker's queue) and, running, takes the mutex again.
 * *w and *sp: the waiter and the spinner. */
static void barge_past_woken(weft_pool *p, struct barge *b, weft_task **w,
                             weft_task **sp)
{
    weft_mutex_init(&b->m);
    assert_int_equal(weft_mutex_lock(&b->m), 0);
    *w = st_spawn(p, barge_waiter, b);
    st_await_parked(*w); /* listed: its wait counts from here */
    *sp = st_spawn(p, barge_spinner, b);
    while (!atomic_load(&b->spinning))
        sched_yield();
    assert_int_equal(weft_mutex_unlock(&b->m), 0);
    assert_int_equal(weft_mutex_trylock(&b->m), 0);
}

static void test_barging(void **state)
{
    (void)state;
    weft_pool *p = wt_pool(1);
    struct barge b = {.spinning = false};
    weft_task *w, *sp;
    /* The waiter is woken into the busy worker's queue: the mutex is
     * free, and this thread, running, takes it. */
    barge_past_woken(p, &b, &w, &sp);
    assert_false(atomic_load(&b.got));
    /* The waiter is woken already: this unlock wakes nobody else, and
     * the waiter, run, takes it. */
    assert_int_equal(weft_mutex_unlock(&b.m), 0);
    atomic_store(&b.release, true);
    st_join(sp);
    st_join(w);
    assert_true(atomic_load(&b.got));
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* No starvation: a woken waiter that loses the race after waiting more */
/* than 1 ms turns the mutex over to hand-off: the holder's next unlock */
/* gives it to that waiter, and the holder cannot take it back          */

static void test_hand_off_after_starving(void **state)
{
    (void)state;
    weft_pool *p = wt_pool(1);
    struct barge b = {.spinning = false};
    weft_task *w, *sp;
    /* Woken into the busy worker's queue; this thread barges. */
    barge_past_woken(p, &b, &w, &sp);
    /* The waiter has waited 2 ms when it runs (a wait for elapsed time,
     * which is the condition here), finds the mutex held, and lists
     * itself again, starving. */
    uint64_t t0 = wt_now_ns();
    while (wt_now_ns() - t0 < MS(2))
        sched_yield();
    atomic_store(&b.release, true);
    st_join(sp);
    st_await_listed(ST_Q(&b.m), 1);
    assert_false(atomic_load(&b.got));
    /* Handed to the waiter: not free for this thread any more. */
    assert_int_equal(weft_mutex_unlock(&b.m), 0);
    assert_int_equal(weft_mutex_trylock(&b.m), -EAGAIN);
    st_join(w);
    assert_true(atomic_load(&b.got));
    /* Served, and nobody listed: barging again. */
    assert_int_equal(weft_mutex_trylock(&b.m), 0);
    assert_int_equal(weft_mutex_unlock(&b.m), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Timeouts and cancellation                                            */

struct blocked {
    weft_mutex *m;
    _Atomic int returned;
};

static void *lock_blocked(void *arg)
{
    struct blocked *b = arg;
    int rc = weft_mutex_lock(b->m);
    atomic_store(&b->returned, 1);
    if (rc == 0)
        CHECK_EQ(weft_mutex_unlock(b->m), 0);
    return P(rc);
}

static void *lock_for_blocked(void *arg)
{
    struct blocked *b = arg;
    uint64_t t0 = wt_now_ns();
    int rc = weft_mutex_lock_for(b->m, MS(30));
    CHECK(wt_now_ns() - t0 >= MS(30));
    return P(rc);
}

static void test_cancel(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_mutex m;
    weft_mutex_init(&m);
    assert_int_equal(weft_mutex_lock(&m), 0);

    struct blocked b = {.m = &m};
    weft_task *t = st_spawn(p, lock_blocked, &b);
    st_await_parked(t);
    assert_int_equal(weft_task_cancel(t), 0);
    assert_int_equal(st_join(t), -ECANCELED);
    /* It did not get the mutex, and took nothing from it. */
    assert_int_equal(weft_mutex_unlock(&m), 0);
    assert_int_equal(weft_mutex_trylock(&m), 0);

    /* A timed lock times out while the main thread holds it. */
    t = st_spawn(p, lock_for_blocked, &b);
    assert_int_equal(st_join(t), -ETIMEDOUT);

    /* A waiter that gave up does not swallow the next unlock: the one
     * behind it gets the mutex. */
    struct blocked b2 = {.m = &m};
    t = st_spawn(p, lock_blocked, &b);
    st_await_parked(t);
    weft_task *t2 = st_spawn(p, lock_blocked, &b2);
    st_await_parked(t2);
    assert_int_equal(weft_task_cancel(t), 0);
    assert_int_equal(st_join(t), -ECANCELED);
    assert_int_equal(atomic_load(&b2.returned), 0);
    assert_int_equal(weft_mutex_unlock(&m), 0);
    assert_int_equal(st_join(t2), 0);
    assert_int_equal(weft_mutex_trylock(&m), 0);
    assert_int_equal(weft_mutex_unlock(&m), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* A cancelled task still takes a free mutex (cancellation is seen only by
 * a call that would wait), and a contended one returns -ECANCELED at
 * once. */
static void *cancelled_body(void *arg)
{
    weft_mutex *m = arg;
    CHECK_EQ(weft_mutex_lock_for(m, MS(10000)), -ECANCELED);
    CHECK_EQ(weft_mutex_lock(m), -ECANCELED);
    CHECK_EQ(weft_mutex_trylock(m), -EAGAIN);
    return NULL;
}

static void *cancelled_free_body(void *arg)
{
    weft_mutex *m = arg;
    CHECK_EQ(weft_mutex_lock(m), 0);
    CHECK_EQ(weft_mutex_unlock(m), 0);
    return NULL;
}

static void test_cancelled_before(void **state)
{
    (void)state;
    weft_mutex m;
    weft_mutex_init(&m);
    weft_task *t;
    assert_int_equal(weft_task_create(&t, cancelled_free_body, &m, NULL), 0);
    assert_int_equal(weft_task_cancel(t), 0);
    st_join(t); /* lazy: runs here, cancelled from the start */

    assert_int_equal(weft_mutex_lock(&m), 0);
    assert_int_equal(weft_task_create(&t, cancelled_body, &m, NULL), 0);
    assert_int_equal(weft_task_cancel(t), 0);
    uint64_t t0 = wt_now_ns();
    st_join(t);
    assert_true(wt_now_ns() - t0 < MS(5000));
    assert_int_equal(weft_mutex_unlock(&m), 0);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Plain threads and tasks on one mutex                                  */

struct mixed {
    weft_mutex m;
    long counter;       /* plain: only ever touched with m held */
    unsigned iters;
};

static void bump(struct mixed *x, bool in_task)
{
    for (unsigned i = 0; i < x->iters; i++) {
        CHECK_EQ(weft_mutex_lock(&x->m), 0);
        long c = x->counter;
        if (in_task && i % 8 == 0)
            CHECK_EQ(weft_yield(), 0); /* hold it across a suspension */
        else
            wt_spin(20);
        x->counter = c + 1;
        CHECK_EQ(weft_mutex_unlock(&x->m), 0);
    }
}

static void *bump_task(void *arg)
{
    bump(arg, true);
    return NULL;
}

static void *bump_thread(void *arg)
{
    bump(arg, false);
    return NULL;
}

static void test_threads_and_tasks(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    struct mixed x = {.counter = 0, .iters = st_scaled(2000)};
    weft_mutex_init(&x.m);
    enum { TASKS = 8, THREADS = 2 };
    weft_task *ts[TASKS];
    pthread_t th[THREADS];
    for (int i = 0; i < TASKS; i++)
        ts[i] = st_spawn(p, bump_task, &x);
    for (int i = 0; i < THREADS; i++)
        th[i] = wt_thread(bump_thread, &x);
    for (int i = 0; i < TASKS; i++)
        st_join(ts[i]);
    for (int i = 0; i < THREADS; i++)
        wt_join(th[i]);
    assert_int_equal(x.counter, (long)(TASKS + THREADS) * x.iters);
    assert_int_equal(weft_mutex_trylock(&x.m), 0);
    assert_int_equal(weft_mutex_unlock(&x.m), 0);
    wt_destroy(p);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST(test_basic),
        WT_TEST(test_ownership),
        WT_TEST1(test_inline_child_is_not_owner),
        WT_TEST(test_fifo),
        WT_TEST1(test_barging),
        WT_TEST1(test_hand_off_after_starving),
        WT_TEST(test_cancel),
        WT_TEST1(test_cancelled_before),
        WT_TEST(test_threads_and_tasks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
