/*
 * test_errors.c — every error code each public function's header
 * documents, made to happen: one table row per (function, condition), the
 * call made in that condition, its return checked, and after a refused
 * call a check that the objects involved are as they were and still work.
 * Bad input first (each invalid argument a header names), then every other
 * documented code (a timeout, a cancellation, a closed channel...).
 *
 * A row says in which context the call is made (`where`): a plain thread,
 * a standalone coroutine, a task spawned on a pool, or a lazy task that
 * weft_sync_wait runs on the main thread with no pool.  The same call in
 * several contexts is several rows (the "wrong context" errors).  Rows
 * whose code needs memory to run out (-ENOMEM) run only in the
 * fault-injection build (-Dfault_injection=true, suite 'fault'), where
 * every allocation can be made to fail (base/alloc.h); elsewhere they are
 * skipped, but listed.
 *
 * docs/errors.md holds this table: `test_errors --table` prints it as
 * markdown, `test_errors --list` as (function, code) lines, and the test
 * 'errors_documented' (check_errors.py) checks that the headers, this table
 * and the document say the same.  A row whose code has no name fails here.
 *
 * Not in the table: a handle used after it was consumed (await, sync_wait,
 * detach) and a coroutine used after weft_coro_destroy.  Both records are
 * recycled at once, so such a use cannot be told from a use of the new
 * owner's object; it is undefined, as a use after free() is.
 */
#include "../pool/wt.h"

#include <weft/weft.h>

#include "base/alloc.h"
#include "ctx/stack.h"
#include "io/blocking_threads.h"
#include "sched/task.h"
#include "sync/objects.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

static weft_pool *g_pool; /* 2 workers, for the rows that need a pool */

static int sentinel_obj;
#define OLD ((void *)&sentinel_obj) /* "not written by the refused call" */

static void *times3(void *arg) { return P(I(arg) * 3); }
static void *ret_arg(void *arg) { return arg; }
static void *noop(void *arg) { (void)arg; return NULL; }

/* ------------------------------------------------------------------ */
/* Fixtures that several rows share                                     */

/* A coroutine that runs on another thread, blocked there until released. */
struct elsewhere {
    weft_coro *co;
    weft_event started, release;
    pthread_t th;
    int rc;
    void *out;
};

static void *elsewhere_body(void *arg)
{
    struct elsewhere *e = arg;
    weft_event_set(&e->started);
    CHECK_EQ(weft_event_wait(&e->release), 0);
    return P(55);
}

static void *elsewhere_thread(void *arg)
{
    struct elsewhere *e = arg;
    e->rc = weft_coro_resume(e->co, e, &e->out);
    return NULL;
}

static void elsewhere_begin(struct elsewhere *e)
{
    weft_event_init(&e->started);
    weft_event_init(&e->release);
    CHECK_EQ(weft_coro_create(&e->co, elsewhere_body, NULL), 0);
    CHECK_EQ(pthread_create(&e->th, NULL, elsewhere_thread, e), 0);
    CHECK_EQ(weft_event_wait(&e->started), 0);
}

/* The refused call left it running there: it finishes normally. */
static void elsewhere_end(struct elsewhere *e)
{
    CHECK_EQ(weft_coro_status(e->co), WEFT_CORO_RUNNING);
    weft_event_set(&e->release);
    CHECK_EQ(pthread_join(e->th, NULL), 0);
    CHECK_EQ(e->rc, 0);
    CHECK_EQ(I(e->out), 55);
    CHECK_EQ(weft_coro_status(e->co), WEFT_CORO_DEAD);
    CHECK_EQ(weft_coro_destroy(e->co), 0);
}

/* A pool whose destroy has begun on another thread and cannot finish
 * until released (one of its tasks waits on `release`). */
struct dying {
    weft_pool *p;
    weft_event release;
    pthread_t th;
    int rc;
};

static void *wait_event(void *arg)
{
    CHECK_EQ(weft_event_wait(arg), 0);
    return NULL;
}

static void *dying_thread(void *arg)
{
    struct dying *d = arg;
    d->rc = weft_pool_destroy(d->p);
    return NULL;
}

static void dying_begin(struct dying *d)
{
    weft_pool_opts o = {.threads = 1, .stack_size = 0, .name = "dying"};
    CHECK_EQ(weft_pool_create(&d->p, &o), 0);
    weft_event_init(&d->release);
    CHECK_EQ(weft_spawn(NULL, d->p, wait_event, &d->release, NULL), 0);
    CHECK_EQ(pthread_create(&d->th, NULL, dying_thread, d), 0);
    /* Spawning from outside fails once the destroy has begun. */
    int rc;
    while ((rc = weft_spawn(NULL, d->p, noop, NULL, NULL)) == 0)
        sched_yield();
    CHECK_EQ(rc, -ESHUTDOWN);
}

static void dying_end(struct dying *d)
{
    weft_event_set(&d->release);
    CHECK_EQ(pthread_join(d->th, NULL), 0);
    CHECK_EQ(d->rc, 0);
}

/* A task handle a call left unconsumed, for the row's `after` step. */
static weft_task *g_pending;

/* Outer and inner coroutine of the NORMAL rows. */
static weft_coro *g_outer;
typedef int (*inner_call)(weft_coro *outer);

static void *inner_body(void *arg)
{
    inner_call call = *(inner_call *)arg;
    CHECK_EQ(weft_coro_status(g_outer), WEFT_CORO_NORMAL);
    int rc = call(g_outer);
    CHECK_EQ(weft_coro_status(g_outer), WEFT_CORO_NORMAL);
    return P(rc);
}

/* In a coroutine: run call(the current coroutine, now NORMAL) in a
 * coroutine it resumes. */
static int from_inner(inner_call call)
{
    g_outer = weft_coro_current();
    weft_coro *inner;
    CHECK_EQ(weft_coro_create(&inner, inner_body, NULL), 0);
    void *out = OLD;
    CHECK_EQ(weft_coro_resume(inner, &call, &out), 0);
    CHECK_EQ(weft_coro_status(inner), WEFT_CORO_DEAD);
    CHECK_EQ(weft_coro_destroy(inner), 0);
    return (int)I(out);
}

/* ------------------------------------------------------------------ */
/* The calls: each makes one refused call, checks what it left, and     */
/* returns what the call returned.                                      */

/* error.h */

static int strerror_unknown(void)
{
    return strcmp(weft_strerror(4095), "unknown error");
}

static int strerror_int_min(void)
{
    return strcmp(weft_strerror(INT_MIN), "unknown error");
}

/* coro.h */

static int coro_create_out_null(void)
{
    return weft_coro_create(NULL, ret_arg, NULL);
}

static int coro_create_fn_null(void)
{
    weft_coro *co = OLD;
    int rc = weft_coro_create(&co, NULL, NULL);
    CHECK_PTR_EQ(co, OLD);
    return rc;
}

static int coro_create_with_stack(size_t size)
{
    weft_coro_opts o = {.stack_size = size, .name = "big"};
    weft_coro *co = OLD;
    int rc = weft_coro_create(&co, ret_arg, &o);
    CHECK_PTR_EQ(co, OLD);
    return rc;
}

static int coro_create_stack_1g(void)
{
    return coro_create_with_stack(((size_t)1 << 30) + 1);
}

static int coro_create_stack_max(void)
{
    return coro_create_with_stack(SIZE_MAX);
}

/* resume and transfer take the same arguments: a refused call of either
 * must not write *out. */
typedef int (*switch_fn)(weft_coro *co, void *in, void **out);

static int refused_switch(switch_fn fn, weft_coro *co)
{
    void *out = OLD;
    int rc = fn(co, P(1), &out);
    CHECK_PTR_EQ(out, OLD);
    return rc;
}

static int switch_to_dead(switch_fn fn)
{
    weft_coro *co;
    CHECK_EQ(weft_coro_create(&co, ret_arg, NULL), 0);
    CHECK_EQ(weft_coro_resume(co, P(1), NULL), 0);
    int rc = refused_switch(fn, co);
    CHECK_EQ(weft_coro_status(co), WEFT_CORO_DEAD);
    CHECK_EQ(weft_coro_destroy(co), 0);
    return rc;
}

/* In a coroutine or a task: to the current one, which is RUNNING. */
static int switch_to_current(switch_fn fn)
{
    weft_coro *me = weft_coro_current();
    int rc = refused_switch(fn, me);
    CHECK_PTR_EQ(weft_coro_current(), me);
    CHECK_EQ(weft_coro_status(me), WEFT_CORO_RUNNING);
    return rc;
}

static int switch_elsewhere(switch_fn fn)
{
    struct elsewhere e;
    elsewhere_begin(&e);
    int rc = refused_switch(fn, e.co);
    elsewhere_end(&e);
    return rc;
}

static int coro_resume_null(void)
{
    return refused_switch(weft_coro_resume, NULL);
}

static int coro_resume_dead(void) { return switch_to_dead(weft_coro_resume); }

static int coro_resume_current(void)
{
    return switch_to_current(weft_coro_resume);
}

static int resume_outer(weft_coro *outer)
{
    return refused_switch(weft_coro_resume, outer);
}

static int coro_resume_normal(void) { return from_inner(resume_outer); }

static int coro_resume_elsewhere(void)
{
    return switch_elsewhere(weft_coro_resume);
}

static int coro_yield(void)
{
    void *in = OLD;
    int rc = weft_coro_yield(P(1), &in);
    CHECK_PTR_EQ(in, OLD);
    return rc;
}

/* A coroutine being destroyed: its pending yield returned -ECANCELED, and
 * `second` is what its next yield or transfer returns. */
static int g_first, g_second;
static weft_coro *g_target;

static void *cancelled_yields(void *arg)
{
    (void)arg;
    void *in = OLD;
    g_first = weft_coro_yield(P(1), NULL);
    g_second = weft_coro_yield(P(2), &in);
    CHECK_PTR_EQ(in, OLD);
    return NULL;
}

static void *cancelled_transfers(void *arg)
{
    (void)arg;
    void *out = OLD;
    g_first = weft_coro_yield(P(1), NULL);
    g_second = weft_coro_transfer(g_target, P(2), &out);
    CHECK_PTR_EQ(out, OLD);
    return NULL;
}

static int destroy_started(weft_fn body)
{
    weft_coro *co;
    CHECK_EQ(weft_coro_create(&co, body, NULL), 0);
    void *out = NULL;
    CHECK_EQ(weft_coro_resume(co, NULL, &out), 0);
    CHECK_EQ(I(out), 1);
    g_first = g_second = 0;
    CHECK_EQ(weft_coro_destroy(co), 0);
    CHECK_EQ(g_first, -ECANCELED);
    return g_second;
}

static int coro_yield_cancelled(void)
{
    return destroy_started(cancelled_yields);
}

static int coro_transfer_null(void)
{
    return refused_switch(weft_coro_transfer, NULL);
}

/* A coroutine the refused transfer must not have started: its first
 * resume still passes fn's argument. */
static void check_never_started(weft_coro *co)
{
    CHECK_EQ(weft_coro_status(co), WEFT_CORO_SUSPENDED);
    void *out = OLD;
    CHECK_EQ(weft_coro_resume(co, P(9), &out), 0);
    CHECK_EQ(I(out), 9);
    CHECK_EQ(weft_coro_status(co), WEFT_CORO_DEAD);
    CHECK_EQ(weft_coro_destroy(co), 0);
}

static int coro_transfer_suspended(void)
{
    weft_coro *co;
    CHECK_EQ(weft_coro_create(&co, ret_arg, NULL), 0);
    void *out = OLD;
    int rc = weft_coro_transfer(co, P(1), &out);
    CHECK_PTR_EQ(out, OLD);
    check_never_started(co);
    return rc;
}

static int coro_transfer_dead(void)
{
    return switch_to_dead(weft_coro_transfer);
}

static int coro_transfer_self(void)
{
    return switch_to_current(weft_coro_transfer);
}

static int transfer_outer(weft_coro *outer)
{
    return refused_switch(weft_coro_transfer, outer);
}

static int coro_transfer_normal(void) { return from_inner(transfer_outer); }

static int coro_transfer_elsewhere(void)
{
    return switch_elsewhere(weft_coro_transfer);
}

static int coro_transfer_cancelled(void)
{
    CHECK_EQ(weft_coro_create(&g_target, ret_arg, NULL), 0);
    int rc = destroy_started(cancelled_transfers);
    check_never_started(g_target);
    return rc;
}

static int coro_destroy_null(void) { return weft_coro_destroy(NULL); }

/* In a coroutine or a task: nothing is freed, it keeps running. */
static int coro_destroy_current(void)
{
    weft_coro *me = weft_coro_current();
    int rc = weft_coro_destroy(me);
    CHECK_PTR_EQ(weft_coro_current(), me);
    CHECK_EQ(weft_coro_status(me), WEFT_CORO_RUNNING);
    return rc;
}

static int destroy_outer(weft_coro *outer) { return weft_coro_destroy(outer); }

static int coro_destroy_normal(void) { return from_inner(destroy_outer); }

static int coro_destroy_elsewhere(void)
{
    struct elsewhere e;
    elsewhere_begin(&e);
    int rc = weft_coro_destroy(e.co);
    elsewhere_end(&e);
    return rc;
}

static int coro_status_null(void) { return (int)weft_coro_status(NULL); }

static int coro_name_null(void) { return strcmp(weft_coro_name(NULL), ""); }

/* pool.h */

static int pool_create_out_null(void)
{
    weft_pool_opts o = {.threads = 1, .stack_size = 0, .name = NULL};
    return weft_pool_create(NULL, &o);
}

static int pool_create_with(unsigned threads, size_t stack)
{
    weft_pool_opts o = {.threads = threads, .stack_size = stack, .name = NULL};
    weft_pool *p = OLD;
    int rc = weft_pool_create(&p, &o);
    CHECK_PTR_EQ(p, OLD);
    return rc;
}

static int pool_create_threads(void) { return pool_create_with(1025, 0); }

static int pool_create_stack(void)
{
    return pool_create_with(1, ((size_t)1 << 30) + 1);
}

static int pool_destroy_null(void) { return weft_pool_destroy(NULL); }

/* In a task on g_pool: refused, and the pool still runs tasks. */
static int pool_destroy_own(void)
{
    int rc = weft_pool_destroy(weft_pool_current());
    weft_task *t;
    CHECK_EQ(weft_spawn(&t, g_pool, times3, P(5), NULL), 0);
    void *r = OLD;
    CHECK_EQ(weft_await(t, &r), 0);
    CHECK_EQ(I(r), 15);
    return rc;
}

static int pool_destroy_twice(void)
{
    struct dying d;
    dying_begin(&d);
    int rc = weft_pool_destroy(d.p);
    dying_end(&d);
    return rc;
}

static int pool_threads_null(void) { return (int)weft_pool_threads(NULL); }

/* task.h */

static int task_create_out_null(void)
{
    return weft_task_create(NULL, times3, P(1), NULL);
}

static int task_create_fn_null(void)
{
    weft_task *t = OLD;
    int rc = weft_task_create(&t, NULL, P(1), NULL);
    CHECK_PTR_EQ(t, OLD);
    return rc;
}

static int task_create_stack(void)
{
    weft_task_opts o = {.stack_size = ((size_t)1 << 30) + 1, .name = NULL};
    weft_task *t = OLD;
    int rc = weft_task_create(&t, times3, P(1), &o);
    CHECK_PTR_EQ(t, OLD);
    return rc;
}

/* create_with: *out and *room untouched on a refusal. */
static int task_create_with_out_null(void)
{
    void *room = OLD;
    int rc = weft_task_create_with(NULL, times3, 8, &room, NULL);
    CHECK_PTR_EQ(room, OLD);
    return rc;
}

static int task_create_with_fn_null(void)
{
    weft_task *t = OLD;
    void *room = OLD;
    int rc = weft_task_create_with(&t, NULL, 8, &room, NULL);
    CHECK_PTR_EQ(t, OLD);
    CHECK_PTR_EQ(room, OLD);
    return rc;
}

static int task_create_with_room_null(void)
{
    weft_task *t = OLD;
    int rc = weft_task_create_with(&t, times3, 8, NULL, NULL);
    CHECK_PTR_EQ(t, OLD);
    return rc;
}

static int task_create_with_stack(void)
{
    weft_task_opts o = {.stack_size = ((size_t)1 << 30) + 1, .name = NULL};
    weft_task *t = OLD;
    void *room = OLD;
    int rc = weft_task_create_with(&t, times3, 8, &room, &o);
    CHECK_PTR_EQ(t, OLD);
    CHECK_PTR_EQ(room, OLD);
    return rc;
}

static int task_start_null(void) { return weft_task_start(NULL, g_pool); }

/* A lazy task and no pool: still lazy afterwards, so it runs when waited
 * for (and then on this thread: 7 * 3 = 21). */
static int task_start_pool_null(void)
{
    weft_task *t;
    CHECK_EQ(weft_task_create(&t, times3, P(7), NULL), 0);
    int rc = weft_task_start(t, NULL);
    void *r = OLD;
    CHECK_EQ(weft_sync_wait(t, &r), 0);
    CHECK_EQ(I(r), 21);
    return rc;
}

/* An eager task is no lazy one to start (after_pending takes it). */
static int task_start_spawned(void)
{
    CHECK_EQ(weft_spawn(&g_pending, g_pool, times3, P(7), NULL), 0);
    return weft_task_start(g_pending, g_pool);
}

/* A lazy task that was started already (by this same call, once). */
static int task_start_twice(void)
{
    CHECK_EQ(weft_task_create(&g_pending, times3, P(7), NULL), 0);
    CHECK_EQ(weft_task_start(g_pending, g_pool), 0);
    return weft_task_start(g_pending, g_pool);
}

static int task_join_null(void) { return weft_task_join(NULL); }

/* A task body that joins its own handle (see await_own_handle). */
static void *join_own_handle(void *arg)
{
    return P(weft_task_join(*(weft_task **)arg));
}

static int task_join_self(void)
{
    weft_task *t;
    CHECK_EQ(weft_spawn(&t, g_pool, join_own_handle, &t, NULL), 0);
    void *r = OLD;
    CHECK_EQ(weft_sync_wait(t, &r), 0);
    return (int)I(r);
}

/* In a coroutine: the handle is left for after_pending. */
static int task_join_spawned(void)
{
    CHECK_EQ(weft_spawn(&g_pending, g_pool, times3, P(7), NULL), 0);
    return weft_task_join(g_pending);
}

static int spawn_pool_null(void)
{
    weft_task *t = OLD;
    int rc = weft_spawn(&t, NULL, times3, P(1), NULL);
    CHECK_PTR_EQ(t, OLD);
    return rc;
}

static int spawn_fn_null(void)
{
    weft_task *t = OLD;
    int rc = weft_spawn(&t, g_pool, NULL, P(1), NULL);
    CHECK_PTR_EQ(t, OLD);
    return rc;
}

static int spawn_shutdown(void)
{
    struct dying d;
    dying_begin(&d);
    weft_task *t = OLD;
    int rc = weft_spawn(&t, d.p, times3, P(1), NULL);
    CHECK_PTR_EQ(t, OLD);
    dying_end(&d);
    return rc;
}

/* weft_spawn_with and weft_task_take: a room that holds an int, which
 * room_times3 triples (7: 21, as after_pending wants). */
static int fills; /* fill calls: a refused call makes none, but for "fill
                     refuses" */

static int fill_seven(void *room, void *arg)
{
    (void)arg;
    fills++;
    *(intptr_t *)room = 7;
    return 0;
}

static int fill_refuses(void *room, void *arg)
{
    (void)room;
    (void)arg;
    fills++;
    return -ENOMEM;
}

static void *room_times3(void *room) { return P(*(intptr_t *)room * 3); }

static void take_none(void *room, void *result, void *arg)
{
    (void)room;
    (void)result;
    *(int *)arg += 1;
}

