/*
 * sched/monitor.c — the monitor of stuck workers (Go's sysmon, without
 * preemption): one thread per pool that watches the workers, covers one
 * that is stuck in a task while it holds up other work, recalls the cover
 * when it comes back, and warns about long stalls (weft/pool.h, "Stuck
 * workers").
 *
 * Watching.  Each worker's thread bumps a counter at every switch to a
 * task, every inline run and every yield, and names the context it runs
 * (its ctx block's `switches` and `current`, worker.h, th): a plain add
 * and the store the switch makes anyway, nothing else on the hot paths.
 * The monitor samples both every MONITOR_PERIOD_NS and notes when it
 * first saw the current pair; a worker whose pair has not changed for
 * WEFT__STUCK_NS (10 ms, Go's forcePreemptNS) is stuck, which it
 * publishes in w->stuck for the thieves (pool.c, steal_one: a stuck
 * worker's LIFO slot and yielded FIFO are taken too).  A worker in its
 * scheduler loop (running NULL) is never stuck.  An inline run (await.c)
 * counts as a switch: a fork-join body that runs its children as calls
 * is making scheduling decisions, not stuck in one task.
 *
 * Covering.  A stuck worker X holds up other work when
 *   - its LIFO slot or its yielded FIFO holds a task (only X runs those,
 *     but for thieves in their last round);
 *   - its deque holds tasks and some worker sleeps (the push that queued
 *     them woke nobody, or a searcher missed them: an owner's push has no
 *     barrier, pool.c) or no worker is free (every active one is stuck);
 *   - a timer on its heap is due and no worker sleeps (a sleeping worker
 *     sleeps until the earliest timer of every heap and fires them all);
 *   - no worker is free and anything is pending in the pool: the global
 *     queue, an armed timer, a wait on I/O.
 * Then, if some worker sleeps, the monitor wakes one (weft__pool_kick): a
 * woken searcher takes X's queued tasks as above.  Else it covers X with a
 * spare (pool.c, "Spares"), which is one of the pool's workers until X
 * switches again: it takes X's queued tasks, fires X's heap, and serves
 * the poller and the global queue like any worker.  At most one cover per
 * stuck worker, at most max_spares at once; a spare that is stuck itself
 * while it holds up work gets a cover of its own.  Go's sysmon instead
 * preempts a goroutine after 10 ms and hands a P to another M after a
 * system call of 20 us to 10 ms; C code cannot be preempted safely (it
 * may hold any lock: malloc's, a library's), so here the stuck task keeps
 * its thread and the pool gets another.
 *
 * Recalling.  A spare whose covered worker is no longer stuck (it
 * switched) is recalled: it leaves at its next scheduling point, handing
 * what it queued to the global queue (pool.c, spare_leave; why a recalled
 * spare always leaves and loses no wakeup: pool.c, "Spares").
 *
 * Sleeping.  While some worker runs a task the monitor wakes every
 * MONITOR_PERIOD_NS, or sooner when a worker's stall or warning threshold
 * comes first.  When it sees every worker asleep it sleeps until the
 * first worker wakes (weft__pool_monitor_may_sleep: the two meet under
 * idle_lock, pool.c, park_worker; the argument is in pool.c, "Spares",
 * and verify/pool.pml checks it), so an idle pool costs it nothing; its
 * first look after that comes a period later (monitor_main).
 *
 * The monitor's own state (the samples) is its alone; what it shares is
 * atomics: w->stuck, a spare's covers/active/retire, and the counters.
 */
#include "sched/monitor.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/compiler.h"
#include "base/symbols.h"
#include "base/utf8.h"
#include "sched/probe.h"
#include "sched/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MONITOR_PERIOD_NS ((uint64_t)5 * 1000000u)
/* A timer this late on the heap of a worker that runs a task says that
 * worker has not passed a scheduling point since it came due. */
#define TIMER_SLACK_NS ((uint64_t)1000000u)

/* What the monitor last saw of one worker slot. */
struct watch {
    uint64_t switches;
    const struct weft_coro *task;  /* what ran; compared, never followed */
    /* When it first saw this pair (ns; for the dump too: atomic). */
    _Atomic uint64_t since;
    bool stuck;
    bool warned;
    /* The switch count at which /proc last said "computing" (not blocked
     * in the kernel), and when: read again after a period. */
    uint64_t computing_at_switches;
    uint64_t computing_seen;
    /* While it computes: its thread's CPU time at mark_at (0: none yet),
     * to tell computing from waiting for a CPU (stuck_now). */
    uint64_t mark_at, cpu_at_mark;
};

