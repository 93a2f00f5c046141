/*
 * test_chan.c — weft_chan: buffered and rendezvous semantics, try and
 * timed variants, close (drain, then -EPIPE; blocked calls woken),
 * destroy while waited on, cancellation, plain threads on either side.
 * Ping-pong and MPMC under load are in stress_sync.c.
 */
#include "st.h"

static weft_chan *mk(size_t cap)
{
    weft_chan *ch = NULL;
    CHECK_EQ(weft_chan_create(&ch, cap), 0);
    CHECK(ch != NULL);
    return ch;
}

/* ------------------------------------------------------------------ */
/* Semantics, in each context                                           */

static void basic_semantics(void)
{
    weft_chan *ch = mk(3);
    void *v = P(-1);
    CHECK_EQ(weft_chan_try_recv(ch, &v), -EAGAIN);
    CHECK_EQ(I(v), -1); /* untouched by a failed receive */
    CHECK_EQ(weft_chan_recv_for(ch, &v, 0), -ETIMEDOUT);
    uint64_t t0 = wt_now_ns();
    CHECK_EQ(weft_chan_recv_for(ch, &v, MS(15)), -ETIMEDOUT);
    CHECK(wt_now_ns() - t0 >= MS(15));
    CHECK_EQ(I(v), -1);
    CHECK_EQ(weft_chan_send(ch, P(1)), 0);
    CHECK_EQ(weft_chan_try_send(ch, P(2)), 0);
    CHECK_EQ(weft_chan_send_for(ch, P(3), MS(10)), 0);
    CHECK_EQ(weft_chan_try_send(ch, P(4)), -EAGAIN);
    CHECK_EQ(weft_chan_send_for(ch, P(4), 0), -ETIMEDOUT);
    t0 = wt_now_ns();
    CHECK_EQ(weft_chan_send_for(ch, P(4), MS(15)), -ETIMEDOUT);
    CHECK(wt_now_ns() - t0 >= MS(15));
    /* Ring wrap-around: out one, in one, several times. */
    for (int i = 0; i < 7; i++) {
        CHECK_EQ(weft_chan_recv(ch, &v), 0);
        CHECK_EQ(I(v), i + 1);
        CHECK_EQ(weft_chan_send(ch, P(i + 4)), 0);
    }
    for (int i = 7; i < 10; i++) {
        CHECK_EQ(weft_chan_try_recv(ch, &v), 0);
        CHECK_EQ(I(v), i + 1);
    }
    CHECK_EQ(weft_chan_try_recv(ch, &v), -EAGAIN);
    CHECK_EQ(weft_chan_destroy(ch), 0);

    /* Rendezvous with nobody on the other side. */
    ch = mk(0);
    CHECK_EQ(weft_chan_try_send(ch, P(1)), -EAGAIN);
    CHECK_EQ(weft_chan_send_for(ch, P(1), MS(5)), -ETIMEDOUT);
    CHECK_EQ(weft_chan_try_recv(ch, &v), -EAGAIN); /* the send left nothing */
    CHECK_EQ(weft_chan_recv_for(ch, &v, MS(5)), -ETIMEDOUT);
    CHECK_EQ(weft_chan_destroy(ch), 0);

    /* Bad input. */
    weft_chan *out = P(-2);
    CHECK_EQ(weft_chan_create(NULL, 1), -EINVAL);
    CHECK_EQ(weft_chan_create(&out, SIZE_MAX), -ENOMEM);
    CHECK_EQ(weft_chan_create(&out, SIZE_MAX / 8), -ENOMEM);
    CHECK_EQ(I(out), -2);
    ch = mk(1);
    CHECK_EQ(weft_chan_send(NULL, P(1)), -EINVAL);
    CHECK_EQ(weft_chan_try_send(NULL, P(1)), -EINVAL);
    CHECK_EQ(weft_chan_send_for(NULL, P(1), 1), -EINVAL);
    CHECK_EQ(weft_chan_recv(NULL, &v), -EINVAL);
    CHECK_EQ(weft_chan_try_recv(NULL, &v), -EINVAL);
    CHECK_EQ(weft_chan_recv_for(NULL, &v, 1), -EINVAL);
    CHECK_EQ(weft_chan_recv(ch, NULL), -EINVAL);
    CHECK_EQ(weft_chan_try_recv(ch, NULL), -EINVAL);
    CHECK_EQ(weft_chan_recv_for(ch, NULL, 1), -EINVAL);
    CHECK_EQ(weft_chan_destroy(NULL), -EINVAL);
    weft_chan_close(NULL);
    CHECK_EQ(weft_chan_try_send(ch, P(5)), 0); /* ch unharmed */
    CHECK_EQ(weft_chan_try_recv(ch, &v), 0);
    CHECK_EQ(I(v), 5);
    CHECK_EQ(weft_chan_destroy(ch), 0);
}

