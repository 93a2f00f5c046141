/*
 * sched/records.c — where task records come from.
 *
 * Records are recycled through an object cache (base/cache.h): a
 * per-thread list of up to 512, a global depot, and 64-record chunks from
 * malloc when both are empty.  They are never returned to malloc (like
 * Go's goroutine descriptors): a fork-join program makes and frees one per
 * spawn, often a million at once, and malloc costs several times the rest
 * of a spawn.  Memory stays at the peak number of live records; every
 * chunk stays listed, so leak checkers see the records as reachable, and
 * so do the observers (task.h, "The observers' walk").  They tell a live
 * record by its co.flags, which task.c's task_new makes HOSTED and which
 * a free here makes 0 for nothing: the cache node's key, stored 0 below,
 * covers them (asserted), as it covers the state word.
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
/* Written under chunks_lock, with release (the chunk's records are marked
 * free before it is seen); read by the walk with acquire, without it.  The gdb
 * commands (tools/gdb/weft.py) read it by this name too, with CHUNK. */
static struct record_chunk *_Atomic chunks;
const unsigned weft__records_per_chunk = CHUNK;

/* A free record's cache node: the link field doubles as it.  The record is
 * free, so nothing else reads its fields but the observers, who look only
 * at co.flags, which the node's key covers (see the top). */
_Static_assert(offsetof(struct weft_task, co) == 0 &&
                   offsetof(struct weft_coro, flags) >=
                       offsetof(struct weft__cache_node, key) &&
                   offsetof(struct weft_coro, flags) + sizeof(uint32_t) <=
                       offsetof(struct weft__cache_node, key) +
                           sizeof(size_t),
               "a free record's key must cover co.flags");
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
    /* Each record's wait_lock is set up here, once: task.c's task_new
     * leaves it, for the observers' sake (dump.c).  All but the first go
     * to this thread's cache, which makes their flags 0 (free); the first
     * is marked free until task_new makes it live.  The chunk is listed
     * for the observers' walk only then (one that a task took meanwhile
     * from the depot is missed by a walk for those few microseconds). */
    chunk->records[0].co.flags = 0;
    weft__spin_init(&chunk->records[0].wait_lock);
    for (unsigned i = 1; i < CHUNK; i++) {
        weft__spin_init(&chunk->records[i].wait_lock);
        weft__record_free(&chunk->records[i]);
    }
    pthread_mutex_lock(&chunks_lock);
    chunk->next = atomic_load_explicit(&chunks, memory_order_relaxed);
    atomic_store_explicit(&chunks, chunk, memory_order_release);
    pthread_mutex_unlock(&chunks_lock);
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

/* ------------------------------------------------- the observers' walk */

/* struct weft__record_chunk is never defined: it names a record_chunk. */

const struct weft__record_chunk *weft__records_first(void)
{
    return (const void *)atomic_load_explicit(&chunks, memory_order_acquire);
}

const struct weft__record_chunk *
weft__records_next(const struct weft__record_chunk *c)
{
    return (const void *)((const struct record_chunk *)(const void *)c)->next;
}

struct weft_task *weft__records_of(const struct weft__record_chunk *c,
                                   unsigned *n)
{
    *n = CHUNK;
    return (struct weft_task *)((const struct record_chunk *)(const void *)c)
        ->records;
}