struct weft__monitor {
    weft_pool *pool;
    pthread_t thread;
    bool started;
    struct weft__parker parker;
    /* When its timed sleep ends (ns); UINT64_MAX while it is awake (its
     * look may have missed a timer armed since: the unpark's permit makes
     * its next sleep return at once, for another look); 0 while it sleeps
     * until a worker wakes (the workers fire their own timers then).  A
     * timer armed to come due, with its slack, before that wakes it
     * (weft__monitor_timer_armed), so that the look that finds a blocked
     * worker's timer late is not a period away. */
    _Atomic uint64_t next_look;
    uint64_t warn_ns;              /* 0: no warnings                    */
    _Atomic uint64_t stalls, covers, spares_made;
    struct watch watch[];          /* nworkers + max_spares             */
};

/* ---------------------------------------------------------- warnings */

/* WEFT_STALL_WARN_MS, read once: a number of ms, 1..3600000. */
static unsigned env_warn_ms(void)
{
    const char *s = getenv("WEFT_STALL_WARN_MS");
    if (!s || !*s)
        return 0;
    char *end;
    unsigned long ms = strtoul(s, &end, 10);
    return *end || s[0] == '-' || ms > 3600000 ? 0 : (unsigned)ms;
}

/* Put what the probe saw of a thread (its system call, or computing) in
 * buf. */
static void describe_activity(const struct weft__probe *pr, char *buf,
                              size_t n)
{
    if (pr->state == WEFT__PROBE_SYSCALL) {
        const char *name = weft__syscall_name(pr->nr);
        if (name)
            snprintf(buf, n, "in system call %s", name);
        else
            snprintf(buf, n, "in system call %ld", pr->nr);
    } else if (pr->state == WEFT__PROBE_COMPUTING) {
        snprintf(buf, n, "computing");
    } else {
        snprintf(buf, n, "doing what /proc does not say");
    }
}

/* What warn needs of the task that runs on w, copied while the records'
 * walk holds their chunks mapped (the task may end and its record be
 * reused meanwhile: then the copy is of whatever is there, which the
 * check after the probe throws away).  False if w runs no task now. */
struct running_copy {
    const struct weft_coro *co;
    uint64_t id;
    char name[WEFT__CORO_NAME_MAX];
    uintptr_t low, high;
};

WEFT_RACY_READS static bool copy_running(struct weft__worker *w,
                                         struct running_copy *c)
{
    weft__records_walk_begin();
    c->co = weft__worker_running(w);
    /* A task's record (what runs may be a standalone coroutine that the
     * task resumed, whose record lives on a stack that may go away). */
    c->id = c->co ? weft__observe_task_id(c->co) : 0;
    bool ok = c->id != 0;
    if (ok) {
        const char *n = c->co->name;
        size_t i = 0;
        for (; n && i < sizeof c->name - 1 && n[i]; i++)
            c->name[i] = weft__printable(n[i]); /* one line per stall */
        c->name[i] = '\0';
        weft__stack st = c->co->stack;
        c->low = st.map ? (uintptr_t)weft__stack_low(&st) : 0;
        c->high = st.map ? (uintptr_t)weft__stack_top(&st) : 0;
    }
    weft__records_walk_end();
    return ok;
}

/* One line on stderr: the task, its worker, for how long, what its thread
 * does, its top frames.  On the monitor's thread. */
static void warn(struct weft__monitor *m, struct weft__worker *w,
                 uint64_t quiet)
{
    weft_pool *p = m->pool;
    struct running_copy t;
    uint64_t before = weft__worker_switches(w);
    if (!copy_running(w, &t))
        return;
    struct weft__probe pr;
    weft__probe_thread(atomic_load_explicit(&w->tid, memory_order_relaxed),
                       w->thread, t.low, t.high, 1, &pr);
    bool same = weft__worker_switches(w) == before &&
                weft__worker_running(w) == t.co;
    if (!same)
        return; /* it switched: no stall to report any more */
    char what[64], where[32], line[1024];
    describe_activity(&pr, what, sizeof what);
    if (w->index < p->nworkers)
        snprintf(where, sizeof where, "worker %u", w->index);
    else
        snprintf(where, sizeof where, "spare %u", w->index - p->nworkers);
    int len = snprintf(line, sizeof line,
                       "weft: task %llu \"%s\" has run %.0f ms without a "
                       "switch on %s of pool \"%s\", %s",
                       (unsigned long long)t.id, t.name, (double)quiet / 1e6,
                       where, p->name, what);
    if (pr.npcs) {
        struct weft__syms syms;
        weft__syms_open(&syms);
        for (unsigned k = 0; k < pr.npcs && k < 4 && len > 0 &&
                             (size_t)len < sizeof line;
             k++) {
            char fn[256];
            weft__syms_name(&syms, pr.pcs[k], k > 0, fn, sizeof fn);
            /* The function, without the module (the dump has those). */
            char *sp = strchr(fn, ' ');
            if (sp)
                *sp = '\0';
            len += snprintf(line + len, sizeof line - (size_t)len, "%s %s",
                            k ? " <" : ":", fn);
        }
        weft__syms_close(&syms);
    }
    fprintf(stderr, "%s\n", line);
}

