/*
 * test_coro.c — the standalone coroutine API (weft/coro.h).
 *
 * Built at -O2 (see tests/meson.build): the register and alignment tests
 * only bite when values live in registers and the compiler trusts the ABI
 * stack alignment.
 */
#include <weft/coro.h>

#include "live_limit.h"

#include <errno.h>
#include <fenv.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <setjmp.h>
#include <cmocka.h>

#ifdef WEFT_VALGRIND
#include <valgrind/valgrind.h>
#endif

#define P(x) ((void *)(intptr_t)(x))
#define I(p) ((intptr_t)(p))

/* Create with default options, failing the test on error. */
static weft_coro *mk(weft_fn fn)
{
    weft_coro *co = NULL;
    assert_int_equal(weft_coro_create(&co, fn, NULL), 0);
    assert_non_null(co);
    return co;
}

/* ------------------------------------------------------------------ */
/* Value passing                                                       */

static void *echo_body(void *in)
{
    /* fn gets the first resume's value; each yield hands back in+1 and
     * receives the next resume's value. */
    intptr_t v = I(in);
    for (int i = 0; i < 3; i++) {
        void *next = NULL;
        assert_int_equal(weft_coro_yield(P(v + 1), &next), 0);
        v = I(next);
    }
    return P(v * 10);
}

static void test_values_both_ways(void **state)
{
    (void)state;
    weft_coro *co = mk(echo_body);
    void *out = NULL;
    assert_int_equal(weft_coro_resume(co, P(1), &out), 0);
    assert_int_equal(I(out), 2);
    assert_int_equal(weft_coro_status(co), WEFT_CORO_SUSPENDED);
    assert_int_equal(weft_coro_resume(co, P(5), &out), 0);
    assert_int_equal(I(out), 6);
    assert_int_equal(weft_coro_resume(co, P(7), &out), 0);
    assert_int_equal(I(out), 8);
    /* The last resume value is what the body returns times 10. */
    assert_int_equal(weft_coro_resume(co, P(9), &out), 0);
    assert_int_equal(I(out), 90);
    assert_int_equal(weft_coro_status(co), WEFT_CORO_DEAD);
    assert_int_equal(weft_coro_destroy(co), 0);
}

static void *null_io_body(void *in)
{
    assert_null(in);
    /* in == NULL: the resume value is simply dropped. */
    assert_int_equal(weft_coro_yield(P(3), NULL), 0);
    assert_int_equal(weft_coro_yield(P(4), NULL), 0);
    return P(5);
}

static void test_null_out_and_in(void **state)
{
    (void)state;
    weft_coro *co = mk(null_io_body);
    /* out == NULL: the yielded value is dropped. */
    assert_int_equal(weft_coro_resume(co, NULL, NULL), 0);
    void *out = NULL;
    assert_int_equal(weft_coro_resume(co, P(77), &out), 0);
    assert_int_equal(I(out), 4);
    assert_int_equal(weft_coro_resume(co, NULL, NULL), 0);
    assert_int_equal(weft_coro_status(co), WEFT_CORO_DEAD);
    assert_int_equal(weft_coro_destroy(co), 0);
}

/* ------------------------------------------------------------------ */
/* Statuses                                                            */

static weft_coro *g_outer, *g_inner;
static weft_coro_state g_seen_self, g_seen_outer_from_inner;

static void *status_inner_body(void *in)
{
    (void)in;
    g_seen_self = weft_coro_status(weft_coro_current());
    g_seen_outer_from_inner = weft_coro_status(g_outer);
    return NULL;
}

static void *status_outer_body(void *in)
{
    (void)in;
    assert_ptr_equal(weft_coro_current(), g_outer);
    assert_int_equal(weft_coro_status(weft_coro_current()), WEFT_CORO_RUNNING);
    assert_int_equal(weft_coro_resume(g_inner, NULL, NULL), 0);
    /* Back from the nested resume: RUNNING again. */
    assert_int_equal(weft_coro_status(g_outer), WEFT_CORO_RUNNING);
    return NULL;
}

static void test_statuses(void **state)
{
    (void)state;
    g_outer = mk(status_outer_body);
    g_inner = mk(status_inner_body);
    assert_int_equal(weft_coro_status(g_outer), WEFT_CORO_SUSPENDED);
    assert_int_equal(weft_coro_status(g_inner), WEFT_CORO_SUSPENDED);
    assert_int_equal(weft_coro_resume(g_outer, NULL, NULL), 0);
    assert_int_equal(g_seen_self, WEFT_CORO_RUNNING);
    assert_int_equal(g_seen_outer_from_inner, WEFT_CORO_NORMAL);
    assert_int_equal(weft_coro_status(g_outer), WEFT_CORO_DEAD);
    assert_int_equal(weft_coro_status(g_inner), WEFT_CORO_DEAD);
    assert_int_equal(weft_coro_destroy(g_outer), 0);
    assert_int_equal(weft_coro_destroy(g_inner), 0);
    assert_int_equal(weft_coro_status(NULL), WEFT_CORO_DEAD);
}

/* ------------------------------------------------------------------ */
/* Errors.  Each failed call must leave the object as it was: same status,
 * and a later resume still works (error.h: "no other effect").          */

static void *yield_once_body(void *in)
{
    void *next = NULL;
    assert_int_equal(weft_coro_yield(in, &next), 0);
    return next;
}

static void test_resume_dead_esrch_and_null_einval(void **state)
{
    (void)state;
    weft_coro *co = mk(yield_once_body);
    assert_int_equal(weft_coro_resume(NULL, P(1), NULL), -EINVAL);
    assert_int_equal(weft_coro_resume(co, P(1), NULL), 0);
    assert_int_equal(weft_coro_resume(co, P(2), NULL), 0);
    assert_int_equal(weft_coro_status(co), WEFT_CORO_DEAD);
    void *out = P(0x5a);
    assert_int_equal(weft_coro_resume(co, P(3), &out), -ESRCH);
    assert_int_equal(I(out), 0x5a); /* not written on error */
    assert_int_equal(weft_coro_status(co), WEFT_CORO_DEAD);
    assert_int_equal(weft_coro_destroy(co), 0);
}

static weft_coro *g_self;

