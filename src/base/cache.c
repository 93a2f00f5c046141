/*
 * base/cache.c — the slow paths of the object caches (base/cache.h).
 */
#include "base/cache.h"

#include "base/alloc.h"
#include "base/direct.h"

/* Thread exit: the list goes back to the depot. */
static void spill(struct weft__cache *c, struct weft__cache_local *l,
                  unsigned n);

static void local_exit(void *p)
{
    struct weft__cache_local *l = p;
    spill(l->kind, l, l->n);
    /* A later free on this thread (another kind's destructor) registers
     * again, and glibc runs the destructor once more. */
    l->max = 0;
    l->kind = NULL;
}

/* Arrange for this thread's list (of up to max) to be spilled at its
 * exit; false if that cannot be done (then the thread keeps nothing). */
static bool local_register(struct weft__cache *c, struct weft__cache_local *l,
                           unsigned max)
{
    if (!max)
        return false;
    if (l->kind == c) { /* registered already: a new bound */
        l->max = max;
        return true;
    }
    weft__lock(&c->lock);
    if (!c->key_made)
        c->key_made = weft__pthread_key_create(&c->key, local_exit) == 0;
    bool made = c->key_made;
    pthread_mutex_unlock(&c->lock);
    if (!made || weft__pthread_setspecific(c->key, l) != 0)
        return false;
    l->kind = c;
    l->max = max;
    return true;
}

bool weft__cache_local_keep(struct weft__cache *c, struct weft__cache_local *l,
                            unsigned max)
{
    return local_register(c, l, max);
}

/*
 * Batches.  A kind kept forever (no release: task records, handles) flows
 * between threads in batches: in fork-join, the thieves free the records
 * that the spawning thread makes.  Moving a batch object by object under
 * the depot's lock had the taker walk, under the lock, objects last
 * written on another core, one cache miss each (seen: the refill was the
 * spawning thread's largest cost in spawn-join, 9% of the run).  So a
 * spill cuts its batch off its own list (objects it freed itself: in its
 * cache) outside the lock, and a whole batch of key 0 is kept as one
 * chain, which a refill of a batch takes whole: two stores under the
 * lock, and each object is first touched by the one that uses it.
 * A spill of a whole list (a worker that parks, a thread's exit) is cut
 * into batches the same way: left loose, its objects were walked by the
 * next refill under the lock, a miss each (spawn-join: 300,000 a run, 5%
 * of the spawning thread's samples).  Only the remainder of a batch, a
 * batch holding another key, and what a trim returns are loose.
 * All of a depot's objects, in chains or loose, are in ndepot.
 */

/* The chains join the loose list (for a walk of every object); the lock
 * is held. */
static void gather_locked(struct weft__cache *c)
{
    for (unsigned i = 0; i < c->nchains; i++) {
        c->chains[i].tail->next = c->depot;
        c->depot = c->chains[i].head;
    }
    c->nchains = 0;
}

/* spill for a kind kept forever: see "Batches".  Cut batch by batch, so
 * that a spill of the whole list (a worker's park, a thread's exit) leaves
 * chains too, not a loose list that the next refill would walk. */
static void spill_kept(struct weft__cache *c, struct weft__cache_local *l,
                       unsigned n)
{
    while (n && l->head) {
        unsigned want = n < c->batch ? n : c->batch;
        struct weft__cache_node *head = l->head, *tail = NULL;
        unsigned got = 0;
        bool whole = true;
        for (struct weft__cache_node *o = head; o && got < want;
             o = o->next) {
            whole = whole && o->key == 0;
            tail = o;
            got++;
        }
        l->head = tail->next;
        l->n -= got;
        n -= got;
        whole = whole && got == c->batch;
        weft__lock(&c->lock);
        if (whole && c->nchains < WEFT__CACHE_CHAINS) {
            tail->next = NULL;
            c->chains[c->nchains].head = head;
            c->chains[c->nchains].tail = tail;
            c->nchains++;
        } else {
            tail->next = c->depot;
            c->depot = head;
        }
        c->ndepot += got;
        pthread_mutex_unlock(&c->lock);
    }
}

/* Move up to n objects from l to the depot (the depot lock is not held);
 * what the depot has no room for goes back to the system. */
static void spill(struct weft__cache *c, struct weft__cache_local *l, unsigned n)
{
    if (!c->release) {
        spill_kept(c, l, n);
        return;
    }
    struct weft__cache_node *excess = NULL;
    weft__lock(&c->lock);
    while (n-- > 0 && l->head) {
        struct weft__cache_node *o = l->head;
        l->head = o->next;
        l->n--;
        if (c->ndepot >= c->depot_max) {
            o->next = excess;
            excess = o;
            continue;
        }
        o->next = c->depot;
        c->depot = o;
        c->ndepot++;
    }
    pthread_mutex_unlock(&c->lock);
    while (excess) {
        struct weft__cache_node *next = excess->next; /* o may hold it */
        c->release(excess);
        excess = next;
    }
}

