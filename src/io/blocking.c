/*
 * io/blocking.c — weft_blocking: fn runs on a blocking thread while the
 * calling task is parked.
 *
 * The threads.  One process-wide set, under one mutex (a real one: these
 * threads sleep, and the critical sections are short but not tiny): a
 * FIFO of requests, the number of threads alive and the number waiting
 * for work.  A submitter that finds more queued requests than waiting
 * threads starts a thread, unless the bound is reached; then the request
 * waits for a busy thread to come back to the queue.  Counting waiting
 * threads against queued requests (rather than "is anyone idle") is what
 * starts a second thread for a second request that arrives before the
 * first idle thread has woken up.  A thread exits only when its idle wait
 * timed out with the queue empty, under the mutex, so a queued request
 * always has a live thread that will see it.  Threads are detached: the
 * process never waits for them (see the header).
 *
 * The request record.  It cannot live on the task's stack: a cancelled
 * task returns at once while fn still runs, and fn's end must then touch
 * the record.  So it is allocated, and freed by whichever of the two
 * parties is last, decided under the record's own lock:
 *   - the thread, when fn returns: result in, done set; if the task gave
 *     up (abandoned), the thread frees it; otherwise it wakes the task's
 *     wait (if one is linked) and leaves the record to the task.
 *   - the task, after its wait: it always retakes the lock (so the
 *     thread's unlock is its last touch of the record and of the task's
 *     stack-allocated wait record).  Woken: fn is done; it takes the
 *     result and frees.  Cancelled: if fn is done meanwhile (the thread's
 *     wake lost the race to the cancel), it frees; otherwise it marks the
 *     record abandoned and leaves it to the thread.
 * The wait record (sched/wait.h) is linked from the request only while the
 * task waits, and both sides touch it only under the request's lock,
 * which is the rule that lets it live on the task's stack.
 */
#include <weft/blocking.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/compiler.h"
#include "io/blocking_threads.h"
#include "sched/task.h"
#include "sched/wait.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

enum {
    DEFAULT_THREADS = 64,
    MAX_THREADS = 4096,
    DEFAULT_IDLE_MS = 5000,
};

static void observe(uint64_t *busy, uint64_t *idle);

/* The object is the function running on a blocking thread. */
static const struct weft__wait_kind blocking_kind = {
    WEFT__WR_BLOCKING, "blocking", WEFT__WK_CODE, NULL};

struct request {
    weft_fn fn;
    void *arg;
    struct request *next;     /* in the queue (under the threads' mutex) */
    weft__spinlock lock;      /* the rest                                */
    struct weft__wait *waiter; /* the task's wait, while it waits         */
    void *result;
    bool done;                /* fn has returned                         */
    bool abandoned;           /* the task has gone: the thread frees     */
};

static struct {
    pthread_once_t once;
    pthread_mutex_t lock;
    pthread_cond_t work;      /* a request was queued                    */
    struct request *head, **tail;
    unsigned queued;          /* requests in the queue                   */
    unsigned threads;         /* threads alive                           */
    unsigned waiting;         /* threads waiting on `work`               */
    unsigned max;             /* WEFT_BLOCKING_THREADS                   */
    uint64_t idle_ns;         /* WEFT_BLOCKING_IDLE_MS; 0: stay forever  */
} g = {
    .once = PTHREAD_ONCE_INIT,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .head = NULL,
    .tail = &g.head,
};

/* An environment variable as a number in [lo, hi], or dflt. */
static unsigned long env_number(const char *name, unsigned long lo,
                                unsigned long hi, unsigned long dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v < lo || v > hi || s[0] == '-')
        return dflt;
    return v;
}

static void setup(void)
{
    g.max = (unsigned)env_number("WEFT_BLOCKING_THREADS", 1, MAX_THREADS,
                                 DEFAULT_THREADS);
    g.idle_ns = (uint64_t)env_number("WEFT_BLOCKING_IDLE_MS", 0,
                                     (unsigned long)INT_MAX, DEFAULT_IDLE_MS) *
                1000000u;
    /* The idle timeout is measured on the monotonic clock, so that a jump
     * of the wall clock cannot end every idle wait at once.  (glibc fails
     * none of these for these arguments.) */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g.work, &ca);
    pthread_condattr_destroy(&ca);
    /* Before any thread exists: until now the answer was 0 and 0. */
    atomic_store_explicit(&weft__observe_blocking, observe,
                          memory_order_release);
}

/* Run one request; then it is the task's to free, or (abandoned) ours. */
static void run(struct request *r)
{
    void *result = r->fn(r->arg);
    weft__spin_lock(&r->lock);
    r->result = result;
    r->done = true;
    bool orphan = r->abandoned;
    /* A lost wake (the task was cancelled first) leaves the record to the
     * task, which retakes this lock after its wait and sees done. */
    if (!orphan && r->waiter)
        weft__wait_wake(r->waiter);
    weft__spin_unlock(&r->lock);
    if (orphan)
        free(r);
}

/* Under g.lock: wait for work, at most idle_ns; false if the time ran out
 * (or the wait failed) with the queue still empty. */
