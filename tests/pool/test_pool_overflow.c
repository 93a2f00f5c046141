/*
 * test_pool_overflow.c — stack overflow diagnostics of tasks on pool
 * workers, and the pool option that turns them off.  Death tests
 * (tests/death.h): the child overflows, the parent checks how it died.
 */
#include <weft/coro.h>
#include <weft/pool.h>
#include <weft/task.h>

#include "../death.h"

#include <stdlib.h>

/* A task declared with 64 KiB gets twice that (sched/task_run.c: room for bodies
 * awaited inline), and the line gives the stack it really had. */
static const char task_line[] =
    "weft: stack overflow in coroutine 'deep' (stack 128 KiB)";

static weft_pool *pool;

static void *dive_on_worker(void *arg)
{
    /* From main's thread onto a worker. */
    if (weft_schedule(pool) != 0)
        _exit(2);
    if (!weft_pool_current())
        _exit(2);
    death_dive(0);
    return arg;
}

/* A pool of two workers, with the overflow handler on or off (for the
 * whole process), and a task named "deep" that overflows on one of them. */
static void run_deep_task(int no_handler)
{
    if (no_handler)
        weft_overflow_handler_disable();
    weft_pool_opts popts = {.threads = 2};
    if (weft_pool_create(&pool, &popts) != 0)
        _exit(2);
    weft_task_opts opts = {.stack_size = 64 * 1024, .name = "deep"};
    weft_task *t;
    if (weft_task_create(&t, dive_on_worker, NULL, &opts) != 0)
        _exit(2);
    weft_sync_wait(t, NULL);
}

static void task_overflow_child(void)
{
    run_deep_task(0);
}

static void test_task_overflow_names_the_task(void **state)
{
    (void)state;
    struct death d;
    death_run(task_overflow_child, &d);
    death_assert_signal(&d, SIGABRT);
    assert_true(death_has_line(&d, task_line));
}

static void disable_call_off_child(void)
{
    run_deep_task(1);
}

static void test_disable_call_turns_the_handler_off(void **state)
{
    (void)state;
    struct death d;
    death_run(disable_call_off_child, &d);
    death_assert_signal(&d, SIGSEGV);
    assert_null(strstr(d.err, "stack overflow"));
}

static void env_off_child(void)
{
    setenv("WEFT_OVERFLOW_HANDLER", "0", 1);
    run_deep_task(0);
}

static void test_env_turns_the_handler_off(void **state)
{
    (void)state;
    struct death d;
    death_run(env_off_child, &d);
    death_assert_signal(&d, SIGSEGV);
    assert_null(strstr(d.err, "stack overflow"));
}

static void *returns_at_once(void *arg)
{
    return arg;
}

static bool segv_is_default(void)
{
    struct sigaction cur;
    return sigaction(SIGSEGV, NULL, &cur) == 0 &&
           !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL;
}

/* A handler already installed (by a coroutine run on main's thread) is
 * taken out again by weft_overflow_handler_disable, and a pool created
 * after it does not put it back. */
static void option_removes_handler_child(void)
{
    weft_coro *co;
    if (weft_coro_create(&co, returns_at_once, NULL) != 0 ||
        weft_coro_resume(co, NULL, NULL) != 0 || weft_coro_destroy(co) != 0)
        _exit(2);
    if (segv_is_default())
        _exit(1); /* it was never installed */
    weft_overflow_handler_disable();
    bool removed = segv_is_default();
    weft_pool_opts popts = {.threads = 1};
    if (weft_pool_create(&pool, &popts) != 0)
        _exit(2);
    removed = removed && segv_is_default();
    weft_pool_destroy(pool);
    _exit(removed ? 0 : 1);
}

static void test_disable_call_removes_installed_handler(void **state)
{
    (void)state;
    struct death d;
    death_run(option_removes_handler_child, &d);
    death_assert_exit(&d, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_task_overflow_names_the_task),
        cmocka_unit_test(test_disable_call_turns_the_handler_off),
        cmocka_unit_test(test_env_turns_the_handler_off),
        cmocka_unit_test(test_disable_call_removes_installed_handler),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
