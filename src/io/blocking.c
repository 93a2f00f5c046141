/*
 * io/blocking.c — weft_blocking: fn runs on a blocking thread while the
 * caller waits (a task parked, a plain thread blocked), and the policy of
 * weft/blocking.h: a thread for every call up to the bound, then a FIFO
 * that no call waits in for longer than the queue bound.
 *
 * One process-wide set, under one mutex (a real one: these threads sleep,
 * and the critical sections are short but not tiny): the FIFO of requests
 * waiting for a thread, the number of threads alive and of threads
 * waiting for work, and every request's state.  A submitter that finds
 * more queued requests than waiting threads starts a thread, unless the
 * bound is reached; then the request waits for a busy thread to come back
 * to the queue.  Counting waiting threads against queued requests (rather
 * than "is anyone idle") is what starts a second thread for a second
 * request that arrives before the first idle thread has woken up.  A
 * thread exits only when its idle wait timed out with the queue empty (or
 * the bound was lowered below the threads alive), under the mutex, so a
 * queued request always has a live thread that will see it, unless the
 * bound is reached.
 *
 * The queue bound.  A request that waits at the bound is watched by the
 * watchdog, one more thread, alive only while requests wait (it exits
 * after an idle time as the others do): it sleeps until the head's
 * expiry and rejects every request whose expiry has passed (state
 * REJECTED, out of the queue, its caller woken: -EAGAIN, fn never runs).
 * Expiries are made non-decreasing along the queue (a request expires no
 * sooner than the one queued before it: after a configure that lowers the
 * bound, or sets one, the new requests' wait for the old ones'), so the
 * head's is the earliest and the watchdog looks only there; a new request
 * at the tail never moves it, so only a request queued into an empty
 * queue wakes the watchdog.
 *
 * A request's life, every step under the mutex:
 *
 *     QUEUED --a thread takes it--> RUNNING --fn returned--> DONE
 *        |  \--the watchdog: the queue bound passed--> REJECTED
 *        \--the caller's wait ended first (timeout, cancel): withdrawn
 *
 * The record cannot live on the caller's stack: a caller whose wait ends
 * while fn runs returns at once, and fn's end must then touch the record.
 * So it is allocated, and freed by the caller, except when the caller
 * leaves it RUNNING (abandoned): then by the thread, when fn returns.
 *
 * The caller's wait record (sched/wait.h) is linked from the request
 * (waiter) from the submit until the caller retakes the mutex after its
 * wait; the thread (at DONE) and the watchdog (at REJECTED) wake it only
 * under the mutex, which is the rule that lets it live on the caller's
 * stack.  A timed caller's timer is armed before the request is queued
 * (weft__wait_arm_first), so a timer that cannot be armed fails the call
 * before fn could start.
 */
#include <weft/blocking.h>

#include "base/alloc.h"
#include "base/direct.h"
#include "base/clock.h"
#include "base/compiler.h"
#include "io/blocking_threads.h"
#include "io/hook.h"
#include "sched/task.h"
#include "sched/wait.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

static void observe(uint64_t *busy, uint64_t *idle);

/* The object is the function running on a blocking thread. */
static const struct weft__wait_kind blocking_kind = {
    WEFT__WR_BLOCKING, "blocking", WEFT__WK_CODE, NULL};

enum { QUEUED, RUNNING, DONE, REJECTED };

struct request {
    weft_fn fn;
    void *arg;
    struct request *next, *prev; /* in the queue, while QUEUED            */
    uint64_t expires;            /* queued: rejected from then on
                                    (UINT64_MAX: never)                   */
    struct weft__wait *waiter;   /* the caller's wait, while it waits     */
    void *result;
    uint8_t state;
    bool abandoned;              /* the caller has gone: the thread frees */
};

