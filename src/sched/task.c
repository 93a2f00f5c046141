/*
 * sched/task.c — making tasks (lazy and eager, with the same options) and
 * the calls on a task's handle: detach, cancel, name, id; the scheduler's
 * per-thread block.
 */
#include "sched/task.h"

#include "base/alloc.h"
#include "base/compiler.h"
#include "base/ident.h"
#include "base/membarrier.h"
#include "base/storeload.h"
#include "sched/observe.h"
#include "sched/wait.h"
#include "sched/worker.h"

#include <string.h>

__thread struct weft__sched_thread weft__sched_tls
    __attribute__((tls_model("initial-exec")));

WEFT_OPAQUE struct weft__sched_thread *weft__sched_fresh(void)
{
    struct weft__sched_thread *t = &weft__sched_tls;
    __asm__ volatile("" : "+r"(t));
    return t;
}

_Static_assert(WEFT_STACK_MAX <= UINT32_MAX, "a stack size fits 32 bits");

/* Validate opts: 0 or -EINVAL.  *stack gets the stack size asked for. */
static int check_opts(const weft_task_opts *opts, size_t *stack)
{
    *stack = 0;
    if (!opts)
        return 0;
    if (opts->stack_size > WEFT_STACK_MAX ||
        !weft__reserved_zero(opts->reserved_, 4))
        return -EINVAL;
    *stack = opts->stack_size;
    return 0;
}

/* For the trace: t was made, by the task running here (if any). */
static __attribute__((noinline)) void trace_made(struct weft__task *t)
{
    struct weft__task *self = weft__task_current();
    uint64_t id = atomic_load_explicit(&t->co.id, memory_order_relaxed);
    weft__trace(WEFT__TE_SPAWN, id,
                self ? atomic_load_explicit(&weft__task_body(self)->co.id,
                                            memory_order_relaxed)
                     : 0);
    if (t->co.name == weft__record_name_buf(t))
        weft__trace_name(id, t->co.name);
}

/* Both records of a task (task.h); with `room`, arg is ignored and t->arg
 * is a room of WEFT_TASK_ROOM bytes (its slot: weft__record_room).
 * `state` gets KEEP added for a task with a room or a name. */
static struct weft__task *task_new(weft_fn fn, void *arg, size_t stack_size,
                                   const char *name, uint64_t state,
                                   bool room)
{
    struct weft__task *t = weft__record_alloc();
    if (!t)
        return NULL;
    /* Its handle: the one it kept (records.c, "Pairs"), or a new one. */
    struct weft_task *h = t->paired ? t->done : weft__handle_alloc();
    if (!h) {
        weft__record_free(t);
        return NULL;
    }
    t->paired = false;
    if (room) {
        t->arg = weft__record_room(t);
        t->room = WEFT__ROOM_RECORD;
    } else {
        t->arg = arg;
        t->room = WEFT__ROOM_NONE;
    }
    /* Every field is set here (records are recycled): no memset. */
    t->co.sp = NULL;
#ifdef WEFT_TSAN
    t->co.san.tsan = NULL;
#endif
    /* The embedded coroutine record is never SUSPENDED, so the standalone
     * calls (resume, destroy) refuse it with -EBUSY. */
    atomic_init(&t->co.state, WEFT_CORO_RUNNING);
    t->co.flags = WEFT__CORO_HOSTED;
    t->co.resumer = NULL;
    atomic_init(&t->co.owner, NULL);
    t->co.fn = fn;
    t->co.started = 0;
    t->co.stack.map = NULL;
    t->co.name = "task";
    if (name) {
        t->co.name = weft__coro_name_copy(weft__record_name_buf(t), name);
        state |= WEFT__T_KEEP;
    }
    if (room)
        state |= WEFT__T_KEEP | WEFT__T_ROOM;
    /* Atomic, for the racy readers (task.h); release, for a claimer whose
     * first touch of the record is this field (task_state.c, move). */
    __atomic_store_n(&t->done, h, __ATOMIC_RELEASE);
    atomic_store_explicit(&h->run, (uintptr_t)t, memory_order_relaxed);
    /* Atomic stores, not atomic_init: await's look at the bottom of its
     * deque (await.c, is_complete) may read the state of a handle that a
     * thief has just ended and freed and that is being made again here;
     * the value read is never acted on (drop_bottom refuses what a thief
     * can reach), but the read must not be a data race.  Likewise for the
     * fields await's inline start reads through a handle (try_inline). */
    atomic_store_explicit(&h->state, state, memory_order_relaxed);
    atomic_init(&h->waiter, 0);
    h->result = NULL;
    t->pool = NULL;
    t->driver = NULL;
    atomic_store_explicit(&t->stack_size, (uint32_t)stack_size,
                          memory_order_relaxed); /* <= WEFT_STACK_MAX */
    t->link = NULL;
    atomic_store_explicit(&t->spawned_on, NULL, memory_order_relaxed);
    t->inlined = NULL;
    t->pin = NULL;
    atomic_init(&t->cancelled, 0);
    /* wait_lock is not set here: it was when its chunk was made
     * (records.c), and a free record's is free, but for an observer that
     * may hold it this moment (dump.c), whose unlock must not be undone. */
    t->cur_wait = NULL;
    t->started = false;
    /* ran_on: set when it runs; trace_flow: taken by each run. */
    /* Release: weft__handle_id reads it through a handle whose task may
     * have ended, its record been made again here meanwhile. */
    atomic_store_explicit(&t->co.id, weft__id_new(), memory_order_release);
    if (weft__trace_on())
        trace_made(t);
    return t;
}

