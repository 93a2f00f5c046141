/*
 * stress_steal.c — steal storm.  On a 4-worker pool one task spins on its
 * worker (never yields) while a producer task spawns 200,000 tiny tasks in
 * bursts of random size, with random pauses and occasional yields.  Every
 * task must run exactly once (a per-task atomic flag catches a double run
 * or a lost task) and the count must be exact.  Work queued behind the
 * spinning task, or on the producer's worker, has to be stolen.
 */
#include "stress.h"

enum { NTASKS = 200000, ROUNDS = 3 };

static long ntasks;
static atomic_uchar *ran;
static atomic_long count, doubles;
static atomic_int busy_started, stop_busy;
static weft_event all_done;

static void *tiny(void *arg)
{
    intptr_t i = I(arg);
    if (atomic_exchange(&ran[i], 1) != 0)
        atomic_fetch_add(&doubles, 1);
    long c = atomic_fetch_add(&count, 1) + 1;
    if ((c & 1023) == 0)
        st_tick();
    if (c == ntasks)
        weft_event_set(&all_done);
    return NULL;
}

static void *busy(void *arg)
{
    (void)arg;
    atomic_store(&busy_started, 1);
    unsigned long spins = 0;
    while (!atomic_load(&stop_busy))
        spins++;
    return P(spins != 0);
}

static void *producer(void *arg)
{
    uint64_t rs = st_seed((uint64_t)I(arg));
    weft_pool *p = weft_pool_current();
    long i = 0;
    while (i < ntasks) {
        long burst = 1 + (long)(st_rand(&rs) % 1024);
        for (long j = 0; j < burst && i < ntasks; j++, i++) {
            int rc = weft_spawn(NULL, p, tiny, P(i), NULL);
            CHECK_EQ(rc, 0);
            if (rc != 0) {
                /* count it so the run ends; the check already failed */
                atomic_fetch_add(&count, 1);
            }
        }
        uint64_t r = st_rand(&rs);
        if (r % 4 == 0)
            st_spin((unsigned)((r >> 8) % 5000));
        if (r % 16 == 1)
            CHECK_EQ(weft_yield(), 0);
    }
    return NULL;
}

int main(void)
{
    st_start("stress_steal", 150);
    ntasks = st_scaled(NTASKS);
    ran = calloc((size_t)ntasks, sizeof *ran);
    REQUIRE(ran != NULL);
    weft_pool *p = st_pool(4, "steal");

    for (int round = 0; round < ROUNDS; round++) {
        for (long i = 0; i < ntasks; i++)
            atomic_store(&ran[i], 0);
        atomic_store(&count, 0);
        atomic_store(&doubles, 0);
        atomic_store(&busy_started, 0);
        atomic_store(&stop_busy, 0);
        weft_event_init(&all_done);

        st_phase = "start busy task";
        weft_task *b = NULL, *pr = NULL;
        REQUIRE_EQ(weft_spawn(&b, p, busy, NULL, NULL), 0);
        while (!atomic_load(&busy_started))
            sched_yield();

        st_phase = "steal storm";
        uint64_t t0 = st_now_ns();
        REQUIRE_EQ(weft_spawn(&pr, p, producer, P(round + 1), NULL), 0);
        REQUIRE_EQ(weft_event_wait(&all_done), 0);
        st_report("tiny tasks with one worker spinning", ntasks, t0);
        REQUIRE_EQ(weft_sync_wait(pr, NULL), 0);
        atomic_store(&stop_busy, 1);
        void *r = NULL;
        REQUIRE_EQ(weft_sync_wait(b, &r), 0);

        long missing = 0;
        for (long i = 0; i < ntasks; i++)
            missing += atomic_load(&ran[i]) == 0;
        REQUIRE_EQ(atomic_load(&count), ntasks);
        REQUIRE_EQ(atomic_load(&doubles), 0);
        REQUIRE_EQ(missing, 0);
    }
    st_phase = "destroy";
    REQUIRE_EQ(weft_pool_destroy(p), 0);
    REQUIRE_EQ(atomic_load(&count), ntasks);
    free(ran);
    return st_finish();
}
