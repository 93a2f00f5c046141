/*
 * test_headers.c — every public header compiles on its own and in any order.
 *
 * <weft/coro.h> comes first with nothing before it, so a missing include in
 * it breaks the build; then <weft/error.h> and the umbrella <weft/weft.h>
 * (whose include guards must make the repeats harmless).
 */
#include <weft/coro.h>
#include <weft/error.h>
#include <weft/weft.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

/* One symbol from each header, so each is really used. */
static void test_symbols_from_each_header(void **state)
{
    (void)state;
    /* coro.h */
    weft_coro_opts opts = { .stack_size = WEFT_STACK_DEFAULT, .name = NULL };
    assert_int_equal(opts.stack_size, 256u * 1024u);
    assert_int_equal(weft_coro_status(NULL), WEFT_CORO_DEAD);
    assert_null(weft_coro_current());
    /* error.h */
    assert_non_null(weft_strerror(-EINVAL));
    /* sync.h and chan.h (through weft.h) */
    weft_mutex m;
    weft_mutex_init(&m);
    assert_int_equal(weft_mutex_trylock(&m), 0);
    assert_int_equal(weft_mutex_unlock(&m), 0);
    weft_chan *ch = NULL;
    assert_int_equal(weft_chan_create(&ch, 1), 0);
    assert_int_equal(weft_chan_destroy(ch), 0);
    /* weft.h brings both; the function pointer type is usable. */
    weft_fn fn = NULL;
    assert_null(fn);
    /* io.h, through weft.h */
    assert_int_equal(WEFT_IN | WEFT_OUT, 5);
    assert_int_equal(weft_wait_fd_for(-1, WEFT_IN, 0), -EBADF);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symbols_from_each_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
