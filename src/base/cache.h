/*
 * base/cache.h — recycling objects of one kind through a small per-thread
 * cache and a global depot (internal).  Stacks (ctx/stack.c), task records
 * (sched/records.c) and claim records (ctx/claim.c) all go through it.
 *
 * A free object carries a node (its link and its key) inside itself.  Each
 * thread keeps up to `local_max` free objects of a kind in a LIFO list, so
 * the object it frees is the next it gets, still warm in its cache; the
 * fast paths below are a few plain loads and stores, with no atomic and no
 * lock.  A thread that frees more than it keeps moves a batch to the
 * depot, under the depot's mutex; a thread that finds its list empty takes
 * a batch back.  The depot keeps
 * up to `depot_max` objects and gives the rest back to the system
 * (`release`), so what sits unused in caches is bounded: local_max per
 * thread that frees, plus depot_max.  A kind whose objects cannot be given
 * back (release NULL) has no depot bound.
 *
 * Keys: objects with different keys (stacks of different sizes) are not
 * interchangeable; a request takes an object of exactly its key.  The fast
 * path looks at the newest object only, the slow path searches.
 *
 * Thread exit: a thread's list goes back to the depot when the thread
 * exits, through a thread-specific key that the thread's first free or
 * refill from the depot registers (both take the slow path: `max` is 0
 * until then).  A
 * thread that cannot register (no memory for the key's slot) keeps
 * nothing: its frees go straight to the depot.
 *
 * Who calls: a thread uses only its own local; the depot functions take the
 * depot's lock.  The kind's struct is static and set up by its initialiser
 * (WEFT__CACHE_INIT).
 */
#ifndef WEFT_BASE_CACHE_H
#define WEFT_BASE_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/alloc.h"

struct weft__cache_node {
    struct weft__cache_node *next;
    size_t key;
};

struct weft__cache;

/* The most whole batches a depot keeps as such (the rest are loose). */
#define WEFT__CACHE_CHAINS 64

/* One per thread and kind: a zero-filled __thread variable. */
struct weft__cache_local {
    struct weft__cache_node *head;
    unsigned n;
    unsigned max;                /* its bound once registered (local_max
                                    or weft__cache_local_keep's), else 0 */
    struct weft__cache *kind;    /* set at registration (thread exit) */
};

struct weft__cache {
    unsigned local_max;          /* kept per thread; 0: none            */
    unsigned batch;              /* moved per spill or refill (>= 1)    */
    size_t depot_max;            /* kept in the depot, if release       */
    /* Gives an object back to the system (stacks: munmap); NULL: objects
     * are kept forever (records carved from chunks). */
    void (*release)(struct weft__cache_node *n);
    pthread_mutex_t lock;        /* guards what follows                 */
    struct weft__cache_node *depot;
    size_t ndepot;               /* in `depot` and in `chains`          */
    /* Whole batches of key 0 of a kind kept forever, as spilled (cache.c,
     * "Batches"): a refill takes one without walking it. */
    struct weft__cache_chain {
        struct weft__cache_node *head, *tail;
    } chains[WEFT__CACHE_CHAINS];
    unsigned nchains;
    bool key_made;
    pthread_key_t key;           /* thread exit: spill the local list   */
};

#define WEFT__CACHE_INIT(local_max_, batch_, depot_max_, release_)          \
    {                                                                       \
        .local_max = (local_max_), .batch = (batch_),                       \
        .depot_max = (depot_max_), .release = (release_),                   \
        .lock = PTHREAD_MUTEX_INITIALIZER,                                  \
    }

struct weft__cache_node *weft__cache_get_slow(struct weft__cache *c,
                                              struct weft__cache_local *l,
                                              size_t key);
void weft__cache_put_slow(struct weft__cache *c, struct weft__cache_local *l);

/*
 * weft__cache_get - a free object of `key`, from this thread's list or the
 * depot; NULL if there is none (the caller makes a new one).
 */
static inline struct weft__cache_node *
weft__cache_get(struct weft__cache *c, struct weft__cache_local *l, size_t key)
{
#ifdef WEFT_FAULT_INJECTION
    if (weft__fault_failing_all())
        return NULL; /* out of memory: nothing cached either */
#endif
    struct weft__cache_node *n = l->head;
    if (__builtin_expect(n != NULL && n->key == key, 1)) {
        l->head = n->next;
        l->n--;
        return n;
    }
    return weft__cache_get_slow(c, l, key);
}

/* weft__cache_put - free n (its key set by the caller) into this thread's
 * list, spilling to the depot past the bound. */
static inline void weft__cache_put(struct weft__cache *c,
                                   struct weft__cache_local *l,
                                   struct weft__cache_node *n)
{
    n->next = l->head;
    l->head = n;
    if (__builtin_expect(++l->n > l->max, 0))
        weft__cache_put_slow(c, l);
}

/*
 * weft__cache_drain - give every object of the depot and of this thread's
 * list back to the system (release must be set): for an allocation that
 * failed for lack of room, which the cached objects of other keys may be
 * holding.  Returns whether anything was released.
 */
bool weft__cache_drain(struct weft__cache *c, struct weft__cache_local *l);

/*
 * weft__cache_local_keep - let the calling thread keep up to max objects
 * of this kind (instead of the kind's local_max): a kind whose threads
 * differ, such as task records, which a pool's workers free by the
 * hundred and other threads one at a time.  False if the thread cannot
 * register (then it keeps nothing).
 */
bool weft__cache_local_keep(struct weft__cache *c, struct weft__cache_local *l,
                            unsigned max);

/* Objects in the depot now (a snapshot). */
size_t weft__cache_depot_count(struct weft__cache *c);

/* The calling thread gives its whole list to the depot (a worker going
 * idle: what it keeps is then trimmed with the depot). */
void weft__cache_spill_all(struct weft__cache *c, struct weft__cache_local *l);

/*
 * weft__cache_take_depot - take the depot's whole list out (its count in
 * *n), for a trim that decides object by object; weft__cache_return_depot
 * puts back what the trim keeps.  Objects taken out are nobody's until
 * returned or released, so a trim of one kind must not run twice at once
 * (its caller serialises them).
 */
struct weft__cache_node *weft__cache_take_depot(struct weft__cache *c,
                                                size_t *n);
void weft__cache_return_depot(struct weft__cache *c,
                              struct weft__cache_node *list, size_t n);

/* For the observers: the sum of the depot's objects' keys (stacks: their
 * sizes), and their number in *n (a snapshot; walks the depot). */
size_t weft__cache_depot_keys(struct weft__cache *c, size_t *n);

#endif /* WEFT_BASE_CACHE_H */
