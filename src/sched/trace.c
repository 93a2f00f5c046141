/*
 * sched/trace.c — recording scheduler events and writing them as Chrome
 * trace-event JSON (weft_trace_start, weft_trace_stop; the event points
 * are listed in sched/observe.h).
 *
 * Off, an event point costs a relaxed load of weft__tracing and a branch
 * that is predicted not taken.  The recording calls are opaque
 * (base/compiler.h): they read this thread's buffer pointer, and their
 * callers may have changed thread since their last switch.  On, each
 * thread appends to its own buffer, a list of blocks of fixed-size
 * records, without a lock; the JSON is made only at the stop, from all
 * the buffers.
 *
 * Stopping while other threads record.  A buffer's header is never freed
 * (a thread finds its own through a thread-local pointer, which must
 * stay valid however late it looks); only its blocks are.  An append is
 *     busy = 1 (seq_cst);  if tracing (seq_cst load): append;  busy = 0
 * and the stop is
 *     tracing = 0 (seq_cst);  for each buffer: wait until busy == 0
 * (Dekker's pattern): in the single order of seq_cst operations, either
 * the appender's load of tracing comes after the stop's store (it sees 0
 * and appends nothing), or its store of busy comes before the stop's
 * load of it, and the stop waits for that append to end.  So once the
 * stop has seen every buffer idle, no append is in progress or will
 * start, and the blocks may be read and freed.  A buffer made for a
 * thread after the stop took the list's lock is not listed: the maker
 * takes the lock and sees tracing off.
 *
 * Slices.  A task's run is a RUN event and the next STOP of it on the
 * same thread (a task runs on one thread between a resume and a
 * suspend); the writer pairs them into complete ("X") events, each named
 * by its task and saying how it ended (finished, parked on what, or
 * "switch": a yield, a move to another pool, a lazy task started).  A
 * body run inline on its awaiter's stack is part of its awaiter's slice.
 * A wake records a flow id on the waker's thread and leaves it in the
 * woken task's record; the task's next RUN takes it, so the writer draws
 * the arrow ("s" at the waker, "f" at the start of the woken task's
 * slice).
 *
 * Names.  A task's name is a NAME event, recorded when it is made or
 * renamed while a trace records, and, for the tasks that already exist
 * when a trace starts, by the start itself (a walk of the records, as a
 * dump's): a server's connection tasks are named long before an operator
 * starts a trace.
 */
#include <weft/inspect.h>
#include <weft/version.h>

#include "base/alloc.h"
#include "base/backoff.h"
#include "base/clock.h"
#include "base/compiler.h"
#include "base/direct.h"
#include "base/storeload.h"
#include "base/utf8.h"
#include "sched/observe.h"
#include "sched/task.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BLOCK_EVENTS 4096u
#define MAX_EVENTS (1u << 20)   /* per thread and trace */

struct event {
    uint64_t ts;
    uint64_t id;
    uint64_t arg;
    uint32_t type;
    uint32_t pad;
};
_Static_assert(sizeof(struct event) == 32, "a name fills one event");

struct block {
    struct block *next;
    unsigned n;
    struct event ev[BLOCK_EVENTS];
};

struct buffer {
    struct buffer *next;          /* the list (under list_lock)            */
    _Atomic int busy;             /* appending now (see the top)           */
    unsigned index;               /* for flow ids                          */
    long tid;                     /* the thread's, for the JSON            */
    char name[16];
    /* The owner's alone while tracing; the stop's once it has seen busy 0. */
    struct block *head, *tail;
    size_t count;
    uint64_t dropped;
    uint64_t flows;
    /* In this trace: set by its thread under list_lock, cleared by the
     * stop; read by its thread before each append (a stale true costs at
     * most the events of an append that then sees tracing off). */
    _Atomic bool listed;
};

int weft__tracing;
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct buffer *buffers;    /* every buffer ever made */
static unsigned nbuffers;
static FILE *trace_file;
static uint64_t trace_t0, trace_t1; /* the start, the stop */

