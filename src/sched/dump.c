/*
 * sched/dump.c — the dump of a pool's live tasks (weft_pool_dump,
 * weft_dump_all), the signal that asks for one (weft_dump_on_signal),
 * the list of pools, and the snapshot of one task record that the dump
 * and the counters (stats.c) share.
 *
 * Finding the tasks.  No list of live tasks is kept (that would cost
 * every spawn and every end a locked update): the walk visits every task
 * record there is, through records.c's chunks, and tells live ones by
 * their flags (weft__task_record_live).  A record may be freed, and made
 * again into another task, while the walk reads it; so every read of it
 * is one that is safe on any record (no chunk is unmapped while a walk
 * holds the records, task.h) and whose value may be stale: the walk is
 * racy by design, and weft__snap_take is left out of ThreadSanitizer's
 * instrumentation for that reason.
 *
 * Why a stack walk is safe against a task that wakes meanwhile.  The
 * walk reads a task's stack only while it holds the task's wait_lock and
 * sees a current wait there, and only when the task whose stack holds
 * the wait is parked (IDLE) at that moment.  A wait stops being current
 * only under that lock (weft__wait_leave) and before the wait returns,
 * so while the lock is held the wait, and the stack it lives on, stay:
 * the task cannot get past the wait, let alone end and give its stack
 * back.  It may still be woken and run on another worker meanwhile
 * (waking takes no wait_lock); then its stack is live memory being
 * written, the words the walk reads may be anything, and so may the
 * frames it shows, but every read is a whole word inside the stack's own
 * mapping (ctx/unwind.c checks each against the bounds), so it cannot
 * fault.  The walk holds the lock for a few dozen reads and a describe;
 * everything slow (symbol lookup, stdio) comes after it is dropped, from
 * the copy.
 *
 * Lock order: the records' chunks_lock (held by a dump from its start to
 * its end, and by a stats call's walk), then the list of pools' lock,
 * then a primitive's lock, then a wait_lock (every wait publishes itself
 * under its primitive's lock); the walk takes only wait_locks inside its
 * hold of the records, and a kind's describe takes none
 * (sched/observe.h).  A spawn takes chunks_lock only for a new chunk,
 * holding nothing.  The list of pools' lock is taken by the dump of all
 * pools (which takes wait_locks inside it) and by a pool's create and
 * destroy (which hold nothing else).
 */
#include "sched/snapshot.h"

#include <weft/inspect.h>

#include "base/alloc.h"
#include "base/direct.h"
#include "base/clock.h"
#include "base/compiler.h"
#include "base/symbols.h"
#include "base/utf8.h"
#include "ctx/unwind.h"
#include "sched/monitor.h"
#include "sched/probe.h"
#include "sched/task.h"
#include "sched/wait.h"
#include "sched/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ----------------------------------------------------- the snapshot */

WEFT_RACY_READS uint64_t weft__observe_task_id(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    for (const struct weft__record_chunk *c = weft__records_first(); c;
         c = weft__records_next(c)) {
        unsigned n;
        struct weft__task *r = weft__records_of(c, &n);
        uintptr_t lo = (uintptr_t)r, hi = (uintptr_t)(r + n);
        if (a >= lo && a < hi && (a - lo) % sizeof *r == 0)
            return weft__task_record_live(p)
                       ? atomic_load_explicit(&((struct weft__task *)p)->co.id,
                                              memory_order_relaxed)
                       : 0;
    }
    return 0;
}

/* Copy a name that another thread may be rewriting (under wait_lock, which
 * the caller holds: a rename takes it too).  A control character (a
 * newline in a name) becomes '?': a task's line stays one line. */
static void copy_name(char *dst, const char *src)
{
    size_t i = 0;
    for (; i < WEFT__CORO_NAME_MAX - 1 && src[i]; i++)
        dst[i] = weft__printable(src[i]);
    dst[i] = '\0';
}