/* A task made but never queued or run goes back whole. */
static void task_unmake(struct weft__task *t)
{
    weft__record_free_pair(t);
}

WEFT_EXPORT int weft_task_create(weft_task **out, weft_fn fn, void *arg,
                                 const weft_task_opts *opts)
{
    size_t stack;
    if (!out || !fn || check_opts(opts, &stack))
        return -EINVAL;
    /* References: the handle and the task's life. */
    struct weft__task *t = task_new(
        fn, arg, stack, opts ? opts->name : NULL,
        WEFT__T_IDLE | WEFT__T_HANDLE | WEFT__T_LAZY | 2 * WEFT__T_REF,
        false);
    if (!t)
        return -ENOMEM;
    *out = t->done;
    return 0;
}

/* room_task_new's larger rooms: one malloc, freed with the record. */
static __attribute__((noinline)) struct weft__task *
heap_room_task_new(weft_fn fn, size_t stack, const char *name, size_t size,
                   uint64_t state)
{
    struct weft__task *t =
        task_new(fn, NULL, stack, name, state | WEFT__T_KEEP | WEFT__T_ROOM,
                 false);
    if (!t)
        return NULL;
    /* malloc's alignment is max_align_t's, as the header promises. */
    t->arg = weft__malloc(size);
    if (!t->arg) {
        task_unmake(t);
        return NULL;
    }
    t->room = WEFT__ROOM_HEAP;
    return t;
}

/* A task with a room of `size` bytes (its arg): its record's slot up to
 * WEFT_TASK_ROOM, else one malloc; KEEP added to `state`. */
static inline struct weft__task *room_task_new(weft_fn fn, size_t stack,
                                               const char *name, size_t size,
                                               uint64_t state)
{
    if (__builtin_expect(size > WEFT_TASK_ROOM, 0))
        return heap_room_task_new(fn, stack, name, size, state);
    return task_new(fn, NULL, stack, name, state, true); /* KEEP: task_new */
}

WEFT_EXPORT int weft_task_create_with(weft_task **out, weft_fn fn,
                                      size_t size, void **room,
                                      const weft_task_opts *opts)
{
    size_t stack;
    if (!out || !fn || !room || check_opts(opts, &stack))
        return -EINVAL;
    struct weft__task *t = room_task_new(
        fn, stack, opts ? opts->name : NULL, size,
        WEFT__T_IDLE | WEFT__T_HANDLE | WEFT__T_LAZY | 2 * WEFT__T_REF);
    if (!t)
        return -ENOMEM;
    *room = t->arg;
    *out = t->done;
    return 0;
}

