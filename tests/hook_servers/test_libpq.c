/*
 * test_libpq.c — libpq's synchronous API (PQconnectdb, PQexec),
 * unmodified, in pool tasks over libweft-hook (suite hook_servers).
 *
 * A real postgres: initdb into a temporary directory (trust
 * authentication, no fsync), then postgres listening on 127.0.0.1 at a
 * free port with its Unix socket in that directory.  postgres refuses to
 * run as root: as root, both run as the user 'postgres' (else 'nobody'),
 * which owns the directory (hs_choose_user, servers.h).
 *
 * A pool of 2 workers runs 100 tasks, each with its own connection and
 * 200 `SELECT <n>` (a different n each time, so that an answer given to
 * the wrong query or the wrong connection shows), and 2 tasks running
 * `SELECT pg_sleep(1)`.  libpq keeps its socket non-blocking and waits
 * in poll(2) (pqWait): the hook must park the task there.  The ticker
 * (servers.h) shows that the pool ran on meanwhile; without the hook
 * the pg_sleeps would hold both workers for 1 s.
 */
#include <libpq-fe.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../check.h"
#include "servers.h"

enum { TASKS = 100, QUERIES = 200, SLEEPERS = 2 };

static char conninfo[512];
static atomic_long queries_ok, sleeps_ok;

static PGconn *connect_pg(void)
{
    PGconn *c = PQconnectdb(conninfo);
    if (c == NULL || PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "PQconnectdb: %s",
                c != NULL ? PQerrorMessage(c) : "out of memory\n");
        CHECK(!"PQconnectdb failed");
        PQfinish(c);
        return NULL;
    }
    return c;
}

static void *querier(void *arg)
{
    unsigned i = (unsigned)(uintptr_t)arg;
    PGconn *c = connect_pg();
    if (c == NULL)
        return NULL;
    for (unsigned j = 0; j < QUERIES; j++) {
        char sql[64], want[32];
        unsigned n = i * 100000 + j;
        snprintf(sql, sizeof sql, "SELECT %u", n);
        snprintf(want, sizeof want, "%u", n);
        PGresult *r = PQexec(c, sql);
        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
            PQnfields(r) == 1 && strcmp(PQgetvalue(r, 0, 0), want) == 0) {
            atomic_fetch_add(&queries_ok, 1);
        } else {
            fprintf(stderr, "task %u, %s: %s %s", i, sql,
                    PQresStatus(PQresultStatus(r)), PQerrorMessage(c));
            CHECK(!"SELECT answered wrong");
        }
        PQclear(r);
    }
    PQfinish(c);
    return NULL;
}