static __thread struct buffer *mine
    __attribute__((tls_model("initial-exec")));

/* The calling thread's buffer, listed in this trace; NULL if it cannot be
 * had (no memory) or the trace stopped. */
static struct buffer *buffer(void)
{
    struct buffer *b = mine;
    if (likely(b && atomic_load_explicit(&b->listed, memory_order_relaxed)))
        return b;
    weft__lock(&list_lock);
    if (!__atomic_load_n(&weft__tracing, __ATOMIC_SEQ_CST)) {
        pthread_mutex_unlock(&list_lock);
        return NULL;
    }
    if (!b) {
        b = weft__calloc(1, sizeof *b);
        if (!b) {
            pthread_mutex_unlock(&list_lock);
            return NULL;
        }
        b->index = ++nbuffers;
        b->tid = (long)syscall(SYS_gettid);
        b->next = buffers;
        buffers = b;
        mine = b;
    }
    /* The thread may have been named since its last trace. */
    if (pthread_getname_np(pthread_self(), b->name, sizeof b->name) != 0)
        snprintf(b->name, sizeof b->name, "thread %ld", b->tid);
    atomic_store_explicit(&b->listed, true, memory_order_relaxed);
    pthread_mutex_unlock(&list_lock);
    return b;
}

/* Room for k more events at the tail of b, or NULL. */
static struct event *room(struct buffer *b, unsigned k)
{
    if (b->count + k > MAX_EVENTS) {
        b->dropped++;
        return NULL;
    }
    struct block *t = b->tail;
    if (!t || t->n + k > BLOCK_EVENTS) {
        t = weft__malloc(sizeof *t);
        if (!t) {
            b->dropped++;
            return NULL;
        }
        t->next = NULL;
        t->n = 0;
        if (b->tail)
            b->tail->next = t;
        else
            b->head = t;
        b->tail = t;
    }
    struct event *e = &t->ev[t->n];
    t->n += k;
    b->count += k;
    return e;
}

/* Begin an append (see the top): the buffer, or NULL (tracing stopped). */
static struct buffer *append_begin(void)
{
    struct buffer *b = buffer();
    if (!b)
        return NULL;
    weft__storeload_store(&b->busy, 1);
    if (!__atomic_load_n(&weft__tracing, __ATOMIC_SEQ_CST)) {
        atomic_store_explicit(&b->busy, 0, memory_order_release);
        return NULL;
    }
    return b;
}

static void append_end(struct buffer *b)
{
    atomic_store_explicit(&b->busy, 0, memory_order_release);
}

static void put(struct buffer *b, unsigned type, uint64_t id, uint64_t arg)
{
    struct event *e = room(b, 1);
    if (e)
        *e = (struct event){weft__now_ns(), id, arg, type, 0};
}

WEFT_OPAQUE void weft__trace(unsigned type, uint64_t id, uint64_t arg)
{
    struct buffer *b = append_begin();
    if (!b)
        return;
    put(b, type, id, arg);
    append_end(b);
}

WEFT_OPAQUE void weft__trace_name(uint64_t id, const char *name)
{
    struct buffer *b = append_begin();
    if (!b)
        return;
    struct event *e = room(b, 2);
    if (e) {
        e[0] = (struct event){weft__now_ns(), id, 0, WEFT__TE_NAME, 0};
        char *text = (char *)&e[1];
        size_t n = weft__utf8_prefix(name, sizeof e[1] - 1);
        memcpy(text, name, n);
        memset(text + n, 0, sizeof e[1] - n);
    }
    append_end(b);
}

WEFT_OPAQUE void weft__trace_wake(struct weft__task *t)
{
    struct buffer *b = append_begin();
    if (!b)
        return;
    uint64_t flow = ((uint64_t)b->index << 40) | ++b->flows;
    atomic_store_explicit(&t->trace_flow, flow, memory_order_relaxed);
    put(b, WEFT__TE_WAKE,
        atomic_load_explicit(&t->co.id, memory_order_relaxed), flow);
    append_end(b);
}

