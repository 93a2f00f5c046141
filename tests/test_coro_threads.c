/*
 * test_coro_threads.c — a coroutine is bound to no thread (weft/coro.h).
 *
 *  - ping-pong: one coroutine resumed alternately from two threads; after
 *    each switch it must see the resuming thread's identity and TLS.
 *  - race: two threads resume the same SUSPENDED coroutine at the same
 *    moment; exactly one may run it, the other must get -EBUSY.
 *
 * Code running on the worker threads never calls cmocka's assert macros
 * (they longjmp to the main thread's frame); it counts failures in atomics
 * and the main thread checks them after joining.  alarm(120) in main turns
 * a hang (a lost wakeup, a resume that blocks) into a failure.
 */
#include <weft/coro.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#define P(x) ((void *)(intptr_t)(x))
#define I(p) ((intptr_t)(p))

static _Thread_local int tls_id = -1;

static int *tls_id_addr(void) { return &tls_id; }
static pthread_t self_id(void) { return pthread_self(); }

/* Called through volatile pointers: the compiler cannot prove they return
 * the same value before and after a switch, so it cannot reuse a result
 * computed on the previous thread (see "Thread-local storage" in coro.h). */
static int *(*volatile get_tls_addr)(void) = tls_id_addr;
static pthread_t (*volatile get_self)(void) = self_id;

/* ------------------------------------------------------------------ */
/* Ping-pong                                                           */

enum { PP_ROUNDS = 10000 };

struct ident {
    int id;
    pthread_t tid;
    int *tls;
};

static weft_coro *g_pp;
static atomic_int g_pp_bad_body;   /* identity mismatches seen in the body */
static atomic_int g_pp_bad_out;    /* wrong yielded counter at a resumer   */
static atomic_int g_pp_bad_rc;     /* resume did not return 0              */
static atomic_int g_pp_bad_current;/* current() not NULL after resume       */
static pthread_mutex_t g_pp_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_pp_cond = PTHREAD_COND_INITIALIZER;
static int g_pp_turn; /* the round that may run next, under g_pp_lock */

static void *pp_body(void *in)
{
    intptr_t counter = 0;
    for (;;) {
        /* `in` names the thread that just resumed us. */
        const struct ident *who = in;
        int bad = 0;
        bad += weft_coro_current() != g_pp;
        bad += get_tls_addr() != who->tls;
        bad += *get_tls_addr() != who->id;
        bad += !pthread_equal(get_self(), who->tid);
        if (bad)
            atomic_fetch_add(&g_pp_bad_body, 1);
        counter++;
        if (weft_coro_yield(P(counter), &in) != 0)
            return P(counter); /* destroyed */
    }
}

static void *pp_thread(void *arg)
{
    struct ident *me = arg;
    tls_id = me->id;
    me->tid = pthread_self();
    me->tls = &tls_id;
    /* Rounds alternate: thread 0 takes the even ones, thread 1 the odd. */
    for (int round = me->id; round < PP_ROUNDS; round += 2) {
        pthread_mutex_lock(&g_pp_lock);
        while (g_pp_turn != round)
            pthread_cond_wait(&g_pp_cond, &g_pp_lock);
        pthread_mutex_unlock(&g_pp_lock);

        void *out = NULL;
        if (weft_coro_resume(g_pp, me, &out) != 0)
            atomic_fetch_add(&g_pp_bad_rc, 1);
        if (I(out) != round + 1) /* the counter counts every resume */
            atomic_fetch_add(&g_pp_bad_out, 1);
        if (weft_coro_current() != NULL)
            atomic_fetch_add(&g_pp_bad_current, 1);

        pthread_mutex_lock(&g_pp_lock);
        g_pp_turn = round + 1;
        pthread_cond_broadcast(&g_pp_cond);
        pthread_mutex_unlock(&g_pp_lock);
    }
    return NULL;
}

