/*
 * stress_await_race.c — await racing completion.  200,000 times: a task
 * spawns a child that finishes after a random tiny spin (sometimes after
 * a yield), and awaits it at once, so the child's completion (on a worker
 * that stole it) races the awaiter switching out and registering itself
 * as the continuation.  A lost continuation hangs (watchdog); a double
 * resume or a wrong result fails a check.
 *
 * The root sometimes spins a little between spawn and await, so the
 * child is found not started (it may be run inline), running on a thief,
 * or finished.  The count of children that ran on another worker is
 * printed: it shows the race is being exercised.
 *
 * Two awaiting roots on a 4-worker pool leave idle workers to steal the
 * children; a second phase runs four roots (every worker busy); a third
 * spawns the children on a second pool, so every child runs on another
 * thread and its completion races the await nearly every time.
 */
#include "stress.h"

enum { TOTAL = 200000 };

static atomic_long resumed, elsewhere;
static _Thread_local int tls_marker;

static int *marker_impl(void) { return &tls_marker; }
static int *(*volatile marker)(void) = marker_impl;

struct child_arg {
    intptr_t v;
    const int *root_marker; /* the root's worker, when it spawned */
};

static void *child(void *arg)
{
    struct child_arg *ca = arg;
    intptr_t v = ca->v;
    if (marker() != ca->root_marker)
        atomic_fetch_add(&elsewhere, 1);
    unsigned spin = (unsigned)((v >> 4) % 300);
    if ((v & 15) == 7)
        CHECK_EQ(weft_yield(), 0);
    st_spin(spin);
    return P(v ^ 0x5a5a);
}

struct root_arg {
    long iters;
    uint64_t seed;
    weft_pool *child_pool; /* NULL: the root's own pool */
};

static atomic_long moved; /* awaits that resumed on the child's pool */

static void *root(void *arg)
{
    struct root_arg *ra = arg;
    uint64_t rs = ra->seed;
    weft_pool *home = weft_pool_current();
    weft_pool *p = ra->child_pool ? ra->child_pool : home;
    for (long i = 0; i < ra->iters; i++) {
        uint64_t x = st_rand(&rs);
        intptr_t v = (intptr_t)(x & 0xffffff);
        struct child_arg ca = { .v = v, .root_marker = marker() };
        weft_task *t = NULL;
        int rc = weft_spawn(&t, p, child, &ca, NULL);
        CHECK_EQ(rc, 0);
        if (rc != 0)
            continue;
        /* Sometimes give a thief time to take the child first, so that
         * the await finds it not started, running, or just finished. */
        switch ((x >> 32) % 4) {
        case 0:
            st_spin((unsigned)((x >> 40) % 20000));
            break;
        case 1:
            st_spin((unsigned)((x >> 40) % 600));
            break;
        default:
            break;
        }
        void *out = NULL;
        CHECK_EQ(weft_await(t, &out), 0);
        CHECK_EQ(I(out), v ^ 0x5a5a);
        weft_pool *now = weft_pool_current();
        if (p == home) {
            CHECK(now == home);
        } else {
            /* continuation chaining may leave us on the child's pool */
            CHECK(now == home || now == p);
            if (now != home) {
                atomic_fetch_add(&moved, 1);
                CHECK_EQ(weft_schedule(home), 0);
                CHECK(weft_pool_current() == home);
            }
        }
        atomic_fetch_add(&resumed, 1);
        if ((i & 255) == 0)
            st_tick();
    }
    return NULL;
}

static void run_phase(weft_pool *p, weft_pool *cp, int nroots, long total,
                      const char *what)
{
    st_phase = what;
    atomic_store(&resumed, 0);
    atomic_store(&elsewhere, 0);
    atomic_store(&moved, 0);
    struct root_arg ra[8];
    weft_task *t[8];
    uint64_t t0 = st_now_ns();
    for (int i = 0; i < nroots; i++) {
        ra[i].iters = total / nroots;
        ra[i].seed = st_seed((uint64_t)i + 17);
        ra[i].child_pool = cp;
        REQUIRE_EQ(weft_spawn(&t[i], p, root, &ra[i], NULL), 0);
    }
    for (int i = 0; i < nroots; i++)
        REQUIRE_EQ(weft_sync_wait(t[i], NULL), 0);
    st_report(what, (total / nroots) * nroots, t0);
    printf("%s:   %ld children ran on another worker than their awaiter\n",
           st_name, atomic_load(&elsewhere));
    if (cp)
        printf("%s:   %ld awaits resumed on the child's pool\n", st_name,
               atomic_load(&moved));
    REQUIRE_EQ(atomic_load(&resumed), (total / nroots) * nroots);
}

int main(void)
{
    st_start("stress_await_race", 150);
    long total = st_scaled(TOTAL);
    weft_pool *p = st_pool(4, "race");
    weft_pool *q = st_pool(2, "race-b");
    run_phase(p, NULL, 2, total, "spawn+await, 2 roots on 4 workers");
    run_phase(p, NULL, 4, total / 2, "spawn+await, 4 roots on 4 workers");
    run_phase(p, q, 2, total / 2,
              "spawn on another pool+await, 2 roots on 4 workers");
    st_phase = "destroy";
    REQUIRE_EQ(weft_pool_destroy(p), 0);
    REQUIRE_EQ(weft_pool_destroy(q), 0);
    return st_finish();
}