/* Queue t, which nobody else knows yet, on pool (arrived at already) as
 * an eager task of it, with `state` (SCHEDULED and its references).
 * Release: whoever claims it (acquire on the state) sees its fields, and
 * the room its creator filled, whichever queue carried it.  Once queued
 * it may run, end and (detached) be freed at once. */
static void queue_new(struct weft__task *t, weft_pool *pool, uint64_t state)
{
    t->pool = pool;
    atomic_store_explicit(&t->spawned_on, pool, memory_order_relaxed);
    atomic_store_explicit(&t->done->state, state, memory_order_release);
    weft__pool_submit(pool, t);
}

/* A spawn's arrival at pool for t, made but not queued yet; on a refusal
 * t goes back whole. */
static int arrive_or_unmake(struct weft__task *t, weft_pool *pool)
{
    int err = weft__pool_arrive(pool);
    if (err)
        task_unmake(t);
    return err;
}

/* The end of a spawn: t queued on pool with `refs` (and whatever task_new
 * set, KEEP), its handle in *out if out is not NULL. */
static void queue_spawned(struct weft__task *t, weft_pool *pool,
                          uint64_t refs, weft_task **out)
{
    uint64_t s = atomic_load_explicit(&t->done->state, memory_order_relaxed);
    if (out)
        *out = t->done;
    else /* nobody will consume its result (task.h, WEFT__H_DETACHED) */
        atomic_store_explicit(&t->done->run, (uintptr_t)t | WEFT__H_DETACHED,
                              memory_order_relaxed);
    queue_new(t, pool, s | WEFT__T_SCHEDULED | refs);
}

WEFT_EXPORT int weft_spawn(weft_task **out, weft_pool *pool, weft_fn fn,
                           void *arg, const weft_task_opts *opts)
{
    size_t stack;
    if (!pool || !fn || check_opts(opts, &stack))
        return -EINVAL;
    /* References: the queue entry, the task's life, and the handle. */
    uint64_t refs = out ? 3 * WEFT__T_REF | WEFT__T_HANDLE : 2 * WEFT__T_REF;
    struct weft__task *t =
        task_new(fn, arg, stack, opts ? opts->name : NULL, 0, false);
    if (!t)
        return -ENOMEM;
    int err = arrive_or_unmake(t, pool);
    if (err)
        return err;
    queue_spawned(t, pool, refs, out);
    return 0;
}

WEFT_EXPORT int weft_spawn_with(weft_task **out, weft_pool *pool, weft_fn fn,
                                size_t size, weft_fill_fn fill, void *arg,
                                const weft_task_opts *opts)
{
    size_t stack;
    if (!out || !pool || !fn || !fill || check_opts(opts, &stack))
        return -EINVAL;
    struct weft__task *t =
        room_task_new(fn, stack, opts ? opts->name : NULL, size, 0);
    if (!t)
        return -ENOMEM;
    /* Arrive before fill: a refusal after fill could not undo what fill
     * made in the room, and fill's refusal can undo the arrival. */
    int err = arrive_or_unmake(t, pool);
    if (err)
        return err;
    err = fill(t->arg, arg);
    if (err) {
        task_unmake(t);
        weft__pool_leave_unqueued(pool);
        return err;
    }
    /* References: the queue entry, the task's life, and the handle. */
    queue_spawned(t, pool, 3 * WEFT__T_REF | WEFT__T_HANDLE, out);
    return 0;
}

/*
 * The room's copy, a word at a time: a caller builds what it passes with
 * word (or narrower) stores just before the call, and a load wider than
 * the stores it reads cannot take their data from the store buffer: it
 * waits until they reach the cache (libc's memcpy, whose loads are 32 or
 * 64 bytes wide, made a C++ spawn 15% slower that way).  The empty asm
 * keeps the compiler from widening the loop into vector loads.
 */
