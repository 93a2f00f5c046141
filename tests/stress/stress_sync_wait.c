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
 *
 * Four plain threads spawning into two workers on a small machine often
 * preempt an enqueue into the pool's global queue between its two steps
 * (liburcu's: the tail's exchange, then the link).  liburcu's blocking
 * dequeue then sleeps 10 ms in poll(NULL, 0, 10); the pool must never
 * (src/sched/pool.c, dequeue_linked).  This program's own poll() counts
 * such sleeps (liburcu's call binds to it: the executable's definition
 * comes first), and the run fails if there was one.  With the blocking
 * dequeue: 11-62 sleeps in a run of 0.5 s, 2,723 in one of 29 s.
 */
#include "stress.h"

#include <poll.h>
#include <stdatomic.h>
#include <time.h>

static atomic_long poll_sleeps;

int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
    if (!fds && !nfds)
        atomic_fetch_add_explicit(&poll_sleeps, 1, memory_order_relaxed);
    struct timespec ts = {timeout / 1000, (long)(timeout % 1000) * 1000000};
    return ppoll(fds, nfds, timeout < 0 ? NULL : &ts, NULL);
}

/* 400,000: about 1 us each natively on the 2-core machine (0.3-0.9 s),
 * and 170 us under ASan, where each new task's fake stack is mapped and
 * unmapped (at WEFT_STRESS_SCALE 0.1: 7 s). */
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
    long sleeps = atomic_load(&poll_sleeps);
    printf("stress_sync_wait: sleeps in poll(NULL, 0, ms): %ld\n", sleeps);
    CHECK_EQ(sleeps, 0);

    st_phase = "destroy";
    REQUIRE_EQ(weft_pool_destroy(pool), 0);
    return st_finish();
}
