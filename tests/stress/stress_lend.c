/*
 * stress_lend.c — attacks the lending of a worker's place to a thread in
 * weft_sync_wait (sched/pool.c, "Lending"): 4 plain threads make 40,000
 * lazy tasks each that hop onto a pool of 1 or 2 workers, where the waiting
 * thread takes an idle worker's place and runs the task, until the task
 * gives the place back by doing, at random, one of:
 *
 *   - return at once (the place goes back, the worker still asleep);
 *   - spawn a detached child (it waits in the lent place's deque: the
 *     worker must be woken for it);
 *   - spawn a child and await it (inline, or parked on a stolen one);
 *   - sleep 0-50 us (a timer on the lent place's heap);
 *   - yield (the place goes back; the worker runs the task next);
 *   - wake a task parked on an event (it goes to the lent place's slot).
 *
 * One in four first computes a while in the lent place, so that the
 * worker's own sleep ends (at a timer's deadline) while its place is lent.
 * Meanwhile a background task on the pool keeps arming short sleeps, so
 * workers go to sleep with and without deadlines, wake while lent, and
 * race the giving back.  Every child must run exactly once (counted), and
 * a place that is never given back or a worker that is never woken for
 * what its place was given leaves a thread or the final drain waiting:
 * the watchdog turns that into a failure.
 */
#include "stress.h"

#include <weft/event.h>
#include <weft/timer.h>

enum { NTHREADS = 4, PER_THREAD = 40000 };

static weft_pool *pool;
static long per_thread;
static atomic_long children_run;
static atomic_long children_made;
static atomic_int background_stop;

static void *child(void *arg)
{
    atomic_fetch_add(&children_run, 1);
    return P(I(arg) + 1);
}

static void *set_event(void *arg)
{
    weft_event_set(arg);
    return NULL;
}

static void *wait_event(void *arg)
{
    CHECK_EQ(weft_event_wait(arg), 0);
    atomic_fetch_add(&children_run, 1);
    return NULL;
}

static void *hop(void *arg)
{
    intptr_t v = I(arg);
    CHECK_EQ(weft_schedule(pool), 0);
    CHECK(weft_pool_current() == pool);
    /* Hold the place a while, one time in four: the worker's own sleep
     * may end meanwhile (a deadline, the background's timers). */
    if ((v / 6) % 4 == 0)
        st_spin((unsigned)(v % 20000));
    weft_task *t = NULL;
    switch (v % 6) {
    case 0:
        break;
    case 1:
        atomic_fetch_add(&children_made, 1);
        CHECK_EQ(weft_spawn(NULL, pool, child, P(v), NULL), 0);
        break;
    case 2: {
        void *r = NULL;
        atomic_fetch_add(&children_made, 1);
        CHECK_EQ(weft_spawn(&t, pool, child, P(v), NULL), 0);
        if ((v / 6) % 2)
            st_spin((unsigned)(v % 500)); /* a thief may take it first */
        CHECK_EQ(weft_await(t, &r), 0);
        CHECK_EQ(I(r), v + 1);
        break;
    }
    case 3:
        CHECK_EQ(weft_sleep((uint64_t)(v % 50) * 1000), 0);
        break;
    case 4:
        CHECK_EQ(weft_yield(), 0);
        break;
    default: {
        /* A waiter parked on an event, woken from the lent place. */
        weft_event ev;
        weft_event_init(&ev);
        atomic_fetch_add(&children_made, 1);
        CHECK_EQ(weft_spawn(&t, pool, wait_event, &ev, NULL), 0);
        weft_task *s = NULL;
        CHECK_EQ(weft_spawn(&s, pool, set_event, &ev, NULL), 0);
        weft_event_set(&ev);
        CHECK_EQ(weft_await(t, NULL), 0);
        CHECK_EQ(weft_await(s, NULL), 0);
        break;
    }
    }
    CHECK(weft_pool_current() == pool);
    return P(v * 2 + 1);
}

static void *background(void *arg)
{
    (void)arg;
    uint64_t rs = st_seed(99);
    while (!atomic_load(&background_stop)) {
        uint64_t r = st_rand(&rs);
        CHECK_EQ(weft_sleep((r % 200) * 1000), 0);
    }
    return NULL;
}

static void *client(void *arg)
{
    intptr_t id = I(arg);
    uint64_t rs = st_seed((uint64_t)id + 7);
    for (long i = 0; i < per_thread; i++) {
        uint64_t r = st_rand(&rs);
        if (r % 8 == 0)
            st_spin((unsigned)((r >> 8) % 3001)); /* let workers sleep */
        intptr_t v = (intptr_t)(id * 10000000 + (intptr_t)((r >> 16) % 6) +
                                6 * i);
        weft_task *t = NULL;
        int rc = weft_task_create(&t, hop, P(v), NULL);
        CHECK_EQ(rc, 0);
        if (rc != 0)
            continue;
        void *out = NULL;
        CHECK_EQ(weft_sync_wait(t, &out), 0);
        CHECK_EQ(I(out), v * 2 + 1);
        if ((i & 255) == 0)
            st_tick();
    }
    return NULL;
}

static void round_on(unsigned workers)
{
    pool = st_pool(workers, "lend");
    atomic_store(&background_stop, 0);
    weft_task *bg = NULL;
    REQUIRE_EQ(weft_spawn(&bg, pool, background, NULL, NULL), 0);
    pthread_t th[NTHREADS];
    for (intptr_t i = 0; i < NTHREADS; i++)
        REQUIRE(pthread_create(&th[i], NULL, client, P(i)) == 0);
    for (int i = 0; i < NTHREADS; i++)
        REQUIRE(pthread_join(th[i], NULL) == 0);
    atomic_store(&background_stop, 1);
    REQUIRE_EQ(weft_sync_wait(bg, NULL), 0);
    /* The detached children: the drain waits for every one. */
    REQUIRE_EQ(weft_pool_destroy(pool), 0);
    REQUIRE_EQ(atomic_load(&children_run), atomic_load(&children_made));
}

int main(void)
{
    st_start("stress_lend", 150);
    per_thread = st_scaled(PER_THREAD);
    uint64_t t0 = st_now_ns();
    st_phase = "1 worker";
    round_on(1);
    st_phase = "2 workers";
    round_on(2);
    st_report("lazy hops with a lent place (4 threads, 1 and 2 workers)",
              2 * per_thread * NTHREADS, t0);
    return st_finish();
}