WEFT_RACY_READS bool weft__snap_take(struct weft__task *t,
                                     const weft_pool *pool,
                                     struct weft__snap *s, bool frames)
{
    if (!weft__task_record_live(t) || t->pool != pool)
        return false;
    memset(s, 0, offsetof(struct weft__snap, pcs));
    weft__spin_lock(&t->wait_lock);
    /* Again under the lock: the record may have been freed and made
     * again since (then this is the new task, which is as good). */
    s->id = atomic_load_explicit(&t->co.id, memory_order_relaxed);
    uint64_t st = atomic_load_explicit(&weft__task_done_racy(t)->state,
                                       memory_order_acquire);
    s->lifecycle = (unsigned)weft__task_lifecycle(st);
    s->started = t->started;
    if (!weft__task_record_live(t) || t->pool != pool ||
        s->lifecycle == WEFT__T_COMPLETE ||
        (s->lifecycle == WEFT__T_IDLE && !t->started)) {
        /* Free, moved, ended, or lazy and never started: not live here. */
        weft__spin_unlock(&t->wait_lock);
        return false;
    }
    copy_name(s->name, t->co.name);
    if (t->started)
        s->stack_bytes = t->co.stack.size;
    struct weft__wait *w = t->cur_wait;
    if (w) {
        s->waiting = true;
        s->kind = w->kind;
        s->obj = w->obj;
        s->since = atomic_load_explicit(&w->since, memory_order_relaxed);
        s->deadline = w->deadline;
        if (frames && w->kind && w->kind->describe)
            w->kind->describe(w, s->about, sizeof s->about);
        /* The stack the wait is on: t's, or its host's (an inline body). */
        struct weft__task *host = w->task;
        if (host != t)
            s->host_id = atomic_load_explicit(&host->co.id,
                                              memory_order_relaxed);
        uintptr_t low = (uintptr_t)weft__stack_low(&host->co.stack);
        s->stack_low = low;
        s->stack_top = (uintptr_t)weft__stack_top(&host->co.stack);
        s->sp = (uintptr_t)host->co.sp;
        s->ran_on = host->ran_on;
        bool parked = weft__task_lifecycle(atomic_load_explicit(
                          &weft__task_done_racy(host)->state,
                          memory_order_acquire)) == WEFT__T_IDLE;
        if (frames && parked && s->sp >= low && s->sp < s->stack_top)
            s->npcs = weft__ctx_backtrace((const void *)s->sp, low,
                                          s->stack_top, s->pcs,
                                          WEFT__SNAP_FRAMES);
        if (!parked)
            s->waiting = false; /* woken and running, or not parked yet */
    }
    weft__spin_unlock(&t->wait_lock);
    return true;
}

/* -------------------------------------------------------- the dump */

