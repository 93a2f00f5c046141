/*
 * test_blocking.c — weft_blocking: where fn runs, its result, the bound on
 * blocking threads (requests past it queue), idle threads exiting,
 * cancellation before and during the wait (the request record outlives
 * the task's call), and that a parked offload does not stall its worker;
 * the policy of weft/blocking.h: weft_blocking_configure (a lower bound
 * retires threads, a higher one starts threads for the calls that wait),
 * the queue bound (-EAGAIN, fn never runs), a call withdrawn from the
 * queue by its timeout or a cancel (fn never runs), weft_blocking_for's
 * timeout on a plain thread, and a burst of slow calls that does not hold
 * up a call made during it (issue 23's case, as behaviour: the call starts
 * while every call of the burst is still running; blocking_burst.c times
 * it).
 *
 * main sets WEFT_BLOCKING_THREADS=4 and WEFT_BLOCKING_IDLE_MS=100 before
 * the first offload (they are read once): a small bound the tests can fill,
 * and threads that exit between cases, so that starting threads again
 * while others are exiting is exercised too.  The cases that configure
 * the threads otherwise put that set-up back (restore_setup).
 *
 * Functions run on blocking threads hold at a "gate" (an atomic flag the
 * main thread opens) where a case needs them to stay busy; every wait for
 * a condition is a bounded poll (wait_until) under the case's watchdog.
 */
#include "../pool/wt.h"

#include <weft/blocking.h>
#include <weft/inspect.h>
#include <weft/timer.h>

#include "io/blocking_threads.h"

enum { BOUND = 4 };

/* Poll until *v >= want, for at most about 10 s; whether it got there.
 * It looks without giving up the CPU at first: a caller that wants to act
 * right after the change must not hand its core to the thread it watches
 * (two cores: that thread would often finish before the caller runs). */
