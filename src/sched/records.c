/*
 * sched/records.c — where a task's two records (task.h: its run record
 * and its handle) come from, and how they go back.
 *
 * Each kind is recycled through an object cache (base/cache.h): a
 * per-thread list (512 on a pool's thread, 1 elsewhere: below), a global
 * depot, and chunks carved when both are empty.  A fork-join program
 * makes and frees one of each per spawn, often a million at once, and
 * malloc costs several times the rest of a spawn, so neither is
 * malloc'ed one by one.
 *
 * A chunk is an aligned 64 KiB block (272 run records, or 2,046 handles;
 * its own mapping, or cut from a slab, below), so the chunk of an object
 * is its address rounded down, and every chunk is on its kind's list, so
 * that the records of a live program can be walked: leak checkers see
 * them as reachable, and the observers (task.h, "The observers' walk")
 * visit them under chunks_lock (weft__records_walk_begin).  The
 * observers tell a live record by its co.flags, which task.c's task_new
 * makes HOSTED and which a free here makes 0 for nothing: the cache
 * node's key, stored 0 below, covers them (asserted).  Chunks go back to
 * the system only in a trim (weft__records_trim), when an idle pool
 * gives memory back (docs/design.md, "Memory"): the trim takes a kind's
 * depot out, counts its objects per chunk, unlinks (under chunks_lock, so
 * never under a walk) and unmaps the chunks whose every object is there
 * (none of it is live, or in some thread's own list), and puts the rest
 * back, up to the bound it was given.
 */
#include "sched/task.h"

#include "base/alloc.h"
#include "base/cache.h"
#include "base/direct.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

/* A pool's threads keep up to WORKER_MAX free records: they free them by
 * the hundred, and give them back when idle (pool.c, "Memory").  Any other
 * thread (main spawning and awaiting, the monitor) keeps OUTSIDE_MAX:
 * nothing trims its list, and a list refilled from the depot after a burst
 * holds records of as many chunks as it holds records, each chunk kept
 * from the trim by that one record.  One is enough for a thread that
 * spawns and frees in turn (its next spawn reuses it). */
#define WORKER_MAX 512
#define OUTSIDE_MAX 1
#define BATCH 128
#define CHUNK_BYTES WEFT__RECORD_CHUNK_BYTES

struct record_chunk {
    struct record_chunk *next, *prev; /* on `chunks`, under chunks_lock */
    size_t free_seen;                 /* the trim's count               */
    /* On a cache line: a record (192 bytes) is then three lines of its
     * own, and a spawn or a claim touches three lines, not four. */
    _Alignas(64) struct weft__task records[];
};
/* The layout (task.h): the records, then their rooms, then their names. */
#define PER_CHUNK WEFT__RECORDS_PER_CHUNK
#define RECORDS_END                                                         \
    (offsetof(struct record_chunk, records) +                               \
     PER_CHUNK * sizeof(struct weft__task))
#define NAMES_AT WEFT__RECORD_NAMES_AT
#define ROOMS_AT WEFT__RECORD_ROOMS_AT
_Static_assert(offsetof(struct record_chunk, records) == WEFT__RECORDS_AT,
               "the records after the header, as task.h says");
_Static_assert(PER_CHUNK >= 64, "a chunk holds at least 64 records");

static struct weft__cache records = WEFT__CACHE_INIT(OUTSIDE_MAX, BATCH, 0, NULL);
static __thread struct weft__cache_local records_local
    __attribute__((tls_model("initial-exec")));

static pthread_mutex_t chunks_lock = PTHREAD_MUTEX_INITIALIZER;
/* Every chunk, newest first; under chunks_lock.  The gdb commands
 * (tools/gdb/weft.py) read it by this name too, with
 * weft__records_per_chunk. */
static struct record_chunk *chunks;
static size_t nchunks;
/* Chunks ever made, of both kinds (weft__records_made): read without
 * chunks_lock. */
static _Atomic uint64_t chunks_made;

