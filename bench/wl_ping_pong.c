/*
 * wl_ping_pong.c — us per round trip of a token between two tasks.
 *
 * Tasks A and B, both spawned from main onto a pool of --threads workers,
 * bounce a token N round trips through fire-once events: round r has one
 * event per direction, ping[r % 2] (A sets, B waits) and pong[r % 2] (B
 * sets, A waits).  Each event is re-armed with weft_event_init by its waiter
 * before the move that lets the other side set it, and only after its
 * previous use is over (the setter's last touch of an event happens before
 * its waiter's wait returns, and the waiter then hands the turn over), so
 * two pairs suffice:
 *
 *     A, round r: init(pong[r%2]); token++; set(ping[r%2]); wait(pong[r%2])
 *     B, round r: wait(ping[r%2]); init(ping[(r+1)%2]); token++; set(pong[r%2])
 *
 * A waiting task parks (its worker runs other tasks, or idles); a set makes
 * it ready again.  Which workers run A and B is the scheduler's choice (weft
 * has no pinning): on two workers they may share one, in which case this is
 * a same-thread hand-off, or each hold one, in which case every move wakes
 * the other worker.  The clock runs inside A, from its first move to B's
 * last answer.  Reported: elapsed / N, and as an extra figure `cpu`, the
 * process's CPU time (user + system, every thread: cpu.h) between the same
 * two points per round trip, in us: a worker that spins while the other
 * side thinks costs CPU there even when it makes the round trip shorter.
 *
 * Peers: Go unbuffered channels, Boost.Fiber buffered channels, the
 * mutex/condvar pool (two jobs each holding a worker), and peer-futex-pair's
 * futex pair (two plain threads that sleep in FUTEX_WAIT at every move):
 * the kernel hand-off a runtime's ping-pong should beat.
 *
 * Check: the token, incremented once per move by whichever side moves: 2N.
 *
 * ping-pong-fp: the same, except that both sides do one double division
 * (fp.h: raises inexact) at every move, before handing the turn over, and
 * B then clears its flags (bench_fp_clear): A always parks with inexact
 * raised and B with every flag clear, as two tasks of which one computes
 * with doubles, so the contexts a worker switches between differ in their
 * raised FP exception flags (see wl_switch.c's switch-fp).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <weft/event.h>

#include "clock.h"
#include "cpu.h"
#include "fp.h"
#include "wl_pool.h"
#include "workloads.h"

#define WHO "ping-pong"

typedef struct pp_run {
    weft_event ping[2];     /* A -> B */
    weft_event pong[2];     /* B -> A */
    uint64_t token;         /* handed over by the events' set -> wait order */
    uint64_t n;
    uint64_t t0, t1;
    uint64_t cpu0, cpu1;
    bench_task_err err;
} pp_run;

/* Side A's loop; fp is a constant in each caller, so ping-pong's loop is
 * exactly the plain one.  Likewise B's below. */
static inline __attribute__((always_inline)) void *pp_a_loop(pp_run *r,
                                                             bool fp)
{
    r->cpu0 = bench_cpu_ns();
    r->t0 = bench_now_ns();
    for (uint64_t i = 0; i < r->n; i++) {
        weft_event *mine = &r->pong[i % 2];
        int rc;

        weft_event_init(mine);
        if (fp)
            bench_fp_raise();
        r->token++;
        weft_event_set(&r->ping[i % 2]);
        rc = weft_event_wait(mine);
        if (rc != 0) {
            bench_task_error(&r->err, rc, "weft_event_wait (A)");
            return NULL;
        }
    }
    r->t1 = bench_now_ns();
    r->cpu1 = bench_cpu_ns();
    return NULL;
}

static inline __attribute__((always_inline)) void *pp_b_loop(pp_run *r,
                                                             bool fp)
{
    for (uint64_t i = 0; i < r->n; i++) {
        int rc = weft_event_wait(&r->ping[i % 2]);

        if (rc != 0) {
            bench_task_error(&r->err, rc, "weft_event_wait (B)");
            return NULL;
        }
        weft_event_init(&r->ping[(i + 1) % 2]);
        if (fp) {
            bench_fp_raise();
            bench_fp_clear();
        }
        r->token++;
        weft_event_set(&r->pong[i % 2]);
    }
    return NULL;
}

