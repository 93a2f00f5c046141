/*
 * test_mutex.c — a library's pthread mutex held across a hooked blocking
 * recv, with the other tasks of the same (only) worker queued on it
 * (hooked build only).
 *
 * hooklib_locked_recv (hooklib.c) locks a pthread mutex, recv(2)s one
 * byte from a blocking socket, unlocks; it counts the callers inside at
 * once, which must never be two.  The mutex is a plain one, then a
 * recursive one locked twice (glibc's owner is the thread, which every
 * task of the worker shares: the hook must still keep the second task
 * out, hook/mutex.c).  8 tasks on a 1-worker pool
 * (no monitor: no spare thread can come to the rescue) call it 3 times
 * each, all on the same socket.  The holder parks in recv, pinned to the
 * worker; the others call pthread_mutex_lock meanwhile.  If that blocked
 * the worker thread, the holder could never run again: a deadlock, which
 * the watchdog turns into a failure.  The hooked lock must instead nap
 * the task and retry.
 *
 * A plain "feeder" thread writes the byte for each recv only once every
 * task still running is inside the library call (entered - done counts
 * them) and one of them waits on the socket (poll_waits): the others are
 * then inside pthread_mutex_lock.  (A task increments `entered` just
 * before its call and reaches the lock without a switch; on one worker a
 * task seen entered but still running gets to its lock before the holder
 * can run again, so the lock is tried while the holder is parked.)
 */
#include "hk.h"
#include "hooklib.h"

#define NTASKS 8
#define CALLS 3

struct mutex_run {
    weft_pool *pool;
    pthread_mutex_t m;
    int depth;
    int sv[2];
    atomic_int entered, done, finished;
    atomic_int holders, overlaps;
    atomic_int got[NTASKS * CALLS]; /* how often each byte was received */
};

static void *mutex_task(void *arg)
{
    struct mutex_run *r = arg;
    for (int k = 0; k < CALLS; k++) {
        char c = 0;
        atomic_fetch_add(&r->entered, 1);
        ssize_t n = hooklib_locked_recv(&r->m, r->depth, r->sv[0], &c,
                                        &r->holders, &r->overlaps);
        CHECK_EQ(n, 1);
        if (n == 1 && (unsigned char)c < NTASKS * CALLS)
            atomic_fetch_add(&r->got[(unsigned char)c], 1);
        atomic_fetch_add(&r->done, 1);
    }
    atomic_fetch_add(&r->finished, 1);
    return NULL;
}

static void *mutex_feeder(void *arg)
{
    struct mutex_run *r = arg;
    for (int k = 0; k < NTASKS * CALLS; k++) {
        for (;;) {
            int done = atomic_load(&r->done);
            int inside = atomic_load(&r->entered) - done;
            int live = NTASKS - atomic_load(&r->finished);
            if (done == k && inside == live && inside > 0 &&
                hk_poll_waits(r->pool) >= 1)
                break;
            sched_yield();
        }
        char c = (char)k;
        CHECK_EQ(write(r->sv[1], &c, 1), 1);
        /* That recv ends before the next round looks. */
        while (atomic_load(&r->done) == k)
            sched_yield();
    }
    return NULL;
}

static void mutex_across_recv(int type, int depth)
{
    assert_true(hk_hook_loaded());
    static struct mutex_run r;
    memset(&r, 0, sizeof r);
    pthread_mutexattr_t at;
    assert_int_equal(pthread_mutexattr_init(&at), 0);
    assert_int_equal(pthread_mutexattr_settype(&at, type), 0);
    assert_int_equal(pthread_mutex_init(&r.m, &at), 0);
    pthread_mutexattr_destroy(&at);
    r.depth = depth;
    hk_pair(r.sv);
    r.pool = hk_pool(1, WEFT_POOL_NO_MONITOR);

    pthread_t feeder = wt_thread(mutex_feeder, &r);
    weft_task *t[NTASKS];
    for (int i = 0; i < NTASKS; i++)
        assert_int_equal(weft_spawn(&t[i], r.pool, mutex_task, &r, NULL), 0);
    for (int i = 0; i < NTASKS; i++)
        assert_int_equal(weft_sync_wait(t[i], NULL), 0);
    wt_join(feeder);
    wt_destroy(r.pool);

    for (int i = 0; i < NTASKS * CALLS; i++)
        assert_int_equal(atomic_load(&r.got[i]), 1);
    assert_int_equal(atomic_load(&r.overlaps), 0);
    /* Nobody holds it, and nothing is left on the socket. */
    assert_int_equal(pthread_mutex_trylock(&r.m), 0);
    assert_int_equal(pthread_mutex_unlock(&r.m), 0);
    char c;
    assert_int_equal(recv(r.sv[0], &c, 1, MSG_DONTWAIT), -1);
    assert_int_equal(errno, EAGAIN);
    close(r.sv[0]);
    close(r.sv[1]);
    pthread_mutex_destroy(&r.m);
    WT_CLEAN();
}