/*
 * Handles (task.h, struct weft_task) come from chunks of their own, laid
 * out as record chunks are (the same header, CHUNK_BYTES aligned), with
 * HANDLES_PER_CHUNK handles where the records would be, and a cache of
 * their own.  They are never walked (the observers reach a handle from
 * its live run record), but their chunks are listed, and unlinked by the
 * trim under chunks_lock as record chunks are, so a handle reached from a
 * run record during a walk stays mapped until the walk ends.
 */
#define HANDLES_PER_CHUNK                                                   \
    ((CHUNK_BYTES - offsetof(struct record_chunk, records)) /               \
     sizeof(struct weft_task))
static inline struct weft_task *handles_of(struct record_chunk *c)
{
    return (struct weft_task *)(void *)c->records;
}
struct weft__cache weft__handles =
    WEFT__CACHE_INIT(OUTSIDE_MAX, BATCH, 0, NULL);
__thread struct weft__cache_local weft__handles_local
    __attribute__((tls_model("initial-exec")));
static struct record_chunk *handle_chunks; /* under chunks_lock */
static size_t nhandle_chunks;
static pthread_mutex_t trim_lock = PTHREAD_MUTEX_INITIALIZER;
const unsigned weft__records_per_chunk = PER_CHUNK;

/* A free record's cache node: the link field doubles as it.  The record is
 * free, so nothing else reads its fields but the observers, who look only
 * at co.flags, which the node's key covers (see the top). */
_Static_assert(offsetof(struct weft__task, co) == 0 &&
                   offsetof(struct weft_coro, flags) >=
                       offsetof(struct weft__cache_node, key) &&
                   offsetof(struct weft_coro, flags) + sizeof(uint16_t) <=
                       offsetof(struct weft__cache_node, key) +
                           sizeof(size_t),
               "a free record's key must cover co.flags");
static inline struct weft__cache_node *node_of(struct weft__task *t)
{
    return (struct weft__cache_node *)&t->co;
}

static inline struct weft__task *task_of_node(struct weft__cache_node *n)
{
    return (struct weft__task *)((char *)n - offsetof(struct weft__task, co));
}

static inline struct record_chunk *chunk_of(struct weft__cache_node *n)
{
    return (struct record_chunk *)((uintptr_t)n & ~(uintptr_t)(CHUNK_BYTES - 1));
}

/* `size` bytes aligned to `align` (a power of two), mapped (not
 * malloc'ed), so that a trim's munmap gives the memory back for sure:
 * `align` more, then cut to the aligned block. */
