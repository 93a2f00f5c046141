/*
 * stress_sync.c — the sync primitives and the channel under load: 10,000
 * tasks contending one mutex, plain threads and tasks racing for one in
 * many short rounds, channel ping-pong between workers (and
 * between pools), a many-producer many-consumer channel whose every
 * value must arrive exactly once, and a storm of short timed waits on the
 * per-worker timers.  A lost wakeup hangs (the watchdog
 * names the case); a lost unlock or a double delivery breaks a count.
 */
#include "st.h"
#include "../live_limit.h"

/* ------------------------------------------------------------------ */
/* 10,000 tasks, one mutex, a plain counter                              */

struct contend {
    weft_mutex m;
    long counter;             /* plain: only touched with m held */
    unsigned iters;
    weft_wait_group wg;
    _Atomic unsigned inside;  /* holders at once: must stay <= 1 */
};

static void *contender(void *arg)
{
    struct contend *c = arg;
    for (unsigned i = 0; i < c->iters; i++) {
        CHECK_EQ(weft_mutex_lock(&c->m), 0);
        CHECK_EQ(atomic_fetch_add(&c->inside, 1), 0);
        long v = c->counter;
        if (i % 2 == 0)
            CHECK_EQ(weft_yield(), 0); /* suspend while holding it */
        c->counter = v + 1;
        atomic_fetch_sub(&c->inside, 1);
        CHECK_EQ(weft_mutex_unlock(&c->m), 0);
    }
    weft_wait_group_done(&c->wg);
    return NULL;
}

