/*
 * mutex_pool.c — peer-mutex-pool: the textbook thread pool.
 *
 * THREADS worker threads take jobs from one FIFO queue guarded by one
 * pthread mutex and one condition variable; a submit mallocs a queue node,
 * appends it and signals one idle worker.  Jobs run to completion on the
 * worker's own stack: there is no suspension, so a job that waits blocks its
 * worker thread.  This is the baseline a coroutine runtime replaces.
 *
 *   spawn-join  main submits N jobs (job i stores i + 1 in slot i of an
 *               array allocated before the clock starts) and waits until all
 *               have run: a counter of finished jobs under a mutex, and a
 *               condition variable main sleeps on until it reaches N.  weft
 *               submits from a task and joins through handles; here main is
 *               the submitter (a job that waited for other jobs would hold a
 *               worker).  Check: the sum of the N results, N(N+1)/2.  Unit:
 *               ms for the whole run.
 *   sync-wait   N rounds: main submits one job (it computes i + 1) and
 *               sleeps on that job's own mutex + condition variable (on
 *               main's stack, initialised each round) until the job marks it
 *               done.  The same round trip as weft_sync_wait on a task that
 *               hops to the pool.  Check: sum of (result - i) = N.  Unit: us
 *               per round trip.  Extra figure `cpu`: the process's CPU time
 *               (user + system, every thread: getrusage, cpu.h) over the
 *               same loop, us per round trip.
 *   ping-pong   Two jobs, each holding one worker for the whole run (so it
 *               needs THREADS >= 2, else n/a), bounce a token N round trips
 *               through one mutex and two condition variables (one per
 *               side): a job increments the token, hands the turn over,
 *               signals the other side and sleeps on its own condition until
 *               the turn comes back.  Check: the token, 2N.  Unit: us per
 *               round trip.  Extra figure `cpu`: the process's CPU time
 *               between the clock's two readings (taken with them, by side
 *               A), us per round trip.
 *   ping-pong-fp  The same, except that at every move both jobs do one
 *               double division (fp.h: raises inexact) before passing the
 *               turn, and B then clears its flags (bench_fp_clear), as
 *               weft's ping-pong-fp.  The kernel saves every thread's whole
 *               FP state when it switches threads, so the flags change
 *               nothing here but the two operations' own cost.
 *   mutex       (wl_mutex.c) A shared account, a double balance and a
 *               count of operations, guarded by one pthread_mutex_t (the
 *               default, glibc's futex mutex): main submits 8 jobs, each
 *               making N / 8 deposits (at least 1) of sqrt((double)i) *
 *               rate, computed outside the lock, under lock / unlock
 *               (balance += it, ops++), and waits until all have run (a
 *               counter of finished jobs and a condition variable, as
 *               spawn-join).  A job holds its worker to the end, so THREADS
 *               jobs contend at a time, and one that finds the mutex held
 *               blocks its thread in the kernel.  Check: ops, 8 (N / 8).
 *               Unit: ns per lock.  Extra figure `cpu`: the process's CPU
 *               time over the same region, ns per lock.
 *   skynet, fib n/a: recursive fork-join on a pool whose jobs block their
 *               worker deadlocks as soon as every worker waits for a child
 *               still in the queue.  (Running children inline when the pool
 *               is full would no longer be a thread pool measurement.)
 *   yield       n/a: a job cannot give its worker up without returning.
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "fp.h"
#include "peer.h"

typedef struct job {
    void (*fn)(void *arg);
    void *arg;
    struct job *next;
} job;

typedef struct pool {
    pthread_mutex_t mu;
    pthread_cond_t work;    /* signalled when a job is queued or at stop */
    job *head;
    job *tail;
    bool stop;
    unsigned nthreads;
    pthread_t *threads;
} pool;