static void *sleeper(void *arg)
{
    (void)arg;
    PGconn *c = connect_pg();
    if (c == NULL)
        return NULL;
    uint64_t t0 = hs_now_ns();
    PGresult *r = PQexec(c, "SELECT pg_sleep(1)");
    uint64_t took = hs_now_ns() - t0;
    /* The whole second, and the answer after it: the hook neither cut
     * libpq's poll short nor lost the result. */
    CHECK_EQ(PQresultStatus(r), PGRES_TUPLES_OK);
    CHECK(took >= HS_MS(990));
    CHECK(took < HS_MS(6000));
    if (PQresultStatus(r) == PGRES_TUPLES_OK)
        atomic_fetch_add(&sleeps_ok, 1);
    else
        fprintf(stderr, "pg_sleep: %s", PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    return NULL;
}

/* postgres accepts TCP connections a moment before it takes queries
 * ("the database system is starting up"): ready once PQping says so. */
static void wait_accepting_queries(int ms)
{
    uint64_t deadline = hs_now_ns() + HS_MS(ms);
    while (PQping(conninfo) != PQPING_OK) {
        if (hs_now_ns() >= deadline)
            hs_fail("postgres did not answer PQping within %d ms", ms);
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* Debian's layout first (/usr/lib/postgresql/<version>/bin, the
     * highest version), then a source build's, then one in PATH's usual
     * places; postgres is taken from the same directory. */
    char initdb[PATH_MAX], postgres[PATH_MAX + 16];
    const char *const initdb_paths[] = {"/usr/lib/postgresql/*/bin/initdb",
                                        "/usr/local/pgsql/bin/initdb",
                                        "/usr/bin/initdb", NULL};
    if (hs_find_program(initdb_paths, initdb, sizeof initdb) == NULL)
        hs_skip("initdb (postgresql)", "postgresql libpq-dev");
    snprintf(postgres, sizeof postgres, "%.*s/postgres",
             (int)(strrchr(initdb, '/') - initdb), initdb);
    if (access(postgres, X_OK) != 0)
        hs_skip(postgres, "postgresql libpq-dev");

    /* initdb and the start take a few seconds; the watchdog is well
     * inside meson's timeout (meson.build). */
    hs_watchdog_start(100);
    hs_choose_user();
    const char *dir = hs_tmpdir("pg");
    char log[256], data[256];
    snprintf(log, sizeof log, "%s/postgres.log", dir);
    snprintf(data, sizeof data, "%s/data", dir);

    char *init_argv[] = {initdb, "-D", data, "-A", "trust", "-U", "weft",
                         "-E", "UTF8", "--locale=C", "--no-sync", NULL};
    uint64_t t_init = hs_now_ns();
    pid_t init = hs_spawn(init_argv, log, SIGTERM);
    int status = hs_wait_exit(init, 60000);
    if (status != 0) {
        hs_print_log(log);
        hs_fail("initdb: %s %d", status < 0 ? "still running after 60 s"
                                            : "exit status", status);
    }
    printf("initdb: %.2f s\n", (double)(hs_now_ns() - t_init) / 1e9);

    /* 100 + 2 connections and the ping: more than the default 100.
     * Durability off: the database is thrown away. */
    pid_t pid = 0;
    unsigned port = 0;
    for (int attempt = 0;; attempt++) {
        char port_arg[16];
        port = hs_free_port();
        snprintf(port_arg, sizeof port_arg, "%u", port);
        char *argv[] = {postgres, "-D", data, "-p", port_arg,
                        "-h", "127.0.0.1", "-k", (char *)dir,
                        "-c", "max_connections=150",
                        "-c", "shared_buffers=16MB",
                        "-c", "fsync=off",
                        "-c", "synchronous_commit=off",
                        "-c", "full_page_writes=off",
                        "-c", "logging_collector=off", NULL};
        /* SIGINT: fast shutdown (ends the sessions, then exits 0). */
        pid = hs_spawn(argv, log, SIGINT);
        if (hs_wait_ready(pid, port, 30000, log) == 0)
            break;
        if (attempt == 2)
            hs_fail("postgres would not start");
    }
    /* hostaddr: no name lookup; no TLS or GSS negotiation, which would
     * only add round trips to a trust-authenticated local server. */
    snprintf(conninfo, sizeof conninfo,
             "hostaddr=127.0.0.1 port=%u dbname=postgres user=weft "
             "sslmode=disable gssencmode=disable connect_timeout=30",
             port);
    wait_accepting_queries(30000);

    weft_pool *p = hs_pool();
    hs_ticker tk;
    hs_ticker_start(&tk, p);
    uint64_t t0 = hs_now_ns();
    /* The sleepers first, so that they overlap the queries' load. */
    weft_task *ts[SLEEPERS + TASKS];
    for (unsigned i = 0; i < SLEEPERS + TASKS; i++) {
        int e = i < SLEEPERS
                    ? weft_spawn(&ts[i], p, sleeper, NULL, NULL)
                    : weft_spawn(&ts[i], p, querier,
                                 (void *)(uintptr_t)(i - SLEEPERS), NULL);
        if (e != 0)
            hs_fail("weft_spawn: %s", weft_strerror(e));
    }
    for (unsigned i = 0; i < SLEEPERS + TASKS; i++)
        if (weft_sync_wait(ts[i], NULL) != 0)
            hs_fail("weft_sync_wait failed");
    uint64_t run = hs_now_ns() - t0;
    hs_ticker_stop(&tk);
    hs_pool_destroy(p);

    CHECK_EQ(atomic_load(&queries_ok), (long)TASKS * QUERIES);
    CHECK_EQ(atomic_load(&sleeps_ok), SLEEPERS);
    printf("libpq: %d tasks x %d SELECTs, %ld answered right; %d "
           "pg_sleep(1), %ld answered\n", TASKS, QUERIES,
           atomic_load(&queries_ok), SLEEPERS, atomic_load(&sleeps_ok));
    int bad = hs_ticker_report("libpq", &tk, run);

    status = hs_stop(pid);
    if (status != 0) {
        hs_print_log(log);
        fprintf(stderr, "FAIL: postgres exited with status %d\n", status);
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
