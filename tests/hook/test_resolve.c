/*
 * test_resolve.c — getaddrinfo and getnameinfo from many tasks at once
 * (hooked build only).  The hook sends each call whole to weft's blocking
 * threads (weft/blocking.h), so the tasks park and the workers go on.
 *
 * 100 tasks on a 2-worker pool (no monitor) resolve "localhost" 3 times
 * each; every call succeeds, and every address it gives is 127.0.0.1 or ::1.  A
 * ticker task keeps running while they do (it counts its rounds only
 * while calls are in flight).  That the calls went to the blocking
 * threads is read from the pool's counters: the process had no blocking
 * thread before, and has some after (they are told never to exit).
 */
#include "hk.h"

#include <netdb.h>

#define NTASKS 100

struct resolve_run {
    atomic_int in_flight;
    atomic_int ok;
    atomic_ulong ticks_during;
    atomic_bool stop;
};

static void *ticker(void *arg)
{
    struct resolve_run *r = arg;
    while (!atomic_load(&r->stop)) {
        if (atomic_load(&r->in_flight) > 0)
            atomic_fetch_add(&r->ticks_during, 1);
        CHECK_EQ(weft_yield(), 0);
    }
    return NULL;
}

static bool is_loopback(const struct addrinfo *ai)
{
    if (ai->ai_family == AF_INET) {
        const struct sockaddr_in *in = (const void *)ai->ai_addr;
        return ai->ai_addrlen == sizeof *in &&
               ntohl(in->sin_addr.s_addr) == INADDR_LOOPBACK;
    }
    if (ai->ai_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const void *)ai->ai_addr;
        return ai->ai_addrlen == sizeof *in6 &&
               IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
    }
    return false;
}

/* CALLS lookups, with a yield between them: the tasks that yield queue
 * behind the ticker, so it gets turns while the others' lookups run. */
#define CALLS 3

static void *resolver(void *arg)
{
    struct resolve_run *r = arg;
    bool all_good = true;
    for (int k = 0; k < CALLS; k++) {
        struct addrinfo hints = {.ai_family = AF_UNSPEC,
                                 .ai_socktype = SOCK_STREAM};
        struct addrinfo *res = NULL;
        atomic_fetch_add(&r->in_flight, 1);
        int rc = getaddrinfo("localhost", "80", &hints, &res);
        atomic_fetch_sub(&r->in_flight, 1);
        CHECK_EQ(rc, 0);
        if (rc != 0) {
            fprintf(stderr, "getaddrinfo: %s\n", gai_strerror(rc));
            return NULL;
        }
        int n = 0, good = 0;
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
            n++;
            good += is_loopback(ai);
            CHECK(is_loopback(ai));
            if (ai->ai_family == AF_INET)
                CHECK_EQ(
                    ntohs(((struct sockaddr_in *)ai->ai_addr)->sin_port), 80);
        }
        freeaddrinfo(res);
        CHECK(n > 0);
        all_good = all_good && n > 0 && good == n;
        CHECK_EQ(weft_yield(), 0);
    }
    if (all_good)
        atomic_fetch_add(&r->ok, 1);
    return NULL;
}

static void test_getaddrinfo_many(void **state)
{
    (void)state;
    assert_true(hk_hook_loaded());
    /* Blocking threads stay once started, so the count after shows
     * whether any was used. */
    weft_blocking_opts bo = {.idle_ns = UINT64_MAX};
    assert_int_equal(weft_blocking_configure(&bo), 0);

    static struct resolve_run r;
    memset(&r, 0, sizeof r);
    weft_pool *p = hk_pool(2, WEFT_POOL_NO_MONITOR);
    struct weft_pool_stats before = hk_stats(p);
    assert_int_equal(before.blocking_busy + before.blocking_idle, 0);

    weft_task *tick, *t[NTASKS];
    assert_int_equal(weft_spawn(&tick, p, ticker, &r, NULL), 0);
    for (int i = 0; i < NTASKS; i++)
        assert_int_equal(weft_spawn(&t[i], p, resolver, &r, NULL), 0);
    for (int i = 0; i < NTASKS; i++)
        assert_int_equal(weft_sync_wait(t[i], NULL), 0);
    atomic_store(&r.stop, true);
    assert_int_equal(weft_sync_wait(tick, NULL), 0);
    struct weft_pool_stats after = hk_stats(p);
    wt_destroy(p);

    printf("ok %d, ticks while in flight %lu, blocking threads %" PRIu64
           "\n",
           atomic_load(&r.ok), atomic_load(&r.ticks_during),
           after.blocking_busy + after.blocking_idle);
    assert_int_equal(atomic_load(&r.ok), NTASKS);
    assert_true(atomic_load(&r.ticks_during) > 0);
    assert_true(after.blocking_busy + after.blocking_idle > 0);
    WT_CLEAN();
}