static void *worker_main(void *arg)
{
    pool *p = arg;

    pthread_mutex_lock(&p->mu);
    for (;;) {
        job *j;

        while (p->head == NULL && !p->stop)
            pthread_cond_wait(&p->work, &p->mu);
        if (p->head == NULL) /* stop, and the queue is drained */
            break;
        j = p->head;
        p->head = j->next;
        if (p->head == NULL)
            p->tail = NULL;
        pthread_mutex_unlock(&p->mu);
        j->fn(j->arg);
        free(j);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static int pool_start(pool *p, unsigned nthreads)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    p->threads = calloc(nthreads, sizeof *p->threads);
    if (p->threads == NULL)
        return -1;
    for (unsigned i = 0; i < nthreads; i++) {
        if (pthread_create(&p->threads[i], NULL, worker_main, p) != 0)
            return -1;
        p->nthreads++;
    }
    return 0;
}

/* Drains the queue, then joins the workers. */
static void pool_stop(pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->mu);
}

static int pool_submit(pool *p, void (*fn)(void *), void *arg)
{
    job *j = malloc(sizeof *j);

    if (j == NULL)
        return -1;
    j->fn = fn;
    j->arg = arg;
    j->next = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->tail != NULL)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

/* ---- spawn-join ---- */

typedef struct join_state {
    uint64_t *results;
    pthread_mutex_t mu;
    pthread_cond_t all_done;
    uint64_t finished;
    uint64_t n;
} join_state;

static join_state join;

static void join_job(void *arg)
{
    uint64_t i = (uint64_t)(uintptr_t)arg;

    join.results[i] = i + 1;
    pthread_mutex_lock(&join.mu);
    if (++join.finished == join.n)
        pthread_cond_signal(&join.all_done);
    pthread_mutex_unlock(&join.mu);
}

static int run_spawn_join(pool *p, uint64_t n)
{
    uint64_t sum = 0, t0, t1;

    join.results = malloc(n * sizeof *join.results);
    if (join.results == NULL)
        return PEER_EXIT_FAILED;
    pthread_mutex_init(&join.mu, NULL);
    pthread_cond_init(&join.all_done, NULL);
    join.finished = 0;
    join.n = n;

    t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        if (pool_submit(p, join_job, (void *)(uintptr_t)i) != 0) {
            fprintf(stderr, "peer-mutex-pool: out of memory\n");
            exit(PEER_EXIT_FAILED);
        }
    }
    pthread_mutex_lock(&join.mu);
    while (join.finished != n)
        pthread_cond_wait(&join.all_done, &join.mu);
    pthread_mutex_unlock(&join.mu);
    for (uint64_t i = 0; i < n; i++)
        sum += join.results[i];
    t1 = bench_now_ns();

    peer_report((double)(t1 - t0) / 1e6, sum);
    free(join.results);
    return 0;
}

/* ---- sync-wait ---- */

typedef struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    uint64_t arg;
    uint64_t result;
} waiter;

static void sync_job(void *arg)
{
    waiter *w = arg;

    pthread_mutex_lock(&w->mu);
    w->result = w->arg + 1;
    w->done = true;
    pthread_cond_signal(&w->cv);
    /* Main may free w as soon as this unlock lets it see done. */
    pthread_mutex_unlock(&w->mu);
}

static int run_sync_wait(pool *p, uint64_t n)
{
    uint64_t sum = 0, t0, t1, cpu0, cpu1;

    cpu0 = bench_cpu_ns();
    t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        waiter w;

        pthread_mutex_init(&w.mu, NULL);
        pthread_cond_init(&w.cv, NULL);
        w.done = false;
        w.arg = i;
        if (pool_submit(p, sync_job, &w) != 0) {
            fprintf(stderr, "peer-mutex-pool: out of memory\n");
            exit(PEER_EXIT_FAILED);
        }
        pthread_mutex_lock(&w.mu);
        while (!w.done)
            pthread_cond_wait(&w.cv, &w.mu);
        pthread_mutex_unlock(&w.mu);
        pthread_cond_destroy(&w.cv);
        pthread_mutex_destroy(&w.mu);
        sum += w.result - i;
    }
    t1 = bench_now_ns();
    cpu1 = bench_cpu_ns();

    double cpu = (double)(cpu1 - cpu0) / 1e3 / (double)n;
    peer_report_extra((double)(t1 - t0) / 1e3 / (double)n, sum, &cpu, 1);
    return 0;
}

