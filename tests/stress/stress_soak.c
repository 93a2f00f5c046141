/*
 * stress_soak.c — a long-lived pool does not accumulate (the bench's soak
 * workload, smaller and checked).  One 2-worker pool, with a cache bound
 * of 1 MiB, runs rounds of
 *   - skynet(10,000): spawn 10 children, await them in spawn order (each
 *     await but the last claims its child from the middle of the deque and
 *     leaves a stale entry behind: sched/await.c, retire_stale);
 *   - 1,000 times spawn 10, await 10;
 *   - a burst: 20,000 tasks spawned, then awaited (20,000 records live).
 * After the tree, in the round's task: its stale entries are gone from the
 * worker's deque, and none spilled to the global queue.  After every
 * round, with the pool quiet: no task entry left anywhere (every worker's
 * deque and LIFO slot, the global queue).  At the end, once the workers
 * have been idle long enough to give memory back (sched/pool.c,
 * "Memory"): the record chunks and the free stacks left are within the
 * cache bound (plus one chunk per thread
 * whose own cache may pin one, and less than a trim's minimum), far below
 * what the bursts made.  Then the same for a 1-worker pool whose bursts
 * main runs in the worker's place through weft_sync_wait (lent_rounds).
 * These are counts, not timings; every wait is bounded.
 */
#include "stress.h"

#include "ctx/stack.h"
#include "sched/worker.h"

enum { ROUNDS = 400, BURST = 20000 };
#define CACHE_BYTES ((size_t)1 << 20)
/*
 * Record and handle chunks an idle pool may keep, by the trim's own rules
 * (sched/records.c, weft__records_trim; main's idle trim below): the
 * chunks that hold half the bound's worth of records, and as many
 * handles, each kind in whole chunks; then either no trim at all (fewer
 * than WEFT__RECORDS_TRIM_MIN of chunks beyond those) or, per kind, the
 * free chunks beyond its keep when they are under half that, and the
 * chunks that are not free: a chunk of each kind for each of three
 * threads' own caches.  In chunks.
 */
#define CHUNK WEFT__RECORD_CHUNK_BYTES
#define KEEP (CACHE_BYTES / 2 / sizeof(struct weft__task))
#define HANDLES_PER_CHUNK                                                   \
    ((CHUNK - WEFT__RECORDS_AT) / sizeof(struct weft_task))
#define CEIL_DIV(a, b) (((a) + (b)-1) / (b))
#define UNDER(x) ((x)-1) /* chunk counts below a bound of x chunks */
#define SKIPPED UNDER(WEFT__RECORDS_TRIM_MIN / CHUNK)
#define TRIMMED (2 * UNDER(WEFT__RECORDS_TRIM_MIN / 2 / CHUNK) + 2 * 3)
#define IDLE_BOUND                                                          \
    ((CEIL_DIV(KEEP, WEFT__RECORDS_PER_CHUNK) +                             \
      CEIL_DIV(KEEP, HANDLES_PER_CHUNK) +                                   \
      (SKIPPED > TRIMMED ? SKIPPED : TRIMMED)) *                            \
     CHUNK)

static weft_pool *pool;

/* The bursts' tasks are named: a named task keeps its run record until
 * its handle is consumed (sched/task.h), so a burst holds BURST records
 * at once, well above the idle bound, whatever ran meanwhile (an unnamed
 * one that ended holds its 32-byte handle only). */
static const weft_task_opts burst_opts = {.name = "burst"};

typedef struct node {
    uint64_t num, size;
} node;

static void *sk(void *arg)
{
    const node *nd = arg;
    if (nd->size == 1)
        return (void *)(uintptr_t)nd->num;
    node kids[10];
    weft_task *t[10];
    uint64_t child = nd->size / 10, sum = 0;
    for (int i = 0; i < 10; i++) {
        kids[i] = (node){nd->num + (uint64_t)i * child, child};
        CHECK_EQ(weft_spawn(&t[i], pool, sk, &kids[i], NULL), 0);
    }
    for (int i = 0; i < 10; i++) {
        void *v = NULL;
        CHECK_EQ(weft_await(t[i], &v), 0);
        sum += (uint64_t)(uintptr_t)v;
    }
    return (void *)(uintptr_t)sum;
}

static void *leaf(void *arg)
{
    return arg;
}

