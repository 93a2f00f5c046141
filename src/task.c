/*
 * task.c — tasks: spawn, await with continuation chaining, sync_wait,
 * schedule, yield, and the task state machine (runtime.h has the states).
 *
 * Await versus completion (DESIGN.md "continuation arbitration").  The
 * awaited task's `waiter` slot is arbitrated by atomics alone:
 *
 *   awaiter A (in a post-switch action, A's context saved):
 *       CAS waiter: NULL -> A;  on success park A (IDLE), else (DONE) A
 *       simply continues
 *   completer (T's body returned, its result stored):
 *       w = exchange(waiter, DONE);  if w is a task: claim it (IDLE ->
 *       RUNNING) and switch straight to it; if the claim fails (A has not
 *       parked yet, or a wake took it) wake it instead
 *
 * Exactly one of the CAS and the exchange comes first.  If the CAS does,
 * the completer finds A and resumes it (directly, or through wake(), whose
 * NOTIFIED flag A's park turns into a requeue if A is still switching
 * out): A is resumed exactly once.  If the exchange does, the CAS fails
 * and A continues on its own.  Either way A sees DONE, and the result was
 * written before the exchange (release) that made DONE visible (acquire).
 *
 * Inline awaits (DESIGN.md "lazy stacks"): a task that was spawned and
 * still sits, never started, in a queue of the awaiter's pool is claimed by
 * CAS (SCHEDULED -> RUNNING) and its body runs as a plain call on the
 * awaiter's stack: no stack, no switch.  The queue entry stays behind with
 * its reference and is dropped when popped.  Only when the awaiter's stack
 * has room to spare, so deep chains fall back to suspension.
 */
#include "fault.h"
#include "runtime.h"
#include "sanitizer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define WEFT_EXPORT __attribute__((visibility("default"), noinline))

/*
 * Inline awaits run a child's body on the awaiter's stack, and the child is
 * promised its declared stack size however it runs.  So each task stack
 * reserves its declared size twice over (pages commit only when touched,
 * so this costs address space, not memory), and an inline await needs the
 * child's full declared size free below it, plus some slack for the frames
 * of the await itself.
 */
#define INLINE_SLACK (16u * 1024u)
#define INLINE_ROOM_MAX ((size_t)64 << 20)

static inline uint64_t refs_of(uint64_t s)
{
    return s >> 8;
}

static inline uint64_t lifecycle(uint64_t s)
{
    return s & WEFT__T_LIFECYCLE;
}

static inline struct weft_task *task_of(struct weft_coro *co)
{
    return (struct weft_task *)co; /* co is the first member */
}

struct weft_task *weft__task_current(void)
{
    struct weft_coro *c = weft__tls_fresh()->current;
    return (c->flags & WEFT__CORO_TASK) ? task_of(c) : NULL;
}

/* ------------------------------------------------------------ records */

/*
 * Task records come from a per-thread free list, refilled from (and
 * spilled to) a global list in batches, and carved from 64-record chunks
 * when both are empty.  Records are never returned to malloc (like Go's
 * goroutine descriptors): a fork-join program makes and frees one per
 * spawn, often a million at once, and malloc costs several times the rest
 * of a spawn.  Memory stays at the peak number of live records.
 */
#define CACHE_MAX 512
#define BATCH 128
#define CHUNK 64

struct record_cache {
    struct weft_task *head; /* linked through .link */
    unsigned n;
    /* Records kept before half are spilled: CACHE_MAX once the thread's
     * exit is set to hand the cache back (records_exit), 0 until then, so
     * that the first free takes the slow path, which arranges that.  (A
     * thread that only frees records, a worker running tasks spawned
     * elsewhere, would otherwise strand its cache when it exits.) */
    unsigned max;
};
static __thread struct record_cache tls_records
    __attribute__((tls_model("initial-exec")));

static pthread_mutex_t records_lock = PTHREAD_MUTEX_INITIALIZER;
static struct weft_task *records_free;   /* global list, under the lock */

/* Every chunk stays listed here, so leak checkers see the records as
 * reachable for as long as the process lives. */
struct record_chunk {
    struct record_chunk *next;
    _Alignas(16) struct weft_task records[];
};
static struct record_chunk *chunks;      /* under the lock */
static pthread_once_t records_once = PTHREAD_ONCE_INIT;
static pthread_key_t records_key;
static bool records_key_made;

/* Move up to n records from the cache to the global list. */
static void records_spill(struct record_cache *c, unsigned n)
{
    if (!n || !c->head)
        return;
    struct weft_task *first = c->head, *last = first;
    unsigned k = 1;
    while (k < n && last->link) {
        last = last->link;
        k++;
    }
    c->head = last->link;
    c->n -= k;
    pthread_mutex_lock(&records_lock);
    last->link = records_free;
    records_free = first;
    pthread_mutex_unlock(&records_lock);
}

static void records_exit(void *p)
{
    struct record_cache *c = p;
    records_spill(c, c->n);
    c->max = 0; /* a later free (another destructor) registers again */
}