static void test_ping_pong_two_threads(void **state)
{
    (void)state;
    assert_int_equal(weft_coro_create(&g_pp, pp_body, NULL), 0);
    /* Identities are filled in by each thread before its first resume;
     * the other thread only reads them through the coroutine's `in`. */
    struct ident ids[2] = { { .id = 0 }, { .id = 1 } };
    pthread_t t[2];
    for (int k = 0; k < 2; k++)
        assert_int_equal(pthread_create(&t[k], NULL, pp_thread, &ids[k]), 0);
    for (int k = 0; k < 2; k++)
        assert_int_equal(pthread_join(t[k], NULL), 0);

    assert_int_equal(g_pp_turn, PP_ROUNDS);
    assert_int_equal(atomic_load(&g_pp_bad_rc), 0);
    assert_int_equal(atomic_load(&g_pp_bad_out), 0);
    assert_int_equal(atomic_load(&g_pp_bad_body), 0);
    assert_int_equal(atomic_load(&g_pp_bad_current), 0);
    /* Parked after its last yield; destroyed from a third thread (this
     * one), its yield returns -ECANCELED and it ends. */
    assert_int_equal(weft_coro_status(g_pp), WEFT_CORO_SUSPENDED);
    assert_int_equal(weft_coro_destroy(g_pp), 0);
}

/* ------------------------------------------------------------------ */
/* Race for one SUSPENDED coroutine                                    */

enum { RACE_ROUNDS = 50000 };

static weft_coro *g_race;
static atomic_int g_inside;        /* set while the body runs a round      */
static atomic_int g_double_entry;  /* body entered while already inside    */
static atomic_long g_runs;         /* rounds the body has run              */
static atomic_long g_refused;      /* resumes that came back non-zero      */
static atomic_int g_bad_current;
static atomic_int g_race_bad_round;/* a round without exactly one 0 + EBUSY */
static atomic_int g_race_rc[2];    /* this round's result per thread        */

/* A two-party spinning barrier: both threads leave it within a few
 * instructions of each other, which a blocking barrier cannot promise. */
static atomic_uint g_bar_count, g_bar_gen;

static bool spin_barrier(void) /* true for the thread that arrived last */
{
    unsigned gen = atomic_load(&g_bar_gen);
    if (atomic_fetch_add(&g_bar_count, 1) == 1) {
        atomic_store(&g_bar_count, 0);
        atomic_fetch_add(&g_bar_gen, 1);
        return true;
    }
    for (unsigned spins = 0; atomic_load(&g_bar_gen) == gen; spins++)
        if (spins > 1000)
            sched_yield(); /* let the other thread run on a single CPU */
    return false;
}

static void *race_body(void *in)
{
    (void)in;
    for (;;) {
        if (atomic_exchange(&g_inside, 1)) {
            /* A second resumer got in while the first is still here. */
            atomic_fetch_add(&g_double_entry, 1);
        } else {
            long run = atomic_fetch_add(&g_runs, 1) + 1;
            if (weft_coro_current() != g_race)
                atomic_fetch_add(&g_bad_current, 1);
            /* Stay RUNNING until the other thread's attempt has come back,
             * so every round has exactly one winner: a resume that arrives
             * now must be refused, not queued behind us or let in. */
            while (atomic_load(&g_refused) < run &&
                   atomic_load(&g_double_entry) == 0) /* fail fast if so */
                sched_yield();
            atomic_store(&g_inside, 0);
        }
        if (weft_coro_yield(NULL, NULL) != 0)
            return NULL; /* destroyed */
    }
}

static void *race_thread(void *arg)
{
    int me = (int)I(arg);
    for (int round = 0; round < RACE_ROUNDS; round++) {
        /* Start together.  The last to arrive leaves the barrier at once,
         * the other only once it sees the flip, a cache-line transfer
         * later; a delay that varies by round sweeps across that lag so
         * some rounds line the two claims up to the instruction. */
        if (spin_barrier())
            for (volatile int d = round % 96; d > 0; d--)
                ;
        int rc = weft_coro_resume(g_race, NULL, NULL);
        atomic_store(&g_race_rc[me], rc);
        if (rc != 0)
            atomic_fetch_add(&g_refused, 1);
        spin_barrier(); /* both attempts are done */
        if (me == 0) {
            int a = atomic_load(&g_race_rc[0]), b = atomic_load(&g_race_rc[1]);
            if (!((a == 0 && b == -EBUSY) || (a == -EBUSY && b == 0))) {
                if (atomic_fetch_add(&g_race_bad_round, 1) == 0)
                    fprintf(stderr, "round %d: results %d and %d\n",
                            round, a, b);
            }
        }
        spin_barrier(); /* the check has read this round's results */
    }
    return NULL;
}