void weft__cache_put_slow(struct weft__cache *c, struct weft__cache_local *l)
{
    if (!l->max && !local_register(c, l, c->local_max)) {
        spill(c, l, l->n); /* keep nothing */
        return;
    }
    /* A batch; a list bounded below a batch keeps its bound. */
    if (l->n > l->max)
        spill(c, l, l->max < c->batch ? l->n - l->max : c->batch);
}

struct weft__cache_node *weft__cache_get_slow(struct weft__cache *c,
                                              struct weft__cache_local *l,
                                              size_t key)
{
    /* Another key on top: look deeper in our own list first. */
    for (struct weft__cache_node **link = &l->head; *link;
         link = &(*link)->next) {
        if ((*link)->key == key) {
            struct weft__cache_node *n = *link;
            *link = n->next;
            l->n--;
            return n;
        }
    }
    /* Then a batch of that key from the depot: one for the caller, the
     * rest for our list (if this thread keeps any).  A thread registers
     * here too, not only at its first free: a fresh worker that spawns a
     * million tasks before it frees one would otherwise take the depot's
     * lock once per object. */
    if (!l->max)
        local_register(c, l, c->local_max);
    struct weft__cache_node *got = NULL;
    unsigned want = !l->max ? 1 : l->max < c->batch ? l->max : c->batch;
    weft__lock(&c->lock);
    if (key == 0 && want == c->batch && c->nchains) {
        /* A whole batch ("Batches"): the caller's object and the rest
         * for our list, linked already. */
        struct weft__cache_chain ch = c->chains[--c->nchains];
        c->ndepot -= c->batch;
        pthread_mutex_unlock(&c->lock);
        ch.tail->next = l->head;
        l->head = ch.head->next;
        l->n += c->batch - 1;
        return ch.head;
    }
    struct weft__cache_node **link = &c->depot;
    while (*link && want) {
        struct weft__cache_node *n = *link;
        if (n->key != key) {
            link = &n->next;
            continue;
        }
        *link = n->next;
        c->ndepot--;
        want--;
        if (!got) {
            got = n;
        } else {
            n->next = l->head;
            l->head = n;
            l->n++;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return got;
}

bool weft__cache_drain(struct weft__cache *c, struct weft__cache_local *l)
{
    weft__lock(&c->lock);
    gather_locked(c);
    struct weft__cache_node *n = c->depot;
    c->depot = NULL;
    c->ndepot = 0;
    pthread_mutex_unlock(&c->lock);
    bool any = n || l->head;
    while (n) {
        struct weft__cache_node *next = n->next;
        c->release(n);
        n = next;
    }
    while ((n = l->head)) {
        l->head = n->next;
        l->n--;
        c->release(n);
    }
    return any;
}

size_t weft__cache_depot_count(struct weft__cache *c)
{
    weft__lock(&c->lock);
    size_t n = c->ndepot;
    pthread_mutex_unlock(&c->lock);
    return n;
}

void weft__cache_spill_all(struct weft__cache *c, struct weft__cache_local *l)
{
    /* An empty list takes no lock: a worker spills at every park after
     * running tasks (sched/pool.c, "Memory"), often with nothing kept. */
    if (l->n)
        spill(c, l, l->n);
}

struct weft__cache_node *weft__cache_take_depot(struct weft__cache *c,
                                                size_t *n)
{
    weft__lock(&c->lock);
    gather_locked(c);
    struct weft__cache_node *list = c->depot;
    *n = c->ndepot;
    c->depot = NULL;
    c->ndepot = 0;
    pthread_mutex_unlock(&c->lock);
    return list;
}

void weft__cache_return_depot(struct weft__cache *c,
                              struct weft__cache_node *list, size_t n)
{
    if (!list)
        return;
    struct weft__cache_node *last = list;
    while (last->next)
        last = last->next;
    weft__lock(&c->lock);
    last->next = c->depot;
    c->depot = list;
    c->ndepot += n;
    pthread_mutex_unlock(&c->lock);
}

size_t weft__cache_depot_keys(struct weft__cache *c, size_t *n)
{
    size_t sum = 0;
    weft__lock(&c->lock);
    gather_locked(c);
    *n = c->ndepot;
    for (const struct weft__cache_node *o = c->depot; o; o = o->next)
        sum += o->key;
    pthread_mutex_unlock(&c->lock);
    return sum;
}