static void records_make_key(void)
{
    records_key_made =
        weft__pthread_key_create(&records_key, records_exit) == 0;
}

/* Have this thread's exit give its cache back; false if that cannot be
 * arranged (no memory): then the thread must keep no records. */
static bool records_register(struct record_cache *c)
{
    pthread_once(&records_once, records_make_key);
    if (records_key_made && weft__pthread_setspecific(records_key, c) == 0)
        c->max = CACHE_MAX;
    return c->max != 0;
}

static __attribute__((noinline)) void record_free_slow(struct record_cache *c)
{
    if (!c->max && !records_register(c)) {
        records_spill(c, c->n);
        return;
    }
    if (c->n > c->max)
        records_spill(c, CACHE_MAX / 2);
}

static __attribute__((noinline)) struct weft_task *record_refill(void)
{
    struct record_cache *c = &tls_records;
    bool keep = c->max || records_register(c);

    pthread_mutex_lock(&records_lock);
    for (unsigned i = 0; i < BATCH && records_free; i++) {
        struct weft_task *t = records_free;
        records_free = t->link;
        t->link = c->head;
        c->head = t;
        c->n++;
    }
    pthread_mutex_unlock(&records_lock);
    if (!c->head) {
        struct record_chunk *chunk =
            weft__malloc(sizeof *chunk + CHUNK * sizeof chunk->records[0]);
        if (!chunk)
            return NULL;
        pthread_mutex_lock(&records_lock);
        chunk->next = chunks;
        chunks = chunk;
        pthread_mutex_unlock(&records_lock);
        for (unsigned i = 0; i < CHUNK; i++) {
            chunk->records[i].link = c->head;
            c->head = &chunk->records[i];
        }
        c->n += CHUNK;
    }
    struct weft_task *t = c->head;
    c->head = t->link;
    c->n--;
    if (!keep)
        records_spill(c, c->n);
    return t;
}

static inline struct weft_task *record_alloc(void)
{
    struct record_cache *c = &tls_records;
    struct weft_task *t = c->head;
    if (__builtin_expect(t != NULL, 1)) {
        c->head = t->link;
        c->n--;
        return t;
    }
    return record_refill();
}

static inline void record_free(struct weft_task *t)
{
    struct record_cache *c = &tls_records;
    t->link = c->head;
    c->head = t;
    if (__builtin_expect(++c->n > c->max, 0))
        record_free_slow(c);
}

static struct weft_task *task_new(weft_fn fn, void *arg, size_t stack_size,
                                  const char *name, uint64_t state)
{
    struct weft_task *t = record_alloc();
    if (!t)
        return NULL;
    /* Every field is set here (records are recycled): no memset. */
    t->co.sp = NULL;
    t->co.san.tsan = NULL;
    /* The embedded coroutine record is never SUSPENDED, so the standalone
     * calls (resume, destroy) refuse it with -EBUSY. */
    atomic_init(&t->co.state, WEFT_CORO_RUNNING);
    t->co.flags = WEFT__CORO_TASK;
    t->co.resumer = NULL;
    atomic_init(&t->co.owner, NULL);
    t->co.fn = fn;
    t->co.started = 0;
    t->co.stack.map = NULL;
    t->co.name = "task";
    if (name) {
        size_t n = strnlen(name, sizeof t->co.name_buf - 1);
        memcpy(t->co.name_buf, name, n);
        t->co.name_buf[n] = '\0';
        t->co.name = t->co.name_buf;
    }
    atomic_init(&t->state, state);
    atomic_init(&t->waiter, 0);
    t->pool = NULL;
    t->driver = NULL;
    t->arg = arg;
    t->result = NULL;
    t->stack_size = stack_size;
    t->link = NULL;
    t->spawned_on = NULL;
    t->inlined = NULL;
    atomic_init(&t->cancelled, 0);
    atomic_init(&t->wait_lock.held, false);
    t->cur_wait = NULL;
    t->started = false;
    t->lazy = false;
    return t;
}

void weft__task_unref(struct weft_task *t, uint64_t n)
{
    /* acq_rel: the last one out sees every other owner's writes. */
    uint64_t old = atomic_fetch_sub_explicit(&t->state, n * WEFT__T_REF,
                                             memory_order_acq_rel);
    if (refs_of(old) == n)
        record_free(t);
}

/* Take the result and drop the handle's reference. */
static void consume(struct weft_task *t, void **result)
{
    if (result)
        *result = t->result;
    weft__task_unref(t, 1);
}

/* ------------------------------------------------------ the state machine */

bool weft__task_claim_idle(struct weft_task *t)
{
    /* Acquire here and in the CAS below: the first read may be the one
     * that meets the creator's release (ThreadSanitizer checks it). */
    uint64_t s = atomic_load_explicit(&t->state, memory_order_acquire);
    do {
        if (lifecycle(s) != WEFT__T_IDLE)
            return false;
        /* Acquire: pairs with the release that parked it after its save. */
    } while (!atomic_compare_exchange_weak_explicit(
        &t->state, &s, (s & ~(uint64_t)WEFT__T_LIFECYCLE) | WEFT__T_RUNNING,
        memory_order_acquire, memory_order_relaxed));
    return true;
}