static void *round_body(void *arg)
{
    (void)arg;
    node top = {0, 10000};
    CHECK_EQ((uint64_t)(uintptr_t)sk(&top), (uint64_t)10000 * 9999 / 2);
    /* The tree's 11,110 awaited children left no entries behind: not in
     * this worker's deque, nor spilled from it to the global queue. */
    struct weft__worker *w = weft__worker_current();
    CHECK(weft__runq_len(&w->q) <= 10);
    CHECK(__atomic_load_n(&pool->inject_tail.p, __ATOMIC_SEQ_CST) ==
          &pool->inject_head.node);
    uint64_t sum = 0;
    for (int b = 0; b < 1000; b++) {
        weft_task *t[10];
        for (int i = 0; i < 10; i++)
            CHECK_EQ(weft_spawn(&t[i], pool, leaf, P(i), NULL), 0);
        for (int i = 0; i < 10; i++) {
            void *v = NULL;
            CHECK_EQ(weft_await(t[i], &v), 0);
            sum += (uint64_t)(uintptr_t)v;
        }
    }
    CHECK_EQ(sum, (uint64_t)1000 * 45);
    weft_task **t = malloc(BURST * sizeof *t);
    CHECK(t != NULL);
    for (int i = 0; t && i < BURST; i++)
        CHECK_EQ(weft_spawn(&t[i], pool, leaf, P(i), &burst_opts), 0);
    for (int i = 0; t && i < BURST; i++) {
        void *v = NULL;
        CHECK_EQ(weft_await(t[i], &v), 0);
        CHECK_EQ(I(v), i);
    }
    free(t);
    st_tick();
    return NULL;
}

/* Task entries queued anywhere on the pool (racy reads: call it quiet). */
static unsigned queued(void)
{
    unsigned n = 0;
    unsigned slots = weft__pool_slots(pool);
    for (unsigned i = 0; i < slots; i++) {
        struct weft__worker *w = pool->workers[i];
        n += weft__runq_len(&w->q);
        n += atomic_load(&w->lifo) != NULL;
        for (struct weft__task *y = atomic_load(&w->yielded.head); y;
             y = y->link)
            n++;
    }
    n += __atomic_load_n(&pool->inject_tail.p, __ATOMIC_SEQ_CST) !=
         &pool->inject_head.node;
    return n;
}

/* The watchdog's report: the pool's shutdown state, and what each thread
 * of the process is doing (its /proc entry: name, state, system call). */
static void print_stall(void)
{
    fprintf(stderr,
            "pool: destroying %u shutdown %u stop %u nidle %u nspinning %u "
            "arrived outside %lld left outside %lld\n",
            (unsigned)atomic_load(&pool->destroying),
            (unsigned)atomic_load(&pool->shutdown),
            (unsigned)atomic_load(&pool->stop),
            (unsigned)atomic_load(&pool->nidle),
            (unsigned)atomic_load(&pool->nspinning),
            (long long)atomic_load(&pool->arrived_outside),
            (long long)atomic_load(&pool->left_outside));
    for (unsigned i = 0; i < pool->nworkers; i++) {
        struct weft__worker *w = pool->workers[i];
        fprintf(stderr,
                "worker %u: idle %d spinning %d woken %d in_poll %d permit %u "
                "arrived %lld left %lld\n",
                i, w->idle, w->spinning, w->woken, w->in_poll,
                (unsigned)atomic_load(&w->parker.permit),
                (long long)atomic_load(&w->arrived),
                (long long)atomic_load(&w->left));
    }
    st_print_threads();
}

/* A lazy task's body: hop onto the pool, then a burst of leaves. */
static void *lent_burst(void *arg)
{
    CHECK_EQ(weft_schedule(pool), 0);
    weft_task **t = arg;
    for (int i = 0; i < BURST; i++)
        CHECK_EQ(weft_spawn(&t[i], pool, leaf, P(i), &burst_opts), 0);
    for (int i = 0; i < BURST; i++) {
        void *v = NULL;
        CHECK_EQ(weft_await(t[i], &v), 0);
        CHECK_EQ(I(v), i);
    }
    return NULL;
}

/* Once every worker sleeps after the rounds: at most one of them sleeps
 * until a trim (sched/pool.c, "Memory": the first to park owing one is
 * the pool's trim owner; the others gave their caches to the depots when
 * they parked and leave the trim to it).  Each sleep that ends for a trim
 * is a wake of 40-60 us of CPU on a 2-vCPU guest. */
static void check_one_trim_owner(void)
{
    uint64_t until = st_now_ns() + 5000000000ull;
    for (;;) {
        unsigned idle = 0, armed = 0;
        weft__spin_lock(&pool->idle_lock);
        for (unsigned i = 0; i < pool->nworkers; i++) {
            const struct weft__worker *w = pool->workers[i];
            idle += w->idle;
            armed += w->idle && w->trim_armed;
        }
        weft__spin_unlock(&pool->idle_lock);
        if (idle == pool->nworkers) {
            REQUIRE(armed <= 1);
            return;
        }
        REQUIRE(st_now_ns() < until);
        sched_yield();
    }
}

