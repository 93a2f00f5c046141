/*
 * fuzz_ops.c — libFuzzer harness: an input is a sequence of coroutine,
 * task and event operations, each checked against a small reference model
 * of the contract (weft/coro.h, weft/task.h, weft/event.h).
 *
 * An op is three bytes: code, a, b (missing bytes read as 0).  At most
 * MAX_OPS ops run per input.  Whatever context is running takes the next
 * op from the input and performs it itself: the main thread (ROOT), a
 * standalone coroutine of one of NCO slots (its body is this same
 * interpreter), or a driver task (DRIVER) that ROOT runs with
 * weft_sync_wait, on the pool or on the main thread.  So a coroutine that
 * was resumed performs the ops that follow, until an op makes it yield,
 * transfer, return or resume another.
 *
 * The model: the state of every coroutine slot (SUSPENDED, RUNNING, NORMAL,
 * DEAD; started; being destroyed), its resumer, and for every context the
 * return code and value its pending call must come back with.  Before a
 * call that switches, the model hands control to the context it predicts
 * will run next and records what that context must receive; whoever
 * actually runs next checks that it is that context (weft_coro_current),
 * and that its call came back with that code and value.  A refused call
 * must return the predicted error at once and change nothing the model can
 * see (statuses, values not written).
 *
 * Tasks: "leaf" tasks (NTASK handle slots) run a fixed body chosen by the
 * op (return a value, yield, wait on or set an event, spawn and await a
 * child, hop onto the pool, make refused calls, await its own handle); they run concurrently on
 * a 2-worker pool, so the harness checks only results, never timing:
 * await and sync_wait return the body's value, and each body checks the
 * codes its calls return against what its home (pool or none) allows.  An
 * await or wait that could never end (an event nobody will set) is skipped.
 * Events: two, set by ops or by setter tasks; a wait's result is checked
 * where the model knows whether the event is set.
 *
 * Per input everything is torn down: coroutines destroyed (a suspended one
 * by cancellation), events set, held handles waited for, and the harness
 * waits until every task body has finished.  The pool lives for the
 * process; op POOL2 makes and destroys a second one.
 */
#include <weft/weft.h>

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCO 4
#define NTASK 4
#define NEV 2
#define MAX_OPS 256
#define MAX_LEAVES MAX_OPS

#define P(x) ((void *)(intptr_t)(x))
#define I(p) ((intptr_t)(p))

static int sentinel_obj;
#define OLD ((void *)&sentinel_obj) /* "not written by the refused call" */

static void fail(int line, const char *what)
{
    fprintf(stderr, "fuzz_ops.c:%d: check failed: %s\n", line, what);
    abort();
}
#define FCHECK(c) ((c) ? (void)0 : fail(__LINE__, #c))

/* ------------------------------------------------------------ input */

enum opcode {
    OP_CO_CREATE,   /* a: slot */
    OP_CO_RESUME,   /* a: slot (empty: NULL), b: value */
    OP_CO_YIELD,    /* b: value */
    OP_CO_TRANSFER, /* a: slot (empty: NULL), b: value */
    OP_RETURN,      /* b: value; the coroutine or driver task returns */
    OP_CO_DESTROY,  /* a: slot (empty: NULL) */
    OP_CO_STATUS,   /* a: slot */
    OP_T_SPAWN,     /* a: slot, b: body kind and argument */
    OP_T_CREATE,    /* a: slot, b: body kind and argument (lazy) */
    OP_T_AWAIT,     /* a: slot (empty: NULL) */
    OP_T_SYNC_WAIT, /* a: slot (empty: NULL) */
    OP_T_DETACH,    /* a: slot (empty: NULL) */
    OP_EV_SET,      /* a: event */
    OP_EV_WAIT,     /* a: event, b: wait, wait_for 0, wait_for 50 us, is_set */
    OP_DRIVE,       /* a: driver spawned, lazy on no pool, lazy then hop */
    OP_T_YIELD,     /* a: weft_yield or weft_schedule(pool) */
    OP_POOL2,       /* a: tasks to run on a second pool, then destroy it */
    NOPS
};

