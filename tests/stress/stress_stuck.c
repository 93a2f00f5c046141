/*
 * stress_stuck.c — workers stuck and released again and again while tasks
 * spawn, sleep, yield and talk over sockets, so that the monitor covers
 * stuck workers with spares and recalls them under load (weft/pool.h,
 * "Stuck workers"; sched/monitor.c, pool.c's "Spares", yielded.h's
 * seize).
 *
 * ROUNDS rounds on a 2-worker pool (and a 1-worker one for a quarter of
 * them).  In each round:
 *   - one hog per worker holds it in code weft cannot switch out of:
 *     either a loop that computes for 5 to 25 ms, or a blocking read(2) on
 *     its own pipe, which a plain thread writes to 5 to 25 ms later;
 *   - meanwhile a driver task spawns CHILDREN children; each sleeps up to
 *     2 ms, yields up to twice, makes a socket pair, spawns an echo task on
 *     one end, sends its number through the other with weft_write, reads
 *     it back with weft_read, awaits the echo task and closes both ends.
 * Checked: every child and every echo task ran exactly once (a counter
 * each), every child got its own number back, the driver awaited them
 * all, and the hogs' work is right: nothing lost, nothing run twice.
 * At the end, the monitor must have covered at least one stall (else the
 * run proved nothing about it), and no spare may still be covering.
 */
#include "stress.h"

#include <weft/inspect.h>
#include <weft/io.h>
#include <weft/timer.h>

#include <sys/socket.h>

enum { ROUNDS = 60, CHILDREN = 48 };

struct round {
    atomic_int child_runs[CHILDREN];
    atomic_int echo_runs[CHILDREN];
    int pipes[2][2];
    atomic_bool release;
    unsigned hog_ms[2];
    bool hog_blocks[2];
};

static __attribute__((noinline)) double basel(unsigned terms)
{
    double s = 0;
    for (unsigned i = 1; i <= terms; i++)
        s += 1.0 / ((double)i * (double)i);
    return s;
}

struct hog_arg {
    struct round *r;
    int k;
};

/* Computes for its time, or blocks in read(2) until the releaser writes. */
static void *hog(void *arg)
{
    struct hog_arg *h = arg;
    struct round *r = h->r;
    if (r->hog_blocks[h->k]) {
        unsigned char b = 0;
        ssize_t n;
        do
            n = read(r->pipes[h->k][0], &b, 1);
        while (n < 0 && errno == EINTR);
        CHECK_EQ(n, 1);
        CHECK_EQ(b, 40 + h->k);
        return NULL;
    }
    double want = basel(300);
    uint64_t end = st_now_ns() + (uint64_t)r->hog_ms[h->k] * 1000000u;
    do
        CHECK(basel(300) == want);
    while (st_now_ns() < end);
    return NULL;
}

struct child_arg {
    struct round *r;
    int i;
    int fd;              /* the echo task's end */
};

static void *echo(void *arg)
{
    struct child_arg *a = arg;
    CHECK_EQ(atomic_fetch_add(&a->r->echo_runs[a->i], 1), 0);
    int v;
    ssize_t n = weft_read(a->fd, &v, sizeof v);
    CHECK_EQ(n, (ssize_t)sizeof v);
    if (n == (ssize_t)sizeof v)
        CHECK_EQ(weft_write(a->fd, &v, sizeof v), (ssize_t)sizeof v);
    return NULL;
}

static void *child(void *arg)
{
    struct child_arg *a = arg;
    struct round *r = a->r;
    CHECK_EQ(atomic_fetch_add(&r->child_runs[a->i], 1), 0);
    uint64_t rs = st_seed((uint64_t)a->i + 1);
    uint64_t x = st_rand(&rs);
    if (x % 3)
        CHECK_EQ(weft_sleep((x >> 8) % 2000000), 0);
    for (unsigned y = (unsigned)(x >> 32) % 3; y; y--)
        CHECK_EQ(weft_yield(), 0);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        CHECK(0);
        return NULL;
    }
    CHECK_EQ(weft_fd_adopt(sv[0]), 0);
    CHECK_EQ(weft_fd_adopt(sv[1]), 0);
    struct child_arg e = {r, a->i, sv[1]};
    weft_task *et;
    CHECK_EQ(weft_spawn(&et, weft_pool_current(), echo, &e, NULL), 0);
    int v = a->i * 7 + 1, back = -1;
    CHECK_EQ(weft_write(sv[0], &v, sizeof v), (ssize_t)sizeof v);
    CHECK_EQ(weft_read(sv[0], &back, sizeof back), (ssize_t)sizeof back);
    CHECK_EQ(back, v);
    CHECK_EQ(weft_await(et, NULL), 0);
    weft_close(sv[0]);
    weft_close(sv[1]);
    return NULL;
}

