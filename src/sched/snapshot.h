/*
 * sched/snapshot.h — one task record as the observers see it (internal):
 * what weft_pool_stats counts and weft_pool_dump prints (dump.c).
 */
#ifndef WEFT_SCHED_SNAPSHOT_H
#define WEFT_SCHED_SNAPSHOT_H

#include <weft/pool.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/observe.h"

#define WEFT__SNAP_FRAMES 48

struct weft__task;
struct weft__worker;

struct weft__snap {
    uint64_t id;
    char name[32];
    unsigned lifecycle;          /* WEFT__T_IDLE, _SCHEDULED, _RUNNING   */
    bool started;                /* has run (has, or had, a stack)        */
    size_t stack_bytes;          /* its stack's mapping, 0: none          */
    /* Its current wait, if it has one (then it is parked, or about to
     * park, or just woken and not yet out of the wait). */
    bool waiting;
    const struct weft__wait_kind *kind;
    const void *obj;
    uint64_t since;              /* ticks at the park, 0: not parked yet  */
    uint64_t deadline;           /* ns, 0: none                           */
    /* The worker that ran it last (compared with the pool's, never
     * followed: it may be another pool's), NULL: none. */
    const struct weft__worker *ran_on;
    char about[112];             /* the kind's describe                   */
    /* The stack the wait is on: its own, or for a body run inline on
     * another task's stack (await.c), that task's (host_id). */
    uint64_t host_id;
    uintptr_t stack_low, stack_top, sp;
    unsigned npcs;               /* return addresses, innermost first     */
    uintptr_t pcs[WEFT__SNAP_FRAMES];
};

/*
 * weft__snap_take - if t is a live task of pool (any pool: NULL) that has
 * started or is queued, fill *s and return true.  With `frames` (the
 * dump), a task in a wait also gets its object described and its stack
 * walked (ctx/unwind.h); without (the counters), only its state is read.  Reads the record
 * while others may change it (see dump.c); safe on any record of
 * records.c's chunks, live or free.
 */
bool weft__snap_take(struct weft__task *t, const weft_pool *pool,
                     struct weft__snap *s, bool frames);

#endif /* WEFT_SCHED_SNAPSHOT_H */