static inline void copy_word(unsigned char *d, const unsigned char *s)
{
    uint64_t w;
    memcpy(&w, s, sizeof w);
    __asm__("" : "+r"(w));
    memcpy(d, &w, sizeof w);
}

static void copy_words(void *dst, const void *src, size_t size)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    size_t words = size / sizeof(uint64_t);
    for (; words > 8; words--, d += 8, s += 8)
        copy_word(d, s);
    /* The last (up to eight) words by a jump into the run below: a room
     * of WEFT_TASK_ROOM bytes or less is copied without a loop. */
    d += words * 8;
    s += words * 8;
    switch (words) {
    case 8: copy_word(d - 64, s - 64); __attribute__((fallthrough));
    case 7: copy_word(d - 56, s - 56); __attribute__((fallthrough));
    case 6: copy_word(d - 48, s - 48); __attribute__((fallthrough));
    case 5: copy_word(d - 40, s - 40); __attribute__((fallthrough));
    case 4: copy_word(d - 32, s - 32); __attribute__((fallthrough));
    case 3: copy_word(d - 24, s - 24); __attribute__((fallthrough));
    case 2: copy_word(d - 16, s - 16); __attribute__((fallthrough));
    case 1: copy_word(d - 8, s - 8); __attribute__((fallthrough));
    default: break;
    }
    if (size % sizeof(uint64_t))
        memcpy(d, s, size % sizeof(uint64_t)); /* narrower loads */
}

/*
 * A room's copy (at most WEFT_TASK_ROOM bytes) of a whole number of
 * words: a run from the start and a run that ends at the end, of the same
 * length, which overlap unless the size is a multiple of it; every load is
 * a word at a multiple of 8 bytes, so it still takes the caller's word
 * stores from the store buffer.  Fewer instructions than copy_words'
 * jump (its address arithmetic), for the sizes a C++ call makes.  Kept
 * apart from copy_words: one routine for every size (its loop, then
 * this) was an instruction a task more and measured slower at two
 * workers (skynet-cpp 26.2 against 24.5 ms, ten interleaved runs).
 */
static inline void copy_room_words(unsigned char *d, const unsigned char *s,
                                   size_t size)
{
    unsigned char *de = d + size;
    const unsigned char *se = s + size;
    copy_word(d, s);
    copy_word(de - 8, se - 8);
    if (size <= 16)
        return;
    copy_word(d + 8, s + 8);
    copy_word(de - 16, se - 16);
    if (size <= 32)
        return;
    copy_word(d + 16, s + 16);
    copy_word(de - 24, se - 24);
    if (size <= 48)
        return;
    copy_word(d + 24, s + 24);
    copy_word(de - 32, se - 32);
}

WEFT_EXPORT int weft_spawn_copy(weft_task **out, weft_pool *pool, weft_fn fn,
                                const void *src, size_t size,
                                const weft_task_opts *opts)
{
    size_t stack;
    if (!out || !pool || !fn || (!src && size) || check_opts(opts, &stack))
        return -EINVAL;
    struct weft__task *t =
        room_task_new(fn, stack, opts ? opts->name : NULL, size, 0);
    if (!t)
        return -ENOMEM;
    /* Filled before the arrival: a copy cannot fail, and the arrival is
     * the one step after it that can (it unmakes t). */
    /* Size 0: no copy, and no arithmetic on src (it may be NULL then). */
    if (size % sizeof(uint64_t) == 0 && size - 1 < WEFT_TASK_ROOM)
        copy_room_words(t->arg, src, size);
    else if (size)
        copy_words(t->arg, src, size);
    int err = arrive_or_unmake(t, pool);
    if (err)
        return err;
    /* References: the queue entry, the task's life, and the handle. */
    queue_spawned(t, pool, 3 * WEFT__T_REF | WEFT__T_HANDLE, out);
    return 0;
}