WEFT_OPAQUE void weft__trace_run(struct weft__task *t)
{
    struct buffer *b = append_begin();
    if (!b)
        return;
    uint64_t flow =
        atomic_exchange_explicit(&t->trace_flow, 0, memory_order_relaxed);
    put(b, WEFT__TE_RUN,
        atomic_load_explicit(&t->co.id, memory_order_relaxed), flow);
    append_end(b);
}

/* ------------------------------------------------------- start, stop */

/* A NAME event for every live task (see the top, "Names").  The records
 * are read as a dump reads them (racy by design: a task renamed meanwhile
 * records its new name after this, with a later time), into a list that
 * is recorded once the walk has let the records' lock go (an append may
 * take the buffers' list lock, which a task made while tracing takes
 * after that one).  No memory for the list: the tasks found so far. */
struct live_name {
    uint64_t id;
    char name[WEFT__CORO_NAME_MAX];
};

WEFT_RACY_READS static size_t find_live_names(struct live_name **out)
{
    size_t k = 0, cap = 0;
    struct live_name *all = NULL;
    weft__records_walk_begin();
    for (const struct weft__record_chunk *c = weft__records_first(); c;
         c = weft__records_next(c)) {
        unsigned nr;
        struct weft__task *r = weft__records_of(c, &nr);
        for (unsigned i = 0; i < nr; i++) {
            struct weft__task *t = &r[i];
            if (!weft__task_record_live(t))
                continue;
            if (k == cap) {
                size_t more = cap ? 2 * cap : 256;
                struct live_name *grown =
                    weft__realloc(all, more * sizeof *all);
                if (!grown)
                    goto done;
                all = grown;
                cap = more;
            }
            struct live_name *e = &all[k];
            weft__spin_lock(&t->wait_lock);
            e->id = atomic_load_explicit(&t->co.id, memory_order_relaxed);
            size_t n = 0;
            for (; n < sizeof e->name - 1 && t->co.name[n]; n++)
                e->name[n] = t->co.name[n];
            e->name[n] = '\0';
            bool live = weft__task_record_live(t);
            weft__spin_unlock(&t->wait_lock);
            if (live && e->id)
                k++;
        }
    }
done:
    weft__records_walk_end();
    *out = all;
    return k;
}

static void name_live_tasks(void)
{
    struct live_name *all;
    size_t n = find_live_names(&all);
    for (size_t i = 0; i < n; i++)
        weft__trace_name(all[i].id, all[i].name);
    free(all);
}

WEFT_EXPORT int weft_trace_start(const char *path)
{
    if (!path)
        return -EINVAL;
    weft__lock(&list_lock);
    if (trace_file) {
        pthread_mutex_unlock(&list_lock);
        return -EBUSY;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        int err = -errno;
        pthread_mutex_unlock(&list_lock);
        return err;
    }
    trace_file = f;
    trace_t0 = weft__now_ns();
    __atomic_store_n(&weft__tracing, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&list_lock);
    name_live_tasks();
    return 0;
}

/* Task names by id, from the NAME events (open addressing): for each, the
 * latest name (by the events' time, since the buffers are read one thread
 * after another: a task renamed on a worker after the start named it from
 * another thread has its new name recorded in another buffer). */
struct names {
    uint64_t *ids;
    uint64_t *ts;
    char (*text)[32];
    size_t cap;
};

static void names_put(struct names *m, uint64_t id, uint64_t ts,
                      const char *text)
{
    if (!m->cap)
        return;
    size_t i = (size_t)(id * 0x9E3779B97F4A7C15ull) & (m->cap - 1);
    while (m->ids[i] && m->ids[i] != id)
        i = (i + 1) & (m->cap - 1);
    if (m->ids[i] == id && m->ts[i] > ts)
        return; /* a later name is in already */
    m->ids[i] = id;
    m->ts[i] = ts;
    memcpy(m->text[i], text, 32);
    m->text[i][31] = '\0';
}