struct op {
    unsigned code, a, b;
};

static const uint8_t *in_data;
static size_t in_size, in_pos;
static unsigned nops;

static unsigned next_byte(void)
{
    return in_pos < in_size ? in_data[in_pos++] : 0;
}

static bool next_op(struct op *op)
{
    if (in_pos >= in_size || nops >= MAX_OPS)
        return false;
    nops++;
    op->code = next_byte() % NOPS;
    op->a = next_byte();
    op->b = next_byte();
    return true;
}

/* A value that names the op that passed it. */
static void *op_value(const struct op *op)
{
    return P(((intptr_t)nops << 8) | op->b);
}

/* ------------------------------------------------------------ the model */

enum { ROOT, DRIVER, CO0, NCTX = CO0 + NCO };
enum pending { P_NONE, P_RESUME, P_YIELD, P_TRANSFER, P_DESTROY, P_SYNC };

struct ctx {
    /* coroutine slots */
    weft_coro *co;
    bool live, started, cancel;
    weft_coro_state state;
    int resumer;
    int destroying;      /* the slot its pending destroy cancels */
    /* every context: what its pending call must come back with */
    enum pending pending;
    int want_rc;
    bool check_val;
    void *want_val;
};

static struct ctx cx[NCTX];
static int cur;                 /* the context the model says runs */
static weft_coro *driver_co;    /* the driver task's own coroutine */
static bool driver_on_pool;
static weft_pool *pool;

static bool is_co(int c) { return c >= CO0; }

static void set_state(int c, weft_coro_state s)
{
    if (is_co(c))
        cx[c].state = s;
}

static weft_coro *real_co(int c)
{
    return c == ROOT ? NULL : c == DRIVER ? driver_co : cx[c].co;
}

/* Control goes to `to`, whose pending call must return rc (and val). */
static void handoff(int to, int rc, bool check_val, void *val)
{
    cur = to;
    cx[to].want_rc = rc;
    cx[to].check_val = check_val;
    cx[to].want_val = val;
}

/* `me` runs again: it must be the one the model handed control to. */
static void arrive(int me, int rc, void *val)
{
    FCHECK(cur == me);
    FCHECK(weft_coro_current() == real_co(me));
    FCHECK(rc == cx[me].want_rc);
    if (cx[me].check_val)
        FCHECK(val == cx[me].want_val);
    cx[me].pending = P_NONE;
}

static int slot_of(const weft_coro *co)
{
    for (int c = CO0; c < NCTX; c++)
        if (cx[c].live && cx[c].co == co)
            return c;
    fail(__LINE__, "running coroutine is in no slot");
    return -1;
}

/* After a refused call on slot s: nothing changed. */
static void unchanged(int s)
{
    if (cx[s].live)
        FCHECK(weft_coro_status(cx[s].co) == cx[s].state);
}

/* ------------------------------------------------------------ events */

static weft_event ev[NEV];
static bool ev_set[NEV];   /* surely set (by an op, or seen set) */
static bool ev_will[NEV];  /* a setter task is spawned: it will be set */

/* ------------------------------------------------------------ leaf tasks */

enum kind { K_VALUE, K_YIELDS, K_WAIT, K_SET, K_CHILD, K_HOP, K_MISUSE,
            K_WAIT_FOR, K_AWAIT_SELF, NKINDS };

struct leaf {
    weft_task *self;   /* its handle: create and spawn write it here */
    enum kind kind;
    intptr_t arg;
    int ev;
    bool on_pool;      /* where it starts: on the pool, or on no pool */
    bool set_before;   /* its event was surely set before it started */
    atomic_int done;
};

static struct leaf leaves[MAX_LEAVES];
static unsigned nleaves;

