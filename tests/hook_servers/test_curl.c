/*
 * test_curl.c — libcurl's easy API (curl_easy_perform), unmodified, in
 * pool tasks over libweft-hook (suite hook_servers).
 *
 * A real nginx (one process, in the foreground, everything it writes in
 * a temporary directory) serves a 2,000-byte file and, under /slow/, a
 * 1,600,000-byte one at `limit_rate 1m` (1 MiB/s: about 1.5 s).  A pool
 * of 2 workers runs 50 tasks that each GET the small file 200 times on
 * one easy handle (one kept-alive connection), and 2 tasks that each
 * download the slow file.  Every body is checked byte for byte.
 *
 * curl_easy_perform waits in poll(2) on its socket and its own wake-up
 * pair (it runs a private multi handle); the hook must park the task
 * there.  The ticker (servers.h) shows that the pool ran on meanwhile;
 * without the hook the two slow downloads would hold both workers for
 * 1.5 s.  URLs use the literal 127.0.0.1, which curl turns into an
 * address without its resolver; CURLOPT_NOSIGNAL keeps it from using
 * signals (alarm) for timeouts, which a multi-threaded program must.
 */
#include <curl/curl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../check.h"
#include "servers.h"

enum {
    TASKS = 50,
    GETS = 200,
    SLOW = 2,
    SMALL_SIZE = 2000,
    BIG_SIZE = 1600000,
};

static char small_url[128], slow_url[128];
static char small[SMALL_SIZE];
static atomic_long gets_ok, slow_ok;

static char big_byte(size_t k)
{
    static const char alphabet[] =
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXY";
    return alphabet[(k + k / 997) % (sizeof alphabet - 1)];
}

/* A body as it arrives: kept whole for the small file, compared on the
 * fly with the pattern for the big one. */
struct body {
    char buf[SMALL_SIZE + 1];
    size_t len;      /* bytes received                       */
    int big;         /* compare with big_byte, keep nothing  */
    size_t mismatch; /* the big body's bytes that differ     */
};

static size_t on_data(char *data, size_t size, size_t n, void *arg)
{
    struct body *b = arg;
    size_t len = size * n;
    if (b->big) {
        for (size_t k = 0; k < len; k++)
            if (data[k] != big_byte(b->len + k))
                b->mismatch++;
    } else {
        /* One byte of room past the file: a longer body shows as such. */
        size_t room = sizeof b->buf - b->len;
        memcpy(b->buf + b->len, data, len < room ? len : room);
    }
    b->len += len;
    return len;
}