static const char *names_get(const struct names *m, uint64_t id)
{
    if (!m->cap)
        return "task";
    size_t i = (size_t)(id * 0x9E3779B97F4A7C15ull) & (m->cap - 1);
    while (m->ids[i]) {
        if (m->ids[i] == id)
            return m->text[i];
        i = (i + 1) & (m->cap - 1);
    }
    return "task";
}

/* s as a JSON string: valid UTF-8 whatever s holds (see base/utf8.h;
 * a byte that starts no valid character becomes U+FFFD). */
static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    const unsigned char *u = (const unsigned char *)s;
    while (*u) {
        unsigned char c = *u;
        size_t len = weft__utf8_char(u);
        if (!len) {
            fputs("\\ufffd", f);
            len = 1;
        } else if (c == '"' || c == '\\') {
            fprintf(f, "\\%c", c);
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
        } else {
            fwrite(u, 1, len, f);
        }
        u += len;
    }
    fputc('"', f);
}

static const char *reason_name(uint64_t r)
{
    static const char *const names[WEFT__WR_COUNT] = {
        "wait",      "mutex",     "cond",     "sem",      "wait group",
        "chan send", "chan recv", "event",    "sleep",    "fd read",
        "fd write",  "await",     "blocking",
    };
    return r < WEFT__WR_COUNT ? names[r] : "wait";
}

/* The flows that start somewhere (sorted), so that an end without a start
 * (a fresh record's flow word, a wake before the trace began) is left out. */
struct flows {
    uint64_t *ids;
    size_t n;
};