static struct {
    pthread_once_t once;
    pthread_mutex_t lock;
    pthread_cond_t work;      /* a request was queued, or the set-up changed */
    pthread_cond_t watch;     /* the watchdog's: the queue was empty        */
    struct request *head, *tail;
    unsigned queued;          /* requests in the queue                     */
    unsigned threads;         /* threads alive                             */
    unsigned waiting;         /* threads waiting on `work`                 */
    bool watchdog;            /* the watchdog is alive                     */
    unsigned max;             /* weft_blocking_opts, as set now            */
    uint64_t idle_ns;         /* UINT64_MAX: stay forever                  */
    uint64_t queue_ns;        /* UINT64_MAX: no bound                      */
} g = {
    .once = PTHREAD_ONCE_INIT,
    .lock = PTHREAD_MUTEX_INITIALIZER,
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

/* A number of ms from the environment as ns: 0 is `zero`, the default
 * `dflt` (ns). */
static uint64_t env_ms(const char *name, uint64_t zero, uint64_t dflt)
{
    unsigned long ms = env_number(name, 0, (unsigned long)INT_MAX, ULONG_MAX);
    if (ms == ULONG_MAX)
        return dflt;
    return ms ? (uint64_t)ms * 1000000u : zero;
}

static void cond_init_monotonic(pthread_cond_t *c)
{
    /* Timed waits on the monotonic clock, so that a jump of the wall
     * clock cannot end every idle wait at once.  (glibc fails none of
     * these for these arguments.) */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(c, &ca);
    pthread_condattr_destroy(&ca);
}

static void setup(void)
{
    g.max = (unsigned)env_number("WEFT_BLOCKING_THREADS", 1,
                                 WEFT_BLOCKING_THREADS_MAX,
                                 WEFT_BLOCKING_THREADS_DEFAULT);
    g.idle_ns = env_ms("WEFT_BLOCKING_IDLE_MS", UINT64_MAX,
                       WEFT_BLOCKING_IDLE_DEFAULT_NS);
    g.queue_ns = env_ms("WEFT_BLOCKING_QUEUE_MS", UINT64_MAX,
                        WEFT_BLOCKING_QUEUE_DEFAULT_NS);
    cond_init_monotonic(&g.work);
    cond_init_monotonic(&g.watch);
    /* Before any thread exists: until now the answer was 0 and 0. */
    atomic_store_explicit(&weft__observe_blocking, observe,
                          memory_order_release);
}

/* ------------------------------------------------------------ the queue */

/* `ns` after `from`, saturating at UINT64_MAX (no limit). */
static uint64_t after(uint64_t from, uint64_t ns)
{
    return ns >= UINT64_MAX - from ? UINT64_MAX : from + ns;
}

/* Under g.lock: queue r at the tail, expiring queue_ns from now, and no
 * sooner than the request before it (see the top). */
static void enqueue(struct request *r)
{
    uint64_t expires = after(weft__now_ns(), g.queue_ns);
    if (g.tail && g.tail->expires > expires)
        expires = g.tail->expires;
    r->expires = expires;
    r->state = QUEUED;
    r->next = NULL;
    r->prev = g.tail;
    if (g.tail)
        g.tail->next = r;
    else
        g.head = r;
    g.tail = r;
    g.queued++;
}

/* Under g.lock: take r (QUEUED) out of the queue. */
static void dequeue(struct request *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        g.head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        g.tail = r->prev;
    r->next = r->prev = NULL;
    g.queued--;
}

/* Under g.lock: wait on c until the absolute monotonic time `until`
 * (UINT64_MAX: no limit); false when that time has come. */
static bool wait_until(pthread_cond_t *c, uint64_t until)
{
    if (until == UINT64_MAX) {
        pthread_cond_wait(c, &g.lock);
        return true;
    }
    struct timespec ts = weft__timespec_of(until);
    return pthread_cond_timedwait(c, &g.lock, &ts) != ETIMEDOUT;
}

/* ------------------------------------------------------------ the threads */

/* Under g.lock: whether a thread beyond the bound should exit. */
static bool over_bound(void)
{
    return g.threads > g.max;
}

/* Under g.lock, with nothing to run: wait for work for the idle time
 * (read afresh: a configure may change it); false if it ran out with the
 * queue still empty. */
static bool wait_for_work(void)
{
    uint64_t since = weft__now_ns();
    while (!g.head && !over_bound()) {
        if (!wait_until(&g.work, after(since, g.idle_ns)) && !g.head)
            return false;
    }
    return true;
}

/* Under g.lock: r's fn returned with `result`. */
static void finish(struct request *r, void *result)
{
    r->result = result;
    r->state = DONE;
    if (r->abandoned)
        free(r);
    else if (r->waiter)
        /* Fails if the caller's timer or cancel came first: the caller
         * then finds DONE when it retakes the lock, and takes the result
         * all the same. */
        weft__wait_wake(r->waiter);
}

static void *thread_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "weft-blocking");
    weft__lock(&g.lock);
    for (;;) {
        if (over_bound())
            break; /* the bound was lowered: one thread too many */
        struct request *r = g.head;
        if (r) {
            dequeue(r);
            r->state = RUNNING;
            pthread_mutex_unlock(&g.lock);
            void *result = r->fn(r->arg);
            weft__lock(&g.lock);
            finish(r, result);
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

/* Start a detached thread running main, quiet (alloc.h) if it runs none
 * of the program's code.  Returns 0, or -EAGAIN (pthread_create's word
 * for a thread that cannot be had). */
static int start(void *(*main)(void *), bool quiet)
{
    pthread_attr_t attr;
    if (pthread_attr_init(&attr))
        return -EAGAIN;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    int rc = quiet ? weft__quiet_thread_create(&th, &attr, main, NULL)
                   : weft__pthread_create(&th, &attr, main, NULL);
    pthread_attr_destroy(&attr);
    return rc ? -EAGAIN : 0;
}

/* Under g.lock: one more blocking thread.  0 or -EAGAIN. */
static int start_thread(void)
{
    int rc = start(thread_main, false);
    if (!rc)
        g.threads++;
    return rc;
}

/* ------------------------------------------------------------ the watchdog */

/* Under g.lock: reject every queued request whose expiry has passed; the
 * next expiry, or UINT64_MAX. */
static uint64_t reject_expired(void)
{
    uint64_t now = weft__now_ns();
    struct request *r;
    while ((r = g.head) != NULL && r->expires <= now) {
        dequeue(r);
        r->state = REJECTED;
        weft__wait_wake(r->waiter); /* linked while QUEUED: offload() */
    }
    return r ? r->expires : UINT64_MAX;
}

static void *watchdog_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "weft-block-wait");
    weft__lock(&g.lock);
    for (;;) {
        uint64_t next = reject_expired();
        if (next != UINT64_MAX) {
            wait_until(&g.watch, next);
            continue;
        }
        /* Nothing to watch (an empty queue, or one whose head, and so
         * every request, has no bound): exit after an idle time, as a
         * thread does. */
        if (!wait_until(&g.watch, after(weft__now_ns(), g.idle_ns)) &&
            (!g.head || g.head->expires == UINT64_MAX))
            break;
    }
    g.watchdog = false;
    pthread_mutex_unlock(&g.lock);
    return NULL;
}