static void *resume_self_body(void *in)
{
    (void)in;
    weft_coro *me = weft_coro_current();
    assert_ptr_equal(me, g_self);
    void *out = P(0x5a);
    assert_int_equal(weft_coro_resume(me, NULL, &out), -EBUSY);
    assert_int_equal(I(out), 0x5a);
    assert_int_equal(weft_coro_status(me), WEFT_CORO_RUNNING);
    assert_int_equal(weft_coro_destroy(me), -EBUSY); /* nothing freed */
    assert_int_equal(weft_coro_status(me), WEFT_CORO_RUNNING);
    assert_int_equal(weft_coro_transfer(me, NULL, NULL), -EBUSY);
    assert_int_equal(weft_coro_transfer(NULL, NULL, NULL), -EINVAL);
    assert_int_equal(weft_coro_status(me), WEFT_CORO_RUNNING);
    /* Still a working coroutine after all those refusals. */
    void *next = NULL;
    assert_int_equal(weft_coro_yield(P(11), &next), 0);
    return P(I(next) + 1);
}

static void test_self_errors_ebusy(void **state)
{
    (void)state;
    g_self = mk(resume_self_body);
    void *out = NULL;
    assert_int_equal(weft_coro_resume(g_self, NULL, &out), 0);
    assert_int_equal(I(out), 11);
    assert_int_equal(weft_coro_resume(g_self, P(41), &out), 0);
    assert_int_equal(I(out), 42);
    assert_int_equal(weft_coro_destroy(g_self), 0);
}

static weft_coro *g_normal_outer, *g_normal_inner;

static void *normal_inner_body(void *in)
{
    (void)in;
    assert_int_equal(weft_coro_status(g_normal_outer), WEFT_CORO_NORMAL);
    assert_int_equal(weft_coro_resume(g_normal_outer, NULL, NULL), -EBUSY);
    assert_int_equal(weft_coro_destroy(g_normal_outer), -EBUSY);
    assert_int_equal(weft_coro_transfer(g_normal_outer, NULL, NULL), -EBUSY);
    assert_int_equal(weft_coro_status(g_normal_outer), WEFT_CORO_NORMAL);
    return P(7);
}

static void *normal_outer_body(void *in)
{
    (void)in;
    void *out = NULL;
    assert_int_equal(weft_coro_resume(g_normal_inner, NULL, &out), 0);
    assert_int_equal(I(out), 7);
    void *next = NULL;
    assert_int_equal(weft_coro_yield(P(8), &next), 0);
    return next;
}

static void test_normal_resumer_ebusy(void **state)
{
    (void)state;
    g_normal_outer = mk(normal_outer_body);
    g_normal_inner = mk(normal_inner_body);
    void *out = NULL;
    assert_int_equal(weft_coro_resume(g_normal_outer, NULL, &out), 0);
    assert_int_equal(I(out), 8);
    /* The refused calls left the outer one intact: it resumes and ends. */
    assert_int_equal(weft_coro_status(g_normal_outer), WEFT_CORO_SUSPENDED);
    assert_int_equal(weft_coro_resume(g_normal_outer, P(9), &out), 0);
    assert_int_equal(I(out), 9);
    assert_int_equal(weft_coro_status(g_normal_outer), WEFT_CORO_DEAD);
    assert_int_equal(weft_coro_destroy(g_normal_outer), 0);
    assert_int_equal(weft_coro_destroy(g_normal_inner), 0);
}

static void test_plain_thread_eperm(void **state)
{
    (void)state;
    void *in = P(0x5a);
    assert_int_equal(weft_coro_yield(P(1), &in), -EPERM);
    assert_int_equal(I(in), 0x5a);
    weft_coro *co = mk(yield_once_body);
    void *out = P(0x5a);
    assert_int_equal(weft_coro_transfer(co, P(1), &out), -EPERM);
    assert_int_equal(I(out), 0x5a);
    /* The refused transfer must not have started co. */
    assert_int_equal(weft_coro_status(co), WEFT_CORO_SUSPENDED);
    assert_int_equal(weft_coro_resume(co, P(4), &out), 0);
    assert_int_equal(I(out), 4);
    assert_int_equal(weft_coro_resume(co, P(5), &out), 0);
    assert_int_equal(I(out), 5);
    assert_int_equal(weft_coro_destroy(co), 0);
    assert_null(weft_coro_current());
}

static weft_coro *g_dead;

static void *transfer_to_dead_body(void *in)
{
    (void)in;
    void *out = P(0x5a);
    assert_int_equal(weft_coro_transfer(g_dead, P(1), &out), -ESRCH);
    assert_int_equal(I(out), 0x5a);
    assert_int_equal(weft_coro_status(g_dead), WEFT_CORO_DEAD);
    assert_int_equal(weft_coro_status(weft_coro_current()), WEFT_CORO_RUNNING);
    return P(3);
}

static void *return_in_body(void *in)
{
    return in;
}

static void test_transfer_to_dead_esrch(void **state)
{
    (void)state;
    g_dead = mk(return_in_body);
    assert_int_equal(weft_coro_resume(g_dead, NULL, NULL), 0);
    assert_int_equal(weft_coro_status(g_dead), WEFT_CORO_DEAD);
    weft_coro *co = mk(transfer_to_dead_body);
    void *out = NULL;
    assert_int_equal(weft_coro_resume(co, NULL, &out), 0);
    assert_int_equal(I(out), 3);
    assert_int_equal(weft_coro_destroy(co), 0);
    assert_int_equal(weft_coro_destroy(g_dead), 0);
}

static void test_create_errors(void **state)
{
    (void)state;
    weft_coro *co = (weft_coro *)P(0x5a);
    assert_int_equal(weft_coro_create(NULL, return_in_body, NULL), -EINVAL);
    assert_int_equal(weft_coro_create(&co, NULL, NULL), -EINVAL);
    assert_ptr_equal(co, P(0x5a));

    /* Sizes the address space cannot hold fail cleanly (no crash, no
     * overflow in page rounding: SIZE_MAX rounds up past zero). */
    const size_t huge[] = { (size_t)1 << 46, SIZE_MAX, SIZE_MAX - 4095 };
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        weft_coro_opts o = { .stack_size = huge[i], .name = "huge" };
        co = (weft_coro *)P(0x5a);
        int err = weft_coro_create(&co, return_in_body, &o);
        if (err != -EINVAL && err != -ENOMEM)
            fail_msg("stack_size %zu: got %d, want -EINVAL or -ENOMEM",
                     huge[i], err);
        assert_ptr_equal(co, P(0x5a));
    }
    assert_int_equal(weft_coro_destroy(NULL), -EINVAL);
}