static int by_flow(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static bool flow_started(const struct flows *fl, uint64_t id)
{
    return fl->ids && bsearch(&id, fl->ids, fl->n, sizeof id, by_flow);
}

struct writer {
    FILE *f;
    long pid;
    bool first;
    const struct names *names;
    const struct flows *flows;
};

static void event_head(struct writer *w, const char *ph, const char *cat,
                       long tid, uint64_t ts)
{
    fprintf(w->f, "%s\n{\"ph\":\"%s\",\"cat\":\"%s\",\"pid\":%ld,\"tid\":%ld,"
                  "\"ts\":%.3f",
            w->first ? "" : ",", ph, cat, w->pid, tid,
            ts > trace_t0 ? (double)(ts - trace_t0) / 1e3 : 0.0);
    w->first = false;
}

/* An open slice of a thread's track. */
struct open {
    uint64_t id, ts, flow;
    const char *end;
};

static void slice(struct writer *w, long tid, const struct open *o,
                  uint64_t end)
{
    event_head(w, "X", "task", tid, o->ts);
    char name[64];
    snprintf(name, sizeof name, "task %llu %s", (unsigned long long)o->id,
             names_get(w->names, o->id));
    fprintf(w->f, ",\"dur\":%.3f,\"name\":",
            end > o->ts ? (double)(end - o->ts) / 1e3 : 0.0);
    put_string(w->f, name);
    fprintf(w->f, ",\"args\":{\"task\":%llu,\"end\":\"%s\"}}",
            (unsigned long long)o->id, o->end ? o->end : "switch");
}

#define OPEN_MAX 64

static void write_buffer(struct writer *w, const struct buffer *b)
{
    event_head(w, "M", "__metadata", b->tid, trace_t0);
    fprintf(w->f, ",\"name\":\"thread_name\",\"args\":{\"name\":");
    put_string(w->f, b->name);
    fprintf(w->f, "}}");
    struct open open[OPEN_MAX];
    unsigned depth = 0;
    uint64_t sleep_ts = 0, last = trace_t0;
    for (const struct block *k = b->head; k; k = k->next) {
        for (unsigned i = 0; i < k->n; i++) {
            const struct event *e = &k->ev[i];
            last = e->ts;
            switch (e->type) {
            case WEFT__TE_NAME:
                i++; /* its text is the next slot */
                break;
            case WEFT__TE_RUN:
                if (depth == OPEN_MAX)
                    break;
                open[depth++] = (struct open){e->id, e->ts, e->arg, NULL};
                if (e->arg && flow_started(w->flows, e->arg)) {
                    event_head(w, "f", "wake", b->tid, e->ts);
                    fprintf(w->f, ",\"bp\":\"e\",\"name\":\"wake\","
                                  "\"id\":%llu}",
                            (unsigned long long)e->arg);
                }
                break;
            case WEFT__TE_FINISH:
                for (unsigned j = depth; j-- > 0;)
                    if (open[j].id == e->id) {
                        open[j].end = "finished";
                        break;
                    }
                break;
            case WEFT__TE_STOP: {
                unsigned j = depth;
                while (j > 0 && open[j - 1].id != e->id)
                    j--;
                if (!j)
                    break; /* began before the trace did */
                if (!open[j - 1].end)
                    open[j - 1].end = e->arg ? reason_name(e->arg - 1)
                                             : "switch";
                /* It and whatever began after it on this thread end
                 * here. */
                while (depth >= j) {
                    depth--;
                    slice(w, b->tid, &open[depth], e->ts);
                }
                break;
            }
            case WEFT__TE_SPAWN:
                event_head(w, "i", "spawn", b->tid, e->ts);
                fprintf(w->f, ",\"s\":\"t\",\"name\":\"spawn\",\"args\":"
                              "{\"task\":%llu,\"by\":%llu}}",
                        (unsigned long long)e->id,
                        (unsigned long long)e->arg);
                break;
            case WEFT__TE_WAKE:
                event_head(w, "s", "wake", b->tid, e->ts);
                fprintf(w->f, ",\"name\":\"wake\",\"id\":%llu,\"args\":"
                              "{\"task\":%llu}}",
                        (unsigned long long)e->arg,
                        (unsigned long long)e->id);
                break;
            case WEFT__TE_STEAL:
                event_head(w, "i", "steal", b->tid, e->ts);
                fprintf(w->f, ",\"s\":\"t\",\"name\":\"steal\",\"args\":"
                              "{\"task\":%llu,\"from\":%llu}}",
                        (unsigned long long)e->id,
                        (unsigned long long)e->arg);
                break;
            case WEFT__TE_SLEEP:
                sleep_ts = e->ts;
                break;
            case WEFT__TE_AWAKE:
                if (sleep_ts) {
                    event_head(w, "X", "worker", b->tid, sleep_ts);
                    fprintf(w->f, ",\"dur\":%.3f,\"name\":\"sleep\"}",
                            (double)(e->ts - sleep_ts) / 1e3);
                }
                sleep_ts = 0;
                break;
            default:
                break;
            }
        }
    }
    /* Still running at the stop: until the stop. */
    while (depth > 0) {
        depth--;
        open[depth].end = "still running";
        slice(w, b->tid, &open[depth], trace_t1 > last ? trace_t1 : last);
    }
}

/* Under list_lock, tracing off and every buffer idle: write the JSON. */
static int write_trace(FILE *f)
{
    size_t nnames = 0, nwakes = 0;
    uint64_t dropped = 0;
    for (struct buffer *b = buffers; b; b = b->next) {
        if (!atomic_load_explicit(&b->listed, memory_order_relaxed))
            continue;
        dropped += b->dropped;
        for (const struct block *k = b->head; k; k = k->next)
            for (unsigned i = 0; i < k->n; i++) {
                nwakes += k->ev[i].type == WEFT__TE_WAKE;
                if (k->ev[i].type == WEFT__TE_NAME) {
                    nnames++;
                    i++; /* its text */
                }
            }
    }
    struct flows flows = {NULL, 0};
    if (nwakes && (flows.ids = weft__malloc(nwakes * sizeof *flows.ids))) {
        for (struct buffer *b = buffers; b; b = b->next) {
            if (!atomic_load_explicit(&b->listed, memory_order_relaxed))
                continue;
            for (const struct block *k = b->head; k; k = k->next)
                for (unsigned i = 0; i < k->n; i++) {
                    if (k->ev[i].type == WEFT__TE_WAKE)
                        flows.ids[flows.n++] = k->ev[i].arg;
                    if (k->ev[i].type == WEFT__TE_NAME)
                        i++;
                }
        }
        qsort(flows.ids, flows.n, sizeof *flows.ids, by_flow);
    }
    struct names names = {NULL, NULL, NULL, 0};
    if (nnames) {
        size_t cap = 16;
        while (cap < 2 * nnames)
            cap *= 2;
        names.ids = weft__calloc(cap, sizeof *names.ids);
        names.ts = weft__malloc(cap * sizeof *names.ts);
        names.text = weft__malloc(cap * sizeof *names.text);
        if (names.ids && names.ts && names.text)
            names.cap = cap;
    }
    for (struct buffer *b = buffers; b; b = b->next) {
        if (!atomic_load_explicit(&b->listed, memory_order_relaxed))
            continue;
        for (const struct block *k = b->head; k; k = k->next)
            for (unsigned i = 0; i + 1 < k->n; i++)
                if (k->ev[i].type == WEFT__TE_NAME) {
                    names_put(&names, k->ev[i].id, k->ev[i].ts,
                              (const char *)&k->ev[i + 1]);
                    i++;
                }
    }
    struct writer w = {f, (long)getpid(), true, &names, &flows};
    fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"weft\":\"%s\","
               "\"dropped\":%llu},\n\"traceEvents\":[",
            weft_version_string(), (unsigned long long)dropped);
    event_head(&w, "M", "__metadata", 0, trace_t0);
    fprintf(f, ",\"name\":\"process_name\",\"args\":{\"name\":\"weft\"}}");
    for (struct buffer *b = buffers; b; b = b->next)
        if (atomic_load_explicit(&b->listed, memory_order_relaxed))
            write_buffer(&w, b);
    fprintf(f, "\n]}\n");
    free(names.ids);
    free(names.ts);
    free(names.text);
    free(flows.ids);
    return ferror(f) ? -EIO : 0;
}