static char *map_aligned(size_t size, size_t align)
{
    char *m = weft__mmap(NULL, size + align, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    char *at = (char *)(((uintptr_t)m + align - 1) & ~(uintptr_t)(align - 1));
    if (at > m)
        munmap(m, (size_t)(at - m));
    size_t tail = (size_t)(m + size + align - (at + size));
    if (tail)
        munmap(at + size, tail);
    return at;
}

/*
 * Slabs.  A burst of a million spawns whose handles are kept makes 600
 * handle chunks (and, when every task's record was kept, made 3,500
 * record chunks).  Mapped one by one, each cost three system calls, and
 * its first touch (the set-up loop in from_chunk) 16 page faults: over a
 * quarter of spawn-join's time (docs/performance.md, "Where a spawn's
 * time goes").  So once the program holds SLAB_AFTER chunks, chunks are
 * cut from a 2 MiB slab (one mapping), and the part of each that its
 * set-up writes is faulted in by madvise(MADV_POPULATE_WRITE) (Linux
 * 5.14; before, it fails and the first touch faults as before) just
 * before that set-up loop writes it, so those writes hit the cache;
 * populating a whole slab at once (or backing it with a huge page)
 * zeroed 2 MiB ahead and was slower than no populating at all (and a
 * huge page, in a madvise-mode kernel, stalled on compaction: 108-731
 * ms for the million spawns).
 * A slab's chunks are chunks like any other: the trim unmaps each one on
 * its own, and gives back the slab's part not yet cut, so an idle pool
 * keeps no more than before.  Small programs never reach SLAB_AFTER and
 * keep their 64 KiB steps.
 */
#define SLAB_BYTES ((size_t)2 * 1024 * 1024)
#define SLAB_AFTER 8
static char *slab_next, *slab_end; /* the current slab's uncut part;
                                      under chunks_lock */

/* A chunk's memory, of which the first `used` bytes will be written at
 * once; chunks_lock is held. */
static struct record_chunk *chunk_map_locked(size_t used)
{
    if (nchunks + nhandle_chunks < SLAB_AFTER)
        return (struct record_chunk *)map_aligned(CHUNK_BYTES, CHUNK_BYTES);
#ifdef WEFT_FAULT_INJECTION
    /* Out of memory: no room in a slab either (as no cached record,
     * base/cache.h). */
    if (weft__fault_failing_all())
        return NULL;
#endif
    if (slab_next == slab_end) {
        char *slab = map_aligned(SLAB_BYTES, CHUNK_BYTES);
        if (!slab)
            return (struct record_chunk *)map_aligned(CHUNK_BYTES,
                                                      CHUNK_BYTES);
        slab_next = slab;
        slab_end = slab + SLAB_BYTES;
    }
    struct record_chunk *c = (struct record_chunk *)slab_next;
#ifdef MADV_POPULATE_WRITE
    /* The part the set-up writes: a record chunk's records, not its names
     * (the kernel rounds the length up to its page). */
    (void)madvise(c, used, MADV_POPULATE_WRITE);
#endif
    slab_next += CHUNK_BYTES;
    return c;
}

/* The trim's: the current slab's uncut part goes back; chunks_lock is
 * held. */
static void slab_drop_locked(void)
{
    if (slab_next != slab_end)
        munmap(slab_next, (size_t)(slab_end - slab_next));
    slab_next = slab_end = NULL;
}

/* Put a set-up chunk on its kind's list. */
static void list_chunk(struct record_chunk **head, size_t *n,
                       struct record_chunk *chunk)
{
    weft__lock(&chunks_lock);
    chunk->prev = NULL;
    chunk->next = *head;
    if (*head)
        (*head)->prev = chunk;
    *head = chunk;
    (*n)++;
    atomic_fetch_add_explicit(&chunks_made, 1, memory_order_relaxed);
    pthread_mutex_unlock(&chunks_lock);
}

static __attribute__((noinline)) struct weft__task *from_chunk(void)
{
    weft__lock(&chunks_lock);
    struct record_chunk *chunk = chunk_map_locked(RECORDS_END);
    pthread_mutex_unlock(&chunks_lock);
    if (!chunk)
        return NULL;
    chunk->free_seen = 0;
    /* Each record's wait_lock and slot are set up here, once: task.c's
     * task_new leaves them (the lock for the observers' sake: dump.c; the
     * slot never changes).  All but the first go
     * to this thread's cache, which makes their flags 0 (free); the first
     * is marked free until task_new makes it live. */
    chunk->records[0].co.flags = 0;
    chunk->records[0].slot = 0;
    weft__spin_init(&chunk->records[0].wait_lock);
    for (size_t i = 1; i < PER_CHUNK; i++) {
        chunk->records[i].slot = (uint8_t)i;
        weft__spin_init(&chunk->records[i].wait_lock);
        weft__record_free(&chunk->records[i]);
    }
    /* Listed once set up, for the observers' walk. */
    list_chunk(&chunks, &nchunks, chunk);
    return &chunk->records[0];
}

/* A free handle's cache node covers its result and id, not its state
 * (task.h). */
_Static_assert(offsetof(struct weft_task, result) == 0 &&
                   offsetof(struct weft_task, state) >=
                       sizeof(struct weft__cache_node),
               "a free handle's node leaves its state alone");

struct weft_task *weft__handles_from_chunk(void)
{
    weft__lock(&chunks_lock);
    struct record_chunk *chunk = chunk_map_locked(CHUNK_BYTES);
    pthread_mutex_unlock(&chunks_lock);
    if (!chunk)
        return NULL;
    chunk->free_seen = 0;
    struct weft_task *h = handles_of(chunk);
    for (size_t i = 1; i < HANDLES_PER_CHUNK; i++)
        weft__handle_free(&h[i]);
    list_chunk(&handle_chunks, &nhandle_chunks, chunk);
    return &h[0];
}

/*
 * The free list's look-ahead.  In fork-join the records a spawning thread
 * takes were freed by the thieves that ran their tasks (a batch at a time,
 * through the depot), so each is a miss on another core's cache: on the
 * 2-vCPU AMD guest a line moves between the vCPUs in about 240 ns, more
 * than a whole spawn's own work, and the spawning thread stalled on
 * every pop (47% of its time in spawn-join).  A prefetch of the next
 * record when this one is popped comes too late: it has only the time of
 * one spawn.  Following the list two ahead would wait for the next
 * node's line itself.  So a free record carries a hint, the record two
 * places below it in the list when it was freed (its `co.resumer`, which
 * a free record does not use and task_new sets), read from the line the
 * pop reads anyway: the pop prefetches two spawns ahead with no
 * dependent miss.  A hint is only an address to prefetch: a stale one
 * (the list was cut into a batch, or spliced, since) costs a useless
 * fetch, never a wrong result.
 */
static inline void *hint_of(const struct weft__task *t)
{
    return (void *)t->co.resumer;
}

struct weft__task *weft__record_alloc(void)
{
    struct weft__cache_node *n = weft__cache_get(&records, &records_local, 0);
    if (__builtin_expect(n != NULL, 1)) {
        struct weft__task *t = task_of_node(n);
        /* The record two ahead: its line 0 (its node), which the pop
         * after next reads.  The next one's other two lines, which
         * task_new writes (the pop of that one brings its line 0). */
        __builtin_prefetch(hint_of(t), 1, 3);
        char *next = (char *)records_local.head;
        if (next) {
            __builtin_prefetch(next + 64, 1, 3);
            __builtin_prefetch(next + 128, 1, 3);
        }
        return t;
    }
    return from_chunk();
}

static inline void put(struct weft__task *t)
{
    /* The hint (above): the record that will be two places below t.  The
     * head is most often the record this thread freed last, still in its
     * cache. */
    struct weft__cache_node *h = records_local.head;
    t->co.resumer = h ? (struct weft_coro *)(void *)h->next : NULL;
    struct weft__cache_node *n = node_of(t);
    n->key = 0;
    weft__cache_put(&records, &records_local, n);
}

/* A room of its own memory goes with its record. */
static __attribute__((noinline)) void room_free(struct weft__task *t)
{
    t->room = WEFT__ROOM_NONE;
    free(t->arg);
}

/* Back to the cache, with its handle paired or not ("Pairs" below). */
static void give_back(struct weft__task *t, bool paired)
{
    if (__builtin_expect(t->room == WEFT__ROOM_HEAP, 0))
        room_free(t);
    t->paired = paired;
    put(t);
}

void weft__record_free(struct weft__task *t)
{
    give_back(t, false);
}

/*
 * Pairs.  Most tasks give both records back at once (a fork-join child
 * run inline and awaited, a detached task), and the next spawn on the
 * same thread makes both again: so a run record freed with its handle
 * keeps it (`paired`, `done`), and task_new takes the pair with one cache
 * get.  A record freed alone
 * (its task ended, its handle still held) keeps none.  The trim unpairs
 * the depot's records before it counts either kind, so a paired handle
 * never keeps a chunk of handles from being given back unseen.
 */
void weft__record_free_pair(struct weft__task *t)
{
    give_back(t, true);
}

void weft__records_worker_thread(void)
{
    weft__cache_local_keep(&records, &records_local, WORKER_MAX);
    weft__cache_local_keep(&weft__handles, &weft__handles_local, WORKER_MAX);
}

void weft__records_spill(void)
{
    weft__cache_spill_all(&records, &records_local);
    weft__cache_spill_all(&weft__handles, &weft__handles_local);
}

bool weft__records_held(void)
{
    return records_local.n || weft__handles_local.n;
}

#define DOOMED SIZE_MAX /* free_seen of a chunk the trim frees */

/*
 * What a trim gives back, it gives back in as few system calls as it can,
 * and not at all below WEFT__RECORDS_TRIM_MIN (task.h).  Unmapping pages
 * that were touched costs a TLB flush whatever their number, and the
 * flush is what costs: on a paravirtualised guest (the 2-core AMD guest
 * of docs/performance.md) one munmap of touched memory took 300-400 us of
 * CPU, of 64 KiB or of 1 MiB alike, and the trim after a 10,000-task
 * burst, two chunks unmapped one by one, made an idle pool cost 1.4 CPU
 * ms a second against Go's 0.35.  So adjacent chunks (a slab's) go in one
 * munmap, and a trim that would free less than 1 MiB of records keeps
 * them for the next burst.
 */

/* Sorts the doomed list by address (few chunks: an insertion sort), and
 * unmaps each run of adjacent chunks at once; how many chunks went. */
static size_t unmap_doomed(struct record_chunk *doomed)
{
    struct record_chunk *sorted = NULL;
    for (struct record_chunk *c = doomed, *next; c; c = next) {
        next = c->next;
        struct record_chunk **at = &sorted;
        while (*at && *at < c)
            at = &(*at)->next;
        c->next = *at;
        *at = c;
    }
    size_t freed = 0;
    for (struct record_chunk *c = sorted; c;) {
        char *start = (char *)c;
        size_t len = 0;
        do {
            struct record_chunk *next = c->next; /* before its unmapping */
            len += CHUNK_BYTES;
            freed++;
            c = next;
        } while (c && (char *)c == start + len);
        munmap(start, len);
    }
    return freed;
}

/* One kind of chunk, for the trim. */
struct kind {
    struct weft__cache *cache;
    struct record_chunk **chunks; /* its list, under chunks_lock */
    size_t *nchunks;
    size_t per_chunk;
    bool records;                 /* record chunks: paired handles (step 0) */
};

/* The chunks that hold `keep` objects of kind k. */
static size_t chunks_for(const struct kind *k, size_t keep)
{
    return (keep + k->per_chunk - 1) / k->per_chunk;
}

/* Unmap k's chunks whose every object is in the depot, but for
 * keep_chunks of them; trim_lock is held. */
static size_t trim_kind(const struct kind *k, size_t keep_chunks)
{
    size_t n;
    struct weft__cache_node *list = weft__cache_take_depot(k->cache, &n);
    /* 0. A record that keeps its handle ("Pairs") gives it to the
     * handles' depot, which is trimmed after the records. */
    struct weft__cache_node *unpaired = NULL;
    size_t nunpaired = 0;
    for (struct weft__cache_node *o = list; k->records && o; o = o->next) {
        struct weft__task *t = task_of_node(o);
        if (t->paired) {
            t->paired = false;
            struct weft__cache_node *h = (struct weft__cache_node *)(void *)t->done;
            h->key = 0;
            h->next = unpaired;
            unpaired = h;
            nunpaired++;
        }
    }
    weft__cache_return_depot(&weft__handles, unpaired, nunpaired);
    /* 1. Count the depot's objects per chunk. */
    for (struct weft__cache_node *o = list; o; o = o->next)
        chunk_of(o)->free_seen++;
    /* 2. Chunks all of whose objects are in the depot are free: keep
     * enough of them for `keep` objects (for the next burst), take the
     * rest off the list. */
    struct record_chunk *doomed = NULL;
    weft__lock(&chunks_lock);
    size_t free_chunks = 0;
    for (struct record_chunk *c = *k->chunks; c; c = c->next)
        free_chunks += c->free_seen == k->per_chunk;
    if (free_chunks > keep_chunks && (free_chunks - keep_chunks) * CHUNK_BYTES <
                                         WEFT__RECORDS_TRIM_MIN / 2)
        keep_chunks = free_chunks; /* not worth a flush (above) */
    for (struct record_chunk *c = *k->chunks, *next; c; c = next) {
        next = c->next;
        if (c->free_seen != k->per_chunk) {
            c->free_seen = 0;
        } else if (keep_chunks > 0) {
            keep_chunks--;
            c->free_seen = 0;
        } else {
            if (c->prev)
                c->prev->next = c->next;
            else
                *k->chunks = c->next;
            if (c->next)
                c->next->prev = c->prev;
            (*k->nchunks)--;
            c->free_seen = DOOMED;
            c->next = doomed;
            doomed = c;
        }
    }
    slab_drop_locked();
    pthread_mutex_unlock(&chunks_lock);
    /* 3. The depot keeps the objects of the chunks that stay.  (The list
     * runs through the objects, so the doomed chunks go only after.) */
    struct weft__cache_node *kept = NULL;
    size_t nkept = 0;
    for (struct weft__cache_node *o = list, *next; o; o = next) {
        next = o->next;
        if (chunk_of(o)->free_seen == DOOMED)
            continue;
        o->next = kept;
        kept = o;
        nkept++;
    }
    weft__cache_return_depot(k->cache, kept, nkept);
    return unmap_doomed(doomed) * CHUNK_BYTES;
}

size_t weft__records_trim(size_t keep)
{
    static const struct kind record_kind = {&records, &chunks, &nchunks,
                                            PER_CHUNK, true};
    static const struct kind handle_kind = {
        &weft__handles, &handle_chunks, &nhandle_chunks, HANDLES_PER_CHUNK, false};
    size_t keep_records = chunks_for(&record_kind, keep);
    size_t keep_handles = chunks_for(&handle_kind, keep);
    weft__lock(&trim_lock);
    /* Nothing to give back unless the chunks of both kinds outnumber the
     * kept ones by WEFT__RECORDS_TRIM_MIN: then the walks below (every
     * free object, a cache miss each: 0.3-0.5 ms for 10,000 records on
     * the AMD guest) are not made.  A kind whose free chunks beyond its
     * keep are under half that keeps them (not worth its flush). */
    weft__lock(&chunks_lock);
    size_t surplus = (nchunks > keep_records ? nchunks - keep_records : 0) +
                     (nhandle_chunks > keep_handles
                          ? nhandle_chunks - keep_handles
                          : 0);
    pthread_mutex_unlock(&chunks_lock);
    size_t freed = 0;
    if (surplus * CHUNK_BYTES >= WEFT__RECORDS_TRIM_MIN) {
        freed = trim_kind(&record_kind, keep_records);
        freed += trim_kind(&handle_kind, keep_handles);
    }
    pthread_mutex_unlock(&trim_lock);
    return freed;
}

uint64_t weft__records_made(void)
{
    return atomic_load_explicit(&chunks_made, memory_order_relaxed);
}

size_t weft__records_bytes(void)
{
    weft__lock(&chunks_lock);
    size_t n = nchunks + nhandle_chunks;
    pthread_mutex_unlock(&chunks_lock);
    return n * CHUNK_BYTES;
}

/* ------------------------------------------------- the observers' walk */

/* struct weft__record_chunk is never defined: it names a record_chunk. */

void weft__records_walk_begin(void)
{
    weft__lock(&chunks_lock);
}

void weft__records_walk_end(void)
{
    pthread_mutex_unlock(&chunks_lock);
}

const struct weft__record_chunk *weft__records_first(void)
{
    return (const void *)chunks;
}

const struct weft__record_chunk *
weft__records_next(const struct weft__record_chunk *c)
{
    return (const void *)((const struct record_chunk *)(const void *)c)->next;
}

struct weft__task *weft__records_of(const struct weft__record_chunk *c,
                                   unsigned *n)
{
    *n = PER_CHUNK;
    return (struct weft__task *)((const struct record_chunk *)(const void *)c)
        ->records;
}
