/*
 * test_stuck.c — a pool stays responsive while its workers are stuck
 * (suite 'stuck'; weft/pool.h, "Stuck workers"; sched/monitor.c).
 *
 * Each case holds workers in code weft cannot switch out of (a loop that
 * computes, a blocking read(2)) and checks what must go on meanwhile: a
 * 1 ms ticker keeps ticking, tasks queued behind the stuck task run, a
 * socket is answered, the stuck task itself ends with the right result,
 * the spares leave afterwards, and a destroy during the stall and after
 * it is clean.  Behaviour, not timing: every wait is for a condition,
 * bounded by a deadline far above what it needs (a failure is "it never
 * happened"), and the loads end when released or at their own deadline,
 * so nothing hangs.  The timing figures (how late the ticker is) are the
 * bench's latency-* workloads.
 */
#include "../io/iot.h"

#include <weft/inspect.h>

#include <semaphore.h>

/* How long a condition may take before the case fails: far above what it
 * needs (milliseconds), for sanitizers and a loaded machine. */
#define PATIENCE_NS MS(20000)

/* ------------------------------------------------------------ loads */

/* A task that computes without a switch until *release is set (or 30 s
 * pass): the sum of 1/i^2, block after block.  Returns the number of
 * blocks, each of which checked out (else -1). */
struct crunch {
    atomic_bool *release;
    atomic_long blocks;
};

static __attribute__((noinline)) double basel(unsigned terms)
{
    double s = 0;
    for (unsigned i = 1; i <= terms; i++)
        s += 1.0 / ((double)i * (double)i);
    return s;
}

static void *cruncher(void *arg)
{
    struct crunch *c = arg;
    double want = basel(1000);
    uint64_t end = wt_now_ns() + MS(30000);
    long n = 0;
    while (!atomic_load(c->release) && wt_now_ns() < end) {
        if (basel(1000) != want)
            return P(-1);
        atomic_store(&c->blocks, ++n);
    }
    return P(n);
}

/* A task in a blocking read(2) of one byte: returns the byte, or -errno. */
static void *reader(void *arg)
{
    int fd = (int)I(arg);
    unsigned char b = 0;
    ssize_t n;
    do
        n = read(fd, &b, 1);
    while (n < 0 && errno == EINTR);
    return n == 1 ? P(b) : P(-errno);
}

/* A 1 ms ticker: counts its wake-ups until *stop. */
struct ticker {
    atomic_bool stop;
    atomic_long ticks;
};

static void *ticker(void *arg)
{
    struct ticker *tk = arg;
    while (!atomic_load(&tk->stop)) {
        CHECK_EQ(weft_sleep(MS(1)), 0);
        atomic_fetch_add(&tk->ticks, 1);
    }
    return NULL;
}

/* Wait on this plain thread until *v >= want, or PATIENCE_NS. */
static bool reaches(atomic_long *v, long want)
{
    uint64_t end = wt_now_ns() + PATIENCE_NS;
    while (atomic_load(v) < want) {
        if (wt_now_ns() > end)
            return false;
        wt_sleep_ms(1);
    }
    return true;
}

static struct weft_pool_stats stats_of(weft_pool *p)
{
    struct weft_pool_stats s = {.size = sizeof s};
    assert_int_equal(weft_pool_stats(p, &s), 0);
    return s;
}

/* Start the ticker and see it tick once (so it is armed before the load
 * comes). */
static weft_task *start_ticker(weft_pool *p, struct ticker *tk)
{
    weft_task *t;
    assert_int_equal(weft_spawn(&t, p, ticker, tk, NULL), 0);
    assert_true(reaches(&tk->ticks, 1));
    return t;
}

/* -------------------------------------------------------------- cases */

/* Both workers compute without a switch: the ticker ticks on (a spare
 * covers), the crunchers end with every block right. */
