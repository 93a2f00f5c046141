/*
 * stress_cancel_start.c — weft_task_cancel from another thread ("any
 * context": a borrowed pointer names the task) racing the holder's start
 * of the task.  A cancel adds a reference to the task's state word for
 * the moment it uses the task; a start that wrote back a state it had
 * read before lost that reference, and the cancel's drop then freed the
 * records under the task (a body run with no current task, crashes in
 * the record cache, hangs).  Each phase: the holder makes a task and
 * publishes its handle in a slot that a canceller thread cancels through,
 * under a mutex, as fast as it can; the holder takes it out of the slot
 * before it consumes the handle.  The starts raced:
 *
 *   join-lazy    a plain thread's weft_task_join runs a lazy task here;
 *   start-lazy   a plain thread's weft_task_start queues a lazy task;
 *   task-lazy    a task's weft_task_join runs a lazy child in place;
 *   task-spawn   a task's weft_task_join runs a spawned child in place,
 *                claimed from its own deque with a plain store (await.c,
 *                try_inline), which the cancel of a task not started
 *                must not touch (sched/task.h, WEFT__H_CANCEL);
 *   task-start   a task's weft_task_start queues a lazy child on its own
 *                deque, and its weft_task_join runs it in place as above:
 *                a cancel that found it lazy (IDLE) must not take a
 *                reference either, since the start may come before that
 *                reference is taken or dropped (found by
 *                verify/cancel_start.pml, -DLAZY_START).
 *
 * A cancelled child that never waits ends normally, so every result is
 * checked; a lost reference shows as a crash, a wrong result or a hang
 * (watchdog).  Under ASan a freed record in use is reported at once.
 */
#include "stress.h"

#include <pthread.h>

enum { ITERS = 200000 };

static struct {
    pthread_mutex_t m;
    weft_task *t;
} slot = {PTHREAD_MUTEX_INITIALIZER, NULL};
static atomic_bool stop_cancelling;
static atomic_long cancels;
static weft_pool *pool;

enum mode { JOIN_LAZY, START_LAZY, TASK_LAZY, TASK_SPAWN, TASK_START };

static void *child(void *arg)
{
    return P(I(arg) ^ 0x55);
}

static void publish(weft_task *t)
{
    pthread_mutex_lock(&slot.m);
    slot.t = t;
    pthread_mutex_unlock(&slot.m);
}

static void one(enum mode m, intptr_t v)
{
    weft_task *t = NULL;
    if (m == TASK_SPAWN)
        REQUIRE_EQ(weft_spawn(&t, pool, child, P(v), NULL), 0);
    else
        REQUIRE_EQ(weft_task_create(&t, child, P(v), NULL), 0);
    publish(t);
    if (m == START_LAZY || m == TASK_START)
        CHECK_EQ(weft_task_start(t, pool), 0);
    CHECK_EQ(weft_task_join(t), 0); /* starts a lazy t here */
    publish(NULL);
    void *r = NULL;
    CHECK_EQ(weft_task_current() ? weft_await(t, &r) : weft_sync_wait(t, &r),
             0);
    CHECK_EQ(I(r), v ^ 0x55);
}

struct holder {
    enum mode m;
    long iters;
};

static void *hold(void *arg)
{
    struct holder *h = arg;
    for (long i = 0; i < h->iters; i++) {
        one(h->m, (intptr_t)(i & 0xffff));
        if ((i & 255) == 0)
            st_tick();
    }
    return NULL;
}

static void *canceller(void *arg)
{
    (void)arg;
    long n = 0;
    while (!atomic_load(&stop_cancelling)) {
        pthread_mutex_lock(&slot.m);
        if (slot.t) {
            CHECK_EQ(weft_task_cancel(slot.t), 0);
            n++;
        }
        pthread_mutex_unlock(&slot.m);
    }
    atomic_store(&cancels, n);
    return NULL;
}

static void run_phase(enum mode m, long iters, const char *what)
{
    st_phase = what;
    atomic_store(&stop_cancelling, false);
    pthread_t c;
    REQUIRE_EQ(pthread_create(&c, NULL, canceller, NULL), 0);
    struct holder h = {m, iters};
    uint64_t t0 = st_now_ns();
    if (m == TASK_LAZY || m == TASK_SPAWN || m == TASK_START) {
        weft_task *t;
        REQUIRE_EQ(weft_spawn(&t, pool, hold, &h, NULL), 0);
        REQUIRE_EQ(weft_sync_wait(t, NULL), 0);
    } else {
        hold(&h);
    }
    atomic_store(&stop_cancelling, true);
    pthread_join(c, NULL);
    st_report(what, iters, t0);
    printf("%s:   %ld cancels through the slot\n", st_name,
           atomic_load(&cancels));
}

int main(void)
{
    st_start("stress_cancel_start", 150);
    long iters = st_scaled(ITERS);
    /* One worker: the holder's task and the children share it, so the
     * lazy children are run in place by the join. */
    pool = st_pool(1, "cancel");
    run_phase(JOIN_LAZY, iters / 4, "join-lazy");
    run_phase(START_LAZY, iters, "start-lazy");
    run_phase(TASK_LAZY, iters, "task-lazy");
    run_phase(TASK_SPAWN, iters, "task-spawn");
    run_phase(TASK_START, iters, "task-start");
    st_phase = "destroy";
    REQUIRE_EQ(weft_pool_destroy(pool), 0);
    return st_finish();
}
