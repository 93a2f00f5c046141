/*
 * wl_http.c — HTTP requests per second through a server on loopback, at
 * 100 connections (http) and 1,000 (http-1k), with the latency's median
 * and 99th percentile and the server's CPU time per request.
 *
 * Each implementation is a server program (server.h): weft's is
 * examples/http_server.c (one task per connection, http-parser), built
 * beside weft-bench as http/weft-http-server; Go's is peers/go/http
 * (net/http), peers/peer-go-http; nginx's is nginx itself with the fixed
 * `return 200` configuration bench/http/nginx.conf, run by
 * peers/foreign_server.c as peers/peer-nginx-http.  THREADS is the pool's
 * size, GOMAXPROCS, nginx's worker_processes.
 *
 * One measurement: start the server, run `wrk -t1 -cN -dD --timeout 5s -s
 * http/report.lua http://127.0.0.1:PORT/plaintext` (N connections, one
 * client thread: the client shares the machine's CPUs with the server),
 * stop the server.  D is 5 s, or 1 s when N < 100 (--quick).  Reported:
 * requests/s (wrk's count over its duration), wrk's p50 and p99 latency in
 * us, and the server's CPU time (user + kernel, its whole life) per
 * request in us: with the client on the same two CPUs the rate is shared
 * between them, and what the server costs per request is the steadier
 * figure.  Check: requests that failed (socket errors, timeouts, non-2xx
 * statuses), which must be 0.  Without wrk installed every row is n/a.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "bench_config.h"
#include "results.h"
#include "server.h"

static int run_http(const char *server, const char *bench_dir,
                    const bench_params *p, bench_sample *out, char *why,
                    size_t whylen)
{
    char c_arg[32], d_arg[16], lua[PATH_MAX + 32], url[64];
    char report[4096], stop_why[160];
    char *argv[] = { BENCH_WRK, "-t1", c_arg, d_arg, "--timeout", "5s",
                     "-s", lua, url, NULL };
    bench_server srv;
    uint64_t requests, duration_us, errors;
    double p50, p99, cpu;

    if (BENCH_WRK[0] == '\0') {
        snprintf(why, whylen, "install wrk");
        return 2;
    }
    if (bench_server_start(server, p->threads, &srv, why, whylen) != 0)
        return -1;
    snprintf(c_arg, sizeof c_arg, "-c%" PRIu64, p->n);
    snprintf(d_arg, sizeof d_arg, "-d%ds", p->n < 100 ? 1 : 5);
    snprintf(lua, sizeof lua, "%s/http/report.lua", bench_dir);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/plaintext", srv.port);
    int measured = bench_run_client(argv, report, sizeof report, why, whylen);
    int stopped = bench_server_stop(&srv, &cpu, &out->counts, stop_why,
                                    sizeof stop_why);
    if (measured != 0)
        return -1;
    if (stopped != 0) {
        snprintf(why, whylen, "%s", stop_why);
        return -1;
    }
    const char *line = strstr(report, "requests=");
    if (line == NULL ||
        sscanf(line, "requests=%" SCNu64 " duration_us=%" SCNu64
               " p50_us=%lf p99_us=%lf errors=%" SCNu64, &requests,
               &duration_us, &p50, &p99, &errors) != 5 ||
        duration_us == 0 || requests == 0) {
        snprintf(why, whylen, "wrk: unreadable report '%.100s'", report);
        return -1;
    }
    out->value = (double)requests * 1e6 / (double)duration_us;
    out->check = errors;
    out->counted = true;
    out->ops = (double)requests;
    out->extra[0] = p50;
    out->extra[1] = p99;
    out->extra[2] = cpu * 1e6 / (double)requests;
    return 0;
}

static uint64_t http_expect(const bench_params *p)
{
    (void)p;
    return 0; /* failed requests */
}

static const char *const http_peers[] = { "go", "nginx", NULL };

static const bench_extra http_extra[] = {
    { "p50", "us" },
    { "p99", "us" },
    { "cpu", "us/req" },
    { NULL, NULL },
};

#if BENCH_HAVE_HTTP_PARSER
#define WEFT_HTTP_SERVER "http/weft-http-server"
#else
#define WEFT_HTTP_SERVER NULL
#endif

const bench_workload bench_wl_http = {
    .name = "http",
    .desc = "HTTP GET /plaintext on loopback: wrk -t1, N keep-alive "
            "connections, 5 s",
    .unit = "req/s",
    .default_n = 100,
    .quick_n = 10,
    .pooled = true,
    .expect = http_expect,
    .peers = http_peers,
    .higher_is_better = true,
    .extra = http_extra,
    .run_server = run_http,
    .weft_server = WEFT_HTTP_SERVER,
    .weft_missing = "install libhttp-parser-dev",
    .server_suffix = "http",
};

const bench_workload bench_wl_http_1k = {
    .name = "http-1k",
    .desc = "the same at 1,000 connections",
    .unit = "req/s",
    .default_n = 1000,
    .quick_n = 10,
    .pooled = true,
    .expect = http_expect,
    .peers = http_peers,
    .higher_is_better = true,
    .extra = http_extra,
    .run_server = run_http,
    .weft_server = WEFT_HTTP_SERVER,
    .weft_missing = "install libhttp-parser-dev",
    .server_suffix = "http",
};