/* spawn_with refused: *out untouched, fill not called, and the pool
 * still runs a spawn. */
static int spawn_with_call(weft_task **out, weft_pool *p, weft_fn fn,
                           weft_fill_fn fill, const weft_task_opts *o)
{
    fills = 0;
    int rc = weft_spawn_with(out, p, fn, sizeof(intptr_t), fill, NULL, o);
    if (out)
        CHECK_PTR_EQ(*out, OLD);
    CHECK_EQ(fills, fill == fill_refuses ? 1 : 0);
    return rc;
}

static int spawn_with_out_null(void)
{
    return spawn_with_call(NULL, g_pool, room_times3, fill_seven, NULL);
}

static int spawn_with_pool_null(void)
{
    weft_task *t = OLD;
    return spawn_with_call(&t, NULL, room_times3, fill_seven, NULL);
}

static int spawn_with_fn_null(void)
{
    weft_task *t = OLD;
    return spawn_with_call(&t, g_pool, NULL, fill_seven, NULL);
}

static int spawn_with_fill_null(void)
{
    weft_task *t = OLD;
    return spawn_with_call(&t, g_pool, room_times3, NULL, NULL);
}

static int spawn_with_stack(void)
{
    weft_task_opts o = {.stack_size = ((size_t)1 << 30) + 1, .name = NULL};
    weft_task *t = OLD;
    return spawn_with_call(&t, g_pool, room_times3, fill_seven, &o);
}

static int spawn_with_shutdown(void)
{
    struct dying d;
    dying_begin(&d);
    weft_task *t = OLD;
    int rc = spawn_with_call(&t, d.p, room_times3, fill_seven, NULL);
    dying_end(&d);
    return rc;
}

/* fill's own code comes back, and nothing was queued: the pool's next
 * spawn_with runs as usual. */
static int spawn_with_fill_refuses(void)
{
    weft_task *t = OLD;
    int rc = spawn_with_call(&t, g_pool, room_times3, fill_refuses, NULL);
    CHECK_EQ(weft_spawn_with(&t, g_pool, room_times3, sizeof(intptr_t),
                             fill_seven, NULL, NULL), 0);
    void *r = OLD;
    CHECK_EQ(weft_sync_wait(t, &r), 0);
    CHECK_EQ(I(r), 21);
    return rc;
}

/* spawn_copy refused: *out untouched, and the caller's bytes too. */
static int spawn_copy_call(weft_task **out, weft_pool *p, weft_fn fn,
                           const intptr_t *src, size_t size,
                           const weft_task_opts *o)
{
    int rc = weft_spawn_copy(out, p, fn, src, size, o);
    if (out)
        CHECK_PTR_EQ(*out, OLD);
    if (src)
        CHECK_EQ(*src, 7);
    return rc;
}

static const intptr_t seven = 7;

static int spawn_copy_out_null(void)
{
    return spawn_copy_call(NULL, g_pool, room_times3, &seven, sizeof seven,
                           NULL);
}

static int spawn_copy_pool_null(void)
{
    weft_task *t = OLD;
    return spawn_copy_call(&t, NULL, room_times3, &seven, sizeof seven, NULL);
}

static int spawn_copy_fn_null(void)
{
    weft_task *t = OLD;
    return spawn_copy_call(&t, g_pool, NULL, &seven, sizeof seven, NULL);
}

static int spawn_copy_src_null(void)
{
    weft_task *t = OLD;
    return spawn_copy_call(&t, g_pool, room_times3, NULL, sizeof seven, NULL);
}

static int spawn_copy_stack(void)
{
    weft_task_opts o = {.stack_size = ((size_t)1 << 30) + 1, .name = NULL};
    weft_task *t = OLD;
    return spawn_copy_call(&t, g_pool, room_times3, &seven, sizeof seven, &o);
}

static int spawn_copy_shutdown(void)
{
    struct dying d;
    dying_begin(&d);
    weft_task *t = OLD;
    int rc = spawn_copy_call(&t, d.p, room_times3, &seven, sizeof seven, NULL);
    dying_end(&d);
    return rc;
}

static int task_room_null(void) { return weft_task_room(NULL) != NULL; }

static int task_room_none(void)
{
    weft_task *t;
    CHECK_EQ(weft_spawn(&t, g_pool, times3, P(7), NULL), 0);
    int rc = weft_task_room(t) != NULL;
    void *r = OLD;
    CHECK_EQ(weft_sync_wait(t, &r), 0);
    CHECK_EQ(I(r), 21);
    return rc;
}

static int task_take_null(void)
{
    int n = 0;
    int rc = weft_task_take(NULL, take_none, &n);
    CHECK_EQ(n, 0);
    return rc;
}

/* Refused: the handle is not consumed (after_pending takes it). */
static int task_take_take_null(void)
{
    CHECK_EQ(weft_spawn_with(&g_pending, g_pool, room_times3,
                             sizeof(intptr_t), fill_seven, NULL, NULL), 0);
    return weft_task_take(g_pending, NULL, NULL);
}

static int task_take_no_room(void)
{
    CHECK_EQ(weft_spawn(&g_pending, g_pool, times3, P(7), NULL), 0);
    int n = 0;
    int rc = weft_task_take(g_pending, take_none, &n);
    CHECK_EQ(n, 0);
    return rc;
}

/* A task body that takes its own handle (see await_own_handle). */
static void *take_own_handle(void *room)
{
    int n = 0;
    int rc = weft_task_take(*(weft_task **)room, take_none, &n);
    CHECK_EQ(n, 0);
    return P(rc);
}

static int fill_handle_slot(void *room, void *arg)
{
    *(weft_task ***)room = arg;
    return 0;
}

static void *take_own_handle_at(void *room)
{
    return take_own_handle(*(weft_task ***)room);
}

static int task_take_self(void)
{
    weft_task *t;
    CHECK_EQ(weft_spawn_with(&t, g_pool, take_own_handle_at,
                             sizeof(weft_task **), fill_handle_slot, &t,
                             NULL), 0);
    void *r = OLD;
    CHECK_EQ(weft_sync_wait(t, &r), 0);
    return (int)I(r);
}

/* In a coroutine: the handle is left for after_pending. */
static int task_take_spawned(void)
{
    CHECK_EQ(weft_spawn_with(&g_pending, g_pool, room_times3,
                             sizeof(intptr_t), fill_seven, NULL, NULL), 0);
    int n = 0;
    int rc = weft_task_take(g_pending, take_none, &n);
    CHECK_EQ(n, 0);
    return rc;
}

/* weft_task_result: as weft_task_take's rows, without the room. */
static int task_result_null(void)
{
    void *r = OLD;
    int rc = weft_task_result(NULL, &r);
    CHECK_PTR_EQ(r, OLD);
    return rc;
}

/* Refused: the handle is not consumed (after_pending takes it). */
static int task_result_result_null(void)
{
    CHECK_EQ(weft_spawn(&g_pending, g_pool, times3, P(7), NULL), 0);
    return weft_task_result(g_pending, NULL);
}

/* A task body that waits for its own handle's result. */
static void *result_own_handle(void *arg)
{
    void *r = OLD;
    int rc = weft_task_result(*(weft_task **)arg, &r);
    CHECK_PTR_EQ(r, OLD);
    return P(rc);
}

static int task_result_self(void)
{
    weft_task *t;
    CHECK_EQ(weft_spawn(&t, g_pool, result_own_handle, &t, NULL), 0);
    void *r = OLD;
    CHECK_EQ(weft_sync_wait(t, &r), 0);
    return (int)I(r);
}

/* In a coroutine: the handle is left for after_pending. */
static int task_result_spawned(void)
{
    CHECK_EQ(weft_spawn(&g_pending, g_pool, times3, P(7), NULL), 0);
    void *r = OLD;
    int rc = weft_task_result(g_pending, &r);
    CHECK_PTR_EQ(r, OLD);
    return rc;
}

static int task_fail_plain(void)
{
    return weft_task_fail();
}

static int await_null(void)
{
    void *r = OLD;
    int rc = weft_await(NULL, &r);
    CHECK_PTR_EQ(r, OLD);
    return rc;
}

/* Outside a task: the handle is left for `after_pending`. */
static int await_spawned(void)
{
    CHECK_EQ(weft_spawn(&g_pending, g_pool, times3, P(7), NULL), 0);
    void *r = OLD;
    int rc = weft_await(g_pending, &r);
    CHECK_PTR_EQ(r, OLD);
    return rc;
}

static int await_all_ts_null(void)
{
    return weft_await_all(NULL, 1, NULL);
}

/* A NULL among the handles: none is consumed (after_pending takes it). */
static int await_all_null_handle(void)
{
    CHECK_EQ(weft_spawn(&g_pending, g_pool, times3, P(7), NULL), 0);
    weft_task *ts[2] = {g_pending, NULL};
    int rc = weft_await_all(ts, 2, NULL);
    CHECK_PTR_EQ(ts[0], g_pending);
    return rc;
}

static int await_all_spawned(void)
{
    CHECK_EQ(weft_spawn(&g_pending, g_pool, times3, P(7), NULL), 0);
    weft_task *ts[1] = {g_pending};
    int rc = weft_await_all(ts, 1, NULL);
    CHECK_PTR_EQ(ts[0], g_pending);
    return rc;
}

static int task_cancel_null(void) { return weft_task_cancel(NULL); }

/* Not consumed by the refused call: sync_wait takes it, with its result. */
static void after_pending(void)
{
    void *r = OLD;
    assert_int_equal(weft_sync_wait(g_pending, &r), 0);
    assert_int_equal(I(r), 21);
}

/* A task body that awaits its own handle (passed by address: spawn
 * writes it before the task can run). */
static void *await_own_handle(void *arg)
{
    weft_task *self = *(weft_task **)arg;
    void *r = OLD;
    int rc = weft_await(self, &r);
    CHECK_PTR_EQ(r, OLD);
    return P(rc);
}

static int await_self_spawned(void)
{
    weft_task *t;
    CHECK_EQ(weft_spawn(&t, g_pool, await_own_handle, &t, NULL), 0);
    void *r = OLD;
    CHECK_EQ(weft_sync_wait(t, &r), 0);
    return (int)I(r);
}

static int await_self_lazy(void)
{
    weft_task *t;
    CHECK_EQ(weft_task_create(&t, await_own_handle, &t, NULL), 0);
    void *r = OLD;
    CHECK_EQ(weft_sync_wait(t, &r), 0);
    return (int)I(r);
}

/* On a one-worker pool, a task that spawns a child and awaits it at once
 * runs the child inline, on its own stack: the child's body is then the
 * calling task. */
static void *spawn_await_own(void *arg)
{
    (void)arg;
    weft_task *t;
    CHECK_EQ(weft_spawn(&t, weft_pool_current(), await_own_handle, &t, NULL), 0);
    void *r = OLD;
    CHECK_EQ(weft_await(t, &r), 0);
    return r;
}

static int await_self_inline(void)
{
    weft_pool *p;
    weft_pool_opts o = {.threads = 1, .stack_size = 0, .name = "inline"};
    CHECK_EQ(weft_pool_create(&p, &o), 0);
    weft_task *t;
    CHECK_EQ(weft_spawn(&t, p, spawn_await_own, NULL, NULL), 0);
    void *r = OLD;
    CHECK_EQ(weft_sync_wait(t, &r), 0);
    CHECK_EQ(weft_pool_destroy(p), 0);
    return (int)I(r);
}

static int sync_wait_null(void)
{
    void *r = OLD;
    int rc = weft_sync_wait(NULL, &r);
    CHECK_PTR_EQ(r, OLD);
    return rc;
}

/* Not on a plain thread: the handle is left for `after_pending`. */
static int sync_wait_spawned(void)
{
    CHECK_EQ(weft_spawn(&g_pending, g_pool, times3, P(7), NULL), 0);
    void *r = OLD;
    int rc = weft_sync_wait(g_pending, &r);
    CHECK_PTR_EQ(r, OLD);
    return rc;
}

static int task_detach_null(void) { return weft_task_detach(NULL); }

static int schedule_null(void)
{
    weft_pool *before = weft_pool_current();
    int rc = weft_schedule(NULL);
    CHECK_PTR_EQ(weft_pool_current(), before);
    return rc;
}

static int schedule_pool(void) { return weft_schedule(g_pool); }

/* A lazy task on the main thread tries to hop onto a dying pool. */
static weft_pool *g_dying_pool;

static void *schedule_dying(void *arg)
{
    (void)arg;
    pthread_t me = wt_self();
    int rc = weft_schedule(g_dying_pool);
    CHECK(weft_pool_current() == NULL);
    CHECK(pthread_equal(wt_self(), me));
    return P(rc);
}

static int schedule_shutdown(void)
{
    struct dying d;
    dying_begin(&d);
    g_dying_pool = d.p;
    weft_task *t;
    CHECK_EQ(weft_task_create(&t, schedule_dying, NULL, NULL), 0);
    void *r = OLD;
    CHECK_EQ(weft_sync_wait(t, &r), 0);
    dying_end(&d);
    return (int)I(r);
}

static int yield_task(void) { return weft_yield(); }

/* event.h: init and set ignore NULL; is_set says false. */

static int event_init_null(void)
{
    weft_event_init(NULL);
    return 0;
}

static int event_set_null(void)
{
    weft_event_set(NULL);
    return 0;
}

static int event_is_set_null(void) { return weft_event_is_set(NULL); }

static int event_wait_null(void) { return weft_event_wait(NULL); }

static int event_wait_for_null(void)
{
    return weft_event_wait_for(NULL, MS(1000));
}

/* ------------------------------------------------------------------ */
/* Blocking offload                                                     */

static int blocking_fn_null(void)
{
    void *r = &sentinel_obj;
    int rc = weft_blocking(NULL, NULL, &r);
    CHECK_PTR_EQ(r, &sentinel_obj); /* *result untouched */
    return rc;
}

/* ------------------------------------------------------------------ */
/* Sync primitives and the channel                                      */

static int mutex_init_null(void) { weft_mutex_init(NULL); return 0; }
static int mutex_lock_null(void) { return weft_mutex_lock(NULL); }
static int mutex_lock_for_null(void) { return weft_mutex_lock_for(NULL, MS(1)); }
static int mutex_trylock_null(void) { return weft_mutex_trylock(NULL); }
static int mutex_unlock_null(void) { return weft_mutex_unlock(NULL); }

static int mutex_unlock_free(void)
{
    weft_mutex m;
    weft_mutex_init(&m);
    int rc = weft_mutex_unlock(&m);
    CHECK_EQ(weft_mutex_trylock(&m), 0); /* still free: nothing changed */
    CHECK_EQ(weft_mutex_unlock(&m), 0);
    return rc;
}

static int mutex_relock(void)
{
    weft_mutex m;
    weft_mutex_init(&m);
    CHECK_EQ(weft_mutex_lock(&m), 0);
    int rc = weft_mutex_lock(&m);
    CHECK_EQ(weft_mutex_unlock(&m), 0); /* still held once */
    return rc;
}

static int mutex_trylock_held(void)
{
    weft_mutex m;
    weft_mutex_init(&m);
    CHECK_EQ(weft_mutex_lock(&m), 0);
    int rc = weft_mutex_trylock(&m);
    CHECK_EQ(weft_mutex_unlock(&m), 0);
    return rc;
}

static int cond_init_null(void) { weft_cond_init(NULL); return 0; }
static int cond_signal_null(void) { weft_cond_signal(NULL); return 0; }
static int cond_broadcast_null(void) { weft_cond_broadcast(NULL); return 0; }

static int cond_wait_null(void)
{
    weft_mutex m;
    weft_mutex_init(&m);
    return weft_cond_wait(NULL, &m);
}

static int cond_wait_mutex_null(void)
{
    weft_cond c;
    weft_cond_init(&c);
    return weft_cond_wait(&c, NULL);
}

static int cond_wait_unheld(void)
{
    weft_cond c;
    weft_mutex m;
    weft_cond_init(&c);
    weft_mutex_init(&m);
    return weft_cond_wait(&c, &m);
}

static int cond_wait_for_unheld(void)
{
    weft_cond c;
    weft_mutex m;
    weft_cond_init(&c);
    weft_mutex_init(&m);
    return weft_cond_wait_for(&c, &m, MS(1));
}

static int sem_init_null(void) { weft_sem_init(NULL, 1); return 0; }
static int sem_post_null(void) { weft_sem_post(NULL); return 0; }
static int sem_wait_null(void) { return weft_sem_wait(NULL); }
static int sem_wait_for_null(void) { return weft_sem_wait_for(NULL, MS(1)); }
static int sem_trywait_null(void) { return weft_sem_trywait(NULL); }

static int sem_trywait_empty(void)
{
    weft_sem s;
    weft_sem_init(&s, 0);
    return weft_sem_trywait(&s);
}

static int wait_group_init_null(void) { weft_wait_group_init(NULL); return 0; }
static int wait_group_add_null(void) { weft_wait_group_add(NULL, 1); return 0; }
static int wait_group_done_null(void) { weft_wait_group_done(NULL); return 0; }
static int wait_group_wait_null(void) { return weft_wait_group_wait(NULL); }
static int wait_group_wait_for_null(void)
{
    return weft_wait_group_wait_for(NULL, MS(1));
}

static int wait_group_done_below_zero(void)
{
    weft_wait_group wg;
    weft_wait_group_init(&wg);
    weft_wait_group_done(&wg);
    weft_wait_group_add(&wg, 1);
    weft_wait_group_done(&wg);
    return weft_wait_group_wait_for(&wg, 0); /* zero: returns at once */
}

static int chan_create_out_null(void) { return weft_chan_create(NULL, 1); }

static int chan_create_huge(void)
{
    weft_chan *ch = OLD;
    int rc = weft_chan_create(&ch, SIZE_MAX);
    CHECK_PTR_EQ(ch, OLD);
    return rc;
}

static int chan_send_null(void) { return weft_chan_send(NULL, P(1)); }
static int chan_recv_null(void)
{
    void *v = OLD;
    return weft_chan_recv(NULL, &v);
}
static int chan_close_null(void) { weft_chan_close(NULL); return 0; }
static int chan_destroy_null(void) { return weft_chan_destroy(NULL); }

/* A channel of capacity 1 holding one value, for the cases below. */
static weft_chan *chan_full(void)
{
    weft_chan *ch = NULL;
    CHECK_EQ(weft_chan_create(&ch, 1), 0);
    CHECK_EQ(weft_chan_send(ch, P(5)), 0);
    return ch;
}

static int chan_recv_v_null(void)
{
    weft_chan *ch = chan_full();
    int rc = weft_chan_recv(ch, NULL);
    void *v = NULL;
    CHECK_EQ(weft_chan_try_recv(ch, &v), 0); /* the value is still there */
    CHECK_PTR_EQ(v, P(5));
    CHECK_EQ(weft_chan_destroy(ch), 0);
    return rc;
}

static int chan_try_send_full(void)
{
    weft_chan *ch = chan_full();
    int rc = weft_chan_try_send(ch, P(6));
    void *v = NULL;
    CHECK_EQ(weft_chan_try_recv(ch, &v), 0);
    CHECK_PTR_EQ(v, P(5));
    CHECK_EQ(weft_chan_destroy(ch), 0);
    return rc;
}

static int chan_try_recv_empty(void)
{
    weft_chan *ch = NULL;
    CHECK_EQ(weft_chan_create(&ch, 1), 0);
    void *v = OLD;
    int rc = weft_chan_try_recv(ch, &v);
    CHECK_PTR_EQ(v, OLD);
    CHECK_EQ(weft_chan_destroy(ch), 0);
    return rc;
}

static int chan_send_closed(void)
{
    weft_chan *ch = NULL;
    CHECK_EQ(weft_chan_create(&ch, 1), 0);
    weft_chan_close(ch);
    int rc = weft_chan_send(ch, P(1));
    CHECK_EQ(weft_chan_destroy(ch), 0);
    return rc;
}