/* ---- mutex ---- */

#define MUTEX_JOBS 8
/* The interest rate; any value: only the multiplication's cost matters. */
#define MUTEX_RATE 1e-6

typedef struct account {
    pthread_mutex_t mu;
    double balance;             /* guarded by mu */
    uint64_t ops;               /* guarded by mu */
    uint64_t per_job;           /* deposits each job makes */
    pthread_mutex_t done_mu;
    pthread_cond_t done_cv;
    int done;                   /* jobs finished, under done_mu */
} account;

static account acct;

static void deposit_job(void *arg)
{
    (void)arg;
    for (uint64_t i = 0; i < acct.per_job; i++) {
        double interest = sqrt((double)i) * MUTEX_RATE;

        pthread_mutex_lock(&acct.mu);
        acct.balance += interest;
        acct.ops++;
        pthread_mutex_unlock(&acct.mu);
    }
    pthread_mutex_lock(&acct.done_mu);
    if (++acct.done == MUTEX_JOBS)
        pthread_cond_signal(&acct.done_cv);
    pthread_mutex_unlock(&acct.done_mu);
}

static int run_mutex(pool *p, uint64_t n)
{
    uint64_t t0, t1, cpu0, cpu1;

    memset(&acct, 0, sizeof acct);
    pthread_mutex_init(&acct.mu, NULL);
    pthread_mutex_init(&acct.done_mu, NULL);
    pthread_cond_init(&acct.done_cv, NULL);
    /* N / 8 deposits per job, at least 1 (as every implementation). */
    acct.per_job = n / MUTEX_JOBS > 0 ? n / MUTEX_JOBS : 1;

    cpu0 = bench_cpu_ns();
    t0 = bench_now_ns();
    for (int k = 0; k < MUTEX_JOBS; k++) {
        if (pool_submit(p, deposit_job, NULL) != 0) {
            fprintf(stderr, "peer-mutex-pool: out of memory\n");
            exit(PEER_EXIT_FAILED);
        }
    }
    pthread_mutex_lock(&acct.done_mu);
    while (acct.done != MUTEX_JOBS)
        pthread_cond_wait(&acct.done_cv, &acct.done_mu);
    pthread_mutex_unlock(&acct.done_mu);
    t1 = bench_now_ns();
    cpu1 = bench_cpu_ns();

    double ops = (double)MUTEX_JOBS * (double)acct.per_job;
    double cpu = (double)(cpu1 - cpu0) / ops;
    pthread_mutex_lock(&acct.mu);
    uint64_t counted = acct.ops;
    pthread_mutex_unlock(&acct.mu);
    peer_report_extra((double)(t1 - t0) / ops, counted, &cpu, 1);
    return 0;
}

/* ---- ping-pong ---- */

typedef struct table {
    pthread_mutex_t mu;
    pthread_cond_t turn_cv[2];  /* side k sleeps on turn_cv[k] */
    int turn;                   /* whose move: 0 = A, 1 = B */
    uint64_t token;
    uint64_t rounds;
    bool fp;                    /* ping-pong-fp */
    uint64_t t0, t1;
    uint64_t cpu0, cpu1;
    pthread_mutex_t done_mu;
    pthread_cond_t done_cv;
    int done;
} table;

static table tbl;

