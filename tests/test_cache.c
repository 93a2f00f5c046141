/*
 * test_cache.c — the object caches' batches (src/base/cache.c): a kind
 * kept forever moves between threads as chains of whole batches, and a
 * spill of a thread's whole list (a worker's park, a thread's exit) cuts
 * it into chains too, so that a refill takes a batch without walking it.
 * Every object spilled comes back exactly once.
 */
#include "base/cache.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#define BATCH 4
#define KEEP 8
#define OBJECTS 64

struct obj {
    struct weft__cache_node node;
    int index;
};

static struct obj objs[OBJECTS];

/* Each case has a kind of its own: static state is per kind. */
static struct weft__cache kinds[4] = {
    WEFT__CACHE_INIT(KEEP, BATCH, 0, NULL),
    WEFT__CACHE_INIT(KEEP, BATCH, 0, NULL),
    WEFT__CACHE_INIT(KEEP, BATCH, 0, NULL),
    WEFT__CACHE_INIT(KEEP, BATCH, 0, NULL),
};

struct spill_args {
    struct weft__cache *c;
    int from, count;
    size_t key_of_odd; /* a key for odd indexes (0: all key 0) */
    bool exit_only;    /* spill at thread exit, not by spill_all */
    /* What the thread saw, for the main thread to check (cmocka's
     * assertions belong to the thread that runs the test). */
    bool kept;         /* its list could be registered */
    unsigned n_put;    /* its list's length after the puts */
    unsigned n_left;   /* and after spill_all */
    bool head_left;    /* a head left after spill_all */
};

/* Puts objects [from, from + count) on a thread of its own, whose bound
 * is large enough to keep them all, then spills its whole list. */
static void *spill_thread(void *p)
{
    struct spill_args *a = p;
    static __thread struct weft__cache_local l;
    a->kept = weft__cache_local_keep(a->c, &l, OBJECTS);
    if (!a->kept)
        return NULL;
    for (int i = a->from; i < a->from + a->count; i++) {
        objs[i].node.key = (i & 1) ? a->key_of_odd : 0;
        weft__cache_put(a->c, &l, &objs[i].node);
    }
    a->n_put = l.n;
    if (!a->exit_only) {
        weft__cache_spill_all(a->c, &l);
        a->n_left = l.n;
        a->head_left = l.head != NULL;
    }
    return NULL;
}

static void spill_on_thread(struct spill_args *a)
{
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, spill_thread, a), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_true(a->kept);
    assert_int_equal(a->n_put, a->count);
    if (!a->exit_only) {
        assert_int_equal(a->n_left, 0);
        assert_false(a->head_left);
    }
}

/* One object of `key` from this thread's cache, one of ours, not seen
 * before (marked now); its index. */
static int take_one(struct weft__cache *c, struct weft__cache_local *l,
                    size_t key, bool seen[OBJECTS])
{
    struct weft__cache_node *n = weft__cache_get(c, l, key);
    assert_non_null(n);
    struct obj *o = (struct obj *)(void *)n;
    assert_true(o >= objs && o < objs + OBJECTS);
    assert_false(seen[o->index]);
    seen[o->index] = true;
    return o->index;
}

/* Takes everything of key 0 back on this thread; each object once. */
static void take_all(struct weft__cache *c, struct weft__cache_local *l,
                     int from, int count)
{
    bool seen[OBJECTS] = {false};
    for (int got = 0; got < count; got++) {
        int i = take_one(c, l, 0, seen);
        assert_true(i >= from && i < from + count);
    }
    assert_null(weft__cache_get(c, l, 0));
}

static void setup_objs(void)
{
    for (int i = 0; i < OBJECTS; i++)
        objs[i].index = i;
}

/* 23 objects spilled at once: five whole chains and three loose. */
static void test_spill_all_cuts_chains(void **state)
{
    (void)state;
    setup_objs();
    struct weft__cache *c = &kinds[0];
    struct spill_args a = {.c = c, .from = 0, .count = 23};
    spill_on_thread(&a);
    assert_int_equal(weft__cache_depot_count(c), 23);
    assert_int_equal(c->nchains, 23 / BATCH);
    static __thread struct weft__cache_local l;
    assert_true(weft__cache_local_keep(c, &l, KEEP));
    take_all(c, &l, 0, 23);
    assert_int_equal(weft__cache_depot_count(c), 0);
    assert_int_equal(c->nchains, 0);
}

/* A thread's exit spills its list the same way. */
static void test_exit_spill_cuts_chains(void **state)
{
    (void)state;
    setup_objs();
    struct weft__cache *c = &kinds[1];
    struct spill_args a = {.c = c, .from = 10, .count = 3 * BATCH,
                           .exit_only = true};
    spill_on_thread(&a);
    assert_int_equal(weft__cache_depot_count(c), 3 * BATCH);
    assert_int_equal(c->nchains, 3);
    static __thread struct weft__cache_local l;
    assert_true(weft__cache_local_keep(c, &l, KEEP));
    take_all(c, &l, 10, 3 * BATCH);
}

/* A batch holding another key stays loose: a chain is key 0 only, and a
 * refill of key 0 never takes another key's object. */
static void test_mixed_keys_stay_loose(void **state)
{
    (void)state;
    setup_objs();
    struct weft__cache *c = &kinds[2];
    struct spill_args a = {.c = c, .from = 0, .count = 2 * BATCH,
                           .key_of_odd = 7};
    spill_on_thread(&a);
    assert_int_equal(weft__cache_depot_count(c), 2 * BATCH);
    assert_int_equal(c->nchains, 0);
    static __thread struct weft__cache_local l;
    assert_true(weft__cache_local_keep(c, &l, KEEP));
    bool seen[OBJECTS] = {false};
    for (int got = 0; got < BATCH; got++)
        assert_int_equal(take_one(c, &l, 0, seen) % 2, 0);
    for (int got = 0; got < BATCH; got++)
        assert_int_equal(take_one(c, &l, 7, seen) % 2, 1);
    assert_null(weft__cache_get(c, &l, 0));
    assert_null(weft__cache_get(c, &l, 7));
}

/* An ordinary put past the bound spills one whole batch as a chain. */
static void test_put_spills_a_chain(void **state)
{
    (void)state;
    setup_objs();
    struct weft__cache *c = &kinds[3];
    static __thread struct weft__cache_local l;
    assert_true(weft__cache_local_keep(c, &l, KEEP));
    for (int i = 0; i < KEEP + 1; i++) {
        objs[i].node.key = 0;
        weft__cache_put(c, &l, &objs[i].node);
    }
    assert_int_equal(l.n, KEEP + 1 - BATCH);
    assert_int_equal(c->nchains, 1);
    assert_int_equal(weft__cache_depot_count(c), BATCH);
    take_all(c, &l, 0, KEEP + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spill_all_cuts_chains),
        cmocka_unit_test(test_exit_spill_cuts_chains),
        cmocka_unit_test(test_mixed_keys_stay_loose),
        cmocka_unit_test(test_put_spills_a_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