static void test_concurrent_resume_race(void **state)
{
    (void)state;
    assert_int_equal(weft_coro_create(&g_race, race_body, NULL), 0);
    pthread_t t[2];
    for (int k = 0; k < 2; k++)
        assert_int_equal(pthread_create(&t[k], NULL, race_thread, P(k)), 0);
    for (int k = 0; k < 2; k++)
        assert_int_equal(pthread_join(t[k], NULL), 0);

    assert_int_equal(atomic_load(&g_double_entry), 0);
    assert_int_equal(atomic_load(&g_bad_current), 0);
    assert_int_equal(atomic_load(&g_race_bad_round), 0);
    /* One run per round, one refusal per round. */
    assert_int_equal(atomic_load(&g_runs), RACE_ROUNDS);
    assert_int_equal(atomic_load(&g_refused), RACE_ROUNDS);
    assert_int_equal(weft_coro_status(g_race), WEFT_CORO_SUSPENDED);
    assert_int_equal(weft_coro_destroy(g_race), 0);
}

/* ------------------------------------------------------------------ */
/* Resumes racing with no other ordering                               */

/* Two threads resume one generator as fast as they can, nothing else
 * between them: the claim is the only hand-off (weft/coro.h: a second
 * concurrent resumer gets -EBUSY).  Every value is handed out exactly
 * once, and, under TSan, nothing is reported (the switch's plain store of
 * SUSPENDED is announced to TSan: sanitizer.h, weft__san_publish). */
enum { UNORDERED_TRIES = 20000 };

static weft_coro *g_unordered;

struct unordered_result {
    long wins, other_rc;
    uintptr_t sum, max;
};

static void *unordered_body(void *in)
{
    (void)in;
    for (uintptr_t n = 1;; n++)
        if (weft_coro_yield((void *)n, NULL) != 0)
            return NULL; /* destroyed */
}

static void *unordered_thread(void *arg)
{
    struct unordered_result *r = arg;
    for (int i = 0; i < UNORDERED_TRIES; i++) {
        void *v = NULL;
        int rc = weft_coro_resume(g_unordered, NULL, &v);
        if (rc == 0) {
            r->wins++;
            r->sum += (uintptr_t)v;
            if ((uintptr_t)v > r->max)
                r->max = (uintptr_t)v;
        } else if (rc != -EBUSY) {
            r->other_rc++;
        }
    }
    return NULL;
}

static void test_resume_race_unordered(void **state)
{
    (void)state;
    assert_int_equal(weft_coro_create(&g_unordered, unordered_body, NULL), 0);
    struct unordered_result r[2] = {{0}, {0}};
    pthread_t t[2];
    for (int k = 0; k < 2; k++)
        assert_int_equal(
            pthread_create(&t[k], NULL, unordered_thread, &r[k]), 0);
    for (int k = 0; k < 2; k++)
        assert_int_equal(pthread_join(t[k], NULL), 0);
    uintptr_t wins = (uintptr_t)(r[0].wins + r[1].wins);
    assert_int_equal(r[0].other_rc + r[1].other_rc, 0);
    assert_true(wins > 0);
    /* Values 1..wins, each once: their sum and their largest. */
    assert_int_equal(r[0].sum + r[1].sum, wins * (wins + 1) / 2);
    assert_int_equal(r[0].max > r[1].max ? r[0].max : r[1].max, wins);
    assert_int_equal(weft_coro_destroy(g_unordered), 0);
}

int main(void)
{
    alarm(120); /* watchdog: a hang fails the run instead of blocking */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ping_pong_two_threads),
        cmocka_unit_test(test_concurrent_resume_race),
        cmocka_unit_test(test_resume_race_unordered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