struct tslot {
    weft_task *t;
    struct leaf *rec;
    bool lazy;
};
static struct tslot ts[NTASK];

static intptr_t leaf_result(const struct leaf *l)
{
    return l->arg * 3 + 1 + (intptr_t)l->kind * 1000;
}

static void *times3_plus1(void *arg) { return P(I(arg) * 3 + 1); }

static void *leaf_body(void *arg)
{
    struct leaf *l = arg;
    intptr_t r = leaf_result(l);
    FCHECK(weft_pool_current() == (l->on_pool ? pool : NULL));
    switch (l->kind) {
    case K_VALUE:
        break;
    case K_YIELDS:
        for (intptr_t i = 0; i < l->arg % 3 + 1; i++)
            FCHECK(weft_yield() == (l->on_pool ? 0 : -EPERM));
        break;
    case K_WAIT:
        FCHECK(weft_event_wait(&ev[l->ev]) == 0);
        FCHECK(weft_event_is_set(&ev[l->ev]));
        break;
    case K_SET:
        weft_event_set(&ev[l->ev]);
        break;
    case K_CHILD: {
        weft_task *c;
        FCHECK(weft_spawn(&c, pool, times3_plus1, P(l->arg), NULL) == 0);
        void *v = OLD;
        FCHECK(weft_await(c, &v) == 0);
        FCHECK(v == P(l->arg * 3 + 1));
        break;
    }
    case K_HOP:
        FCHECK(weft_schedule(pool) == 0);
        FCHECK(weft_pool_current() == pool);
        break;
    case K_MISUSE: {
        void *v = OLD;
        FCHECK(weft_coro_yield(P(1), &v) == -EPERM);
        FCHECK(weft_coro_transfer(NULL, P(1), &v) == -EINVAL);
        FCHECK(weft_await(NULL, &v) == -EINVAL);
        FCHECK(weft_sync_wait(NULL, &v) == -EINVAL);
        FCHECK(v == OLD);
        /* A task is no weft_coro: there is none to resume or destroy. */
        FCHECK(weft_coro_current() == NULL);
        FCHECK(weft_coro_resume(NULL, P(1), &v) == -EINVAL);
        FCHECK(weft_coro_destroy(NULL) == -EINVAL);
        if (l->on_pool)
            FCHECK(weft_pool_destroy(pool) == -EDEADLK);
        break;
    }
    case K_WAIT_FOR: {
        int rc = weft_event_wait_for(&ev[l->ev], 50000);
        FCHECK(rc == 0 || rc == -ETIMEDOUT);
        if (rc == 0)
            FCHECK(weft_event_is_set(&ev[l->ev]));
        if (l->set_before)
            FCHECK(rc == 0);
        break;
    }
    case K_AWAIT_SELF: {
        /* Also when its body runs inline in the awaiter's. */
        void *v = OLD;
        FCHECK(weft_await(l->self, &v) == -EINVAL);
        FCHECK(v == OLD);
        break;
    }
    default:
        fail(__LINE__, "bad kind");
    }
    atomic_store_explicit(&l->done, 1, memory_order_release);
    return P(r);
}

static struct leaf *new_leaf(unsigned b)
{
    struct leaf *l = &leaves[nleaves++];
    l->kind = (enum kind)(b % NKINDS);
    l->arg = (intptr_t)(b / NKINDS);
    l->ev = (int)(b / NKINDS) % NEV;
    l->on_pool = false;
    l->set_before = false;
    atomic_store(&l->done, 0);
    return l;
}

/* An await or sync_wait of it might never return. */
static bool may_block_forever(const struct leaf *l)
{
    return l->kind == K_WAIT && !ev_set[l->ev] && !ev_will[l->ev];
}

/* A leaf is about to start: where, and what it may assume. */
static void starting(struct leaf *l, bool on_pool)
{
    l->on_pool = on_pool;
    l->set_before = ev_set[l->ev];
}

