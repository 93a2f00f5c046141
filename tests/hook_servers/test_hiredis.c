/*
 * test_hiredis.c — hiredis's synchronous API, unmodified, in pool tasks
 * over libweft-hook (suite hook_servers).
 *
 * A real redis-server on 127.0.0.1; a pool of 2 workers runs 200 tasks,
 * each with its own redisConnect and 500 GETs (of a 5-byte, a 1,000-byte
 * and, every 100th, a 100,000-byte value, which arrives in several reads,
 * and of a key the task SET itself), and 2 tasks that wait 2 s each in
 * `BLPOP <empty list> 2`.  Every reply is checked.  The ticker
 * (servers.h) shows that the pool went on running tasks throughout: with
 * the hook, hiredis's blocking connect, read and write park the task;
 * without it the two BLPOPs would hold both workers for 2 s.
 */
#include <hiredis/hiredis.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "servers.h"

enum {
    TASKS = 200,
    GETS = 500,
    BLPOPS = 2,
    BLPOP_S = 2,
    BIG = 100000,
    MEDIUM = 1000,
};

#define EMPTY_LIST "hs:empty"

static unsigned port;
static char big[BIG], medium[MEDIUM];
static atomic_long gets_ok, blpops_ok;

/* Whether r is the bulk string want[0..len). */
static int is_string(const redisReply *r, const char *want, size_t len)
{
    return r != NULL && r->type == REDIS_REPLY_STRING && r->len == len &&
           memcmp(r->str, want, len) == 0;
}

static redisContext *connect_redis(void)
{
    /* A literal address: hiredis's getaddrinfo answers it without DNS. */
    redisContext *c = redisConnect("127.0.0.1", (int)port);
    if (c == NULL || c->err) {
        fprintf(stderr, "redisConnect: %s\n",
                c != NULL ? c->errstr : "out of memory");
        CHECK(!"redisConnect failed");
        if (c != NULL)
            redisFree(c);
        return NULL;
    }
    return c;
}

static void *getter(void *arg)
{
    unsigned i = (unsigned)(uintptr_t)arg;
    redisContext *c = connect_redis();
    if (c == NULL)
        return NULL;
    char own[32], key[32];
    int own_len = snprintf(own, sizeof own, "task-%u", i);
    redisReply *r = redisCommand(c, "SET t:%u %s", i, own);
    CHECK(r != NULL && r->type == REDIS_REPLY_STATUS &&
          strcmp(r->str, "OK") == 0);
    freeReplyObject(r);
    for (unsigned j = 0; j < GETS && r != NULL; j++) {
        const char *want;
        size_t len;
        if (j % 100 == 99) {
            strcpy(key, "big");
            want = big, len = BIG;
        } else if (j % 3 == 0) {
            strcpy(key, "small");
            want = "hello", len = 5;
        } else if (j % 3 == 1) {
            strcpy(key, "medium");
            want = medium, len = MEDIUM;
        } else {
            snprintf(key, sizeof key, "t:%u", i);
            want = own, len = (size_t)own_len;
        }
        r = redisCommand(c, "GET %s", key);
        if (r == NULL)
            fprintf(stderr, "task %u, GET %u: %s\n", i, j, c->errstr);
        if (is_string(r, want, len))
            atomic_fetch_add(&gets_ok, 1);
        else
            CHECK(!"GET answered wrong");
        freeReplyObject(r);
    }
    redisFree(c);
    return NULL;
}

static void *blpopper(void *arg)
{
    (void)arg;
    redisContext *c = connect_redis();
    if (c == NULL)
        return NULL;
    uint64_t t0 = hs_now_ns();
    redisReply *r = redisCommand(c, "BLPOP %s %d", EMPTY_LIST, BLPOP_S);
    uint64_t took = hs_now_ns() - t0;
    if (r == NULL)
        fprintf(stderr, "BLPOP: %s\n", c->errstr);
    /* The list stays empty: the server answers nil at the timeout, so
     * the call took the whole 2 s (the hook neither cut the wait short
     * nor lost the answer). */
    CHECK(r != NULL && r->type == REDIS_REPLY_NIL);
    CHECK(took >= HS_MS(BLPOP_S * 1000 - 100));
    CHECK(took < HS_MS(BLPOP_S * 1000 + 5000));
    if (r != NULL && r->type == REDIS_REPLY_NIL)
        atomic_fetch_add(&blpops_ok, 1);
    freeReplyObject(r);
    redisFree(c);
    return NULL;
}

/* The keys every getter reads, set from the main thread (a plain thread:
 * the hook passes its calls through to libc). */
