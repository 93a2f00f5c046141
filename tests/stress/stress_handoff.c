/*
 * stress_handoff.c — work queued while a worker searches, with the other
 * worker's only task one that never yields.
 *
 * A searching worker makes submitters skip the wake-up (they leave their
 * task to it), and the last searcher to find work wakes another worker
 * only if its look finds something left (sched/pool.c, found_work).  If
 * that look missed a task, the task would wait behind a task that never
 * yields for as long as that task runs.  Each round, on a 2-worker pool:
 *
 *   - main spawns a hog H that spins until `released` is set (bounded:
 *     it gives up after HOG_LIMIT_NS and reports the round as lost) and,
 *     after a random gap, the task that sets `released`: B, a plain task,
 *     or S, which first sleeps 5-100 us (its timer must fire while H
 *     holds a worker: found_work's look counts armed timers); H first in
 *     three rounds of four, else the releaser first (then S's timer may
 *     sit on the heap of the worker that goes on to run H);
 *   - the gap is random: none, a spin of up to 3000 iterations, a
 *     sched_yield, or (one round in 64) a 2 ms sleep, so that the workers
 *     are parked, searching, or between the two when the tasks arrive,
 *     and which of them takes H varies;
 *   - main sync_waits for H and checks that it was released in time.
 *
 * 10,000 rounds.  A lost hand-off shows as a hog that ran out its limit
 * (a failed check, and the round goes on), and a lost wake-up elsewhere
 * as a stall (the watchdog).
 */
#include "stress.h"

#include <weft/timer.h>

enum { ROUNDS = 10000 };
#define HOG_LIMIT_NS (5ull * 1000000000u)

static weft_pool *pool;
static atomic_int released;
static atomic_long late;

static void *hog(void *arg)
{
    (void)arg;
    uint64_t t0 = st_now_ns();
    unsigned long n = 0;
    while (!atomic_load_explicit(&released, memory_order_acquire)) {
        if ((++n & 1023) == 0 && st_now_ns() - t0 > HOG_LIMIT_NS) {
            atomic_fetch_add(&late, 1);
            return P(0);
        }
    }
    return P(1);
}

static void *release_now(void *arg)
{
    (void)arg;
    atomic_store_explicit(&released, 1, memory_order_release);
    return NULL;
}

static void *release_after_sleep(void *arg)
{
    CHECK_EQ(weft_sleep((uint64_t)I(arg)), 0);
    atomic_store_explicit(&released, 1, memory_order_release);
    return NULL;
}

static int spawn_releaser(bool sleeper, uint64_t r)
{
    if (sleeper)
        return weft_spawn(NULL, pool, release_after_sleep,
                          P(5000 + (r >> 40) % 95000), NULL);
    return weft_spawn(NULL, pool, release_now, NULL, NULL);
}

int main(void)
{
    st_start("stress_handoff", 240);
    long rounds = st_scaled(ROUNDS);
    pool = st_pool(2, "handoff");
    uint64_t rs = st_seed(7);

    st_phase = "hog + releaser";
    uint64_t t0 = st_now_ns();
    long timed = 0;
    for (long i = 0; i < rounds; i++) {
        uint64_t r = st_rand(&rs);
        atomic_store(&released, 0);
        if (r % 64 == 0)
            st_sleep_ms(2); /* both workers parked */
        bool sleeper = (r >> 32) % 4 == 0;
        bool hog_first = (r >> 4) % 4 != 0;
        weft_task *h = NULL;
        int rc;
        if (hog_first) {
            rc = weft_spawn(&h, pool, hog, NULL, NULL);
            REQUIRE_EQ(rc, 0);
        } else {
            rc = spawn_releaser(sleeper, r);
            CHECK_EQ(rc, 0);
            if (rc != 0)
                atomic_store(&released, 1);
        }
        switch ((r >> 8) % 4) {
        case 0:
            break;
        case 1:
            st_spin((unsigned)((r >> 16) % 3000));
            break;
        case 2:
            sched_yield();
            break;
        default:
            st_spin((unsigned)((r >> 16) % 300));
            break;
        }
        if (hog_first) {
            rc = spawn_releaser(sleeper, r);
            CHECK_EQ(rc, 0);
            if (rc != 0)
                atomic_store(&released, 1);
        } else {
            rc = weft_spawn(&h, pool, hog, NULL, NULL);
            REQUIRE_EQ(rc, 0);
        }
        timed += sleeper;
        void *ok = NULL;
        CHECK_EQ(weft_sync_wait(h, &ok), 0);
        CHECK(I(ok) == 1);
        if ((i & 63) == 0)
            st_tick();
    }
    st_report("rounds", rounds, t0);
    printf("stress_handoff: %ld rounds released by a sleeper; %ld hogs ran "
           "out their limit\n",
           timed, atomic_load(&late));
    CHECK_EQ(atomic_load(&late), 0);

    st_phase = "destroy";
    REQUIRE_EQ(weft_pool_destroy(pool), 0);
    return st_finish();
}