static void test_basic(void **state)
{
    st_everywhere(state, basic_semantics);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Rendezvous: a try meets a waiter on the other side                    */

struct call {
    weft_chan *ch;
    void *v;
    int rc;
};

static void *send_body(void *arg)
{
    struct call *c = arg;
    return P(weft_chan_send(c->ch, c->v));
}

static void *recv_body(void *arg)
{
    struct call *c = arg;
    c->rc = weft_chan_recv(c->ch, &c->v);
    return P(c->rc);
}

static void test_rendezvous(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_chan *ch = mk(0);
    void *v = NULL;

    struct call r = {.ch = ch, .v = P(-1)};
    weft_task *t = st_spawn(p, recv_body, &r);
    st_await_parked(t);
    assert_int_equal(weft_chan_try_send(ch, P(42)), 0);
    assert_int_equal(st_join(t), 0);
    assert_int_equal(I(r.v), 42);

    struct call s = {.ch = ch, .v = P(43)};
    t = st_spawn(p, send_body, &s);
    st_await_parked(t); /* the send waits for a receiver */
    assert_int_equal(weft_chan_try_recv(ch, &v), 0);
    assert_int_equal(I(v), 43);
    assert_int_equal(st_join(t), 0);
    assert_int_equal(weft_chan_try_recv(ch, &v), -EAGAIN);

    /* Two senders, served in order. */
    struct call s1 = {.ch = ch, .v = P(1)}, s2 = {.ch = ch, .v = P(2)};
    weft_task *t1 = st_spawn(p, send_body, &s1);
    st_await_parked(t1);
    weft_task *t2 = st_spawn(p, send_body, &s2);
    st_await_parked(t2);
    assert_int_equal(weft_chan_recv(ch, &v), 0);
    assert_int_equal(I(v), 1);
    assert_int_equal(weft_chan_recv(ch, &v), 0);
    assert_int_equal(I(v), 2);
    assert_int_equal(st_join(t1), 0);
    assert_int_equal(st_join(t2), 0);
    assert_int_equal(weft_chan_destroy(ch), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* A full buffer with senders waiting: receives come out in send order,
 * and each receive lets one waiting sender in. */
static void test_full_buffer_order(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_chan *ch = mk(2);
    assert_int_equal(weft_chan_send(ch, P(1)), 0);
    assert_int_equal(weft_chan_send(ch, P(2)), 0);
    enum { N = 4 };
    struct call s[N];
    weft_task *ts[N];
    for (int i = 0; i < N; i++) {
        s[i] = (struct call){.ch = ch, .v = P(3 + i)};
        ts[i] = st_spawn(p, send_body, &s[i]);
        st_await_parked(ts[i]);
    }
    void *v;
    for (int i = 0; i < N + 2; i++) {
        assert_int_equal(weft_chan_recv(ch, &v), 0);
        assert_int_equal(I(v), i + 1);
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(st_join(ts[i]), 0);
    assert_int_equal(weft_chan_try_recv(ch, &v), -EAGAIN);
    assert_int_equal(weft_chan_destroy(ch), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Close                                                                 */

static void test_close_drains(void **state)
{
    (void)state;
    weft_chan *ch = mk(4);
    void *v = P(-1);
    for (int i = 1; i <= 3; i++)
        assert_int_equal(weft_chan_send(ch, P(i)), 0);
    weft_chan_close(ch);
    weft_chan_close(ch); /* twice: nothing more */
    assert_int_equal(weft_chan_send(ch, P(9)), -EPIPE);
    assert_int_equal(weft_chan_try_send(ch, P(9)), -EPIPE);
    assert_int_equal(weft_chan_send_for(ch, P(9), MS(5)), -EPIPE);
    assert_int_equal(weft_chan_recv(ch, &v), 0);
    assert_int_equal(I(v), 1);
    assert_int_equal(weft_chan_try_recv(ch, &v), 0);
    assert_int_equal(I(v), 2);
    assert_int_equal(weft_chan_recv_for(ch, &v, MS(5)), 0);
    assert_int_equal(I(v), 3);
    v = P(-1);
    assert_int_equal(weft_chan_recv(ch, &v), -EPIPE);
    assert_int_equal(weft_chan_try_recv(ch, &v), -EPIPE);
    assert_int_equal(weft_chan_recv_for(ch, &v, MS(5)), -EPIPE);
    assert_int_equal(I(v), -1);
    assert_int_equal(weft_chan_destroy(ch), 0);
    WT_CLEAN();
}

/* Blocked senders and receivers all return -EPIPE; the buffer still
 * drains; a rendezvous sender's value is not delivered. */
static void test_close_wakes(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    enum { N = 3 };
    weft_task *ts[N];
    struct call c[N];
    void *v;

    weft_chan *ch = mk(1); /* full, senders blocked */
    assert_int_equal(weft_chan_send(ch, P(1)), 0);
    for (int i = 0; i < N; i++) {
        c[i] = (struct call){.ch = ch, .v = P(10 + i)};
        ts[i] = st_spawn(p, send_body, &c[i]);
        st_await_parked(ts[i]);
    }
    assert_int_equal(weft_chan_destroy(ch), -EBUSY);
    weft_chan_close(ch);
    for (int i = 0; i < N; i++)
        assert_int_equal(st_join(ts[i]), -EPIPE);
    assert_int_equal(weft_chan_recv(ch, &v), 0);
    assert_int_equal(I(v), 1);
    assert_int_equal(weft_chan_recv(ch, &v), -EPIPE);
    assert_int_equal(weft_chan_destroy(ch), 0);

    ch = mk(0); /* rendezvous, receivers blocked */
    for (int i = 0; i < N; i++) {
        c[i] = (struct call){.ch = ch, .v = P(-1)};
        ts[i] = st_spawn(p, recv_body, &c[i]);
        st_await_parked(ts[i]);
    }
    assert_int_equal(weft_chan_destroy(ch), -EBUSY);
    weft_chan_close(ch);
    for (int i = 0; i < N; i++) {
        assert_int_equal(st_join(ts[i]), -EPIPE);
        assert_int_equal(I(c[i].v), -1);
    }
    assert_int_equal(weft_chan_destroy(ch), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Cancellation                                                          */

static void test_cancel(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    weft_chan *ch = mk(0);
    void *v;

    struct call r = {.ch = ch, .v = P(-1)};
    weft_task *t = st_spawn(p, recv_body, &r);
    st_await_parked(t);
    assert_int_equal(weft_task_cancel(t), 0);
    assert_int_equal(st_join(t), -ECANCELED);
    assert_int_equal(I(r.v), -1);
    assert_int_equal(weft_chan_try_send(ch, P(1)), -EAGAIN); /* gone */

    struct call s = {.ch = ch, .v = P(7)};
    t = st_spawn(p, send_body, &s);
    st_await_parked(t);
    assert_int_equal(weft_task_cancel(t), 0);
    assert_int_equal(st_join(t), -ECANCELED);
    assert_int_equal(weft_chan_try_recv(ch, &v), -EAGAIN); /* not sent */

    /* destroy is refused only while someone waits */
    t = st_spawn(p, recv_body, &r);
    st_await_parked(t);
    assert_int_equal(weft_chan_destroy(ch), -EBUSY);
    assert_int_equal(weft_task_cancel(t), 0);
    assert_int_equal(st_join(t), -ECANCELED);
    assert_int_equal(weft_chan_destroy(ch), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Plain threads on one side, tasks on the other                        */

struct stream {
    weft_chan *ch;
    unsigned n;
    long sum;
};

static void *thread_sender(void *arg)
{
    struct stream *s = arg;
    for (unsigned i = 1; i <= s->n; i++)
        CHECK_EQ(weft_chan_send(s->ch, P(i)), 0);
    weft_chan_close(s->ch);
    return NULL;
}

static void *task_receiver(void *arg)
{
    struct stream *s = arg;
    void *v;
    unsigned next = 1;
    int rc;
    while ((rc = weft_chan_recv(s->ch, &v)) == 0) {
        CHECK_EQ(I(v), next);
        next++;
        s->sum += I(v);
    }
    CHECK_EQ(rc, -EPIPE);
    CHECK_EQ(next, s->n + 1);
    return NULL;
}

static void *task_sender(void *arg)
{
    struct stream *s = arg;
    for (unsigned i = 1; i <= s->n; i++)
        CHECK_EQ(weft_chan_send(s->ch, P(i)), 0);
    weft_chan_close(s->ch);
    return NULL;
}

static void test_threads(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    const size_t caps[] = {0, 1, 16};
    for (size_t k = 0; k < sizeof caps / sizeof caps[0]; k++) {
        /* thread -> task */
        struct stream s = {.ch = mk(caps[k]), .n = st_scaled(3000), .sum = 0};
        weft_task *t = st_spawn(p, task_receiver, &s);
        wt_join(wt_thread(thread_sender, &s));
        st_join(t);
        assert_int_equal(s.sum, (long)s.n * (s.n + 1) / 2);
        assert_int_equal(weft_chan_destroy(s.ch), 0);

        /* task -> main thread */
        struct stream u = {.ch = mk(caps[k]), .n = st_scaled(3000), .sum = 0};
        t = st_spawn(p, task_sender, &u);
        task_receiver(&u); /* on the main thread */
        st_join(t);
        assert_int_equal(u.sum, (long)u.n * (u.n + 1) / 2);
        assert_int_equal(weft_chan_destroy(u.ch), 0);
    }
    wt_destroy(p);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST(test_basic),
        WT_TEST(test_rendezvous),
        WT_TEST(test_full_buffer_order),
        WT_TEST1(test_close_drains),
        WT_TEST(test_close_wakes),
        WT_TEST(test_cancel),
        WT_TEST(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