/* ------------------------------------------------------------------ */
/* Transfer                                                            */

static weft_coro *g_ta, *g_tb, *g_tc;
static intptr_t g_b_got;

static void *tb_body(void *in)
{
    g_b_got = I(in); /* fn's argument is the transfer's value */
    assert_ptr_equal(weft_coro_current(), g_tb);
    void *next = NULL;
    /* B inherited A's resumer (main): this yield returns to main. */
    assert_int_equal(weft_coro_yield(P(200), &next), 0);
    return P(I(next) + 1000);
}

static void *ta_body(void *in)
{
    assert_int_equal(I(in), 1);
    void *out = NULL;
    assert_int_equal(weft_coro_transfer(g_tb, P(100), &out), 0);
    /* Continued by main's second resume of A. */
    assert_ptr_equal(weft_coro_current(), g_ta);
    return P(I(out) + 1);
}

static void test_transfer_basic(void **state)
{
    (void)state;
    g_ta = mk(ta_body);
    g_tb = mk(tb_body);
    void *out = NULL;
    assert_int_equal(weft_coro_resume(g_ta, P(1), &out), 0);
    assert_int_equal(g_b_got, 100);
    assert_int_equal(I(out), 200); /* B's yield reached main */
    assert_int_equal(weft_coro_status(g_ta), WEFT_CORO_SUSPENDED);
    assert_int_equal(weft_coro_status(g_tb), WEFT_CORO_SUSPENDED);
    assert_null(weft_coro_current());
    /* A's pending transfer returns with the resume value. */
    assert_int_equal(weft_coro_resume(g_ta, P(300), &out), 0);
    assert_int_equal(I(out), 301);
    assert_int_equal(weft_coro_status(g_ta), WEFT_CORO_DEAD);
    assert_int_equal(weft_coro_status(g_tb), WEFT_CORO_SUSPENDED);
    assert_int_equal(weft_coro_resume(g_tb, P(5), &out), 0);
    assert_int_equal(I(out), 1005);
    assert_int_equal(weft_coro_destroy(g_ta), 0);
    assert_int_equal(weft_coro_destroy(g_tb), 0);
}

static void *chain_c_body(void *in)
{
    assert_int_equal(I(in), 3);
    void *next = NULL;
    assert_int_equal(weft_coro_yield(P(30), &next), 0); /* to main */
    return P(I(next) * 2);
}

static void *chain_b_body(void *in)
{
    assert_int_equal(I(in), 2);
    void *out = NULL;
    assert_int_equal(weft_coro_transfer(g_tc, P(3), &out), 0);
    return P(I(out) + 20);
}

static void *chain_a_body(void *in)
{
    assert_int_equal(I(in), 1);
    void *out = NULL;
    assert_int_equal(weft_coro_transfer(g_tb, P(2), &out), 0);
    return P(I(out) + 10);
}

static void test_transfer_chain(void **state)
{
    (void)state;
    g_ta = mk(chain_a_body);
    g_tb = mk(chain_b_body);
    g_tc = mk(chain_c_body);
    void *out = NULL;
    assert_int_equal(weft_coro_resume(g_ta, P(1), &out), 0);
    assert_int_equal(I(out), 30); /* C's yield came back to main */
    assert_int_equal(weft_coro_status(g_ta), WEFT_CORO_SUSPENDED);
    assert_int_equal(weft_coro_status(g_tb), WEFT_CORO_SUSPENDED);
    assert_int_equal(weft_coro_status(g_tc), WEFT_CORO_SUSPENDED);
    /* Each one finishes to main, in any order. */
    assert_int_equal(weft_coro_resume(g_tc, P(4), &out), 0);
    assert_int_equal(I(out), 8);
    assert_int_equal(weft_coro_resume(g_tb, P(5), &out), 0);
    assert_int_equal(I(out), 25);
    assert_int_equal(weft_coro_resume(g_ta, P(6), &out), 0);
    assert_int_equal(I(out), 16);
    assert_int_equal(weft_coro_destroy(g_ta), 0);
    assert_int_equal(weft_coro_destroy(g_tb), 0);
    assert_int_equal(weft_coro_destroy(g_tc), 0);
}

/* ------------------------------------------------------------------ */
/* Destroy                                                             */

static bool g_ran, g_cleaned;
static int g_second_yield, g_transfer_rc;

static void *never_body(void *in)
{
    (void)in;
    g_ran = true;
    return NULL;
}

static void test_destroy_never_started_and_dead(void **state)
{
    (void)state;
    g_ran = false;
    weft_coro *co = mk(never_body);
    assert_int_equal(weft_coro_destroy(co), 0);
    assert_false(g_ran); /* destroy must not run a never-started body */

    co = mk(never_body);
    assert_int_equal(weft_coro_resume(co, NULL, NULL), 0);
    assert_true(g_ran);
    assert_int_equal(weft_coro_destroy(co), 0);
}

static void *cancel_body(void *in)
{
    (void)in;
    /* A call that fails writes no out-parameter (weft.h, "Errors"): the
     * cancelled yield leaves `got` as it was. */
    void *got = P(7);
    int rc = weft_coro_yield(P(1), &got);
    assert_int_equal(rc, -ECANCELED);
    assert_ptr_equal(got, P(7));
    /* Being destroyed: a second yield fails at once, without suspending,
     * and so does a transfer (to a coroutine that must not start). */
    g_second_yield = weft_coro_yield(P(2), NULL);
    g_transfer_rc = weft_coro_transfer(g_tb, NULL, NULL);
    g_cleaned = true; /* the body's cleanup, last thing before return */
    return NULL;
}

static void test_destroy_suspended_cancels(void **state)
{
    (void)state;
    g_cleaned = false;
    g_ran = false;
    g_second_yield = g_transfer_rc = 0;
    g_tb = mk(never_body);
    weft_coro *co = mk(cancel_body);
    void *out = NULL;
    assert_int_equal(weft_coro_resume(co, NULL, &out), 0);
    assert_int_equal(I(out), 1);
    assert_false(g_cleaned);
    assert_int_equal(weft_coro_destroy(co), 0);
    /* destroy returned only after the body did. */
    assert_true(g_cleaned);
    assert_int_equal(g_second_yield, -ECANCELED);
    assert_int_equal(g_transfer_rc, -ECANCELED);
    assert_false(g_ran);
    assert_int_equal(weft_coro_status(g_tb), WEFT_CORO_SUSPENDED);
    assert_null(weft_coro_current());
    assert_int_equal(weft_coro_destroy(g_tb), 0);
}

