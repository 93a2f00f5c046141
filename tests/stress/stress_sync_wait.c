/*
 * stress_sync_wait.c — 400,000 spawn + sync_wait round trips from 4
 * plain threads (100,000 each) with random gaps: a random spin of 0..2000
 * iterations before some round trips, an occasional sched_yield, task
 * bodies that sometimes spin so the waiter either finds the task done or
 * must sleep.  One round trip in 16 is a lazy task that hops onto the pool
 * with weft_schedule (sync_wait's other path).
 *
 * A lost wakeup (in sync_wait's event, in worker parking, in the
 * submission path) leaves a thread blocked forever: the watchdog turns
 * that into a failure.
 */
#include "stress.h"

/* 400,000: a round trip takes 1-3 us natively on the 2-core machine, but
 * 30-130 us in a state of it where every handoff sleeps and pays a full
 * futex wake (seen in CI and on an idle machine alike, for minutes at a
 * time: docs/testing.md); a million then came within 20 s of the limit. */
enum { NTHREADS = 4, PER_THREAD = 100000 };

static weft_pool *pool;
static long per_thread;

static void *body(void *arg)
{
    intptr_t v = I(arg);
    if ((v & 7) == 3)
        st_spin((unsigned)(v % 1000));
    return P(v * 2 + 1);
}

static void *hop_body(void *arg)
{
    CHECK_EQ(weft_schedule(pool), 0);
    CHECK(weft_pool_current() == pool);
    return P(I(arg) * 2 + 1);
}

static void *client(void *arg)
{
    intptr_t id = I(arg);
    uint64_t rs = st_seed((uint64_t)id + 1);
    for (long i = 0; i < per_thread; i++) {
        uint64_t r = st_rand(&rs);
        if (r % 4 == 0)
            st_spin((unsigned)((r >> 8) % 2001));
        if (r % 128 == 1)
            sched_yield();
        intptr_t v = (intptr_t)(id * 10000000 + i);
        weft_task *t = NULL;
        int rc = ((r >> 20) % 16 == 0) ? weft_task_create(&t, hop_body, P(v), NULL)
                                       : weft_spawn(&t, pool, body, P(v), NULL);
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

int main(void)
{
    st_start("stress_sync_wait", 150);
    per_thread = st_scaled(PER_THREAD);
    unsigned workers = st_workers_2_to_4();
    pool = st_pool(workers, "sw");

    st_phase = "round trips";
    uint64_t t0 = st_now_ns();
    pthread_t th[NTHREADS];
    for (intptr_t i = 0; i < NTHREADS; i++)
        REQUIRE(pthread_create(&th[i], NULL, client, P(i)) == 0);
    for (int i = 0; i < NTHREADS; i++)
        REQUIRE(pthread_join(th[i], NULL) == 0);
    st_report("spawn+sync_wait round trips (4 threads)", per_thread * NTHREADS, t0);

    st_phase = "destroy";
    REQUIRE_EQ(weft_pool_destroy(pool), 0);
    return st_finish();
}