bool weft__task_claim_queued(struct weft_task *t)
{
    /* Acquire: pairs with the release that queued it (spawn, wake), also
     * when the queue in between is liburcu's, which TSan cannot see. */
    uint64_t s = atomic_load_explicit(&t->state, memory_order_acquire);
    for (;;) {
        if (lifecycle(s) != WEFT__T_SCHEDULED) {
            /* A stale entry: the task was claimed inline meanwhile. */
            weft__task_unref(t, 1);
            return false;
        }
        /* RUNNING, and the entry's reference goes with the entry. */
        uint64_t n = ((s & ~(uint64_t)WEFT__T_LIFECYCLE) | WEFT__T_RUNNING |
                      WEFT__T_STARTED) - WEFT__T_REF;
        if (atomic_compare_exchange_weak_explicit(&t->state, &s, n,
                                                  memory_order_acquire,
                                                  memory_order_relaxed))
            return true;
    }
}

static void driver_submit(struct weft__driver *d, struct weft_task *t);

/*
 * Queue a SCHEDULED task (holding its entry's reference) on its home, read
 * by the caller *before* the task became SCHEDULED: once it is, another
 * thread may claim, run and free it, and the queues' own ordering (liburcu's
 * global queue) is invisible to ThreadSanitizer.  Only a running task
 * changes its home, so the value read before is still right.
 */
static void enqueue_home(struct weft_task *t, weft_pool *pool,
                         struct weft__driver *driver)
{
    if (pool)
        weft__pool_submit_woken(pool, t);
    else
        driver_submit(driver, t);
}

/* RUNNING -> SCHEDULED (dropping NOTIFIED: being queued answers it), plus
 * the queue entry's reference; the caller then queues it. */
static void make_scheduled(struct weft_task *t)
{
    uint64_t s = atomic_load_explicit(&t->state, memory_order_relaxed);
    uint64_t n;
    do {
        n = ((s & ~(uint64_t)(WEFT__T_LIFECYCLE | WEFT__T_NOTIFIED)) |
             WEFT__T_SCHEDULED) + WEFT__T_REF;
        /* Release: the context saved before this action is visible to the
         * thread that claims the queue entry. */
    } while (!atomic_compare_exchange_weak_explicit(
        &t->state, &s, n, memory_order_release, memory_order_relaxed));
}

static void wake(struct weft_task *t, bool fifo);

void weft__task_wake(struct weft_task *t)
{
    wake(t, false);
}

void weft__task_wake_fifo(struct weft_task *t)
{
    wake(t, true);
}

static void wake(struct weft_task *t, bool fifo)
{
    uint64_t s = atomic_load_explicit(&t->state, memory_order_relaxed);
    for (;;) {
        uint64_t n;
        switch (lifecycle(s)) {
        case WEFT__T_IDLE: {
            weft_pool *pool = t->pool;
            struct weft__driver *driver = t->driver;
            n = ((s & ~(uint64_t)WEFT__T_LIFECYCLE) | WEFT__T_SCHEDULED) +
                WEFT__T_REF;
            if (atomic_compare_exchange_weak_explicit(
                    &t->state, &s, n, memory_order_acq_rel,
                    memory_order_relaxed)) {
                if (fifo && pool)
                    weft__pool_submit_fifo(pool, t);
                else
                    enqueue_home(t, pool, driver);
                return;
            }
            break;
        }
        case WEFT__T_RUNNING:
            /* Still switching out (or about to wait): its park requeues
             * it. */
            if (s & WEFT__T_NOTIFIED)
                return;
            if (atomic_compare_exchange_weak_explicit(
                    &t->state, &s, s | WEFT__T_NOTIFIED, memory_order_acq_rel,
                    memory_order_relaxed))
                return;
            break;
        default:
            return; /* already queued, or ended */
        }
    }
}

struct weft_task *weft__task_park(struct weft_task *t)
{
    uint64_t s = atomic_load_explicit(&t->state, memory_order_relaxed);
    for (;;) {
        if (s & WEFT__T_NOTIFIED) {
            /* A wake came while it was running: keep it, as a requeue. */
            weft_pool *pool = t->pool;
            struct weft__driver *driver = t->driver;
            make_scheduled(t);
            enqueue_home(t, pool, driver);
            return NULL;
        }
        /* Release: a thread that claims it (acquire) sees its context. */
        if (atomic_compare_exchange_weak_explicit(
                &t->state, &s,
                (s & ~(uint64_t)WEFT__T_LIFECYCLE) | WEFT__T_IDLE,
                memory_order_release, memory_order_relaxed))
            return NULL;
    }
}

/* ------------------------------------------------------ running, ending */

static void task_entry(void *val, void *arg);

/* The stack size a task's body is promised. */
static size_t declared_stack(const struct weft_task *t, const weft_pool *pool)
{
    size_t size = t->stack_size;
    if (!size && pool)
        size = pool->stack_size;
    return size ? size : WEFT_STACK_DEFAULT;
}

