/*
 * sched/stats.c — a pool's counters (weft_pool_stats,
 * weft_pool_worker_stats; sched/observe.h says what costs what).
 *
 * The workers' counters are read with relaxed loads while the workers
 * write them, so each is a value it had at some moment of the call; the
 * counts by state come from one walk of the task records (dump.c's
 * snapshot, without the stacks); the global queue's length from walking
 * it under its dequeuers' lock (liburcu allows a walk beside enqueuers
 * there).
 */
#include "sched/snapshot.h"

#include <weft/inspect.h>

#include "base/clock.h"
#include "base/compiler.h"
#include "base/direct.h"
#include "ctx/stack.h"
#include "sched/monitor.h"
#include "sched/task.h"
#include "sched/worker.h"

#include <errno.h>
#include <string.h>

/* The smallest structs a caller may pass: those of weft 1.0. */
#define POOL_STATS_MIN sizeof(struct weft_pool_stats)
#define WORKER_STATS_MIN sizeof(struct weft_worker_stats)

/* A counter its worker is writing (sched/observe.h). */
#define load(c) (*(const volatile uint64_t *)(c))

WEFT_RACY_READS static void worker_stats(weft_pool *p,
                                         struct weft__worker *w, uint64_t now,
                                         struct weft_worker_stats *o)
{
    struct weft__worker_stats *s = &w->stats;
    o->runs = load(&s->runs);
    o->spawned = (uint64_t)atomic_load_explicit(&w->arrived,
                                                memory_order_relaxed);
    o->steal_attempts = load(&s->steal_tries);
    o->steals = load(&s->steals);
    o->lifo_hits = load(&s->lifo_hits);
    o->parks = load(&s->parks);
    o->wakeups = load(&s->wakeups);
    /* A sleep in progress counts as idle up to now. */
    uint64_t since = load(&s->idle_since);
    /* The sleep may have ended between the two loads: then it is in
     * idle_ns, or about to be, and counted once or not at all. */
    uint64_t idle =
        load(&s->idle_ns) + (since && now > since ? now - since : 0);
    uint64_t alive = now > p->made_ns ? now - p->made_ns : 0;
    /* A spare's time is not counted: it spends most of its life not
     * being one of the pool's workers. */
    bool spare = w->index >= p->nworkers;
    o->idle_ns = spare ? 0 : idle;
    o->busy_ns = spare || alive <= idle ? 0 : alive - idle;
    o->queued = weft__runq_len(&w->q);
    weft__lock(&w->timers.lock);
    o->timers = w->timers.n;
    pthread_mutex_unlock(&w->timers.lock);
}

/* Entries in the global queue now, up to an enqueue that is still
 * linking its node: liburcu's blocking walk would sleep 10 ms for it,
 * with the dequeuers' lock held (pool.c, dequeue_linked). */
static uint64_t global_queued(weft_pool *p)
{
    uint64_t n = 0;
    weft__spin_lock(&p->inject_lock);
    struct cds_wfcq_node *node =
        __cds_wfcq_first_nonblocking(&p->inject_head, &p->inject_tail);
    while (node && node != CDS_WFCQ_WOULDBLOCK) {
        n++;
        node = __cds_wfcq_next_nonblocking(&p->inject_head, &p->inject_tail,
                                           node);
    }
    weft__spin_unlock(&p->inject_lock);
    return n;
}

static void count_task(struct weft_pool_stats *o, const struct weft__snap *s)
{
    o->tasks++;
    if (s->stack_bytes) {
        o->stacks++;
        o->stack_bytes += s->stack_bytes;
    }
    if (!s->waiting) {
        if (s->lifecycle == WEFT__T_RUNNING)
            o->running++;
        else if (s->lifecycle == WEFT__T_SCHEDULED)
            o->runnable++;
        else {
            o->parked++;
            o->parked_other++;
        }
        return;
    }
    o->parked++;
    unsigned r = s->kind ? s->kind->reason : WEFT__WR_OTHER;
    uint64_t *by[WEFT__WR_COUNT] = {
        [WEFT__WR_OTHER] = &o->parked_other,
        [WEFT__WR_MUTEX] = &o->parked_mutex,
        [WEFT__WR_COND] = &o->parked_cond,
        [WEFT__WR_SEM] = &o->parked_sem,
        [WEFT__WR_WAIT_GROUP] = &o->parked_wait_group,
        [WEFT__WR_CHAN_SEND] = &o->parked_chan_send,
        [WEFT__WR_CHAN_RECV] = &o->parked_chan_recv,
        [WEFT__WR_EVENT] = &o->parked_event,
        [WEFT__WR_SLEEP] = &o->parked_sleep,
        [WEFT__WR_FD_READ] = &o->parked_fd_read,
        [WEFT__WR_FD_WRITE] = &o->parked_fd_write,
        [WEFT__WR_AWAIT] = &o->parked_await,
        [WEFT__WR_BLOCKING] = &o->parked_blocking,
    };
    (*by[r < WEFT__WR_COUNT ? r : WEFT__WR_OTHER])++;
}