static bool wait_until(atomic_int *v, int want)
{
    for (int i = 0; i < 1000000; i++)
        if (atomic_load(v) >= want)
            return true;
    for (int i = 0; i < 100000; i++) {
        if (atomic_load(v) >= want)
            return true;
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    return atomic_load(v) >= want;
}

static bool on_blocking_thread(void)
{
    char name[16] = "";
    pthread_getname_np(pthread_self(), name, sizeof name);
    return strcmp(name, "weft-blocking") == 0;
}

static void *times3(void *arg) { return P(I(arg) * 3); }

/* ---------------------------------------------------------- plain thread */

struct where {
    pthread_t thread;
    bool blocking;
};

static void *record_thread(void *arg)
{
    struct where *w = arg;
    w->thread = wt_self();
    w->blocking = on_blocking_thread();
    return P(77);
}

/* From a plain thread fn is just called, on that thread. */
static void test_plain_thread_calls_fn(void **state)
{
    (void)state;
    struct where w = {0};
    void *r = NULL;
    assert_int_equal(weft_blocking(record_thread, &w, &r), 0);
    assert_int_equal(I(r), 77);
    assert_true(pthread_equal(w.thread, pthread_self()));
    assert_false(w.blocking);
    assert_int_equal(weft_blocking(times3, P(5), NULL), 0);
    assert_int_equal(weft_blocking(NULL, NULL, &r), -EINVAL);
    assert_int_equal(I(r), 77); /* untouched */
    WT_CLEAN();
}

/* In a standalone coroutine too (it is not a task). */
static void *coro_body(void *arg)
{
    struct where *w = arg;
    void *r = NULL;
    CHECK_EQ(weft_blocking(record_thread, w, &r), 0);
    CHECK_EQ(I(r), 77);
    return NULL;
}

static void test_coroutine_calls_fn(void **state)
{
    (void)state;
    weft_coro *co = NULL;
    assert_int_equal(weft_coro_create(&co, coro_body, NULL), 0);
    struct where w = {0};
    assert_int_equal(weft_coro_resume(co, &w, NULL), 0);
    assert_int_equal(weft_coro_status(co), WEFT_CORO_DEAD);
    assert_int_equal(weft_coro_destroy(co), 0);
    assert_true(pthread_equal(w.thread, pthread_self()));
    assert_false(w.blocking);
    WT_CLEAN();
}

/* ----------------------------------------------------------------- tasks */

static void *offload_from_task(void *arg)
{
    (void)arg;
    pthread_t worker = wt_self();
    struct where w = {0};
    void *r = NULL;
    CHECK_EQ(weft_blocking(record_thread, &w, &r), 0);
    CHECK_EQ(I(r), 77);
    CHECK(w.blocking);
    CHECK(!pthread_equal(w.thread, worker));
    CHECK_EQ(weft_blocking(NULL, NULL, &r), -EINVAL);
    CHECK_EQ(I(r), 77); /* untouched */
    CHECK_EQ(weft_blocking(times3, P(3), NULL), 0); /* result not wanted */
    return P(1);
}

/* In a task fn runs on a blocking thread, never on a worker. */
static void test_task_offloads(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    assert_int_equal(I(wt_run(p, offload_from_task, NULL)), 1);
    wt_destroy(p);
    WT_CLEAN();
}

/* A lazy task that weft_sync_wait runs on this thread, on no pool: the
 * wake goes to the sync_wait driver. */
static void test_task_on_no_pool(void **state)
{
    (void)state;
    assert_int_equal(I(wt_run_lazy(offload_from_task, NULL)), 1);
    WT_CLEAN();
}

static void *offload_times3(void *arg)
{
    void *r = NULL;
    CHECK_EQ(weft_blocking(times3, arg, &r), 0);
    return r;
}

/* Many tasks at once: each gets its own result back. */
static void test_many_results(void **state)
{
    enum { N = 300 };
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    static weft_task *ts[N];
    for (int i = 0; i < N; i++)
        assert_int_equal(weft_spawn(&ts[i], p, offload_times3, P(i), NULL), 0);
    for (int i = 0; i < N; i++) {
        void *r = NULL;
        assert_int_equal(weft_sync_wait(ts[i], &r), 0);
        assert_int_equal(I(r), 3 * i);
    }
    wt_destroy(p);
    WT_CLEAN();
}

/* ---------------------------------------------- the bound, idle threads */

static atomic_int gate_open;  /* gated() returns once this is 1        */
static atomic_int inside;     /* gated() calls between entry and exit  */
static atomic_int running;    /* of those, the ones that have counted
                                 themselves in `most`                  */
static atomic_int most;       /* the most `inside` seen at once        */
static atomic_int finished;   /* gated() calls that returned           */

static void gate_reset(void)
{
    atomic_store(&gate_open, 0);
    atomic_store(&inside, 0);
    atomic_store(&running, 0);
    atomic_store(&most, 0);
    atomic_store(&finished, 0);
}

/* A call counts itself in `running` only once its update of `most` is
 * done: a case that waits for `running` and then resets `most` must not
 * see a late update from a call that entered before the reset (a thread
 * preempted between its count and its compare-and-swap, under TSan on a
 * loaded machine, wrote 3 or 4 after test_configure_bound's reset). */
static void *gated(void *arg)
{
    int now = atomic_fetch_add(&inside, 1) + 1;
    int seen = atomic_load(&most);
    while (now > seen && !atomic_compare_exchange_weak(&most, &seen, now))
        ;
    atomic_fetch_add(&running, 1);
    CHECK(on_blocking_thread());
    while (!atomic_load(&gate_open)) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    atomic_fetch_sub(&running, 1);
    atomic_fetch_sub(&inside, 1);
    atomic_fetch_add(&finished, 1);
    return arg;
}

static void *offload_gated(void *arg)
{
    void *r = NULL;
    CHECK_EQ(weft_blocking(gated, arg, &r), 0);
    return r;
}

/* More offloads than the bound: BOUND run at once, the others queue and
 * run as threads come free; every one completes with its result. */
static void test_past_the_bound_queues(void **state)
{
    enum { N = 40 };
    gate_reset();
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    static weft_task *ts[N];
    for (int i = 0; i < N; i++)
        assert_int_equal(weft_spawn(&ts[i], p, offload_gated, P(i + 1), NULL), 0);
    /* All threads busy, the other N - BOUND requests queued. */
    assert_true(wait_until(&running, BOUND));
    assert_int_equal(weft__blocking_threads(), BOUND);
    assert_int_equal(atomic_load(&finished), 0);
    atomic_store(&gate_open, 1);
    for (int i = 0; i < N; i++) {
        void *r = NULL;
        assert_int_equal(weft_sync_wait(ts[i], &r), 0);
        assert_int_equal(I(r), i + 1);
    }
    assert_int_equal(atomic_load(&finished), N);
    assert_int_equal(atomic_load(&most), BOUND);
    assert_true(weft__blocking_threads() <= BOUND);
    wt_destroy(p);
    WT_CLEAN();
}

/* Idle threads exit (WEFT_BLOCKING_IDLE_MS), and offloads start new ones. */
static void test_idle_threads_exit(void **state)
{
    (void)state;
    weft_pool *p = wt_pool(2);
    for (int round = 0; round < 2; round++) {
        assert_int_equal(I(wt_run(p, offload_times3, P(round))), 3 * round);
        assert_true(weft__blocking_threads() >= 1);
        for (int i = 0; i < 100000 && weft__blocking_threads() != 0; i++) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
        assert_int_equal(weft__blocking_threads(), 0);
    }
    wt_destroy(p);
    WT_CLEAN();
}

/* ---------------------------------------------------------- cancellation */

struct cancel_case {
    weft_event parked;  /* never set: the task waits on it to be cancelled */
    atomic_int runs;    /* count_run calls                                */
    int event_rc, blocking_rc;
    void *result;
};

static void *count_run(void *arg)
{
    struct cancel_case *c = arg;
    atomic_fetch_add(&c->runs, 1);
    return P(5);
}

static void *cancelled_then_offloads(void *arg)
{
    struct cancel_case *c = arg;
    c->event_rc = weft_event_wait(&c->parked);
    c->blocking_rc = weft_blocking(count_run, c, &c->result);
    return NULL;
}

/* A task cancelled before it offloads: -ECANCELED, and fn never runs. */
static void test_cancelled_before(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    struct cancel_case c = {.result = P(-1)};
    weft_event_init(&c.parked);
    weft_task *t = NULL;
    assert_int_equal(weft_spawn(&t, p, cancelled_then_offloads, &c, NULL), 0);
    assert_int_equal(weft_task_cancel(t), 0);
    assert_int_equal(weft_sync_wait(t, NULL), 0);
    assert_int_equal(c.event_rc, -ECANCELED);
    assert_int_equal(c.blocking_rc, -ECANCELED);
    assert_int_equal(I(c.result), -1);
    assert_int_equal(atomic_load(&c.runs), 0);
    wt_destroy(p);
    WT_CLEAN();
}

static void *offload_gated_rc(void *arg)
{
    void *r = P(-1);
    int rc = weft_blocking(gated, arg, &r);
    CHECK_EQ(I(r), -1); /* a cancelled call leaves *result alone */
    return P(rc);
}

/* Cancelled while fn runs: the call returns -ECANCELED at once, before fn
 * has ended (it is still held at the gate); fn then runs to its end and
 * its request record is freed by the blocking thread (ASan would see a
 * leak or a use after free). */
static void test_cancelled_while_waiting(void **state)
{
    enum { N = 3 }; /* under the bound: all of them run at once */
    gate_reset();
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_task *ts[N];
    for (int i = 0; i < N; i++)
        assert_int_equal(weft_spawn(&ts[i], p, offload_gated_rc, P(i), NULL), 0);
    assert_true(wait_until(&running, N));
    for (int i = 0; i < N; i++) {
        assert_int_equal(weft_task_cancel(ts[i]), 0);
        void *r = NULL;
        assert_int_equal(weft_sync_wait(ts[i], &r), 0);
        assert_int_equal(I(r), -ECANCELED);
    }
    assert_int_equal(atomic_load(&finished), 0); /* returned before fn */
    atomic_store(&gate_open, 1);
    assert_true(wait_until(&finished, N));
    wt_destroy(p);
    WT_CLEAN();
}

struct race {
    atomic_uint spin;        /* how long race_fn runs               */
    atomic_int started, ended;
};

static void *race_fn(void *arg)
{
    struct race *rc = arg;
    atomic_fetch_add(&rc->started, 1);
    wt_spin(atomic_load(&rc->spin));
    atomic_fetch_add(&rc->ended, 1);
    return P(9);
}

static void *offload_race(void *arg)
{
    void *r = P(-1);
    int rc = weft_blocking(race_fn, arg, &r);
    if (rc == 0)
        CHECK_EQ(I(r), 9);
    else
        CHECK_EQ(I(r), -1);
    return P(rc);
}

/* Cancels that land anywhere: before the offload or while it is queued
 * (one round in four: cancel right after the spawn), or once fn has
 * started, which then runs for a varying time, so that the cancel lands
 * while it runs or races its end and the wake.  Each call returns 0 with
 * fn's result or -ECANCELED; every fn that started ends; no record is
 * lost or freed twice (ASan, TSan).
 * To know that every request left behind by a cancelled call has run,
 * BOUND gated requests follow them: the queue is FIFO, so once all BOUND
 * threads hold a gated one, none is running or will run a race_fn. */
static void test_cancel_races(void **state)
{
    enum { ROUNDS = 1000 };
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    static struct race rc;
    atomic_store(&rc.started, 0);
    atomic_store(&rc.ended, 0);
    int ok = 0, cancelled = 0;
    for (int i = 0; i < ROUNDS; i++) {
        atomic_store(&rc.spin, (unsigned)(i % 64) * 200);
        int before = atomic_load(&rc.started);
        weft_task *t = NULL;
        assert_int_equal(weft_spawn(&t, p, offload_race, &rc, NULL), 0);
        if (i % 4)
            assert_true(wait_until(&rc.started, before + 1));
        assert_int_equal(weft_task_cancel(t), 0);
        void *r = NULL;
        assert_int_equal(weft_sync_wait(t, &r), 0);
        if (I(r) == 0)
            ok++;
        else if (I(r) == -ECANCELED)
            cancelled++;
    }
    assert_int_equal(ok + cancelled, ROUNDS);

    gate_reset();
    weft_task *ts[BOUND];
    for (int i = 0; i < BOUND; i++)
        assert_int_equal(weft_spawn(&ts[i], p, offload_gated, P(i), NULL), 0);
    assert_true(wait_until(&running, BOUND));
    assert_int_equal(atomic_load(&rc.ended), atomic_load(&rc.started));
    assert_true(atomic_load(&rc.started) >= ok);
    atomic_store(&gate_open, 1);
    for (int i = 0; i < BOUND; i++)
        assert_int_equal(weft_sync_wait(ts[i], NULL), 0);
    printf("%d of %d offloads cancelled, %d fn calls\n", cancelled, ROUNDS,
           atomic_load(&rc.started));
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------- no stall of other tasks */

static atomic_int ticks;
static atomic_int stop_ticking;

static void *ticker(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_ticking)) {
        CHECK_EQ(weft_sleep(MS(1)), 0);
        atomic_fetch_add(&ticks, 1);
    }
    return NULL;
}