/*
 * Give a task its stack and first context, on the thread that starts it;
 * `pool` is the home it starts in (its stack size may come from there).
 * Returns 0, or -ENOMEM with nothing changed: no stack could be had.
 */
static int prepare(struct weft_task *t, const weft_pool *pool)
{
    size_t size = declared_stack(t, pool);
    /* Twice over, for the bodies it may run inline (see the top). */
    size += size <= INLINE_ROOM_MAX ? size : 0;
    int err = weft__stack_alloc(&t->co.stack, size);
    if (unlikely(err))
        return err;
    if (t->co.stack.canary)
        t->co.flags |= WEFT__CORO_CANARY;
    weft__san_fiber_new(&t->co.san, &t->co.stack);
    t->co.sp = weft__ctx_make(weft__stack_top(&t->co.stack), task_entry, t);
    t->started = true;
    return 0;
}

/*
 * A worker is about to start a spawned task (lazy tasks get their stack in
 * await or sync_wait, which can report a failure) and no stack can be had.
 * Nobody can be told: the spawn returned long ago.  So the task goes back,
 * SCHEDULED again, to the end of its pool's global queue, and starts when a
 * stack can be had: the tasks queued before it run first, and those that
 * end give their stacks back.  Its body has not run, so it holds nothing
 * meanwhile, and a drain waits for it like for any queued task.
 */
static void start_later(struct weft_task *t)
{
    weft_pool *pool = t->pool; /* before it is SCHEDULED: enqueue_home */
    make_scheduled(t);
    weft__pool_submit_fifo(pool, t);
}

void weft__task_run(struct weft_task *t)
{
    /* The scheduler context never changes thread, so this block stays
     * ours across the switches below. */
    struct weft__thread *th = &weft__tls;
    while (t) {
        if (!t->started && unlikely(prepare(t, t->pool) != 0)) {
            start_later(t);
            return;
        }
        th->current = &t->co;
        struct weft_task *next = NULL;
        /* Back when the task (or a chain it handed control to) switches
         * to this scheduler; the post-switch action's result lands in
         * `next`. */
        weft__san_switch(&th->root.san, &t->co.san);
        weft__ctx_jump(&th->root.sp, t->co.sp, NULL, (void **)&next, NULL, 0);
        weft__san_arrived(&th->root.san);
        t = next;
    }
}

/* Leave the running task for `to` (a context with a saved frame), running
 * action(arg) on to's stack once the task's own frame is saved. */
static void switch_ontop(struct weft__thread *th, struct weft_coro *to,
                         weft__ctx_action action, void *arg)
{
    struct weft_coro *self = th->current;
    if ((self->flags & WEFT__CORO_CANARY) && !weft__stack_intact(&self->stack))
        weft__coro_overflow(self, true);
    th->current = to;
    weft__san_switch(&self->san, &to->san);
    weft__ctx_jump_ontop(&self->sp, to->sp, NULL, NULL, action, arg);
    weft__san_arrived(&self->san);
}

void weft__task_suspend(weft__ctx_action action, void *arg)
{
    struct weft__thread *th = weft__tls_fresh();
    switch_ontop(th, &th->root, action, arg);
}

/* The thread's home for "switch straight to the continuation". */
static bool at_home(struct weft_task *a, struct weft__thread *th)
{
    if (th->worker)
        return a->pool == th->worker->pool;
    return th->driver && a->driver == th->driver && !a->pool;
}

static void driver_finish(struct weft__driver *d);

/* The last step of an ended task, on the stack it switched to: only now
 * may its stack be reused and its record be freed. */
static void *finish_action(void *arg, void *val)
{
    struct weft_task *t = arg;
    weft__san_fiber_gone(&t->co.san);
    weft__stack_free(&t->co.stack);
    if (t->pool)
        weft__pool_leave(t->pool);
    uint64_t s = atomic_load_explicit(&t->state, memory_order_relaxed);
    uint64_t n;
    do {
        n = ((s & ~(uint64_t)(WEFT__T_LIFECYCLE | WEFT__T_NOTIFIED)) |
             WEFT__T_COMPLETE) - WEFT__T_REF;
    } while (!atomic_compare_exchange_weak_explicit(
        &t->state, &s, n, memory_order_acq_rel, memory_order_relaxed));
    if (refs_of(n) == 0)
        record_free(t);
    return val;
}

static _Noreturn void task_finish(struct weft_task *t)
{
    struct weft__thread *th = weft__tls_fresh();
    if ((t->co.flags & WEFT__CORO_CANARY) && !weft__stack_intact(&t->co.stack))
        weft__coro_overflow(&t->co, true);

    /* Release: the result is visible to whoever sees DONE.  Acquire: the
     * awaiter's registration (its saved context) is visible to us. */
    uintptr_t w = atomic_exchange_explicit(&t->waiter, WEFT__WAITER_DONE,
                                           memory_order_acq_rel);
    if (w & WEFT__WAITER_THREAD) {
        driver_finish((struct weft__driver *)(w & ~WEFT__WAITER_THREAD));
    } else if (w) {
        struct weft_task *a = (struct weft_task *)w;
        if (at_home(a, th) && weft__task_claim_idle(a)) {
            /* Continuation chaining: no queue round trip. */
            th->current = &a->co;
            weft__san_switch_last(&a->co.san);
            weft__ctx_jump_ontop(&t->co.sp, a->co.sp, NULL, NULL,
                                 finish_action, t);
            __builtin_unreachable();
        }
        weft__task_wake(a);
    }
    th->current = &th->root;
    weft__san_switch_last(&th->root.san);
    weft__ctx_jump_ontop(&t->co.sp, th->root.sp, NULL, NULL, finish_action, t);
    __builtin_unreachable();
}