static void test_mutex_across_recv(void **state)
{
    (void)state;
    mutex_across_recv(PTHREAD_MUTEX_NORMAL, 1);
}

static void test_recursive_mutex_across_recv(void **state)
{
    (void)state;
    mutex_across_recv(PTHREAD_MUTEX_RECURSIVE, 2);
}

/* The same with a mutex that plain threads contend for too: a plain
 * thread holds it while a task waits for it, then lets go.  The task's
 * lock must return once it is free (a nap that retries), and the task
 * runs on the same thread before and after (the pin: a pthread mutex
 * records its owner's thread id). */
struct plain_run {
    pthread_mutex_t m;
    atomic_bool task_waiting, release;
    long tid_before, tid_after;
    weft_pool *pool;
};

static void *plain_locker(void *arg)
{
    struct plain_run *r = arg;
    CHECK_EQ(pthread_mutex_lock(&r->m), 0);
    atomic_store(&r->task_waiting, true);
    /* Once the task is in its lock (it napped: parked on the pool). */
    while (!atomic_load(&r->release) || hk_parked(r->pool) < 1)
        sched_yield();
    CHECK_EQ(pthread_mutex_unlock(&r->m), 0);
    return NULL;
}

static void *plain_task(void *arg)
{
    struct plain_run *r = arg;
    while (!atomic_load(&r->task_waiting))
        CHECK_EQ(weft_yield(), 0);
    atomic_store(&r->release, true);
    r->tid_before = hk_tid();
    CHECK_EQ(pthread_mutex_lock(&r->m), 0);
    r->tid_after = hk_tid();
    CHECK_EQ(pthread_mutex_unlock(&r->m), 0);
    return NULL;
}

static void test_mutex_from_plain_thread(void **state)
{
    (void)state;
    static struct plain_run r;
    memset(&r, 0, sizeof r);
    assert_int_equal(pthread_mutex_init(&r.m, NULL), 0);
    r.pool = hk_pool(2, WEFT_POOL_NO_MONITOR);
    pthread_t th = wt_thread(plain_locker, &r);
    wt_run(r.pool, plain_task, &r);
    wt_join(th);
    wt_destroy(r.pool);
    assert_int_equal(r.tid_before, r.tid_after);
    pthread_mutex_destroy(&r.m);
    WT_CLEAN();
}

/* A cancel does not end a pthread_mutex_lock: it cannot fail that way.
 * A plain thread holds the mutex; the task waits for it (napping, so
 * parked); another task cancels it; the plain thread lets go; the lock
 * returns 0 and the task holds the mutex. */
struct cancel_run {
    pthread_mutex_t m;
    weft_pool *pool;
    weft_task *waiter;
    atomic_bool holding, cancelled, releasing;
    int lock_ret;
};

static void *cancel_holder(void *arg)
{
    struct cancel_run *r = arg;
    CHECK_EQ(pthread_mutex_lock(&r->m), 0);
    atomic_store(&r->holding, true);
    while (!atomic_load(&r->cancelled))
        sched_yield();
    /* Flagged before the unlock: the waiter may take the mutex the moment
     * it is free, before this thread runs another instruction. */
    atomic_store(&r->releasing, true);
    CHECK_EQ(pthread_mutex_unlock(&r->m), 0);
    return NULL;
}

static void *cancel_waiter(void *arg)
{
    struct cancel_run *r = arg;
    r->lock_ret = pthread_mutex_lock(&r->m);
    /* It got the mutex only once the holder let go. */
    CHECK(atomic_load(&r->releasing));
    if (r->lock_ret == 0)
        CHECK_EQ(pthread_mutex_unlock(&r->m), 0);
    return NULL;
}

static void *cancel_canceller(void *arg)
{
    struct cancel_run *r = arg;
    while (hk_parked(r->pool) < 1)
        CHECK_EQ(weft_yield(), 0);
    CHECK_EQ(weft_task_cancel(r->waiter), 0);
    atomic_store(&r->cancelled, true);
    CHECK_EQ(weft_await(r->waiter, NULL), 0);
    return NULL;
}

static void test_mutex_cancel(void **state)
{
    (void)state;
    static struct cancel_run r;
    memset(&r, 0, sizeof r);
    assert_int_equal(pthread_mutex_init(&r.m, NULL), 0);
    r.lock_ret = -1;
    r.pool = hk_pool(1, WEFT_POOL_NO_MONITOR);
    pthread_t th = wt_thread(cancel_holder, &r);
    while (!atomic_load(&r.holding))
        sched_yield();
    assert_int_equal(weft_spawn(&r.waiter, r.pool, cancel_waiter, &r, NULL),
                     0);
    wt_run(r.pool, cancel_canceller, &r);
    wt_join(th);
    wt_destroy(r.pool);
    assert_int_equal(r.lock_ret, 0);
    pthread_mutex_destroy(&r.m);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST1(test_mutex_across_recv),
        WT_TEST1(test_recursive_mutex_across_recv),
        WT_TEST1(test_mutex_from_plain_thread),
        WT_TEST1(test_mutex_cancel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