static void *cancel_in_transfer_b(void *in)
{
    (void)in;
    return NULL;
}

static void *cancel_in_transfer_a(void *in)
{
    (void)in;
    /* B returns at once, to A's resumer (main); A stays parked here.  The
     * cancelled transfer writes no out-parameter. */
    void *got = P(7);
    int rc = weft_coro_transfer(g_tb, NULL, &got);
    assert_int_equal(rc, -ECANCELED);
    assert_ptr_equal(got, P(7));
    g_cleaned = true;
    return NULL;
}

static void test_destroy_cancels_pending_transfer(void **state)
{
    (void)state;
    g_cleaned = false;
    g_tb = mk(cancel_in_transfer_b);
    g_ta = mk(cancel_in_transfer_a);
    assert_int_equal(weft_coro_resume(g_ta, NULL, NULL), 0);
    assert_int_equal(weft_coro_status(g_tb), WEFT_CORO_DEAD);
    assert_int_equal(weft_coro_status(g_ta), WEFT_CORO_SUSPENDED);
    assert_int_equal(weft_coro_destroy(g_ta), 0);
    assert_true(g_cleaned);
    assert_int_equal(weft_coro_destroy(g_tb), 0);
}

/* ------------------------------------------------------------------ */
/* current, name, status(NULL), strerror                               */

static weft_coro *g_cur_outer, *g_cur_inner;

static void *cur_inner_body(void *in)
{
    (void)in;
    assert_ptr_equal(weft_coro_current(), g_cur_inner);
    return NULL;
}

static void *cur_outer_body(void *in)
{
    (void)in;
    assert_ptr_equal(weft_coro_current(), g_cur_outer);
    assert_int_equal(weft_coro_resume(g_cur_inner, NULL, NULL), 0);
    assert_ptr_equal(weft_coro_current(), g_cur_outer); /* the outer again */
    assert_int_equal(weft_coro_yield(NULL, NULL), 0);
    assert_ptr_equal(weft_coro_current(), g_cur_outer);
    return NULL;
}

static void test_current(void **state)
{
    (void)state;
    assert_null(weft_coro_current());
    g_cur_outer = mk(cur_outer_body);
    g_cur_inner = mk(cur_inner_body);
    assert_int_equal(weft_coro_resume(g_cur_outer, NULL, NULL), 0);
    assert_null(weft_coro_current());
    assert_int_equal(weft_coro_resume(g_cur_outer, NULL, NULL), 0);
    assert_null(weft_coro_current());
    assert_int_equal(weft_coro_destroy(g_cur_outer), 0);
    assert_int_equal(weft_coro_destroy(g_cur_inner), 0);
}

static void test_names(void **state)
{
    (void)state;
    char name[] = "worker-7";
    weft_coro_opts o = { .stack_size = 0, .name = name };
    weft_coro *co = NULL;
    assert_int_equal(weft_coro_create(&co, return_in_body, &o), 0);
    name[0] = 'X'; /* the name was copied, not referenced */
    assert_string_equal(weft_coro_name(co), "worker-7");
    assert_int_equal(weft_coro_destroy(co), 0);

    co = mk(return_in_body);
    assert_string_equal(weft_coro_name(co), "coro");
    assert_int_equal(weft_coro_destroy(co), 0);

    /* Longer names keep their first 31 bytes. */
    o.name = "0123456789abcdef0123456789ABCDEFGHIJ";
    assert_int_equal(weft_coro_create(&co, return_in_body, &o), 0);
    assert_string_equal(weft_coro_name(co), "0123456789abcdef0123456789ABCDE");
    assert_int_equal(weft_coro_destroy(co), 0);

    assert_string_equal(weft_coro_name(NULL), "");
    assert_int_equal(weft_coro_status(NULL), WEFT_CORO_DEAD);
}

static void test_strerror(void **state)
{
    (void)state;
    const int codes[] = { EINVAL, ENOMEM, EPERM, EBUSY, ESRCH,
                          EDEADLK, ECANCELED, ESHUTDOWN, ETIMEDOUT, EPIPE };
    enum { N = sizeof codes / sizeof codes[0] };
    const char *s[N];
    for (int i = 0; i < N; i++) {
        s[i] = weft_strerror(-codes[i]);
        assert_non_null(s[i]);
        assert_string_not_equal(s[i], "unknown error");
        assert_true(strlen(s[i]) > 0);
        /* A positive errno names the same error. */
        assert_string_equal(weft_strerror(codes[i]), s[i]);
    }
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++)
            assert_string_not_equal(s[i], s[j]);
    assert_string_equal(weft_strerror(-123456), "unknown error");
    assert_string_equal(weft_strerror(0x7fffffff), "unknown error");
}

/* ------------------------------------------------------------------ */
/* Many live coroutines                                                */

static void *park_body(void *in)
{
    /* Parks mid-body with its own value, then returns a mix of both. */
    intptr_t mine = I(in);
    void *next = NULL;
    if (weft_coro_yield(P(mine * 2), &next) != 0)
        return P(-1);
    return P(mine * 3 + I(next));
}

/* Create n coroutines with opts, park each once, finish all, destroy. */
static void many(size_t n, const weft_coro_opts *opts)
{
    weft_coro **cos = calloc(n, sizeof *cos);
    assert_non_null(cos);
    for (size_t i = 0; i < n; i++) {
        int err = weft_coro_create(&cos[i], park_body, opts);
        if (err != 0)
            fail_msg("create #%zu of %zu: %s", i, n, weft_strerror(err));
    }
    for (size_t i = 0; i < n; i++) {
        void *out = NULL;
        assert_int_equal(weft_coro_resume(cos[i], P(i), &out), 0);
        assert_int_equal(I(out), (intptr_t)i * 2);
    }
    /* All n are parked at once, each on its own stack. */
    for (size_t i = 0; i < n; i++) {
        void *out = NULL;
        assert_int_equal(weft_coro_status(cos[i]), WEFT_CORO_SUSPENDED);
        assert_int_equal(weft_coro_resume(cos[i], P(7), &out), 0);
        assert_int_equal(I(out), (intptr_t)i * 3 + 7);
        assert_int_equal(weft_coro_status(cos[i]), WEFT_CORO_DEAD);
    }
    for (size_t i = 0; i < n; i++)
        assert_int_equal(weft_coro_destroy(cos[i]), 0);
    free(cos);
}