/* --------------------------------------------------------- the policy */

/* Whether thread tid sleeps in the kernel (state S or D in
 * /proc/self/task/TID/stat: a blocking system call, a futex of a pthread
 * mutex), as opposed to running or waiting for a CPU. */
static bool blocked_in_kernel(pid_t tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%ld/stat", (long)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    /* "PID (NAME) STATE ...": the name may hold spaces and parentheses. */
    const char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' && (paren[2] == 'S' || paren[2] == 'D');
}

/* A worker that has not switched for a while: stuck now if it sleeps in
 * the kernel (a worker that computes gets WEFT__STUCK_NS).  /proc is read
 * at most once a period per stall while it says "computing". */
static bool blocked_now(struct watch *wa, struct weft__worker *w,
                        uint64_t now)
{
    if (wa->computing_at_switches == wa->switches && wa->computing_seen &&
        now - wa->computing_seen < MONITOR_PERIOD_NS)
        return false;
    if (blocked_in_kernel(atomic_load_explicit(&w->tid, memory_order_relaxed)))
        return true;
    wa->computing_at_switches = wa->switches;
    wa->computing_seen = now;
    return false;
}

/* Thread CPU time (ns) of w's thread, or 0. */
static uint64_t thread_cpu_ns(struct weft__worker *w)
{
    clockid_t cid;
    struct timespec ts;
    cid = atomic_load_explicit(&w->cpu_clock, memory_order_relaxed);
    if (clock_gettime(cid, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * WEFT__NS_PER_S + (uint64_t)ts.tv_nsec;
}

#define CPU_WINDOW_NS ((uint64_t)2 * 1000000u)

/*
 * Whether a worker that has run one task for `quiet` ns without a switch
 * is stuck now: at once if it sleeps in the kernel and has been quiet for
 * a period, or its timer is late (it cannot fire it: `late`); after
 * WEFT__STUCK_NS if it computes.  But one that mostly waited for a CPU
 * over the last few ms (its thread's CPU time grew by less than half the
 * time: the machine is oversubscribed, or its thread was preempted) is
 * not stuck in its task, and another thread would only wait for a CPU
 * too: it is looked at again over the next window.
 */
static bool stuck_now(struct watch *wa, struct weft__worker *w,
                      uint64_t quiet, bool late, uint64_t now,
                      uint64_t *next)
{
    if ((late || quiet >= MONITOR_PERIOD_NS) && blocked_now(wa, w, now))
        return true;
    if (quiet < WEFT__STUCK_NS / 2)
        return false;
    if (!wa->mark_at || now - wa->mark_at < CPU_WINDOW_NS) {
        if (!wa->mark_at) {
            wa->mark_at = now;
            wa->cpu_at_mark = thread_cpu_ns(w);
        }
        if (wa->mark_at + CPU_WINDOW_NS > now &&
            wa->mark_at + CPU_WINDOW_NS < *next)
            *next = wa->mark_at + CPU_WINDOW_NS;
        return false;
    }
    if (quiet < WEFT__STUCK_NS)
        return false;
    uint64_t cpu = thread_cpu_ns(w);
    if (2 * (cpu - wa->cpu_at_mark) >= now - wa->mark_at)
        return true;
    wa->mark_at = now;
    wa->cpu_at_mark = cpu;
    if (now + CPU_WINDOW_NS < *next)
        *next = now + CPU_WINDOW_NS;
    return false;
}

struct pool_view {
    uint64_t now;
    unsigned nidle;
    unsigned nfree;       /* active workers that are not stuck */
    bool pending;         /* global queue, armed timer, I/O wait */
};

static bool anything_pending(weft_pool *p)
{
    if (__atomic_load_n(&p->inject_tail.p, __ATOMIC_RELAXED) !=
        &p->inject_head.node)
        return true;
    for (unsigned i = 0; i < p->nworkers; i++)
        if (weft__timers_next(&p->workers[i]->timers) != UINT64_MAX)
            return true;
    struct weft__poller *poller = weft__pool_poller(p);
    return poller &&
           atomic_load_explicit(poller->waiting, memory_order_relaxed);
}

/* Whether stuck worker x holds up other work (see the top). */
static bool holds_up(struct weft__worker *x, const struct pool_view *v)
{
    if (atomic_load_explicit(&x->lifo, memory_order_relaxed) ||
        !weft__yielded_looks_empty(&x->yielded))
        return true;
    if (weft__runq_len(&x->q) && (v->nidle || !v->nfree))
        return true;
    if (!v->nidle && weft__timers_next(x->home) <= v->now)
        return true;
    return !v->nfree && v->pending;
}

/* A spare to cover with: one that is free (not covering, not leaving),
 * else a new one; NULL at the bound. */
static struct weft__worker *free_spare(weft_pool *p)
{
    unsigned n = weft__pool_slots(p);
    for (unsigned i = p->nworkers; i < n; i++) {
        struct weft__worker *s = p->workers[i];
        if (!atomic_load_explicit(&s->active, memory_order_relaxed) &&
            atomic_load_explicit(&s->thread_state, memory_order_acquire) !=
                WEFT__SPARE_COVERING)
            return s;
    }
    return weft__pool_spare_add(p);
}

static void cover(struct weft__monitor *m, struct weft__worker *x)
{
    struct weft__worker *s = free_spare(m->pool);
    if (!s)
        return; /* at the bound: x waits, as without a monitor */
    uint32_t before =
        atomic_load_explicit(&s->thread_state, memory_order_relaxed);
    if (weft__pool_spare_cover(s, x) != 0)
        return; /* tried again next period */
    atomic_fetch_add_explicit(&m->covers, 1, memory_order_relaxed);
    if (before != WEFT__SPARE_WAITING)
        atomic_fetch_add_explicit(&m->spares_made, 1, memory_order_relaxed);
}

/* Whether stuck worker x has a cover that serves it: a spare that is not
 * itself stuck and not recalled (one that was recalled when x came back
 * stays, retiring, until its own task switches; if x is stuck again
 * meanwhile, that spare covers nothing). */
static bool has_cover(struct weft__monitor *m, struct weft__worker *x)
{
    struct weft__worker *s =
        atomic_load_explicit(&x->covered_by, memory_order_relaxed);
    return s && !atomic_load_explicit(&s->retire, memory_order_relaxed) &&
           !m->watch[s->index].stuck;
}

/* One look at every worker; returns when to look next (ns), or 0 if no
 * worker runs a task. */
static uint64_t look(struct weft__monitor *m)
{
    weft_pool *p = m->pool;
    struct pool_view v = {.now = weft__now_ns()};
    uint64_t next = v.now + MONITOR_PERIOD_NS;
    bool running = false;
    unsigned n = weft__pool_slots(p);

    for (unsigned i = 0; i < n; i++) {
        struct weft__worker *w = p->workers[i];
        struct watch *wa = &m->watch[i];
        if (!atomic_load_explicit(&w->active, memory_order_relaxed)) {
            wa->task = NULL;
            wa->stuck = false;
            atomic_store_explicit(&wa->since, 0, memory_order_relaxed);
            continue;
        }
        uint64_t sw = weft__worker_switches(w);
        const struct weft_coro *t = weft__worker_running(w);
        if (sw != wa->switches || t != wa->task || !t) {
            wa->switches = sw;
            wa->task = t;
            wa->warned = false;
            wa->mark_at = 0;
            atomic_store_explicit(&wa->since, t ? v.now : 0,
                                  memory_order_relaxed);
            if (wa->stuck) {
                wa->stuck = false;
                atomic_store_explicit(&w->stuck, 0, memory_order_relaxed);
            }
            /* A task just started here while its heap's timer is late
             * already: it may have blocked in its first system call, so
             * look again a slack from now, not a period (the first tick
             * beside blocked readers was 7 ms late with the period). */
            if (t) {
                uint64_t due = weft__timers_next(w->home);
                if (due != UINT64_MAX && due + TIMER_SLACK_NS <= v.now &&
                    v.now + TIMER_SLACK_NS < next)
                    next = v.now + TIMER_SLACK_NS;
            }
            running |= t != NULL;
            v.nfree++;
            continue;
        }
        running = true;
        uint64_t since = atomic_load_explicit(&wa->since, memory_order_relaxed);
        uint64_t quiet = v.now - since;
        /* Its heap's earliest timer: when it is late by TIMER_SLACK_NS the
         * worker has not serviced it (a worker that passes a scheduling
         * point fires its due timers: pool.c, "Time, not rounds"). */
        uint64_t due = weft__timers_next(w->home);
        if (m->warn_ns && !wa->warned) {
            if (quiet >= m->warn_ns) {
                wa->warned = true;
                warn(m, w, quiet);
            } else if (since + m->warn_ns < next) {
                next = since + m->warn_ns;
            }
        }
        bool late = due != UINT64_MAX && due + TIMER_SLACK_NS <= v.now;
        if (!wa->stuck && !stuck_now(wa, w, quiet, late, v.now, &next)) {
            if (since + WEFT__STUCK_NS / 2 > v.now &&
                since + WEFT__STUCK_NS / 2 < next)
                next = since + WEFT__STUCK_NS / 2;
            else if (since + WEFT__STUCK_NS > v.now &&
                     since + WEFT__STUCK_NS < next)
                next = since + WEFT__STUCK_NS;
            v.nfree++;
            continue;
        }
        if (!wa->stuck) {
            wa->stuck = true;
            atomic_store_explicit(&w->stuck, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&m->stalls, 1, memory_order_relaxed);
        }
    }

    /* Look again when the earliest timer that is not late yet would be:
     * the worker that is to fire it may be about to block (a worker that
     * runs no task now may run one then). */
    for (unsigned i = 0; running && i < p->nworkers; i++) {
        uint64_t due = weft__timers_next(&p->workers[i]->timers);
        if (due != UINT64_MAX && due + TIMER_SLACK_NS > v.now &&
            due + TIMER_SLACK_NS < next)
            next = due + TIMER_SLACK_NS;
    }

    v.nidle = atomic_load_explicit(&p->nidle, memory_order_relaxed);
    v.pending = anything_pending(p);
    for (unsigned i = 0; i < n; i++) {
        struct weft__worker *w = p->workers[i];
        if (!m->watch[i].stuck || has_cover(m, w) || !holds_up(w, &v))
            continue;
        if (v.nidle)
            weft__pool_kick(p);
        else
            cover(m, w);
    }

    /* Recall the spares whose worker came back. */
    for (unsigned i = p->nworkers; i < n; i++) {
        struct weft__worker *s = p->workers[i];
        if (!atomic_load_explicit(&s->active, memory_order_relaxed) ||
            atomic_load_explicit(&s->retire, memory_order_relaxed))
            continue;
        struct weft__worker *x =
            atomic_load_explicit(&s->covers, memory_order_relaxed);
        /* No covered worker: the spare is leaving on its own (it clears
         * covers in spare_leave), and a recall now would only outlive
         * the leave. */
        if (x && !m->watch[x->index].stuck)
            weft__pool_spare_recall(s);
    }
    return running ? next : 0;
}

/* Park until `until` (ns; 0: no deadline) or a wake; publishes when, for
 * the timers. */
static void sleep_until(struct weft__monitor *m, uint64_t until)
{
    /* Relaxed: a worker that reads a stale value wakes the monitor once
     * too often, or not at all for a timer the look after this one sees
     * (that look is at most `until` away, which the stale value was). */
    atomic_store_explicit(&m->next_look, until, memory_order_relaxed);
    weft__parker_park(&m->parker, until, 0);
    atomic_store_explicit(&m->next_look, UINT64_MAX, memory_order_relaxed);
}

void weft__monitor_timer_armed(weft_pool *p, uint64_t deadline)
{
    struct weft__monitor *m = p->monitor;
    if (m && deadline + TIMER_SLACK_NS <
                 atomic_load_explicit(&m->next_look, memory_order_relaxed))
        weft__parker_unpark(&m->parker);
}

static void *monitor_main(void *arg)
{
    struct weft__monitor *m = arg;
    weft_pool *p = m->pool;
    char name[32];
    snprintf(name, sizeof name, "%s-mon", p->name);
    name[weft__utf8_prefix(name, 15)] = '\0'; /* the kernel keeps 15 bytes */
    pthread_setname_np(pthread_self(), name);
    unsigned still = 0; /* looks in a row that found no task running */
    while (!atomic_load_explicit(&p->stop, memory_order_acquire)) {
        uint64_t next = look(m);
        if (next) {
            still = 0;
            sleep_until(m, next);
            continue;
        }
        /* Nothing ran at two looks in a row: sleep until a worker wakes,
         * if they all sleep now. */
        if (++still >= 2 && weft__pool_monitor_may_sleep(p)) {
            sleep_until(m, 0); /* 0: until a worker wakes it */
            /* One look at once, at no extra wake-up: it notes what the
             * woken worker runs and when the timers armed so far come due
             * (a worker blocked in a system call from its first task is
             * found when its timer is late, not a period later).  Whether
             * a task ran at it does not count: a short one has usually
             * ended by the next look, and the monitor sleeps after that
             * one as before. */
            next = look(m);
            if (next) {
                sleep_until(m, next);
                still = 1;
                continue;
            }
            /* Woken by a worker that left the idle list: nothing it runs
             * can be stuck before a period has passed, so the first look
             * waits that long, and if it finds nothing running the
             * monitor sleeps again at once.  A pool woken now and then
             * for a short task (a server's back-off timer, a ticker) so
             * costs the monitor one wake-up besides the worker's unpark,
             * not three. */
            sleep_until(m, weft__now_ns() + MONITOR_PERIOD_NS);
            still = 1;
        } else {
            sleep_until(m, weft__now_ns() + MONITOR_PERIOD_NS);
        }
    }
    return NULL;
}

/* ---------------------------------------------------------- lifecycle */

int weft__monitor_make(weft_pool *p, unsigned stall_warn_ms)
{
    size_t slots = (size_t)p->nworkers + p->max_spares;
    struct weft__monitor *m =
        weft__calloc(1, sizeof *m + slots * sizeof m->watch[0]);
    if (!m)
        return -ENOMEM;
    m->pool = p;
    weft__parker_init(&m->parker);
    atomic_init(&m->next_look, UINT64_MAX);
    unsigned ms = stall_warn_ms ? stall_warn_ms : env_warn_ms();
    m->warn_ns = (uint64_t)ms * 1000000u;
    p->monitor = m;
    return 0;
}

int weft__monitor_start(weft_pool *p)
{
    struct weft__monitor *m = p->monitor;
    if (weft__quiet_thread_create(&m->thread, NULL, monitor_main, m) != 0)
        return -EAGAIN;
    m->started = true;
    return 0;
}

void weft__monitor_wake(weft_pool *p)
{
    if (p->monitor)
        weft__parker_unpark(&p->monitor->parker);
}

void weft__monitor_stop(weft_pool *p)
{
    struct weft__monitor *m = p->monitor;
    if (!m)
        return;
    if (m->started) {
        weft__parker_unpark(&m->parker);
        pthread_join(m->thread, NULL);
        m->started = false;
    }
    unsigned n = weft__pool_slots(p);
    for (unsigned i = p->nworkers; i < n; i++)
        weft__pool_spare_join(p->workers[i]);
}

void weft__monitor_free(weft_pool *p)
{
    struct weft__monitor *m = p->monitor;
    if (!m)
        return;
    weft__parker_fini(&m->parker);
    free(m);
    p->monitor = NULL;
}

/* --------------------------------------------------------- observers */

void weft__monitor_counts(weft_pool *p, struct weft__monitor_counts *out)
{
    memset(out, 0, sizeof *out);
    struct weft__monitor *m = p->monitor;
    if (!m)
        return;
    out->stalls = atomic_load_explicit(&m->stalls, memory_order_relaxed);
    out->covers = atomic_load_explicit(&m->covers, memory_order_relaxed);
    out->spares_made =
        atomic_load_explicit(&m->spares_made, memory_order_relaxed);
    unsigned n = weft__pool_slots(p);
    for (unsigned i = p->nworkers; i < n; i++) {
        struct weft__worker *s = p->workers[i];
        out->spares_active +=
            atomic_load_explicit(&s->active, memory_order_relaxed);
        uint32_t st =
            atomic_load_explicit(&s->thread_state, memory_order_relaxed);
        out->spare_threads +=
            st == WEFT__SPARE_WAITING || st == WEFT__SPARE_COVERING;
    }
}

uint64_t weft__monitor_running_since(weft_pool *p,
                                     const struct weft__worker *w)
{
    struct weft__monitor *m = p->monitor;
    if (!m || w->index >= p->nworkers + p->max_spares)
        return 0;
    return atomic_load_explicit(&m->watch[w->index].since,
                                memory_order_relaxed);
}