/* Under g.lock: r is queued with no thread free for it: see that the
 * watchdog watches it.  0, or -EAGAIN (no watchdog could be started). */
static int watch(struct request *r)
{
    if (r->expires == UINT64_MAX)
        return 0; /* no bound */
    if (!g.watchdog) {
        int rc = start(watchdog_main, true);
        if (rc)
            return rc;
        g.watchdog = true;
    } else if (g.head == r) {
        pthread_cond_signal(&g.watch); /* the queue was empty */
    }
    return 0;
}

/* Under g.lock: queue r and see that a thread will take it, or that it
 * waits at most the queue bound for one.  Returns 0; START_ONE (a new
 * thread is wanted for it, already counted in g.threads: the caller
 * starts it with start_counted once it has let go of the lock, so that a
 * worker never holds the lock through pthread_create, which takes tens of
 * microseconds and more when the thread is preempted in it, while other
 * workers wait for the lock); or -EAGAIN (no thread exists, or no
 * watchdog: r is not queued). */
#define START_ONE 1

static int submit(struct request *r)
{
    enqueue(r);
    if (g.queued <= g.waiting) {
        pthread_cond_signal(&g.work);
        return 0;
    }
    if (g.threads < g.max) {
        g.threads++;
        return START_ONE;
    }
    /* Every thread is busy: r waits for a busy one to come back,
     * watched. */
    int rc = watch(r);
    if (rc)
        dequeue(r);
    return rc;
}

/* Not under g.lock: start the thread that submit counted for r.  Returns
 * 0, or -EAGAIN (it could not be started, r was still queued and no
 * thread is left: r is not queued any more).  Other requests queued
 * meanwhile in the belief that this thread would come are not left
 * waiting for nothing: with no thread left they are rejected (-EAGAIN to
 * their callers, as a submit without a thread); with threads left, r is
 * watched like any request that waits for a busy thread. */
static int start_counted(struct request *r)
{
    if (start(thread_main, false) == 0)
        return 0;
    int rc = 0;
    weft__lock(&g.lock);
    g.threads--;
    if (r->state == QUEUED) {
        rc = g.threads ? watch(r) : -EAGAIN;
        if (rc)
            dequeue(r);
    }
    if (!g.threads) {
        struct request *q;
        while ((q = g.head) != NULL) {
            dequeue(q);
            q->state = REJECTED;
            weft__wait_wake(q->waiter); /* linked while QUEUED */
        }
    }
    pthread_mutex_unlock(&g.lock);
    return rc;
}

/* For weft_pool_stats (sched/observe.h): threads running a request, and
 * threads waiting for one. */
static void observe(uint64_t *busy, uint64_t *idle)
{
    weft__lock(&g.lock);
    *busy = g.threads - g.waiting;
    *idle = g.waiting;
    pthread_mutex_unlock(&g.lock);
}