/* It has ended and given its result. */
static void ended(struct tslot *s, int rc, void *r)
{
    FCHECK(rc == 0);
    FCHECK(r == P(leaf_result(s->rec)));
    FCHECK(atomic_load_explicit(&s->rec->done, memory_order_acquire));
    if (s->rec->kind == K_SET)
        ev_set[s->rec->ev] = true;
    s->t = NULL;
}

/* ------------------------------------------------------------ interpreter */

static intptr_t run(int me);
static void exec(int me, const struct op *op);

static void *co_body(void *in)
{
    int me = slot_of(weft_coro_current());
    arrive(me, 0, in);
    intptr_t v = run(me);
    /* The model: this body returns; its resumer runs on. */
    cx[me].state = WEFT_CORO_DEAD;
    int r = cx[me].resumer;
    set_state(r, WEFT_CORO_RUNNING);
    if (cx[r].pending == P_DESTROY && cx[r].destroying == me)
        handoff(r, 0, false, NULL);
    else
        handoff(r, 0, true, P(v));
    return P(v);
}

static void *driver_body(void *arg)
{
    driver_co = weft_coro_current();
    if (I(arg) == 2)
        FCHECK(weft_schedule(pool) == 0);
    arrive(DRIVER, 0, NULL);
    FCHECK(weft_pool_current() == (driver_on_pool ? pool : NULL));
    intptr_t v = run(DRIVER);
    handoff(ROOT, 0, true, P(v));
    return P(v);
}

/* FUZZ_OPS_TRACE=1: print each op as its context takes it (to read what
 * an input does, e.g. a seed or a crash). */
static bool trace;

/* Runs ops until one makes this context return, or the input ends. */
static intptr_t run(int me)
{
    static const char *const names[NOPS] = {
        "co_create", "co_resume", "co_yield", "co_transfer", "return",
        "co_destroy", "co_status", "t_spawn", "t_create", "t_await",
        "t_sync_wait", "t_detach", "ev_set", "ev_wait", "drive", "t_yield",
        "pool2"};
    struct op op;
    while (next_op(&op)) {
        if (trace) {
            char who[8];
            if (is_co(me))
                snprintf(who, sizeof who, "co%d", me - CO0);
            fprintf(stderr, "%3u %-5s %-11s %3u %3u\n", nops,
                    me == ROOT ? "root" : me == DRIVER ? "drv" : who,
                    names[op.code], op.a, op.b);
        }
        FCHECK(cur == me);
        if (op.code == OP_RETURN) {
            if (me != ROOT)
                return I(op_value(&op));
            continue;
        }
        exec(me, &op);
    }
    return -1;
}

static void op_resume(int me, int s, void *v)
{
    void *out = OLD;
    if (!cx[s].live) {
        FCHECK(weft_coro_resume(NULL, v, &out) == -EINVAL);
    } else if (cx[s].state != WEFT_CORO_SUSPENDED) {
        int want = cx[s].state == WEFT_CORO_DEAD ? -ESRCH : -EBUSY;
        FCHECK(weft_coro_resume(cx[s].co, v, &out) == want);
        unchanged(s);
    } else {
        set_state(me, WEFT_CORO_NORMAL);
        cx[s].state = WEFT_CORO_RUNNING;
        cx[s].started = true;
        cx[s].resumer = me;
        cx[me].pending = P_RESUME;
        handoff(s, 0, true, v);
        int rc = weft_coro_resume(cx[s].co, v, &out);
        arrive(me, rc, out);
        return;
    }
    FCHECK(out == OLD);
}

static void op_yield(int me, void *v)
{
    void *in = OLD;
    if (!is_co(me)) {
        FCHECK(weft_coro_yield(v, &in) == -EPERM);
    } else if (cx[me].cancel) {
        FCHECK(weft_coro_yield(v, &in) == -ECANCELED);
    } else {
        int r = cx[me].resumer;
        set_state(r, WEFT_CORO_RUNNING);
        cx[me].state = WEFT_CORO_SUSPENDED;
        cx[me].pending = P_YIELD;
        handoff(r, 0, true, v);
        int rc = weft_coro_yield(v, &in);
        arrive(me, rc, in);
        return;
    }
    FCHECK(in == OLD);
}