WEFT_EXPORT int weft_trace_stop(void)
{
    weft__lock(&list_lock);
    if (!trace_file) {
        pthread_mutex_unlock(&list_lock);
        return -ESRCH;
    }
    /* An exchange, not a store: base/storeload.h (weft__tracing is a plain
     * int, which the C11 exchange does not take). */
    (void)__atomic_exchange_n(&weft__tracing, 0, __ATOMIC_SEQ_CST);
    trace_t1 = weft__now_ns();
    for (struct buffer *b = buffers; b; b = b->next) {
        unsigned spins = 0;
        while (atomic_load_explicit(&b->busy, memory_order_seq_cst))
            weft__backoff(&spins);
    }
    int rc = write_trace(trace_file);
    if (fclose(trace_file) != 0)
        rc = -EIO;
    trace_file = NULL;
    for (struct buffer *b = buffers; b; b = b->next) {
        while (b->head) {
            struct block *k = b->head;
            b->head = k->next;
            free(k);
        }
        b->tail = NULL;
        b->count = 0;
        b->dropped = 0;
        atomic_store_explicit(&b->listed, false, memory_order_relaxed);
    }
    pthread_mutex_unlock(&list_lock);
    return rc;
}

static void stop_at_exit(void)
{
    int rc = weft_trace_stop();
    if (rc && rc != -ESRCH)
        fprintf(stderr, "weft: WEFT_TRACE: %s\n", weft_strerror(rc));
}

void weft__trace_from_environment(void);
void weft__trace_from_environment(void)
{
    const char *path = getenv("WEFT_TRACE");
    if (!path || !*path)
        return;
    int rc = weft_trace_start(path);
    if (rc) {
        fprintf(stderr, "weft: WEFT_TRACE=%s: %s\n", path, weft_strerror(rc));
        return;
    }
    atexit(stop_at_exit);
}