static bool wait_for_work(void)
{
    if (!g.idle_ns) {
        pthread_cond_wait(&g.work, &g.lock);
        return true;
    }
    /* Absolute, on the monotonic clock (setup). */
    struct timespec ts = weft__timespec_of(weft__now_ns() + g.idle_ns);
    int rc;
    do
        rc = pthread_cond_timedwait(&g.work, &g.lock, &ts);
    while (rc == 0 && !g.head);
    return rc == 0 || g.head;
}

static void *thread_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "weft-blocking");
    pthread_mutex_lock(&g.lock);
    for (;;) {
        struct request *r = g.head;
        if (r) {
            g.head = r->next;
            if (!g.head)
                g.tail = &g.head;
            g.queued--;
            pthread_mutex_unlock(&g.lock);
            run(r);
            pthread_mutex_lock(&g.lock);
            continue;
        }
        g.waiting++;
        bool more = wait_for_work();
        g.waiting--;
        if (!more)
            break;
    }
    g.threads--;
    pthread_mutex_unlock(&g.lock);
    return NULL;
}

/* Under g.lock: start one more thread.  Returns 0 or -ENOMEM. */
static int start_thread(void)
{
    pthread_attr_t attr;
    if (pthread_attr_init(&attr))
        return -ENOMEM;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    int rc = weft__pthread_create(&th, &attr, thread_main, NULL);
    pthread_attr_destroy(&attr);
    if (rc)
        return -ENOMEM;
    g.threads++;
    return 0;
}

/* Queue r and see that a thread will take it.  Returns 0, or -ENOMEM (no
 * thread exists and none could be started: r is not queued). */
static int submit(struct request *r)
{
    pthread_once(&g.once, setup);
    pthread_mutex_lock(&g.lock);
    r->next = NULL;
    *g.tail = r;
    g.tail = &r->next;
    g.queued++;
    int rc = 0;
    if (g.queued <= g.waiting)
        pthread_cond_signal(&g.work);
    else if (g.threads < g.max && start_thread() < 0 && g.threads == 0) {
        /* Nobody will ever take it.  With threads alive it just waits
         * for one of them. */
        g.head = NULL;
        g.tail = &g.head;
        g.queued = 0;
        rc = -ENOMEM;
    }
    pthread_mutex_unlock(&g.lock);
    return rc;
}

/* For weft_pool_stats (sched/observe.h): threads running a request, and
 * threads waiting for one. */
static void observe(uint64_t *busy, uint64_t *idle)
{
    pthread_mutex_lock(&g.lock);
    *busy = g.threads - g.waiting;
    *idle = g.waiting;
    pthread_mutex_unlock(&g.lock);
}

unsigned weft__blocking_threads(void)
{
    pthread_mutex_lock(&g.lock);
    unsigned n = g.threads;
    pthread_mutex_unlock(&g.lock);
    return n;
}

/* After the task stopped waiting without a result (cancelled): the record
 * goes to whichever side is last.  Called with r->lock held; releases it. */
static void give_up(struct request *r)
{
    r->waiter = NULL;
    bool done = r->done;
    r->abandoned = !done;
    weft__spin_unlock(&r->lock);
    if (done)
        free(r);
}

static int blocking_until(weft_fn fn, void *arg, void **result,
                          uint64_t deadline, bool nowait)
{
    if (!fn)
        return -EINVAL;
    if (!weft__task_current()) {
        void *v = fn(arg);
        if (result)
            *result = v;
        return 0;
    }
    /* Cancelled already: fn must not start at all; nor with no time to
     * wait for it. */
    if (weft__cancelled())
        return -ECANCELED;
    if (nowait)
        return -ETIMEDOUT;
    struct request *r = weft__malloc(sizeof *r);
    if (!r)
        return -ENOMEM;
    *r = (struct request){.fn = fn, .arg = arg, .lock = WEFT__SPINLOCK_INIT};
    int rc = submit(r);
    if (rc) {
        free(r);
        return rc;
    }

    weft__spin_lock(&r->lock);
    if (!r->done) {
        struct weft__wait w;
        if (weft__wait_init(&w, deadline, &blocking_kind,
                            (const void *)(uintptr_t)fn)) {
            /* cancelled since the check */
            give_up(r);
            return -ECANCELED;
        }
        r->waiter = &w;
        weft__spin_unlock(&r->lock);
        uint32_t outcome = weft__wait_block(&w);
        weft__spin_lock(&r->lock);
        if (outcome != WEFT__W_WOKEN) {
            give_up(r);
            return weft__wait_error(&w, outcome);
        }
    }
    void *v = r->result;
    weft__spin_unlock(&r->lock);
    free(r);
    if (result)
        *result = v;
    return 0;
}

WEFT_EXPORT int weft_blocking(weft_fn fn, void *arg, void **result)
{
    return blocking_until(fn, arg, result, 0, false);
}

WEFT_EXPORT int weft_blocking_for(weft_fn fn, void *arg, void **result,
                                  uint64_t timeout_ns)
{
    return blocking_until(fn, arg, result, weft__deadline_after(timeout_ns),
                          timeout_ns == 0);
}