static void test_10k_live(void **state)
{
    (void)state;
    many(WT_LIVE(10000), NULL);
}

/* Lines of /proc/self/maps: the mappings (VMAs) the process has; -1 if
 * unreadable. */
static long mapping_count(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    long n = 0;
    int c;
    while ((c = getc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static long max_map_count(void)
{
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
    long v = -1;
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

/* How many mappings `live` more live default-stack coroutines would add,
 * going by what 2,000 of them add once the stack caches are empty: the
 * first CACHED come from the caches (src/ctx/stack.c: up to 4,096 free
 * stacks in the depot and 16 in each thread's list) and add none. */
static double mappings_for(size_t live)
{
    enum { CACHED = 4200, SAMPLE = 2000 };
    weft_coro **cos = calloc(CACHED + SAMPLE, sizeof *cos);
    assert_non_null(cos);
    for (size_t i = 0; i < CACHED; i++)
        assert_int_equal(weft_coro_create(&cos[i], park_body, NULL), 0);
    long before = mapping_count();
    for (size_t i = CACHED; i < CACHED + SAMPLE; i++)
        assert_int_equal(weft_coro_create(&cos[i], park_body, NULL), 0);
    long after = mapping_count();
    for (size_t i = 0; i < CACHED + SAMPLE; i++)
        assert_int_equal(weft_coro_destroy(cos[i]), 0);
    free(cos);
    if (before < 0 || after < before)
        return 0;
    return (double)(after - before) * (double)live / SAMPLE;
}

static void test_100k_live_default_stack(void **state)
{
    (void)state;
    const size_t live = WT_LIVE(100000);
    /* Guard: 100,000 default stacks reserve ~25 GiB of address space.  Skip
     * only where a resource limit makes that impossible by construction; a
     * failure anywhere else is the library's. */
    struct rlimit rl;
    const double need = 100000.0 * (WEFT_STACK_DEFAULT + 2 * 4096.0);
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (double)rl.rlim_cur < need * 1.5) {
        print_message("skipped: RLIMIT_AS %llu too small\n",
                      (unsigned long long)rl.rlim_cur);
        skip();
    }
    /* And vm.max_map_count: with MADV_GUARD_INSTALL a stack costs no
     * mapping of its own, but where the guards are mprotect pages (a
     * kernel before 6.13, or qemu-user, which accepts MADV_GUARD_INSTALL
     * and installs nothing: docs/testing.md) every stack is two, and
     * 100,000 of them cannot fit the default limit of 65,530. */
    long limit = max_map_count(), now = mapping_count();
    /* (Sampled only where it can matter: 10,000 stacks of two mappings
     * each fit any limit near the default; the sample itself makes 6,200
     * coroutines, more than a sanitizer build's WT_LIVE allows.) */
    double more = live > 10000 ? mappings_for(live) : 0;
    if (limit > 0 && now >= 0 && (double)now + more * 1.1 > (double)limit) {
        print_message("skipped: %zu live stacks need ~%.0f more mappings, "
                      "vm.max_map_count %ld (%ld in use)\n",
                      live, more, limit, now);
        skip();
    }
    many(live, NULL);
}

/* ------------------------------------------------------------------ */
/* Deep recursion on a 1 MiB stack                                     */

/* ~100+ bytes of frame per level that the compiler cannot drop. */
static __attribute__((noinline)) long recurse(int depth)
{
    volatile char buf[100];
    for (int i = 0; i < (int)sizeof buf; i++)
        buf[i] = (char)(depth + i);
    if (depth == 0)
        return buf[5];
    long r = recurse(depth - 1);
    return r + buf[depth % 100] + depth;
}

/* The same sum, computed without recursion. */
static long recurse_expected(int depth)
{
    long r = (char)(0 + 5);
    for (int d = 1; d <= depth; d++)
        r += (char)(d + d % 100) + d;
    return r;
}

static void *deep_body(void *in)
{
    long r = recurse((int)I(in));
    /* And again after a switch, on the same stack. */
    assert_int_equal(weft_coro_yield(P(r), NULL), 0);
    return P(recurse((int)I(in)));
}

static void test_deep_recursion(void **state)
{
    (void)state;
    weft_coro_opts o = { .stack_size = 1024 * 1024, .name = "deep" };
    weft_coro *co = NULL;
    assert_int_equal(weft_coro_create(&co, deep_body, &o), 0);
    void *out = NULL;
    assert_int_equal(weft_coro_resume(co, P(2000), &out), 0);
    assert_int_equal(I(out), recurse_expected(2000));
    assert_int_equal(weft_coro_resume(co, NULL, &out), 0);
    assert_int_equal(I(out), recurse_expected(2000));
    assert_int_equal(weft_coro_destroy(co), 0);
}

/* ------------------------------------------------------------------ */
/* Stack alignment                                                     */

/* Misalignment of a 16-aligned local and of the frame, as seen at run time.
 * The addresses pass through volatiles so the compiler cannot fold the
 * modulo using the alignment the ABI promises it. */
static __attribute__((noinline)) unsigned misalign(void)
{
    _Alignas(16) char buf[16];
    __asm__ volatile("" : : "r"(buf) : "memory"); /* buf must exist */
    volatile uintptr_t a = (uintptr_t)buf;
    volatile uintptr_t f = (uintptr_t)__builtin_frame_address(0);
    /* glibc's varargs prologue stores xmm registers with movaps on x86_64,
     * which faults on a misaligned stack. */
    char text[32];
    snprintf(text, sizeof text, "%.2f", 1.25);
    if (strcmp(text, "1.25") != 0)
        return 99;
    return (unsigned)(a % 16) | (unsigned)(f % 16);
}

static void *align_body(void *in)
{
    (void)in;
    unsigned bad = misalign(); /* a fresh stack */
    for (int i = 0; i < 3; i++) {
        if (weft_coro_yield(P(bad), NULL) != 0)
            return P(98);
        bad |= misalign(); /* after being switched back in */
    }
    return P(bad);
}

static void *align_via_transfer_body(void *in)
{
    /* Started by a transfer rather than a resume. */
    weft_coro *next = in;
    unsigned bad = misalign();
    assert_int_equal(weft_coro_transfer(next, NULL, NULL), 0);
    return P(bad | misalign());
}

static void test_stack_alignment(void **state)
{
    (void)state;
    assert_int_equal(misalign(), 0); /* sanity: the main stack is fine */
    /* Odd sizes too: rounding to pages must not disturb alignment. */
    const size_t sizes[] = { 0, 12345, 65536 + 8, 1 << 20 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        weft_coro_opts o = { .stack_size = sizes[i], .name = "align" };
        weft_coro *co = NULL;
        assert_int_equal(weft_coro_create(&co, align_body, &o), 0);
        void *out = NULL;
        for (int k = 0; k < 4; k++) {
            assert_int_equal(weft_coro_resume(co, NULL, &out), 0);
            assert_int_equal(I(out), 0);
        }
        assert_int_equal(weft_coro_status(co), WEFT_CORO_DEAD);
        assert_int_equal(weft_coro_destroy(co), 0);
    }
    /* t transfers to a (fresh); a yields to main; resuming t finishes t. */
    weft_coro *a = mk(align_body), *t = mk(align_via_transfer_body);
    void *out = P(1);
    assert_int_equal(weft_coro_resume(t, a, &out), 0);
    assert_int_equal(I(out), 0); /* a's first yield */
    assert_int_equal(weft_coro_resume(t, NULL, &out), 0);
    assert_int_equal(I(out), 0);
    assert_int_equal(weft_coro_destroy(t), 0);
    assert_int_equal(weft_coro_destroy(a), 0);
}

/* ------------------------------------------------------------------ */
/* FP control state is per context                                     */

static double third(void)
{
    volatile double one = 1.0, three = 3.0;
    return one / three; /* rounds differently per mode (via MXCSR/FPCR) */
}

static double g_third_up;

static void *fp_body(void *in)
{
    (void)in;
    assert_int_equal(fesetround(FE_UPWARD), 0);
    assert_int_equal(weft_coro_yield(NULL, NULL), 0);
    /* main switched to FE_DOWNWARD meanwhile: not ours. */
    int mode = fegetround();
    double q = third();
    assert_int_equal(mode, FE_UPWARD);
    assert_true(q == g_third_up);
    assert_int_equal(weft_coro_yield(NULL, NULL), 0);
    assert_int_equal(fegetround(), FE_UPWARD);
    assert_int_equal(fesetround(FE_TONEAREST), 0); /* restore at the end */
    return NULL;
}

static void test_fp_control_per_context(void **state)
{
    (void)state;
    assert_int_equal(fegetround(), FE_TONEAREST);
    double near = third();
    assert_int_equal(fesetround(FE_UPWARD), 0);
    g_third_up = third();
    assert_int_equal(fesetround(FE_DOWNWARD), 0);
    double down = third();
    assert_int_equal(fesetround(FE_TONEAREST), 0);
    /* The probe does see the mode; except under Valgrind, which does SSE
     * arithmetic in round-to-nearest whatever MXCSR says.  It does keep
     * MXCSR, so the modes below are still compared there. */
    bool under_valgrind = false;
#ifdef WEFT_VALGRIND
    under_valgrind = RUNNING_ON_VALGRIND;
#endif
    assert_true(g_third_up > down || under_valgrind);

    weft_coro *co = mk(fp_body);
    assert_int_equal(weft_coro_resume(co, NULL, NULL), 0);
    assert_int_equal(fegetround(), FE_TONEAREST); /* coroutine's did not leak */
    assert_true(third() == near);
    assert_int_equal(fesetround(FE_DOWNWARD), 0);
    assert_int_equal(weft_coro_resume(co, NULL, NULL), 0);
    int mode = fegetround();
    double q = third();
    assert_int_equal(fesetround(FE_TONEAREST), 0);
    assert_int_equal(mode, FE_DOWNWARD);
    assert_true(q == down);
    assert_int_equal(weft_coro_resume(co, NULL, NULL), 0);
    assert_int_equal(fegetround(), FE_TONEAREST);
    assert_int_equal(weft_coro_destroy(co), 0);
}

/*
 * Raised exception flags are status, not control (psABI: MXCSR bits 0-5 are
 * caller-saved; on aarch64 they live in FPSR, which is not saved).  Two
 * sides that differ only in their flags must each keep computing in their
 * own mode, and each side's flags still work between two of its switches.
 * The switch decides by the control bits alone; the lowest control bit
 * (MXCSR's DAZ, bit 6) and FPCR's FZ are checked to travel with their
 * context, so the mask that drops the flags drops nothing more.
 */
static unsigned fp_ctl_get(void)
{
#if defined(__x86_64__)
    unsigned csr;
    __asm__ volatile("stmxcsr %0" : "=m"(csr));
    return csr & 0x40; /* DAZ */
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    return (unsigned)(fpcr >> 24) & 1; /* FZ */
#endif
}

static void fp_ctl_set(bool on)
{
#if defined(__x86_64__)
    unsigned csr;
    __asm__ volatile("stmxcsr %0" : "=m"(csr));
    csr = on ? csr | 0x40 : csr & ~0x40u;
    __asm__ volatile("ldmxcsr %0" : : "m"(csr));
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    fpcr = on ? fpcr | (1ull << 24) : fpcr & ~(1ull << 24);
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
#endif
}

/* Valgrind does SSE arithmetic without raising MXCSR's flags, and does not
 * emulate DAZ: there only the computed values are checked. */
static bool fp_emulated(void)
{
#ifdef WEFT_VALGRIND
    return RUNNING_ON_VALGRIND;
#else
    return false;
#endif
}

/* One side's check between two switches: exact arithmetic raises nothing,
 * 1/3 raises inexact and rounds to nearest. */
static void fp_flags_work(double near)
{
    if (fp_emulated()) {
        assert_true(third() == near);
        return;
    }
    volatile double two = 2.0;
    assert_int_equal(feclearexcept(FE_ALL_EXCEPT), 0);
    volatile double four = two * two;
    assert_true(four == 4.0);
    assert_int_equal(fetestexcept(FE_ALL_EXCEPT), 0);
    assert_true(third() == near);
    assert_true(fetestexcept(FE_INEXACT) != 0);
    assert_int_equal(fegetround(), FE_TONEAREST);
}

static void *fp_flags_body(void *in)
{
    double near = *(double *)in;
    for (int i = 0; i < 100; i++) {
        /* Nothing raised here at the switch, while main has raised
         * inexact and divide-by-zero (or the other way round). */
        if (i % 2)
            fp_flags_work(near);
        assert_int_equal(feclearexcept(FE_ALL_EXCEPT), 0);
        assert_int_equal(weft_coro_yield(NULL, NULL), 0);
        assert_int_equal(fegetround(), FE_TONEAREST);
        assert_true(third() == near);
    }
    /* Now a control bit differs as well: it is ours alone. */
    if (fp_emulated())
        return NULL;
    fp_ctl_set(true);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(weft_coro_yield(NULL, NULL), 0);
        assert_true(fp_ctl_get() != 0);
    }
    fp_ctl_set(false);
    return NULL;
}

static void test_fp_flags_are_not_control(void **state)
{
    (void)state;
    double near = third();
    volatile double zero = 0.0;
    weft_coro *co = mk(fp_flags_body);
    assert_int_equal(weft_coro_resume(co, &near, NULL), 0);
    for (int i = 0; i < 100; i++) {
        volatile double inf = 1.0 / zero; /* divide-by-zero */
        (void)inf;
        assert_true(third() == near);     /* inexact */
        assert_true(fp_emulated() ||
                    fetestexcept(FE_DIVBYZERO | FE_INEXACT) ==
                        (FE_DIVBYZERO | FE_INEXACT));
        assert_int_equal(weft_coro_resume(co, NULL, NULL), 0);
        assert_int_equal(fegetround(), FE_TONEAREST);
        if (i % 2)
            fp_flags_work(near);
    }
    assert_int_equal(fp_ctl_get(), 0);
    for (int i = 0; i < 10 && !fp_emulated(); i++) {
        assert_int_equal(weft_coro_resume(co, NULL, NULL), 0);
        assert_int_equal(fp_ctl_get(), 0); /* the coroutine's did not leak */
    }
    /* The last resume ran the body to its end. */
    assert_int_equal(weft_coro_status(co), WEFT_CORO_DEAD);
    assert_int_equal(weft_coro_destroy(co), 0);
    assert_int_equal(feclearexcept(FE_ALL_EXCEPT), 0);
}

/* ------------------------------------------------------------------ */
/* Callee-saved registers survive switches                             */

/* Overwrite every callee-saved register the compiler lets us name, right
 * before a switch: if the switch failed to restore the other side's
 * registers, that side would see these values instead of its own.  (The
 * frame pointer is left out: it may not be named in a clobber list.) */
static inline void clobber_callee_saved(void)
{
#if defined(__x86_64__)
    __asm__ volatile("mov $0x5151515151515151, %%rbx\n\t"
                     "mov %%rbx, %%r12\n\tmov %%rbx, %%r13\n\t"
                     "mov %%rbx, %%r14\n\tmov %%rbx, %%r15"
                     ::: "rbx", "r12", "r13", "r14", "r15");
#elif defined(__aarch64__)
    __asm__ volatile("mov x19, #0x5151\n\t"
                     "mov x20, x19\n\tmov x21, x19\n\tmov x22, x19\n\t"
                     "mov x23, x19\n\tmov x24, x19\n\tmov x25, x19\n\t"
                     "mov x26, x19\n\tmov x27, x19\n\tmov x28, x19\n\t"
                     "fmov d8, x19\n\tfmov d9, x19\n\tfmov d10, x19\n\t"
                     "fmov d11, x19\n\tfmov d12, x19\n\tfmov d13, x19\n\t"
                     "fmov d14, x19\n\tfmov d15, x19"
                     ::: "x19", "x20", "x21", "x22", "x23", "x24", "x25",
                         "x26", "x27", "x28", "d8", "d9", "d10", "d11",
                         "d12", "d13", "d14", "d15");
#endif
}

enum { REG_ROUNDS = 1000 };
static volatile long g_lseed[12] = { 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41 };
static volatile double g_dseed[8] = { 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5 };

/* 12 longs and 8 doubles, loaded from volatiles (so they cannot be
 * recomputed) and kept live across `rounds` calls of step(); then summed.
 * With step == NULL the same arithmetic runs without any switch. */
static __attribute__((noinline)) unsigned long
live_values(int salt, void (*step)(void *), void *arg)
{
    unsigned long a0 = (unsigned long)g_lseed[0] + salt, a1 = g_lseed[1],
                  a2 = g_lseed[2], a3 = g_lseed[3], a4 = g_lseed[4],
                  a5 = g_lseed[5], a6 = g_lseed[6], a7 = g_lseed[7],
                  a8 = g_lseed[8], a9 = g_lseed[9], a10 = g_lseed[10],
                  a11 = g_lseed[11];
    double d0 = g_dseed[0] + salt, d1 = g_dseed[1], d2 = g_dseed[2],
           d3 = g_dseed[3], d4 = g_dseed[4], d5 = g_dseed[5],
           d6 = g_dseed[6], d7 = g_dseed[7];
    for (int i = 0; i < REG_ROUNDS; i++) {
        if (step)
            step(arg); /* a switch: values must sit in callee-saved regs */
        /* Every value is read and rewritten each round (exact double
         * additions, so both runs round identically). */
        a0 = a0 * 31 + a1; a1 = a1 * 31 + a2; a2 = a2 * 31 + a3;
        a3 = a3 * 31 + a4; a4 = a4 * 31 + a5; a5 = a5 * 31 + a6;
        a6 = a6 * 31 + a7; a7 = a7 * 31 + a8; a8 = a8 * 31 + a9;
        a9 = a9 * 31 + a10; a10 = a10 * 31 + a11; a11 = a11 * 31 + a0;
        d0 += 1.0; d1 += 2.0; d2 += 3.0; d3 += 4.0;
        d4 += d0; d5 += d1; d6 += d2; d7 += d3;
    }
    unsigned long h = a0 ^ (a1 << 1) ^ (a2 << 2) ^ (a3 << 3) ^ (a4 << 4) ^
                      (a5 << 5) ^ (a6 << 6) ^ (a7 << 7) ^ (a8 << 8) ^
                      (a9 << 9) ^ (a10 << 10) ^ (a11 << 11);
    h ^= (unsigned long)(d0 + 2 * d1 + 3 * d2 + 4 * d3 + 5 * d4 + 6 * d5 +
                         7 * d6 + 8 * d7);
    return h;
}

/* A register the holder's side keeps across the switch is only tested if
 * no frame between the holder and the switch saves and restores it.  So the
 * holder calls a plain step, and the *other* side clobbers in a step of its
 * own (whose prologue/epilogue protect that side's values) right before
 * switching back.  Run twice, swapping roles. */
static __attribute__((noinline)) void resume_plain(void *co)
{
    assert_int_equal(weft_coro_resume(co, NULL, NULL), 0);
}

static __attribute__((noinline)) void resume_clobber(void *co)
{
    clobber_callee_saved();
    assert_int_equal(weft_coro_resume(co, NULL, NULL), 0);
}

static __attribute__((noinline)) void yield_plain(void *unused)
{
    (void)unused;
    assert_int_equal(weft_coro_yield(NULL, NULL), 0);
}

static __attribute__((noinline)) void yield_clobber(void *unused)
{
    (void)unused;
    clobber_callee_saved();
    assert_int_equal(weft_coro_yield(NULL, NULL), 0);
}

static void *regs_body(void *clobber)
{
    /* Each of the body's REG_ROUNDS yields matches one main resume. */
    unsigned long h = live_values(7, clobber ? yield_clobber : yield_plain,
                                  NULL);
    return (void *)(uintptr_t)h;
}

static void test_callee_saved_registers(void **state)
{
    (void)state;
    const unsigned long want_main = live_values(1, NULL, NULL);
    const unsigned long want_body = live_values(7, NULL, NULL);
    assert_true(want_main != want_body);

    /* Main holds values; the body clobbers before each yield.  Round 0's
     * resume starts the body, the last lets its last yield return, so one
     * more resume collects its result. */
    weft_coro *co = mk(regs_body);
    void *out = NULL;
    assert_int_equal(weft_coro_resume(co, P(1), NULL), 0);
    unsigned long got_main = live_values(1, resume_plain, co);
    assert_int_equal(weft_coro_status(co), WEFT_CORO_DEAD);
    assert_int_equal(got_main, want_main);
    assert_int_equal(weft_coro_destroy(co), 0);

    /* The body holds values; main clobbers before each resume. */
    co = mk(regs_body);
    assert_int_equal(weft_coro_resume(co, P(0), NULL), 0);
    for (int i = 0; i < REG_ROUNDS - 1; i++)
        resume_clobber(co);
    clobber_callee_saved();
    assert_int_equal(weft_coro_resume(co, NULL, &out), 0);
    assert_int_equal(weft_coro_status(co), WEFT_CORO_DEAD);
    assert_int_equal((uintptr_t)out, want_body);
    assert_int_equal(weft_coro_destroy(co), 0);
}

/* ------------------------------------------------------------------ */
/* Three levels of nested resume                                       */

static weft_coro *g_lv[3];

static void *level_body(void *in)
{
    weft_coro *me = weft_coro_current();
    int lv = me == g_lv[0] ? 0 : me == g_lv[1] ? 1 : 2;
    assert_ptr_equal(me, g_lv[lv]);
    for (int k = 0; k < lv; k++)
        assert_int_equal(weft_coro_status(g_lv[k]), WEFT_CORO_NORMAL);
    intptr_t v = I(in);
    void *out = NULL;
    if (lv < 2) /* pass the value down, times ten */
        assert_int_equal(weft_coro_resume(g_lv[lv + 1], P(v * 10), &out), 0);
    else
        out = P(v); /* the innermost one hands it straight back */
    void *next = NULL;
    assert_int_equal(weft_coro_yield(P(I(out) + 1), &next), 0);
    /* Second round: same path, ending with returns instead of yields. */
    v = I(next);
    if (lv < 2)
        assert_int_equal(weft_coro_resume(g_lv[lv + 1], P(v * 10), &out), 0);
    else
        out = P(v);
    assert_ptr_equal(weft_coro_current(), me);
    return P(I(out) + 1);
}

static void test_nested_three_levels(void **state)
{
    (void)state;
    for (int k = 0; k < 3; k++)
        g_lv[k] = mk(level_body);
    void *out = NULL;
    /* 1 -> 10 -> 100; +1 at each level on the way back. */
    assert_int_equal(weft_coro_resume(g_lv[0], P(1), &out), 0);
    assert_int_equal(I(out), 103);
    for (int k = 0; k < 3; k++)
        assert_int_equal(weft_coro_status(g_lv[k]), WEFT_CORO_SUSPENDED);
    assert_int_equal(weft_coro_resume(g_lv[0], P(5), &out), 0);
    assert_int_equal(I(out), 503);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(weft_coro_status(g_lv[k]), WEFT_CORO_DEAD);
        assert_int_equal(weft_coro_destroy(g_lv[k]), 0);
    }
}

/* ------------------------------------------------------------------ */

#ifdef WEFT_TEST_OTHER_MXCSR
#include "ctx/ctx.h"
#endif

int main(void)
{
#ifdef WEFT_TEST_OTHER_MXCSR
    /* The x86_64 switch restores MXCSR one of two ways, chosen from the
     * CPU's vendor (switch_x86_64_sysv.S): this build runs every test
     * of the switch with the way this machine does not choose, before
     * any switch. */
    weft__ctx_mxcsr_choose(!weft__ctx_mxcsr_load);
    (void)test_10k_live; /* not run here: see below */
    (void)test_100k_live_default_stack;
#endif
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_both_ways),
        cmocka_unit_test(test_null_out_and_in),
        cmocka_unit_test(test_statuses),
        cmocka_unit_test(test_resume_dead_esrch_and_null_einval),
        cmocka_unit_test(test_self_errors_ebusy),
        cmocka_unit_test(test_normal_resumer_ebusy),
        cmocka_unit_test(test_plain_thread_eperm),
        cmocka_unit_test(test_transfer_to_dead_esrch),
        cmocka_unit_test(test_create_errors),
        cmocka_unit_test(test_transfer_basic),
        cmocka_unit_test(test_transfer_chain),
        cmocka_unit_test(test_destroy_never_started_and_dead),
        cmocka_unit_test(test_destroy_suspended_cancels),
        cmocka_unit_test(test_destroy_cancels_pending_transfer),
        cmocka_unit_test(test_current),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_strerror),
#ifndef WEFT_TEST_OTHER_MXCSR
        /* Stacks and mappings, not the switch: once is enough (the two
         * slowest tests under ASan). */
        cmocka_unit_test(test_10k_live),
        cmocka_unit_test(test_100k_live_default_stack),
#endif
        cmocka_unit_test(test_deep_recursion),
        cmocka_unit_test(test_stack_alignment),
        cmocka_unit_test(test_fp_control_per_context),
        cmocka_unit_test(test_fp_flags_are_not_control),
        cmocka_unit_test(test_callee_saved_registers),
        cmocka_unit_test(test_nested_three_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