static void op_transfer(int me, int s, void *v)
{
    void *out = OLD;
    weft_coro *to = cx[s].live ? cx[s].co : NULL;
    int want;
    if (!to)
        want = -EINVAL;
    else if (!is_co(me))
        want = -EPERM;
    else if (cx[me].cancel)
        want = -ECANCELED;
    else if (cx[s].state == WEFT_CORO_DEAD)
        want = -ESRCH;
    else if (cx[s].state != WEFT_CORO_SUSPENDED)
        want = -EBUSY;
    else {
        cx[s].resumer = cx[me].resumer;
        cx[me].state = WEFT_CORO_SUSPENDED;
        cx[me].pending = P_TRANSFER;
        cx[s].state = WEFT_CORO_RUNNING;
        cx[s].started = true;
        handoff(s, 0, true, v);
        int rc = weft_coro_transfer(to, v, &out);
        arrive(me, rc, out);
        return;
    }
    FCHECK(weft_coro_transfer(to, v, &out) == want);
    FCHECK(out == OLD);
    unchanged(s);
}

static void op_destroy(int me, int s)
{
    if (!cx[s].live) {
        FCHECK(weft_coro_destroy(NULL) == -EINVAL);
        return;
    }
    weft_coro_state st = cx[s].state;
    if (st == WEFT_CORO_RUNNING || st == WEFT_CORO_NORMAL) {
        FCHECK(weft_coro_destroy(cx[s].co) == -EBUSY);
        unchanged(s);
        return;
    }
    if (st == WEFT_CORO_SUSPENDED && cx[s].started) {
        /* Resumed with cancellation; destroy returns when it has ended. */
        cx[s].cancel = true;
        cx[s].resumer = me;
        cx[s].state = WEFT_CORO_RUNNING;
        set_state(me, WEFT_CORO_NORMAL);
        cx[me].pending = P_DESTROY;
        cx[me].destroying = s;
        handoff(s, -ECANCELED, false, NULL);
        int rc = weft_coro_destroy(cx[s].co);
        arrive(me, rc, NULL);
        FCHECK(cx[s].state == WEFT_CORO_DEAD);
    } else {
        FCHECK(weft_coro_destroy(cx[s].co) == 0);
    }
    cx[s].live = false;
}

static void op_create(int s)
{
    if (cx[s].live)
        return;
    char name[8];
    snprintf(name, sizeof name, "co%d", s - CO0);
    weft_coro_opts o = {.stack_size = 64 * 1024, .name = name};
    FCHECK(weft_coro_create(&cx[s].co, co_body, &o) == 0);
    FCHECK(strcmp(weft_coro_name(cx[s].co), name) == 0);
    cx[s].live = true;
    cx[s].started = false;
    cx[s].cancel = false;
    cx[s].state = WEFT_CORO_SUSPENDED;
    cx[s].pending = P_NONE;
}

static void op_task_new(struct tslot *s, unsigned b, bool lazy)
{
    if (s->t)
        return;
    struct leaf *l = new_leaf(b);
    s->rec = l;
    s->lazy = lazy;
    if (lazy) {
        FCHECK(weft_task_create(&l->self, leaf_body, l, NULL) == 0);
    } else {
        starting(l, true);
        if (l->kind == K_SET)
            ev_will[l->ev] = true;
        FCHECK(weft_spawn(&l->self, pool, leaf_body, l, NULL) == 0);
    }
    s->t = l->self;
}

/* weft_await (for DRIVER, a task) or weft_sync_wait (for ROOT, a plain
 * thread); elsewhere refused, and the handle is still ours. */