static void *sleep_200ms(void *arg)
{
    (void)arg;
    wt_sleep_ms(200);
    return P(200);
}

/* Returns how many ticks the ticker made while fn slept. */
static void *offload_sleep(void *arg)
{
    (void)arg;
    while (atomic_load(&ticks) == 0) /* the ticker is running */
        CHECK_EQ(weft_yield(), 0);
    int before = atomic_load(&ticks);
    void *r = NULL;
    CHECK_EQ(weft_blocking(sleep_200ms, NULL, &r), 0);
    CHECK_EQ(I(r), 200);
    int after = atomic_load(&ticks);
    atomic_store(&stop_ticking, 1);
    return P(after - before);
}

/* One worker: while one task waits for a 200 ms blocking call, the
 * worker keeps running the ticker (about 200 ticks of 1 ms; at least 10
 * even on a slow, loaded machine).  Were the worker blocked, it would be
 * none. */
static void test_no_stall(void **state)
{
    (void)state;
    atomic_store(&ticks, 0);
    atomic_store(&stop_ticking, 0);
    weft_pool *p = wt_pool(1);
    weft_task *tick = NULL, *sleeper = NULL;
    assert_int_equal(weft_spawn(&tick, p, ticker, NULL, NULL), 0);
    assert_int_equal(weft_spawn(&sleeper, p, offload_sleep, NULL, NULL), 0);
    void *advanced = NULL;
    assert_int_equal(weft_sync_wait(sleeper, &advanced), 0);
    assert_int_equal(weft_sync_wait(tick, NULL), 0);
    printf("ticks during the 200 ms offload: %ld\n", (long)I(advanced));
    assert_true(I(advanced) >= 10);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------ weft_blocking_configure */

/* The set-up main's environment gives, put back by the cases below. */
static void restore_setup(void)
{
    weft_blocking_opts o = {.max_threads = BOUND, .idle_ns = MS(100)};
    assert_int_equal(weft_blocking_configure(&o), 0);
}

/* A lower bound: as they come free, the threads beyond it exit, and the
 * calls still queued run on the ones left, never more at once than the
 * bound; a higher one starts threads for calls that wait. */
static void test_configure_bound(void **state)
{
    enum { N = 12 };
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    static weft_task *ts[N];
    gate_reset();
    for (int i = 0; i < N; i++)
        assert_int_equal(weft_spawn(&ts[i], p, offload_gated, P(i + 1), NULL), 0);
    assert_true(wait_until(&running, BOUND));
    weft_blocking_opts o = {.max_threads = 2, .idle_ns = MS(100)};
    assert_int_equal(weft_blocking_configure(&o), 0);
    atomic_store(&most, 0);
    atomic_store(&gate_open, 1);
    for (int i = 0; i < N; i++) {
        void *r = NULL;
        assert_int_equal(weft_sync_wait(ts[i], &r), 0);
        assert_int_equal(I(r), i + 1);
    }
    assert_true(atomic_load(&most) <= 2);
    /* A thread beyond the bound exits in the same locked step in which
     * it ended its last call (io/blocking.c): none is left by now. */
    assert_true(weft__blocking_threads() <= 2);

    /* Higher: calls queued at the bound of 1 get threads at once. */
    gate_reset();
    o.max_threads = 1;
    assert_int_equal(weft_blocking_configure(&o), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(weft_spawn(&ts[i], p, offload_gated, P(i), NULL), 0);
    assert_true(wait_until(&running, 1));
    o.max_threads = 3;
    assert_int_equal(weft_blocking_configure(&o), 0);
    assert_true(wait_until(&running, 3));
    atomic_store(&gate_open, 1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(weft_sync_wait(ts[i], NULL), 0);
    restore_setup();
    wt_destroy(p);
    WT_CLEAN();
}

static void test_configure_invalid(void **state)
{
    (void)state;
    weft_blocking_opts o = {.max_threads = WEFT_BLOCKING_THREADS_MAX + 1};
    assert_int_equal(weft_blocking_configure(&o), -EINVAL);
    weft_blocking_opts r = {.reserved_ = {P(1)}};
    assert_int_equal(weft_blocking_configure(&r), -EINVAL);
    WT_CLEAN();
}

/* ------------------------------------------------------ the queue bound */

static atomic_int counted;

static void *count_call(void *arg)
{
    atomic_fetch_add(&counted, 1);
    return arg;
}

struct queued_call {
    uint64_t timeout;   /* 0: weft_blocking */
    int rc;
    void *result;
};

static void *offload_counted(void *arg)
{
    struct queued_call *q = arg;
    q->result = P(-1);
    q->rc = q->timeout ? weft_blocking_for(count_call, P(5), &q->result,
                                           q->timeout)
                       : weft_blocking(count_call, P(5), &q->result);
    return NULL;
}

/* With the one thread held: a call past the queue bound fails (-EAGAIN),
 * one whose timeout comes while it waits to start, or whose task is
 * cancelled then, is withdrawn; none of their functions ever runs (a call
 * queued after them, on the one thread, runs after anything they had
 * left queued). */
static void test_queue_bound(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    gate_reset();
    atomic_store(&counted, 0);
    weft_blocking_opts o = {.max_threads = 1, .idle_ns = MS(100),
                            .queue_ns = UINT64_MAX};
    assert_int_equal(weft_blocking_configure(&o), 0);
    weft_task *holder = NULL;
    assert_int_equal(weft_spawn(&holder, p, offload_gated, P(1), NULL), 0);
    assert_true(wait_until(&running, 1));

    o.queue_ns = MS(5);
    assert_int_equal(weft_blocking_configure(&o), 0);
    struct queued_call bounded = {0};
    assert_int_equal(I(wt_run(p, offload_counted, &bounded)), 0);
    assert_int_equal(bounded.rc, -EAGAIN);
    assert_int_equal(I(bounded.result), -1);

    o.queue_ns = UINT64_MAX;
    assert_int_equal(weft_blocking_configure(&o), 0);
    struct queued_call timed = {.timeout = MS(5)};
    assert_int_equal(I(wt_run(p, offload_counted, &timed)), 0);
    assert_int_equal(timed.rc, -ETIMEDOUT);
    struct queued_call cancelled = {0};
    weft_task *t = NULL;
    assert_int_equal(weft_spawn(&t, p, offload_counted, &cancelled, NULL), 0);
    /* Until it waits to start: the holder, parked on the busy thread's
     * call, and this one, parked on its queued request. */
    struct weft_pool_stats st = {.size = sizeof st};
    for (int i = 0; i < 100000; i++) {
        assert_int_equal(weft_pool_stats(p, &st), 0);
        if (st.parked_blocking >= 2)
            break;
        sched_yield();
    }
    assert_int_equal(st.parked_blocking, 2);
    assert_int_equal(weft_task_cancel(t), 0);
    assert_int_equal(weft_sync_wait(t, NULL), 0);
    assert_int_equal(cancelled.rc, -ECANCELED);

    atomic_store(&gate_open, 1);
    assert_int_equal(weft_sync_wait(holder, NULL), 0);
    struct queued_call after = {0};
    assert_int_equal(I(wt_run(p, offload_counted, &after)), 0);
    assert_int_equal(after.rc, 0);
    assert_int_equal(I(after.result), 5);
    assert_int_equal(atomic_load(&counted), 1); /* `after`'s alone */
    restore_setup();
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------- weft_blocking_for, a thread */

static void *thread_blocking_for(void *arg)
{
    struct queued_call *q = arg;
    q->result = P(-1);
    q->rc = weft_blocking_for(gated, P(8), &q->result, q->timeout);
    return NULL;
}

/* On a plain thread, weft_blocking_for runs fn on a blocking thread and
 * holds to its timeout: -ETIMEDOUT while fn runs on (it ends once
 * released, its result dropped); one that ends in time gives its result.
 * The timeout leaves fn time to start on a loaded machine (TSan, qemu):
 * a call whose timeout comes before a thread took it is withdrawn, and
 * fn would never run. */
static void test_plain_thread_timeout(void **state)
{
    (void)state;
    gate_reset();
    struct queued_call q = {.timeout = MS(500)};
    assert_null(thread_blocking_for(&q));
    assert_int_equal(q.rc, -ETIMEDOUT);
    assert_int_equal(I(q.result), -1);
    /* Still running on (counted once it has noted itself in `most`). */
    assert_true(wait_until(&running, 1));
    assert_int_equal(atomic_load(&finished), 0);
    atomic_store(&gate_open, 1);
    assert_true(wait_until(&finished, 1));
    void *r = NULL;
    assert_int_equal(weft_blocking_for(record_thread, &(struct where){0}, &r,
                                       MS(10000)), 0);
    assert_int_equal(I(r), 77);
    struct where w = {0};
    assert_int_equal(weft_blocking_for(record_thread, &w, NULL, MS(10000)), 0);
    assert_true(w.blocking);
    WT_CLEAN();
}

/* --------------------------------------- a burst does not hold a call up */

/* Issue 23's case as behaviour: while a burst of slow calls runs (each
 * held at a gate), a call made during it starts at once, with every call
 * of the burst still held: no queue formed behind them.  Two shapes:
 * 200 tasks each making four calls one after the other (200 at once),
 * and 200 tasks each making four at once (through four child tasks: 800
 * at once).  Default set-up (1,024 threads at most).  The gate is an
 * event the threads block on (not a poll: 800 pollers would be the load
 * of the case). */
enum { BURST_TASKS = 200, BURST_CALLS = 4 };

static weft_event burst_gate;
static atomic_int burst_in, burst_out, probe_in;

static void *burst_call(void *arg)
{
    atomic_fetch_add(&burst_in, 1);
    CHECK_EQ(weft_event_wait(&burst_gate), 0);
    atomic_fetch_add(&burst_out, 1);
    return arg;
}

static void *burst_one(void *arg)
{
    void *r = NULL;
    CHECK_EQ(weft_blocking(burst_call, arg, &r), 0);
    CHECK_PTR_EQ(r, arg);
    return r;
}

static void *burst_sequential(void *arg)
{
    for (int i = 0; i < BURST_CALLS; i++)
        burst_one(arg);
    return arg;
}

static void *burst_concurrent(void *arg)
{
    weft_task *kids[BURST_CALLS];
    for (int i = 0; i < BURST_CALLS; i++)
        CHECK_EQ(weft_spawn(&kids[i], weft_pool_current(), burst_one, arg,
                            NULL), 0);
    CHECK_EQ(weft_await_all(kids, BURST_CALLS, NULL), 0);
    return arg;
}

static void *probe_call(void *arg)
{
    /* Every call of the burst that started is still held here. */
    CHECK_EQ(atomic_load(&burst_out), 0);
    atomic_store(&probe_in, 1);
    return arg;
}

static void *offload_probe(void *arg)
{
    void *r = NULL;
    CHECK_EQ(weft_blocking(probe_call, arg, &r), 0);
    return r;
}

static void burst_case(weft_fn shape, int at_once)
{
    assert_int_equal(weft_blocking_configure(NULL), 0);
    weft_event_init(&burst_gate);
    atomic_store(&burst_in, 0);
    atomic_store(&burst_out, 0);
    atomic_store(&probe_in, 0);
    weft_pool *p = wt_pool(2);
    static weft_task *ts[BURST_TASKS];
    for (int i = 0; i < BURST_TASKS; i++)
        assert_int_equal(weft_spawn(&ts[i], p, shape, P(i + 1), NULL), 0);
    assert_true(wait_until(&burst_in, at_once));
    weft_task *probe = NULL;
    assert_int_equal(weft_spawn(&probe, p, offload_probe, P(9), NULL), 0);
    void *r = NULL;
    assert_int_equal(weft_sync_wait(probe, &r), 0); /* with the gate shut */
    assert_int_equal(I(r), 9);
    assert_int_equal(atomic_load(&probe_in), 1);
    assert_int_equal(atomic_load(&burst_out), 0);
    weft_event_set(&burst_gate);
    for (int i = 0; i < BURST_TASKS; i++) {
        assert_int_equal(weft_sync_wait(ts[i], &r), 0);
        assert_int_equal(I(r), i + 1);
    }
    assert_int_equal(atomic_load(&burst_out), BURST_TASKS * BURST_CALLS);
    wt_destroy(p);
    restore_setup();
}

static void test_burst_sequential(void **state)
{
    (void)state;
    burst_case(burst_sequential, BURST_TASKS);
    WT_CLEAN();
}

static void test_burst_concurrent(void **state)
{
    (void)state;
    burst_case(burst_concurrent, BURST_TASKS * BURST_CALLS);
    WT_CLEAN();
}

int main(void)
{
    setenv("WEFT_BLOCKING_THREADS", "4", 1);
    setenv("WEFT_BLOCKING_IDLE_MS", "100", 1);
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST1(test_plain_thread_calls_fn),
        WT_TEST1(test_coroutine_calls_fn),
        WT_TEST(test_task_offloads),
        WT_TEST1(test_task_on_no_pool),
        WT_TEST(test_many_results),
        WT_TEST(test_past_the_bound_queues),
        WT_TEST1(test_idle_threads_exit),
        WT_TEST(test_cancelled_before),
        WT_TEST(test_cancelled_while_waiting),
        WT_TEST(test_cancel_races),
        WT_TEST1(test_no_stall),
        WT_TEST(test_configure_bound),
        WT_TEST1(test_configure_invalid),
        WT_TEST(test_queue_bound),
        WT_TEST1(test_plain_thread_timeout),
        WT_TEST1(test_burst_sequential),
        WT_TEST1(test_burst_concurrent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