static void test_mutex_10k(void **state)
{
    (void)state;
    enum { TASKS = WT_LIVE(10000) }; /* TSan holds fewer fibers */
    weft_pool *p = wt_pool(2);
    struct contend c = {.counter = 0, .iters = st_scaled(10), .inside = 0};
    weft_mutex_init(&c.m);
    weft_wait_group_init(&c.wg);
    weft_wait_group_add(&c.wg, TASKS);
    for (int i = 0; i < TASKS; i++)
        assert_int_equal(weft_spawn(NULL, p, contender, &c, NULL), 0);
    assert_int_equal(weft_wait_group_wait(&c.wg), 0);
    assert_int_equal(c.counter, (long)TASKS * c.iters);
    assert_int_equal(weft_mutex_trylock(&c.m), 0); /* no lost unlock */
    assert_int_equal(weft_mutex_unlock(&c.m), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Barging against the list: plain threads and tasks on one mutex, in    */
/* many short rounds (each round a fresh mutex and a fresh race between  */
/* a holder's unlock, a barger and a woken waiter; sync/mutex.c), some   */
/* of the waits timed                                                    */

struct mixed_round {
    weft_mutex m;
    long counter;            /* plain: only touched with m held */
    unsigned iters;
    long timed_out;          /* lock_for calls that timed out (atomic) */
    _Atomic unsigned inside; /* holders at once: must stay <= 1 */
};

static void mixed_bump(struct mixed_round *x, bool in_task)
{
    for (unsigned i = 0; i < x->iters; i++) {
        int rc = i % 5 == 4 ? weft_mutex_lock_for(&x->m, 20000)
                            : weft_mutex_lock(&x->m);
        if (rc == -ETIMEDOUT) {
            __atomic_fetch_add(&x->timed_out, 1, __ATOMIC_RELAXED);
            continue;
        }
        CHECK_EQ(rc, 0);
        CHECK_EQ(atomic_fetch_add(&x->inside, 1), 0);
        long c = x->counter;
        if (in_task && i % 8 == 0)
            CHECK_EQ(weft_yield(), 0); /* hold it across a suspension */
        else
            wt_spin(20);
        x->counter = c + 1;
        atomic_fetch_sub(&x->inside, 1);
        CHECK_EQ(weft_mutex_unlock(&x->m), 0);
    }
}

static void *mixed_task(void *arg)
{
    mixed_bump(arg, true);
    return NULL;
}

static void *mixed_thread(void *arg)
{
    mixed_bump(arg, false);
    return NULL;
}

static void test_mutex_threads_and_tasks(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    enum { TASKS = 8, THREADS = 2 };
    unsigned rounds = st_scaled(300);
    for (unsigned r = 0; r < rounds; r++) {
        struct mixed_round x = {.counter = 0, .iters = 200, .inside = 0};
        weft_mutex_init(&x.m);
        weft_task *ts[TASKS];
        pthread_t th[THREADS];
        for (int i = 0; i < TASKS; i++)
            ts[i] = st_spawn(p, mixed_task, &x);
        for (int i = 0; i < THREADS; i++)
            th[i] = wt_thread(mixed_thread, &x);
        for (int i = 0; i < TASKS; i++)
            st_join(ts[i]);
        for (int i = 0; i < THREADS; i++)
            wt_join(th[i]);
        assert_int_equal(x.counter + x.timed_out,
                         (long)(TASKS + THREADS) * x.iters);
        assert_int_equal(weft_mutex_trylock(&x.m), 0); /* no lost unlock */
        assert_int_equal(weft_mutex_unlock(&x.m), 0);
    }
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Ping-pong                                                             */

struct pingpong {
    weft_chan *ab, *ba;
    unsigned rounds;
    _Atomic unsigned cross;   /* rounds where the two ran on other threads */
    pthread_t where;          /* the pinger's thread at its last send */
};

static void *pinger(void *arg)
{
    struct pingpong *x = arg;
    void *v;
    for (unsigned i = 0; i < x->rounds; i++) {
        x->where = wt_self();
        CHECK_EQ(weft_chan_send(x->ab, P(2 * i)), 0);
        CHECK_EQ(weft_chan_recv(x->ba, &v), 0);
        CHECK_EQ(I(v), 2 * i + 1);
    }
    weft_chan_close(x->ab);
    return NULL;
}

static void *ponger(void *arg)
{
    struct pingpong *x = arg;
    void *v;
    unsigned n = 0;
    int rc;
    while ((rc = weft_chan_recv(x->ab, &v)) == 0) {
        CHECK_EQ(I(v), 2 * n);
        if (!pthread_equal(x->where, wt_self()))
            atomic_fetch_add(&x->cross, 1);
        CHECK_EQ(weft_chan_send(x->ba, P(I(v) + 1)), 0);
        n++;
    }
    CHECK_EQ(rc, -EPIPE);
    CHECK_EQ(n, x->rounds);
    return NULL;
}

static void pingpong(weft_pool *pa, weft_pool *pb, size_t cap,
                     bool need_cross)
{
    struct pingpong x = {.rounds = st_scaled(20000), .cross = 0};
    assert_int_equal(weft_chan_create(&x.ab, cap), 0);
    assert_int_equal(weft_chan_create(&x.ba, cap), 0);
    weft_task *b = st_spawn(pb, ponger, &x);
    weft_task *a = st_spawn(pa, pinger, &x);
    st_join(a);
    st_join(b);
    if (need_cross) /* two one-worker pools: every round crosses */
        assert_int_equal(atomic_load(&x.cross), x.rounds);
    assert_int_equal(weft_chan_destroy(x.ab), 0);
    assert_int_equal(weft_chan_destroy(x.ba), 0);
}

static void test_pingpong(void **state)
{
    (void)state;
    /* Two tasks on one two-worker pool: they may or may not share a
     * worker at any moment. */
    weft_pool *p = wt_pool(2);
    pingpong(p, p, 0, false);
    pingpong(p, p, 1, false);
    wt_destroy(p);
    /* Each on its own one-worker pool: always on different threads. */
    weft_pool *pa = wt_pool(1), *pb = wt_pool(1);
    pingpong(pa, pb, 0, true);
    pingpong(pa, pb, 4, true);
    wt_destroy(pa);
    wt_destroy(pb);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Many producers, many consumers: each value exactly once               */

enum { PRODUCERS = 4, CONSUMERS = 4 }; /* one of each is a plain thread */

struct mpmc {
    weft_chan *ch;
    unsigned per_producer;
    _Atomic unsigned char *seen;  /* per value: times received */
    _Atomic long sum;
    weft_wait_group producers;
};

struct prod_arg {
    struct mpmc *x;
    unsigned id;
    bool in_task;
};

/* Values 1..PRODUCERS*per_producer, each sent once, some with the timed
 * and non-blocking sends: one that fails delivered nothing and is
 * retried. */
static void *producer(void *arg)
{
    struct prod_arg *a = arg;
    struct mpmc *x = a->x;
    for (unsigned i = 0; i < x->per_producer; i++) {
        void *v = P(a->id * x->per_producer + i + 1);
        int rc;
        if (i % 5 == 1) {
            while ((rc = weft_chan_try_send(x->ch, v)) == -EAGAIN) {
                if (a->in_task)
                    CHECK_EQ(weft_yield(), 0);
                else
                    sched_yield();
            }
        } else if (i % 5 == 2) {
            while ((rc = weft_chan_send_for(x->ch, v, 50000)) == -ETIMEDOUT)
                ;
        } else {
            rc = weft_chan_send(x->ch, v);
        }
        CHECK_EQ(rc, 0);
    }
    weft_wait_group_done(&x->producers);
    return NULL;
}

/* Receives until closed and drained; a timed receive that times out took
 * nothing. */
static void *consumer(void *arg)
{
    struct mpmc *x = arg;
    unsigned total = PRODUCERS * x->per_producer;
    void *v;
    for (unsigned n = 0;; n++) {
        int rc = n % 3 == 1 ? weft_chan_recv_for(x->ch, &v, 50000)
                            : weft_chan_recv(x->ch, &v);
        if (rc == -ETIMEDOUT)
            continue;
        if (rc == -EPIPE)
            break;
        CHECK_EQ(rc, 0);
        uintptr_t id = (uintptr_t)v - 1;
        CHECK(id < total);
        if (id < total)
            atomic_fetch_add(&x->seen[id], 1);
        atomic_fetch_add(&x->sum, I(v));
    }
    return NULL;
}

static void mpmc(weft_pool *p, size_t cap)
{
    struct mpmc x = {.per_producer = st_scaled(5000), .sum = 0};
    unsigned total = PRODUCERS * x.per_producer;
    x.seen = calloc(total, 1);
    assert_non_null(x.seen);
    assert_int_equal(weft_chan_create(&x.ch, cap), 0);
    weft_wait_group_init(&x.producers);
    weft_wait_group_add(&x.producers, PRODUCERS);

    struct prod_arg pa[PRODUCERS];
    weft_task *ts[PRODUCERS + CONSUMERS];
    unsigned nt = 0;
    pa[0] = (struct prod_arg){&x, 0, false};
    pthread_t prod_th = wt_thread(producer, &pa[0]);
    pthread_t cons_th = wt_thread(consumer, &x);
    for (unsigned i = 1; i < PRODUCERS; i++) {
        pa[i] = (struct prod_arg){&x, i, true};
        ts[nt++] = st_spawn(p, producer, &pa[i]);
    }
    for (unsigned i = 1; i < CONSUMERS; i++)
        ts[nt++] = st_spawn(p, consumer, &x);
    /* Every value is in once the producers are done: close, and the
     * consumers drain what is left, then see -EPIPE. */
    assert_int_equal(weft_wait_group_wait(&x.producers), 0);
    weft_chan_close(x.ch);
    wt_join(prod_th);
    wt_join(cons_th);
    for (unsigned i = 0; i < nt; i++)
        st_join(ts[i]);

    unsigned wrong = 0;
    for (unsigned i = 0; i < total; i++)
        wrong += atomic_load(&x.seen[i]) != 1;
    assert_int_equal(wrong, 0);
    assert_int_equal(atomic_load(&x.sum), (long)total * (total + 1) / 2);
    assert_int_equal(weft_chan_destroy(x.ch), 0);
    free((void *)x.seen);
}

static void test_mpmc(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    mpmc(p, 0);
    mpmc(p, 1);
    mpmc(p, 64);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Timer storm: short sleeps and timed semaphore waits racing posts, with
 * workers that sometimes spin without yielding, so timers are fired by
 * their own worker, by another (stealing a busy worker's due timers), or
 * lose to a post, and are disarmed from whatever worker the task woke on.
 * Every unit posted is taken exactly once; no sleep ends early.          */

enum { STORM_TASKS = 64 };

struct storm {
    weft_sem sem;
    unsigned rounds;
    _Atomic long posted, taken;
    _Atomic unsigned early;        /* sleeps that returned before their time */
    weft_wait_group wg;
};

static uint64_t storm_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void *stormer(void *arg)
{
    struct storm *s = arg;
    uint64_t x = (uint64_t)(uintptr_t)&x | 1;
    for (unsigned i = 0; i < s->rounds; i++) {
        uint64_t r = storm_rand(&x);
        uint64_t ns = (r >> 8) % 20000; /* 0 .. 20 us */
        switch (r % 4) {
        case 0: {
            uint64_t t0 = wt_now_ns();
            CHECK_EQ(weft_sleep(ns), 0);
            if (wt_now_ns() - t0 < ns)
                atomic_fetch_add(&s->early, 1);
            break;
        }
        case 1: {
            int rc = weft_sem_wait_for(&s->sem, ns);
            CHECK(rc == 0 || rc == -ETIMEDOUT);
            if (rc == 0)
                atomic_fetch_add(&s->taken, 1);
            break;
        }
        case 2:
            weft_sem_post(&s->sem);
            atomic_fetch_add(&s->posted, 1);
            break;
        default: {
            /* Hold this worker for a while: its timers are due meanwhile
             * and only another worker can fire them. */
            uint64_t t0 = wt_now_ns();
            while (wt_now_ns() - t0 < ns)
                ;
        }
        }
    }
    weft_wait_group_done(&s->wg);
    return NULL;
}

static void test_timer_storm(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    struct storm s = {.rounds = st_scaled(10000)};
    weft_sem_init(&s.sem, 0);
    weft_wait_group_init(&s.wg);
    weft_wait_group_add(&s.wg, STORM_TASKS);
    weft_task *ts[STORM_TASKS];
    for (unsigned i = 0; i < STORM_TASKS; i++)
        ts[i] = st_spawn(p, stormer, &s);
    assert_int_equal(weft_wait_group_wait(&s.wg), 0);
    for (unsigned i = 0; i < STORM_TASKS; i++)
        st_join(ts[i]);
    /* Conservation: what is left in the semaphore was posted and not
     * taken. */
    long left = 0;
    while (weft_sem_trywait(&s.sem) == 0)
        left++;
    assert_int_equal(atomic_load(&s.taken) + left, atomic_load(&s.posted));
    assert_int_equal(atomic_load(&s.early), 0);
    wt_destroy(p);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST1(test_mutex_10k),
        WT_TEST(test_mutex_threads_and_tasks),
        WT_TEST1(test_pingpong),
        WT_TEST(test_mpmc),
        WT_TEST(test_timer_storm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
