/*
 * wl_mutex.c — ns per lock/unlock of a contended weft_mutex.
 *
 * A shared account, a double balance and a count of operations, guarded by
 * one weft_mutex.  main (a plain thread) spawns 8 tasks onto a pool of
 * --threads workers; each makes N / 8 deposits (at least 1):
 *
 *     double interest = sqrt((double)i) * rate;   outside the lock
 *     lock; balance += interest; ops++; unlock;
 *
 * then main weft_sync_waits each.  The work outside the lock is a few ns,
 * so on two or more workers the mutex is nearly always wanted by another
 * task when it is released: the figure is what a busy mutex costs, a fast
 * path taken where the lock is free, a park and a wake where it is not
 * (which of the two, and how often a task keeps the lock across its next
 * iteration, is the mutex's policy, measured here as it is).  Eight tasks
 * rather than one per worker so that a worker has other tasks to run while
 * one waits, as a server's tasks would.  The pool is made before the clock
 * starts; the clock runs in main from before the first spawn to after the
 * last wait.  Reported: elapsed / ops, and as an extra figure `cpu`, the
 * process's CPU time (user + system, every thread: cpu.h) over the same
 * region per operation, in ns: a lock that spins instead of parking pays
 * for it there.
 *
 * Peers: Go (8 goroutines, sync.Mutex), Boost.Fiber (8 fibers,
 * boost::fibers::mutex, on the work_stealing scheduler), TBB (8 tasks of a
 * task_group in an arena of THREADS, std::mutex), and the mutex/condvar
 * pool (8 jobs, a pthread_mutex_t: a job runs to the end on its worker, so
 * THREADS of them contend at a time, and a waiting one blocks its thread).
 *
 * Check: ops, counted under the lock: 8 (N / 8), so a mutex that lets two
 * holders in loses increments and fails the run.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include <weft/sync.h>

#include "clock.h"
#include "cpu.h"
#include "wl_pool.h"
#include "workloads.h"

#define WHO "mutex"
#define MUTEX_TASKS 8

/* The interest rate; any value: only the multiplication's cost matters. */
static const double mutex_rate = 1e-6;

typedef struct mutex_run {
    weft_mutex mu;
    double balance;         /* guarded by mu */
    uint64_t ops;           /* guarded by mu: the check */
    uint64_t per_task;      /* deposits each task makes */
    bench_task_err err;
} mutex_run;

/* Deposits per task: N / 8, at least 1 (every implementation the same). */
static uint64_t mutex_per_task(const bench_params *p)
{
    uint64_t per = p->n / MUTEX_TASKS;

    return per > 0 ? per : 1;
}

static void *mutex_task(void *arg)
{
    mutex_run *r = arg;

    for (uint64_t i = 0; i < r->per_task; i++) {
        double interest = sqrt((double)i) * mutex_rate;
        int rc = weft_mutex_lock(&r->mu);

        if (rc != 0) {
            bench_task_error(&r->err, rc, "weft_mutex_lock");
            return NULL;
        }
        r->balance += interest;
        r->ops++;
        rc = weft_mutex_unlock(&r->mu);
        if (rc != 0) {
            bench_task_error(&r->err, rc, "weft_mutex_unlock");
            return NULL;
        }
    }
    return NULL;
}

static int mutex_weft(const bench_params *p, bench_sample *out)
{
    mutex_run r = { .per_task = mutex_per_task(p) };
    weft_task *t[MUTEX_TASKS];
    weft_pool *pool;
    uint64_t t0, t1, cpu0, cpu1;
    int spawned, rc = 0, rc2;

    bench_task_err_reset(&r.err);
    weft_mutex_init(&r.mu);
    rc = bench_pool_create(&pool, p->threads, WHO);
    if (rc != 0)
        return rc;

    cpu0 = bench_cpu_ns();
    t0 = bench_now_ns();
    for (spawned = 0; spawned < MUTEX_TASKS; spawned++) {
        rc = weft_spawn(&t[spawned], pool, mutex_task, &r, NULL);
        if (rc != 0) {
            fprintf(stderr, WHO ": weft_spawn (task %d): %s\n", spawned,
                    weft_strerror(rc));
            break; /* the ones spawned still end: wait for them below */
        }
    }
    for (int i = 0; i < spawned; i++) {
        rc2 = weft_sync_wait(t[i], NULL);
        if (rc2 != 0) {
            fprintf(stderr, WHO ": weft_sync_wait (task %d): %s\n", i,
                    weft_strerror(rc2));
            if (rc == 0)
                rc = rc2;
        }
    }
    t1 = bench_now_ns();
    cpu1 = bench_cpu_ns();

    rc2 = bench_pool_destroy(pool, WHO);
    if (rc == 0)
        rc = bench_task_err_check(&r.err, WHO);
    if (rc == 0)
        rc = rc2;
    if (rc != 0)
        return rc;
    /* Per operation made, not per N: a short count shows as a failed check,
     * never as a faster lock. */
    double ops = (double)MUTEX_TASKS * (double)r.per_task;
    out->value = (double)(t1 - t0) / ops;
    out->check = r.ops;
    out->extra[0] = (double)(cpu1 - cpu0) / ops;
    return 0;
}

static uint64_t mutex_expect(const bench_params *p)
{
    return (uint64_t)MUTEX_TASKS * mutex_per_task(p);
}

static const char *const mutex_peers[] = {
    "go", "boost-fiber", "tbb", "mutex-pool", NULL
};

static const bench_extra mutex_extra[] = {
    { "cpu", "ns/op" },
    { NULL, NULL },
};

const bench_workload bench_wl_mutex = {
    .name = "mutex",
    .desc = "8 tasks x N/8 x (sqrt outside; weft_mutex_lock; balance += it; "
            "ops++; unlock)",
    .unit = "ns/lock",
    .default_n = 5000000,
    .pooled = true,
    .run_weft = mutex_weft,
    .expect = mutex_expect,
    .ops = mutex_expect, /* one per lock/unlock */
    .peers = mutex_peers,
    .extra = mutex_extra,
};