static void *pp_a(void *arg)
{
    return pp_a_loop(arg, false);
}

static void *pp_b(void *arg)
{
    return pp_b_loop(arg, false);
}

static void *pp_a_fp(void *arg)
{
    return pp_a_loop(arg, true);
}

static void *pp_b_fp(void *arg)
{
    return pp_b_loop(arg, true);
}

static int pp_run_weft(const bench_params *p, bench_sample *out, bool fp)
{
    pp_run r = { .n = p->n };
    weft_fn a_fn = fp ? pp_a_fp : pp_a, b_fn = fp ? pp_b_fp : pp_b;
    weft_pool *pool;
    weft_task *a, *b;
    int rc, rc2;

    bench_task_err_reset(&r.err);
    weft_event_init(&r.ping[0]);
    weft_event_init(&r.ping[1]);
    weft_event_init(&r.pong[0]);
    weft_event_init(&r.pong[1]);
    rc = bench_pool_create(&pool, p->threads, WHO);
    if (rc != 0)
        return rc;
    rc = weft_spawn(&b, pool, b_fn, &r, NULL);
    if (rc != 0) {
        fprintf(stderr, WHO ": weft_spawn (B): %s\n", weft_strerror(rc));
        bench_pool_destroy(pool, WHO);
        return rc;
    }
    rc = weft_spawn(&a, pool, a_fn, &r, NULL);
    if (rc != 0) {
        /* B is waiting for its first ping: main plays A (event waits block
         * a plain thread), so B finishes and the pool can drain. */
        fprintf(stderr, WHO ": weft_spawn (A): %s\n", weft_strerror(rc));
        a_fn(&r);
        weft_sync_wait(b, NULL);
        bench_pool_destroy(pool, WHO);
        return rc;
    }
    rc = weft_sync_wait(a, NULL);
    if (rc != 0)
        fprintf(stderr, WHO ": weft_sync_wait (A): %s\n", weft_strerror(rc));
    rc2 = weft_sync_wait(b, NULL);
    if (rc2 != 0)
        fprintf(stderr, WHO ": weft_sync_wait (B): %s\n", weft_strerror(rc2));
    if (rc == 0)
        rc = rc2;
    rc2 = bench_pool_destroy(pool, WHO);
    if (rc == 0)
        rc = bench_task_err_check(&r.err, WHO);
    if (rc == 0)
        rc = rc2;
    if (rc != 0)
        return rc;
    out->value = (double)(r.t1 - r.t0) / 1e3 / (double)p->n;
    out->check = r.token;
    out->extra[0] = (double)(r.cpu1 - r.cpu0) / 1e3 / (double)p->n;
    return 0;
}

static int pp_weft(const bench_params *p, bench_sample *out)
{
    return pp_run_weft(p, out, false);
}

static int pp_fp_weft(const bench_params *p, bench_sample *out)
{
    return pp_run_weft(p, out, true);
}

static uint64_t pp_expect(const bench_params *p)
{
    return 2 * p->n;
}

static const char *const pp_peers[] = {
    "go", "boost-fiber", "mutex-pool", "futex-pair", "tbb", "openmp", NULL
};

static const bench_extra pp_extra[] = {
    { "cpu", "us/op" },
    { NULL, NULL },
};

const bench_workload bench_wl_ping_pong = {
    .name = "ping-pong",
    .desc = "two tasks bounce a token N round trips through weft_events",
    .unit = "us/round trip",
    .default_n = 100000,
    .pooled = true,
    .run_weft = pp_weft,
    .expect = pp_expect,
    .peers = pp_peers,
    .extra = pp_extra,
};

const bench_workload bench_wl_ping_pong_fp = {
    .name = "ping-pong-fp",
    .desc = "as ping-pong, both sides divide a double at every move and B "
            "clears its FP flags",
    .unit = "us/round trip",
    .default_n = 100000,
    .pooled = true,
    .run_weft = pp_fp_weft,
    .expect = pp_expect,
    .peers = pp_peers,
    .extra = pp_extra,
};