static void task_entry(void *val, void *arg)
{
    (void)val;
    struct weft_task *t = arg;
    weft__san_arrived(&t->co.san);
    t->result = t->co.fn(t->arg);
    task_finish(t);
}

/* ------------------------------------------------------------ the API */

WEFT_EXPORT int weft_task_create(weft_task **out, weft_fn fn, void *arg,
                                 const weft_coro_opts *opts)
{
    if (!out || !fn)
        return -EINVAL;
    size_t stack = opts ? opts->stack_size : 0;
    if (stack > WEFT__STACK_MAX)
        return -EINVAL;
    /* References: the handle and the task's life. */
    struct weft_task *t = task_new(fn, arg, stack, opts ? opts->name : NULL,
                                   WEFT__T_IDLE | 2 * WEFT__T_REF);
    if (!t)
        return -ENOMEM;
    t->lazy = true;
    *out = t;
    return 0;
}

WEFT_EXPORT int weft_spawn(weft_pool *pool, weft_fn fn, void *arg,
                           weft_task **out)
{
    if (!pool || !fn)
        return -EINVAL;
    /* References: the queue entry, the task's life, and the handle. */
    uint64_t refs = out ? 3 : 2;
    struct weft_task *t = task_new(fn, arg, 0, NULL, 0);
    if (!t)
        return -ENOMEM;
    int err = weft__pool_arrive(pool);
    if (err) {
        record_free(t);
        return err;
    }
    t->pool = pool;
    t->spawned_on = pool;
    if (out)
        *out = t;
    /* Release: whoever claims it (acquire on the state) sees its fields,
     * whichever queue carried it. */
    atomic_store_explicit(&t->state, WEFT__T_SCHEDULED | refs * WEFT__T_REF,
                          memory_order_release);
    /* Once queued it may run, end and (detached) be freed at once. */
    weft__pool_submit(pool, t);
    return 0;
}

WEFT_EXPORT int weft_task_detach(weft_task *t)
{
    if (!t)
        return -EINVAL;
    if (t->lazy) {
        /* Lazy and never started: nobody else knows it. */
        record_free(t);
        return 0;
    }
    weft__task_unref(t, 1);
    return 0;
}

static void *park_action(void *arg, void *val)
{
    (void)val;
    return weft__task_park(arg);
}

void weft__task_block(struct weft_task *self)
{
    weft__task_suspend(park_action, self);
}

struct await_args {
    struct weft_task *self;     /* the awaiting task (what the slot holds) */
    struct weft_task *t;
    struct weft__wait *w;
    struct weft_task *holder;   /* whose cancel ends the await (w->holder) */
};

/*
 * Await vs cancel.  weft_task_cancel stores the flag, then (under the
 * wait holder's wait_lock: the awaiter, or the task whose body runs inline
 * on its stack and awaits) cancel_await CASes the awaiter out of t's
 * waiter slot.  A cancel that comes before the awaiter is in the slot finds
 * nothing to take back, so the awaiter, once in the slot, reads the flag
 * and takes itself back.  Both sides are seq_cst (flag store, slot CAS;
 * slot write, flag load): in the single total order, if cancel's CAS read
 * the slot empty, the awaiter's later write precedes its flag load, which
 * then sees the flag.  Whoever takes the slot back (one CAS wins) decides
 * CANCELED; the completer's exchange that finds the slot empty wakes
 * nobody.
 */
static bool take_back_if_cancelled(struct await_args *a)
{
    if (!atomic_load_explicit(&a->holder->cancelled, memory_order_seq_cst))
        return false;
    uintptr_t me = (uintptr_t)a->self;
    if (!atomic_compare_exchange_strong_explicit(&a->t->waiter, &me, 0,
                                                 memory_order_seq_cst,
                                                 memory_order_acquire))
        return false; /* t ended, or cancel_await took it */
    atomic_store_explicit(&a->w->outcome, WEFT__W_CANCELED,
                          memory_order_release);
    return true;
}

static void *await_action(void *arg, void *val)
{
    (void)val;
    struct await_args *a = arg;
    uintptr_t none = 0;
    if (atomic_compare_exchange_strong_explicit(
            &a->t->waiter, &none, (uintptr_t)a->self, memory_order_seq_cst,
            memory_order_acquire) &&
        !take_back_if_cancelled(a))
        return weft__task_park(a->self);
    /* It ended while we switched out, or we were cancelled: continue at
     * once (a stray NOTIFIED is answered by running). */
    atomic_fetch_and_explicit(&a->self->state, ~(uint64_t)WEFT__T_NOTIFIED,
                              memory_order_relaxed);
    return a->self;
}

