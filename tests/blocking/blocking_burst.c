/*
 * blocking_burst.c — issue 23's acceptance case for weft_blocking, timed:
 * on a 2-worker pool with default options, a weft_blocking(usleep 1 s)
 * submitted while 200 tasks each offload four 400 ms calls returns within
 * 1.3 s of its submission.  Both shapes: the four calls one after the
 * other in each task (200 at once), and at once (800 at once, through four
 * child tasks).  The probe is submitted 100 ms into the burst.
 *
 * A timing is not a unit test (docs/testing.md): this program is built
 * with the tests but not run by them.  Run it on an idle machine:
 *     build-test/tests/blocking/blocking_burst
 * It prints each shape's figure and exits 1 if one is over 1.3 s.  The
 * behaviour behind the figure (the probe starts while every call of the
 * burst still runs) is test_blocking's test_burst_*.
 */
#include <weft/weft.h>

#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

enum { TASKS = 200, CALLS = 4 };

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *sleep_us(void *arg)
{
    usleep((useconds_t)(uintptr_t)arg);
    return arg;
}

static void *one_call(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)weft_blocking(sleep_us, (void *)400000u, NULL);
}

static void *sequential(void *arg)
{
    for (int i = 0; i < CALLS; i++)
        if (one_call(arg))
            return (void *)1;
    return NULL;
}

static void *concurrent(void *arg)
{
    weft_task *kids[CALLS];
    for (int i = 0; i < CALLS; i++)
        if (weft_spawn(&kids[i], weft_pool_current(), one_call, arg, NULL))
            return (void *)1;
    void *rs[CALLS];
    if (weft_await_all(kids, CALLS, rs))
        return (void *)1;
    for (int i = 0; i < CALLS; i++)
        if (rs[i])
            return (void *)1;
    return NULL;
}

struct probe {
    uint64_t submitted, returned;
    int rc;
};

static void *probe_body(void *arg)
{
    struct probe *p = arg;
    p->submitted = now_ns();
    p->rc = weft_blocking(sleep_us, (void *)1000000u, NULL);
    p->returned = now_ns();
    return NULL;
}

/* One shape: the probe's latency in ms, or -1 on an error. */
static double run(weft_pool *pool, weft_fn shape)
{
    static weft_task *ts[TASKS];
    for (int i = 0; i < TASKS; i++)
        if (weft_spawn(&ts[i], pool, shape, NULL, NULL))
            return -1;
    usleep(100000);
    struct probe p = {0};
    weft_task *t;
    if (weft_spawn(&t, pool, probe_body, &p, NULL) || weft_sync_wait(t, NULL))
        return -1;
    int failed = p.rc != 0;
    for (int i = 0; i < TASKS; i++) {
        void *r;
        if (weft_sync_wait(ts[i], &r) || r)
            failed = 1;
    }
    return failed ? -1 : (double)(p.returned - p.submitted) / 1e6;
}

int main(void)
{
    weft_pool *pool;
    weft_pool_opts o = {.threads = 2};
    if (weft_pool_create(&pool, &o))
        return 2;
    const struct { const char *name; weft_fn fn; } shapes[] = {
        {"four calls one after the other per task (200 at once)", sequential},
        {"four calls at once per task (800 at once)", concurrent},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        double ms = run(pool, shapes[i].fn);
        printf("%s: the 1 s call returned %.0f ms after its submission%s\n",
               shapes[i].name, ms, ms < 0 ? " (an error)" :
               ms > 1300 ? " (over 1.3 s)" : "");
        bad |= ms < 0 || ms > 1300;
    }
    weft_pool_destroy(pool);
    return bad;
}