/* getnameinfo of 127.0.0.1 from tasks: the numeric form, and a name. */
static void *name_of_loopback(void *arg)
{
    (void)arg;
    struct sockaddr_in in = {.sin_family = AF_INET,
                             .sin_port = htons(80),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    int rc = getnameinfo((struct sockaddr *)&in, sizeof in, host, sizeof host,
                         serv, sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV);
    CHECK_EQ(rc, 0);
    CHECK(rc == 0 && strcmp(host, "127.0.0.1") == 0);
    CHECK(rc == 0 && strcmp(serv, "80") == 0);
    rc = getnameinfo((struct sockaddr *)&in, sizeof in, host, sizeof host,
                     NULL, 0, NI_NAMEREQD);
    CHECK_EQ(rc, 0);
    CHECK(rc == 0 && host[0] != '\0');
    return NULL;
}

static void test_getnameinfo(void **state)
{
    (void)state;
    weft_pool *p = hk_pool(2, WEFT_POOL_NO_MONITOR);
    weft_task *t[20];
    for (int i = 0; i < 20; i++)
        assert_int_equal(weft_spawn(&t[i], p, name_of_loopback, NULL, NULL),
                         0);
    for (int i = 0; i < 20; i++)
        assert_int_equal(weft_sync_wait(t[i], NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* A lookup cancelled at every point of its life: before a blocking thread
 * takes it, as it is taken, while it runs, after it ended.  Each request
 * is freed once, by the task or by the lookup's thread (hook/resolve.c;
 * ASan and the allocator's own checks see a second free).  The task says
 * EAI_SYSTEM with ECANCELED, or the lookup's answer if it came first. */
#define CANCEL_ROUNDS 600
#define CANCEL_TASKS 4

static void *lookup_once(void *arg)
{
    (void)arg;
    struct addrinfo *res = NULL;
    int rc = getaddrinfo("localhost", "80", NULL, &res);
    if (rc == 0)
        freeaddrinfo(res);
    else
        CHECK(rc == EAI_SYSTEM && errno == ECANCELED);
    return NULL;
}

static void *spin_a_while(void *arg)
{
    for (volatile uintptr_t i = 0; i < (uintptr_t)arg; i++)
        ;
    return NULL;
}

static void test_getaddrinfo_cancel_races(void **state)
{
    (void)state;
    assert_true(hk_hook_loaded());
    weft_pool *p = hk_pool(2, WEFT_POOL_NO_MONITOR);
    for (int round = 0; round < CANCEL_ROUNDS; round++) {
        weft_task *t[CANCEL_TASKS];
        for (int k = 0; k < CANCEL_TASKS; k++)
            assert_int_equal(weft_spawn(&t[k], p, lookup_once, NULL, NULL),
                             0);
        /* A delay that sweeps the cancel across the lookup's life. */
        spin_a_while((void *)(uintptr_t)((round % 50) * 400));
        for (int k = 0; k < CANCEL_TASKS; k++)
            assert_int_equal(weft_task_cancel(t[k]), 0);
        for (int k = 0; k < CANCEL_TASKS; k++)
            assert_int_equal(weft_sync_wait(t[k], NULL), 0);
    }
    wt_destroy(p);
    WT_CLEAN();
}

/* errno after a lookup that succeeds is what it was before, though other
 * tasks ran on the thread meanwhile and set theirs (docs/foreign.md). */
struct errno_run {
    atomic_bool stop;
};

static void *errno_noise(void *arg)
{
    struct errno_run *r = arg;
    while (!atomic_load(&r->stop)) {
        errno = EIO;
        CHECK_EQ(weft_yield(), 0);
    }
    return NULL;
}

static void *lookup_keeps_errno(void *arg)
{
    struct errno_run *r = arg;
    for (int k = 0; k < 5; k++) {
        struct addrinfo *res = NULL;
        errno = 777;
        int rc = getaddrinfo("localhost", "80", NULL, &res);
        int e = errno;
        CHECK_EQ(rc, 0);
        CHECK_EQ(e, 777);
        if (rc == 0)
            freeaddrinfo(res);
    }
    atomic_store(&r->stop, true);
    return NULL;
}

static void test_getaddrinfo_keeps_errno(void **state)
{
    (void)state;
    assert_true(hk_hook_loaded());
    static struct errno_run r;
    memset(&r, 0, sizeof r);
    weft_pool *p = hk_pool(1, WEFT_POOL_NO_MONITOR);
    weft_task *noise;
    assert_int_equal(weft_spawn(&noise, p, errno_noise, &r, NULL), 0);
    wt_run(p, lookup_keeps_errno, &r);
    assert_int_equal(weft_sync_wait(noise, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    /* The machine must resolve these at all (/etc/hosts): asked on this
     * plain thread, where the hook is not involved.  Else skip (77). */
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo("localhost", "80", &hints, &res) != 0) {
        printf("localhost does not resolve here: skipped\n");
        return 77;
    }
    freeaddrinfo(res);
    struct sockaddr_in in = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    char host[NI_MAXHOST];
    if (getnameinfo((struct sockaddr *)&in, sizeof in, host, sizeof host,
                    NULL, 0, NI_NAMEREQD) != 0) {
        printf("127.0.0.1 has no name here: skipped\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        WT_TEST1(test_getaddrinfo_many),
        WT_TEST1(test_getnameinfo),
        WT_TEST1(test_getaddrinfo_cancel_races),
        WT_TEST1(test_getaddrinfo_keeps_errno),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