/* Enough stack left below the caller for an inline body? */
static bool stack_room(struct weft_task *self, size_t need)
{
    char *low = weft__stack_low(&self->co.stack);
    char *here = __builtin_frame_address(0);
    return here > low && (size_t)(here - low) > need + INLINE_SLACK;
}

/*
 * The await fast path: run a queued, never-started task of our pool as a
 * plain call.  Best case (fork-join): it is the newest entry of our own
 * deque, so popping it takes the entry and its reference, and nobody else
 * can reach it any more (we hold the handle).  Else, if it is still
 * queued anywhere, claim it by CAS and leave the entry to be dropped when
 * popped.
 */
static bool try_inline(struct weft_task *self, struct weft_task *t)
{
    struct weft__worker *w = weft__worker_current();
    if (!w || t->spawned_on != w->pool ||
        !stack_room(self, declared_stack(t, t->spawned_on)))
        return false;
    /* Acquire: pairs with spawn's release of the state (its fields). */
    uint64_t s = atomic_load_explicit(&t->state, memory_order_acquire);
    if (lifecycle(s) != WEFT__T_SCHEDULED || (s & WEFT__T_STARTED))
        return false;
    uint64_t running = (s & ~(uint64_t)WEFT__T_LIFECYCLE) | WEFT__T_RUNNING |
                       WEFT__T_STARTED;
    if (weft__runq_peek_bottom(&w->q) == t && weft__runq_pop(&w->q) == t) {
        /* Ours alone: no other entry, no waiter, no wake can exist. */
        atomic_store_explicit(&t->state, running - WEFT__T_REF,
                              memory_order_relaxed);
    } else if (!atomic_compare_exchange_strong_explicit(
                   &t->state, &s, running, memory_order_acquire,
                   memory_order_relaxed)) {
        return false; /* a worker took it first */
    }
    t->started = true;
    /* While t's body runs here, t is the calling task (to weft_await). */
    struct weft_task *outer = self->inlined;
    self->inlined = t;
    t->result = t->co.fn(t->arg);
    self->inlined = outer;
    /* Nobody else can be waiting: we hold the handle. */
    atomic_store_explicit(&t->waiter, WEFT__WAITER_DONE, memory_order_relaxed);
    weft__pool_leave(t->pool);
    /* COMPLETE, and the task's life reference goes. */
    s = atomic_load_explicit(&t->state, memory_order_relaxed);
    uint64_t n;
    do {
        n = ((s & ~(uint64_t)(WEFT__T_LIFECYCLE | WEFT__T_NOTIFIED)) |
             WEFT__T_COMPLETE) - WEFT__T_REF;
    } while (!atomic_compare_exchange_weak_explicit(
        &t->state, &s, n, memory_order_release, memory_order_relaxed));
    return true;
}

/* Start a lazy task on this thread by symmetric transfer; it inherits our
 * home and comes back to us when it ends.  Returns 0 once it has, or
 * -ENOMEM, with t untouched, if it could get no stack. */
static void *lazy_park_action(void *arg, void *val)
{
    (void)val;
    /* Copied first: `a` is on the awaiter's stack, which a cancel may
     * resume as soon as it is parked.  a.w is written only by the winner
     * of the slot, and while we hold the slot nobody else resumes it. */
    struct await_args a = *(struct await_args *)arg;
    weft__task_park(a.self); /* t runs on, so we cannot continue here */
    if (take_back_if_cancelled(&a))
        weft__task_wake(a.self);
    return NULL;
}

static int start_lazy(struct weft_task *self, struct weft_task *t,
                      struct weft__wait *w)
{
    int err = prepare(t, self->pool);
    if (err)
        return err;
    t->lazy = false;
    t->pool = self->pool;
    t->driver = self->driver;
    if (t->pool)
        (void)weft__pool_arrive(t->pool); /* from its own worker: cannot fail */
    /* seq_cst: see take_back_if_cancelled. */
    atomic_store_explicit(&t->waiter, (uintptr_t)self, memory_order_seq_cst);
    atomic_store_explicit(&t->state,
                          (atomic_load_explicit(&t->state,
                                                memory_order_relaxed) &
                           ~(uint64_t)WEFT__T_LIFECYCLE) |
                              WEFT__T_RUNNING | WEFT__T_STARTED,
                          memory_order_relaxed);
    struct weft__thread *th = weft__tls_fresh();
    th->current = &t->co;
    weft__san_switch(&self->co.san, &t->co.san);
    /* We park on t's stack, after our save; t ends by resuming us. */
    struct await_args a = {self, t, w, w->holder};
    weft__ctx_jump_ontop(&self->co.sp, t->co.sp, NULL, NULL, lazy_park_action,
                         &a);
    weft__san_arrived(&self->co.san);
    return 0;
}

