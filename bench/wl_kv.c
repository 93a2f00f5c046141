/*
 * wl_kv.c — Redis-protocol requests per second through a key-value server
 * on loopback: redis-benchmark's SET and GET tests at -c 50, one request
 * at a time per connection (kv) and 16 pipelined (kv-p16), with the
 * latency's median and 99th percentile and the server's CPU time per
 * request.
 *
 * Each implementation is a server program (server.h): weft's is
 * examples/kv_server.c (one task per connection, 64 weft_mutex shards),
 * built beside weft-bench as kv/weft-kv-server; Redis's is redis-server
 * with persistence off (--save '' --appendonly no) on a free port, run by
 * peers/foreign_server.c as peers/peer-redis-kv.  THREADS is the pool's
 * size; Redis executes commands on one thread whatever it is.
 *
 * One measurement: start the server, run `redis-benchmark -p PORT -t
 * set,get -c 50 -n N -P P -r 100000 --csv` (N requests per test, random
 * keys out of 100,000, 3-byte values), stop the server.  Reported:
 * requests/s over both tests (2N over the sum of each test's N / rate),
 * the larger of the two tests' p50 and of their p99, in us, and the
 * server's CPU time (user + kernel, its whole life) per request, in us.
 * redis-benchmark exits non-zero on any error reply.  Check: requests
 * completed, 2N (one line per test).  Without redis-benchmark installed
 * every row is n/a.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bench_config.h"
#include "results.h"
#include "server.h"

static int run_kv(const char *server, const bench_params *p,
                  const char *pipeline, bench_sample *out, char *why,
                  size_t whylen)
{
    char port_arg[16], n_arg[32], report[4096], stop_why[160];
    char *argv[] = { BENCH_REDIS_BENCHMARK, "-p", port_arg, "-t", "set,get",
                     "-c", "50", "-n", n_arg, "-P", (char *)pipeline,
                     "-r", "100000", "--csv", NULL };
    bench_server srv;
    double cpu;

    if (BENCH_REDIS_BENCHMARK[0] == '\0') {
        snprintf(why, whylen, "install redis-tools");
        return 2;
    }
    if (bench_server_start(server, p->threads, &srv, why, whylen) != 0)
        return -1;
    snprintf(port_arg, sizeof port_arg, "%u", srv.port);
    snprintf(n_arg, sizeof n_arg, "%" PRIu64, p->n);
    int measured = bench_run_client(argv, report, sizeof report, why, whylen);
    int stopped = bench_server_stop(&srv, &cpu, &out->counts, stop_why,
                                    sizeof stop_why);
    if (measured != 0)
        return -1;
    if (stopped != 0) {
        snprintf(why, whylen, "%s", stop_why);
        return -1;
    }
    /* "TEST","rps","avg","min","p50","p95","p99","max" (ms), per test. */
    double seconds = 0, p50 = 0, p99 = 0;
    unsigned tests = 0;
    for (const char *line = report; line != NULL && *line != '\0';) {
        char name[16];
        double rps, avg, min, l50, l95, l99;
        if (sscanf(line, "\"%15[A-Z]\",\"%lf\",\"%lf\",\"%lf\",\"%lf\",\"%lf\","
                   "\"%lf\"", name, &rps, &avg, &min, &l50, &l95, &l99) == 7 &&
            rps > 0) {
            tests++;
            seconds += (double)p->n / rps;
            p50 = l50 * 1e3 > p50 ? l50 * 1e3 : p50;
            p99 = l99 * 1e3 > p99 ? l99 * 1e3 : p99;
        }
        line = strchr(line, '\n');
        line = line != NULL ? line + 1 : NULL;
    }
    if (tests == 0) {
        snprintf(why, whylen, "redis-benchmark: unreadable report '%.100s'",
                 report);
        return -1;
    }
    out->value = (double)(tests * p->n) / seconds;
    out->check = tests * p->n;
    out->counted = true;
    out->ops = (double)(tests * p->n);
    out->extra[0] = p50;
    out->extra[1] = p99;
    out->extra[2] = cpu * 1e6 / (double)(tests * p->n);
    return 0;
}

static int run_kv_p1(const char *server, const char *bench_dir,
                     const bench_params *p, bench_sample *out, char *why,
                     size_t whylen)
{
    (void)bench_dir;
    return run_kv(server, p, "1", out, why, whylen);
}

static int run_kv_p16(const char *server, const char *bench_dir,
                      const bench_params *p, bench_sample *out, char *why,
                      size_t whylen)
{
    (void)bench_dir;
    return run_kv(server, p, "16", out, why, whylen);
}

static uint64_t kv_expect(const bench_params *p)
{
    return 2 * p->n; /* SET and GET */
}

static const char *const kv_peers[] = { "redis", NULL };

static const bench_extra kv_extra[] = {
    { "p50", "us" },
    { "p99", "us" },
    { "cpu", "us/req" },
    { NULL, NULL },
};

const bench_workload bench_wl_kv = {
    .name = "kv",
    .desc = "Redis protocol on loopback: redis-benchmark SET and GET, "
            "N requests each, 50 connections, no pipelining",
    .unit = "req/s",
    .default_n = 500000,
    .quick_n = 5000,
    .pooled = true,
    .expect = kv_expect,
    .peers = kv_peers,
    .higher_is_better = true,
    .extra = kv_extra,
    .run_server = run_kv_p1,
    .weft_server = "kv/weft-kv-server",
    .server_suffix = "kv",
};

const bench_workload bench_wl_kv_p16 = {
    .name = "kv-p16",
    .desc = "the same, 16 requests pipelined per connection (-P 16)",
    .unit = "req/s",
    .default_n = 2000000,
    .quick_n = 20000,
    .pooled = true,
    .expect = kv_expect,
    .peers = kv_peers,
    .higher_is_better = true,
    .extra = kv_extra,
    .run_server = run_kv_p16,
    .weft_server = "kv/weft-kv-server",
    .server_suffix = "kv",
};