static int chan_recv_closed_drained(void)
{
    weft_chan *ch = chan_full();
    weft_chan_close(ch);
    void *v = NULL;
    CHECK_EQ(weft_chan_recv(ch, &v), 0); /* the buffer drains first */
    CHECK_PTR_EQ(v, P(5));
    v = OLD;
    int rc = weft_chan_recv(ch, &v);
    CHECK_PTR_EQ(v, OLD);
    CHECK_EQ(weft_chan_destroy(ch), 0);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Socket I/O                                                           */

static int wait_fd_bad(void) { return weft_wait_fd(-1, WEFT_IN); }

static int wait_fd_no_events(void)
{
    int p[2];
    CHECK_EQ(pipe(p), 0);
    int rc = weft_wait_fd_for(p[0], 0, 0);
    close(p[0]);
    close(p[1]);
    return rc;
}

static int wait_fd_other_bits(void)
{
    int p[2];
    CHECK_EQ(pipe(p), 0);
    int rc = weft_wait_fd_for(p[0], WEFT_IN | 2, 0);
    close(p[0]);
    close(p[1]);
    return rc;
}

static int read_bad_fd(void)
{
    char c;
    return (int)weft_read(-1, &c, 1);
}

static int write_bad_fd(void) { return (int)weft_write(-1, "x", 1); }

static int write_huge(void)
{
    int p[2];
    CHECK_EQ(pipe(p), 0);
    int rc = (int)weft_write_for(p[1], "x", (size_t)SSIZE_MAX + 1, 0);
    weft_close(p[0]);
    weft_close(p[1]);
    return rc;
}

static int accept_bad_fd(void) { return weft_accept(-1, NULL, NULL); }

static int connect_bad_fd(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    return weft_connect(-1, (const struct sockaddr *)&a, sizeof a);
}

static int close_bad_fd(void) { return weft_close(-1); }

/* Nothing to read, no wait allowed: the pipe's end stays open and usable
 * (non-blocking: a borrowed pipe must be, to be read). */
static int read_timeout_zero(void)
{
    int p[2];
    CHECK_EQ(pipe2(p, O_NONBLOCK), 0);
    char c;
    int rc = (int)weft_read_for(p[0], &c, 1, 0);
    CHECK_EQ(weft_write_for(p[1], "y", 1, 0), 1);
    CHECK_EQ(weft_read_for(p[0], &c, 1, 0), 1);
    weft_close(p[0]);
    weft_close(p[1]);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Beyond bad input: the other documented codes                         */

/* In a task: cancel it, so that its next wait ends at once. */
static void cancel_self(void)
{
    CHECK_EQ(weft_task_cancel(weft_task_current()), 0);
}

#define NEVER MS(60000) /* a timeout that must not be the one that ends it */

/* Allocations fail during `stmt` (fault-injection build only). */
#ifdef WEFT_FAULT_INJECTION
#define OUT_OF_MEMORY(stmt)                                             \
    do {                                                                \
        weft__fault_fail_all(true);                                     \
        stmt;                                                           \
        weft__fault_fail_all(false);                                    \
    } while (0)
#endif

/* version.h, coro.h, pool.h, task.h: calls that cannot fail */

static int version_value(void) { return weft_version() == WEFT_VERSION ? 0 : 1; }

static int version_string_value(void)
{
    return strcmp(weft_version_string(), WEFT_VERSION_STRING);
}

static int coro_current_in_task(void) { return weft_coro_current() != NULL; }
static int pool_current_plain(void) { return weft_pool_current() != NULL; }
static int task_current_plain(void) { return weft_task_current() != NULL; }
static int task_cancelled_plain(void) { return weft_task_cancelled(); }
static int task_name_null(void) { return strcmp(weft_task_name(NULL), ""); }

static int overflow_disable(void)
{
    weft_overflow_handler_disable();
    weft_overflow_handler_disable(); /* again: harmless */
    return 0;
}

/* task.h: the awaits */

static void *wait_for_release(void *arg)
{
    CHECK_EQ(weft_event_wait_for(arg, NEVER), 0);
    return P(21);
}

static weft_event g_release;

/* A spawned task that runs until g_release is set (after_release sets it
 * and takes the handle). */
static weft_task *spawn_held(void)
{
    weft_event_init(&g_release);
    CHECK_EQ(weft_spawn(&g_pending, g_pool, wait_for_release, &g_release,
                        NULL), 0);
    return g_pending;
}

static void after_release(void)
{
    weft_event_set(&g_release);
    after_pending();
}

static int await_cancelled(void)
{
    weft_task *t = spawn_held();
    cancel_self();
    void *r = OLD;
    int rc = weft_await(t, &r);
    CHECK_PTR_EQ(r, OLD);
    return rc;
}

static int task_join_cancelled(void)
{
    weft_task *t = spawn_held();
    cancel_self();
    return weft_task_join(t);
}

/* A room task that runs until g_release is set, taken in a cancelled
 * task: refused, not consumed (after_release takes it). */
static int fill_release(void *room, void *arg)
{
    *(weft_event **)room = arg;
    return 0;
}

static void *room_wait_for_release(void *room)
{
    return wait_for_release(*(weft_event **)room);
}

static int task_result_cancelled(void)
{
    weft_task *t = spawn_held();
    cancel_self();
    void *r = OLD;
    int rc = weft_task_result(t, &r);
    CHECK_PTR_EQ(r, OLD);
    return rc;
}

static int task_take_cancelled(void)
{
    weft_event_init(&g_release);
    CHECK_EQ(weft_spawn_with(&g_pending, g_pool, room_wait_for_release,
                             sizeof(weft_event *), fill_release, &g_release,
                             NULL), 0);
    cancel_self();
    int n = 0;
    int rc = weft_task_take(g_pending, take_none, &n);
    CHECK_EQ(n, 0);
    return rc;
}

/* One waiter at a time (weft.h, "Handles and ownership").  A held task
 * (as spawn_held's, or with a room), started, and a task parked joining
 * it (g_joiner): a second wait gets -EBUSY and changes nothing.  The
 * joiner is known to be parked once a probe's timed await is refused; a
 * probe that gets in first times out and leaves, and the joiner, refused
 * meanwhile, tries again. */
static weft_event g_held_started;
static weft_task *g_joiner;

static void *held_started(void *arg)
{
    weft_event_set(&g_held_started);
    return wait_for_release(arg);
}

static void *room_held_started(void *room)
{
    return held_started(*(weft_event **)room);
}

static void *join_until_parked(void *arg)
{
    int rc;
    while ((rc = weft_task_join(arg)) == -EBUSY)
        CHECK_EQ(weft_yield(), 0);
    return P(rc);
}

static void *probe_until_busy(void *arg)
{
    int rc;
    while ((rc = weft_await_for(arg, NULL, MS(1))) == -ETIMEDOUT)
        ;
    return P(rc);
}

static weft_task *held_with_waiter(bool room)
{
    weft_event_init(&g_release);
    weft_event_init(&g_held_started);
    if (room)
        CHECK_EQ(weft_spawn_with(&g_pending, g_pool, room_held_started,
                                 sizeof(weft_event *), fill_release,
                                 &g_release, NULL), 0);
    else
        CHECK_EQ(weft_spawn(&g_pending, g_pool, held_started, &g_release,
                            NULL), 0);
    /* Started: no join runs it inline (and so stays out of its slot). */
    CHECK_EQ(weft_event_wait(&g_held_started), 0);
    CHECK_EQ(weft_spawn(&g_joiner, g_pool, join_until_parked, g_pending,
                        NULL), 0);
    weft_task *probe;
    CHECK_EQ(weft_spawn(&probe, g_pool, probe_until_busy, g_pending, NULL),
             0);
    void *r = OLD;
    if (weft_task_current())
        CHECK_EQ(weft_await(probe, &r), 0);
    else
        CHECK_EQ(weft_sync_wait(probe, &r), 0);
    CHECK_EQ(I(r), -EBUSY);
    return g_pending;
}

static void after_release_joined(void)
{
    weft_event_set(&g_release);
    void *r = OLD;
    assert_int_equal(weft_sync_wait(g_joiner, &r), 0);
    assert_int_equal(I(r), 0);
    after_pending();
}

static int task_join_busy(void) { return weft_task_join(held_with_waiter(false)); }

static int task_take_busy(void)
{
    int n = 0;
    int rc = weft_task_take(held_with_waiter(true), take_none, &n);
    CHECK_EQ(n, 0);
    return rc;
}

static int task_result_busy(void)
{
    void *r = OLD;
    int rc = weft_task_result(held_with_waiter(false), &r);
    CHECK_PTR_EQ(r, OLD);
    return rc;
}

static int await_busy(void)
{
    void *r = OLD;
    int rc = weft_await(held_with_waiter(false), &r);
    CHECK_PTR_EQ(r, OLD);
    return rc;
}

static int await_for_busy(void)
{
    void *r = OLD;
    int rc = weft_await_for(held_with_waiter(false), &r, NEVER);
    CHECK_PTR_EQ(r, OLD);
    return rc;
}

/* Timeout 0 too: -EBUSY, not -ETIMEDOUT ("not yet" would send the caller
 * round again for a handle another wait holds). */
static int await_for_busy_now(void)
{
    void *r = OLD;
    int rc = weft_await_for(held_with_waiter(false), &r, 0);
    CHECK_PTR_EQ(r, OLD);
    return rc;
}

static int await_all_for_busy_now(void)
{
    weft_task *ts[1] = {held_with_waiter(false)};
    int rc = weft_await_all_for(ts, 1, NULL, 0);
    CHECK_PTR_EQ(ts[0], g_pending);
    return rc;
}

static int await_all_busy(void)
{
    weft_task *ts[1] = {held_with_waiter(false)};
    void *rs[1] = {OLD};
    int rc = weft_await_all(ts, 1, rs);
    CHECK_PTR_EQ(ts[0], g_pending);
    CHECK_PTR_EQ(rs[0], OLD);
    return rc;
}

static int await_all_for_busy(void)
{
    weft_task *ts[1] = {held_with_waiter(false)};
    int rc = weft_await_all_for(ts, 1, NULL, NEVER);
    CHECK_PTR_EQ(ts[0], g_pending);
    return rc;
}

static int sync_wait_busy(void)
{
    void *r = OLD;
    int rc = weft_sync_wait(held_with_waiter(false), &r);
    CHECK_PTR_EQ(r, OLD);
    return rc;
}

/* The pool is being destroyed: t stays lazy, and runs when waited for. */
static int task_start_shutdown(void)
{
    struct dying d;
    dying_begin(&d);
    weft_task *t;
    CHECK_EQ(weft_task_create(&t, times3, P(7), NULL), 0);
    int rc = weft_task_start(t, d.p);
    dying_end(&d);
    void *r = OLD;
    CHECK_EQ(weft_sync_wait(t, &r), 0);
    CHECK_EQ(I(r), 21);
    return rc;
}

static int await_for_timeout(void)
{
    weft_task *t = spawn_held();
    void *r = OLD;
    int rc = weft_await_for(t, &r, MS(2));
    CHECK_PTR_EQ(r, OLD);
    return rc;
}

static int await_for_zero(void)
{
    weft_task *t = spawn_held();
    return weft_await_for(t, NULL, 0);
}

static int await_for_null(void) { return weft_await_for(NULL, NULL, MS(1)); }

static int await_for_plain(void)
{
    CHECK_EQ(weft_spawn(&g_pending, g_pool, times3, P(7), NULL), 0);
    return weft_await_for(g_pending, NULL, MS(1));
}

static int await_all_cancelled(void)
{
    weft_task *ts[1] = {spawn_held()};
    cancel_self();
    int rc = weft_await_all(ts, 1, NULL);
    CHECK_PTR_EQ(ts[0], g_pending);
    return rc;
}

#ifdef WEFT_FAULT_INJECTION
/* A lazy task with a stack size nothing has used: its stack must be
 * mapped, and that fails. */
static const weft_task_opts odd_stack = {.stack_size = 192 * 1024};

static int await_lazy_nomem(void)
{
    weft_task *t;
    CHECK_EQ(weft_task_create(&t, times3, P(7), &odd_stack), 0);
    int rc;
    OUT_OF_MEMORY(rc = weft_await(t, NULL));
    g_pending = t; /* not consumed: after_pending runs it */
    return rc;
}

static int await_for_lazy_nomem(void)
{
    weft_task *t;
    CHECK_EQ(weft_task_create(&t, times3, P(7), &odd_stack), 0);
    int rc;
    OUT_OF_MEMORY(rc = weft_await_for(t, NULL, NEVER));
    g_pending = t;
    return rc;
}

static int await_all_lazy_nomem(void)
{
    weft_task *ts[1];
    CHECK_EQ(weft_task_create(&ts[0], times3, P(7), &odd_stack), 0);
    int rc;
    OUT_OF_MEMORY(rc = weft_await_all(ts, 1, NULL));
    CHECK(ts[0] != NULL);
    g_pending = ts[0];
    return rc;
}

static int sync_wait_lazy_nomem(void)
{
    weft_task *t;
    CHECK_EQ(weft_task_create(&t, times3, P(7), &odd_stack), 0);
    int rc;
    OUT_OF_MEMORY(rc = weft_sync_wait(t, NULL));
    g_pending = t;
    return rc;
}

static int task_create_nomem(void)
{
    weft_task *t = OLD;
    int rc;
    OUT_OF_MEMORY(rc = weft_task_create(&t, times3, P(1), NULL));
    CHECK_PTR_EQ(t, OLD);
    return rc;
}

static int spawn_nomem(void)
{
    weft_task *t = OLD;
    int rc;
    OUT_OF_MEMORY(rc = weft_spawn(&t, g_pool, times3, P(1), NULL));
    CHECK_PTR_EQ(t, OLD);
    return rc;
}

static int task_create_with_nomem(void)
{
    weft_task *t = OLD;
    void *room = OLD;
    int rc;
    OUT_OF_MEMORY(rc = weft_task_create_with(&t, times3, 8, &room, NULL));
    CHECK_PTR_EQ(t, OLD);
    CHECK_PTR_EQ(room, OLD);
    return rc;
}

static int spawn_with_nomem(void)
{
    weft_task *t = OLD;
    int rc;
    fills = 0;
    OUT_OF_MEMORY(rc = weft_spawn_with(&t, g_pool, room_times3,
                                       sizeof(intptr_t), fill_seven, NULL,
                                       NULL));
    CHECK_PTR_EQ(t, OLD);
    CHECK_EQ(fills, 0);
    return rc;
}

static int spawn_copy_nomem(void)
{
    weft_task *t = OLD;
    int rc;
    OUT_OF_MEMORY(rc = weft_spawn_copy(&t, g_pool, room_times3, &seven,
                                       sizeof seven, NULL));
    CHECK_PTR_EQ(t, OLD);
    return rc;
}

/* A lazy room task taken from a task, with no memory for its stack: it
 * did not start, take was not called, and after_pending runs it. */
static int task_take_lazy_nomem(void)
{
    weft_task *t;
    void *room;
    CHECK_EQ(weft_task_create_with(&t, room_times3, sizeof(intptr_t), &room,
                                   &odd_stack), 0);
    *(intptr_t *)room = 7;
    int n = 0;
    int rc;
    OUT_OF_MEMORY(rc = weft_task_take(t, take_none, &n));
    CHECK_EQ(n, 0);
    g_pending = t;
    return rc;
}

/* The same through weft_task_result. */
static int task_result_lazy_nomem(void)
{
    weft_task *t;
    CHECK_EQ(weft_task_create(&t, times3, P(7), &odd_stack), 0);
    void *r = OLD;
    int rc;
    OUT_OF_MEMORY(rc = weft_task_result(t, &r));
    CHECK_PTR_EQ(r, OLD);
    g_pending = t;
    return rc;
}

/* A lazy task joined from a task, with no memory for its stack: it did
 * not start, and after_pending runs it. */
static int task_join_lazy_nomem(void)
{
    weft_task *t;
    CHECK_EQ(weft_task_create(&t, times3, P(7), &odd_stack), 0);
    int rc;
    OUT_OF_MEMORY(rc = weft_task_join(t));
    g_pending = t;
    return rc;
}

static int coro_create_nomem(void)
{
    weft_coro_opts o = {.stack_size = 200 * 1024};
    weft_coro *co = OLD;
    int rc;
    OUT_OF_MEMORY(rc = weft_coro_create(&co, ret_arg, &o));
    CHECK_PTR_EQ(co, OLD);
    return rc;
}

static int pool_create_nomem(void)
{
    weft_pool *p = OLD;
    int rc;
    OUT_OF_MEMORY(rc = weft_pool_create(&p, NULL));
    CHECK_PTR_EQ(p, OLD);
    return rc;
}

/* A thread that cannot be started: the k-th system call of the create,
 * for the first k that is pthread_create. */
static int pool_create_no_thread(void)
{
    weft_pool_opts o = {.threads = 2};
    for (unsigned long k = 1; k < 64; k++) {
        weft_pool *p = OLD;
        weft__fault_arm(k);
        int rc = weft_pool_create(&p, &o);
        weft__fault_arm(0);
        if (rc == -EAGAIN) {
            CHECK_PTR_EQ(p, OLD);
            return rc;
        }
        if (rc == 0)
            CHECK_EQ(weft_pool_destroy(p), 0);
    }
    return 0;
}
#endif

/* A mutex held by another thread for the length of the row. */
struct held_mutex {
    weft_mutex m;
    weft_event locked, release;
    pthread_t th;
};

static void *hold_mutex(void *arg)
{
    struct held_mutex *h = arg;
    CHECK_EQ(weft_mutex_lock(&h->m), 0);
    weft_event_set(&h->locked);
    CHECK_EQ(weft_event_wait(&h->release), 0);
    CHECK_EQ(weft_mutex_unlock(&h->m), 0);
    return NULL;
}

static void held_begin(struct held_mutex *h)
{
    weft_mutex_init(&h->m);
    weft_event_init(&h->locked);
    weft_event_init(&h->release);
    CHECK_EQ(pthread_create(&h->th, NULL, hold_mutex, h), 0);
    CHECK_EQ(weft_event_wait(&h->locked), 0);
}

static void held_end(struct held_mutex *h)
{
    weft_event_set(&h->release);
    CHECK_EQ(pthread_join(h->th, NULL), 0);
    CHECK_EQ(weft_mutex_trylock(&h->m), 0); /* free again */
    CHECK_EQ(weft_mutex_unlock(&h->m), 0);
}

/* timer.h */

static int sleep_cancelled(void)
{
    cancel_self();
    return weft_sleep(MS(10));
}

/* Timed waits on a pool whose workers have never armed a timer: the first
 * one needs memory for its heap.  Run in a task of a fresh pool (FRESH). */
#ifdef WEFT_FAULT_INJECTION
static int sleep_nomem(void)
{
    int rc;
    OUT_OF_MEMORY(rc = weft_sleep(MS(1)));
    return rc;
}

static int event_wait_for_nomem(void)
{
    weft_event ev;
    weft_event_init(&ev);
    int rc;
    OUT_OF_MEMORY(rc = weft_event_wait_for(&ev, MS(1)));
    return rc;
}

static int mutex_lock_for_nomem(void)
{
    struct held_mutex h;
    held_begin(&h);
    int rc;
    OUT_OF_MEMORY(rc = weft_mutex_lock_for(&h.m, MS(1)));
    held_end(&h);
    return rc;
}

/* A task that waits for a mutex and counts the times it got it. */
struct counted_mutex {
    weft_mutex m;
    atomic_int got;
};

static void *lock_and_count(void *arg)
{
    struct counted_mutex *c = arg;
    CHECK_EQ(weft_mutex_lock(&c->m), 0);
    atomic_fetch_add(&c->got, 1);
    CHECK_EQ(weft_mutex_unlock(&c->m), 0);
    return NULL;
}

/* With a task waiting for m on this one-worker pool: a release of m would
 * hand it over to that task, which counts it.  No memory for the timer:
 * m was never released (the waiter never got it), and is held. */
static int cond_wait_for_nomem(void)
{
    static struct counted_mutex c;
    weft_cond cv;
    weft_mutex_init(&c.m);
    atomic_store(&c.got, 0);
    weft_cond_init(&cv);
    CHECK_EQ(weft_mutex_lock(&c.m), 0);
    weft_task *t;
    CHECK_EQ(weft_spawn(&t, weft_pool_current(), lock_and_count, &c, NULL), 0);
    while (!(__atomic_load_n(&weft__mutex_of(&c.m)->state_,
                             __ATOMIC_RELAXED) &
             2)) /* until it waits for m (sync/mutex.c: WAITERS) */
        CHECK_EQ(weft_yield(), 0);
    int rc;
    OUT_OF_MEMORY(rc = weft_cond_wait_for(&cv, &c.m, MS(1)));
    CHECK_EQ(atomic_load(&c.got), 0);
    CHECK_EQ(weft_mutex_unlock(&c.m), 0); /* held, as promised */
    CHECK_EQ(weft_await(t, NULL), 0);
    CHECK_EQ(atomic_load(&c.got), 1);
    return rc;
}

static int sem_wait_for_nomem(void)
{
    weft_sem sem;
    weft_sem_init(&sem, 0);
    int rc;
    OUT_OF_MEMORY(rc = weft_sem_wait_for(&sem, MS(1)));
    return rc;
}

static int wait_group_wait_for_nomem(void)
{
    weft_wait_group wg;
    weft_wait_group_init(&wg);
    weft_wait_group_add(&wg, 1);
    int rc;
    OUT_OF_MEMORY(rc = weft_wait_group_wait_for(&wg, MS(1)));
    return rc;
}

static int chan_recv_for_nomem(void)
{
    weft_chan *ch;
    CHECK_EQ(weft_chan_create(&ch, 1), 0);
    void *v = OLD;
    int rc;
    OUT_OF_MEMORY(rc = weft_chan_recv_for(ch, &v, MS(1)));
    CHECK_PTR_EQ(v, OLD);
    CHECK_EQ(weft_chan_destroy(ch), 0);
    return rc;
}

static int chan_send_for_nomem(void)
{
    weft_chan *ch;
    CHECK_EQ(weft_chan_create(&ch, 0), 0);
    int rc;
    OUT_OF_MEMORY(rc = weft_chan_send_for(ch, P(1), MS(1)));
    CHECK_EQ(weft_chan_destroy(ch), 0);
    return rc;
}
#endif

/* event.h */

static int event_wait_cancelled(void)
{
    weft_event ev;
    weft_event_init(&ev);
    cancel_self();
    return weft_event_wait(&ev);
}

static int event_wait_for_cancelled(void)
{
    weft_event ev;
    weft_event_init(&ev);
    cancel_self();
    return weft_event_wait_for(&ev, NEVER);
}

static int event_wait_for_timeout(void)
{
    weft_event ev;
    weft_event_init(&ev);
    uint64_t t0 = wt_now_ns();
    int rc = weft_event_wait_for(&ev, MS(2));
    CHECK(wt_now_ns() - t0 >= MS(2));
    CHECK(!weft_event_is_set(&ev));
    return rc;
}

/* blocking.h */

static void *sleep_briefly(void *arg)
{
    wt_sleep_ms((unsigned)I(arg));
    return arg;
}

static int blocking_cancelled(void)
{
    cancel_self();
    void *r = OLD;
    int rc = weft_blocking(sleep_briefly, P(1), &r);
    CHECK_PTR_EQ(r, OLD);
    return rc;
}

static int blocking_for_null(void) { return weft_blocking_for(NULL, NULL, NULL, MS(1)); }

static int blocking_for_timeout(void)
{
    void *r = OLD;
    int rc = weft_blocking_for(sleep_briefly, P(30), &r, MS(1));
    CHECK_PTR_EQ(r, OLD);
    return rc;
}

#ifdef WEFT_FAULT_INJECTION
static int blocking_nomem(void)
{
    int rc;
    OUT_OF_MEMORY(rc = weft_blocking(sleep_briefly, P(0), NULL));
    return rc;
}

static int blocking_for_nomem(void)
{
    int rc;
    OUT_OF_MEMORY(rc = weft_blocking_for(sleep_briefly, P(0), NULL, NEVER));
    return rc;
}
#endif

/* sync.h */

static int mutex_lock_cancelled(void)
{
    struct held_mutex h;
    held_begin(&h);
    cancel_self();
    int rc = weft_mutex_lock(&h.m);
    held_end(&h);
    return rc;
}

static int mutex_lock_for_cancelled(void)
{
    struct held_mutex h;
    held_begin(&h);
    cancel_self();
    int rc = weft_mutex_lock_for(&h.m, NEVER);
    held_end(&h);
    return rc;
}

static int mutex_lock_for_timeout(void)
{
    struct held_mutex h;
    held_begin(&h);
    int rc = weft_mutex_lock_for(&h.m, MS(2));
    held_end(&h);
    return rc;
}

static int mutex_lock_for_relock(void)
{
    weft_mutex m;
    weft_mutex_init(&m);
    CHECK_EQ(weft_mutex_lock(&m), 0);
    int rc = weft_mutex_lock_for(&m, MS(1));
    CHECK_EQ(weft_mutex_unlock(&m), 0);
    return rc;
}

/* The condition's waits hold m again whatever they return. */
static int cond_wait_with(int (*wait)(weft_cond *c, weft_mutex *m),
                          bool cancel)
{
    weft_mutex m;
    weft_cond c;
    weft_mutex_init(&m);
    weft_cond_init(&c);
    CHECK_EQ(weft_mutex_lock(&m), 0);
    if (cancel)
        cancel_self();
    int rc = wait(&c, &m);
    CHECK_EQ(weft_mutex_unlock(&m), 0);
    return rc;
}

static int cond_wait_plain(weft_cond *c, weft_mutex *m) { return weft_cond_wait(c, m); }
static int cond_wait_2ms(weft_cond *c, weft_mutex *m) { return weft_cond_wait_for(c, m, MS(2)); }
static int cond_wait_never(weft_cond *c, weft_mutex *m) { return weft_cond_wait_for(c, m, NEVER); }

static int cond_wait_cancelled(void) { return cond_wait_with(cond_wait_plain, true); }
static int cond_wait_for_cancelled(void) { return cond_wait_with(cond_wait_never, true); }
static int cond_wait_for_timeout(void) { return cond_wait_with(cond_wait_2ms, false); }

static int cond_wait_for_null(void)
{
    weft_mutex m;
    weft_mutex_init(&m);
    return weft_cond_wait_for(NULL, &m, MS(1));
}

static int sem_wait_cancelled(void)
{
    weft_sem sem;
    weft_sem_init(&sem, 0);
    cancel_self();
    return weft_sem_wait(&sem);
}

static int sem_wait_for_cancelled(void)
{
    weft_sem sem;
    weft_sem_init(&sem, 0);
    cancel_self();
    return weft_sem_wait_for(&sem, NEVER);
}

static int sem_wait_for_timeout(void)
{
    weft_sem sem;
    weft_sem_init(&sem, 0);
    int rc = weft_sem_wait_for(&sem, MS(2));
    CHECK_EQ(weft_sem_trywait(&sem), -EAGAIN); /* took nothing */
    return rc;
}

static int wait_group_wait_cancelled(void)
{
    weft_wait_group wg;
    weft_wait_group_init(&wg);
    weft_wait_group_add(&wg, 1);
    cancel_self();
    return weft_wait_group_wait(&wg);
}

static int wait_group_wait_for_cancelled(void)
{
    weft_wait_group wg;
    weft_wait_group_init(&wg);
    weft_wait_group_add(&wg, 1);
    cancel_self();
    return weft_wait_group_wait_for(&wg, NEVER);
}

static int wait_group_wait_for_timeout(void)
{
    weft_wait_group wg;
    weft_wait_group_init(&wg);
    weft_wait_group_add(&wg, 1);
    int rc = weft_wait_group_wait_for(&wg, MS(2));
    weft_wait_group_done(&wg);
    CHECK_EQ(weft_wait_group_wait_for(&wg, 0), 0); /* at zero now */
    return rc;
}

/* chan.h */

static int chan_send_cancelled(void)
{
    weft_chan *ch;
    CHECK_EQ(weft_chan_create(&ch, 0), 0);
    cancel_self();
    int rc = weft_chan_send(ch, P(1));
    CHECK_EQ(weft_chan_destroy(ch), 0);
    return rc;
}

static int chan_recv_cancelled(void)
{
    weft_chan *ch;
    CHECK_EQ(weft_chan_create(&ch, 1), 0);
    cancel_self();
    void *v = OLD;
    int rc = weft_chan_recv(ch, &v);
    CHECK_PTR_EQ(v, OLD);
    CHECK_EQ(weft_chan_destroy(ch), 0);
    return rc;
}

static int chan_send_for_null(void) { return weft_chan_send_for(NULL, P(1), MS(1)); }

static int chan_recv_for_null(void)
{
    void *v = OLD;
    int rc = weft_chan_recv_for(NULL, &v, MS(1));
    CHECK_PTR_EQ(v, OLD);
    return rc;
}

static int chan_closed_call(int (*call)(weft_chan *ch))
{
    weft_chan *ch;
    CHECK_EQ(weft_chan_create(&ch, 1), 0);
    weft_chan_close(ch);
    int rc = call(ch);
    CHECK_EQ(weft_chan_destroy(ch), 0);
    return rc;
}

static int send_for_1ms(weft_chan *ch) { return weft_chan_send_for(ch, P(1), MS(1)); }
static int try_send(weft_chan *ch) { return weft_chan_try_send(ch, P(1)); }
static int recv_for_1ms(weft_chan *ch) { void *v; return weft_chan_recv_for(ch, &v, MS(1)); }
static int try_recv(weft_chan *ch) { void *v; return weft_chan_try_recv(ch, &v); }

static int chan_send_for_closed(void) { return chan_closed_call(send_for_1ms); }
static int chan_try_send_closed(void) { return chan_closed_call(try_send); }
static int chan_recv_for_closed(void) { return chan_closed_call(recv_for_1ms); }
static int chan_try_recv_closed(void) { return chan_closed_call(try_recv); }

static int chan_try_send_null(void) { return weft_chan_try_send(NULL, P(1)); }
static int chan_try_recv_null(void) { void *v; return weft_chan_try_recv(NULL, &v); }

static int chan_send_for_timeout(void)
{
    weft_chan *ch;
    CHECK_EQ(weft_chan_create(&ch, 0), 0);
    int rc = weft_chan_send_for(ch, P(1), MS(2));
    CHECK_EQ(weft_chan_try_recv(ch, &(void *){0}), -EAGAIN); /* not sent */
    CHECK_EQ(weft_chan_destroy(ch), 0);
    return rc;
}

static int chan_recv_for_timeout(void)
{
    weft_chan *ch;
    CHECK_EQ(weft_chan_create(&ch, 1), 0);
    void *v = OLD;
    int rc = weft_chan_recv_for(ch, &v, MS(2));
    CHECK_PTR_EQ(v, OLD);
    CHECK_EQ(weft_chan_destroy(ch), 0);
    return rc;
}

static int chan_send_for_cancelled(void)
{
    weft_chan *ch;
    CHECK_EQ(weft_chan_create(&ch, 0), 0);
    cancel_self();
    int rc = weft_chan_send_for(ch, P(1), NEVER);
    CHECK_EQ(weft_chan_destroy(ch), 0);
    return rc;
}

static int chan_recv_for_cancelled(void)
{
    weft_chan *ch;
    CHECK_EQ(weft_chan_create(&ch, 1), 0);
    cancel_self();
    void *v;
    int rc = weft_chan_recv_for(ch, &v, NEVER);
    CHECK_EQ(weft_chan_destroy(ch), 0);
    return rc;
}

/* A receiver parked on it: destroy refuses, and the channel still works. */
static void *recv_one(void *arg)
{
    void *v = NULL;
    CHECK_EQ(weft_chan_recv_for(arg, &v, NEVER), 0);
    return v;
}

static int chan_destroy_busy(void)
{
    weft_chan *ch;
    CHECK_EQ(weft_chan_create(&ch, 0), 0);
    weft_task *t;
    CHECK_EQ(weft_spawn(&t, g_pool, recv_one, ch, NULL), 0);
    /* Until the receiver is parked there (sync/objects.h). */
    uint64_t until = wt_now_ns() + MS(10000);
    while (weft__chan_waiting(ch) == 0 && wt_now_ns() < until)
        sched_yield();
    int rc = weft_chan_destroy(ch);
    CHECK_EQ(weft_chan_send(ch, P(9)), 0);
    void *r = OLD;
    CHECK_EQ(weft_sync_wait(t, &r), 0);
    CHECK_EQ(I(r), 9);
    CHECK_EQ(weft_chan_destroy(ch), 0);
    return rc;
}

/* io.h */

/* A connected TCP pair over loopback: sv[0] made with weft_socket (owned),
 * sv[1] accepted plainly (borrowed, blocking). */
static void tcp_pair(int sv[2])
{
    int lfd = weft_socket(AF_INET, SOCK_STREAM, 0);
    CHECK(lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    CHECK_EQ(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    CHECK_EQ(listen(lfd, 4), 0);
    CHECK_EQ(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    sv[0] = weft_socket(AF_INET, SOCK_STREAM, 0);
    CHECK_EQ(weft_connect_for(sv[0], (struct sockaddr *)&a, sizeof a, NEVER),
             0);
    sv[1] = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    CHECK(sv[1] >= 0);
    CHECK_EQ(weft_close(lfd), 0);
}

/* sv[1] goes away with a reset (SO_LINGER 0), and the reset has arrived
 * at sv[0] once this returns. */
static void reset_peer(int sv[2])
{
    struct linger l = {1, 0};
    CHECK_EQ(setsockopt(sv[1], SOL_SOCKET, SO_LINGER, &l, sizeof l), 0);
    CHECK_EQ(close(sv[1]), 0);
    CHECK_EQ(weft_wait_fd_for(sv[0], WEFT_IN, NEVER), WEFT_IN);
}

static int read_reset(void)
{
    int sv[2];
    tcp_pair(sv);
    reset_peer(sv);
    char c;
    int rc = (int)weft_read(sv[0], &c, 1);
    CHECK_EQ(weft_close(sv[0]), 0);
    return rc;
}

static int write_reset(void)
{
    int sv[2];
    tcp_pair(sv);
    reset_peer(sv);
    int rc = (int)weft_write(sv[0], "x", 1);
    CHECK_EQ(weft_close(sv[0]), 0);
    return rc;
}

/* The reading end gone: EPIPE (SIGPIPE is ignored in this program). */
static int write_closed_peer(void)
{
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    CHECK_EQ(close(sv[1]), 0);
    int rc = (int)weft_write(sv[0], "x", 1);
    CHECK_EQ(close(sv[0]), 0);
    return rc;
}

/* A blocking pipe is borrowed and not a socket: read and written only
 * when non-blocking. */
static int rw_blocking_pipe(bool write_end)
{
    int p[2];
    CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
    int before = fcntl(p[0], F_GETFL);
    char c = 'x';
    int rc = write_end ? (int)weft_write(p[1], &c, 1)
                       : (int)weft_read(p[0], &c, 1);
    CHECK_EQ(fcntl(p[0], F_GETFL), before); /* untouched */
    close(p[0]);
    close(p[1]);
    return rc;
}

static int read_blocking_pipe(void) { return rw_blocking_pipe(false); }
static int write_blocking_pipe(void) { return rw_blocking_pipe(true); }

static int read_cancelled(void)
{
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    cancel_self();
    char c;
    int rc = (int)weft_read(sv[0], &c, 1);
    close(sv[0]);
    close(sv[1]);
    return rc;
}

/* A socketpair end with no room left. */
static void fill(int fd)
{
    static char junk[65536];
    while (send(fd, junk, sizeof junk, MSG_DONTWAIT) > 0)
        ;
}

static int write_cancelled(void)
{
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    fill(sv[0]);
    cancel_self();
    int rc = (int)weft_write(sv[0], "x", 1);
    close(sv[0]);
    close(sv[1]);
    return rc;
}

/* A timed write to a socket with no room for 2 ms. */
static int full_write_2ms(ssize_t (*write_for)(int fd, const void *buf,
                                                size_t len, uint64_t ns))
{
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    fill(sv[0]);
    int rc = (int)write_for(sv[0], "x", 1, MS(2));
    close(sv[0]);
    close(sv[1]);
    return rc;
}

static int write_for_timeout(void) { return full_write_2ms(weft_write_for); }

static int wait_fd_cancelled(void)
{
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    cancel_self();
    int rc = weft_wait_fd(sv[0], WEFT_IN);
    close(sv[0]);
    close(sv[1]);
    return rc;
}

static int wait_fd_for_timeout(void)
{
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    int rc = weft_wait_fd_for(sv[0], WEFT_IN, MS(2));
    close(sv[0]);
    close(sv[1]);
    return rc;
}

/* A listener that nobody connects to. */
static int listener(void)
{
    int lfd = weft_socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK_EQ(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    CHECK_EQ(listen(lfd, 4), 0);
    return lfd;
}

static int accept_cancelled(void)
{
    int lfd = listener();
    cancel_self();
    int rc = weft_accept(lfd, NULL, NULL);
    CHECK_EQ(weft_close(lfd), 0);
    return rc;
}

static int accept_for_timeout(void)
{
    int lfd = listener();
    int rc = weft_accept_for(lfd, NULL, NULL, MS(2));
    CHECK_EQ(weft_close(lfd), 0);
    return rc;
}

static int accept_blocking_borrowed(void)
{
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_EQ(listen(lfd, 4), 0);
    int rc = weft_accept(lfd, NULL, NULL);
    close(lfd);
    return rc;
}

/* Out of fds: a connection waits, but there is no number for it. */
static int accept_no_fds(void)
{
    int lfd = listener();
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    CHECK_EQ(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_EQ(connect(c, (struct sockaddr *)&a, sizeof a), 0);
    struct rlimit old, none;
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
    none = old;
    none.rlim_cur = (rlim_t)c; /* every number up to c is taken */
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &none), 0);
    int rc = weft_accept(lfd, NULL, NULL);
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
    /* The connection is still there for the next accept. */
    int fd = weft_accept(lfd, NULL, NULL);
    CHECK(fd >= 0);
    CHECK_EQ(weft_close(fd), 0);
    close(c);
    CHECK_EQ(weft_close(lfd), 0);
    return rc;
}

static int connect_refused(void)
{
    int lfd = listener();
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    CHECK_EQ(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    CHECK_EQ(weft_close(lfd), 0); /* nobody listens there now */
    int fd = weft_socket(AF_INET, SOCK_STREAM, 0);
    int rc = weft_connect(fd, (struct sockaddr *)&a, sizeof a);
    CHECK_EQ(weft_close(fd), 0);
    return rc;
}

static int connect_blocking_borrowed(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int rc = weft_connect(fd, (struct sockaddr *)&a, sizeof a);
    CHECK_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, 0); /* untouched */
    close(fd);
    return rc;
}

/* A handshake that is not answered: a listener with a backlog of 0 whose
 * queue already holds one connection drops further SYNs (Linux). */
static int connect_unanswered(int (*call)(int fd, struct sockaddr_in *a))
{
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    CHECK_EQ(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    CHECK_EQ(listen(lfd, 0), 0);
    CHECK_EQ(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    int first = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_EQ(connect(first, (struct sockaddr *)&a, sizeof a), 0);
    int fd = weft_socket(AF_INET, SOCK_STREAM, 0);
    int rc = call(fd, &a);
    CHECK_EQ(weft_close(fd), 0);
    close(first);
    close(lfd);
    return rc;
}

static int connect_2ms(int fd, struct sockaddr_in *a)
{
    return weft_connect_for(fd, (struct sockaddr *)a, sizeof *a, MS(2));
}

static int connect_cancelled_call(int fd, struct sockaddr_in *a)
{
    cancel_self();
    return weft_connect(fd, (struct sockaddr *)a, sizeof *a);
}

static int connect_for_timeout(void) { return connect_unanswered(connect_2ms); }
static int connect_cancelled(void) { return connect_unanswered(connect_cancelled_call); }

static int socket_bad_family(void) { return weft_socket(12345, SOCK_STREAM, 0); }

static int socket_no_fds(void)
{
    struct rlimit old, none;
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
    none = old;
    none.rlim_cur = 0;
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &none), 0);
    int rc = weft_socket(AF_INET, SOCK_STREAM, 0);
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
    return rc;
}

static int adopt_bad_fd(void) { return weft_fd_adopt(-1); }
static int adopt_beyond_table(void) { return weft_fd_adopt(1 << 23); }

static int adopt_twice(void)
{
    int p[2];
    CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
    CHECK_EQ(weft_fd_adopt(p[0]), 0);
    int rc = weft_fd_adopt(p[0]);
    CHECK(fcntl(p[0], F_GETFL) & O_NONBLOCK);
    CHECK_EQ(weft_close(p[0]), 0);
    close(p[1]);
    return rc;
}

#ifdef WEFT_FAULT_INJECTION
/* An fd number whose record (a chunk of the fd table) has never been
 * needed: its making fails. */
static int adopt_nomem(void)
{
    int p[2];
    CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
    int high = fcntl(p[0], F_DUPFD_CLOEXEC, 9000);
    CHECK(high >= 9000);
    int rc;
    OUT_OF_MEMORY(rc = weft_fd_adopt(high));
    CHECK_EQ(fcntl(high, F_GETFL) & O_NONBLOCK, 0); /* untouched */
    close(high);
    close(p[0]);
    close(p[1]);
    return rc;
}

/* In a task of a fresh pool, whose netpoller does not exist yet: the first
 * wait that parks must make it. */
static int wait_fd_nomem(void)
{
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    int rc;
    OUT_OF_MEMORY(rc = weft_wait_fd_for(sv[0], WEFT_IN, MS(100)));
    close(sv[0]);
    close(sv[1]);
    return rc;
}

static int read_nomem(void)
{
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    char c;
    int rc;
    OUT_OF_MEMORY(rc = (int)weft_read(sv[0], &c, 1));
    close(sv[0]);
    close(sv[1]);
    return rc;
}

static int write_nomem(void)
{
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    fill(sv[0]);
    int rc;
    OUT_OF_MEMORY(rc = (int)weft_write(sv[0], "x", 1));
    close(sv[0]);
    close(sv[1]);
    return rc;
}

static int accept_nomem(void)
{
    int lfd = listener();
    int rc;
    OUT_OF_MEMORY(rc = weft_accept(lfd, NULL, NULL));
    CHECK_EQ(weft_close(lfd), 0);
    return rc;
}

static int connect_nomem_call(int fd, struct sockaddr_in *a)
{
    int rc;
    OUT_OF_MEMORY(rc = weft_connect(fd, (struct sockaddr *)a, sizeof *a));
    return rc;
}

static int connect_nomem(void) { return connect_unanswered(connect_nomem_call); }

/* weft_socket's record: a number in a chunk of the fd table never needed,
 * by taking every number below it first. */
static int socket_nomem(void)
{
    enum { FROM = 8192 };
    struct rlimit old, more;
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
    more = old;
    if (more.rlim_cur < FROM + 64)
        more.rlim_cur = FROM + 64 < more.rlim_max ? FROM + 64 : more.rlim_max;
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &more), 0);
    int filler = open("/dev/null", O_RDONLY | O_CLOEXEC);
    static int taken[FROM];
    int n = 0;
    int fd;
    while ((fd = fcntl(filler, F_DUPFD_CLOEXEC, 0)) >= 0 && fd < FROM)
        taken[n++] = fd;
    int rc;
    OUT_OF_MEMORY(rc = weft_socket(AF_INET, SOCK_STREAM, 0));
    if (fd >= 0)
        close(fd);
    while (n > 0)
        close(taken[--n]);
    close(filler);
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
    return rc;
}
#endif


/* ------------------------------------------------------------------ */
/* Ids and names (task.h, coro.h), and inspect.h                        */

static int task_id_null(void) { return weft_task_id(NULL) != 0; }
static int coro_id_null(void) { return weft_coro_id(NULL) != 0; }

static int task_set_name_null(void)
{
    char before[32];
    snprintf(before, sizeof before, "%s", weft_task_name(weft_task_current()));
    int rc = weft_task_set_name(NULL);
    CHECK_EQ(strcmp(weft_task_name(weft_task_current()), before), 0);
    return rc;
}

static int task_set_name_outside(void) { return weft_task_set_name("x"); }

static int pool_stats_null(void)
{
    struct weft_pool_stats s = {.size = sizeof s};
    return weft_pool_stats(NULL, &s);
}

static int pool_stats_out_null(void) { return weft_pool_stats(g_pool, NULL); }

static int pool_stats_small(void)
{
    struct weft_pool_stats s;
    memset(&s, 0x5a, sizeof s);
    s.size = offsetof(struct weft_pool_stats, workers);
    int rc = weft_pool_stats(g_pool, &s);
    CHECK_EQ(s.size, offsetof(struct weft_pool_stats, workers));
    CHECK_EQ(s.runs, 0x5a5a5a5a5a5a5a5aull); /* untouched */
    return rc;
}

static int worker_stats_null(void)
{
    struct weft_worker_stats s = {.size = sizeof s};
    return weft_pool_worker_stats(NULL, 0, &s);
}

/* Past every slot there can be.  Not the number of workers: a spare may
 * have covered a worker here (a slow machine, qemu), and its slot, right
 * after the workers', is then a valid index. */
static int worker_stats_index(void)
{
    struct weft_worker_stats s = {.size = sizeof s};
    return weft_pool_worker_stats(g_pool, UINT_MAX, &s);
}

static int worker_stats_small(void)
{
    struct weft_worker_stats s = {.size = 0};
    return weft_pool_worker_stats(g_pool, 0, &s);
}

static int pool_dump_null(void) { return weft_pool_dump(NULL, stderr); }
static int pool_dump_out_null(void) { return weft_pool_dump(g_pool, NULL); }

/* A stream that cannot be written: /dev/null opened for reading. */
static int dump_unwritable(int (*dump)(FILE *))
{
    FILE *f = fopen("/dev/null", "r");
    CHECK(f != NULL);
    int rc = dump(f);
    fclose(f);
    return rc;
}

static int dump_g_pool(FILE *f) { return weft_pool_dump(g_pool, f); }
static int pool_dump_unwritable(void) { return dump_unwritable(dump_g_pool); }
static int dump_all_null(void) { return weft_dump_all(NULL); }
static int dump_all_unwritable(void) { return dump_unwritable(weft_dump_all); }

static int dump_on_signal_kill(void) { return weft_dump_on_signal(SIGKILL); }
static int dump_on_signal_zero(void) { return weft_dump_on_signal(0); }

/* SIGURG is ignored by default, so the handler this installs changes
 * nothing for the rest of the run. */
static int dump_on_signal_other(void)
{
    CHECK_EQ(weft_dump_on_signal(SIGURG), 0);
    CHECK_EQ(weft_dump_on_signal(SIGURG), 0); /* the same: nothing */
    return weft_dump_on_signal(SIGWINCH);
}

#ifdef WEFT_FAULT_INJECTION
/* Before any row has chosen a signal: the dumper thread cannot start. */
static int dump_on_signal_no_thread(void)
{
    for (unsigned long k = 1; k < 16; k++) {
        weft__fault_arm(k);
        int rc = weft_dump_on_signal(SIGURG);
        weft__fault_arm(0);
        if (rc == -EAGAIN)
            return rc;
        if (rc == 0)
            return 0; /* every call succeeded: fails the row */
    }
    return 0;
}
#define DUMP_ON_SIGNAL_NO_THREAD dump_on_signal_no_thread
#else
#define DUMP_ON_SIGNAL_NO_THREAD NULL
#endif

static int trace_start_null(void) { return weft_trace_start(NULL); }

static int trace_start_twice(void)
{
    CHECK_EQ(weft_trace_start("/dev/null"), 0);
    int rc = weft_trace_start("/dev/null");
    CHECK_EQ(weft_trace_stop(), 0); /* the first one still stops */
    return rc;
}

static int trace_start_no_folder(void)
{
    return weft_trace_start("/nonexistent-weft-folder/trace.json");
}

static int trace_start_folder(void) { return weft_trace_start("/tmp"); }
static int trace_stop_none(void) { return weft_trace_stop(); }

/* /dev/full takes the open and fails every write. */
static int trace_stop_unwritable(void)
{
    CHECK_EQ(weft_trace_start("/dev/full"), 0);
    return weft_trace_stop();
}

/* ------------------------------------------------------------------ */
/* The promises of issue 27: each row below failed on the code before   */
/* it (the item is named), and holds now.                               */

/* Item 1: a connect that a timeout left going on is finished by calling
 * weft_connect again, and a socket connected already gives 0, however
 * many calls before finished the handshake (Linux says 0 to the first
 * connect(2) after an asynchronous one ended, and EISCONN after that). */
static int connect_after_timeout(void)
{
    int lfd = listener();
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    CHECK_EQ(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    int fd = weft_socket(AF_INET, SOCK_STREAM, 0);
    int first = weft_connect_for(fd, (struct sockaddr *)&a, sizeof a, 0);
    CHECK(first == 0 || first == -ETIMEDOUT);
    CHECK_EQ(weft_wait_fd_for(fd, WEFT_OUT, NEVER), WEFT_OUT);
    CHECK_EQ(weft_connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    int rc = weft_connect(fd, (struct sockaddr *)&a, sizeof a);
    int peer = weft_accept_for(lfd, NULL, NULL, NEVER);
    CHECK(peer >= 0);
    CHECK_EQ(weft_write(fd, "z", 1), 1); /* connected, and usable */
    char c = 0;
    CHECK_EQ(weft_read(peer, &c, 1), 1);
    CHECK_EQ(c, 'z');
    CHECK_EQ(weft_close(peer), 0);
    CHECK_EQ(weft_close(fd), 0);
    CHECK_EQ(weft_close(lfd), 0);
    return rc;
}

/* Item 1: weft_write_some writes what the socket takes and says how much;
 * the rest is for the next call.  0 when 0 < count < len, and the peer
 * reads exactly that many bytes. */
static int write_some_part(void)
{
    enum { LEN = 4 << 20 };
    static char buf[LEN];
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    ssize_t n = weft_write_some(sv[0], buf, LEN);
    CHECK(n > 0 && n < LEN);
    CHECK_EQ(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
    ssize_t got = 0, r;
    while ((r = read(sv[1], buf, LEN)) > 0)
        got += r;
    CHECK_EQ(got, n);
    close(sv[0]);
    close(sv[1]);
    return n > 0 && n < LEN ? 0 : 1;
}

/* Item 1: a timed out weft_write_some wrote nothing. */
static int write_some_for_timeout(void)
{
    return full_write_2ms(weft_write_some_for);
}

/* Item 2: on a plain thread, weft_blocking_for runs fn where it can be
 * abandoned: timeout 0 never runs it. */
static atomic_int g_runs;

static void *count_runs(void *arg)
{
    atomic_fetch_add(&g_runs, 1);
    return arg;
}

static int blocking_for_zero(void)
{
    atomic_store(&g_runs, 0);
    void *r = OLD;
    int rc = weft_blocking_for(count_runs, P(1), &r, 0);
    CHECK_PTR_EQ(r, OLD);
    CHECK_EQ(atomic_load(&g_runs), 0);
    return rc;
}

/* Timeout 0 never waits, so a cancelled task gets its -ETIMEDOUT as
 * well (weft.h, "Timeouts"), as the other _for calls give it. */
static int blocking_for_zero_cancelled(void)
{
    cancel_self();
    return blocking_for_zero();
}

static int await_for_zero_cancelled(void)
{
    weft_task *t = spawn_held();
    cancel_self();
    void *r = OLD;
    int rc = weft_await_for(t, &r, 0);
    CHECK_PTR_EQ(r, OLD);
    return rc;
}

static int await_all_for_zero_cancelled(void)
{
    weft_task *ts[1] = {spawn_held()};
    cancel_self();
    int rc = weft_await_all_for(ts, 1, NULL, 0);
    CHECK_PTR_EQ(ts[0], g_pending);
    return rc;
}

/* Item 3: a call with nothing to wait for completes, cancelled or not. */
static int sleep_zero_cancelled(void)
{
    cancel_self();
    return weft_sleep(0);
}

/* Item 4: the calling task's own handle after another's: nothing is
 * consumed (after_pending takes the other). */
static int await_all_twice(void)
{
    CHECK_EQ(weft_spawn(&g_pending, g_pool, times3, P(7), NULL), 0);
    weft_task *other;
    CHECK_EQ(weft_spawn(&other, g_pool, times3, P(1), NULL), 0);
    weft_task *ts[3] = {g_pending, other, g_pending};
    void *rs[3] = {OLD, OLD, OLD};
    int rc = weft_await_all(ts, 3, rs);
    CHECK_PTR_EQ(ts[0], g_pending);
    CHECK_PTR_EQ(ts[1], other);
    CHECK_PTR_EQ(rs[0], OLD);
    /* Neither consumed: both can still be awaited (at once). */
    void *r = OLD;
    CHECK_EQ(weft_await(other, &r), 0);
    CHECK_EQ(I(r), 3);
    return rc;
}

static int await_all_own_handle(void)
{
    CHECK_EQ(weft_spawn(&g_pending, g_pool, times3, P(7), NULL), 0);
    weft_task *ts[2] = {g_pending, weft_task_current()};
    void *rs[2] = {OLD, OLD};
    int rc = weft_await_all(ts, 2, rs);
    CHECK_PTR_EQ(ts[0], g_pending);
    CHECK_PTR_EQ(rs[0], OLD);
    if (!ts[0]) /* consumed after all: keep after_pending's handle valid */
        CHECK_EQ(weft_spawn(&g_pending, g_pool, times3, P(7), NULL), 0);
    return rc;
}

static int await_all_none(void) { return weft_await_all(NULL, 0, NULL); }

/* Item 4: all or nothing: the first task has ended, the second runs on;
 * cancelled, the call consumes neither (after_both takes them). */
static weft_task *g_ended;

static int await_all_cancelled_after_one(void)
{
    CHECK_EQ(weft_spawn(&g_ended, g_pool, times3, P(5), NULL), 0);
    while (weft__task_lifecycle(atomic_load(&g_ended->state)) !=
           WEFT__T_COMPLETE) /* until it has ended (sched/task.h) */
        CHECK_EQ(weft_yield(), 0);
    weft_task *ts[2] = {g_ended, spawn_held()};
    cancel_self();
    int rc = weft_await_all(ts, 2, NULL);
    CHECK_PTR_EQ(ts[0], g_ended);
    CHECK_PTR_EQ(ts[1], g_pending);
    if (!ts[0]) /* consumed after all: keep after_both's handle valid */
        CHECK_EQ(weft_spawn(&g_ended, g_pool, times3, P(5), NULL), 0);
    return rc;
}

static void after_both(void)
{
    void *r = OLD;
    assert_int_equal(weft_sync_wait(g_ended, &r), 0);
    assert_int_equal(I(r), 15);
    after_release();
}

/* Item 10: every handle's wait within the timeout, or none consumed. */
static int await_all_for_timeout(void)
{
    weft_task *ts[1] = {spawn_held()};
    int rc = weft_await_all_for(ts, 1, NULL, MS(2));
    CHECK_PTR_EQ(ts[0], g_pending);
    return rc;
}

/* Item 5: the code of a try that would wait. */
static int mutex_trylock_other(void)
{
    struct held_mutex h;
    held_begin(&h);
    int rc = weft_mutex_trylock(&h.m);
    held_end(&h);
    return rc;
}

/* Item 7: a lazy task that weft_sync_wait starts on no pool, then moves
 * to a pool whose tasks get 8 MiB stacks, has that much stack there. */
static void *stack_after_hop(void *arg)
{
    CHECK_EQ(weft_schedule(arg), 0);
    struct weft__task *self = weft__task_current();
    return P(weft__stack_usable(&self->co.stack) >= ((size_t)8 << 20));
}

static int schedule_big_stacks(void)
{
    weft_pool *p;
    weft_pool_opts o = {.threads = 1, .stack_size = (size_t)8 << 20,
                        .name = "big"};
    CHECK_EQ(weft_pool_create(&p, &o), 0);
    weft_task *t;
    CHECK_EQ(weft_task_create(&t, stack_after_hop, p, NULL), 0);
    void *room = NULL;
    CHECK_EQ(weft_sync_wait(t, &room), 0);
    CHECK_EQ(weft_pool_destroy(p), 0);
    return room ? 0 : 1;
}

/* Item 9: the pool's first wait on an fd makes its netpoller, which needs
 * two fds: with none left (RLIMIT_NOFILE 1: fd 0 is open), -EMFILE.  In a
 * task of a fresh pool (FRESH), whose netpoller does not exist yet.  (Not
 * 0: poll(2) of one fd is then refused.) */
static int with_no_fds(int (*call)(int fd, void *arg), int fd, void *arg)
{
    struct rlimit old, none;
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
    none = old;
    none.rlim_cur = 1;
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &none), 0);
    int rc = call(fd, arg);
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
    return rc;
}

static int wait_in(int fd, void *arg)
{
    (void)arg;
    return weft_wait_fd_for(fd, WEFT_IN, NEVER);
}

static int read_one(int fd, void *arg)
{
    (void)arg;
    char c;
    return (int)weft_read(fd, &c, 1);
}

static int write_one(int fd, void *arg)
{
    (void)arg;
    return (int)weft_write(fd, "x", 1);
}

static int connect_to(int fd, void *arg)
{
    struct sockaddr_in *a = arg;
    return weft_connect(fd, (struct sockaddr *)a, sizeof *a);
}

static int on_socketpair_no_fds(int (*call)(int fd, void *arg), bool full)
{
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    if (full)
        fill(sv[0]);
    int rc = with_no_fds(call, sv[0], NULL);
    close(sv[0]);
    close(sv[1]);
    return rc;
}

static int wait_fd_no_fds(void) { return on_socketpair_no_fds(wait_in, false); }
static int read_no_fds(void) { return on_socketpair_no_fds(read_one, false); }
static int write_no_fds(void) { return on_socketpair_no_fds(write_one, true); }

static int connect_no_fds_call(int fd, struct sockaddr_in *a)
{
    return with_no_fds(connect_to, fd, a);
}

static int connect_no_fds(void) { return connect_unanswered(connect_no_fds_call); }

/* A one-worker pool for a row's destroy. */
static weft_pool *other_pool(void)
{
    weft_pool *p = NULL;
    weft_pool_opts o = {.threads = 1, .name = "other"};
    CHECK_EQ(weft_pool_create(&p, &o), 0);
    return p;
}

static atomic_int g_ran;

static void *count_ran(void *arg)
{
    atomic_fetch_add(&g_ran, 1);
    return arg;
}

static void *destroy_on_thread(void *arg)
{
    CHECK_EQ(weft_pool_destroy(arg), 0);
    return NULL;
}

/* A destroy that did nothing left p as it was: it still runs a task, and
 * a destroy from a plain thread (a cancelled task could not wait for it)
 * drains and frees it. */
static void still_runs_then_destroy(weft_pool *p)
{
    atomic_store(&g_ran, 0);
    CHECK_EQ(weft_spawn(NULL, p, count_ran, NULL, NULL), 0);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, destroy_on_thread, p), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_EQ(atomic_load(&g_ran), 1);
}

/* Item 10: a destroy that times out has begun (spawns from outside are
 * refused) and goes on; a later destroy finishes it. */
static int pool_destroy_for_timeout(void)
{
    weft_pool *p = other_pool();
    weft_event release;
    weft_event_init(&release);
    CHECK_EQ(weft_spawn(NULL, p, wait_event, &release, NULL), 0);
    int rc = weft_pool_destroy_for(p, MS(2));
    CHECK_EQ(weft_spawn(NULL, p, noop, NULL, NULL), -ESHUTDOWN);
    CHECK_EQ(weft_pool_destroy_for(p, 0), -ETIMEDOUT); /* still draining */
    weft_event_set(&release);
    CHECK_EQ(weft_pool_destroy(p), 0);
    return rc;
}

/* A cancelled task's destroy of another pool does nothing: that pool
 * still runs tasks, and is destroyed afterwards. */
static int pool_destroy_cancelled(void)
{
    weft_pool *p = other_pool();
    cancel_self();
    int rc = weft_pool_destroy(p);
    still_runs_then_destroy(p);
    return rc;
}

/* Item 11: a task that destroys another pool is parked, not its worker:
 * on this one-worker pool a ticker task keeps ticking meanwhile.  The pool
 * destroyed drains only once a plain thread has seen ticks (or, if the
 * worker were blocked, after 10 s: then the check fails). */
struct destroy_parks {
    weft_pool *other;
    weft_event release;
    atomic_int ticks, stop, seen;
};

static void *tick(void *arg)
{
    struct destroy_parks *d = arg;
    while (!atomic_load(&d->stop)) {
        CHECK_EQ(weft_sleep(MS(1)), 0);
        atomic_fetch_add(&d->ticks, 1);
    }
    return NULL;
}

static void *release_on_ticks(void *arg)
{
    struct destroy_parks *d = arg;
    uint64_t until = wt_now_ns() + MS(10000);
    while (atomic_load(&d->ticks) < 5 && wt_now_ns() < until)
        sched_yield();
    atomic_store(&d->seen, atomic_load(&d->ticks));
    weft_event_set(&d->release);
    return NULL;
}

static int pool_destroy_parks(void)
{
    static struct destroy_parks d;
    d.other = other_pool();
    weft_event_init(&d.release);
    atomic_store(&d.ticks, 0);
    atomic_store(&d.stop, 0);
    CHECK_EQ(weft_spawn(NULL, d.other, wait_event, &d.release, NULL), 0);
    weft_task *ticker;
    CHECK_EQ(weft_spawn(&ticker, weft_pool_current(), tick, &d, NULL), 0);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, release_on_ticks, &d), 0);
    int rc = weft_pool_destroy(d.other);
    atomic_store(&d.stop, 1);
    CHECK_EQ(weft_await(ticker, NULL), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK(atomic_load(&d.seen) >= 5);
    return rc;
}

/* Item 12: one meaning per code. */
static int strerror_esrch(void)
{
    return strcmp(weft_strerror(-ESRCH),
                  "no such thing: dead coroutine, or no trace");
}

/* The blocking threads' queue bound: with one thread, held by a gated
 * call, a second call waits at most the bound and then fails; its fn
 * never runs. */
static atomic_int g_gate, g_gated_in;

static void *gated_call(void *arg)
{
    atomic_store(&g_gated_in, 1);
    while (!atomic_load(&g_gate))
        sched_yield();
    return arg;
}

static void *offload_gated_call(void *arg)
{
    return P(weft_blocking(gated_call, arg, NULL));
}

static int blocking_queue_bound(void)
{
    /* The holder's call waits as long as it takes for the one thread
     * (which may still run an earlier row's call); then the bound is
     * 2 ms, for the calls that queue from then on. */
    weft_blocking_opts o = {.max_threads = 1, .queue_ns = UINT64_MAX};
    CHECK_EQ(weft_blocking_configure(&o), 0);
    atomic_store(&g_gate, 0);
    atomic_store(&g_gated_in, 0);
    atomic_store(&g_runs, 0);
    weft_task *holder;
    CHECK_EQ(weft_spawn(&holder, g_pool, offload_gated_call, NULL, NULL), 0);
    /* Until the holder's call runs on the one thread (any other thread
     * is beyond the bound now, and exits rather than take a call). */
    uint64_t until = wt_now_ns() + MS(10000);
    while (!atomic_load(&g_gated_in) && wt_now_ns() < until)
        sched_yield();
    CHECK(atomic_load(&g_gated_in));
    o.queue_ns = MS(2);
    CHECK_EQ(weft_blocking_configure(&o), 0);
    void *r = OLD;
    int rc = weft_blocking(count_runs, P(1), &r);
    CHECK_PTR_EQ(r, OLD);
    atomic_store(&g_gate, 1);
    void *hr = OLD;
    CHECK_EQ(weft_await(holder, &hr), 0);
    CHECK_EQ(I(hr), 0);
    CHECK_EQ(atomic_load(&g_runs), 0);
    CHECK_EQ(weft_blocking_configure(NULL), 0);
    return rc;
}

static int blocking_configure_max(void)
{
    weft_blocking_opts o = {.max_threads = WEFT_BLOCKING_THREADS_MAX + 1};
    return weft_blocking_configure(&o);
}

static int blocking_configure_reserved(void)
{
    weft_blocking_opts o = {.reserved_ = {P(1)}};
    return weft_blocking_configure(&o);
}

#ifdef WEFT_FAULT_INJECTION
/* Item 8: no memory for a timed await's timer: the lazy task did not
 * start.  Every allocation the call makes fails in turn, the first being
 * the timer's (a fresh pool's first timer needs memory for its heap; the
 * stack comes from this worker's cache, which an untimed await of a lazy
 * task of the same size filled). */
static atomic_int g_started;

static void *mark_started(void *arg)
{
    atomic_store(&g_started, 1);
    return arg;
}

static int await_for_lazy_timer_nomem(void)
{
    weft_task *warm;
    CHECK_EQ(weft_task_create(&warm, mark_started, P(7), NULL), 0);
    CHECK_EQ(weft_await(warm, NULL), 0);
    int seen = 0;
    for (unsigned long k = 1; k < 64; k++) {
        weft_task *t;
        CHECK_EQ(weft_task_create(&t, mark_started, P(7), NULL), 0);
        atomic_store(&g_started, 0);
        weft__fault_arm(k);
        int rc = weft_await_for(t, NULL, NEVER);
        weft__fault_arm(0);
        if (rc == 0)
            return seen;
        CHECK_EQ(rc, -ENOMEM);
        CHECK_EQ(atomic_load(&g_started), 0);
        CHECK_EQ(weft_task_detach(t), 0); /* never started: freed */
        seen = rc;
    }
    return 0;
}

/* Item 8: no memory for weft_blocking_for's timer: fn never runs.  With
 * one blocking thread, a call made after the failed one runs after
 * anything the failed one had queued, so once it is done, fn would have
 * run. */
static int blocking_for_timer_nomem(void)
{
    weft_blocking_opts o = {.max_threads = 1};
    CHECK_EQ(weft_blocking_configure(&o), 0);
    int seen = 0;
    for (unsigned long k = 1; k < 64; k++) {
        atomic_store(&g_runs, 0);
        weft__fault_arm(k);
        int rc = weft_blocking_for(count_runs, P(1), NULL, NEVER);
        weft__fault_arm(0);
        if (rc == 0)
            break;
        /* -EAGAIN: the thread the call needed could not be started. */
        CHECK(rc == -ENOMEM || rc == -EAGAIN);
        CHECK_EQ(weft_blocking(noop, NULL, NULL), 0);
        CHECK_EQ(atomic_load(&g_runs), 0);
        if (rc == -ENOMEM)
            seen = rc;
    }
    CHECK_EQ(weft_blocking_configure(NULL), 0);
    return seen;
}

/* Item 12: a blocking thread that cannot be started is -EAGAIN, as a
 * pool's worker.  First the idle threads go (a tiny idle time). */
static int blocking_no_thread(void)
{
    weft_blocking_opts o = {.idle_ns = 1};
    CHECK_EQ(weft_blocking_configure(&o), 0);
    uint64_t until = wt_now_ns() + MS(10000);
    while (weft__blocking_threads() && wt_now_ns() < until)
        sched_yield();
    int rc = 0;
    for (unsigned long k = 1; k < 16 && rc != -EAGAIN; k++) {
        weft__fault_arm(k);
        rc = weft_blocking(noop, NULL, NULL);
        weft__fault_arm(0);
    }
    CHECK_EQ(weft_blocking_configure(NULL), 0);
    return rc;
}

/* A task's destroy of another pool whose helper thread cannot start:
 * nothing done, that pool runs on and is destroyed afterwards. */
static int pool_destroy_no_helper(void)
{
    weft_pool *p = other_pool();
    int rc = 0;
    for (unsigned long k = 1; k < 16 && rc != -EAGAIN; k++) {
        weft__fault_arm(k);
        rc = weft_pool_destroy(p);
        weft__fault_arm(0);
        if (rc == 0)
            return 0; /* destroyed: the row fails */
    }
    still_runs_then_destroy(p);
    return rc;
}

/* Item 10: no memory for await_all_for's timer: nothing consumed. */
static int await_all_for_nomem(void)
{
    weft_task *ts[1] = {spawn_held()};
    int rc;
    OUT_OF_MEMORY(rc = weft_await_all_for(ts, 1, NULL, NEVER));
    CHECK_PTR_EQ(ts[0], g_pending);
    weft_event_set(&g_release); /* this fresh pool goes with the row */
    CHECK_EQ(weft_await(ts[0], NULL), 0);
    return rc;
}
#define AWAIT_FOR_LAZY_TIMER_NOMEM await_for_lazy_timer_nomem
#define BLOCKING_FOR_TIMER_NOMEM blocking_for_timer_nomem
#define BLOCKING_NO_THREAD blocking_no_thread
#define POOL_DESTROY_NO_HELPER pool_destroy_no_helper
#else
#define AWAIT_FOR_LAZY_TIMER_NOMEM NULL
#define BLOCKING_FOR_TIMER_NOMEM NULL
#define BLOCKING_NO_THREAD NULL
#define POOL_DESTROY_NO_HELPER NULL
#endif

/* ------------------------------------------------------------------ */
/* The table                                                            */

enum where { PLAIN, CORO, TASK, LAZY, FRESH };


struct row {
    const char *fn;
    const char *input;
    int want;
    const char *value;   /* how the table shows `want`; NULL: the errno */
    enum where where;
    int (*call)(void);   /* NULL: a fault row, outside the fault build */
    void (*after)(void); /* on the main thread afterwards, or NULL */
    bool fault;          /* needs allocations to fail (see the top) */
};

#define ROW(fn, input, want, where, call) \
    {#fn, input, want, NULL, where, call, NULL, false}
#define ROW_AFTER(fn, input, want, where, call, after) \
    {#fn, input, want, NULL, where, call, after, false}
#define VAL(fn, input, want, value, call) \
    {#fn, input, want, value, PLAIN, call, NULL, false}
#define VAL_IN(fn, input, want, value, where, call) \
    {#fn, input, want, value, where, call, NULL, false}
#ifdef WEFT_FAULT_INJECTION
#define NOMEM(fn, input, where, call) \
    {#fn, input, -ENOMEM, NULL, where, call, NULL, true}
#else
#define NOMEM(fn, input, where, call) \
    {#fn, input, -ENOMEM, NULL, where, NULL, NULL, true}
#endif

#ifdef WEFT_FAULT_INJECTION
#define AWAIT_LAZY_NOMEM await_lazy_nomem
#define AWAIT_FOR_LAZY_NOMEM await_for_lazy_nomem
#define AWAIT_ALL_LAZY_NOMEM await_all_lazy_nomem
#define SYNC_WAIT_LAZY_NOMEM sync_wait_lazy_nomem
#define TASK_JOIN_LAZY_NOMEM task_join_lazy_nomem
#define TASK_TAKE_LAZY_NOMEM task_take_lazy_nomem
#define TASK_RESULT_LAZY_NOMEM task_result_lazy_nomem
#else
#define TASK_RESULT_LAZY_NOMEM NULL
#define TASK_TAKE_LAZY_NOMEM NULL
#define TASK_JOIN_LAZY_NOMEM NULL
#define AWAIT_LAZY_NOMEM NULL
#define AWAIT_FOR_LAZY_NOMEM NULL
#define AWAIT_ALL_LAZY_NOMEM NULL
#define SYNC_WAIT_LAZY_NOMEM NULL
#endif

static const struct row rows[] = {
    VAL(weft_strerror, "unknown code (4095)", 0, "\"unknown error\"",
        strerror_unknown),
    VAL(weft_strerror, "`INT_MIN`", 0, "\"unknown error\"", strerror_int_min),
    VAL(weft_strerror, "`-ESRCH`, which means one thing", 0,
        "\"no such thing: dead coroutine, or no trace\"", strerror_esrch),

    ROW(weft_coro_create, "`out` NULL", -EINVAL, PLAIN, coro_create_out_null),
    ROW(weft_coro_create, "`fn` NULL", -EINVAL, PLAIN, coro_create_fn_null),
    ROW(weft_coro_create, "stack size over 1 GiB", -EINVAL, PLAIN,
        coro_create_stack_1g),
    ROW(weft_coro_create, "stack size `SIZE_MAX`", -EINVAL, PLAIN,
        coro_create_stack_max),
    NOMEM(weft_coro_create, "no memory for the stack", PLAIN, coro_create_nomem),
    ROW(weft_coro_resume, "NULL", -EINVAL, PLAIN, coro_resume_null),
    ROW(weft_coro_resume, "a DEAD coroutine", -ESRCH, PLAIN, coro_resume_dead),
    ROW(weft_coro_resume, "itself (RUNNING)", -EBUSY, CORO,
        coro_resume_current),
    ROW(weft_coro_resume, "its resumer (NORMAL)", -EBUSY, CORO,
        coro_resume_normal),
    ROW(weft_coro_resume, "a coroutine running on another thread", -EBUSY,
        PLAIN, coro_resume_elsewhere),
    ROW(weft_coro_yield, "on a plain thread", -EPERM, PLAIN, coro_yield),
    ROW(weft_coro_yield, "in a task", -EPERM, TASK, coro_yield),
    ROW(weft_coro_yield, "in a task on no pool", -EPERM, LAZY, coro_yield),
    ROW(weft_coro_yield, "again, while being destroyed", -ECANCELED, PLAIN,
        coro_yield_cancelled),
    ROW(weft_coro_transfer, "`to` NULL", -EINVAL, CORO, coro_transfer_null),
    ROW(weft_coro_transfer, "on a plain thread", -EPERM, PLAIN,
        coro_transfer_suspended),
    ROW(weft_coro_transfer, "in a task", -EPERM, TASK,
        coro_transfer_suspended),
    ROW(weft_coro_transfer, "in a task on no pool", -EPERM, LAZY,
        coro_transfer_suspended),
    ROW(weft_coro_transfer, "a DEAD coroutine", -ESRCH, CORO,
        coro_transfer_dead),
    ROW(weft_coro_transfer, "itself", -EBUSY, CORO, coro_transfer_self),
    ROW(weft_coro_transfer, "its resumer (NORMAL)", -EBUSY, CORO,
        coro_transfer_normal),
    ROW(weft_coro_transfer, "a coroutine running on another thread", -EBUSY,
        CORO, coro_transfer_elsewhere),
    ROW(weft_coro_transfer, "while being destroyed", -ECANCELED, PLAIN,
        coro_transfer_cancelled),
    ROW(weft_coro_destroy, "NULL", -EINVAL, PLAIN, coro_destroy_null),
    ROW(weft_coro_destroy, "itself (RUNNING)", -EBUSY, CORO,
        coro_destroy_current),
    ROW(weft_coro_destroy, "its resumer (NORMAL)", -EBUSY, CORO,
        coro_destroy_normal),
    ROW(weft_coro_destroy, "a coroutine running on another thread", -EBUSY,
        PLAIN, coro_destroy_elsewhere),
    VAL(weft_coro_status, "NULL", WEFT_CORO_DEAD, "`WEFT_CORO_DEAD`",
        coro_status_null),
    VAL(weft_coro_name, "NULL", 0, "\"\"", coro_name_null),
    VAL(weft_coro_current, "in a task (a task is no `weft_coro`)", 0, "NULL", coro_current_in_task),
    VAL(weft_overflow_handler_disable, "any call (twice: harmless)", 0, "nothing", overflow_disable),
    VAL(weft_version, "any call", 0, "`WEFT_VERSION`", version_value),
    VAL(weft_version_string, "any call", 0, "`WEFT_VERSION_STRING`", version_string_value),

    ROW(weft_pool_create, "`out` NULL", -EINVAL, PLAIN, pool_create_out_null),
    ROW(weft_pool_create, "1025 threads", -EINVAL, PLAIN, pool_create_threads),
    ROW(weft_pool_create, "stack size over 1 GiB", -EINVAL, PLAIN,
        pool_create_stack),
    NOMEM(weft_pool_create, "no memory", PLAIN, pool_create_nomem),
#ifdef WEFT_FAULT_INJECTION
    {"weft_pool_create", "a worker thread cannot be started", -EAGAIN, NULL, PLAIN, pool_create_no_thread, NULL, true},
#else
    {"weft_pool_create", "a worker thread cannot be started", -EAGAIN, NULL, PLAIN, NULL, NULL, true},
#endif
    ROW(weft_pool_destroy, "NULL", -EINVAL, PLAIN, pool_destroy_null),
    ROW(weft_pool_destroy, "its own pool, from one of its tasks", -EDEADLK, TASK, pool_destroy_own),
    ROW(weft_pool_destroy, "a pool another thread is destroying", -EBUSY,
        PLAIN, pool_destroy_twice),
    ROW(weft_pool_destroy, "another pool, in a cancelled task (nothing done)", -ECANCELED, TASK, pool_destroy_cancelled),
    {"weft_pool_destroy", "another pool, from a task whose helper thread cannot start (nothing done)", -EAGAIN, NULL, TASK, POOL_DESTROY_NO_HELPER, NULL, true},
    VAL_IN(weft_pool_destroy, "another pool, from a task (it parks: its worker runs other tasks)", 0, "0", FRESH, pool_destroy_parks),
    ROW(weft_pool_destroy_for, "its tasks run on past 2 ms (the destroy goes on)", -ETIMEDOUT, PLAIN, pool_destroy_for_timeout),
    VAL(weft_pool_threads, "NULL", 0, "0", pool_threads_null),
    VAL(weft_pool_current, "on a plain thread", 0, "NULL", pool_current_plain),

    ROW(weft_task_create, "`out` NULL", -EINVAL, PLAIN, task_create_out_null),
    ROW(weft_task_create, "`fn` NULL", -EINVAL, PLAIN, task_create_fn_null),
    ROW(weft_task_create, "stack size over 1 GiB", -EINVAL, PLAIN,
        task_create_stack),
    NOMEM(weft_task_create, "no memory for the record", PLAIN, task_create_nomem),
    ROW(weft_task_create_with, "`out` NULL", -EINVAL, PLAIN, task_create_with_out_null),
    ROW(weft_task_create_with, "`fn` NULL", -EINVAL, PLAIN, task_create_with_fn_null),
    ROW(weft_task_create_with, "`room` NULL", -EINVAL, PLAIN, task_create_with_room_null),
    ROW(weft_task_create_with, "stack size over 1 GiB", -EINVAL, PLAIN, task_create_with_stack),
    NOMEM(weft_task_create_with, "no memory for the record", PLAIN, task_create_with_nomem),
    ROW(weft_task_start, "NULL", -EINVAL, PLAIN, task_start_null),
    ROW(weft_task_start, "`pool` NULL (still lazy)", -EINVAL, PLAIN, task_start_pool_null),
    ROW_AFTER(weft_task_start, "a spawned task", -EINVAL, PLAIN, task_start_spawned, after_pending),
    ROW_AFTER(weft_task_start, "a lazy task started already", -EINVAL, PLAIN, task_start_twice, after_pending),
    ROW(weft_task_start, "a pool another thread is destroying (still lazy)", -ESHUTDOWN, PLAIN, task_start_shutdown),
    ROW(weft_task_join, "NULL", -EINVAL, TASK, task_join_null),
    ROW(weft_task_join, "the calling task's own handle", -EINVAL, PLAIN, task_join_self),
    ROW_AFTER(weft_task_join, "in a coroutine (handle not consumed)", -EDEADLK, CORO, task_join_spawned, after_pending),
    ROW_AFTER(weft_task_join, "in a cancelled task, the task still running", -ECANCELED, TASK, task_join_cancelled, after_release),
    {"weft_task_join", "a lazy task, in a task, no memory for its stack (it did not start)", -ENOMEM, NULL, TASK, TASK_JOIN_LAZY_NOMEM, after_pending, true},
    ROW_AFTER(weft_task_join, "another wait for it parked (not consumed)", -EBUSY, TASK, task_join_busy, after_release_joined),
    ROW_AFTER(weft_task_join, "another wait for it parked, on a plain thread (not consumed)", -EBUSY, PLAIN, task_join_busy, after_release_joined),
    ROW(weft_task_take, "NULL", -EINVAL, TASK, task_take_null),
    ROW_AFTER(weft_task_take, "`take` NULL (not consumed)", -EINVAL, TASK, task_take_take_null, after_pending),
    ROW_AFTER(weft_task_take, "a task without a room (not consumed)", -EINVAL, TASK, task_take_no_room, after_pending),
    ROW(weft_task_take, "the calling task's own handle", -EINVAL, PLAIN, task_take_self),
    ROW_AFTER(weft_task_take, "in a coroutine (not consumed)", -EDEADLK, CORO, task_take_spawned, after_pending),
    ROW_AFTER(weft_task_take, "in a cancelled task, the task still running (not consumed)", -ECANCELED, TASK, task_take_cancelled, after_release),
    {"weft_task_take", "a lazy task, in a task, no memory for its stack (it did not start)", -ENOMEM, NULL, TASK, TASK_TAKE_LAZY_NOMEM, after_pending, true},
    ROW_AFTER(weft_task_take, "another wait for it parked (not consumed)", -EBUSY, TASK, task_take_busy, after_release_joined),
    ROW(weft_task_result, "NULL", -EINVAL, TASK, task_result_null),
    ROW_AFTER(weft_task_result, "`result` NULL (not consumed)", -EINVAL, TASK, task_result_result_null, after_pending),
    ROW(weft_task_result, "the calling task's own handle", -EINVAL, PLAIN, task_result_self),
    ROW_AFTER(weft_task_result, "in a coroutine (not consumed)", -EDEADLK, CORO, task_result_spawned, after_pending),
    ROW_AFTER(weft_task_result, "in a cancelled task, the task still running (not consumed)", -ECANCELED, TASK, task_result_cancelled, after_release),
    {"weft_task_result", "a lazy task, in a task, no memory for its stack (it did not start)", -ENOMEM, NULL, TASK, TASK_RESULT_LAZY_NOMEM, after_pending, true},
    ROW_AFTER(weft_task_result, "another wait for it parked (not consumed)", -EBUSY, TASK, task_result_busy, after_release_joined),
    ROW(weft_task_fail, "not in a task", -EPERM, PLAIN, task_fail_plain),
    ROW(weft_spawn, "`pool` NULL", -EINVAL, PLAIN, spawn_pool_null),
    ROW(weft_spawn, "`fn` NULL", -EINVAL, PLAIN, spawn_fn_null),
    ROW(weft_spawn, "a pool another thread is destroying", -ESHUTDOWN, PLAIN,
        spawn_shutdown),
    NOMEM(weft_spawn, "no memory for the record", PLAIN, spawn_nomem),
    ROW(weft_spawn_with, "`out` NULL (fill not called)", -EINVAL, PLAIN, spawn_with_out_null),
    ROW(weft_spawn_with, "`pool` NULL", -EINVAL, PLAIN, spawn_with_pool_null),
    ROW(weft_spawn_with, "`fn` NULL", -EINVAL, PLAIN, spawn_with_fn_null),
    ROW(weft_spawn_with, "`fill` NULL", -EINVAL, PLAIN, spawn_with_fill_null),
    ROW(weft_spawn_with, "stack size over 1 GiB", -EINVAL, PLAIN, spawn_with_stack),
    ROW(weft_spawn_with, "a pool another thread is destroying (fill not called)", -ESHUTDOWN, PLAIN, spawn_with_shutdown),
    ROW(weft_spawn_with, "fill refuses with -ENOMEM (nothing queued)", -ENOMEM, PLAIN, spawn_with_fill_refuses),
    NOMEM(weft_spawn_with, "no memory for the record", PLAIN, spawn_with_nomem),
    ROW(weft_spawn_copy, "`out` NULL", -EINVAL, PLAIN, spawn_copy_out_null),
    ROW(weft_spawn_copy, "`pool` NULL", -EINVAL, PLAIN, spawn_copy_pool_null),
    ROW(weft_spawn_copy, "`fn` NULL", -EINVAL, PLAIN, spawn_copy_fn_null),
    ROW(weft_spawn_copy, "`src` NULL, `size` not 0", -EINVAL, PLAIN, spawn_copy_src_null),
    ROW(weft_spawn_copy, "stack size over 1 GiB", -EINVAL, PLAIN, spawn_copy_stack),
    ROW(weft_spawn_copy, "a pool another thread is destroying", -ESHUTDOWN, PLAIN, spawn_copy_shutdown),
    NOMEM(weft_spawn_copy, "no memory for the record", PLAIN, spawn_copy_nomem),
    ROW(weft_await, "NULL", -EINVAL, TASK, await_null),
    ROW_AFTER(weft_await, "on a plain thread (handle not consumed)", -EPERM, PLAIN,
              await_spawned, after_pending),
    ROW_AFTER(weft_await, "in a coroutine (handle not consumed)", -EPERM, CORO, await_spawned,
              after_pending),
    ROW(weft_await, "the calling task's own handle", -EINVAL, PLAIN,
        await_self_spawned),
    ROW(weft_await, "the calling lazy task's own handle", -EINVAL, PLAIN,
        await_self_lazy),
    ROW(weft_await, "its own handle, run inline by its awaiter",
        -EINVAL, PLAIN, await_self_inline),
    ROW_AFTER(weft_await, "in a cancelled task, the task still running (not consumed)", -ECANCELED, TASK, await_cancelled, after_release),
    {"weft_await", "a lazy task, no memory for its stack (not consumed)", -ENOMEM, NULL, TASK, AWAIT_LAZY_NOMEM, after_pending, true},
    ROW_AFTER(weft_await, "another wait for it parked (not consumed)", -EBUSY, TASK, await_busy, after_release_joined),
    ROW(weft_await_for, "NULL", -EINVAL, TASK, await_for_null),
    ROW_AFTER(weft_await_for, "on a plain thread (not consumed)", -EPERM, PLAIN, await_for_plain, after_pending),
    ROW_AFTER(weft_await_for, "still running after 2 ms (not consumed)", -ETIMEDOUT, TASK, await_for_timeout, after_release),
    ROW_AFTER(weft_await_for, "still running, timeout 0 (not consumed)", -ETIMEDOUT, TASK, await_for_zero, after_release),
    ROW_AFTER(weft_await_for, "still running, timeout 0, in a cancelled task (not consumed)", -ETIMEDOUT, TASK, await_for_zero_cancelled, after_release),
    {"weft_await_for", "a lazy task, no memory for its stack (not consumed)", -ENOMEM, NULL, TASK, AWAIT_FOR_LAZY_NOMEM, after_pending, true},
    ROW_AFTER(weft_await_for, "another wait for it parked (not consumed)", -EBUSY, TASK, await_for_busy, after_release_joined),
    ROW_AFTER(weft_await_for, "another wait for it parked, timeout 0 (not consumed)", -EBUSY, TASK, await_for_busy_now, after_release_joined),
    {"weft_await_for", "a lazy task, no memory for the timer (it did not start)", -ENOMEM, NULL, FRESH, AWAIT_FOR_LAZY_TIMER_NOMEM, NULL, true},
    ROW(weft_await_all, "`ts` NULL with `n` > 0", -EINVAL, TASK,
        await_all_ts_null),
    ROW_AFTER(weft_await_all, "a NULL handle among them (none consumed)",
              -EINVAL, TASK, await_all_null_handle, after_pending),
    ROW_AFTER(weft_await_all, "on a plain thread (none consumed)", -EPERM,
              PLAIN, await_all_spawned, after_pending),
    ROW_AFTER(weft_await_all, "in a cancelled task (none consumed)", -ECANCELED, TASK, await_all_cancelled, after_release),
    ROW_AFTER(weft_await_all, "the calling task's own handle after another (none consumed)", -EINVAL, TASK, await_all_own_handle, after_pending),
    ROW_AFTER(weft_await_all, "a handle given twice (none consumed)", -EINVAL, TASK, await_all_twice, after_pending),
    ROW(weft_await_all, "`n` 0, on a plain thread", -EPERM, PLAIN, await_all_none),
    ROW_AFTER(weft_await_all, "in a cancelled task, the first ended, the second running (neither consumed)", -ECANCELED, TASK, await_all_cancelled_after_one, after_both),
    ROW_AFTER(weft_await_all_for, "still running after 2 ms (not consumed)", -ETIMEDOUT, TASK, await_all_for_timeout, after_release),
    ROW_AFTER(weft_await_all_for, "still running, timeout 0, in a cancelled task (not consumed)", -ETIMEDOUT, TASK, await_all_for_zero_cancelled, after_release),
    ROW_AFTER(weft_await_all, "another wait for one parked (none consumed)", -EBUSY, TASK, await_all_busy, after_release_joined),
    ROW_AFTER(weft_await_all_for, "another wait for one parked (none consumed)", -EBUSY, TASK, await_all_for_busy, after_release_joined),
    ROW_AFTER(weft_await_all_for, "another wait for one parked, timeout 0 (none consumed)", -EBUSY, TASK, await_all_for_busy_now, after_release_joined),
    NOMEM(weft_await_all_for, "no memory for the timer (not consumed)", FRESH, await_all_for_nomem),
    {"weft_await_all", "a lazy task, no memory for its stack (not consumed)", -ENOMEM, NULL, TASK, AWAIT_ALL_LAZY_NOMEM, after_pending, true},
    ROW(weft_task_cancel, "NULL", -EINVAL, PLAIN, task_cancel_null),
    ROW(weft_sync_wait, "NULL", -EINVAL, PLAIN, sync_wait_null),
    ROW_AFTER(weft_sync_wait, "in a task (handle not consumed)", -EDEADLK, TASK,
              sync_wait_spawned, after_pending),
    ROW_AFTER(weft_sync_wait, "in a task on no pool (handle not consumed)", -EDEADLK, LAZY,
              sync_wait_spawned, after_pending),
    ROW_AFTER(weft_sync_wait, "in a coroutine (handle not consumed)", -EDEADLK, CORO,
              sync_wait_spawned, after_pending),
    {"weft_sync_wait", "a lazy task, no memory for its stack (not consumed)", -ENOMEM, NULL, PLAIN, SYNC_WAIT_LAZY_NOMEM, after_pending, true},
    ROW_AFTER(weft_sync_wait, "another wait for it parked (not consumed)", -EBUSY, PLAIN, sync_wait_busy, after_release_joined),
    ROW(weft_task_detach, "NULL", -EINVAL, PLAIN, task_detach_null),
    VAL(weft_task_current, "on a plain thread", 0, "NULL", task_current_plain),
    VAL(weft_task_cancelled, "on a plain thread", 0, "0", task_cancelled_plain),
    VAL(weft_task_name, "NULL", 0, "\"\"", task_name_null),
    VAL(weft_task_room, "NULL", 0, "NULL", task_room_null),
    VAL(weft_task_room, "a task without a room", 0, "NULL", task_room_none),
    ROW(weft_schedule, "NULL", -EINVAL, TASK, schedule_null),
    ROW(weft_schedule, "on a plain thread", -EPERM, PLAIN, schedule_pool),
    ROW(weft_schedule, "in a coroutine", -EPERM, CORO, schedule_pool),
    ROW(weft_schedule, "a pool another thread is destroying", -ESHUTDOWN,
        PLAIN, schedule_shutdown),
    VAL(weft_schedule, "a lazy task started on no pool, onto a pool of 8 MiB stacks", 0, "0, with 8 MiB of stack there", schedule_big_stacks),
    ROW(weft_yield, "on a plain thread", -EPERM, PLAIN, yield_task),
    ROW(weft_yield, "in a coroutine", -EPERM, CORO, yield_task),
    ROW(weft_yield, "in a task on no pool", -EPERM, LAZY, yield_task),
    ROW(weft_sleep, "in a cancelled task", -ECANCELED, TASK, sleep_cancelled),
    VAL_IN(weft_sleep, "0, in a cancelled task (nothing to wait for)", 0, "0", TASK, sleep_zero_cancelled),
    NOMEM(weft_sleep, "no memory for the timer", FRESH, sleep_nomem),

    VAL(weft_event_init, "NULL", 0, "nothing (ignored)", event_init_null),
    VAL(weft_event_set, "NULL", 0, "nothing (ignored)", event_set_null),
    VAL(weft_event_is_set, "NULL", 0, "false", event_is_set_null),
    ROW(weft_event_wait, "NULL", -EINVAL, PLAIN, event_wait_null),
    ROW(weft_event_wait_for, "NULL", -EINVAL, PLAIN, event_wait_for_null),
    ROW(weft_event_wait, "in a cancelled task, unset", -ECANCELED, TASK, event_wait_cancelled),
    ROW(weft_event_wait_for, "unset after 2 ms", -ETIMEDOUT, TASK, event_wait_for_timeout),
    ROW(weft_event_wait_for, "in a cancelled task, unset", -ECANCELED, TASK, event_wait_for_cancelled),
    NOMEM(weft_event_wait_for, "no memory for the timer", FRESH, event_wait_for_nomem),

    ROW(weft_blocking, "`fn` NULL, on a plain thread", -EINVAL, PLAIN,
        blocking_fn_null),
    ROW(weft_blocking, "`fn` NULL, in a task", -EINVAL, TASK,
        blocking_fn_null),
    ROW(weft_blocking, "in a cancelled task (`fn` does not run)", -ECANCELED, TASK, blocking_cancelled),
    NOMEM(weft_blocking, "no memory for the request", TASK, blocking_nomem),
    ROW(weft_blocking_for, "`fn` NULL", -EINVAL, TASK, blocking_for_null),
    ROW(weft_blocking_for, "`fn` runs longer than the timeout", -ETIMEDOUT, TASK, blocking_for_timeout),
    ROW(weft_blocking_for, "`fn` runs longer than the timeout, on a plain thread", -ETIMEDOUT, PLAIN, blocking_for_timeout),
    ROW(weft_blocking_for, "timeout 0, on a plain thread (`fn` does not run)", -ETIMEDOUT, PLAIN, blocking_for_zero),
    ROW(weft_blocking_for, "timeout 0, in a cancelled task (`fn` does not run)", -ETIMEDOUT, TASK, blocking_for_zero_cancelled),
    {"weft_blocking_for", "no memory for the timer (`fn` never runs)", -ENOMEM, NULL, FRESH, BLOCKING_FOR_TIMER_NOMEM, NULL, true},
    ROW(weft_blocking, "every thread busy past the queue bound (`fn` never runs)", -EAGAIN, TASK, blocking_queue_bound),
    {"weft_blocking", "no thread exists and none can be started", -EAGAIN, NULL, TASK, BLOCKING_NO_THREAD, NULL, true},
    ROW(weft_blocking_configure, "`max_threads` over `WEFT_BLOCKING_THREADS_MAX` (nothing changed)", -EINVAL, PLAIN, blocking_configure_max),
    ROW(weft_blocking_configure, "a reserved field set", -EINVAL, PLAIN, blocking_configure_reserved),
    NOMEM(weft_blocking_for, "no memory for the request", TASK, blocking_for_nomem),

    VAL(weft_mutex_init, "NULL", 0, "nothing (ignored)", mutex_init_null),
    ROW(weft_mutex_lock, "NULL", -EINVAL, PLAIN, mutex_lock_null),
    ROW(weft_mutex_lock, "held by the caller", -EDEADLK, TASK, mutex_relock),
    ROW(weft_mutex_lock, "held by the calling thread", -EDEADLK, PLAIN,
        mutex_relock),
    ROW(weft_mutex_lock_for, "NULL", -EINVAL, PLAIN, mutex_lock_for_null),
    ROW(weft_mutex_lock, "held by a thread, in a cancelled task", -ECANCELED, TASK, mutex_lock_cancelled),
    ROW(weft_mutex_lock_for, "held by the caller", -EDEADLK, TASK, mutex_lock_for_relock),
    ROW(weft_mutex_lock_for, "held by a thread for longer than 2 ms", -ETIMEDOUT, TASK, mutex_lock_for_timeout),
    ROW(weft_mutex_lock_for, "held by a thread, in a cancelled task", -ECANCELED, TASK, mutex_lock_for_cancelled),
    NOMEM(weft_mutex_lock_for, "held by a thread, no memory for the timer", FRESH, mutex_lock_for_nomem),
    ROW(weft_mutex_trylock, "NULL", -EINVAL, PLAIN, mutex_trylock_null),
    ROW(weft_mutex_trylock, "held (by the caller)", -EAGAIN, TASK,
        mutex_trylock_held),
    ROW(weft_mutex_trylock, "held by another thread", -EAGAIN, TASK,
        mutex_trylock_other),
    ROW(weft_mutex_unlock, "NULL", -EINVAL, PLAIN, mutex_unlock_null),
    ROW(weft_mutex_unlock, "not held", -EPERM, TASK, mutex_unlock_free),
    VAL(weft_cond_init, "NULL", 0, "nothing (ignored)", cond_init_null),
    VAL(weft_cond_signal, "NULL", 0, "nothing (ignored)", cond_signal_null),
    VAL(weft_cond_broadcast, "NULL", 0, "nothing (ignored)",
        cond_broadcast_null),
    ROW(weft_cond_wait, "`c` NULL", -EINVAL, TASK, cond_wait_null),
    ROW(weft_cond_wait, "`m` NULL", -EINVAL, TASK, cond_wait_mutex_null),
    ROW(weft_cond_wait, "`m` not held by the caller", -EPERM, TASK,
        cond_wait_unheld),
    ROW(weft_cond_wait_for, "`m` not held by the caller", -EPERM, PLAIN,
        cond_wait_for_unheld),
    ROW(weft_cond_wait, "in a cancelled task (returns holding `m`)", -ECANCELED, TASK, cond_wait_cancelled),
    ROW(weft_cond_wait_for, "`c` NULL", -EINVAL, TASK, cond_wait_for_null),
    ROW(weft_cond_wait_for, "no signal within 2 ms (returns holding `m`)", -ETIMEDOUT, TASK, cond_wait_for_timeout),
    ROW(weft_cond_wait_for, "in a cancelled task (returns holding `m`)", -ECANCELED, TASK, cond_wait_for_cancelled),
    NOMEM(weft_cond_wait_for, "no memory for the timer (returns holding `m`)", FRESH, cond_wait_for_nomem),
    VAL(weft_sem_init, "NULL", 0, "nothing (ignored)", sem_init_null),
    VAL(weft_sem_post, "NULL", 0, "nothing (ignored)", sem_post_null),
    ROW(weft_sem_wait, "NULL", -EINVAL, TASK, sem_wait_null),
    ROW(weft_sem_wait_for, "NULL", -EINVAL, PLAIN, sem_wait_for_null),
    ROW(weft_sem_trywait, "NULL", -EINVAL, PLAIN, sem_trywait_null),
    ROW(weft_sem_trywait, "no unit", -EAGAIN, TASK, sem_trywait_empty),
    ROW(weft_sem_wait, "no unit, in a cancelled task", -ECANCELED, TASK, sem_wait_cancelled),
    ROW(weft_sem_wait_for, "no unit within 2 ms", -ETIMEDOUT, TASK, sem_wait_for_timeout),
    ROW(weft_sem_wait_for, "no unit, in a cancelled task", -ECANCELED, TASK, sem_wait_for_cancelled),
    NOMEM(weft_sem_wait_for, "no unit, no memory for the timer", FRESH, sem_wait_for_nomem),
    VAL(weft_wait_group_init, "NULL", 0, "nothing (ignored)",
        wait_group_init_null),
    VAL(weft_wait_group_add, "NULL", 0, "nothing (ignored)",
        wait_group_add_null),
    VAL(weft_wait_group_done, "NULL", 0, "nothing (ignored)",
        wait_group_done_null),
    VAL(weft_wait_group_done, "more dones than adds", 0,
        "nothing (ignored; the count stays 0)", wait_group_done_below_zero),
    ROW(weft_wait_group_wait, "NULL", -EINVAL, TASK, wait_group_wait_null),
    ROW(weft_wait_group_wait_for, "NULL", -EINVAL, PLAIN,
        wait_group_wait_for_null),
    ROW(weft_wait_group_wait, "jobs outstanding, in a cancelled task", -ECANCELED, TASK, wait_group_wait_cancelled),
    ROW(weft_wait_group_wait_for, "jobs outstanding after 2 ms", -ETIMEDOUT, TASK, wait_group_wait_for_timeout),
    ROW(weft_wait_group_wait_for, "jobs outstanding, in a cancelled task", -ECANCELED, TASK, wait_group_wait_for_cancelled),
    NOMEM(weft_wait_group_wait_for, "jobs outstanding, no memory for the timer", FRESH, wait_group_wait_for_nomem),
    ROW(weft_chan_create, "`out` NULL", -EINVAL, PLAIN, chan_create_out_null),
    ROW(weft_chan_create, "capacity `SIZE_MAX`", -ENOMEM, PLAIN,
        chan_create_huge),
    ROW(weft_chan_send, "NULL", -EINVAL, TASK, chan_send_null),
    ROW(weft_chan_send, "a closed channel", -EPIPE, TASK, chan_send_closed),
    ROW(weft_chan_recv, "`ch` NULL", -EINVAL, PLAIN, chan_recv_null),
    ROW(weft_chan_recv, "`v` NULL (the value stays)", -EINVAL, TASK,
        chan_recv_v_null),
    ROW(weft_chan_recv, "closed, after the buffer drained", -EPIPE, PLAIN,
        chan_recv_closed_drained),
    ROW(weft_chan_try_send, "full", -EAGAIN, TASK, chan_try_send_full),
    ROW(weft_chan_try_recv, "empty", -EAGAIN, PLAIN, chan_try_recv_empty),
    VAL(weft_chan_close, "NULL", 0, "nothing (ignored)", chan_close_null),
    ROW(weft_chan_destroy, "NULL", -EINVAL, PLAIN, chan_destroy_null),
    ROW(weft_chan_destroy, "a receiver waits on it (left as it was)", -EBUSY, PLAIN, chan_destroy_busy),
    ROW(weft_chan_send, "nobody receives, in a cancelled task", -ECANCELED, TASK, chan_send_cancelled),
    ROW(weft_chan_recv, "empty, in a cancelled task", -ECANCELED, TASK, chan_recv_cancelled),
    ROW(weft_chan_try_send, "NULL", -EINVAL, PLAIN, chan_try_send_null),
    ROW(weft_chan_try_send, "a closed channel", -EPIPE, PLAIN, chan_try_send_closed),
    ROW(weft_chan_try_recv, "NULL", -EINVAL, PLAIN, chan_try_recv_null),
    ROW(weft_chan_try_recv, "closed and drained", -EPIPE, PLAIN, chan_try_recv_closed),
    ROW(weft_chan_send_for, "NULL", -EINVAL, PLAIN, chan_send_for_null),
    ROW(weft_chan_send_for, "a closed channel", -EPIPE, TASK, chan_send_for_closed),
    ROW(weft_chan_send_for, "nobody receives within 2 ms", -ETIMEDOUT, TASK, chan_send_for_timeout),
    ROW(weft_chan_send_for, "nobody receives, in a cancelled task", -ECANCELED, TASK, chan_send_for_cancelled),
    NOMEM(weft_chan_send_for, "nobody receives, no memory for the timer", FRESH, chan_send_for_nomem),
    ROW(weft_chan_recv_for, "NULL", -EINVAL, PLAIN, chan_recv_for_null),
    ROW(weft_chan_recv_for, "closed and drained", -EPIPE, TASK, chan_recv_for_closed),
    ROW(weft_chan_recv_for, "empty for 2 ms", -ETIMEDOUT, TASK, chan_recv_for_timeout),
    ROW(weft_chan_recv_for, "empty, in a cancelled task", -ECANCELED, TASK, chan_recv_for_cancelled),
    NOMEM(weft_chan_recv_for, "empty, no memory for the timer", FRESH, chan_recv_for_nomem),

    ROW(weft_wait_fd, "fd -1", -EBADF, TASK, wait_fd_bad),
    ROW(weft_wait_fd, "`events` 0", -EINVAL, PLAIN, wait_fd_no_events),
    ROW(weft_wait_fd, "`events` with other bits", -EINVAL, TASK,
        wait_fd_other_bits),
    ROW(weft_read, "fd -1", -EBADF, TASK, read_bad_fd),
    ROW(weft_read_for, "nothing to read, timeout 0", -ETIMEDOUT, TASK,
        read_timeout_zero),
    ROW(weft_write, "fd -1", -EBADF, PLAIN, write_bad_fd),
    ROW(weft_write, "`len` over `SSIZE_MAX`", -EINVAL, TASK, write_huge),
    ROW(weft_accept, "fd -1", -EBADF, TASK, accept_bad_fd),
    ROW(weft_connect, "fd -1", -EBADF, TASK, connect_bad_fd),
    ROW(weft_close, "fd -1", -EBADF, PLAIN, close_bad_fd),
    ROW(weft_socket, "an unknown address family", -EAFNOSUPPORT, PLAIN, socket_bad_family),
    ROW(weft_socket, "no fd left (`RLIMIT_NOFILE`)", -EMFILE, PLAIN, socket_no_fds),
    NOMEM(weft_socket, "no memory for its record", PLAIN, socket_nomem),
    ROW(weft_fd_adopt, "fd -1", -EBADF, PLAIN, adopt_bad_fd),
    ROW(weft_fd_adopt, "fd beyond the table (2^23)", -EINVAL, PLAIN, adopt_beyond_table),
    ROW(weft_fd_adopt, "an fd weft owns already", -EEXIST, PLAIN, adopt_twice),
    NOMEM(weft_fd_adopt, "no memory for its record", PLAIN, adopt_nomem),
    ROW(weft_wait_fd, "in a cancelled task, not ready", -ECANCELED, TASK, wait_fd_cancelled),
    NOMEM(weft_wait_fd, "no memory for the pool's netpoller", FRESH, wait_fd_nomem),
    ROW(weft_wait_fd_for, "not ready within 2 ms", -ETIMEDOUT, TASK, wait_fd_for_timeout),
    ROW(weft_read, "the peer reset the connection", -ECONNRESET, TASK, read_reset),
    ROW(weft_read, "a blocking pipe (borrowed, not a socket; flags untouched)", -EINVAL, TASK, read_blocking_pipe),
    ROW(weft_read, "in a cancelled task, nothing to read", -ECANCELED, TASK, read_cancelled),
    NOMEM(weft_read, "no memory for the pool's netpoller", FRESH, read_nomem),
    ROW(weft_write, "the peer reset the connection", -ECONNRESET, TASK, write_reset),
    ROW(weft_write, "the reading end is closed", -EPIPE, TASK, write_closed_peer),
    ROW(weft_write, "a blocking pipe (borrowed, not a socket)", -EINVAL, TASK, write_blocking_pipe),
    ROW(weft_write, "no room, in a cancelled task", -ECANCELED, TASK, write_cancelled),
    NOMEM(weft_write, "no memory for the pool's netpoller", FRESH, write_nomem),
    ROW(weft_write_for, "no room for 2 ms", -ETIMEDOUT, TASK, write_for_timeout),
    VAL(weft_write_some, "4 MiB to a socket with room for less", 0, "0 < the count that went < `len`", write_some_part),
    ROW(weft_write_some_for, "no room for 2 ms (nothing written)", -ETIMEDOUT, TASK, write_some_for_timeout),
    ROW(weft_wait_fd, "no fd left for the pool's netpoller (`RLIMIT_NOFILE` 1)", -EMFILE, FRESH, wait_fd_no_fds),
    ROW(weft_read, "no fd left for the pool's netpoller (`RLIMIT_NOFILE` 1)", -EMFILE, FRESH, read_no_fds),
    ROW(weft_write, "no fd left for the pool's netpoller (`RLIMIT_NOFILE` 1)", -EMFILE, FRESH, write_no_fds),
    ROW(weft_connect, "no fd left for the pool's netpoller (`RLIMIT_NOFILE` 1)", -EMFILE, FRESH, connect_no_fds),
    VAL(weft_connect, "after a timed-out one, and once more: connected already", 0, "0", connect_after_timeout),
    ROW(weft_accept, "a blocking listener (borrowed)", -EINVAL, TASK, accept_blocking_borrowed),
    ROW(weft_accept, "no fd left for the connection (`RLIMIT_NOFILE`)", -EMFILE, TASK, accept_no_fds),
    ROW(weft_accept, "in a cancelled task, nobody connects", -ECANCELED, TASK, accept_cancelled),
    NOMEM(weft_accept, "no memory for the pool's netpoller", FRESH, accept_nomem),
    ROW(weft_accept_for, "nobody connects within 2 ms", -ETIMEDOUT, TASK, accept_for_timeout),
    ROW(weft_connect, "nobody listens there", -ECONNREFUSED, TASK, connect_refused),
    ROW(weft_connect, "a blocking socket (borrowed; flags untouched)", -EINVAL, TASK, connect_blocking_borrowed),
    ROW(weft_connect, "in a cancelled task, handshake unanswered", -ECANCELED, TASK, connect_cancelled),
    NOMEM(weft_connect, "no memory for the pool's netpoller", FRESH, connect_nomem),
    ROW(weft_connect_for, "handshake unanswered for 2 ms", -ETIMEDOUT, TASK, connect_for_timeout),

    VAL(weft_task_id, "NULL", 0, "0", task_id_null),
    VAL(weft_coro_id, "NULL", 0, "0", coro_id_null),
    ROW(weft_task_set_name, "`name` NULL (the name stays)", -EINVAL, TASK,
        task_set_name_null),
    ROW(weft_task_set_name, "on a plain thread", -EPERM, PLAIN,
        task_set_name_outside),
    ROW(weft_task_set_name, "in a coroutine", -EPERM, CORO,
        task_set_name_outside),
    ROW(weft_pool_stats, "`pool` NULL", -EINVAL, PLAIN, pool_stats_null),
    ROW(weft_pool_stats, "`out` NULL", -EINVAL, TASK, pool_stats_out_null),
    ROW(weft_pool_stats, "`out->size` too small (nothing written)", -EINVAL,
        PLAIN, pool_stats_small),
    ROW(weft_pool_worker_stats, "`pool` NULL", -EINVAL, PLAIN,
        worker_stats_null),
    ROW(weft_pool_worker_stats, "`index` past every worker and spare",
        -EINVAL, PLAIN, worker_stats_index),
    ROW(weft_pool_worker_stats, "`out->size` 0", -EINVAL, TASK,
        worker_stats_small),
    ROW(weft_pool_dump, "`pool` NULL", -EINVAL, PLAIN, pool_dump_null),
    ROW(weft_pool_dump, "`out` NULL", -EINVAL, PLAIN, pool_dump_out_null),
    ROW(weft_pool_dump, "a stream open for reading only", -EIO, TASK,
        pool_dump_unwritable),
    ROW(weft_dump_all, "NULL", -EINVAL, PLAIN, dump_all_null),
    ROW(weft_dump_all, "a stream open for reading only", -EIO, PLAIN,
        dump_all_unwritable),
    ROW(weft_dump_on_signal, "`SIGKILL`", -EINVAL, PLAIN, dump_on_signal_kill),
    ROW(weft_dump_on_signal, "0", -EINVAL, PLAIN, dump_on_signal_zero),
    {"weft_dump_on_signal", "the dumper thread cannot be started", -EAGAIN, NULL, PLAIN, DUMP_ON_SIGNAL_NO_THREAD, NULL, true},
    ROW(weft_dump_on_signal, "`SIGWINCH` after `SIGURG`", -EBUSY, PLAIN,
        dump_on_signal_other),
    ROW(weft_trace_start, "NULL", -EINVAL, PLAIN, trace_start_null),
    ROW(weft_trace_start, "a trace is being recorded", -EBUSY, TASK,
        trace_start_twice),
    ROW(weft_trace_start, "a path in no folder", -ENOENT, PLAIN,
        trace_start_no_folder),
    ROW(weft_trace_start, "a folder (`/tmp`)", -EISDIR, PLAIN,
        trace_start_folder),
    ROW(weft_trace_stop, "no trace is being recorded", -ESRCH, PLAIN,
        trace_stop_none),
    ROW(weft_trace_stop, "`/dev/full`: every write fails", -EIO, PLAIN,
        trace_stop_unwritable),
};

#define NROWS (sizeof rows / sizeof rows[0])

/* ------------------------------------------------------------------ */
/* Running a row in its context                                         */

struct box {
    int (*call)(void);
    int rc;
};

/* The coroutine still works after the refused call: a yield round trip. */
static void *coro_body(void *arg)
{
    struct box *b = arg;
    b->rc = b->call();
    void *in = OLD;
    CHECK_EQ(weft_coro_yield(P(1), &in), 0);
    CHECK_EQ(I(in), 2);
    return P(3);
}

static int in_coro(int (*call)(void))
{
    struct box b = {call, 0};
    weft_coro *co;
    assert_int_equal(weft_coro_create(&co, coro_body, NULL), 0);
    void *out = OLD;
    assert_int_equal(weft_coro_resume(co, &b, &out), 0);
    assert_int_equal(I(out), 1);
    assert_int_equal(weft_coro_status(co), WEFT_CORO_SUSPENDED);
    assert_int_equal(weft_coro_resume(co, P(2), &out), 0);
    assert_int_equal(I(out), 3);
    assert_int_equal(weft_coro_status(co), WEFT_CORO_DEAD);
    assert_int_equal(weft_coro_destroy(co), 0);
    return b.rc;
}

/* The task still works: it yields on its pool. */
static void *task_body(void *arg)
{
    struct box *b = arg;
    b->rc = b->call();
    CHECK_PTR_EQ(weft_pool_current(), g_pool);
    CHECK_EQ(weft_yield(), 0);
    return P(3);
}

/* A task on no pool still works: it hops onto one. */
static void *lazy_body(void *arg)
{
    struct box *b = arg;
    CHECK(weft_pool_current() == NULL);
    b->rc = b->call();
    CHECK(weft_pool_current() == NULL);
    CHECK_EQ(weft_schedule(g_pool), 0);
    CHECK_PTR_EQ(weft_pool_current(), g_pool);
    return P(3);
}

static int in_task(int (*call)(void), bool lazy)
{
    struct box b = {call, 0};
    weft_task *t;
    if (lazy)
        assert_int_equal(weft_task_create(&t, lazy_body, &b, NULL), 0);
    else
        assert_int_equal(weft_spawn(&t, g_pool, task_body, &b, NULL), 0);
    void *r = OLD;
    assert_int_equal(weft_sync_wait(t, &r), 0);
    assert_int_equal(I(r), 3);
    return b.rc;
}

/* In a task of a pool made for the row (its workers have armed no timer,
 * it has no netpoller yet), then destroyed. */
static int in_fresh_pool(int (*call)(void))
{
    weft_pool *p;
    weft_pool_opts o = {.threads = 1, .name = "fresh"};
    assert_int_equal(weft_pool_create(&p, &o), 0);
    weft_pool *saved = g_pool;
    g_pool = p;
    int rc = in_task(call, false);
    g_pool = saved;
    assert_int_equal(weft_pool_destroy(p), 0);
    return rc;
}

static void run_row(void **state)
{
    const struct row *row = *state;
    if (!row->call)
        skip(); /* a fault row: the fault-injection build runs it */
    int rc;
    switch (row->where) {
    case CORO: rc = in_coro(row->call); break;
    case TASK: rc = in_task(row->call, false); break;
    case LAZY: rc = in_task(row->call, true); break;
    case FRESH: rc = in_fresh_pool(row->call); break;
    default: rc = row->call(); break;
    }
    assert_int_equal(rc, row->want);
    if (row->after)
        row->after();
    WT_CLEAN();
}

static char names[NROWS][160]; /* "function: input", the case names */

static int row_setup(void **state)
{
    const struct row *row = *state;
    wt_current_case = names[row - rows];
    atomic_store(&check_failures, 0);
    signal(SIGALRM, wt_on_alarm);
    alarm(60);
    return 0;
}

static int group_setup(void **state)
{
    (void)state;
    g_pool = wt_pool_named(2, "bad");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    return weft_pool_destroy(g_pool);
}

/* The name of a negative errno value ("EINVAL"), or NULL. */
static const char *errno_name(int e)
{
    return e < 0 ? strerrorname_np(-e) : NULL;
}

/* docs/errors.md's table, one line per row. */
static void print_table(void)
{
    printf("| function | when | returns |\n|---|---|---|\n");
    for (size_t i = 0; i < NROWS; i++) {
        const char *note = rows[i].fault ? " (fault-injection build)" : "";
        if (rows[i].value)
            printf("| `%s` | %s%s | %s |\n", rows[i].fn, rows[i].input, note,
                   rows[i].value);
        else
            printf("| `%s` | %s%s | `-%s` |\n", rows[i].fn, rows[i].input,
                   note, errno_name(rows[i].want));
    }
}

/* (function, code) per row, for check_errors.py; "-" for rows that are no
 * error code. */
static void print_list(void)
{
    for (size_t i = 0; i < NROWS; i++)
        printf("%s\t%s\t%s\n", rows[i].fn,
               rows[i].value ? "-" : errno_name(rows[i].want), rows[i].input);
}

int main(int argc, char **argv)
{
    /* Every row's expectation must be a known code (or a shown value). */
    for (size_t i = 0; i < NROWS; i++) {
        if (!rows[i].value && !errno_name(rows[i].want)) {
            fprintf(stderr, "row %zu (%s: %s): %d is no errno value\n", i,
                    rows[i].fn, rows[i].input, rows[i].want);
            return 1;
        }
    }
    if (argc > 1 && strcmp(argv[1], "--table") == 0) {
        print_table();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        print_list();
        return 0;
    }
    wt_main_init();
    /* A write to a closed peer must fail with EPIPE, not kill us. */
    signal(SIGPIPE, SIG_IGN);
    static struct CMUnitTest tests[NROWS];
    for (size_t i = 0; i < NROWS; i++) {
        snprintf(names[i], sizeof names[i], "%s: %s", rows[i].fn,
                 rows[i].input);
        tests[i] = (struct CMUnitTest){names[i], run_row, row_setup,
                                       wt_teardown, (void *)&rows[i]};
    }
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