/* Cancelling an await (under the holder's wait_lock): take our claim back
 * from t's waiter slot.  If the completer's exchange came first it resumes
 * us (and t's result is there to take); else we are woken as cancelled. */
static void cancel_await(struct weft__wait *w)
{
    struct weft_task *t = (struct weft_task *)w->data;
    uintptr_t self = (uintptr_t)w->task;
    if (!atomic_compare_exchange_strong_explicit(
            &t->waiter, &self, 0, memory_order_seq_cst, memory_order_acquire))
        return;
    atomic_store_explicit(&w->outcome, WEFT__W_CANCELED, memory_order_release);
    weft__wait_resume(w);
}

WEFT_EXPORT int weft_await(weft_task *t, void **result)
{
    if (!t)
        return -EINVAL;
    struct weft_task *self = weft__task_current();
    if (!self)
        return -EPERM;
    /* The calling task is the body running inline on self's stack, if any;
     * self, awaited by it, would be a cycle as well. */
    if (t == self || t == self->inlined)
        return -EINVAL;

    if (atomic_load_explicit(&t->waiter, memory_order_acquire) !=
        WEFT__WAITER_DONE) {
        if (!t->lazy && try_inline(self, t)) {
            consume(t, result);
            return 0;
        }
        /* A blocking point: cancellable from here on. */
        struct weft__wait w;
        if (weft__wait_init_hook(&w, 0, cancel_await, (uintptr_t)t))
            return -ECANCELED;
        if (t->lazy) {
            int err = start_lazy(self, t, &w);
            if (err) {
                weft__wait_leave(&w);
                return err;
            }
        } else {
            struct await_args a = {self, t, &w, w.holder};
            weft__task_suspend(await_action, &a);
        }
        /* Resumed for another reason than t's end?  Wait on. */
        while (atomic_load_explicit(&t->waiter, memory_order_acquire) !=
                   WEFT__WAITER_DONE &&
               atomic_load_explicit(&w.outcome, memory_order_acquire) ==
                   WEFT__W_PENDING)
            weft__task_block(weft__task_current());
        weft__wait_leave(&w); /* a cancel_await is over */
        if (atomic_load_explicit(&t->waiter, memory_order_acquire) !=
            WEFT__WAITER_DONE)
            return -ECANCELED; /* t not consumed: await it again later */
    }
    consume(t, result);
    return 0;
}

WEFT_EXPORT int weft_await_all(weft_task **ts, size_t n, void **results)
{
    if (!ts && n)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!ts[i])
            return -EINVAL;
    if (n && !weft__task_current())
        return -EPERM;
    for (size_t i = 0; i < n; i++) {
        int err = weft_await(ts[i], results ? &results[i] : NULL);
        if (err)
            return err; /* ts[i..] are not consumed */
        ts[i] = NULL;
    }
    return 0;
}

WEFT_EXPORT int weft_task_cancel(weft_task *t)
{
    if (!t)
        return -EINVAL;
    if (lifecycle(atomic_load_explicit(&t->state, memory_order_acquire)) ==
        WEFT__T_COMPLETE)
        return 0;
    /* seq_cst: against an await entering t's waiter slot (see
     * take_back_if_cancelled); other blocking points read the flag under
     * wait_lock (wait.c). */
    atomic_store_explicit(&t->cancelled, 1, memory_order_seq_cst);
    weft__spin_lock(&t->wait_lock);
    if (t->cur_wait)
        weft__wait_cancel(t->cur_wait);
    weft__spin_unlock(&t->wait_lock);
    return 0;
}

/* ------------------------------------------------------- sync_wait */

static void driver_submit(struct weft__driver *d, struct weft_task *t)
{
    /* wakers: the driver may not return while we still touch it. */
    atomic_fetch_add_explicit(&d->wakers, 1, memory_order_seq_cst);
    pthread_mutex_lock(&d->lock);
    t->link = NULL;
    *d->queue_tail = t;
    d->queue_tail = &t->link;
    pthread_mutex_unlock(&d->lock);
    weft__parker_unpark(&d->parker);
    atomic_fetch_sub_explicit(&d->wakers, 1, memory_order_release);
}

static void driver_finish(struct weft__driver *d)
{
    atomic_fetch_add_explicit(&d->wakers, 1, memory_order_seq_cst);
    atomic_store_explicit(&d->done, 1, memory_order_release);
    weft__parker_unpark(&d->parker);
    atomic_fetch_sub_explicit(&d->wakers, 1, memory_order_release);
}

static struct weft_task *driver_pop(struct weft__driver *d)
{
    pthread_mutex_lock(&d->lock);
    struct weft_task *t = d->queue_head;
    if (t) {
        d->queue_head = t->link;
        if (!d->queue_head)
            d->queue_tail = &d->queue_head;
    }
    pthread_mutex_unlock(&d->lock);
    return t;
}