static void set_keys(void)
{
    for (size_t k = 0; k < BIG; k++)
        big[k] = (char)('a' + (k * 7 + k / 26) % 26);
    for (size_t k = 0; k < MEDIUM; k++)
        medium[k] = (char)('A' + (k * 11) % 26);
    redisContext *c = redisConnect("127.0.0.1", (int)port);
    if (c == NULL || c->err)
        hs_fail("redisConnect from main: %s", c ? c->errstr : "no memory");
    redisReply *r[4];
    r[0] = redisCommand(c, "SET small hello");
    r[1] = redisCommand(c, "SET medium %b", medium, (size_t)MEDIUM);
    r[2] = redisCommand(c, "SET big %b", big, (size_t)BIG);
    r[3] = redisCommand(c, "DEL %s", EMPTY_LIST);
    for (int k = 0; k < 4; k++) {
        if (r[k] == NULL || r[k]->type == REDIS_REPLY_ERROR)
            hs_fail("setting the keys: %s",
                    r[k] ? r[k]->str : c->errstr);
        freeReplyObject(r[k]);
    }
    redisFree(c);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    char redis[PATH_MAX];
    const char *const redis_paths[] = {"/usr/bin/redis-server",
                                       "/usr/sbin/redis-server",
                                       "/usr/local/bin/redis-server", NULL};
    if (hs_find_program(redis_paths, redis, sizeof redis) == NULL)
        hs_skip("redis-server", "redis-server libhiredis-dev");
    /* Well inside meson's timeout (meson.build): the watchdog stops the
     * server on a hang, meson's kill would not. */
    hs_watchdog_start(90);
    hs_choose_user();
    const char *dir = hs_tmpdir("redis");
    char log[256];
    snprintf(log, sizeof log, "%s/redis.log", dir);

    /* Persistence off, its files (none) in dir, logging to stdout, which
     * hs_spawn sends to the log. */
    pid_t pid = 0;
    for (int attempt = 0;; attempt++) {
        char port_arg[16];
        port = hs_free_port();
        snprintf(port_arg, sizeof port_arg, "%u", port);
        char *argv[] = {redis, "--port", port_arg, "--bind", "127.0.0.1",
                        "--save", "", "--appendonly", "no",
                        "--dir", (char *)dir, "--daemonize", "no", NULL};
        pid = hs_spawn(argv, log, SIGTERM);
        if (hs_wait_ready(pid, port, 20000, log) == 0)
            break;
        if (attempt == 2) /* not just a port taken meanwhile */
            hs_fail("redis-server would not start");
    }
    set_keys();

    weft_pool *p = hs_pool();
    hs_ticker tk;
    hs_ticker_start(&tk, p);
    uint64_t t0 = hs_now_ns();
    /* The BLPOPs first, so that they overlap the GETs' load. */
    weft_task *ts[BLPOPS + TASKS];
    for (unsigned i = 0; i < BLPOPS + TASKS; i++) {
        int e = i < BLPOPS
                    ? weft_spawn(&ts[i], p, blpopper, NULL, NULL)
                    : weft_spawn(&ts[i], p, getter,
                                 (void *)(uintptr_t)(i - BLPOPS), NULL);
        if (e != 0)
            hs_fail("weft_spawn: %s", weft_strerror(e));
    }
    for (unsigned i = 0; i < BLPOPS + TASKS; i++)
        if (weft_sync_wait(ts[i], NULL) != 0)
            hs_fail("weft_sync_wait failed");
    uint64_t run = hs_now_ns() - t0;
    hs_ticker_stop(&tk);
    hs_pool_destroy(p);

    CHECK_EQ(atomic_load(&gets_ok), (long)TASKS * GETS);
    CHECK_EQ(atomic_load(&blpops_ok), BLPOPS);
    printf("hiredis: %d tasks x %d GETs, %ld answered right; %d BLPOP %d s, "
           "%ld answered nil at the timeout\n", TASKS, GETS,
           atomic_load(&gets_ok), BLPOPS, BLPOP_S, atomic_load(&blpops_ok));
    int bad = hs_ticker_report("hiredis", &tk, run);

    int status = hs_stop(pid);
    if (status != 0) {
        hs_print_log(log);
        fprintf(stderr, "FAIL: redis-server exited with status %d\n",
                status);
        bad++;
    }
    long checks = atomic_load(&check_failures);
    if (checks != 0)
        fprintf(stderr, "FAIL: %ld checks failed\n", checks);
    if (checks != 0 || bad != 0)
        return 1;
    printf("PASS\n");
    return 0;
}