WEFT_EXPORT void *weft_task_room(const weft_task *h)
{
    if (!h)
        return NULL;
    /* The run record and its room live as long as the handle (KEEP). */
    if (!(atomic_load_explicit(&((weft_task *)h)->state,
                               memory_order_relaxed) &
          WEFT__T_ROOM))
        return NULL;
    return weft__handle_run(h)->arg;
}

WEFT_EXPORT int weft_task_start(weft_task *h, weft_pool *pool)
{
    /* LAZY is the handle holder's flag, and the caller holds the handle:
     * while it is set, nobody else starts the task (and it has its run
     * record); a cancel may change its references. */
    if (!h || !pool)
        return -EINVAL;
    uint64_t s = atomic_load_explicit(&h->state, memory_order_relaxed);
    if (!(s & WEFT__T_LAZY))
        return -EINVAL;
    int err = weft__pool_arrive(pool);
    if (err)
        return err;
    /* It was IDLE and LAZY with the handle's and its life's references;
     * it becomes SCHEDULED, and the queue entry adds one.  An add, not
     * queue_new's store: a weft_task_cancel through a borrowed pointer
     * may be adding or dropping its reference meanwhile.  Release: as
     * queue_new's. */
    struct weft__task *t = weft__handle_run(h);
    t->pool = pool;
    atomic_store_explicit(&t->spawned_on, pool, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->state,
                              (uint64_t)WEFT__T_SCHEDULED - WEFT__T_LAZY +
                                  WEFT__T_REF,
                              memory_order_release);
    weft__pool_submit(pool, t);
    return 0;
}

WEFT_EXPORT int weft_task_detach(weft_task *h)
{
    if (!h)
        return -EINVAL;
    if (atomic_load_explicit(&h->state, memory_order_relaxed) &
        WEFT__T_LAZY) {
        /* Lazy and never started: nobody else knows it. */
        task_unmake(weft__handle_run(h));
        return 0;
    }
    /* Before the handle's drop, whose release carries it to the task's
     * end (task.h, WEFT__H_DETACHED). */
    atomic_fetch_or_explicit(&h->run, WEFT__H_DETACHED, memory_order_relaxed);
    weft__task_detach_handle(h);
    return 0;
}

WEFT_EXPORT int weft_task_fail(void)
{
    struct weft__task *self = weft__task_current();
    if (!self)
        return -EPERM;
    /* The body running now: an inline one, if any.  Relaxed: its end
     * publishes it (task.h, WEFT__H_FAILED). */
    atomic_fetch_or_explicit(&weft__task_body(self)->done->run,
                             WEFT__H_FAILED, memory_order_relaxed);
    return 0;
}

WEFT_EXPORT int weft_task_cancel(weft_task *h)
{
    if (!h)
        return -EINVAL;
    uint64_t s = atomic_load_explicit(&h->state, memory_order_acquire);
    if (weft__task_lifecycle(s) == WEFT__T_COMPLETE)
        return 0;
    /* Not started yet, queued (SCHEDULED) or lazy (IDLE): a request that
     * its start passes on, and no reference (WEFT__H_CANCEL, task.h).
     * A lazy one too: its holder may start it onto its own deque and run
     * it inline with try_inline's plain store while a reference taken or
     * dropped here is in flight, which that store would undo
     * (verify/cancel_start.pml, -DLAZY_START).  Where the kernel has no
     * membarrier, a reference as below, which an inline start may undo
     * if it comes within its few instructions' window. */
    if (weft__membarrier_ok()) {
        atomic_fetch_or_explicit(&h->run, WEFT__H_CANCEL, memory_order_relaxed);
        if (weft__membarrier()) {
            s = atomic_load_explicit(&h->state, memory_order_acquire);
            if (weft__task_lifecycle(s) != WEFT__T_COMPLETE &&
                !(s & WEFT__T_STARTED))
                return 0;
        }
    }
    /* A reference for the moment, so that the run record stays while we
     * use it: taken only from a task that has not ended (nobody gains a
     * reference to an ended task: task.h), so ended means nothing to do.
     * Acquire: as a claim's, the run record's fields are seen. */
    do {
        if (weft__task_lifecycle(s) == WEFT__T_COMPLETE)
            return 0;
    } while (!atomic_compare_exchange_weak_explicit(
        &h->state, &s, s + WEFT__T_REF, memory_order_acquire,
        memory_order_acquire));
    struct weft__task *t = weft__handle_run(h);
    /* seq_cst, an exchange (base/storeload.h): against an await entering
     * t's waiter slot (await.c); other blocking points read the flag
     * under wait_lock (wait.c). */
    weft__storeload_store(&t->cancelled, 1);
    weft__spin_lock(&t->wait_lock);
    if (t->cur_wait)
        weft__wait_cancel(t->cur_wait);
    weft__spin_unlock(&t->wait_lock);
    weft__task_unref(t, 1);
    return 0;
}