WEFT_EXPORT int weft_sync_wait(weft_task *t, void **result)
{
    if (!t)
        return -EINVAL;
    struct weft__thread *th = weft__tls_fresh();
    if (th->worker || !(th->current->flags & WEFT__CORO_ROOT) || th->driver)
        return -EDEADLK;
    if (t->lazy) {
        /* Its stack first, the one step that can fail. */
        int err = prepare(t, NULL);
        if (err)
            return err;
    }
    weft__thread_setup(th);

    struct weft__driver d;
    weft__parker_init(&d.parker);
    pthread_mutex_init(&d.lock, NULL);
    d.queue_head = NULL;
    d.queue_tail = &d.queue_head;
    atomic_init(&d.done, 0);
    atomic_init(&d.wakers, 0);
    weft__timers_init(&d.timers);
    th->driver = &d;

    if (t->lazy) {
        /* Lazy: it runs here until it first suspends, and here again
         * whenever it is woken while it belongs to no pool. */
        t->lazy = false;
        t->driver = &d;
        atomic_store_explicit(&t->waiter,
                              (uintptr_t)&d | WEFT__WAITER_THREAD,
                              memory_order_relaxed);
        atomic_store_explicit(&t->state,
                              (atomic_load_explicit(&t->state,
                                                    memory_order_relaxed) &
                               ~(uint64_t)WEFT__T_LIFECYCLE) |
                                  WEFT__T_RUNNING | WEFT__T_STARTED,
                              memory_order_relaxed);
        weft__task_run(t);
    } else {
        uintptr_t none = 0;
        if (!atomic_compare_exchange_strong_explicit(
                &t->waiter, &none, (uintptr_t)&d | WEFT__WAITER_THREAD,
                memory_order_acq_rel, memory_order_acquire))
            atomic_store_explicit(&d.done, 1, memory_order_relaxed);
    }

    while (!atomic_load_explicit(&d.done, memory_order_acquire)) {
        struct weft_task *n = driver_pop(&d);
        if (n) {
            if (weft__task_claim_queued(n))
                weft__task_run(n);
            continue;
        }
        if (weft__timers_run(&d.timers, weft__now_ns()))
            continue;
        uint64_t next = weft__timers_next(&d.timers);
        weft__parker_park(&d.parker, next == UINT64_MAX ? 0 : next);
    }
    /* The last waker's final touch of d must come before we return; it is
     * a few instructions away (unpark makes no system call while we are
     * awake). */
    for (unsigned spins = 0;
         atomic_load_explicit(&d.wakers, memory_order_acquire); spins++) {
        if (spins > 1000)
            sched_yield();
    }
    th = weft__tls_fresh();
    th->driver = NULL;
    weft__timers_fini(&d.timers);
    pthread_mutex_destroy(&d.lock);
    weft__parker_fini(&d.parker);
    consume(t, result);
    return 0;
}

/* ------------------------------------------------------ schedule, yield */

struct move_args {
    struct weft_task *self;
    weft_pool *to;
};

static void *move_action(void *arg, void *val)
{
    (void)val;
    struct move_args *m = arg;
    struct weft_task *self = m->self;
    if (self->pool != m->to) {
        if (self->pool)
            weft__pool_leave(self->pool);
        self->pool = m->to;
        self->driver = NULL;
    }
    weft_pool *pool = self->pool; /* before it can run elsewhere */
    make_scheduled(self);
    /* Behind every task already queued: the yield's promise. */
    weft__pool_submit_fifo(pool, self);
    return NULL;
}

/* Post-switch: a yielding task goes behind what is queued on its worker
 * (the worker that runs this action: the one it yielded on). */
static void *yield_action(void *arg, void *val)
{
    (void)val;
    struct weft_task *self = arg;
    struct weft__worker *w = weft__tls.worker;
    make_scheduled(self);
    weft__pool_submit_yield(w, self);
    return NULL;
}

/*
 * When the next task the scheduler would run is one that yielded before
 * (the common case when tasks take turns), switch to it straight away,
 * with the same post-switch action, instead of through the scheduler
 * context: one switch instead of two and no pass of the scheduler loop.
 * The order is the loop's (weft__pool_yield_next), and the action still
 * publishes the yielder only after its context is saved (invariant 1).
 * With nothing else to run here, the yield returns at once.
 */
WEFT_EXPORT int weft_yield(void)
{
    struct weft_task *self = weft__task_current();
    struct weft__worker *w = weft__worker_current();
    if (!self || !w || self->pool != w->pool)
        return -EPERM;
    bool alone;
    struct weft_task *next = weft__pool_yield_next(w, &alone);
    if (alone)
        return 0;
    if (!next) {
        weft__task_suspend(yield_action, self);
        return 0;
    }
    /* A yielded task has its context already. */
    switch_ontop(weft__tls_fresh(), &next->co, yield_action, self);
    return 0;
}

WEFT_EXPORT int weft_schedule(weft_pool *pool)
{
    if (!pool)
        return -EINVAL;
    struct weft_task *self = weft__task_current();
    if (!self)
        return -EPERM;
    struct weft__worker *w = weft__worker_current();
    if (w && w->pool == pool && self->pool == pool)
        return weft_yield();
    int err = weft__pool_arrive(pool);
    if (err)
        return err;
    struct move_args m = {self, pool};
    weft__task_suspend(move_action, &m);
    return 0;
}