static void put_duration(char *buf, size_t n, double ns)
{
    if (ns < 1e6)
        snprintf(buf, n, "%.0f us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, n, "%.0f ms", ns / 1e6);
    else if (ns < 120e9)
        snprintf(buf, n, "%.1f s", ns / 1e9);
    else
        snprintf(buf, n, "%.0f min", ns / 60e9);
}

/*
 * The high-water mark of a stack, free of cost to the tasks: the bytes of
 * its pages that are resident (mincore), which are the pages some task
 * touched since the stack was mapped (the stack cache hands a stack on
 * with its pages, so an earlier task's use counts too; a page swapped out
 * does not).
 */
static size_t touched(uintptr_t low, uintptr_t top)
{
    size_t page = weft__stack_guard();
    uintptr_t a = low & ~(uintptr_t)(page - 1);
    size_t n = 0;
    unsigned char vec[256];
    while (a < top) {
        size_t pages = (top - a + page - 1) / page;
        if (pages > sizeof vec)
            pages = sizeof vec;
        if (mincore((void *)a, pages * page, vec) != 0)
            return 0;
        for (size_t i = 0; i < pages; i++)
            n += vec[i] & 1;
        a += pages * page;
    }
    return n * page;
}

struct dump {
    const weft_pool *pool;       /* whose tasks are being printed */
    FILE *out;
    struct weft__syms syms;
    uint64_t now_ns, now_ticks;
    double tick_ns;
    unsigned tasks;
};

/* A running task: the worker that runs it (a spare too), or NULL (it is
 * switching, or its body runs inline on another task). */
static struct weft__worker *running_on(const weft_pool *pool,
                                       const struct weft__task *t)
{
    unsigned n = weft__pool_slots((weft_pool *)pool);
    for (unsigned i = 0; i < n; i++) {
        struct weft__worker *w = pool->workers[i];
        if (weft__worker_running(w) == &t->co)
            return w;
    }
    return NULL;
}

static void put_worker(char *buf, size_t n, const weft_pool *pool,
                       const struct weft__worker *w)
{
    if (w->index < pool->nworkers) {
        snprintf(buf, n, "worker %u", w->index);
        return;
    }
    const struct weft__worker *x =
        atomic_load_explicit(&w->covers, memory_order_relaxed);
    if (x && x->index < pool->nworkers)
        snprintf(buf, n, "spare %u (covering worker %u)",
                 w->index - pool->nworkers, x->index);
    else
        snprintf(buf, n, "spare %u", w->index - pool->nworkers);
}

/*
 * What a running task's thread does (sched/probe.h): its system call or
 * "computing", and its stack.  Read while the task runs on, so the probe
 * is checked afterwards: the worker must still run the same task, with no
 * switch in between, or the stack shown could be another's.  The record
 * stays mapped (the dump holds the records' walk); its stack bounds may be
 * stale, which the probe survives (it reads the stack only through
 * process_vm_readv, or from the thread itself).
 */
WEFT_RACY_READS static void print_running(struct dump *d,
                                          struct weft__task *t,
                                          struct weft__worker *w)
{
    pid_t tid = atomic_load_explicit(&w->tid, memory_order_relaxed);
    if (tid == (pid_t)syscall(SYS_gettid)) {
        fprintf(d->out, "  this is the task that calls weft_pool_dump\n");
        return;
    }
    weft__stack st = t->co.stack;
    uintptr_t low = 0, high = 0;
    if (st.map) {
        low = (uintptr_t)weft__stack_low(&st);
        high = (uintptr_t)weft__stack_top(&st);
    }
    uint64_t before = weft__worker_switches(w);
    struct weft__probe pr;
    weft__probe_thread(tid, w->thread, low, high, 1, &pr);
    bool same = weft__worker_switches(w) == before &&
                weft__worker_running(w) == &t->co;
    if (pr.state == WEFT__PROBE_SYSCALL) {
        const char *name = weft__syscall_name(pr.nr);
        if (name)
            fprintf(d->out, "  in system call %s (first argument %llu)\n",
                    name, (unsigned long long)pr.arg0);
        else
            fprintf(d->out, "  in system call %ld\n", pr.nr);
    } else if (pr.state == WEFT__PROBE_COMPUTING) {
        fprintf(d->out, "  computing\n");
    }
    if (!same) {
        fprintf(d->out, "  (it switched while its stack was read)\n");
        return;
    }
    if (!pr.npcs && pr.no_stack)
        fprintf(d->out, "  no stack: %s\n", pr.no_stack);
    for (unsigned i = 0; i < pr.npcs; i++) {
        char fn[256];
        weft__syms_name(&d->syms, pr.pcs[i], i > 0, fn, sizeof fn);
        fprintf(d->out, "  #%-2u %s\n", i, fn);
    }
}

static void print_snap(struct dump *d, const struct weft__snap *s,
                       struct weft__task *t)
{
    char state[96], when[32];
    struct weft__worker *on = NULL;
    if (!s->waiting && s->lifecycle == WEFT__T_RUNNING && d->pool)
        on = running_on(d->pool, t);
    if (on) {
        /* How long since its last switch, as the monitor saw it. */
        uint64_t since =
            weft__monitor_running_since((weft_pool *)d->pool, on);
        if (since && d->now_ns > since) {
            put_duration(when, sizeof when, (double)(d->now_ns - since));
            snprintf(state, sizeof state, "running, %s without a switch",
                     when);
        } else {
            snprintf(state, sizeof state, "running");
        }
        char where[64];
        put_worker(where, sizeof where, d->pool, on);
        fprintf(d->out, "task %llu \"%s\" [%s] %s\n",
                (unsigned long long)s->id, s->name, state, where);
        print_running(d, t, on);
        return;
    }
    if (s->waiting) {
        const char *name = s->kind ? s->kind->name : "wait";
        if (s->since && d->now_ticks > s->since) {
            put_duration(when, sizeof when,
                         (double)(d->now_ticks - s->since) * d->tick_ns);
            snprintf(state, sizeof state, "%s, %s", name, when);
        } else {
            snprintf(state, sizeof state, "%s", name);
        }
    } else {
        snprintf(state, sizeof state, "%s",
                 s->lifecycle == WEFT__T_RUNNING     ? "running"
                 : s->lifecycle == WEFT__T_SCHEDULED ? "runnable"
                                                     : "parked");
    }
    fprintf(d->out, "task %llu \"%s\" [%s]", (unsigned long long)s->id,
            s->name, state);
    unsigned slots = d->pool ? weft__pool_slots((weft_pool *)d->pool) : 0;
    for (unsigned i = 0; s->waiting && i < slots; i++)
        if (d->pool->workers[i] == s->ran_on) {
            char where[64];
            put_worker(where, sizeof where, d->pool, d->pool->workers[i]);
            fprintf(d->out, " %s", where);
        }
    fputc('\n', d->out);
    if (!s->waiting)
        return;
    if (s->about[0]) {
        fprintf(d->out, "  %s\n", s->about);
    } else if (s->kind && (s->kind->flags & WEFT__WK_CODE) && s->obj) {
        char fn[256];
        weft__syms_name(&d->syms, (uintptr_t)s->obj, 0, fn, sizeof fn);
        fprintf(d->out, "  running %s\n", fn);
    } else if (s->obj) {
        fprintf(d->out, "  on %p\n", s->obj);
    }
    if (s->deadline) {
        bool ahead = s->deadline > d->now_ns;
        put_duration(when, sizeof when,
                     ahead ? (double)(s->deadline - d->now_ns)
                           : (double)(d->now_ns - s->deadline));
        fprintf(d->out, "  deadline %s %s%s\n", ahead ? "in" : "passed", when,
                ahead ? "" : " ago");
    }
    if (s->host_id)
        fprintf(d->out, "  its body runs inline on the stack of task %llu\n",
                (unsigned long long)s->host_id);
    if (s->sp >= s->stack_low && s->sp < s->stack_top)
        fprintf(d->out,
                "  stack %.1f KiB in use, %.0f KiB touched, of %.0f KiB\n",
                (double)(s->stack_top - s->sp) / 1024,
                (double)touched(s->stack_low, s->stack_top) / 1024,
                (double)(s->stack_top - s->stack_low) / 1024);
    for (unsigned i = 0; i < s->npcs; i++) {
        char fn[256];
        weft__syms_name(&d->syms, s->pcs[i], 1, fn, sizeof fn);
        fprintf(d->out, "  #%-2u %s\n", i, fn);
    }
}

struct found {
    uint64_t id;
    struct weft__task *t;
};

static int by_id(const void *a, const void *b)
{
    const struct found *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The records that look like live tasks of pool now, by id (a first,
 * lock-free pass: each is looked at again when it is printed). */
WEFT_RACY_READS static struct found *find_tasks(const weft_pool *pool,
                                                size_t *n)
{
    size_t cap = 0, k = 0;
    struct found *all = NULL;
    for (const struct weft__record_chunk *c = weft__records_first(); c;
         c = weft__records_next(c)) {
        unsigned nr;
        struct weft__task *r = weft__records_of(c, &nr);
        for (unsigned i = 0; i < nr; i++) {
            if (!weft__task_record_live(&r[i]) || r[i].pool != pool)
                continue;
            if (k == cap) {
                size_t more = cap ? 2 * cap : 256;
                struct found *grown = weft__realloc(all, more * sizeof *all);
                if (!grown)
                    break; /* the dump shows the ones found so far */
                all = grown;
                cap = more;
            }
            all[k].id = atomic_load_explicit(&r[i].co.id, memory_order_relaxed);
            all[k++].t = &r[i];
        }
    }
    if (k)
        qsort(all, k, sizeof *all, by_id);
    *n = k;
    return all;
}

/* The live tasks whose home is pool (NULL: those on no pool), by id, each
 * snapshot printed as soon as it is taken. */
static void dump_tasks(struct dump *d, const weft_pool *pool)
{
    struct weft__snap s;
    size_t n;
    struct found *all = find_tasks(pool, &n);
    for (size_t i = 0; i < n; i++) {
        if (!weft__snap_take(all[i].t, pool, &s, true))
            continue;
        print_snap(d, &s, all[i].t);
        d->tasks++;
    }
    free(all);
}

/* A dump holds the records' walk (task.h) from its start to its end:
 * the records it has found, and the describes that look up a task by
 * address (weft__observe_task_id), stay mapped. */
static void dump_begin(struct dump *d, FILE *out)
{
    weft__records_walk_begin();
    d->out = out;
    weft__syms_open(&d->syms);
    d->tick_ns = weft__tick_ns();
    d->now_ns = weft__now_ns();
    d->now_ticks = weft__ticks();
    d->tasks = 0;
    d->pool = NULL;
}

static void dump_pool(struct dump *d, weft_pool *pool)
{
    d->tasks = 0;
    d->pool = pool;
    struct weft__monitor_counts mc;
    weft__monitor_counts(pool, &mc);
    if (mc.spares_active)
        fprintf(d->out, "weft pool \"%s\" (%u workers, %llu spare%s covering):\n",
                pool->name, pool->nworkers,
                (unsigned long long)mc.spares_active,
                mc.spares_active == 1 ? "" : "s");
    else
        fprintf(d->out, "weft pool \"%s\" (%u workers):\n", pool->name,
                pool->nworkers);
    dump_tasks(d, pool);
    fprintf(d->out, "%u live tasks\n\n", d->tasks);
}

static int dump_end(struct dump *d)
{
    weft__syms_close(&d->syms);
    int rc = fflush(d->out) == 0 && !ferror(d->out) ? 0 : -EIO;
    weft__records_walk_end();
    return rc;
}

WEFT_EXPORT int weft_pool_dump(weft_pool *pool, FILE *out)
{
    if (!pool || !out)
        return -EINVAL;
    struct dump d;
    dump_begin(&d, out);
    dump_pool(&d, pool);
    return dump_end(&d);
}

/* ------------------------------------------------ the list of pools */

static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_pool *pools;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

void (*_Atomic weft__observe_blocking)(uint64_t *busy, uint64_t *idle);

WEFT_EXPORT int weft_dump_all(FILE *out)
{
    if (!out)
        return -EINVAL;
    struct dump d;
    dump_begin(&d, out);
    weft__lock(&pools_lock);
    for (weft_pool *p = pools; p; p = p->observe_next)
        dump_pool(&d, p);
    pthread_mutex_unlock(&pools_lock);
    /* Tasks of no pool: lazy tasks that weft_sync_wait runs on a thread. */
    d.tasks = 0;
    d.pool = NULL;
    fprintf(out, "weft tasks on no pool (weft_sync_wait):\n");
    dump_tasks(&d, NULL);
    fprintf(out, "%u live tasks\n", d.tasks);
    return dump_end(&d);
}

static void from_environment(void);

void weft__observe_pool_made(weft_pool *pool)
{
    pthread_once(&env_once, from_environment);
    weft__lock(&pools_lock);
    pool->observe_next = pools;
    pools = pool;
    pthread_mutex_unlock(&pools_lock);
}

void weft__observe_pool_gone(weft_pool *pool)
{
    weft__lock(&pools_lock);
    weft_pool **link = &pools;
    while (*link && *link != pool)
        link = &(*link)->observe_next;
    if (*link)
        *link = pool->observe_next;
    pthread_mutex_unlock(&pools_lock);
}

/* ------------------------------------------------------- the signal */

static pthread_mutex_t signal_lock = PTHREAD_MUTEX_INITIALIZER;
static int signal_chosen;
static int signal_pipe[2] = {-1, -1};

/* Async-signal-safe: one write(2) to a non-blocking pipe (a full pipe
 * means a dump is asked for already), errno kept. */
static void on_signal(int signo)
{
    (void)signo;
    int saved = errno;
    char c = 1;
    ssize_t r = write(signal_pipe[1], &c, 1);
    (void)r;
    errno = saved;
}

/* arg: the pipe's read end, which it closes when the write end is gone. */
static void *dumper_main(void *arg)
{
    int fd = (int)(intptr_t)arg;
    pthread_setname_np(pthread_self(), "weft-dump");
    for (;;) {
        char buf[64];
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            close(fd);
            return NULL;
        }
        fprintf(stderr, "weft: dump (signal %d, pid %ld)\n", signal_chosen,
                (long)getpid());
        weft_dump_all(stderr);
        fprintf(stderr, "weft: end of dump\n");
        fflush(stderr);
    }
}

WEFT_EXPORT int weft_dump_on_signal(int signo)
{
    if (signo <= 0 || signo >= NSIG || signo == SIGKILL || signo == SIGSTOP)
        return -EINVAL;
    weft__lock(&signal_lock);
    int rc = 0;
    if (signal_chosen) {
        rc = signal_chosen == signo ? 0 : -EBUSY;
        goto out;
    }
    /* A signal this libc keeps for itself (glibc's 32 and 33) or this
     * kernel does not have: refused before anything is made. */
    struct sigaction old;
    if (sigaction(signo, NULL, &old) != 0) {
        rc = -EINVAL;
        goto out;
    }
    if (pipe2(signal_pipe, O_CLOEXEC) != 0) {
        rc = -EAGAIN;
        goto out;
    }
    (void)fcntl(signal_pipe[1], F_SETFL, O_NONBLOCK);
    pthread_attr_t attr;
    pthread_t th;
    if (pthread_attr_init(&attr) != 0) {
        rc = -EAGAIN;
        goto closed;
    }
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int err = weft__quiet_thread_create(&th, &attr, dumper_main,
                                   (void *)(intptr_t)signal_pipe[0]);
    pthread_attr_destroy(&attr);
    if (err) {
        rc = -EAGAIN;
        goto closed;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(signo, &sa, NULL) != 0) {
        /* Refused after all: the thread reads the end of the pipe, closes
         * its read end and goes. */
        rc = -EINVAL;
        close(signal_pipe[1]);
        signal_pipe[0] = signal_pipe[1] = -1;
        goto out;
    }
    signal_chosen = signo;
    goto out;
closed:
    close(signal_pipe[0]);
    close(signal_pipe[1]);
    signal_pipe[0] = signal_pipe[1] = -1;
out:
    pthread_mutex_unlock(&signal_lock);
    return rc;
}

/* ------------------------------------------------- the environment */

/* A signal by number or by name, with or without "SIG". */
static int signal_of(const char *s)
{
    static const struct {
        const char *name;
        int signo;
    } names[] = {
        {"QUIT", SIGQUIT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2},
        {"HUP", SIGHUP},   {"INT", SIGINT},   {"TERM", SIGTERM},
        {"WINCH", SIGWINCH}, {"PWR", SIGPWR}, {"URG", SIGURG},
    };
    char *end;
    long n = strtol(s, &end, 10);
    if (*s && !*end)
        return n > 0 && n < NSIG ? (int)n : -1;
    if (strncmp(s, "SIG", 3) == 0)
        s += 3;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i].name) == 0)
            return names[i].signo;
    return -1;
}

void weft__trace_from_environment(void);

static void from_environment(void)
{
    const char *sig = getenv("WEFT_DUMP_SIGNAL");
    if (sig && *sig) {
        int signo = signal_of(sig);
        int rc = signo > 0 ? weft_dump_on_signal(signo) : -EINVAL;
        if (rc)
            fprintf(stderr, "weft: WEFT_DUMP_SIGNAL=%s: %s\n", sig,
                    weft_strerror(rc));
    }
    weft__trace_from_environment();
}
