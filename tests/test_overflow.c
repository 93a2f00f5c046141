/*
 * test_overflow.c — stack overflow diagnostics of standalone coroutines
 * (no pool): each case is a death test (tests/death.h) whose child
 * overflows, or faults otherwise, and the parent checks how it died and
 * the line it wrote.
 */
#include <weft/coro.h>

#include "death.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define STACK (64u * 1024u)

/* What a 64 KiB coroutine named "diver" prints when it overflows. */
static const char guard_line[] =
    "weft: stack overflow in coroutine 'diver' (stack 64 KiB)";
static const char canary_line[] =
    "weft: stack overflow in coroutine 'diver' (stack 64 KiB, canary broken)";

/* Run body in a fresh coroutine named "diver" on the calling thread. */
static void run_diver(weft_fn body)
{
    weft_coro_opts opts = {.stack_size = STACK, .name = "diver"};
    weft_coro *co;
    if (weft_coro_create(&co, body, &opts) != 0)
        _exit(2);
    weft_coro_resume(co, NULL, NULL);
    weft_coro_destroy(co);
}

static void *dive_body(void *arg)
{
    death_dive(0);
    return arg;
}

static void *bad_write_body(void *arg)
{
    death_bad_write();
    return arg;
}

/* The child of a case that must not print the overflow line. */
static void assert_no_overflow_line(const struct death *d)
{
    if (strstr(d->err, "stack overflow"))
        fprintf(stderr, "unexpected: %s\n", d->err);
    assert_null(strstr(d->err, "stack overflow"));
}

/* ------------------------------------------------------------------ */
/* Guarded stacks                                                       */

static void overflow_child(void)
{
    run_diver(dive_body);
}

static void test_guard_fault_names_the_coroutine(void **state)
{
    (void)state;
    struct death d;
    death_run(overflow_child, &d);
    death_assert_signal(&d, SIGABRT);
    assert_true(death_has_line(&d, guard_line));
}

static void *thread_main(void *arg)
{
    run_diver(dive_body);
    return arg;
}

/* A plain thread that resumes a coroutine gets the altstack too. */
static void overflow_on_thread_child(void)
{
    pthread_t th;
    if (pthread_create(&th, NULL, thread_main, NULL) == 0)
        pthread_join(th, NULL);
}

static void test_guard_fault_on_another_thread(void **state)
{
    (void)state;
    struct death d;
    death_run(overflow_on_thread_child, &d);
    death_assert_signal(&d, SIGABRT);
    assert_true(death_has_line(&d, guard_line));
}

static char app_altstack[64 * 1024];

static void *returns_at_once(void *arg)
{
    return arg;
}

/* weft leaves an alternate stack the application set alone. */
static void app_altstack_kept_child(void)
{
    stack_t ss = {.ss_sp = app_altstack, .ss_size = sizeof app_altstack};
    if (sigaltstack(&ss, NULL) != 0)
        _exit(2);
    run_diver(returns_at_once);
    stack_t cur;
    if (sigaltstack(NULL, &cur) != 0)
        _exit(2);
    _exit(cur.ss_sp == app_altstack && !(cur.ss_flags & SS_DISABLE) ? 0 : 1);
}

static void test_app_altstack_is_kept(void **state)
{
    (void)state;
    struct death d;
    death_run(app_altstack_kept_child, &d);
    death_assert_exit(&d, 0);
}

/* ... and the handler runs on it. */
static void overflow_on_app_altstack_child(void)
{
    stack_t ss = {.ss_sp = app_altstack, .ss_size = sizeof app_altstack};
    if (sigaltstack(&ss, NULL) != 0)
        _exit(2);
    run_diver(dive_body);
}

static void test_guard_fault_on_app_altstack(void **state)
{
    (void)state;
    struct death d;
    death_run(overflow_on_app_altstack_child, &d);
    death_assert_signal(&d, SIGABRT);
    assert_true(death_has_line(&d, guard_line));
}

/* ------------------------------------------------------------------ */
/* Canary stacks                                                        */

static uintptr_t canary_floor;

/* Grow the stack down to canary_floor, writing every frame.  Not
 * instrumented by ASan: with detect_stack_use_after_return its locals would
 * live on a heap "fake stack", and the addresses compared here must be the
 * coroutine stack's own. */
__attribute__((noinline, no_sanitize_address)) static void dive_to_floor(void)
{
    volatile unsigned char frame[256];
    for (size_t i = 0; i < sizeof frame; i++)
        frame[i] = 0xa5;
    if ((uintptr_t)frame > canary_floor)
        dive_to_floor();
    frame[0]++; /* no tail call: this frame stays while the next runs */
}

/* Overrun the stack by half a kilobyte, which stays inside the canary
 * page below it (no fault), then switch out: the check must catch it. */
__attribute__((no_sanitize_address)) static void *canary_body(void *arg)
{
    volatile char here = 0;
    canary_floor = (uintptr_t)&here - STACK - 512;
    dive_to_floor();
    weft_coro_yield(NULL, NULL);
    return arg;
}

static void canary_child(void)
{
    setenv("WEFT_STACK_GUARD", "canary", 1);
    run_diver(canary_body);
}

static void test_broken_canary_names_the_coroutine(void **state)
{
    (void)state;
    struct death d;
    death_run(canary_child, &d);
    death_assert_signal(&d, SIGABRT);
    assert_true(death_has_line(&d, canary_line));
}

/* ------------------------------------------------------------------ */
/* Off, and other faults                                                */

static void env_off_child(void)
{
    setenv("WEFT_OVERFLOW_HANDLER", "0", 1);
    run_diver(dive_body);
}

