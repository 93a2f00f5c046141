/*
 * fault_program.c — a representative weft program, for the fault sweep
 * (fault_sweep.c runs it once per allocation call, WEFT_FAULT_AT=k making
 * call k fail).
 *
 * It uses every part of the API: standalone coroutines (resume, yield,
 * transfer, destroy with cancellation, a resume from another thread), a
 * pool, detached and awaited spawns, fork-join (inline awaits), lazy tasks
 * awaited and passed to sync_wait, schedule, yield, events set across
 * tasks and threads, timed waits that time out and that are set, an
 * offload to a blocking thread, and destroy of everything.
 *
 * Every call is checked.  It succeeds, or it returns the error its header
 * documents for a lack of resources (-ENOMEM, or -EAGAIN for a thread).
 * Only one call fails in a run, so a call that failed is made again at once
 * and must then succeed: that shows the failure left every object as it
 * was, and usable.  An error with no injected failure behind it, a second
 * error, a wrong result, or a task lost or run twice (the counts are
 * checked) ends the run with exit status 3; under AddressSanitizer a leak
 * at exit fails it too.
 *
 * A stack that cannot be mapped is retried after the cached stacks are
 * unmapped (stack.c), so the -ENOMEM of a call that needs a stack shows
 * only while no stack is cached, early in the run.  The argument picks
 * which part runs first: the coroutines ("coro-first", the default) or the
 * pool ("pool-first"); the sweep runs both.
 *
 * Output on stdout: "calls N fired F" (allocation calls made, and whether
 * the armed one failed) and the sites reached ("site ..." lines).
 */
#include "base/alloc.h"

#include <weft/weft.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define P(x) ((void *)(intptr_t)(x))
#define I(p) ((intptr_t)(p))

#define MS 1000000u

static atomic_int public_errors; /* documented errors returned so far */

static _Noreturn void fail(int line, const char *what, long got)
{
    fprintf(stderr, "fault_program.c:%d: %s (got %ld)\n", line, what, got);
    fflush(stderr);
    _exit(3);
}

static void check(int line, bool ok, const char *what, long got)
{
    if (!ok)
        fail(line, what, got);
}

