/*
 * test_stack_room.c — weft/task.h + pool.h: a task gets the stack size of
 * its pool (or of its weft_coro_opts) however the runtime chooses to run
 * it.  Its own executable: a failure here is a stack overflow (SIGSEGV),
 * which would end every case that came after it.
 */
#include "wt.h"

/* ------------------------------------------------------------------ */
/* Stack room of a task awaited before it started                       */

/* A spawned task gets a stack of the pool's size however it is run.  Here
 * each task stays inside the 256 KiB default on its own: the parent
 * uses ~160 KiB, then spawns a child that uses ~160 KiB and awaits it at
 * once (the child is still queued: the runtime may run it inline, as a
 * plain call, but only if that leaves the child the room it would have on
 * its own stack). */
enum { ROOM_BYTES = 160 * 1024 };

static __attribute__((noinline)) intptr_t use_stack_bytes(size_t bytes)
{
    volatile char *buf = __builtin_alloca(bytes);
    for (size_t i = 0; i < bytes; i += 256)
        buf[i] = (char)(i >> 8);
    intptr_t sum = 0;
    for (size_t i = 0; i < bytes; i += 256)
        sum += buf[i] != (char)(i >> 8);
    return sum; /* 0 when intact */
}

static void *room_child(void *arg)
{
    return P(use_stack_bytes(ROOM_BYTES) + I(arg));
}

static __attribute__((noinline)) intptr_t spawn_child_deep(size_t bytes)
{
    volatile char *buf = __builtin_alloca(bytes);
    for (size_t i = 0; i < bytes; i += 256)
        buf[i] = 1;
    weft_task *t = NULL;
    int rc = weft_spawn(&t, weft_pool_current(), room_child, P(7), NULL);
    CHECK_EQ(rc, 0);
    if (rc != 0)
        return -1;
    void *r = P(-1);
    CHECK_EQ(weft_await(t, &r), 0);
    intptr_t bad = 0;
    for (size_t i = 0; i < bytes; i += 256)
        bad += buf[i] != 1;
    return I(r) + bad;
}

static void *room_parent(void *arg)
{
    (void)arg;
    return P(spawn_child_deep(ROOM_BYTES));
}

static void test_await_early_keeps_stack_room(void **state)
{
    unsigned n = WT_NTHREADS(state);
    fprintf(stderr, "(if this case dies of SIGSEGV: a spawned task awaited "
            "before it started was run with less stack than its own)\n");
    weft_pool *p = wt_pool(n);
    for (int i = 0; i < 20; i++)
        assert_int_equal(I(wt_run(p, room_parent, NULL)), 7);
    wt_destroy(p);
    WT_CLEAN();
}

/* With a pool stack size of 1 MiB: the child uses 700 KiB. */
enum { BIG_BYTES = 700 * 1024 };

static void *big_child(void *arg)
{
    return P(use_stack_bytes(BIG_BYTES) + I(arg));
}

static void *big_parent(void *arg)
{
    (void)arg;
    weft_task *t = NULL;
    int rc = weft_spawn(&t, weft_pool_current(), big_child, P(9), NULL);
    CHECK_EQ(rc, 0);
    if (rc != 0)
        return P(-1);
    void *r = P(-1);
    CHECK_EQ(weft_await(t, &r), 0);
    return r;
}

static void test_await_early_pool_stack_size(void **state)
{
    unsigned n = WT_NTHREADS(state);
    fprintf(stderr, "(if this case dies of SIGSEGV: a spawned task awaited "
            "before it started was run with less stack than the pool's "
            "stack_size)\n");
    weft_pool_opts o = { .threads = n, .stack_size = 1u << 20 };
    weft_pool *p = NULL;
    assert_int_equal(weft_pool_create(&p, &o), 0);
    for (int i = 0; i < 20; i++)
        assert_int_equal(I(wt_run(p, big_parent, NULL)), 9);
    wt_destroy(p);
    WT_CLEAN();
}

/* Control: the same child, sync_waited from main (runs on its own
 * stack), and the parent's own use without a child. */
static void *room_parent_alone(void *arg)
{
    (void)arg;
    return P(use_stack_bytes(ROOM_BYTES));
}

static void test_control_own_stack(void **state)
{
    unsigned n = WT_NTHREADS(state);
    weft_pool *p = wt_pool(n);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(I(wt_run(p, room_child, P(7))), 7);
        assert_int_equal(I(wt_run(p, room_parent_alone, NULL)), 0);
    }
    wt_destroy(p);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST(test_control_own_stack),
        WT_TEST(test_await_early_keeps_stack_room),
        WT_TEST(test_await_early_pool_stack_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
