/*
 * stress_destroy_race.c — a pool destroyed the moment its last task ends,
 * while the runtime (or a user thread) that put that task on the pool may
 * still be finishing the submission.
 *
 * Phase 1 (runtime): a task on pool B hops with weft_schedule onto a fresh
 *   pool A and ends there; main's sync_wait returns and main destroys A at
 *   once.  B's worker, which queued the task on A, must not touch A after
 *   the task could have ended (destroy frees A).
 * Phase 2 (user): a plain thread spawns a detached task onto a fresh pool
 *   A; the task sets an event; main, woken by it, destroys A at once,
 *   possibly while the spawning thread is still inside weft_spawn.
 *   weft_pool_destroy documents racing spawns (-ESHUTDOWN), so it must not
 *   free the pool under a spawn that already queued its task.
 *
 * In a plain build a late access to the freed pool usually goes unseen;
 * run this under ASan or TSan (-Db_sanitize=address / thread).
 */
#include "stress.h"

enum { ITERS = 3000 };

static weft_pool *target; /* published by spawn / an event */

static void *hop_and_end(void *arg)
{
    CHECK_EQ(weft_schedule(target), 0);
    CHECK(weft_pool_current() == target);
    return arg;
}

struct spawner {
    weft_event go;     /* main -> spawner: target is ready          */
    weft_event ran;    /* the task -> main: it ran                  */
    weft_event gone;   /* spawner -> main: its weft_spawn returned  */
    int stop;
};

static _Atomic(struct spawner *) cur;

static void *set_ran(void *arg)
{
    struct spawner *s = arg;
    weft_event_set(&s->ran);
    return NULL;
}

static void *spawner_thread(void *arg)
{
    (void)arg;
    for (;;) {
        struct spawner *s;
        while ((s = atomic_load(&cur)) == NULL)
            sched_yield();
        CHECK_EQ(weft_event_wait(&s->go), 0);
        if (s->stop) {
            weft_event_set(&s->gone);
            return NULL;
        }
        CHECK_EQ(weft_spawn(NULL, target, set_ran, s, NULL), 0);
        atomic_store(&cur, NULL);
        weft_event_set(&s->gone);
    }
}

int main(void)
{
    st_start("stress_destroy_race", 150);
    long iters = st_scaled(ITERS);

    st_phase = "schedule onto a pool, destroy it when the task ends";
    weft_pool *b = st_pool(2, "dr-b");
    uint64_t t0 = st_now_ns();
    for (long i = 0; i < iters; i++) {
        target = st_pool(1, "dr-a");
        weft_task *t = NULL;
        REQUIRE_EQ(weft_spawn(&t, b, hop_and_end, P(i), NULL), 0);
        void *r = NULL;
        REQUIRE_EQ(weft_sync_wait(t, &r), 0);
        CHECK_EQ(I(r), i);
        REQUIRE_EQ(weft_pool_destroy(target), 0);
        st_tick();
    }
    st_report("hop + destroy", iters, t0);
    REQUIRE_EQ(weft_pool_destroy(b), 0);

    st_phase = "spawn from a thread, destroy when the task ran";
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, spawner_thread, NULL) == 0);
    t0 = st_now_ns();
    for (long i = 0; i <= iters; i++) {
        struct spawner s;
        weft_event_init(&s.go);
        weft_event_init(&s.ran);
        weft_event_init(&s.gone);
        s.stop = i == iters;
        if (!s.stop)
            target = st_pool(1, "dr-a");
        atomic_store(&cur, &s);
        weft_event_set(&s.go);
        if (!s.stop) {
            REQUIRE_EQ(weft_event_wait(&s.ran), 0);
            REQUIRE_EQ(weft_pool_destroy(target), 0);
        }
        REQUIRE_EQ(weft_event_wait(&s.gone), 0);
        st_tick();
    }
    REQUIRE(pthread_join(th, NULL) == 0);
    st_report("spawn + destroy", iters, t0);
    return st_finish();
}