WEFT_EXPORT weft_task *weft_task_current(void)
{
    struct weft__task *self = weft__task_current();
    return self ? weft__task_body(self)->done : NULL;
}

WEFT_EXPORT int weft_task_cancelled(void)
{
    return weft__cancelled();
}

WEFT_EXPORT const char *weft_task_name(const weft_task *h)
{
    if (!h)
        return "";
    /* A task that was never named is "task", and may have given its run
     * record back; a named one (KEEP) keeps it, and its name there. */
    uint64_t s = atomic_load_explicit(&h->state, memory_order_relaxed);
    return s & WEFT__T_KEEP ? weft__handle_run(h)->co.name : "task";
}

/*
 * Once the body has returned, the waiter slot's mark has the id; before,
 * the run record has it (co.id).  The task may end meanwhile and its run
 * record go back to its cache, be made another task's (and a trim may
 * unmap its chunk): the end puts the mark in the slot before its record
 * can go back (task_run.c), so an id read while the slot, looked at
 * after it, has no mark yet is this task's.  Acquire on the id: it pairs
 * with task_new's release, so that an id written by a record made again
 * after the mark would show us the mark.  The chunk stays mapped while
 * the caller holds the records' walk.
 */
uint64_t weft__handle_id_walking(const struct weft_task *h)
{
    for (;;) {
        uintptr_t w = atomic_load_explicit(&((struct weft_task *)h)->waiter,
                                           memory_order_acquire);
        if (weft__waiter_ended(w))
            return w >> 2;
        uint64_t id = atomic_load_explicit(&weft__handle_run(h)->co.id,
                                           memory_order_acquire);
        if (!weft__waiter_ended(atomic_load_explicit(
                &((struct weft_task *)h)->waiter, memory_order_relaxed)))
            return id;
    }
}

uint64_t weft__handle_id(const struct weft_task *h)
{
    uintptr_t w = atomic_load_explicit(&((struct weft_task *)h)->waiter,
                                       memory_order_acquire);
    if (weft__waiter_ended(w))
        return w >> 2;
    weft__records_walk_begin();
    uint64_t id = weft__handle_id_walking(h);
    weft__records_walk_end();
    return id;
}

WEFT_EXPORT uint64_t weft_task_id(const weft_task *h)
{
    return h ? weft__handle_id(h) : 0;
}

WEFT_EXPORT int weft_task_set_name(const char *name)
{
    if (!name)
        return -EINVAL;
    struct weft__task *self = weft__task_current();
    if (!self)
        return -EPERM;
    struct weft__task *t = weft__task_body(self);
    /* Its run record now stays as long as its handle, for the name (a
     * running task's state word changes under others' RMWs: one of ours). */
    atomic_fetch_or_explicit(&t->done->state, WEFT__T_KEEP,
                             memory_order_relaxed);
    /* Under wait_lock: the dump copies the name under it (dump.c). */
    weft__spin_lock(&t->wait_lock);
    t->co.name = weft__coro_name_copy(weft__record_name_buf(t), name);
    weft__spin_unlock(&t->wait_lock);
    if (weft__trace_on())
        weft__trace_name(atomic_load_explicit(&t->co.id, memory_order_relaxed),
                         t->co.name);
    return 0;
}