static void test_env_turns_the_handler_off(void **state)
{
    (void)state;
    struct death d;
    death_run(env_off_child, &d);
    death_assert_signal(&d, SIGSEGV);
    assert_no_overflow_line(&d);
}

static bool same_altstack(const stack_t *a, const stack_t *b)
{
    return a->ss_sp == b->ss_sp && a->ss_size == b->ss_size &&
           (a->ss_flags & SS_DISABLE) == (b->ss_flags & SS_DISABLE);
}

/* The calling thread's alternate stack before and after its first
 * coroutine.  (Sanitizers give every thread one of their own.) */
static void altstack_around_first_coroutine(stack_t *before, stack_t *after)
{
    if (sigaltstack(NULL, before) != 0)
        _exit(2);
    run_diver(returns_at_once);
    if (sigaltstack(NULL, after) != 0)
        _exit(2);
}

/* With the handler off, weft leaves a thread's alternate stack alone. */
static void env_off_altstack_child(void)
{
    setenv("WEFT_OVERFLOW_HANDLER", "0", 1);
    stack_t before, after;
    altstack_around_first_coroutine(&before, &after);
    _exit(same_altstack(&before, &after) ? 0 : 1);
}

/* With it on, a thread that had none gets one (one it had is kept:
 * test_app_altstack_is_kept). */
static void on_altstack_child(void)
{
    stack_t before, after;
    altstack_around_first_coroutine(&before, &after);
    if (!(before.ss_flags & SS_DISABLE))
        _exit(same_altstack(&before, &after) ? 0 : 1);
    _exit((after.ss_flags & SS_DISABLE) ? 1 : 0);
}

static void test_altstack_only_when_on(void **state)
{
    (void)state;
    struct death d;
    death_run(env_off_altstack_child, &d);
    death_assert_exit(&d, 0);
    death_run(on_altstack_child, &d);
    death_assert_exit(&d, 0);
}

static const char app_mark[] = "application handler ran";

static void app_plain_handler(int sig)
{
    (void)sig;
    ssize_t w = write(STDERR_FILENO, app_mark, sizeof app_mark - 1);
    (void)w;
    _exit(3);
}

static void app_info_handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    /* The fault's details reach it unchanged. */
    if (sig == SIGSEGV && si->si_addr == death_fault_addr)
        app_plain_handler(sig);
    _exit(4);
}

/* An application handler installed before weft's; flags as given. */
static void install_app_handler(bool siginfo)
{
    struct sigaction sa = {0};
    if (siginfo) {
        sa.sa_sigaction = app_info_handler;
        sa.sa_flags = SA_SIGINFO;
    } else {
        sa.sa_handler = app_plain_handler;
    }
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, NULL) != 0)
        _exit(2);
}

static void bad_write_plain_child(void)
{
    install_app_handler(false);
    run_diver(bad_write_body);
}

static void bad_write_siginfo_child(void)
{
    install_app_handler(true);
    run_diver(bad_write_body);
}

static void test_other_fault_chains_to_app_handler(void **state)
{
    (void)state;
    struct death d;
    death_run(bad_write_plain_child, &d);
    death_assert_exit(&d, 3);
    assert_non_null(strstr(d.err, app_mark));
    assert_no_overflow_line(&d);

    death_run(bad_write_siginfo_child, &d);
    death_assert_exit(&d, 3);
    assert_non_null(strstr(d.err, app_mark));
}

/* A guard fault is weft's even with an application handler in place. */
static void overflow_with_app_handler_child(void)
{
    install_app_handler(true);
    run_diver(dive_body);
}

static void test_guard_fault_not_chained(void **state)
{
    (void)state;
    struct death d;
    death_run(overflow_with_app_handler_child, &d);
    death_assert_signal(&d, SIGABRT);
    assert_true(death_has_line(&d, guard_line));
    assert_null(strstr(d.err, app_mark));
}

/* With no application handler, another fault kills as it would have. */
static void bad_write_default_child(void)
{
    run_diver(bad_write_body);
}

static void test_other_fault_default_action(void **state)
{
    (void)state;
    struct death d;
    death_run(bad_write_default_child, &d);
    death_assert_signal(&d, SIGSEGV);
    assert_no_overflow_line(&d);
}

/* An ignored SIGSEGV that is sent, not caused, stays ignored. */
static void sent_ignored_child(void)
{
    signal(SIGSEGV, SIG_IGN);
    run_diver(returns_at_once);
    raise(SIGSEGV);
    _exit(0);
}

static void test_sent_signal_ignored(void **state)
{
    (void)state;
    struct death d;
    death_run(sent_ignored_child, &d);
    death_assert_exit(&d, 0);
}

/* ... but an ignored fault kills, as it does without weft. */
static void fault_ignored_child(void)
{
    signal(SIGSEGV, SIG_IGN);
    run_diver(bad_write_body);
}

static void test_ignored_fault_still_kills(void **state)
{
    (void)state;
    struct death d;
    death_run(fault_ignored_child, &d);
    death_assert_signal(&d, SIGSEGV);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guard_fault_names_the_coroutine),
        cmocka_unit_test(test_guard_fault_on_another_thread),
        cmocka_unit_test(test_app_altstack_is_kept),
        cmocka_unit_test(test_guard_fault_on_app_altstack),
        cmocka_unit_test(test_broken_canary_names_the_coroutine),
        cmocka_unit_test(test_env_turns_the_handler_off),
        cmocka_unit_test(test_altstack_only_when_on),
        cmocka_unit_test(test_other_fault_chains_to_app_handler),
        cmocka_unit_test(test_guard_fault_not_chained),
        cmocka_unit_test(test_other_fault_default_action),
        cmocka_unit_test(test_sent_signal_ignored),
        cmocka_unit_test(test_ignored_fault_still_kills),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
