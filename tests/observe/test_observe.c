/*
 * test_observe.c — ids and names, the counters, the dump, the dump on a
 * signal and the trace (weft/inspect.h), suite 'observe'.
 *
 * Waits for a state (tasks parked, workers asleep) are bounded polls of
 * weft_pool_stats, which is what is under test: each such wait fails the
 * case after 10 s instead of hanging.  Built with frame pointers, so that
 * the dump's stacks reach the task bodies here.
 */
#include "../pool/wt.h"

#include <weft/weft.h>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

/* ------------------------------------------------------------------ */
/* Helpers                                                              */

static struct weft_pool_stats stats_of(weft_pool *p)
{
    struct weft_pool_stats s = {.size = sizeof s};
    assert_int_equal(weft_pool_stats(p, &s), 0);
    assert_int_equal(s.size, sizeof s);
    return s;
}

/* Poll the pool's counters until pred holds: true, or false after 10 s. */
static bool wait_stats(weft_pool *p,
                       bool (*pred)(const struct weft_pool_stats *, void *),
                       void *arg)
{
    for (int i = 0; i < 10000; i++) {
        struct weft_pool_stats s = {.size = sizeof s};
        if (weft_pool_stats(p, &s) == 0 && pred(&s, arg))
            return true;
        wt_sleep_ms(1);
    }
    return false;
}

static bool parked_n(const struct weft_pool_stats *s, void *arg)
{
    return s->parked == (uint64_t)(uintptr_t)arg;
}

static bool no_tasks(const struct weft_pool_stats *s, void *arg)
{
    (void)arg;
    return s->tasks == 0;
}

/* The pool's dump, as a string (free it). */
static char *dump_of(weft_pool *p)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(weft_pool_dump(p, f), 0);
    assert_int_equal(fclose(f), 0);
    return text;
}

/* The block of the dump for task id (from its line to the next task's),
 * copied into buf; false if there is none. */
static bool block_of(const char *dump, uint64_t id, char *buf, size_t n)
{
    char head[48];
    snprintf(head, sizeof head, "task %llu \"", (unsigned long long)id);
    const char *at = dump;
    while ((at = strstr(at, head)) && at != dump && at[-1] != '\n')
        at++;
    if (!at)
        return false;
    const char *end = strstr(at + 1, "\ntask ");
    const char *tail = strstr(at + 1, "\n\n");
    if (!end || (tail && tail < end))
        end = tail ? tail : at + strlen(at);
    size_t len = (size_t)(end - at) < n - 1 ? (size_t)(end - at) : n - 1;
    memcpy(buf, at, len);
    buf[len] = '\0';
    return true;
}

/* block_of of a fresh dump of p, dumped again (up to 5 dumps in all) while
 * the block says its thread did not answer the probe's signal in time: on
 * a loaded machine (or under qemu, which delivers signals between blocks
 * of translated code) a thread may take longer than the probe waits.  A
 * thread that never answers still fails the check of its frame. */
static bool answered_block_of(weft_pool *p, uint64_t id, char *buf, size_t n)
{
    bool found = false;
    for (int tries = 0; tries < 5; tries++) {
        char *d = dump_of(p);
        found = block_of(d, id, buf, n);
        free(d);
        if (!found || !strstr(buf, "its thread did not answer"))
            break;
    }
    return found;
}

static void expect_in(const char *block, const char *text)
{
    if (!strstr(block, text))
        fprintf(stderr, "not found: \"%s\" in:\n%s\n", text, block);
    CHECK(strstr(block, text) != NULL);
}

/* ------------------------------------------------------------------ */
/* Ids and names                                                        */

#define ID_TASKS 200

struct ids {
    _Atomic uint64_t seen[2 * ID_TASKS];
    atomic_int n;
    weft_pool *pool;
};

static void *id_leaf(void *arg)
{
    struct ids *ids = arg;
    ids->seen[atomic_fetch_add(&ids->n, 1)] = weft_task_id(weft_task_current());
    return NULL;
}