/* Wait up to 5 s for the record chunks to be within bound; what is
 * left. */
static size_t trimmed_to(size_t bound)
{
    uint64_t until = st_now_ns() + 5000000000ull;
    while (weft__records_bytes() > bound && st_now_ns() < until)
        st_sleep_ms(10);
    return weft__records_bytes();
}

/*
 * What a borrower frees is given back too.  On a pool of one worker,
 * main's weft_sync_wait takes the worker's place (sched/pool.c,
 * "Lending") and runs a burst there: the spawns wake nobody (the only
 * worker is lent) and each await runs its child inline, so every record
 * is made and freed on main while the worker's own thread sleeps.  The
 * first burst may find the worker not yet asleep (it runs the task
 * itself), so the bursts that count come after its trim: it has nothing
 * left to give back of its own, and must still give back what the
 * borrower freed.
 */
static void lent_rounds(void)
{
    st_phase = "lent bursts";
    weft_pool_opts o = {.threads = 1, .name = "soak-lent",
                        .cache_bytes = CACHE_BYTES};
    REQUIRE_EQ(weft_pool_create(&pool, &o), 0);
    weft_task **handles = malloc(BURST * sizeof *handles);
    REQUIRE(handles != NULL);
    size_t bound = IDLE_BOUND;
    size_t peak = 0;
    for (int r = 0; r < 3; r++) {
        if (r == 1)
            REQUIRE(trimmed_to(bound) <= bound);
        weft_task *t;
        REQUIRE_EQ(weft_task_create(&t, lent_burst, handles, NULL), 0);
        REQUIRE_EQ(weft_sync_wait(t, NULL), 0);
        size_t made = weft__records_bytes();
        if (r > 0 && made > peak)
            peak = made;
    }
    free(handles);
    /* The lent bursts made their records anew. */
    REQUIRE(peak >= BURST * sizeof(struct weft__task));
    st_phase = "lent idle trim";
    size_t left = trimmed_to(bound);
    printf("stress_soak: lent bursts: record chunks peak %zu KiB, idle %zu "
           "KiB (bound %zu KiB)\n",
           peak / 1024, left / 1024, bound / 1024);
    REQUIRE(left <= bound);
    st_phase = "lent destroy";
    REQUIRE_EQ(weft_pool_destroy(pool), 0);
}

int main(void)
{
    st_start("stress_soak", 240);
    st_on_stall = print_stall;
    long rounds = st_scaled(ROUNDS);
    weft_pool_opts o = {.threads = 2, .name = "soak",
                        .cache_bytes = CACHE_BYTES};
    REQUIRE_EQ(weft_pool_create(&pool, &o), 0);
    uint64_t t0 = st_now_ns();
    size_t peak = 0;
    st_phase = "rounds";
    for (long r = 0; r < rounds; r++) {
        weft_task *t;
        REQUIRE_EQ(weft_spawn(&t, pool, round_body, NULL, NULL), 0);
        REQUIRE_EQ(weft_sync_wait(t, NULL), 0);
        /* Quiet now (the round's tasks have all ended): nothing queued,
         * stale entries included.  The last task's worker may still be
         * dropping entries: give it a bounded moment. */
        uint64_t until = st_now_ns() + 5000000000ull;
        while (queued() != 0 && st_now_ns() < until)
            sched_yield();
        REQUIRE_EQ(queued(), 0);
        size_t made = weft__records_bytes();
        if (made > peak)
            peak = made;
    }
    st_report("rounds", rounds, t0);
    /* The bursts made at least BURST records at once. */
    REQUIRE(peak >= BURST * sizeof(struct weft__task));
    /* Idle: within 5 s (the trim comes after 0.1 s idle), what is left is
     * within IDLE_BOUND (the threads whose own caches may keep a chunk of
     * each kind: the two workers and this one). */
    st_phase = "idle trim";
    check_one_trim_owner();
    size_t bound = IDLE_BOUND;
    uint64_t until = st_now_ns() + 5000000000ull;
    while (weft__records_bytes() > bound && st_now_ns() < until)
        st_sleep_ms(10);
    size_t left = weft__records_bytes();
    size_t stacks = weft__cache_depot_count(&weft__stack_cache);
    printf("stress_soak: record chunks: peak %zu KiB, idle %zu KiB (bound "
           "%zu KiB); free stacks in the depot %zu\n",
           peak / 1024, left / 1024, bound / 1024, stacks);
    REQUIRE(left <= bound);
    /* Stacks: half the bound, a page each. */
    REQUIRE(stacks <= CACHE_BYTES / 2 / weft__stack_guard());
    st_phase = "destroy";
    REQUIRE_EQ(weft_pool_destroy(pool), 0);
    lent_rounds();
    st_phase = "finish";
    return st_finish();
}