static void op_wait(int me, struct tslot *s, bool await)
{
    int (*wait)(weft_task *, void **) = await ? weft_await : weft_sync_wait;
    void *r = OLD;
    if (!s->t) {
        FCHECK(wait(NULL, &r) == -EINVAL);
    } else if (me != (await ? DRIVER : ROOT)) {
        FCHECK(wait(s->t, &r) == (await ? -EPERM : -EDEADLK));
    } else if (!may_block_forever(s->rec)) {
        bool on_pool = me == DRIVER && driver_on_pool;
        if (s->lazy)
            starting(s->rec, on_pool); /* it starts in our home */
        int rc = wait(s->t, &r);
        ended(s, rc, r);
        FCHECK(weft_pool_current() == (on_pool ? pool : NULL));
        return;
    }
    FCHECK(r == OLD);
}

static void op_detach(struct tslot *s)
{
    if (!s->t) {
        FCHECK(weft_task_detach(NULL) == -EINVAL);
        return;
    }
    FCHECK(weft_task_detach(s->t) == 0);
    /* A lazy task that never ran is freed without running. */
    if (s->lazy)
        atomic_store(&s->rec->done, 1);
    s->t = NULL;
}

static void op_event_wait(int e, unsigned mode)
{
    bool surely = ev_set[e], never = !ev_set[e] && !ev_will[e];
    switch (mode % 4) {
    case 0:
        if (never)
            return;
        FCHECK(weft_event_wait(&ev[e]) == 0);
        ev_set[e] = true;
        return;
    case 1:
    case 2: {
        int rc = weft_event_wait_for(&ev[e], mode % 4 == 1 ? 0 : 50000);
        FCHECK(rc == 0 || rc == -ETIMEDOUT);
        FCHECK(!surely || rc == 0);
        FCHECK(!never || rc == -ETIMEDOUT);
        if (rc == 0)
            ev_set[e] = true;
        return;
    }
    default: {
        bool set = weft_event_is_set(&ev[e]);
        FCHECK(!surely || set);
        FCHECK(!never || !set);
        if (set)
            ev_set[e] = true;
        return;
    }
    }
}

/* From the main thread: a driver task runs the ops that follow. */
static void op_drive(int me, unsigned kind)
{
    kind %= 3;
    weft_task *t;
    if (me != ROOT) {
        /* Not on a plain thread: refused, and the lazy task never ran. */
        FCHECK(weft_task_create(&t, driver_body, P(kind), NULL) == 0);
        FCHECK(weft_sync_wait(t, NULL) == -EDEADLK);
        FCHECK(weft_task_detach(t) == 0);
        return;
    }
    driver_on_pool = kind != 1;
    cx[ROOT].pending = P_SYNC;
    handoff(DRIVER, 0, false, NULL);
    if (kind == 0)
        FCHECK(weft_spawn(&t, pool, driver_body, P(kind), NULL) == 0);
    else
        FCHECK(weft_task_create(&t, driver_body, P(kind), NULL) == 0);
    void *r = OLD;
    int rc = weft_sync_wait(t, &r);
    arrive(ROOT, rc, r);
    driver_co = NULL;
}

static void op_task_yield(int me, unsigned mode)
{
    bool in_task = me == DRIVER;
    if (mode % 2 == 0) {
        FCHECK(weft_yield() == (in_task && driver_on_pool ? 0 : -EPERM));
    } else {
        FCHECK(weft_schedule(pool) == (in_task ? 0 : -EPERM));
        if (in_task)
            driver_on_pool = true;
    }
    if (in_task)
        FCHECK(weft_pool_current() == (driver_on_pool ? pool : NULL));
    else if (me == ROOT)
        FCHECK(weft_pool_current() == NULL);
}

static void *count_on_pool2(void *arg)
{
    FCHECK(weft_yield() == 0);
    atomic_fetch_add((atomic_int *)arg, 1);
    return NULL;
}