static bool task_ended(struct weft__task *t)
{
    return weft__task_lifecycle(atomic_load_explicit(
               &weft__task_done_racy(t)->state, memory_order_relaxed)) ==
           WEFT__T_COMPLETE;
}

/* The caller's struct gets min(its size, ours) bytes of ours, and zeroes
 * past that up to its size. */
static void hand_over(void *out, const void *ours, size_t ours_size)
{
    size_t theirs = *(const size_t *)out;
    size_t n = theirs < ours_size ? theirs : ours_size;
    memcpy(out, ours, n);
    if (theirs > n)
        memset((char *)out + n, 0, theirs - n);
    *(size_t *)out = n;
}

WEFT_EXPORT int weft_pool_worker_stats(weft_pool *pool, unsigned index,
                                       struct weft_worker_stats *out)
{
    if (!pool || !out || index >= weft__pool_slots(pool) ||
        out->size < WORKER_STATS_MIN)
        return -EINVAL;
    struct weft_worker_stats o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    worker_stats(pool, pool->workers[index], weft__now_ns(), &o);
    hand_over(out, &o, sizeof o);
    return 0;
}

WEFT_EXPORT int weft_pool_stats(weft_pool *pool, struct weft_pool_stats *out)
{
    if (!pool || !out || out->size < POOL_STATS_MIN)
        return -EINVAL;
    struct weft_pool_stats o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.workers = pool->nworkers;
    uint64_t now = weft__now_ns();
    /* The spares' work is the pool's too. */
    unsigned slots = weft__pool_slots(pool);
    for (unsigned i = 0; i < slots; i++) {
        struct weft_worker_stats w;
        worker_stats(pool, pool->workers[i], now, &w);
        o.runs += w.runs;
        o.spawned += w.spawned;
        o.steal_attempts += w.steal_attempts;
        o.steals += w.steals;
        o.lifo_hits += w.lifo_hits;
        o.parks += w.parks;
        o.wakeups += w.wakeups;
        o.busy_ns += w.busy_ns;
        o.idle_ns += w.idle_ns;
        o.local_queued += w.queued;
        o.timers += w.timers;
    }
    o.submitted = (uint64_t)atomic_load_explicit(&pool->arrived_outside,
                                                 memory_order_relaxed);
    o.global_queued = global_queued(pool);

    struct weft__snap s;
    weft__records_walk_begin();
    for (unsigned i = 0; i < slots; i++)
        o.stale_queued +=
            weft__runq_count_ended(&pool->workers[i]->q, task_ended);
    for (const struct weft__record_chunk *c = weft__records_first(); c;
         c = weft__records_next(c)) {
        unsigned n;
        struct weft__task *r = weft__records_of(c, &n);
        for (unsigned i = 0; i < n; i++)
            if (weft__snap_take(&r[i], pool, &s, false))
                count_task(&o, &s);
    }
    weft__records_walk_end();

    o.records_bytes = weft__records_bytes(); /* takes chunks_lock itself */
    struct weft__poller *poller = weft__pool_poller(pool);
    if (poller && poller->ops->waits)
        o.poll_waits = poller->ops->waits(poller);
    size_t mapped, bytes, cached, cached_bytes;
    weft__stack_counts(&mapped, &bytes, &cached, &cached_bytes);
    o.stacks_mapped = mapped;
    o.stacks_mapped_bytes = bytes;
    o.stacks_cached = cached;
    o.stacks_cached_bytes = cached_bytes;
    void (*blocking)(uint64_t *, uint64_t *) =
        atomic_load_explicit(&weft__observe_blocking, memory_order_acquire);
    if (blocking)
        blocking(&o.blocking_busy, &o.blocking_idle);
    struct weft__monitor_counts mc;
    weft__monitor_counts(pool, &mc);
    o.stalls = mc.stalls;
    o.covers = mc.covers;
    o.spares_started = mc.spares_made;
    o.spares_active = mc.spares_active;
    o.spare_threads = mc.spare_threads;
    hand_over(out, &o, sizeof o);
    return 0;
}