static void ticker_while_computing(void **state)
{
    (void)state;
    weft_pool *p = wt_pool(2);
    struct ticker tk = {0};
    weft_task *t = start_ticker(p, &tk);
    atomic_bool release = false;
    struct crunch c[2] = {{&release, 0}, {&release, 0}};
    weft_task *ct[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(weft_spawn(&ct[i], p, cruncher, &c[i], NULL), 0);
    /* Both crunchers are running (each has done a block)... */
    assert_true(reaches(&c[0].blocks, 1) && reaches(&c[1].blocks, 1));
    /* ...and the ticker ticks 50 more times while they still do. */
    long from = atomic_load(&tk.ticks);
    assert_true(reaches(&tk.ticks, from + 50));
    long b0 = atomic_load(&c[0].blocks), b1 = atomic_load(&c[1].blocks);
    assert_true(reaches(&c[0].blocks, b0 + 1) &&
                reaches(&c[1].blocks, b1 + 1));
    struct weft_pool_stats s = stats_of(p);
    assert_true(s.stalls >= 1);
    assert_true(s.covers >= 1);
    atomic_store(&release, true);
    for (int i = 0; i < 2; i++) {
        void *r;
        assert_int_equal(weft_sync_wait(ct[i], &r), 0);
        assert_true(I(r) > 0);
    }
    atomic_store(&tk.stop, true);
    assert_int_equal(weft_sync_wait(t, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* Both workers blocked in read(2): the ticker ticks on, and each reader
 * gets its own byte once it is written. */
static void ticker_while_blocked(void **state)
{
    (void)state;
    weft_pool *p = wt_pool(2);
    struct ticker tk = {0};
    weft_task *t = start_ticker(p, &tk);
    int fds[2][2];
    weft_task *rt[2];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pipe(fds[i]), 0);
        assert_int_equal(
            weft_spawn(&rt[i], p, reader, P(fds[i][0]), NULL), 0);
    }
    long from = atomic_load(&tk.ticks);
    assert_true(reaches(&tk.ticks, from + 50));
    for (int i = 0; i < 2; i++) {
        unsigned char b = (unsigned char)(i + 7);
        assert_int_equal(write(fds[i][1], &b, 1), 1);
    }
    for (int i = 0; i < 2; i++) {
        void *r;
        assert_int_equal(weft_sync_wait(rt[i], &r), 0);
        assert_int_equal(I(r), i + 7);
        close(fds[i][0]);
        close(fds[i][1]);
    }
    atomic_store(&tk.stop, true);
    assert_int_equal(weft_sync_wait(t, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* An echo server on weft_accept / weft_read / weft_write answers a client
 * (a plain thread) while both workers are blocked in read(2). */
static void *echo_conn(void *arg)
{
    int fd = (int)I(arg);
    char buf[256];
    ssize_t n;
    while ((n = weft_read(fd, buf, sizeof buf)) > 0)
        if (weft_write(fd, buf, (size_t)n) != n)
            break;
    weft_close(fd);
    return NULL;
}

static void *echo_server(void *arg)
{
    int lfd = (int)I(arg);
    int fd = weft_accept(lfd, NULL, NULL);
    CHECK(fd >= 0);
    if (fd >= 0)
        echo_conn(P(fd));
    return NULL;
}

static void socket_answered_while_blocked(void **state)
{
    (void)state;
    weft_pool *p = wt_pool(2);
    struct sockaddr_in addr;
    int lfd = iot_listener(&addr, 16);
    weft_task *srv;
    assert_int_equal(weft_spawn(&srv, p, echo_server, P(lfd), NULL), 0);
    int fds[2][2];
    weft_task *rt[2];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pipe(fds[i]), 0);
        assert_int_equal(
            weft_spawn(&rt[i], p, reader, P(fds[i][0]), NULL), 0);
    }
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(c >= 0);
    assert_int_equal(connect(c, (struct sockaddr *)&addr, sizeof addr), 0);
    struct timeval tv = {20, 0};
    assert_int_equal(setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv),
                     0);
    for (int m = 0; m < 50; m++) {
        char out[32], in[32];
        int len = snprintf(out, sizeof out, "message %d", m);
        assert_int_equal(write(c, out, (size_t)len), len);
        ssize_t got = 0;
        while (got < len) {
            ssize_t n = read(c, in + got, (size_t)(len - got));
            assert_true(n > 0); /* 20 s without an answer: not answered */
            got += n;
        }
        assert_memory_equal(in, out, (size_t)len);
    }
    close(c);
    assert_int_equal(weft_sync_wait(srv, NULL), 0);
    for (int i = 0; i < 2; i++) {
        unsigned char b = 1;
        assert_int_equal(write(fds[i][1], &b, 1), 1);
        assert_int_equal(weft_sync_wait(rt[i], NULL), 0);
        close(fds[i][0]);
        close(fds[i][1]);
    }
    weft_close(lfd);
    wt_destroy(p);
    WT_CLEAN();
}

/* One worker, one task that spawns children and then computes without a
 * switch: the children run meanwhile (on a spare), each exactly once, and
 * the task goes on to await them with its own result right. */
#define CHILDREN 64

struct family {
    atomic_bool computing;          /* the parent is in its loop     */
    atomic_int runs[CHILDREN];
    atomic_int ran_during;          /* children that ran meanwhile   */
    atomic_long done;
};

struct child_arg {
    struct family *f;
    int i;
};

static void *child_body(void *arg)
{
    struct child_arg *a = arg;
    atomic_fetch_add(&a->f->runs[a->i], 1);
    if (atomic_load(&a->f->computing))
        atomic_fetch_add(&a->f->ran_during, 1);
    atomic_fetch_add(&a->f->done, 1);
    return P(a->i * 3);
}

static void *parent(void *arg)
{
    struct family *f = arg;
    struct child_arg a[CHILDREN];
    weft_task *t[CHILDREN];
    for (int i = 0; i < CHILDREN; i++) {
        a[i] = (struct child_arg){f, i};
        CHECK_EQ(weft_spawn(&t[i], weft_pool_current(), child_body, &a[i],
                            NULL),
                 0);
    }
    /* Compute until every child has run (on someone else: this worker
     * is held here), or 30 s. */
    atomic_store(&f->computing, true);
    double want = basel(500);
    uint64_t end = wt_now_ns() + MS(30000);
    while (atomic_load(&f->done) < CHILDREN && wt_now_ns() < end)
        CHECK(basel(500) == want);
    atomic_store(&f->computing, false);
    long sum = 0;
    for (int i = 0; i < CHILDREN; i++) {
        void *r;
        CHECK_EQ(weft_await(t[i], &r), 0);
        sum += I(r);
    }
    return P(sum);
}

static void queued_behind_stuck_task(void **state)
{
    (void)state;
    weft_pool *p = wt_pool(1);
    struct family f = {0};
    void *r = wt_run(p, parent, &f);
    assert_int_equal(I(r), 3 * CHILDREN * (CHILDREN - 1) / 2);
    for (int i = 0; i < CHILDREN; i++)
        assert_int_equal(atomic_load(&f.runs[i]), 1);
    assert_int_equal(atomic_load(&f.ran_during), CHILDREN);
    wt_destroy(p);
    WT_CLEAN();
}

/* A task that main's weft_sync_wait runs in the place of the pool's one
 * worker (it hopped there: weft/task.h, "Lending") blocks that thread in
 * a POSIX semaphore.  A task of the pool that was parked, and that a
 * plain thread wakes meanwhile (it is queued on the pool from outside),
 * posts it: the monitor watches the thread that runs the place, finds it
 * stuck while work waits and covers it with a spare.  It watched the
 * worker's own, sleeping thread instead: never stuck, and this hung. */
struct lent_block {
    weft_pool *pool;
    weft_event go;       /* wakes the parked task                  */
    sem_t sem;           /* the lent task blocks its thread on it  */
    atomic_bool blocking;
    pthread_t caller;    /* weft_sync_wait's thread                */
};

static void *lent_waker(void *arg)
{
    struct lent_block *b = arg;
    CHECK_EQ(weft_event_wait(&b->go), 0);
    CHECK_EQ(sem_post(&b->sem), 0);
    return NULL;
}

static void *lent_blocker(void *arg)
{
    struct lent_block *b = arg;
    CHECK_EQ(weft_schedule(b->pool), 0);
    /* On the pool, in its worker's place: on the caller's thread. */
    CHECK(pthread_equal(pthread_self(), b->caller));
    atomic_store(&b->blocking, true);
    /* Bounded: a place never covered fails as a timeout, not a hang. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += PATIENCE_NS / 1000000000u;
    int rc;
    while ((rc = sem_timedwait(&b->sem, &until)) != 0 && errno == EINTR)
        ;
    return P(rc == 0);
}

/* A task of another pool: wakes the parked task once the lent one
 * blocks (so the parked task is queued on the pool from outside). */
static void *lent_poster(void *arg)
{
    struct lent_block *b = arg;
    while (!atomic_load(&b->blocking))
        CHECK_EQ(weft_sleep(MS(1)), 0);
    weft_event_set(&b->go);
    return NULL;
}

static void lent_place_covered(void **state)
{
    (void)state;
    struct lent_block b = {.pool = wt_pool(1), .caller = pthread_self()};
    assert_int_equal(sem_init(&b.sem, 0, 0), 0);
    weft_event_init(&b.go);
    weft_task *w, *t;
    assert_int_equal(weft_spawn(&w, b.pool, lent_waker, &b, NULL), 0);
    /* Parked, and its worker asleep on the idle list (so that the hop
     * below borrows its place: sched/pool.c, weft__pool_lend). */
    uint64_t until = wt_now_ns() + PATIENCE_NS;
    for (;;) {
        struct weft_pool_stats st = {.size = sizeof st};
        assert_int_equal(weft_pool_stats(b.pool, &st), 0);
        if (st.parked == 1 && atomic_load(&b.pool->nidle) == 1)
            break;
        assert_true(wt_now_ns() < until);
        sched_yield();
    }
    weft_pool *other = wt_pool(1);
    weft_task *poster;
    assert_int_equal(weft_spawn(&poster, other, lent_poster, &b, NULL), 0);
    assert_int_equal(weft_task_create(&t, lent_blocker, &b, NULL), 0);
    void *r = NULL;
    assert_int_equal(weft_sync_wait(t, &r), 0);
    assert_int_equal(I(r), 1);
    assert_int_equal(weft_sync_wait(poster, NULL), 0);
    assert_int_equal(weft_sync_wait(w, NULL), 0);
    wt_destroy(other);
    wt_destroy(b.pool);
    sem_destroy(&b.sem);
    WT_CLEAN();
}

/* One worker: tasks that yield sit in its yielded FIFO when a task starts
 * to compute; they go on meanwhile (a spare seizes the FIFO). */
#define YIELDERS 8

struct yielders {
    atomic_bool stop;
    atomic_long turns[YIELDERS];
};

struct yielder_arg {
    struct yielders *y;
    int i;
};

static void *yielder(void *arg)
{
    struct yielder_arg *a = arg;
    while (!atomic_load(&a->y->stop)) {
        atomic_fetch_add(&a->y->turns[a->i], 1);
        CHECK_EQ(weft_yield(), 0);
    }
    return NULL;
}

/* Computes until every yielder has had 100 more turns, or 30 s: returns
 * whether they did. */
static void *hog(void *arg)
{
    struct yielders *y = arg;
    long from[YIELDERS];
    for (int i = 0; i < YIELDERS; i++)
        from[i] = atomic_load(&y->turns[i]);
    uint64_t end = wt_now_ns() + MS(30000);
    for (;;) {
        int behind = 0;
        for (int i = 0; i < YIELDERS; i++)
            behind += atomic_load(&y->turns[i]) < from[i] + 100;
        if (!behind)
            return P(1);
        if (wt_now_ns() > end)
            return P(0);
        basel(200);
    }
}

static void yielded_go_on_while_stuck(void **state)
{
    (void)state;
    weft_pool *p = wt_pool(1);
    struct yielders y = {0};
    struct yielder_arg a[YIELDERS];
    weft_task *t[YIELDERS], *h;
    for (int i = 0; i < YIELDERS; i++) {
        a[i] = (struct yielder_arg){&y, i};
        assert_int_equal(weft_spawn(&t[i], p, yielder, &a[i], NULL), 0);
    }
    for (int i = 0; i < YIELDERS; i++)
        assert_true(reaches(&y.turns[i], 10));
    assert_int_equal(weft_spawn(&h, p, hog, &y, NULL), 0);
    void *r;
    assert_int_equal(weft_sync_wait(h, &r), 0);
    assert_int_equal(I(r), 1);
    atomic_store(&y.stop, true);
    for (int i = 0; i < YIELDERS; i++)
        assert_int_equal(weft_sync_wait(t[i], NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* One worker: a task wakes another (into the worker's LIFO slot) and then
 * computes; the woken one runs meanwhile. */
struct wake_then_hog {
    weft_event ev;
    atomic_bool woken_ran;
};

static void *woken(void *arg)
{
    struct wake_then_hog *w = arg;
    CHECK_EQ(weft_event_wait(&w->ev), 0);
    atomic_store(&w->woken_ran, true);
    return NULL;
}

static void *waker(void *arg)
{
    struct wake_then_hog *w = arg;
    weft_event_set(&w->ev);
    uint64_t end = wt_now_ns() + MS(30000);
    while (!atomic_load(&w->woken_ran) && wt_now_ns() < end)
        basel(200);
    return P(atomic_load(&w->woken_ran));
}

static void woken_task_runs_while_waker_computes(void **state)
{
    (void)state;
    weft_pool *p = wt_pool(1);
    struct wake_then_hog w;
    weft_event_init(&w.ev);
    atomic_init(&w.woken_ran, false);
    weft_task *a, *b;
    assert_int_equal(weft_spawn(&a, p, woken, &w, NULL), 0);
    /* a is parked on the event before b sets it. */
    struct weft_pool_stats s;
    uint64_t end = wt_now_ns() + PATIENCE_NS;
    do {
        s = stats_of(p);
        assert_true(wt_now_ns() < end);
    } while (s.parked_event != 1);
    assert_int_equal(weft_spawn(&b, p, waker, &w, NULL), 0);
    void *r;
    assert_int_equal(weft_sync_wait(b, &r), 0);
    assert_int_equal(I(r), 1);
    assert_int_equal(weft_sync_wait(a, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* After a stall, the spare leaves (no spare covers), and with a short
 * keep-alive (WEFT_SPARE_IDLE_MS, set by main) its thread exits. */
static void spares_retire(void **state)
{
    (void)state;
    weft_pool *p = wt_pool(1);
    struct ticker tk = {0};
    weft_task *t = start_ticker(p, &tk);
    atomic_bool release = false;
    struct crunch c = {&release, 0};
    weft_task *ct;
    assert_int_equal(weft_spawn(&ct, p, cruncher, &c, NULL), 0);
    long from = atomic_load(&tk.ticks);
    assert_true(reaches(&tk.ticks, from + 20));
    struct weft_pool_stats s = stats_of(p);
    assert_true(s.spares_active >= 1);
    assert_true(s.spare_threads >= 1);
    atomic_store(&release, true);
    assert_int_equal(weft_sync_wait(ct, NULL), 0);
    uint64_t end = wt_now_ns() + PATIENCE_NS;
    do {
        s = stats_of(p);
        assert_true(wt_now_ns() < end);
        wt_sleep_ms(1);
    } while (s.spares_active != 0 || s.spare_threads != 0);
    /* The ticker goes on without the spare. */
    from = atomic_load(&tk.ticks);
    assert_true(reaches(&tk.ticks, from + 20));
    atomic_store(&tk.stop, true);
    assert_int_equal(weft_sync_wait(t, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* weft_pool_destroy while a worker is stuck (it waits for the stuck task,
 * which a spare's presence must not disturb), and a second pool destroyed
 * after a stall, its spare waiting to cover again. */
static void *release_after(void *arg)
{
    atomic_bool *release = arg;
    wt_sleep_ms(300);
    atomic_store(release, true);
    return NULL;
}

static void destroy_during_and_after_stall(void **state)
{
    (void)state;
    weft_pool *p = wt_pool(1);
    struct ticker tk = {0};
    weft_task *t = start_ticker(p, &tk);
    atomic_bool release = false;
    struct crunch c = {&release, 0};
    weft_task *ct;
    assert_int_equal(weft_spawn(&ct, p, cruncher, &c, NULL), 0);
    long from = atomic_load(&tk.ticks);
    assert_true(reaches(&tk.ticks, from + 10));
    atomic_store(&tk.stop, true);
    weft_task_detach(t);
    weft_task_detach(ct);
    /* Released from a plain thread while destroy waits for the drain. */
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, release_after, &release), 0);
    wt_destroy(p);
    assert_true(atomic_load(&release));
    pthread_join(th, NULL);

    p = wt_pool(1);
    atomic_store(&release, false);
    atomic_store(&c.blocks, 0);
    atomic_store(&tk.stop, false);
    atomic_store(&tk.ticks, 0);
    t = start_ticker(p, &tk);
    assert_int_equal(weft_spawn(&ct, p, cruncher, &c, NULL), 0);
    from = atomic_load(&tk.ticks);
    assert_true(reaches(&tk.ticks, from + 10));
    atomic_store(&release, true);
    assert_int_equal(weft_sync_wait(ct, NULL), 0);
    atomic_store(&tk.stop, true);
    assert_int_equal(weft_sync_wait(t, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* Without the monitor (WEFT_POOL_NO_MONITOR) nothing covers: a worker
 * that computes holds the ticker, which runs again once it is released. */
static void no_monitor_no_cover(void **state)
{
    (void)state;
    weft_pool_opts o = {.threads = 1, .flags = WEFT_POOL_NO_MONITOR};
    weft_pool *p;
    assert_int_equal(weft_pool_create(&p, &o), 0);
    struct ticker tk = {0};
    weft_task *t = start_ticker(p, &tk);
    atomic_bool release = false;
    struct crunch c = {&release, 0};
    weft_task *ct;
    assert_int_equal(weft_spawn(&ct, p, cruncher, &c, NULL), 0);
    assert_true(reaches(&c.blocks, 1));
    long held = atomic_load(&tk.ticks);
    wt_sleep_ms(200); /* no condition can say "nothing happened" */
    assert_true(atomic_load(&tk.ticks) <= held + 1);
    struct weft_pool_stats s = stats_of(p);
    assert_int_equal(s.stalls, 0);
    assert_int_equal(s.covers, 0);
    atomic_store(&release, true);
    assert_int_equal(weft_sync_wait(ct, NULL), 0);
    assert_true(reaches(&tk.ticks, held + 10));
    atomic_store(&tk.stop, true);
    assert_int_equal(weft_sync_wait(t, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* The options' checks. */
static void bad_options(void **state)
{
    (void)state;
    weft_pool *p = NULL;
    weft_pool_opts o = {.threads = 1, .spares = WEFT_POOL_SPARES_MAX + 1};
    assert_int_equal(weft_pool_create(&p, &o), -EINVAL);
    o = (weft_pool_opts){.threads = 1, .flags = 2};
    assert_int_equal(weft_pool_create(&p, &o), -EINVAL);
    assert_null(p);
    o = (weft_pool_opts){.threads = 1, .spares = 1};
    assert_int_equal(weft_pool_create(&p, &o), 0);
    wt_destroy(p);
}

int main(void)
{
    wt_main_init();
    /* A short keep-alive for spares_retire (read at the first spare). */
    setenv("WEFT_SPARE_IDLE_MS", "100", 1);
    const struct CMUnitTest tests[] = {
        WT_TEST1(ticker_while_computing),
        WT_TEST1(ticker_while_blocked),
        WT_TEST1(socket_answered_while_blocked),
        WT_TEST1(queued_behind_stuck_task),
        WT_TEST1(lent_place_covered),
        WT_TEST1(yielded_go_on_while_stuck),
        WT_TEST1(woken_task_runs_while_waker_computes),
        WT_TEST1(spares_retire),
        WT_TEST1(destroy_during_and_after_stall),
        WT_TEST1(no_monitor_no_cover),
        WT_TEST1(bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