static void *id_parent(void *arg)
{
    struct ids *ids = arg;
    uint64_t mine = weft_task_id(weft_task_current());
    ids->seen[atomic_fetch_add(&ids->n, 1)] = mine;
    weft_task *c;
    CHECK_EQ(weft_spawn(&c, ids->pool, id_leaf, ids, NULL), 0);
    uint64_t child = weft_task_id(c);
    CHECK(child != 0 && child != mine);
    CHECK_EQ(weft_await(c, NULL), 0);
    CHECK_EQ(weft_task_id(weft_task_current()), mine);
    return NULL;
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * A handle's id stays the task's through its end: before it, the id is
 * in the run record; after, in the handle alone (the run record goes back
 * to its cache at the end while the handle is kept, and is made another
 * task's: sched/task.h).  A thread reads the ids while the tasks end, and
 * again once the next round's tasks have taken their records.
 */
#define KEPT_TASKS 300
#define KEPT_ROUNDS 20

struct kept {
    _Atomic uint64_t own[KEPT_TASKS];
    weft_task *t[KEPT_TASKS];
    atomic_int go;
};

static void *kept_leaf(void *arg)
{
    _Atomic uint64_t *own = arg;
    atomic_store(own, weft_task_id(weft_task_current()));
    /* Yield a few times: the reader sees some of us running. */
    for (int i = 0; i < 3; i++)
        weft_yield();
    return NULL;
}

static void *kept_reader(void *arg)
{
    struct kept *k = arg;
    while (!atomic_load(&k->go))
        sched_yield();
    for (int pass = 0; pass < 20; pass++)
        for (int i = 0; i < KEPT_TASKS; i++) {
            uint64_t id = weft_task_id(k->t[i]);
            uint64_t own = atomic_load(&k->own[i]);
            /* Before the body's store own is 0; the id is never 0. */
            CHECK(id != 0);
            CHECK(own == 0 || own == id);
        }
    return NULL;
}

static void test_id_kept_after_end(void **state)
{
    weft_pool *p = wt_pool(WT_NTHREADS(state));
    static struct kept k[2];
    memset(k, 0, sizeof k);
    for (int round = 0; round < KEPT_ROUNDS; round++) {
        struct kept *now = &k[round % 2], *before = &k[(round + 1) % 2];
        atomic_store(&now->go, 0);
        for (int i = 0; i < KEPT_TASKS; i++) {
            atomic_store(&now->own[i], 0);
            assert_int_equal(
                weft_spawn(&now->t[i], p, kept_leaf, &now->own[i], NULL), 0);
        }
        pthread_t r = wt_thread(kept_reader, now);
        atomic_store(&now->go, 1);
        /* Ended, handles kept: the run records went back, and this
         * round's tasks took them.  Their ids are still their own. */
        if (round > 0) {
            for (int i = 0; i < KEPT_TASKS; i++) {
                assert_int_equal(weft_task_id(before->t[i]),
                                 atomic_load(&before->own[i]));
                assert_int_equal(weft_sync_wait(before->t[i], NULL), 0);
            }
        }
        for (int i = 0; i < KEPT_TASKS; i++)
            assert_int_equal(weft_task_join(now->t[i]), 0);
        wt_join(r);
        for (int i = 0; i < KEPT_TASKS; i++)
            assert_int_equal(weft_task_id(now->t[i]),
                             atomic_load(&now->own[i]));
    }
    struct kept *last = &k[(KEPT_ROUNDS - 1) % 2];
    for (int i = 0; i < KEPT_TASKS; i++)
        assert_int_equal(weft_sync_wait(last->t[i], NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

static void *coro_body(void *arg) { return arg; }

static void *make_coros(void *arg)
{
    uint64_t *out = arg;
    for (int i = 0; i < 50; i++) {
        weft_coro *co;
        CHECK_EQ(weft_coro_create(&co, coro_body, NULL), 0);
        out[i] = weft_coro_id(co);
        CHECK_EQ(weft_coro_id(co), out[i]);
        CHECK_EQ(weft_coro_destroy(co), 0);
    }
    return NULL;
}

static void test_ids_unique(void **state)
{
    static struct ids ids;
    memset(&ids, 0, sizeof ids);
    ids.pool = wt_pool(WT_NTHREADS(state));
    weft_task *t[ID_TASKS];
    uint64_t outside[ID_TASKS];
    for (int i = 0; i < ID_TASKS; i++) {
        assert_int_equal(weft_spawn(&t[i], ids.pool, id_parent, &ids, NULL), 0);
        outside[i] = weft_task_id(t[i]);
    }
    for (int i = 0; i < ID_TASKS; i++)
        assert_int_equal(weft_sync_wait(t[i], NULL), 0);
    wt_destroy(ids.pool);
    assert_int_equal(atomic_load(&ids.n), 2 * ID_TASKS);

    /* Coroutines on two threads draw from the same sequence. */
    static uint64_t all[2 * ID_TASKS + 100];
    size_t n = 0;
    for (int i = 0; i < 2 * ID_TASKS; i++)
        all[n++] = ids.seen[i];
    pthread_t a = wt_thread(make_coros, &all[n]);
    pthread_t b = wt_thread(make_coros, &all[n + 50]);
    wt_join(a);
    wt_join(b);
    n += 100;
    qsort(all, n, sizeof all[0], by_value);
    assert_true(all[0] != 0);
    for (size_t i = 1; i < n; i++)
        assert_true(all[i] != all[i - 1]);
    /* The handles named what the bodies saw. */
    for (int i = 0; i < ID_TASKS; i++)
        assert_non_null(bsearch(&outside[i], all, n, sizeof all[0], by_value));
    WT_CLEAN();
}

static void *renamed_child(void *arg)
{
    (void)arg;
    CHECK_EQ(weft_task_set_name("child, renamed"), 0);
    return (void *)weft_task_name(weft_task_current());
}

static void *renamer(void *arg)
{
    weft_pool *p = arg;
    weft_task *self = weft_task_current();
    CHECK_EQ(strcmp(weft_task_name(self), "given"), 0);
    CHECK_EQ(weft_task_set_name("now this one, and a long tail that is cut"),
             0);
    CHECK_EQ(strcmp(weft_task_name(self), "now this one, and a long tail t"),
             0);
    /* A child run inline (one worker: it is still queued when awaited)
     * renames itself, not us. */
    weft_task *c;
    CHECK_EQ(weft_spawn(&c, p, renamed_child, NULL, NULL), 0);
    void *r;
    CHECK_EQ(weft_await(c, &r), 0);
    CHECK_EQ(strcmp(r, "child, renamed"), 0);
    CHECK_EQ(strcmp(weft_task_name(self), "now this one, and a long tail t"),
             0);
    return NULL;
}

static void test_set_name(void **state)
{
    (void)state;
    weft_pool *p = wt_pool(1);
    weft_task *t;
    weft_task_opts o = {.name = "given"};
    assert_int_equal(weft_spawn(&t, p, renamer, p, &o), 0);
    assert_int_equal(weft_sync_wait(t, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* A task parked on each kind of wait                                   */

struct parked {
    weft_pool *pool;
    weft_mutex m, m2;
    weft_cond c;
    weft_sem s;
    weft_wait_group wg;
    weft_chan *ch_recv, *ch_send;
    weft_event e, e2, release_blocking;
    int rd[2], wr[2];
    weft_task *awaited;
};

static void *park_mutex(void *arg)
{
    struct parked *k = arg;
    CHECK_EQ(weft_mutex_lock(&k->m), 0);
    weft_mutex_unlock(&k->m);
    return NULL;
}

static void *park_cond(void *arg)
{
    struct parked *k = arg;
    weft_mutex_lock(&k->m2);
    CHECK_EQ(weft_cond_wait(&k->c, &k->m2), 0);
    weft_mutex_unlock(&k->m2);
    return NULL;
}

static void *park_sem(void *arg)
{
    struct parked *k = arg;
    CHECK_EQ(weft_sem_wait(&k->s), 0);
    return NULL;
}

static void *park_wait_group(void *arg)
{
    struct parked *k = arg;
    CHECK_EQ(weft_wait_group_wait(&k->wg), 0);
    return NULL;
}

static void *park_chan_recv(void *arg)
{
    struct parked *k = arg;
    void *v;
    CHECK_EQ(weft_chan_recv(k->ch_recv, &v), 0);
    return NULL;
}

static void *park_chan_send(void *arg)
{
    struct parked *k = arg;
    CHECK_EQ(weft_chan_send(k->ch_send, P(7)), 0);
    return NULL;
}

static void *park_event(void *arg)
{
    struct parked *k = arg;
    CHECK_EQ(weft_event_wait(&k->e), 0);
    return NULL;
}

static void *park_sleep(void *arg)
{
    (void)arg;
    CHECK_EQ(weft_sleep(3600ull * 1000000000u), -ECANCELED);
    return NULL;
}

static void *park_fd_read(void *arg)
{
    struct parked *k = arg;
    char c;
    CHECK_EQ(weft_read(k->rd[0], &c, 1), 1);
    return NULL;
}

static void *park_fd_write(void *arg)
{
    struct parked *k = arg;
    CHECK_EQ(weft_write(k->wr[0], "x", 1), 1);
    return NULL;
}

static void *awaited_body(void *arg)
{
    struct parked *k = arg;
    CHECK_EQ(weft_event_wait(&k->e2), 0);
    return P(5);
}

static void *park_await(void *arg)
{
    struct parked *k = arg;
    void *r;
    CHECK_EQ(weft_await(k->awaited, &r), 0);
    CHECK_EQ(I(r), 5);
    return NULL;
}

static void *blocking_fn(void *arg)
{
    struct parked *k = arg;
    CHECK_EQ(weft_event_wait(&k->release_blocking), 0);
    return P(9);
}

static void *park_blocking(void *arg)
{
    struct parked *k = arg;
    void *r;
    CHECK_EQ(weft_blocking(blocking_fn, k, &r), 0);
    CHECK_EQ(I(r), 9);
    return NULL;
}

/* Fill fd's send buffer, so that a write must wait. */
static void fill(int fd)
{
    char buf[4096] = {0};
    while (send(fd, buf, sizeof buf, MSG_DONTWAIT) > 0)
        ;
}

static void drain(int fd)
{
    char buf[4096];
    while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0)
        ;
}

enum { NPARKED = 13 };

static void test_parked_by_reason(void **state)
{
    (void)state;
    static struct parked k;
    memset(&k, 0, sizeof k);
    k.pool = wt_pool_named(2, "parked");
    weft_mutex_init(&k.m);
    weft_mutex_init(&k.m2);
    weft_cond_init(&k.c);
    weft_sem_init(&k.s, 0);
    weft_wait_group_init(&k.wg);
    weft_wait_group_add(&k.wg, 1);
    weft_event_init(&k.e);
    weft_event_init(&k.e2);
    weft_event_init(&k.release_blocking);
    assert_int_equal(weft_chan_create(&k.ch_recv, 0), 0);
    assert_int_equal(weft_chan_create(&k.ch_send, 0), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, k.rd),
                     0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, k.wr),
                     0);
    assert_int_equal(weft_fd_adopt(k.rd[0]), 0);
    assert_int_equal(weft_fd_adopt(k.wr[0]), 0);
    fill(k.wr[0]);
    /* Held by this plain thread. */
    assert_int_equal(weft_mutex_lock(&k.m), 0);

    weft_fn bodies[NPARKED - 1] = {
        park_mutex,    park_cond,     park_sem,      park_wait_group,
        park_chan_recv, park_chan_send, park_event,  park_sleep,
        park_fd_read,  park_fd_write, park_await,    park_blocking,
    };
    weft_task *t[NPARKED];
    assert_int_equal(weft_spawn(&k.awaited, k.pool, awaited_body, &k, NULL), 0);
    uint64_t awaited_id = weft_task_id(k.awaited);
    /* Parked before park_await awaits it, or the await would run its body
     * inline, on the awaiter's stack. */
    assert_true(wait_stats(k.pool, parked_n, P(1)));
    for (int i = 0; i < NPARKED - 1; i++)
        assert_int_equal(weft_spawn(&t[i], k.pool, bodies[i], &k, NULL), 0);
    assert_true(wait_stats(k.pool, parked_n, P(NPARKED)));

    struct weft_pool_stats s = stats_of(k.pool);
    assert_int_equal(s.workers, 2);
    assert_int_equal(s.tasks, NPARKED);
    assert_int_equal(s.running + s.runnable, 0);
    assert_int_equal(s.parked_mutex, 1);
    assert_int_equal(s.parked_cond, 1);
    assert_int_equal(s.parked_sem, 1);
    assert_int_equal(s.parked_wait_group, 1);
    assert_int_equal(s.parked_chan_recv, 1);
    assert_int_equal(s.parked_chan_send, 1);
    assert_int_equal(s.parked_event, 2); /* park_event and the awaited */
    assert_int_equal(s.parked_sleep, 1);
    assert_int_equal(s.parked_fd_read, 1);
    assert_int_equal(s.parked_fd_write, 1);
    assert_int_equal(s.parked_await, 1);
    assert_int_equal(s.parked_blocking, 1);
    assert_int_equal(s.parked_other, 0);
    assert_int_equal(s.poll_waits, 2);
    assert_true(s.timers >= 1);
    assert_int_equal(s.stacks, NPARKED);
    assert_true(s.stack_bytes >= NPARKED * (uint64_t)WEFT_STACK_DEFAULT);
    assert_true(s.stacks_mapped >= NPARKED);
    assert_true(s.stacks_mapped_bytes >= s.stack_bytes);
    assert_true(s.blocking_busy >= 1);
    assert_int_equal(s.spawned, 0);
    assert_int_equal(s.submitted, NPARKED);

    /* The dump says the same, with each one's object and stack. */
    char *d = dump_of(k.pool);
    char b[4096];
    struct {
        int i;
        const char *state, *about, *frame;
    } want[] = {
        {0, "[mutex, ", "  mutex 0x", "park_mutex+0x"},
        {1, "[cond, ", "  cond 0x", "park_cond+0x"},
        {2, "[sem, ", "  sem 0x", "park_sem+0x"},
        {3, "[wait group, ", "  wait group 0x", "park_wait_group+0x"},
        {4, "[chan recv, ", "(capacity 0)", "park_chan_recv+0x"},
        {5, "[chan send, ", "(capacity 0)", "park_chan_send+0x"},
        {6, "[event, ", "  event 0x", "park_event+0x"},
        {7, "[sleep, ", "  deadline in ", "park_sleep+0x"},
        {8, "[fd read, ", "  fd ", "park_fd_read+0x"},
        {9, "[fd write, ", "  fd ", "park_fd_write+0x"},
        {10, "[await, ", "  task ", "park_await+0x"},
        {11, "[blocking, ", "  running blocking_fn+0x0 ", "park_blocking+0x"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!block_of(d, weft_task_id(t[want[i].i]), b, sizeof b)) {
            fprintf(stderr, "no block for row %zu in:\n%s\n", i, d);
            fail();
        }
        expect_in(b, want[i].state);
        expect_in(b, want[i].about);
        expect_in(b, want[i].frame);
        expect_in(b, "] worker ");
        expect_in(b, " KiB in use, ");
        expect_in(b, "weft__ctx_entry+0x");
    }
    block_of(d, weft_task_id(t[0]), b, sizeof b);
    expect_in(b, "held by a plain thread");
    char awaited[32];
    snprintf(awaited, sizeof awaited, "  task %llu\n",
             (unsigned long long)awaited_id);
    block_of(d, weft_task_id(t[10]), b, sizeof b);
    expect_in(b, awaited);
    block_of(d, awaited_id, b, sizeof b);
    expect_in(b, "awaited_body+0x");
    char fds[32];
    snprintf(fds, sizeof fds, "  fd %d\n", k.rd[0]);
    block_of(d, weft_task_id(t[8]), b, sizeof b);
    expect_in(b, fds);
    snprintf(fds, sizeof fds, "  fd %d\n", k.wr[0]);
    block_of(d, weft_task_id(t[9]), b, sizeof b);
    expect_in(b, fds);
    expect_in(d, "weft pool \"parked\" (2 workers):\n");
    expect_in(d, "\n13 live tasks\n");
    free(d);

    /* Let them all go. */
    weft_mutex_unlock(&k.m);
    weft_mutex_lock(&k.m2);
    weft_cond_signal(&k.c);
    weft_mutex_unlock(&k.m2);
    weft_sem_post(&k.s);
    weft_wait_group_done(&k.wg);
    assert_int_equal(weft_chan_send(k.ch_recv, P(1)), 0);
    void *v;
    assert_int_equal(weft_chan_recv(k.ch_send, &v), 0);
    weft_event_set(&k.e);
    weft_event_set(&k.e2);
    assert_int_equal(weft_task_cancel(t[7]), 0);
    assert_int_equal(write(k.rd[1], "y", 1), 1);
    drain(k.wr[1]);
    weft_event_set(&k.release_blocking);
    for (int i = 0; i < NPARKED - 1; i++)
        assert_int_equal(weft_sync_wait(t[i], NULL), 0);
    assert_true(wait_stats(k.pool, no_tasks, NULL));
    s = stats_of(k.pool);
    assert_int_equal(s.parked, 0);
    assert_int_equal(s.poll_waits, 0);
    wt_destroy(k.pool);
    assert_int_equal(weft_chan_destroy(k.ch_recv), 0);
    assert_int_equal(weft_chan_destroy(k.ch_send), 0);
    weft_close(k.rd[0]);
    weft_close(k.wr[0]);
    close(k.rd[1]);
    close(k.wr[1]);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Counters                                                             */

static weft_pool *counted_pool;

static void *leaf(void *arg) { return arg; }

static void *fork_one(void *arg)
{
    weft_task *c;
    CHECK_EQ(weft_spawn(&c, counted_pool, leaf, arg, NULL), 0);
    void *r;
    CHECK_EQ(weft_await(c, &r), 0);
    CHECK_PTR_EQ(r, arg);
    CHECK_EQ(weft_yield(), 0);
    return NULL;
}

/* Every task ended, every queue entry (stale ones of tasks run inline
 * too) dropped, and the workers have slept. */
static bool asleep(const struct weft_pool_stats *s, void *arg)
{
    (void)arg;
    return s->parks > 0 && s->tasks == 0 &&
           s->local_queued + s->global_queued == 0;
}

static void test_counters(void **state)
{
    unsigned n = WT_NTHREADS(state);
    uint64_t t0 = wt_now_ns();
    counted_pool = wt_pool(n);
    enum { N = 1000 };
    static weft_task *t[N];
    for (int i = 0; i < N; i++)
        assert_int_equal(weft_spawn(&t[i], counted_pool, fork_one, P(i), NULL),
                         0);
    for (int i = 0; i < N; i++)
        assert_int_equal(weft_sync_wait(t[i], NULL), 0);
    assert_true(wait_stats(counted_pool, asleep, NULL));
    struct weft_pool_stats s = stats_of(counted_pool);
    uint64_t elapsed = wt_now_ns() - t0;

    assert_int_equal(s.workers, n);
    assert_int_equal(s.submitted, N);
    assert_int_equal(s.spawned, N); /* one child each, from a worker */
    assert_true(s.runs >= N);
    assert_true(s.steals <= s.steal_attempts);
    assert_true(s.wakeups <= s.parks);
    assert_true(s.idle_ns > 0);
    assert_true(s.busy_ns + s.idle_ns <= (elapsed + MS(50)) * n);
    assert_int_equal(s.local_queued + s.global_queued, 0);
    assert_int_equal(s.tasks + s.running + s.runnable + s.parked, 0);

    /* The workers' own counters, and the spares' (a loaded machine can
     * hold a worker long enough for the monitor to cover it), add up to
     * the pool's. */
    uint64_t runs = 0, spawned = 0, steals = 0, lifo = 0;
    for (unsigned i = 0;; i++) {
        struct weft_worker_stats w = {.size = sizeof w};
        int rc = weft_pool_worker_stats(counted_pool, i, &w);
        if (i >= n && rc == -EINVAL)
            break;
        assert_int_equal(rc, 0);
        assert_int_equal(w.size, sizeof w);
        runs += w.runs;
        spawned += w.spawned;
        steals += w.steals;
        lifo += w.lifo_hits;
        assert_int_equal(w.queued, 0);
    }
    assert_int_equal(runs, s.runs);
    assert_int_equal(spawned, s.spawned);
    assert_int_equal(steals, s.steals);
    assert_int_equal(lifo, s.lifo_hits);

    /* A caller with a larger struct (a later weft) gets ours and zeroes. */
    struct {
        struct weft_pool_stats s;
        unsigned char later[64];
    } big;
    memset(&big, 0x5a, sizeof big);
    big.s.size = sizeof big;
    assert_int_equal(weft_pool_stats(counted_pool, &big.s), 0);
    assert_int_equal(big.s.size, sizeof big.s);
    for (size_t i = 0; i < sizeof big.later; i++)
        assert_int_equal(big.later[i], 0);
    wt_destroy(counted_pool);
    WT_CLEAN();
}

/* Stale entries: a child that await runs inline keeps its queue entry
 * until the entry is reached; on one worker, with the parent awaiting its
 * oldest child first, that entry is counted and the others are not. */

static weft_pool *stale_pool;
static struct weft_pool_stats stale_before, stale_after;
static intptr_t stale_sum;

static void *stale_leaf(void *arg)
{
    return arg;
}

static void *stale_parent(void *arg)
{
    (void)arg;
    weft_task *c[3];
    for (int i = 0; i < 3; i++)
        if (weft_spawn(&c[i], stale_pool, stale_leaf, P(i + 1), NULL) != 0)
            return P(-1);
    stale_before.size = sizeof stale_before;
    stale_after.size = sizeof stale_after;
    void *v;
    int rc = weft_pool_stats(stale_pool, &stale_before);
    rc |= weft_await(c[0], &v); /* the oldest: run inline, entry left */
    stale_sum = (intptr_t)v;
    rc |= weft_pool_stats(stale_pool, &stale_after);
    for (int i = 1; i < 3; i++) {
        rc |= weft_await(c[i], &v);
        stale_sum += (intptr_t)v;
    }
    return P(rc);
}

static void test_stale_entries(void **state)
{
    (void)state;
    stale_pool = wt_pool(1);
    weft_task *t;
    void *v;
    assert_int_equal(weft_spawn(&t, stale_pool, stale_parent, NULL, NULL), 0);
    assert_int_equal(weft_sync_wait(t, &v), 0);
    assert_int_equal((intptr_t)v, 0);
    assert_int_equal(stale_sum, 1 + 2 + 3);
    assert_int_equal(stale_before.local_queued, 3);
    assert_int_equal(stale_before.stale_queued, 0);
    assert_int_equal(stale_after.local_queued, 3);
    assert_int_equal(stale_after.stale_queued, 1);
    /* Four live records at least, in 64 KiB chunks. */
    assert_true(stale_before.records_bytes >= 65536);
    wt_destroy(stale_pool);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* The dump: running, runnable, an inline body, a cond re-lock          */

static atomic_bool spin_on;
static atomic_bool spinning;

/* The flag is looked at once in 2^16 rounds, as in crunch_in_test (see
 * there: a probe that sampled the load's PLT stub missed this frame). */
static __attribute__((noinline)) void *spinner(void *arg)
{
    (void)arg;
    atomic_store(&spinning, true);
    volatile uint64_t n = 0;
    for (;;) {
        if ((n & 0xffff) == 0 && !atomic_load(&spin_on))
            break;
        n = n + 1;
    }
    return NULL;
}

/* Under ThreadSanitizer a signal waits for its thread's next call into
 * the sanitizer's runtime, which a loop of loads never makes: the dump's
 * probe of a computing thread then gets no answer (sched/probe.h). */
#if defined(__SANITIZE_THREAD__)
#define SIGNALS_DEFERRED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SIGNALS_DEFERRED 1
#endif
#endif
#ifndef SIGNALS_DEFERRED
#define SIGNALS_DEFERRED 0
#endif

/* A running task's block shows a frame of fn.  With signals deferred,
 * the thread answers, if at all, from inside the sanitizer's runtime (the
 * call that delivers the signal), whose code keeps no frame pointers in
 * gcc 12's libtsan: then the walk may end at that first frame.  So there
 * the block may instead say why it has no stack, or start its stack in
 * the runtime. */
static bool top_frame_in_tsan(const char *blk)
{
    /* The dump's "#0  frame (module)" line, or the stall warning's
     * "computing: frame < frame...". */
    const char *top = strstr(blk, "#0  ");
    const char *end = top ? strchr(top, '\n') : NULL;
    if (!top) {
        top = strstr(blk, "computing: ");
        end = top ? strchr(top, '<') : NULL;
    }
    if (!top)
        return false;
    if (!end)
        end = strchr(top, '\n');
    size_t len = end ? (size_t)(end - top) : strlen(top);
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)len, top);
    /* gcc: libtsan.so's symbols, C or C++ (__tsan::...); clang: the
     * runtime linked in, its __tsan_ entry points. */
    return strstr(line, "tsan") != NULL;
}

static void expect_frame(const char *blk, const char *fn)
{
    if (SIGNALS_DEFERRED &&
        (strstr(blk, "no stack: its thread did not answer") ||
         top_frame_in_tsan(blk)))
        return;
    expect_in(blk, fn);
}

static void test_dump_running_runnable(void **state)
{
    (void)state;
    /* No monitor: nothing covers the spinner, so b stays queued. */
    weft_pool_opts o = {.threads = 1, .flags = WEFT_POOL_NO_MONITOR};
    weft_pool *p;
    assert_int_equal(weft_pool_create(&p, &o), 0);
    atomic_store(&spin_on, true);
    atomic_store(&spinning, false);
    weft_task *a, *b;
    assert_int_equal(weft_spawn(&a, p, spinner, NULL, NULL), 0);
    while (!atomic_load(&spinning))
        sched_yield();
    assert_int_equal(weft_spawn(&b, p, leaf, NULL, NULL), 0);
    struct weft_pool_stats s = stats_of(p);
    assert_int_equal(s.running, 1);
    assert_int_equal(s.runnable, 1);
    assert_int_equal(s.global_queued, 1);
    char blk[1024];
    assert_true(answered_block_of(p, weft_task_id(a), blk, sizeof blk));
    /* No monitor: no time since its last switch. */
    expect_in(blk, "[running] worker 0");
    expect_in(blk, "computing");
    expect_frame(blk, "spinner");
    char *d = dump_of(p);
    assert_true(block_of(d, weft_task_id(b), blk, sizeof blk));
    expect_in(blk, "[runnable]");
    free(d);
    atomic_store(&spin_on, false);
    assert_int_equal(weft_sync_wait(a, NULL), 0);
    assert_int_equal(weft_sync_wait(b, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

struct inl {
    weft_pool *pool;
    weft_event go;
    _Atomic uint64_t child_id;
};

static void *inline_child(void *arg)
{
    struct inl *x = arg;
    atomic_store(&x->child_id, weft_task_id(weft_task_current()));
    CHECK_EQ(weft_event_wait(&x->go), 0);
    return NULL;
}

static void *inline_parent(void *arg)
{
    struct inl *x = arg;
    weft_task *c;
    CHECK_EQ(weft_spawn(&c, x->pool, inline_child, x, NULL), 0);
    CHECK_EQ(weft_await(c, NULL), 0); /* one worker: runs it inline */
    return NULL;
}

static bool one_event(const struct weft_pool_stats *s, void *arg)
{
    (void)arg;
    return s->parked_event == 1;
}

static void test_dump_inline_body(void **state)
{
    (void)state;
    static struct inl x;
    x.pool = wt_pool(1);
    weft_event_init(&x.go);
    atomic_store(&x.child_id, 0);
    weft_task *t;
    assert_int_equal(weft_spawn(&t, x.pool, inline_parent, &x, NULL), 0);
    assert_true(wait_stats(x.pool, one_event, NULL));
    char *d = dump_of(x.pool);
    char blk[4096], host[48];
    assert_true(block_of(d, atomic_load(&x.child_id), blk, sizeof blk));
    expect_in(blk, "[event, ");
    snprintf(host, sizeof host, "runs inline on the stack of task %llu\n",
             (unsigned long long)weft_task_id(t));
    expect_in(blk, host);
    /* The host's frames are under the body's. */
    expect_in(blk, "inline_child+0x");
    expect_in(blk, "inline_parent+0x");
    assert_true(block_of(d, weft_task_id(t), blk, sizeof blk));
    expect_in(blk, "[parked]");
    free(d);
    weft_event_set(&x.go);
    assert_int_equal(weft_sync_wait(t, NULL), 0);
    wt_destroy(x.pool);
    WT_CLEAN();
}

struct relock {
    weft_mutex m;
    weft_cond c;
    weft_event release;
    atomic_bool waiting;
    int rc;
};

static void *cond_waiter(void *arg)
{
    struct relock *r = arg;
    weft_mutex_lock(&r->m);
    atomic_store(&r->waiting, true);
    r->rc = weft_cond_wait(&r->c, &r->m);
    weft_mutex_unlock(&r->m);
    return NULL;
}

static void *holder(void *arg)
{
    struct relock *r = arg;
    weft_mutex_lock(&r->m);
    weft_cond_signal(&r->c);
    /* The waiter is woken and now waits to re-lock m, held here. */
    CHECK_EQ(weft_event_wait(&r->release), 0);
    weft_mutex_unlock(&r->m);
    return NULL;
}

static bool relocking(const struct weft_pool_stats *s, void *arg)
{
    (void)arg;
    return s->parked_mutex == 1 && s->parked_event == 1;
}

static void test_dump_cond_relock(void **state)
{
    (void)state;
    static struct relock r;
    memset(&r, 0, sizeof r);
    weft_mutex_init(&r.m);
    weft_cond_init(&r.c);
    weft_event_init(&r.release);
    weft_pool *p = wt_pool(2);
    weft_task *w, *h;
    assert_int_equal(weft_spawn(&w, p, cond_waiter, &r, NULL), 0);
    /* The waiter is in cond_wait once m is free again. */
    while (!atomic_load(&r.waiting) || weft_mutex_trylock(&r.m) != 0)
        sched_yield();
    weft_mutex_unlock(&r.m);
    assert_int_equal(weft_spawn(&h, p, holder, &r, NULL), 0);
    assert_true(wait_stats(p, relocking, NULL));
    /* Cancelling it does not end a re-lock. */
    assert_int_equal(weft_task_cancel(w), 0);
    struct weft_pool_stats s = stats_of(p);
    assert_int_equal(s.parked_mutex, 1);
    char *d = dump_of(p);
    char blk[4096], held[64];
    assert_true(block_of(d, weft_task_id(w), blk, sizeof blk));
    expect_in(blk, "[mutex (cond re-lock), ");
    snprintf(held, sizeof held, "held by task %llu\n",
             (unsigned long long)weft_task_id(h));
    expect_in(blk, held);
    expect_in(blk, "cond_waiter+0x");
    free(d);
    weft_event_set(&r.release);
    assert_int_equal(weft_sync_wait(h, NULL), 0);
    assert_int_equal(weft_sync_wait(w, NULL), 0);
    assert_int_equal(r.rc, 0); /* signalled before the cancel */
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Dumps and counters while tasks come and go                           */

struct churn {
    weft_pool *pool;
    weft_chan *ch;
    atomic_bool stop;
};

static void *churn_leaf(void *arg)
{
    struct churn *c = arg;
    void *v = NULL;
    if (weft_chan_try_recv(c->ch, &v) != 0)
        weft_yield();
    weft_sleep(1000);
    return v;
}

static void *churn_task(void *arg)
{
    struct churn *c = arg;
    for (int i = 0; i < 300; i++) {
        weft_task *k;
        CHECK_EQ(weft_spawn(&k, c->pool, churn_leaf, c, NULL), 0);
        weft_chan_try_send(c->ch, P(i));
        CHECK_EQ(weft_await(k, NULL), 0);
    }
    return NULL;
}

static void test_dump_while_churning(void **state)
{
    static struct churn c;
    c.pool = wt_pool(WT_NTHREADS(state));
    assert_int_equal(weft_chan_create(&c.ch, 4), 0);
    enum { N = 16 };
    weft_task *t[N];
    for (int i = 0; i < N; i++)
        assert_int_equal(weft_spawn(&t[i], c.pool, churn_task, &c, NULL), 0);
    for (int i = 0; i < 100; i++) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        assert_non_null(f);
        assert_int_equal(weft_dump_all(f), 0);
        fclose(f);
        assert_non_null(strstr(text, "live tasks"));
        free(text);
        stats_of(c.pool);
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(weft_sync_wait(t[i], NULL), 0);
    wt_destroy(c.pool);
    assert_int_equal(weft_chan_destroy(c.ch), 0);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* The dump on a signal                                                 */

static void *named_waiter(void *arg)
{
    CHECK_EQ(weft_task_set_name("waits for the signal test"), 0);
    CHECK_EQ(weft_event_wait(arg), 0);
    return NULL;
}

static void *event_waiter(void *arg)
{
    CHECK_EQ(weft_event_wait(arg), 0);
    return NULL;
}

/* A name with a newline and an escape in it keeps its task's dump line
 * one line: control characters print as '?' (a name is the program's,
 * maybe a peer's address or a request line; the line broke before). */
static void test_dump_name_one_line(void **state)
{
    (void)state;
    weft_pool *p = wt_pool_named(1, "two\nlines");
    static weft_event e;
    weft_event_init(&e);
    weft_task *t;
    weft_task_opts o = {.name = "GET /\r\nHost: \x1b[31m"};
    assert_int_equal(weft_spawn(&t, p, event_waiter, &e, &o), 0);
    assert_true(wait_stats(p, parked_n, P(1)));
    char *d = dump_of(p);
    expect_in(d, "weft pool \"two?lines\" (1 workers):\n");
    char blk[1024];
    assert_true(block_of(d, weft_task_id(t), blk, sizeof blk));
    expect_in(blk, "\"GET /??Host: ?[31m\" [event, ");
    free(d);
    weft_event_set(&e);
    assert_int_equal(weft_sync_wait(t, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* Entries in a /proc/self folder (fd, task). */
static int proc_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The blocked-signal mask (/proc's SigBlk) of this process's thread whose
 * name is `name`; false if there is none. */
static bool blocked_of(const char *name, unsigned long long *mask)
{
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        bool same = fgets(comm, sizeof comm, f) &&
                    strncmp(comm, name, strlen(name)) == 0 &&
                    comm[strlen(name)] == '\n';
        fclose(f);
        if (!same)
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        f = fopen(path, "r");
        assert_non_null(f);
        char line[128];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "SigBlk: %llx", mask) == 1)
                found = true;
        fclose(f);
    }
    closedir(d);
    return found;
}

/* blocked_of, once the thread has named itself (it does so as it starts):
 * false if none is named so within 10 s. */
static bool blocked_of_soon(const char *name, unsigned long long *mask)
{
    uint64_t end = wt_now_ns() + MS(10000);
    while (!blocked_of(name, mask))
        if (wt_now_ns() > end)
            return false;
        else
            sched_yield();
    return true;
}

/* Signal n's bit in a /proc mask. */
#define SIGBIT(n) (1ull << ((n) - 1))

static void test_dump_on_signal(void **state)
{
    (void)state;
    /* A signal glibc keeps for itself (32, SIGCANCEL) is refused, and
     * nothing is left of the refusal: it left a pipe and a sleeping
     * thread each time before. */
    int fds = proc_entries("/proc/self/fd"),
        threads = proc_entries("/proc/self/task");
    for (int i = 0; i < 5; i++)
        assert_int_equal(weft_dump_on_signal(32), -EINVAL);
    assert_int_equal(proc_entries("/proc/self/fd"), fds);
    assert_int_equal(proc_entries("/proc/self/task"), threads);
    weft_pool *p = wt_pool_named(1, "signalled");
    static weft_event e;
    weft_event_init(&e);
    weft_task *t;
    assert_int_equal(weft_spawn(&t, p, named_waiter, &e, NULL), 0);
    assert_true(wait_stats(p, parked_n, P(1)));
    assert_int_equal(weft_dump_on_signal(SIGUSR2), 0);
    assert_int_equal(weft_dump_on_signal(SIGUSR2), 0);
    /* weft's own threads that run no program code block every signal
     * sent to the process (weft.h, "Signals"): this thread blocks none,
     * and a SIGTERM that a program blocks later must not land on them. */
    unsigned long long blocked = 0;
    assert_true(blocked_of_soon("weft-dump", &blocked));
    CHECK((blocked & SIGBIT(SIGTERM)) && (blocked & SIGBIT(SIGUSR2)) &&
          (blocked & SIGBIT(SIGINT)) && !(blocked & SIGBIT(SIGSEGV)));
    assert_true(blocked_of_soon("signalled-mon", &blocked));
    CHECK((blocked & SIGBIT(SIGTERM)) && (blocked & SIGBIT(SIGUSR2)));
    assert_int_equal(weft_dump_on_signal(SIGUSR1), -EBUSY);

    /* stderr into a pipe, for as long as the dump takes. */
    int pfd[2];
    assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_int_equal(dup2(pfd[1], 2), 2);
    close(pfd[1]);
    assert_int_equal(raise(SIGUSR2), 0);
    static char text[1 << 16];
    size_t len = 0;
    while (len < sizeof text - 1 && !strstr(text, "weft: end of dump\n")) {
        struct pollfd pe = {pfd[0], POLLIN, 0};
        if (poll(&pe, 1, 10000) != 1)
            break; /* nothing for 10 s: fails below */
        ssize_t n = read(pfd[0], text + len, sizeof text - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        text[len] = '\0';
    }
    assert_int_equal(dup2(saved, 2), 2);
    close(saved);
    close(pfd[0]);
    expect_in(text, "weft: dump (signal ");
    expect_in(text, "weft pool \"signalled\" (1 workers):\n");
    expect_in(text, "\"waits for the signal test\" [event, ");
    expect_in(text, "named_waiter+0x");
    expect_in(text, "weft tasks on no pool (weft_sync_wait):\n");
    expect_in(text, "weft: end of dump\n");
    /* And the program went on. */
    weft_event_set(&e);
    assert_int_equal(weft_sync_wait(t, NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* The trace, through the calls (check_trace.py reads one in depth)     */

static weft_chan *traced_ch;

/* A ping-pong of TRACED_ROUNDS rounds: the first sends and then
 * receives, the second the other way round.  On two workers the two park
 * and wake each other while the other is running, about to park, or
 * parked: both ways of a wake are traced. */
#define TRACED_ROUNDS 200

static void *traced(void *arg)
{
    void *v;
    for (int i = 0; i < TRACED_ROUNDS; i++) {
        if (arg) {
            CHECK_EQ(weft_chan_send(traced_ch, P(1)), 0);
            CHECK_EQ(weft_chan_recv(traced_ch, &v), 0);
        } else {
            CHECK_EQ(weft_chan_recv(traced_ch, &v), 0);
            CHECK_EQ(weft_chan_send(traced_ch, P(2)), 0);
        }
    }
    return NULL;
}

/* How many times text occurs in block. */
static size_t count_in(const char *block, const char *text)
{
    size_t n = 0;
    for (const char *at = strstr(block, text); at;
         at = strstr(at + 1, text))
        n++;
    return n;
}

/* A fresh file for a trace (path: a mkstemp template). */
static void trace_file_new(char *path)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
}

/* The trace written to path, which goes; *len (if not NULL) its length. */
static const char *trace_file_take(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    unlink(path);
    text[n] = '\0';
    if (len)
        *len = n;
    return text;
}

static void test_trace_calls(void **state)
{
    (void)state;
    char path[] = "/tmp/weft-trace-XXXXXX";
    trace_file_new(path);
    weft_pool *p = wt_pool(2);
    assert_int_equal(weft_chan_create(&traced_ch, 0), 0);
    assert_int_equal(weft_trace_start(path), 0);
    weft_task *a, *b;
    assert_int_equal(weft_spawn(&a, p, traced, P(1), NULL), 0);
    assert_int_equal(weft_spawn(&b, p, traced, NULL, NULL), 0);
    assert_int_equal(weft_sync_wait(a, NULL), 0);
    assert_int_equal(weft_sync_wait(b, NULL), 0);
    assert_int_equal(weft_trace_stop(), 0);
    assert_int_equal(weft_trace_stop(), -ESRCH);
    wt_destroy(p);
    assert_int_equal(weft_chan_destroy(traced_ch), 0);

    size_t n;
    const char *text = trace_file_take(path, &n);
    assert_true(strncmp(text, "{\"displayTimeUnit\":\"ns\"", 23) == 0);
    assert_true(n > 3 && strcmp(text + n - 3, "]}\n") == 0);
    expect_in(text, "\"name\":\"thread_name\"");
    expect_in(text, "\"end\":\"finished\"");
    expect_in(text, "\"end\":\"chan ");
    expect_in(text, "\"ph\":\"s\"");
    expect_in(text, "\"ph\":\"f\"");
    /* Every park on the channel ended in a wake, and each wake drew its
     * arrow: a wake that came while its task was still switching out
     * (which then requeued itself) recorded none before, so the arrows
     * fell short of the parks (seen under qemu). */
    size_t parks = count_in(text, "\"end\":\"chan ");
    size_t arrows = count_in(text, "\"ph\":\"f\"");
    if (arrows < parks)
        fail_msg("%zu parks on the channel, %zu wake arrows", parks, arrows);
    WT_CLEAN();
}

/* A task named before the trace starts is named in it: the start records
 * the names of the tasks that exist (a server's connections, named long
 * before an operator traces; they showed as "task" before). */
static weft_event early_go;

static void *named_early(void *arg)
{
    (void)arg;
    CHECK_EQ(weft_task_set_name("conn 10.0.0.7:5421"), 0);
    CHECK_EQ(weft_event_wait(&early_go), 0);
    CHECK_EQ(weft_yield(), 0);
    return NULL;
}

static void test_trace_names_earlier_tasks(void **state)
{
    (void)state;
    char path[] = "/tmp/weft-trace-XXXXXX";
    trace_file_new(path);
    weft_pool *p = wt_pool(1);
    weft_event_init(&early_go);
    weft_task *a, *b;
    weft_task_opts o = {.name = "named by its options"};
    assert_int_equal(weft_spawn(&a, p, named_early, NULL, NULL), 0);
    assert_int_equal(weft_spawn(&b, p, named_early, NULL, &o), 0);
    /* Both parked on the event, named, before the trace. */
    assert_true(wait_stats(p, parked_n, (void *)(uintptr_t)2));
    uint64_t ida = weft_task_id(a), idb = weft_task_id(b);
    assert_int_equal(weft_trace_start(path), 0);
    weft_event_set(&early_go);
    assert_int_equal(weft_sync_wait(a, NULL), 0);
    assert_int_equal(weft_sync_wait(b, NULL), 0);
    assert_int_equal(weft_trace_stop(), 0);
    wt_destroy(p);

    const char *text = trace_file_take(path, NULL);
    char want[96];
    snprintf(want, sizeof want, "\"name\":\"task %llu conn 10.0.0.7:5421\"",
             (unsigned long long)ida);
    expect_in(text, want);
    /* b renamed itself too: the later name. */
    snprintf(want, sizeof want, "\"name\":\"task %llu conn 10.0.0.7:5421\"",
             (unsigned long long)idb);
    expect_in(text, want);
    WT_CLEAN();
}

/* Whether the n bytes at s are UTF-8 as RFC 3629 has it (what a JSON
 * reader asks of a JSON text): written here apart from the library's. */
static bool valid_utf8(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t more;
        unsigned min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            more = 1, min = 0x80, c &= 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            more = 2, min = 0x800, c &= 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            more = 3, min = 0x10000, c &= 0x07;
        } else {
            return false;
        }
        if (i + more >= n)
            return false;
        for (size_t k = 1; k <= more; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            c = c << 6 | (s[i + k] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
            return false;
        i += more + 1;
    }
    return true;
}

static weft_event utf8_go;

static void *renamed_in_trace(void *arg)
{
    (void)arg;
    CHECK_EQ(weft_event_wait(&utf8_go), 0);
    /* After the start named it from the main thread: the new name wins,
     * whichever thread's events the writer reads first. */
    CHECK_EQ(weft_task_set_name("renamed while traced"), 0);
    CHECK_EQ(weft_yield(), 0);
    return NULL;
}

/* Names cut to their buffers' sizes in the middle of a character, or that
 * were never UTF-8, still give a trace of valid UTF-8 (a JSON text is
 * UTF-8: Perfetto and Python's json refused the trace before), cut at a
 * character's start; and a task renamed after the start carries its new
 * name (the name recorded in the thread read last won before). */
static void test_trace_names_utf8(void **state)
{
    (void)state;
    char path[] = "/tmp/weft-trace-XXXXXX";
    trace_file_new(path);
    /* 8 bytes and a 3-byte euro sign: the pool's 10 bytes split it. */
    weft_pool *p = wt_pool_named(1, "poolname\xe2\x82\xac");
    weft_event_init(&utf8_go);
    weft_task *a, *b, *c;
    /* 30 bytes and the euro sign: a name's 31 bytes split it. */
    weft_task_opts cut = {.name = "abcdefghijklmnopqrstuvwxyz0123\xe2\x82\xac"};
    weft_task_opts bad = {.name = "bad\xff\xfename"};
    weft_task_opts old = {.name = "named before the trace"};
    assert_int_equal(weft_spawn(&c, p, renamed_in_trace, NULL, &old), 0);
    assert_true(wait_stats(p, parked_n, (void *)(uintptr_t)1));
    assert_int_equal(weft_trace_start(path), 0);
    assert_int_equal(weft_spawn(&a, p, leaf, NULL, &cut), 0);
    assert_int_equal(weft_spawn(&b, p, leaf, NULL, &bad), 0);
    uint64_t ida = weft_task_id(a), idb = weft_task_id(b),
             idc = weft_task_id(c);
    assert_int_equal(weft_sync_wait(a, NULL), 0);
    assert_int_equal(weft_sync_wait(b, NULL), 0);
    weft_event_set(&utf8_go);
    assert_int_equal(weft_sync_wait(c, NULL), 0);
    assert_int_equal(weft_trace_stop(), 0);
    wt_destroy(p);

    size_t n;
    const char *text = trace_file_take(path, &n);
    assert_true(valid_utf8((const unsigned char *)text, n));
    char want[96];
    snprintf(want, sizeof want,
             "\"name\":\"task %llu abcdefghijklmnopqrstuvwxyz0123\"",
             (unsigned long long)ida);
    expect_in(text, want);
    snprintf(want, sizeof want, "\"name\":\"task %llu bad\\ufffd\\ufffdname\"",
             (unsigned long long)idb);
    expect_in(text, want);
    expect_in(text, "\"args\":{\"name\":\"poolname-0\"}");
    snprintf(want, sizeof want, "\"name\":\"task %llu renamed while traced\"",
             (unsigned long long)idc);
    expect_in(text, want);
    snprintf(want, sizeof want, "\"name\":\"task %llu named before",
             (unsigned long long)idc);
    CHECK(strstr(text, want) == NULL);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* Stuck workers: the dump and the warning (weft/pool.h)                */

static atomic_bool crunch_on;

/* Computes until crunch_on is cleared: a named frame for the dump to
 * show.  Bounded by a count (some 30 s or more of doubles) rather than the
 * clock: a clock read is a call into the vDSO, which keeps no frame
 * pointer, and a probe that lands there walks past this frame (seen once
 * in CI: vdso < __clock_gettime < cruncher).  The flag is looked at once
 * in 2^16 rounds for the same reason: under ThreadSanitizer the load is a
 * call through the PLT, whose stub sets up no frame either (the dump
 * missed this frame once in a few runs under TSan). */
static __attribute__((noinline)) double crunch_in_test(void)
{
    volatile double x = 1;
    for (uint64_t n = 0; n < 30000000000ull; n++) {
        if ((n & 0xffff) == 0 &&
            !atomic_load_explicit(&crunch_on, memory_order_relaxed))
            break;
        x = x * 1.0000001 + 0.5;
    }
    return x;
}

static void *cruncher(void *arg)
{
    (void)arg;
    crunch_in_test();
    return NULL;
}

/* The seconds in "[running, 1.2 s without a switch]" (0 if absent). */
static double running_for(const char *blk)
{
    const char *at = strstr(blk, "[running, ");
    if (!at)
        return 0;
    char unit[8] = "";
    double v = 0;
    if (sscanf(at + 10, "%lf %7s", &v, unit) != 2)
        return 0;
    return strcmp(unit, "s") == 0    ? v
           : strcmp(unit, "ms") == 0 ? v / 1e3
           : strcmp(unit, "min") == 0 ? v * 60
                                      : v / 1e6;
}

/* Issue 23's acceptance: 1 s into a stall of both workers, the dump shows
 * each computing task as running, for how long (at least 0.5 s), with a
 * frame of the function it computes in. */
static void test_dump_stuck_workers(void **state)
{
    (void)state;
    weft_pool *p = wt_pool(2);
    atomic_store(&crunch_on, true);
    weft_task *t[2];
    weft_task_opts o = {.name = "cruncher"};
    for (int i = 0; i < 2; i++)
        assert_int_equal(weft_spawn(&t[i], p, cruncher, NULL, &o), 0);
    /* Both run: two running tasks. */
    uint64_t end = wt_now_ns() + MS(10000);
    struct weft_pool_stats s;
    do {
        s = stats_of(p);
        assert_true(wt_now_ns() < end);
    } while (s.running != 2);
    wt_sleep_ms(1000); /* the acceptance's "1 s into" */
    for (int i = 0; i < 2; i++) {
        char blk[2048];
        assert_true(answered_block_of(p, weft_task_id(t[i]), blk, sizeof blk));
        expect_in(blk, "\"cruncher\" [running, ");
        expect_in(blk, "without a switch] worker ");
        if (running_for(blk) < 0.5)
            fprintf(stderr, "running for %.3f s in:\n%s\n",
                    running_for(blk), blk);
        CHECK(running_for(blk) >= 0.5);
        expect_in(blk, "computing");
        expect_frame(blk, "crunch_in_test");
    }
    /* The spare that runs a task queued behind the stuck workers runs the
     * program's code: it has the workers' signal mask (this thread's,
     * which blocks neither signal below), not that of the monitor that
     * started it, which blocks all (weft.h, "Signals"; the dump's probe
     * of a spare got no answer). */
    static weft_event spare_ev;
    weft_event_init(&spare_ev);
    weft_task *queued;
    assert_int_equal(weft_spawn(&queued, p, event_waiter, &spare_ev, NULL), 0);
    unsigned long long blocked = ~0ull;
    assert_true(blocked_of_soon("weft-s0", &blocked));
    CHECK(!(blocked & SIGBIT(SIGTERM)) && !(blocked & SIGBIT(SIGUSR2)));
    weft_event_set(&spare_ev);
    assert_int_equal(weft_sync_wait(queued, NULL), 0);
    atomic_store(&crunch_on, false);
    for (int i = 0; i < 2; i++)
        assert_int_equal(weft_sync_wait(t[i], NULL), 0);
    wt_destroy(p);
    WT_CLEAN();
}

/* stall_warn_ms: one line per stall, naming the task, its id, the worker,
 * for how long, what it does and where. */
static void test_stall_warning(void **state)
{
    (void)state;
    char path[] = "/tmp/weft-warn-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fd, 2), 2);

    weft_pool_opts o = {.threads = 1, .stall_warn_ms = 50};
    weft_pool *p;
    assert_int_equal(weft_pool_create(&p, &o), 0);
    atomic_store(&crunch_on, true);
    weft_task_opts to = {.name = "long one"};
    weft_task *t;
    assert_int_equal(weft_spawn(&t, p, cruncher, NULL, &to), 0);
    /* Until the line is there (or 10 s), then a while more, in which no
     * second line may come for the same stall. */
    char text[4096];
    ssize_t n = 0;
    for (int i = 0; i < 10000; i++) {
        n = pread(fd, text, sizeof text - 1, 0);
        if (n > 0 && memchr(text, '\n', (size_t)n))
            break;
        wt_sleep_ms(1);
    }
    wt_sleep_ms(300);
    atomic_store(&crunch_on, false);
    /* Before the wait consumes the handle, which the id is read from. */
    uint64_t id = weft_task_id(t);
    assert_int_equal(weft_sync_wait(t, NULL), 0);
    wt_destroy(p);
    assert_int_equal(dup2(saved, 2), 2);
    close(saved);
    n = pread(fd, text, sizeof text - 1, 0);
    close(fd);
    assert_true(n > 0);
    text[n] = '\0';
    char want[96];
    snprintf(want, sizeof want, "weft: task %llu \"long one\" has run ",
             (unsigned long long)id);
    expect_in(text, want);
    expect_in(text, "without a switch on worker 0 of pool \"weft\", computing");
    expect_frame(text, "crunch_in_test");
    int lines = 0;
    for (char *c = text; *c; c++)
        lines += *c == '\n';
    if (lines != 1)
        fprintf(stderr, "%s", text);
    CHECK_EQ(lines, 1);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    const struct CMUnitTest tests[] = {
        WT_TEST(test_ids_unique),
        WT_TEST(test_id_kept_after_end),
        WT_TEST1(test_set_name),
        WT_TEST1(test_parked_by_reason),
        WT_TEST(test_counters),
        WT_TEST1(test_stale_entries),
        WT_TEST1(test_dump_running_runnable),
        WT_TEST1(test_dump_stuck_workers),
        WT_TEST1(test_stall_warning),
        WT_TEST1(test_dump_inline_body),
        WT_TEST1(test_dump_cond_relock),
        WT_TEST(test_dump_while_churning),
        WT_TEST1(test_dump_name_one_line),
        WT_TEST1(test_dump_on_signal),
        WT_TEST1(test_trace_calls),
        WT_TEST1(test_trace_names_earlier_tasks),
        WT_TEST1(test_trace_names_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
