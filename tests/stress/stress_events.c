/*
 * stress_events.c — events between a plain thread and a task.
 *
 * Phase 1: 100,000 rounds of ping-pong between main and one task through
 *   fresh events (re-initialised every round, on main's stack, reused as
 *   soon as the other side's wait returned), with random spins on both
 *   sides so a set lands before, during or after the wait parks.
 * Phase 2: wait_for with tiny timeouts racing a set, in three directions
 *   (task waits / thread sets, thread waits / task sets, task waits / task
 *   sets).  The result must be 0 or -ETIMEDOUT; if 0 the event is set; a
 *   waiter that timed out then waits again without a timeout and must get
 *   0 (its timed-out registration did not break the event).
 */
#include "stress.h"

enum { PINGPONG = 100000, RACES = 10000 };

static long pingpong, races;

/* ---------------- phase 1 ---------------- */

struct slot {
    weft_event ping, pong;
    struct slot *next;
    long seq;
    unsigned spin;
};

static void *pong_task(void *arg)
{
    struct slot *cur = arg;
    uint64_t rs = st_seed(99);
    for (long r = 0; r < pingpong; r++) {
        CHECK_EQ(weft_event_wait(&cur->ping), 0);
        CHECK_EQ(cur->seq, r);
        struct slot *next = cur->next; /* read before the set releases it */
        uint64_t x = st_rand(&rs);
        if (x % 4 == 0)
            st_spin((unsigned)((x >> 8) % 1000));
        weft_event_set(&cur->pong);
        cur = next;
    }
    return NULL;
}

static void phase_pingpong(weft_pool *p)
{
    st_phase = "thread<->task ping-pong";
    struct slot s[2];
    memset(s, 0, sizeof s);
    weft_event_init(&s[0].ping);
    weft_event_init(&s[0].pong);
    s[0].seq = 0;
    weft_task *t = NULL;
    REQUIRE_EQ(weft_spawn(&t, p, pong_task, &s[0], NULL), 0);
    uint64_t rs = st_seed(7);
    uint64_t t0 = st_now_ns();
    for (long r = 0; r < pingpong; r++) {
        struct slot *cur = &s[r % 2], *nxt = &s[(r + 1) % 2];
        /* nxt was last used in round r-1, whose pong we waited for */
        weft_event_init(&nxt->ping);
        weft_event_init(&nxt->pong);
        nxt->seq = r + 1;
        cur->next = nxt;
        uint64_t x = st_rand(&rs);
        if (x % 4 == 0)
            st_spin((unsigned)((x >> 8) % 1000));
        weft_event_set(&cur->ping);
        CHECK_EQ(weft_event_wait(&cur->pong), 0);
        if ((r & 255) == 0)
            st_tick();
    }
    REQUIRE_EQ(weft_sync_wait(t, NULL), 0);
    st_report("ping-pong rounds (2 wakeups each)", pingpong, t0);
}

/* ---------------- phase 2 ---------------- */

struct race {
    weft_event ev;
    uint64_t tmo;
    unsigned spin;
};

static atomic_long n_ok, n_timeout;

static int timed_wait(struct race *rc)
{
    int r = weft_event_wait_for(&rc->ev, rc->tmo);
    if (r == 0) {
        CHECK(weft_event_is_set(&rc->ev));
        atomic_fetch_add(&n_ok, 1);
    } else if (r == -ETIMEDOUT) {
        atomic_fetch_add(&n_timeout, 1);
        /* the set is still coming: a plain wait must see it */
        CHECK_EQ(weft_event_wait(&rc->ev), 0);
        CHECK(weft_event_is_set(&rc->ev));
    } else {
        CHECK(r == 0 || r == -ETIMEDOUT);
    }
    return r;
}

static void *waiter_task(void *arg)
{
    return P(timed_wait(arg));
}

static void *setter_task(void *arg)
{
    struct race *rc = arg;
    st_spin(rc->spin);
    weft_event_set(&rc->ev);
    return NULL;
}

static void phase_races(weft_pool *p)
{
    uint64_t rs = st_seed(3);
    static const char *names[3] = {
        "wait_for race: task waits, thread sets",
        "wait_for race: thread waits, task sets",
        "wait_for race: task waits, task sets",
    };
    for (int dir = 0; dir < 3; dir++) {
        st_phase = names[dir];
        atomic_store(&n_ok, 0);
        atomic_store(&n_timeout, 0);
        uint64_t t0 = st_now_ns();
        for (long i = 0; i < races; i++) {
            struct race rc;
            weft_event_init(&rc.ev);
            uint64_t x = st_rand(&rs);
            rc.tmo = (x % 50) * 1000;               /* 0..49 us */
            rc.spin = (unsigned)((x >> 16) % 20000); /* up to ~tens of us */
            weft_task *w = NULL, *s = NULL;
            void *r = P(1);
            switch (dir) {
            case 0:
                REQUIRE_EQ(weft_spawn(&w, p, waiter_task, &rc, NULL), 0);
                st_spin(rc.spin);
                weft_event_set(&rc.ev);
                REQUIRE_EQ(weft_sync_wait(w, &r), 0);
                CHECK(I(r) == 0 || I(r) == -ETIMEDOUT);
                break;
            case 1:
                REQUIRE_EQ(weft_spawn(&s, p, setter_task, &rc, NULL), 0);
                timed_wait(&rc);
                REQUIRE_EQ(weft_sync_wait(s, NULL), 0);
                break;
            default:
                REQUIRE_EQ(weft_spawn(&w, p, waiter_task, &rc, NULL), 0);
                REQUIRE_EQ(weft_spawn(&s, p, setter_task, &rc, NULL), 0);
                REQUIRE_EQ(weft_sync_wait(w, &r), 0);
                CHECK(I(r) == 0 || I(r) == -ETIMEDOUT);
                REQUIRE_EQ(weft_sync_wait(s, NULL), 0);
                break;
            }
            if ((i & 63) == 0)
                st_tick();
        }
        st_report(names[dir], races, t0);
        printf("%s:   %ld returned 0, %ld timed out\n", st_name,
               atomic_load(&n_ok), atomic_load(&n_timeout));
        REQUIRE_EQ(atomic_load(&n_ok) + atomic_load(&n_timeout), races);
    }
}

int main(void)
{
    st_start("stress_events", 150);
    pingpong = st_scaled(PINGPONG);
    races = st_scaled(RACES);
    weft_pool *p = st_pool(2, "ev");
    phase_pingpong(p);
    phase_races(p);
    st_phase = "destroy";
    REQUIRE_EQ(weft_pool_destroy(p), 0);
    return st_finish();
}