#define CHECK_EQ(a, b)                                                  \
    do {                                                                \
        long a_ = (long)(a), b_ = (long)(b);                            \
        check(__LINE__, a_ == b_, #a " == " #b, a_);                    \
    } while (0)

/* A documented error came back: it must be the injected failure, and the
 * only one. */
static void seen_error(int line, const char *expr, int r)
{
    check(line, weft__fault_fired(), "an error without an injected failure",
          r);
    check(line, atomic_fetch_add(&public_errors, 1) == 0,
          "a second error from one injected failure", r);
    fprintf(stderr, "fault_program: %s -> %s (made again)\n", expr,
            weft_strerror(r));
}

/*
 * EXPECT(expr, want, e1, e2): expr must give `want`; if it gives e1 or e2
 * instead, it is made again (same arguments) and must give `want` then.
 */
#define EXPECT(expr, want, e1, e2)                                      \
    do {                                                                \
        int r_ = (expr);                                                \
        if (r_ != (want) && (r_ == (e1) || r_ == (e2))) {               \
            seen_error(__LINE__, #expr, r_);                            \
            r_ = (expr);                                                \
        }                                                               \
        check(__LINE__, r_ == (want), #expr, r_);                       \
    } while (0)

/* Success, or -ENOMEM once. */
#define MUST(expr) EXPECT(expr, 0, -ENOMEM, -ENOMEM)
/* Success, and no error is allowed. */
#define ALWAYS(expr) EXPECT(expr, 0, 0, 0)

/* ----------------------------------------------------- coroutines */

static void *counter_body(void *arg)
{
    (void)arg;
    intptr_t i = 0;
    /* Until destroy cancels us. */
    while (weft_coro_yield(P(i), NULL) == 0)
        i++;
    return NULL;
}

static void *double_body(void *arg)
{
    return P(2 * I(arg));
}

static void *transfer_body(void *arg)
{
    void *got = NULL;
    /* To the coroutine in arg; it returns to our resumer.  Destroy then
     * cancels us. */
    int r = weft_coro_transfer(arg, P(5), &got);
    CHECK_EQ(r, -ECANCELED);
    return NULL;
}

static void *resume_elsewhere(void *arg)
{
    void *out = NULL;
    ALWAYS(weft_coro_resume(arg, NULL, &out));
    CHECK_EQ(I(out), 2);
    return NULL;
}

static void coroutines(void)
{
    weft_coro *count, *dbl, *hop;
    MUST(weft_coro_create(&count, counter_body, NULL));
    for (intptr_t i = 0; i < 2; i++) {
        void *out = NULL;
        ALWAYS(weft_coro_resume(count, NULL, &out));
        CHECK_EQ(I(out), i);
    }
    /* The next resume from another thread: the slow claim. */
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, resume_elsewhere, count), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    ALWAYS(weft_coro_destroy(count)); /* cancels it */

    /* Another stack size: a fresh mapping, not a cached stack. */
    weft_coro_opts small = {.stack_size = 64 * 1024, .name = "double"};
    MUST(weft_coro_create(&dbl, double_body, &small));
    MUST(weft_coro_create(&hop, transfer_body, NULL));
    void *out = NULL;
    ALWAYS(weft_coro_resume(hop, dbl, &out));
    CHECK_EQ(I(out), 10);
    CHECK_EQ(weft_coro_status(dbl), WEFT_CORO_DEAD);
    CHECK_EQ(weft_coro_status(hop), WEFT_CORO_SUSPENDED);
    ALWAYS(weft_coro_destroy(hop));
    ALWAYS(weft_coro_destroy(dbl));
}

/* ------------------------------------------------------------ tasks */

static atomic_int detached_runs;
static atomic_int detached_spawned;

static void *count_run(void *arg)
{
    (void)arg;
    atomic_fetch_add(&detached_runs, 1);
    return NULL;
}

static void spawn_detached(weft_pool *pool, int n)
{
    for (int i = 0; i < n; i++) {
        MUST(weft_spawn(NULL, pool, count_run, NULL, NULL));
        atomic_fetch_add(&detached_spawned, 1);
    }
}

static void *add_one(void *arg)
{
    return P(I(arg) + 1);
}

/* Fork-join: the spawned half is usually run inline by the await. */
static void *fib(void *arg)
{
    intptr_t n = I(arg);
    if (n < 2)
        return arg;
    weft_task *t;
    MUST(weft_spawn(&t, weft_pool_current(), fib, P(n - 1), NULL));
    intptr_t b = I(fib(P(n - 2)));
    void *a = NULL;
    ALWAYS(weft_await(t, &a));
    return P(I(a) + b);
}

struct wait_args {
    weft_event *ev;
    uint64_t timeout_ns; /* 0: untimed */
};

/* Waits for ev (set later by someone else), then returns 7. */
static void *waiter(void *arg)
{
    struct wait_args *w = arg;
    if (w->timeout_ns)
        MUST(weft_event_wait_for(w->ev, w->timeout_ns));
    else
        ALWAYS(weft_event_wait(w->ev));
    return P(7);
}

static void *setter(void *arg)
{
    weft_event_set(arg);
    return NULL;
}

/* A timed wait on an event nobody sets. */
static void times_out(void)
{
    weft_event never;
    weft_event_init(&never);
    EXPECT(weft_event_wait_for(&never, 1 * MS), -ETIMEDOUT, -ENOMEM, -ENOMEM);
}

/* A lazy task started by await (on this task's thread), then its result. */
static void await_lazy(weft_fn fn, intptr_t arg, const weft_task_opts *opts,
                       intptr_t want)
{
    weft_task *t;
    MUST(weft_task_create(&t, fn, P(arg), opts));
    void *r = NULL;
    MUST(weft_await(t, &r)); /* -ENOMEM leaves t lazy and ours */
    CHECK_EQ(I(r), want);
}

static void *root(void *arg)
{
    weft_pool *pool = arg;

    /* On the sync_wait thread first: its driver's timers, a lazy child. */
    CHECK_EQ(weft_pool_current(), NULL);
    times_out();
    await_lazy(add_one, 1, NULL, 2);

    ALWAYS(weft_schedule(pool));
    CHECK_EQ(weft_pool_current(), pool);

    void *r = NULL;
    weft_task *t;
    MUST(weft_spawn(&t, pool, fib, P(12), NULL));
    ALWAYS(weft_await(t, &r));
    CHECK_EQ(I(r), 144);

    /* A waiter parked on an event that this task sets. */
    weft_event ev;
    weft_event_init(&ev);
    struct wait_args untimed = {&ev, 0};
    MUST(weft_spawn(&t, pool, waiter, &untimed, NULL));
    ALWAYS(weft_yield());
    weft_event_set(&ev);
    ALWAYS(weft_await(t, &r));
    CHECK_EQ(I(r), 7);

    /* A timed waiter (the pool's timers) whose event is set in time. */
    weft_event ev2;
    weft_event_init(&ev2);
    struct wait_args timed = {&ev2, 60000 * (uint64_t)MS};
    MUST(weft_spawn(&t, pool, waiter, &timed, NULL));
    ALWAYS(weft_yield());
    weft_event_set(&ev2);
    ALWAYS(weft_await(t, &r));
    CHECK_EQ(I(r), 7);

    times_out();

    /* Blocking offload: its request record, and a blocking thread (one
     * that cannot be started is -EAGAIN, as a pool's worker). */
    r = NULL;
    EXPECT(weft_blocking(add_one, P(5), &r), 0, -ENOMEM, -EAGAIN);
    CHECK_EQ(I(r), 6);

    /* The server layer's allocations: a channel, timers of a sleep and of
     * timed sync waits. */
    weft_chan *ch;
    MUST(weft_chan_create(&ch, 2));
    ALWAYS(weft_chan_send(ch, P(3)));
    r = NULL;
    ALWAYS(weft_chan_recv(ch, &r));
    CHECK_EQ(I(r), 3);
    EXPECT(weft_chan_recv_for(ch, &r, 1 * MS), -ETIMEDOUT, -ENOMEM, -ENOMEM);
    ALWAYS(weft_chan_destroy(ch));
    MUST(weft_sleep(1 * MS));
    weft_sem sem;
    weft_sem_init(&sem, 0);
    EXPECT(weft_sem_wait_for(&sem, 1 * MS), -ETIMEDOUT, -ENOMEM, -ENOMEM);

    /* A lazy child with its own stack size, started on a worker. */
    weft_task_opts big = {.stack_size = 128 * 1024, .name = "big"};
    await_lazy(add_one, 41, &big, 42);

    /* A lazy task given up before it ran. */
    MUST(weft_task_create(&t, add_one, NULL, NULL));
    ALWAYS(weft_task_detach(t));

    spawn_detached(pool, 50);
    return P(42);
}

static void pool_program(void)
{
    weft_pool *pool;
    weft_pool_opts opts = {.threads = 2, .name = "fault"};
    EXPECT(weft_pool_create(&pool, &opts), 0, -ENOMEM, -EAGAIN);

    spawn_detached(pool, 100);

    /* Spawned from here, waited for from here. */
    for (intptr_t i = 0; i < 10; i++) {
        weft_task *t;
        void *r = NULL;
        MUST(weft_spawn(&t, pool, add_one, P(i), NULL));
        ALWAYS(weft_sync_wait(t, &r));
        CHECK_EQ(I(r), i + 1);
    }

    /* A lazy root that starts here, then moves to the pool. */
    weft_task *t;
    void *r = NULL;
    MUST(weft_task_create(&t, root, pool, NULL));
    MUST(weft_sync_wait(t, &r)); /* -ENOMEM leaves t lazy and ours */
    CHECK_EQ(I(r), 42);

    /* This thread blocks on an event a task sets, and times out on one
     * nobody sets. */
    weft_event ev;
    weft_event_init(&ev);
    MUST(weft_spawn(NULL, pool, setter, &ev, NULL));
    ALWAYS(weft_event_wait(&ev));
    times_out();

    ALWAYS(weft_pool_destroy(pool));
    CHECK_EQ(atomic_load(&detached_runs), atomic_load(&detached_spawned));

    /* A pool that dies young: a thread that cannot start, after others
     * did, must stop those. */
    opts.threads = 3;
    EXPECT(weft_pool_create(&pool, &opts), 0, -ENOMEM, -EAGAIN);
    ALWAYS(weft_pool_destroy(pool));
}

int main(int argc, char **argv)
{
    alarm(60); /* a hang fails the run (SIGALRM) */
    /* Which part runs first, on an empty stack cache (see the top). */
    bool pool_first = argc > 1 && strcmp(argv[1], "pool-first") == 0;
    if (pool_first)
        pool_program();
    coroutines();
    if (!pool_first)
        pool_program();
    printf("calls %lu fired %d\n", weft__fault_calls(),
           (int)weft__fault_fired());
    weft__fault_print_sites(stdout);
    return 0;
}