/* Side k makes `rounds` moves: wait for its turn, bump the token, pass. */
static void play(int k)
{
    pthread_mutex_lock(&tbl.mu);
    for (uint64_t i = 0; i < tbl.rounds; i++) {
        while (tbl.turn != k)
            pthread_cond_wait(&tbl.turn_cv[k], &tbl.mu);
        if (k == 0 && i == 0) {
            tbl.cpu0 = bench_cpu_ns();
            tbl.t0 = bench_now_ns();
        }
        if (tbl.fp) {
            bench_fp_raise();
            if (k == 1)
                bench_fp_clear();
        }
        tbl.token++;
        tbl.turn = 1 - k;
        pthread_cond_signal(&tbl.turn_cv[1 - k]);
    }
    if (k == 0) { /* A's last pass is answered once more by B */
        while (tbl.turn != 0)
            pthread_cond_wait(&tbl.turn_cv[0], &tbl.mu);
        tbl.t1 = bench_now_ns();
        tbl.cpu1 = bench_cpu_ns();
    }
    pthread_mutex_unlock(&tbl.mu);

    pthread_mutex_lock(&tbl.done_mu);
    tbl.done++;
    pthread_cond_signal(&tbl.done_cv);
    pthread_mutex_unlock(&tbl.done_mu);
}

static void side_a(void *arg) { (void)arg; play(0); }
static void side_b(void *arg) { (void)arg; play(1); }

static int run_ping_pong(pool *p, uint64_t n, bool fp)
{
    memset(&tbl, 0, sizeof tbl);
    pthread_mutex_init(&tbl.mu, NULL);
    pthread_cond_init(&tbl.turn_cv[0], NULL);
    pthread_cond_init(&tbl.turn_cv[1], NULL);
    pthread_mutex_init(&tbl.done_mu, NULL);
    pthread_cond_init(&tbl.done_cv, NULL);
    tbl.rounds = n;
    tbl.fp = fp;

    if (pool_submit(p, side_b, NULL) != 0 || pool_submit(p, side_a, NULL) != 0)
        return PEER_EXIT_FAILED;
    pthread_mutex_lock(&tbl.done_mu);
    while (tbl.done != 2)
        pthread_cond_wait(&tbl.done_cv, &tbl.done_mu);
    pthread_mutex_unlock(&tbl.done_mu);

    double cpu = (double)(tbl.cpu1 - tbl.cpu0) / 1e3 / (double)n;
    peer_report_extra((double)(tbl.t1 - tbl.t0) / 1e3 / (double)n, tbl.token,
                      &cpu, 1);
    return 0;
}

int main(int argc, char **argv)
{
    peer_args a;
    pool p;
    int rc;

    peer_parse_args(argc, argv, &a);
    bool ping_pong = strcmp(a.workload, "ping-pong") == 0 ||
                     strcmp(a.workload, "ping-pong-fp") == 0;
    if (strcmp(a.workload, "skynet") == 0 || strcmp(a.workload, "fib") == 0 ||
        strcmp(a.workload, "yield") == 0)
        return PEER_EXIT_UNKNOWN_WORKLOAD; /* see the top of this file */
    if (ping_pong && a.threads < 2)
        return PEER_EXIT_UNKNOWN_WORKLOAD; /* each side holds a worker */
    if (strcmp(a.workload, "spawn-join") != 0 &&
        strcmp(a.workload, "sync-wait") != 0 &&
        strcmp(a.workload, "mutex") != 0 && !ping_pong) {
        fprintf(stderr, "peer-mutex-pool: no workload '%s'\n", a.workload);
        return PEER_EXIT_UNKNOWN_WORKLOAD;
    }

    /* The pool is started before, and stopped after, the timed region. */
    if (pool_start(&p, a.threads) != 0) {
        fprintf(stderr, "peer-mutex-pool: cannot start %u threads\n", a.threads);
        return PEER_EXIT_FAILED;
    }
    if (strcmp(a.workload, "spawn-join") == 0)
        rc = run_spawn_join(&p, a.n);
    else if (strcmp(a.workload, "sync-wait") == 0)
        rc = run_sync_wait(&p, a.n);
    else if (strcmp(a.workload, "mutex") == 0)
        rc = run_mutex(&p, a.n);
    else
        rc = run_ping_pong(&p, a.n, strcmp(a.workload, "ping-pong-fp") == 0);
    pool_stop(&p);
    return rc;
}
