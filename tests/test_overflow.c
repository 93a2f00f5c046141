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
#include <sys/syscall.h>
#include <unistd.h>

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

/* Whether the mapping just below the one that holds `addr` is one page
 * with no access: an mprotect guard (a MADV_GUARD_INSTALL guard is no
 * mapping of its own). */
static bool prot_none_page_below(const void *addr)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return false;
    char line[512], prev_perms[8] = "";
    unsigned long prev_lo = 0, prev_hi = 0, lo, hi;
    bool found = false;
    uintptr_t a = (uintptr_t)addr;
    while (fgets(line, sizeof line, f)) {
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3)
            continue;
        if (lo <= a && a < hi) {
            found = prev_hi == lo &&
                    prev_hi - prev_lo == (unsigned long)sysconf(_SC_PAGESIZE) &&
                    strncmp(prev_perms, "---p", 4) == 0;
            break;
        }
        prev_lo = lo;
        prev_hi = hi;
        memcpy(prev_perms, perms, sizeof perms);
    }
    fclose(f);
    return found;
}

/* The frame address, not a local's: under ASan with
 * detect_stack_use_after_return locals live on a heap "fake stack". */
static void *mprotect_dive_body(void *arg)
{
    if (!prot_none_page_below(__builtin_frame_address(0)))
        _exit(5);
    death_dive(0);
    return arg;
}

/* WEFT_STACK_GUARD=mprotect: the guard of a kernel without
 * MADV_GUARD_INSTALL, or of one that only says it installed it, as
 * qemu-user does (docs/testing.md), is a PROT_NONE mapping below the
 * stack, and an overflow into it is named the same way. */
static void mprotect_overflow_child(void)
{
    setenv("WEFT_STACK_GUARD", "mprotect", 1);
    run_diver(mprotect_dive_body);
}

static void test_mprotect_guard_fault_names_the_coroutine(void **state)
{
    (void)state;
    struct death d;
    death_run(mprotect_overflow_child, &d);
    death_assert_signal(&d, SIGABRT);
    assert_true(death_has_line(&d, guard_line));
}

/* Whether madvise(MADV_GUARD_INSTALL) really guards a page here, found
 * out the way a program would: a read of the page under a SIGSEGV handler.
 * (The library checks otherwise, without a handler: src/ctx/stack.c.) */
static sigjmp_buf probe_jmp;

static void probe_fault(int sig)
{
    (void)sig;
    siglongjmp(probe_jmp, 1);
}

static bool madvise_guard_works(void)
{
    long page = sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        _exit(2);
    bool works = false;
    if (madvise(p, (size_t)page, 102 /* MADV_GUARD_INSTALL */) == 0) {
        struct sigaction sa = {.sa_handler = probe_fault}, old;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, &old);
        if (sigsetjmp(probe_jmp, 1) == 0)
            (void)*(volatile char *)p;
        else
            works = true;
        sigaction(SIGSEGV, &old, NULL);
    }
    munmap(p, (size_t)page);
    return works;
}

static bool guard_is_a_mapping;

static void *look_below_body(void *arg)
{
    guard_is_a_mapping = prot_none_page_below(__builtin_frame_address(0));
    return arg;
}

/* weft guards with MADV_GUARD_INSTALL where it works and with mprotect
 * where it does not: where the kernel lacks it (EINVAL) and where it is
 * answered with success but installs nothing (qemu-user). */
static void guard_kind_child(void)
{
    bool madvise_works = madvise_guard_works();
    run_diver(look_below_body);
    if (madvise_works && guard_is_a_mapping)
        _exit(6); /* fell back to mprotect for nothing */
    if (!madvise_works && !guard_is_a_mapping)
        _exit(7); /* no mprotect guard where it was needed */
    _exit(0);
}

static void test_guard_kind_matches_the_system(void **state)
{
    (void)state;
    struct death d;
    death_run(guard_kind_child, &d);
    death_assert_exit(&d, 0);
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

/* ------------------------------------------------------------------ */
/* A signal's frame that does not fit                                    */

/* The lowest usable byte of the running diver's stack, from where its
 * body starts: the coroutine's record and first frame share the top page
 * of its mapping, whose usable part is the STACK bytes below that page's
 * end. */
static uintptr_t diver_low;

static void on_usr1_never(int sig)
{
    (void)sig;
    _exit(5); /* its frame had no room: it cannot run */
}

/* Small frames down to a few hundred bytes above the guard, then a
 * signal to this thread, whose frame (the CPU's whole register state,
 * over a KiB) does not fit: the kernel sends SIGSEGV instead. */
__attribute__((noinline)) static long dive_and_signal(long depth)
{
    volatile char frame[32];
    frame[0] = (char)depth;
    if ((uintptr_t)__builtin_frame_address(0) - diver_low < 640) {
        /* The system call itself, not raise(): libc's and a sanitizer's
         * frames around it would reach the guard first. */
        syscall(SYS_tgkill, (long)getpid(), (long)syscall(SYS_gettid),
                (long)SIGUSR1);
        return 0;
    }
    return dive_and_signal(depth + 1) + frame[0];
}

static void *signal_near_guard_body(void *arg)
{
    /* The frame's address, not a local's: under ASan a local may live on
     * its fake stack, far from this one. */
    uintptr_t top = (uintptr_t)__builtin_frame_address(0);
    diver_low = ((top | 4095) + 1) - STACK;
    dive_and_signal(0);
    return arg;
}

static void signal_near_guard_child(void)
{
    struct sigaction sa = {.sa_handler = on_usr1_never}; /* no SA_ONSTACK */
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0)
        _exit(2);
    run_diver(signal_near_guard_body);
}

/* The kernel's SIGSEGV (SI_KERNEL, no address) is the overflow it is:
 * before, the handler took it for a fault that would repeat, returned,
 * and the coroutine ran on without its signal. */
static void test_signal_frame_overflow_names_the_coroutine(void **state)
{
    (void)state;
    struct death d;
    death_run(signal_near_guard_child, &d);
    death_assert_signal(&d, SIGABRT);
    assert_true(death_has_line(
        &d, "weft: stack overflow in coroutine 'diver' (stack 64 KiB, "
            "no room for a signal's frame)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guard_fault_names_the_coroutine),
        cmocka_unit_test(test_mprotect_guard_fault_names_the_coroutine),
        cmocka_unit_test(test_guard_kind_matches_the_system),
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
        cmocka_unit_test(test_signal_frame_overflow_names_the_coroutine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
