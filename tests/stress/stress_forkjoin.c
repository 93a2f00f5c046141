/*
 * stress_forkjoin.c — fork-join trees whose awaits run children inline
 * while thieves steal from the same deques.
 *
 * await's fast path claims a queued child and runs it on the awaiter's
 * stack, leaving its queue entry behind; once the child at the bottom is
 * awaited, the run of COMPLETE entries at the bottom is dropped in one
 * step (sched/runq.h, drop_bottom; sched/await.c, retire_stale), and an
 * ended task whose references are all the dropper's is freed without an
 * RMW (sched/task_state.c, weft__task_unref).  Both race thieves taking
 * the oldest entries of the same deque.  Dropping an entry a thief also
 * took would drop its reference twice (a double free: ASan reports it; in
 * other builds two live tasks end up sharing a record, and sums go wrong).
 *
 * Each tree: a node spawns 2-20 children (random), sometimes spins before
 * awaiting them, and awaits them in spawn order (most often: the order
 * that leaves stale runs), in reverse, or in a random order; depth 1-4
 * (random per node, bounded).  Leaves return their weight; every node
 * returns the sum of its children's results plus one, and counts itself.
 * Checked: each tree's result against the count of its nodes, and the
 * total node count against the tasks spawned.  A 4-worker pool (2 at
 * least), two trees at a time from plain threads; 40,000 trees (about 23 million
 * tasks).
 */
#include "stress.h"

enum { TREES = 40000, MAX_WIDTH = 20, MAX_DEPTH = 4 };

static weft_pool *pool;
static atomic_long nodes_run, nodes_spawned;

struct node_arg {
    uint64_t seed;
    int depth;
};

static void *node(void *arg);

static intptr_t run_node(uint64_t seed, int depth)
{
    atomic_fetch_add(&nodes_run, 1);
    uint64_t rs = seed | 1;
    uint64_t r = st_rand(&rs);
    if (depth <= 0 || r % 8 == 0)
        return 1; /* a leaf */
    unsigned width = 2 + (unsigned)((r >> 8) % (MAX_WIDTH - 1));
    struct node_arg args[MAX_WIDTH];
    weft_task *kids[MAX_WIDTH];
    unsigned n = 0;
    for (unsigned i = 0; i < width; i++) {
        args[i].seed = st_rand(&rs);
        args[i].depth = depth - 1 - (int)((args[i].seed >> 3) % 2);
        int rc = weft_spawn(&kids[n], pool, node, &args[i], NULL);
        CHECK_EQ(rc, 0);
        if (rc != 0)
            break;
        atomic_fetch_add(&nodes_spawned, 1);
        n++;
    }
    if ((r >> 16) % 4 == 0)
        st_spin((unsigned)((r >> 20) % 4000)); /* let thieves come */
    unsigned order = (unsigned)((r >> 32) % 8); /* 0-5 spawn order */
    unsigned start = (unsigned)((r >> 40) % (n ? n : 1));
    intptr_t sum = 1;
    for (unsigned j = 0; j < n; j++) {
        unsigned i = order < 6 ? j : order == 6 ? n - 1 - j : (start + j) % n;
        void *v = NULL;
        CHECK_EQ(weft_await(kids[i], &v), 0);
        sum += I(v);
    }
    return sum;
}

static void *node(void *arg)
{
    struct node_arg *a = arg;
    return P(run_node(a->seed, a->depth));
}

/* The same tree, counted without running it. */
static intptr_t count_nodes(uint64_t seed, int depth)
{
    uint64_t rs = seed | 1;
    uint64_t r = st_rand(&rs);
    if (depth <= 0 || r % 8 == 0)
        return 1;
    unsigned width = 2 + (unsigned)((r >> 8) % (MAX_WIDTH - 1));
    intptr_t sum = 1;
    for (unsigned i = 0; i < width; i++) {
        uint64_t s = st_rand(&rs);
        sum += count_nodes(s, depth - 1 - (int)((s >> 3) % 2));
    }
    return sum;
}

static long trees_per_thread;

static void *driver(void *arg)
{
    uint64_t rs = st_seed((uint64_t)I(arg) + 11);
    for (long i = 0; i < trees_per_thread; i++) {
        struct node_arg root = {st_rand(&rs), 1 + (int)(st_rand(&rs) % MAX_DEPTH)};
        intptr_t want = count_nodes(root.seed, root.depth);
        weft_task *t = NULL;
        int rc = weft_spawn(&t, pool, node, &root, NULL);
        CHECK_EQ(rc, 0);
        if (rc != 0)
            continue;
        atomic_fetch_add(&nodes_spawned, 1);
        void *v = NULL;
        CHECK_EQ(weft_sync_wait(t, &v), 0);
        CHECK_EQ(I(v), want);
        if ((i & 7) == 0)
            st_tick();
    }
    return NULL;
}

int main(void)
{
    st_start("stress_forkjoin", 240);
    trees_per_thread = st_scaled(TREES) / 2;
    if (trees_per_thread < 1)
        trees_per_thread = 1;
    unsigned workers = st_workers_2_to_4();
    pool = st_pool(workers, "fj");

    st_phase = "trees";
    uint64_t t0 = st_now_ns();
    pthread_t th[2];
    for (intptr_t i = 0; i < 2; i++)
        REQUIRE(pthread_create(&th[i], NULL, driver, P(i)) == 0);
    for (int i = 0; i < 2; i++)
        REQUIRE(pthread_join(th[i], NULL) == 0);
    st_report("trees", trees_per_thread * 2, t0);
    printf("stress_forkjoin: %ld nodes run\n", atomic_load(&nodes_run));
    CHECK_EQ(atomic_load(&nodes_run), atomic_load(&nodes_spawned));

    st_phase = "destroy";
    REQUIRE_EQ(weft_pool_destroy(pool), 0);
    return st_finish();
}