/* A second pool: destroy drains every task spawned onto it. */
static void op_pool2(int me, unsigned n)
{
    if (me != ROOT)
        return;
    n = n % 4 + 1;
    weft_pool *p2;
    weft_pool_opts o = {.threads = 1, .stack_size = 0, .name = "pool2"};
    FCHECK(weft_pool_create(&p2, &o) == 0);
    atomic_int count = 0;
    for (unsigned i = 0; i < n; i++)
        FCHECK(weft_spawn(NULL, p2, count_on_pool2, &count, NULL) == 0);
    FCHECK(weft_pool_destroy(p2) == 0);
    FCHECK(atomic_load(&count) == (int)n);
}

static void exec(int me, const struct op *op)
{
    int s = CO0 + (int)(op->a % NCO);
    struct tslot *t = &ts[op->a % NTASK];
    switch ((enum opcode)op->code) {
    case OP_CO_CREATE: op_create(s); break;
    case OP_CO_RESUME: op_resume(me, s, op_value(op)); break;
    case OP_CO_YIELD: op_yield(me, op_value(op)); break;
    case OP_CO_TRANSFER: op_transfer(me, s, op_value(op)); break;
    case OP_CO_DESTROY: op_destroy(me, s); break;
    case OP_CO_STATUS:
        if (cx[s].live)
            FCHECK(weft_coro_status(cx[s].co) == cx[s].state);
        else
            FCHECK(weft_coro_status(NULL) == WEFT_CORO_DEAD);
        break;
    case OP_T_SPAWN: op_task_new(t, op->b, false); break;
    case OP_T_CREATE: op_task_new(t, op->b, true); break;
    case OP_T_AWAIT: op_wait(me, t, true); break;
    case OP_T_SYNC_WAIT: op_wait(me, t, false); break;
    case OP_T_DETACH: op_detach(t); break;
    case OP_EV_SET:
        weft_event_set(&ev[op->a % NEV]);
        ev_set[op->a % NEV] = true;
        break;
    case OP_EV_WAIT: op_event_wait((int)(op->a % NEV), op->b); break;
    case OP_DRIVE: op_drive(me, op->a); break;
    case OP_T_YIELD: op_task_yield(me, op->a); break;
    case OP_POOL2: op_pool2(me, op->a); break;
    case OP_RETURN:
    case NOPS:
        break;
    }
}

/* ------------------------------------------------------------ one input */

static void reset(void)
{
    memset(cx, 0, sizeof cx);
    memset(ts, 0, sizeof ts);
    cur = ROOT;
    driver_co = NULL;
    nleaves = 0;
    for (int e = 0; e < NEV; e++) {
        weft_event_init(&ev[e]);
        ev_set[e] = ev_will[e] = false;
    }
}

/* The input has ended: take everything down. */
static void teardown(void)
{
    FCHECK(cur == ROOT);
    for (int s = CO0; s < NCTX; s++)
        if (cx[s].live)
            op_destroy(ROOT, s); /* cancelled bodies find no more ops */
    for (int e = 0; e < NEV; e++) {
        weft_event_set(&ev[e]);
        ev_set[e] = true;
    }
    for (int i = 0; i < NTASK; i++)
        if (ts[i].t)
            op_wait(ROOT, &ts[i], false);
    for (unsigned i = 0; i < nleaves; i++)
        while (!atomic_load_explicit(&leaves[i].done, memory_order_acquire))
            sched_yield();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!pool) {
        trace = getenv("FUZZ_OPS_TRACE") != NULL;
        weft_pool_opts o = {.threads = 2, .stack_size = 64 * 1024,
                            .name = "fuzz"};
        FCHECK(weft_pool_create(&pool, &o) == 0);
    }
    in_data = data;
    in_size = size;
    in_pos = 0;
    nops = 0;
    reset();
    run(ROOT);
    teardown();
    return 0;
}