static void *driver(void *arg)
{
    struct round *r = arg;
    struct child_arg a[CHILDREN];
    weft_task *t[CHILDREN];
    for (int i = 0; i < CHILDREN; i++) {
        a[i] = (struct child_arg){r, i, -1};
        CHECK_EQ(weft_spawn(&t[i], weft_pool_current(), child, &a[i], NULL),
                 0);
    }
    for (int i = 0; i < CHILDREN; i++)
        CHECK_EQ(weft_await(t[i], NULL), 0);
    return NULL;
}

/* The plain thread that ends the blocking hogs after their time. */
static void *releaser(void *arg)
{
    struct round *r = arg;
    for (int k = 0; k < 2; k++) {
        if (!r->hog_blocks[k])
            continue;
        st_sleep_ms(r->hog_ms[k]);
        unsigned char b = (unsigned char)(40 + k);
        REQUIRE_EQ(write(r->pipes[k][1], &b, 1), 1);
    }
    return NULL;
}

static void one_round(weft_pool *p, unsigned workers, uint64_t *rs)
{
    struct round *r = calloc(1, sizeof *r);
    REQUIRE(r != NULL);
    for (unsigned k = 0; k < workers; k++) {
        uint64_t x = st_rand(rs);
        r->hog_ms[k] = 5 + (unsigned)(x % 21);
        r->hog_blocks[k] = (x >> 20) & 1;
        REQUIRE_EQ(pipe(r->pipes[k]), 0);
    }
    weft_task *d, *h[2];
    struct hog_arg ha[2];
    for (unsigned k = 0; k < workers; k++) {
        ha[k] = (struct hog_arg){r, (int)k};
        REQUIRE_EQ(weft_spawn(&h[k], p, hog, &ha[k], NULL), 0);
    }
    REQUIRE_EQ(weft_spawn(&d, p, driver, r, NULL), 0);
    pthread_t rel;
    REQUIRE_EQ(pthread_create(&rel, NULL, releaser, r), 0);
    REQUIRE_EQ(weft_sync_wait(d, NULL), 0);
    for (unsigned k = 0; k < workers; k++)
        REQUIRE_EQ(weft_sync_wait(h[k], NULL), 0);
    pthread_join(rel, NULL);
    for (int i = 0; i < CHILDREN; i++) {
        CHECK_EQ(atomic_load(&r->child_runs[i]), 1);
        CHECK_EQ(atomic_load(&r->echo_runs[i]), 1);
    }
    for (unsigned k = 0; k < workers; k++) {
        close(r->pipes[k][0]);
        close(r->pipes[k][1]);
    }
    free(r);
    st_tick();
}

static uint64_t covers;

static void run_pool(unsigned workers, long rounds)
{
    weft_pool *p = st_pool(workers, "stuck");
    uint64_t rs = st_seed(workers);
    uint64_t t0 = st_now_ns();
    for (long i = 0; i < rounds; i++)
        one_round(p, workers, &rs);
    st_report(workers == 2 ? "2 workers" : "1 worker", rounds, t0);
    struct weft_pool_stats s = {.size = sizeof s};
    REQUIRE_EQ(weft_pool_stats(p, &s), 0);
    printf("%s: %u worker(s): %llu stalls, %llu covers, %llu spare threads "
           "started\n",
           st_name, workers, (unsigned long long)s.stalls,
           (unsigned long long)s.covers,
           (unsigned long long)s.spares_started);
    covers += s.covers;
    /* Every stuck task has ended: no spare is left covering for long. */
    uint64_t end = st_now_ns() + 10000000000ull;
    while (s.spares_active && st_now_ns() < end) {
        st_sleep_ms(1);
        REQUIRE_EQ(weft_pool_stats(p, &s), 0);
    }
    CHECK_EQ(s.spares_active, 0);
    REQUIRE_EQ(weft_pool_destroy(p), 0);
}

int main(void)
{
    st_start("stress_stuck", 400);
    long rounds = st_scaled(ROUNDS);
    st_phase = "2 workers";
    run_pool(2, rounds);
    st_phase = "1 worker";
    run_pool(1, (rounds + 3) / 4);
    CHECK(covers > 0);
    return st_finish();
}