static CURL *easy(const char *url, struct body *b)
{
    CURL *h = curl_easy_init();
    if (h == NULL) {
        CHECK(!"curl_easy_init failed");
        return NULL;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    /* "": no proxy, whatever http_proxy says in the environment. */
    curl_easy_setopt(h, CURLOPT_PROXY, "");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    /* A bound on a hang; the watchdog (90 s) reports one anyway. */
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
    return h;
}

/* Whether the transfer ended well with an HTTP 200. */
static int perform_ok(CURL *h, const char *what)
{
    CURLcode rc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (rc != CURLE_OK || code != 200) {
        fprintf(stderr, "%s: %s, HTTP %ld\n", what, curl_easy_strerror(rc),
                code);
        return 0;
    }
    return 1;
}

static void *getter(void *arg)
{
    (void)arg;
    struct body *b = calloc(1, sizeof *b);
    CURL *h = b != NULL ? easy(small_url, b) : NULL;
    if (h == NULL) {
        CHECK(!"no memory for a getter");
        free(b);
        return NULL;
    }
    for (unsigned j = 0; j < GETS; j++) {
        b->len = 0;
        if (!perform_ok(h, "GET small"))
            CHECK(!"GET small failed");
        else if (b->len != SMALL_SIZE || memcmp(b->buf, small, SMALL_SIZE))
            CHECK(!"GET small: wrong body");
        else
            atomic_fetch_add(&gets_ok, 1);
    }
    curl_easy_cleanup(h);
    free(b);
    return NULL;
}

static void *slow_getter(void *arg)
{
    (void)arg;
    struct body *b = calloc(1, sizeof *b);
    CURL *h = b != NULL ? easy(slow_url, b) : NULL;
    if (h == NULL) {
        CHECK(!"no memory for a slow getter");
        free(b);
        return NULL;
    }
    b->big = 1;
    uint64_t t0 = hs_now_ns();
    int ok = perform_ok(h, "GET slow");
    uint64_t took = hs_now_ns() - t0;
    CHECK(ok);
    CHECK_EQ(b->len, BIG_SIZE);
    CHECK_EQ(b->mismatch, 0);
    /* nginx paced it (1,600,000 bytes at 1 MiB/s: 1.5 s), so the task
     * really waited that long in curl's polls. */
    CHECK(took >= HS_MS(1200));
    CHECK(took < HS_MS(20000));
    if (ok && b->len == BIG_SIZE && b->mismatch == 0)
        atomic_fetch_add(&slow_ok, 1);
    printf("slow download: %zu bytes in %.3f s\n", b->len,
           (double)took / 1e9);
    curl_easy_cleanup(h);
    free(b);
    return NULL;
}

/* nginx's configuration: one process in the foreground (no master: it
 * is our child, stopped by SIGTERM), its pid file, logs and temporary
 * directories in dir (so neither root nor /var is needed), keep-alive
 * for the 200 requests of each connection, and the pacing under /slow/:
 * limit_rate alone lets the first second's worth go at once (nginx's
 * budget is in whole seconds), so sendfile_max_chunk cuts the sends to
 * 64 KiB, each followed by its share of the delay. */
static void write_config(const char *dir, unsigned port)
{
    char path[256], conf[2048];
    snprintf(conf, sizeof conf,
             "daemon off;\n"
             "master_process off;\n"
             "worker_processes 1;\n"
             "pid %s/nginx.pid;\n"
             "error_log %s/error.log warn;\n"
             "events { worker_connections 1024; }\n"
             "http {\n"
             "    access_log off;\n"
             "    server_tokens off;\n"
             "    default_type application/octet-stream;\n"
             "    client_body_temp_path %s/client_body;\n"
             "    proxy_temp_path %s/proxy;\n"
             "    fastcgi_temp_path %s/fastcgi;\n"
             "    uwsgi_temp_path %s/uwsgi;\n"
             "    scgi_temp_path %s/scgi;\n"
             "    keepalive_requests 100000;\n"
             "    server {\n"
             "        listen 127.0.0.1:%u;\n"
             "        root %s/html;\n"
             "        location /slow/ {\n"
             "            limit_rate 1m;\n"
             "            sendfile on;\n"
             "            sendfile_max_chunk 64k;\n"
             "        }\n"
             "    }\n"
             "}\n",
             dir, dir, dir, dir, dir, dir, dir, port, dir);
    snprintf(path, sizeof path, "%s/nginx.conf", dir);
    hs_write_file(path, conf, strlen(conf));
}

static void write_files(const char *dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/html", dir);
    if (mkdir(path, 0755) != 0)
        hs_fail("mkdir %s", path);
    snprintf(path, sizeof path, "%s/html/slow", dir);
    if (mkdir(path, 0755) != 0)
        hs_fail("mkdir %s", path);
    for (size_t k = 0; k < SMALL_SIZE; k++)
        small[k] = (char)('a' + (k * 7) % 26);
    snprintf(path, sizeof path, "%s/html/small.txt", dir);
    hs_write_file(path, small, SMALL_SIZE);
    char *big = malloc(BIG_SIZE);
    if (big == NULL)
        hs_fail("no memory");
    for (size_t k = 0; k < BIG_SIZE; k++)
        big[k] = big_byte(k);
    snprintf(path, sizeof path, "%s/html/slow/big.bin", dir);
    hs_write_file(path, big, BIG_SIZE);
    free(big);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    char nginx[PATH_MAX];
    const char *const nginx_paths[] = {"/usr/sbin/nginx", "/usr/bin/nginx",
                                       "/usr/local/nginx/sbin/nginx",
                                       "/usr/local/sbin/nginx", NULL};
    if (hs_find_program(nginx_paths, nginx, sizeof nginx) == NULL)
        hs_skip("nginx", "nginx-light libcurl4-openssl-dev");
    hs_watchdog_start(90);
    hs_choose_user();
    const char *dir = hs_tmpdir("nginx");
    write_files(dir);
    char log[256], prefix[256], conf[256], error_log[256];
    snprintf(log, sizeof log, "%s/nginx.out", dir);
    snprintf(prefix, sizeof prefix, "%s/", dir);
    snprintf(conf, sizeof conf, "%s/nginx.conf", dir);
    snprintf(error_log, sizeof error_log, "%s/error.log", dir);

    /* -e: the log nginx opens before it reads the configuration, which
     * would otherwise be /var/log/nginx/error.log. */
    pid_t pid = 0;
    unsigned port = 0;
    for (int attempt = 0;; attempt++) {
        port = hs_free_port();
        write_config(dir, port);
        char *argv[] = {nginx, "-p", prefix, "-c", conf, "-e", error_log,
                        NULL};
        pid = hs_spawn(argv, log, SIGTERM);
        if (hs_wait_ready(pid, port, 20000, error_log) == 0)
            break;
        hs_print_log(log);
        if (attempt == 2)
            hs_fail("nginx would not start");
    }
    snprintf(small_url, sizeof small_url, "http://127.0.0.1:%u/small.txt",
             port);
    snprintf(slow_url, sizeof slow_url, "http://127.0.0.1:%u/slow/big.bin",
             port);

    /* Once, before any thread uses curl: it is not thread-safe. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        hs_fail("curl_global_init failed");

    weft_pool *p = hs_pool();
    hs_ticker tk;
    hs_ticker_start(&tk, p);
    uint64_t t0 = hs_now_ns();
    /* The slow downloads first, so that they overlap the GETs' load. */
    weft_task *ts[SLOW + TASKS];
    for (unsigned i = 0; i < SLOW + TASKS; i++) {
        int e = weft_spawn(&ts[i], p, i < SLOW ? slow_getter : getter, NULL,
                           NULL);
        if (e != 0)
            hs_fail("weft_spawn: %s", weft_strerror(e));
    }
    for (unsigned i = 0; i < SLOW + TASKS; i++)
        if (weft_sync_wait(ts[i], NULL) != 0)
            hs_fail("weft_sync_wait failed");
    uint64_t run = hs_now_ns() - t0;
    hs_ticker_stop(&tk);
    hs_pool_destroy(p);
    curl_global_cleanup();

    CHECK_EQ(atomic_load(&gets_ok), (long)TASKS * GETS);
    CHECK_EQ(atomic_load(&slow_ok), SLOW);
    printf("curl: %d tasks x %d GETs, %ld answered right; %d slow "
           "downloads, %ld right\n", TASKS, GETS, atomic_load(&gets_ok),
           SLOW, atomic_load(&slow_ok));
    int bad = hs_ticker_report("curl", &tk, run);

    int status = hs_stop(pid);
    if (status != 0) {
        hs_print_log(error_log);
        fprintf(stderr, "FAIL: nginx exited with status %d\n", status);
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
