/*
 * stress_pool_churn.c — pool create/destroy 1,000 times with work in
 * flight.  Each iteration: a 2-thread pool, 50 detached tasks (some spawn
 * detached children, some spawn and await a child, some yield, some hop
 * with weft_schedule onto their own pool), then weft_pool_destroy at
 * once.  Destroy must drain everything: the count is exact when it
 * returns.
 *
 * Then pools of 8 to 31 workers, monitor on, made and destroyed from
 * three threads at once, each with 20 detached tasks that compute for
 * 0.3 ms and sleep, destroyed with weft_pool_destroy_for until it
 * returns 0.  The monitor of a pool being destroyed once looked at its
 * workers after destroy had joined them (their thread blocks and CPU
 * clocks gone with them): a crash every few thousand pools.
 */
#include "stress.h"

#include <weft/timer.h>

enum { ITERS = 1000, PER_POOL = 50 };

static atomic_long ran;

static void *leaf(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ran, 1);
    return arg;
}

static void *mixed(void *arg)
{
    intptr_t k = I(arg);
    weft_pool *p = weft_pool_current();
    CHECK(p != NULL);
    switch (k % 5) {
    case 0:
        break;
    case 1: /* two detached children */
        CHECK_EQ(weft_spawn(NULL, p, leaf, NULL, NULL), 0);
        CHECK_EQ(weft_spawn(NULL, p, leaf, NULL, NULL), 0);
        break;
    case 2: /* yields */
        for (int i = 0; i < 3; i++)
            CHECK_EQ(weft_yield(), 0);
        break;
    case 3: { /* spawn and await */
        weft_task *t = NULL;
        CHECK_EQ(weft_spawn(&t, p, leaf, P(k), NULL), 0);
        void *r = NULL;
        CHECK_EQ(weft_await(t, &r), 0);
        CHECK_EQ(I(r), k);
        break;
    }
    default: /* schedule onto its own pool: a yield */
        CHECK_EQ(weft_schedule(p), 0);
        CHECK(weft_pool_current() == p);
        break;
    }
    atomic_fetch_add(&ran, 1);
    return NULL;
}

enum { WIDE_ROUNDS = 200, WIDE_THREADS = 3, WIDE_TASKS = 20 };

static void *computes(void *arg)
{
    uint64_t t0 = st_now_ns();
    while (st_now_ns() - t0 < 300000)
        ;
    CHECK_EQ(weft_sleep((uint64_t)(I(arg) % 3) * 100000u), 0);
    atomic_fetch_add(&ran, 1);
    return NULL;
}

static void *wide_churn(void *arg)
{
    uint64_t seed = st_seed((uint64_t)I(arg));
    long rounds = st_scaled(WIDE_ROUNDS);
    for (long r = 0; r < rounds; r++) {
        weft_pool_opts o = {.threads = 8 + (unsigned)(st_rand(&seed) % 24),
                            .name = "wide"};
        weft_pool *p = NULL;
        REQUIRE_EQ(weft_pool_create(&p, &o), 0);
        for (intptr_t k = 0; k < WIDE_TASKS; k++)
            REQUIRE_EQ(weft_spawn(NULL, p, computes, P(k), NULL), 0);
        int rc;
        while ((rc = weft_pool_destroy_for(p, 100000)) == -ETIMEDOUT)
            ;
        REQUIRE_EQ(rc, 0);
        st_tick();
    }
    return NULL;
}

int main(void)
{
    st_start("stress_pool_churn", 150);
    long iters = st_scaled(ITERS);
    /* 50 tasks + 10 * 2 detached children + 10 awaited children */
    const long per_pool = PER_POOL + (PER_POOL / 5) * 2 + PER_POOL / 5;

    st_phase = "create/spawn/destroy";
    uint64_t t0 = st_now_ns();
    for (long it = 0; it < iters; it++) {
        atomic_store(&ran, 0);
        weft_pool *p = st_pool(2, "churn");
        for (intptr_t k = 0; k < PER_POOL; k++)
            REQUIRE_EQ(weft_spawn(NULL, p, mixed, P(k), NULL), 0);
        REQUIRE_EQ(weft_pool_destroy(p), 0);
        long got = atomic_load(&ran);
        if (got != per_pool) {
            fprintf(stderr, "iteration %ld: %ld tasks ran before destroy "
                    "returned, want %ld\n", it, got, per_pool);
            CHECK_EQ(got, per_pool);
        }
        st_tick();
    }
    st_report("pool lifetimes", iters, t0);

    st_phase = "wide pools, monitor on, from three threads";
    atomic_store(&ran, 0);
    t0 = st_now_ns();
    pthread_t th[WIDE_THREADS];
    for (intptr_t i = 0; i < WIDE_THREADS; i++)
        REQUIRE_EQ(pthread_create(&th[i], NULL, wide_churn, P(i)), 0);
    for (int i = 0; i < WIDE_THREADS; i++)
        REQUIRE_EQ(pthread_join(th[i], NULL), 0);
    long wide = WIDE_THREADS * st_scaled(WIDE_ROUNDS);
    CHECK_EQ(atomic_load(&ran), wide * WIDE_TASKS);
    st_report("wide pool lifetimes", wide, t0);
    return st_finish();
}