unsigned weft__blocking_threads(void)
{
    weft__lock(&g.lock);
    unsigned n = g.threads;
    pthread_mutex_unlock(&g.lock);
    return n;
}

/* ------------------------------------------------------------ the calls */

/*
 * Run fn on a blocking thread and wait for it until deadline (0: none),
 * in a task (parked) or on a plain thread (blocked): the top of this file
 * has the request's life.
 */
static int offload(weft_fn fn, void *arg, void **result, uint64_t deadline,
                   bool *runs)
{
    pthread_once(&g.once, setup);
    struct weft__wait w;
    if (weft__wait_init(&w, deadline, &blocking_kind,
                        (const void *)(uintptr_t)fn))
        return -ECANCELED; /* cancelled before the call: fn never runs */
    struct request *r = weft__malloc(sizeof *r);
    int rc = r ? weft__wait_arm_first(&w) : -ENOMEM;
    if (!rc) {
        *r = (struct request){.fn = fn, .arg = arg, .waiter = &w};
        weft__lock(&g.lock);
        rc = submit(r);
        pthread_mutex_unlock(&g.lock);
        if (rc == START_ONE)
            rc = start_counted(r);
    }
    if (rc) {
        weft__wait_abandon(&w);
        free(r);
        return rc;
    }

    uint32_t outcome = weft__wait_block(&w);
    weft__lock(&g.lock);
    r->waiter = NULL;
    switch (r->state) {
    case DONE: /* woken, or fn ended before the timeout or cancel was seen */
        if (result)
            *result = r->result;
        rc = 0;
        break;
    case REJECTED:
        rc = -EAGAIN;
        break;
    case QUEUED: /* withdrawn before a thread took it: fn never runs */
        dequeue(r);
        rc = weft__wait_error(&w, outcome);
        break;
    default: /* RUNNING: fn runs on; its thread frees the record */
        r->abandoned = true;
        r = NULL;
        if (runs)
            *runs = true;
        rc = weft__wait_error(&w, outcome);
        break;
    }
    pthread_mutex_unlock(&g.lock);
    free(r);
    return rc;
}

WEFT_EXPORT int weft_blocking_configure(const weft_blocking_opts *opts)
{
    weft_blocking_opts o = {0};
    if (opts)
        o = *opts;
    if (o.max_threads > WEFT_BLOCKING_THREADS_MAX ||
        !weft__reserved_zero(o.reserved_, 4))
        return -EINVAL;
    pthread_once(&g.once, setup);
    weft__lock(&g.lock);
    g.max = o.max_threads ? o.max_threads : WEFT_BLOCKING_THREADS_DEFAULT;
    g.idle_ns = o.idle_ns ? o.idle_ns : WEFT_BLOCKING_IDLE_DEFAULT_NS;
    g.queue_ns = o.queue_ns ? o.queue_ns : WEFT_BLOCKING_QUEUE_DEFAULT_NS;
    /* Idle threads look again: beyond a lower bound they exit, and each
     * reads the idle time afresh. */
    pthread_cond_broadcast(&g.work);
    /* A higher bound: threads for the requests that wait for one. */
    unsigned want = g.queued > g.waiting ? g.queued - g.waiting : 0;
    while (want-- && g.threads < g.max && start_thread() == 0)
        ;
    pthread_mutex_unlock(&g.lock);
    return 0;
}

WEFT_EXPORT int weft_blocking(weft_fn fn, void *arg, void **result)
{
    if (!fn)
        return -EINVAL;
    if (weft__task_current())
        return offload(fn, arg, result, 0, NULL);
    void *v = fn(arg);
    if (result)
        *result = v;
    return 0;
}

WEFT_EXPORT int weft__hook_blocking(weft_fn fn, void *arg, void **result,
                                    bool *runs)
{
    *runs = false;
    if (weft__task_current())
        return offload(fn, arg, result, 0, runs);
    void *v = fn(arg);
    if (result)
        *result = v;
    return 0;
}

WEFT_EXPORT int weft_blocking_for(weft_fn fn, void *arg, void **result,
                                  uint64_t timeout_ns)
{
    if (!fn)
        return -EINVAL;
    /* First: timeout 0 never waits, in a cancelled task too (weft/weft.h,
     * "Timeouts"). */
    if (timeout_ns == 0)
        return -ETIMEDOUT; /* fn cannot run without the caller waiting */
    if (weft__cancelled())
        return -ECANCELED;
    if (timeout_ns == UINT64_MAX)
        return weft_blocking(fn, arg, result);
    return offload(fn, arg, result, weft__deadline_after(timeout_ns), NULL);
}
