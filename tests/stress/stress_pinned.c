/*
 * stress_pinned.c — the pinned queue (src/sched/pool.c, "Pinned tasks";
 * docs/design.md, "Foreign blocking calls").  A task that parks pinned,
 * as inside a call of the interposition library, must continue on the
 * thread it parked on, whoever wakes it and however the pool is busy, and
 * must never be lost (the wake by name of a sleeping worker).
 *
 * 32 pinned tasks on a 4-worker pool (2 cores here) park again and again,
 * each time one of: a timer (weft_sleep, fired by whichever worker runs
 * timers), an fd (a socketpair that a plain thread answers: woken by the
 * netpoller, from a worker or from the thread that polls), an await of a
 * child it spawns (the child, often stolen, finishes on another worker,
 * whose continuation must not run the pinned parent inline), an event set
 * by a plain thread (a wake from outside the pool); now and then a long
 * sleep lets the workers go idle, so wakes find them asleep.  A spinning
 * task and a spawn storm keep the queues busy and the thieves at work.
 * After every park the task checks its thread id; a lost wake stalls the
 * watchdog.
 */
#include "stress.h"

#include "sched/hook.h"

#include <weft/io.h>
#include <weft/timer.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>

enum { NTASKS = 32, ROUNDS = 2500 };

static long rounds;
static int pair[NTASKS][2];      /* [0]: the task's end; [1]: the echo's */
static weft_event ev[NTASKS];
static atomic_int ev_armed[NTASKS];
static atomic_long parks, moved, unpinned, finished;
static atomic_int stop;

static pid_t tid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

static void *child(void *arg)
{
    st_spin((unsigned)I(arg));
    return arg;
}

static void *storm(void *arg)
{
    (void)arg;
    weft_pool *p = weft_pool_current();
    uint64_t rs = st_seed(99);
    while (!atomic_load(&stop)) {
        for (int i = 0; i < 64; i++)
            CHECK_EQ(weft_spawn(NULL, p, child, P(st_rand(&rs) % 200), NULL),
                     0);
        CHECK_EQ(weft_sleep(200000), 0);
    }
    return NULL;
}

static void *spinner(void *arg)
{
    (void)arg;
    /* Scheduling points now and then, or the monitor's spare would run
     * the rest of this worker's queue (which is fine, but then this
     * worker's pinned tasks wait for the spin to end). */
    while (!atomic_load(&stop)) {
        st_spin(20000);
        CHECK_EQ(weft_yield(), 0);
    }
    return NULL;
}

/* One park of the pinned kind k; returns 0 or a weft error. */
static int park(int i, unsigned k, uint64_t *rs)
{
    weft_pool *p = weft_pool_current();
    switch (k) {
    case 0:
        return weft_sleep(st_rand(rs) % 50000);
    case 1: {
        char c = 'x';
        if (send(pair[i][0], &c, 1, MSG_DONTWAIT) != 1)
            return -EIO;
        int r = weft_wait_fd(pair[i][0], WEFT_IN);
        if (r < 0)
            return r;
        return recv(pair[i][0], &c, 1, MSG_DONTWAIT) == 1 ? 0 : -EIO;
    }
    case 2: {
        weft_task *c;
        int r = weft_spawn(&c, p, child, P(st_rand(rs) % 3000), NULL);
        if (r)
            return r;
        void *res;
        return weft_await(c, &res);
    }
    case 3: {
        weft_event_init(&ev[i]);
        atomic_store(&ev_armed[i], 1); /* the setter thread sets it */
        return weft_event_wait(&ev[i]);
    }
    default:
        /* Long enough for every worker to go to sleep. */
        return weft_sleep(2000000);
    }
}

static void *pinned(void *arg)
{
    int i = (int)I(arg);
    uint64_t rs = st_seed((uint64_t)i + 1);
    for (long n = 0; n < rounds; n++) {
        uint64_t r = st_rand(&rs);
        unsigned k = r % 64 == 0 ? 4 : (unsigned)(r % 4);
        bool pin = weft__hook_here();
        pid_t before = tid();
        if (pin)
            weft__hook_pin();
        int rc = park(i, k, &rs);
        if (pin)
            weft__hook_unpin();
        CHECK_EQ(rc, 0);
        if (pin && tid() != before) {
            atomic_fetch_add(&moved, 1);
            CHECK(!"a pinned task continued on another thread");
        }
        if (!pin)
            atomic_fetch_add(&unpinned, 1);
        atomic_fetch_add(&parks, 1);
        st_tick();
    }
    atomic_fetch_add(&finished, 1);
    return NULL;
}

/* A plain thread: echoes every byte a task sends, and sets the events
 * the tasks wait on. */
static void *outside(void *arg)
{
    (void)arg;
    struct pollfd fds[NTASKS];
    for (int i = 0; i < NTASKS; i++)
        fds[i] = (struct pollfd){.fd = pair[i][1], .events = POLLIN};
    while (atomic_load(&finished) < NTASKS) {
        int n = poll(fds, NTASKS, 1);
        for (int i = 0; n > 0 && i < NTASKS; i++) {
            if (!(fds[i].revents & POLLIN))
                continue;
            char c;
            if (recv(pair[i][1], &c, 1, MSG_DONTWAIT) == 1)
                CHECK_EQ(send(pair[i][1], &c, 1, MSG_DONTWAIT), 1);
        }
        for (int i = 0; i < NTASKS; i++)
            if (atomic_exchange(&ev_armed[i], 0))
                weft_event_set(&ev[i]);
    }
    return NULL;
}

int main(void)
{
    st_start("stress_pinned", 300);
    rounds = st_scaled(ROUNDS);
    for (int i = 0; i < NTASKS; i++)
        REQUIRE_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
                              pair[i]), 0);
    weft_pool *p = st_pool(4, "pinned");
    pthread_t out;
    REQUIRE_EQ(pthread_create(&out, NULL, outside, NULL), 0);

    st_phase = "pinned parks";
    uint64_t t0 = st_now_ns();
    weft_task *sp, *sm, *t[NTASKS];
    REQUIRE_EQ(weft_spawn(&sp, p, spinner, NULL, NULL), 0);
    REQUIRE_EQ(weft_spawn(&sm, p, storm, NULL, NULL), 0);
    for (int i = 0; i < NTASKS; i++)
        REQUIRE_EQ(weft_spawn(&t[i], p, pinned, P(i), NULL), 0);
    for (int i = 0; i < NTASKS; i++)
        REQUIRE_EQ(weft_sync_wait(t[i], NULL), 0);
    st_report("pinned parks", NTASKS * rounds, t0);
    atomic_store(&stop, 1);
    REQUIRE_EQ(weft_sync_wait(sp, NULL), 0);
    REQUIRE_EQ(weft_sync_wait(sm, NULL), 0);
    REQUIRE_EQ(pthread_join(out, NULL), 0);

    printf("stress_pinned: %ld parks, %ld on a spare (not pinned), %ld "
           "moved\n", atomic_load(&parks), atomic_load(&unpinned),
           atomic_load(&moved));
    REQUIRE_EQ(atomic_load(&parks), NTASKS * rounds);
    REQUIRE_EQ(atomic_load(&moved), 0);
    /* Most parks must have been pinned, or the check checked nothing. */
    REQUIRE(atomic_load(&unpinned) * 2 < atomic_load(&parks));
    st_phase = "destroy";
    REQUIRE_EQ(weft_pool_destroy(p), 0);
    return st_finish();
}
