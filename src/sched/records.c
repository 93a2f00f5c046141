/*
 * sched/records.c — where task records come from.
 *
 * Records are recycled through an object cache (base/cache.h): a
 * per-thread list of up to 512, a global depot, and 64-record chunks from
 * malloc when both are empty.  They are never returned to malloc (like
 * Go's goroutine descriptors): a fork-join program makes and frees one per
 * spawn, often a million at once, and malloc costs several times the rest
 * of a spawn.  Memory stays at the peak number of live records; every
 * chunk stays listed, so leak checkers see the records as reachable.
 */
#include "sched/task.h"

#include "base/alloc.h"
#include "base/cache.h"

#include <stddef.h>

#define CACHE_MAX 512
#define BATCH 128
#define CHUNK 64

static struct weft__cache records = WEFT__CACHE_INIT(CACHE_MAX, BATCH, 0, NULL);
static __thread struct weft__cache_local records_local
    __attribute__((tls_model("initial-exec")));

struct record_chunk {
    struct record_chunk *next;
    _Alignas(16) struct weft_task records[];
};
static pthread_mutex_t chunks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct record_chunk *chunks;

/* A free record's cache node: the link field doubles as it.  The record is
 * free, so nothing else reads its fields. */
static inline struct weft__cache_node *node_of(struct weft_task *t)
{
    return (struct weft__cache_node *)&t->co;
}

static inline struct weft_task *task_of_node(struct weft__cache_node *n)
{
    return (struct weft_task *)((char *)n - offsetof(struct weft_task, co));
}

static __attribute__((noinline)) struct weft_task *from_chunk(void)
{
    struct record_chunk *chunk =
        weft__malloc(sizeof *chunk + CHUNK * sizeof chunk->records[0]);
    if (!chunk)
        return NULL;
    pthread_mutex_lock(&chunks_lock);
    chunk->next = chunks;
    chunks = chunk;
    pthread_mutex_unlock(&chunks_lock);
    /* All but the first go to this thread's cache. */
    for (unsigned i = 1; i < CHUNK; i++)
        weft__record_free(&chunk->records[i]);
    return &chunk->records[0];
}

struct weft_task *weft__record_alloc(void)
{
    struct weft__cache_node *n = weft__cache_get(&records, &records_local, 0);
    if (__builtin_expect(n != NULL, 1))
        return task_of_node(n);
    return from_chunk();
}

void weft__record_free(struct weft_task *t)
{
    struct weft__cache_node *n = node_of(t);
    n->key = 0;
    weft__cache_put(&records, &records_local, n);
}
