/*
 * timer.c — the timer heap.  See timer.h.
 */
#include "sched/timer.h"

#include "base/alloc.h"
#include "base/direct.h"

#include <errno.h>
#include <stdlib.h>

void weft__timers_init(struct weft__timers *ts)
{
    pthread_mutex_init(&ts->lock, NULL);
    ts->heap = NULL;
    ts->n = ts->cap = 0;
    atomic_init(&ts->next, UINT64_MAX);
}

void weft__timers_fini(struct weft__timers *ts)
{
    free(ts->heap);
    pthread_mutex_destroy(&ts->lock);
}

static void place(struct weft__timers *ts, size_t i,
                  struct weft__timer_slot slot)
{
    ts->heap[i] = slot;
    slot.tm->index = i;
}

static void sift_up(struct weft__timers *ts, size_t i)
{
    struct weft__timer_slot slot = ts->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (ts->heap[parent].deadline <= slot.deadline)
            break;
        place(ts, i, ts->heap[parent]);
        i = parent;
    }
    place(ts, i, slot);
}

/* Moves heap[i] down to its place; returns where it went. */
static size_t sift_down(struct weft__timers *ts, size_t i)
{
    struct weft__timer_slot slot = ts->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= ts->n)
            break;
        if (c + 1 < ts->n && ts->heap[c + 1].deadline < ts->heap[c].deadline)
            c++;
        if (ts->heap[c].deadline >= slot.deadline)
            break;
        place(ts, i, ts->heap[c]);
        i = c;
    }
    place(ts, i, slot);
    return i;
}

static void publish_next(struct weft__timers *ts)
{
    atomic_store_explicit(&ts->next,
                          ts->n ? ts->heap[0].deadline : UINT64_MAX,
                          memory_order_release);
}

/* Remove heap[i]; the lock is held. */
static void take_out(struct weft__timers *ts, size_t i)
{
    ts->heap[i].tm->index = SIZE_MAX;
    ts->n--;
    if (i < ts->n) {
        /* The last leaf fills the hole, then moves down or up. */
        ts->heap[i] = ts->heap[ts->n];
        if (sift_down(ts, i) == i)
            sift_up(ts, i);
    }
}

int weft__timers_add(struct weft__timers *ts, struct weft__timer *tm)
{
    weft__lock(&ts->lock);
    if (ts->n == ts->cap) {
        size_t cap = ts->cap ? 2 * ts->cap : 64;
        struct weft__timer_slot *h = weft__realloc(ts->heap, cap * sizeof *h);
        if (!h) {
            pthread_mutex_unlock(&ts->lock);
            return -ENOMEM;
        }
        ts->heap = h;
        ts->cap = cap;
    }
    ts->heap[ts->n] = (struct weft__timer_slot){tm->deadline, tm};
    sift_up(ts, ts->n++);
    int earliest = ts->heap[0].tm == tm;
    publish_next(ts);
    pthread_mutex_unlock(&ts->lock);
    return earliest;
}

bool weft__timers_remove(struct weft__timers *ts, struct weft__timer *tm)
{
    weft__lock(&ts->lock);
    bool armed = tm->index != SIZE_MAX;
    if (armed) {
        take_out(ts, tm->index);
        publish_next(ts);
    }
    pthread_mutex_unlock(&ts->lock);
    return armed;
}

unsigned weft__timers_run(struct weft__timers *ts, uint64_t now)
{
    unsigned fired = 0;
    if (weft__timers_next(ts) > now)
        return 0;
    weft__lock(&ts->lock);
    while (ts->n && ts->heap[0].deadline <= now) {
        struct weft__timer *tm = ts->heap[0].tm;
        take_out(ts, 0);
        tm->fire(tm); /* under the lock: see timer.h */
        fired++;
    }
    publish_next(ts);
    pthread_mutex_unlock(&ts->lock);
    return fired;
}
