/*
 * workloads.h — what a bench workload is, and the registry of them.
 *
 * A workload is one question asked of every implementation alike ("how many
 * ns does a one-way switch cost?").  The runner (weft_bench.c) knows nothing
 * about any particular workload: it walks bench_workloads[], calls the weft
 * implementation in-process, runs each named peer program with the same
 * parameters, checks every answer with the workload's expect(), and tabulates.
 *
 * Adding a workload: write wl_NAME.c defining one `const bench_workload
 * bench_wl_NAME`, declare it below, add it to bench_workloads[] in
 * workloads.c and to the sources in meson.build, and teach the peers that can
 * do it the same NAME (a peer that cannot exits 2 and shows as "n/a").
 *
 * A server workload (echo, http, kv) is measured differently: every implementation,
 * weft included, is a server program, and the workload's run_server drives
 * one of them with a load generator.  weft's program is built beside
 * weft-bench (weft_server); a peer's is peers/peer-NAME-WORKLOAD, and it is
 * taken as built when the peer NAME is.
 */
#ifndef WEFT_BENCH_WORKLOADS_H
#define WEFT_BENCH_WORKLOADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counters.h"

/* What one measurement is asked to do; the same for weft and the peers. */
typedef struct bench_params {
    uint64_t n;         /* size: round trips, cycles, tasks... (per workload) */
    unsigned threads;   /* worker threads: --threads for pooled workloads,
                           1 for the single-thread ones                     */
} bench_params;

/* Further figures a workload may report with each measurement. */
#define BENCH_MAX_EXTRA 4

typedef struct bench_extra {
    const char *name;   /* e.g. "p99"; no spaces                             */
    const char *unit;   /* e.g. "us"                                         */
} bench_extra;

/* What one measurement reports; the same fields a peer prints. */
typedef struct bench_sample {
    double value;       /* in the workload's unit (e.g. ns per switch)       */
    uint64_t check;     /* workload-defined; must equal expect(params)       */
    double extra[BENCH_MAX_EXTRA]; /* the workload's extra figures, in order */
    /* Set by the runner, not by the workload: what the measuring process
     * cost the kernel's counters (counters.h), when counted is true. */
    bench_counts counts;
    bool counted;
    /* The operations it made, when the workload knows them only after the
     * run (a server's requests); 0: bench_workload.ops. */
    double ops;
} bench_sample;

typedef struct bench_workload {
    const char *name;       /* for --only and the peer command line; no spaces */
    const char *desc;       /* one line for --list                             */
    const char *unit;       /* of bench_sample.value, e.g. "ns/switch"         */
    uint64_t default_n;     /* the size of a full run                          */
    uint64_t quick_n;       /* the --quick size; 0 = default_n / 100           */
    bool pooled;            /* runs on --threads workers (else on 1 thread)    */
    /*
     * The weft implementation: one measurement of size p->n.  It times
     * itself (bench_now_ns() around the loop, setup outside) and fills *out.
     * Returns 0, or a negative errno after printing what failed to stderr.
     */
    int (*run_weft)(const bench_params *p, bench_sample *out);
    /* The check value a correct run of size p->n must report. */
    uint64_t (*expect)(const bench_params *p);
    /* Peer names (program "peer-NAME"), NULL-terminated, in table order. */
    const char *const *peers;
    /*
     * Run each weft measurement in a fresh process (weft-bench --child), as
     * the peers are: for figures that what earlier workloads left behind in
     * this process (warm stack pools, grown heaps) would distort, i.e.
     * memory.
     */
    bool fresh_process;
    /*
     * Measured as another row's peer (peer-weft-cpp runs it through
     * weft-bench --child): not a row of its own unless --only names it.
     */
    bool as_peer;
    /* More of value is better (a rate such as msgs/s): the ratio column is
     * then weft / peer, so that above 1 still means weft is ahead. */
    bool higher_is_better;
    /* Further figures of each measurement (shown as medians beside the
     * ratio, and in --json), at most BENCH_MAX_EXTRA; NULL-name terminated,
     * or NULL for none. */
    const bench_extra *extra;
    /*
     * A server workload (run_weft is then NULL): one measurement of the
     * server program `prog`.  bench_dir is weft-bench's own directory (for
     * the workload's client program).  Returns 0 with *out filled, -1
     * with why[] set, or 2 when the client program it drives is not
     * installed (the row is n/a; why[] names the package).
     */
    int (*run_server)(const char *prog, const char *bench_dir,
                      const bench_params *p, bench_sample *out, char *why,
                      size_t whylen);
    /* weft's server program, relative to bench_dir, or NULL when it was not
     * built (weft_missing says why). */
    const char *weft_server;
    const char *weft_missing;
    /* At most this many runs per implementation (0: --runs): for a
     * workload whose one run is itself many rounds, and long (soak). */
    unsigned max_runs;
    /* A peer's server program is peers/peer-NAME-SUFFIX: SUFFIX is this,
     * or the workload's name when NULL (workloads that differ only in the
     * client's load, e.g. http and http-1k, share one program). */
    const char *server_suffix;
    /* How many operations a measurement of size p makes, for the counted
     * figures per operation (counters.h); NULL: N.  A server workload's
     * are its check value (the messages or requests served). */
    uint64_t (*ops)(const bench_params *p);
    /* A pooled workload whose value is no speed (idle's CPU time): a
     * --sweep still measures it at each worker count (main table, --json),
     * but it has no speed-up row in the scaling table and no panel in the
     * plot's scaling curves. */
    bool no_scaling;
} bench_workload;

extern const bench_workload bench_wl_switch;
extern const bench_workload bench_wl_switch_fp;
extern const bench_workload bench_wl_create;
extern const bench_workload bench_wl_spawn_join;
extern const bench_workload bench_wl_skynet;
extern const bench_workload bench_wl_fib;
/* skynet and fib with the C++ layer (wl_cpp.cc), where a C++ compiler was
 * found (BENCH_HAVE_CXX). */
extern const bench_workload bench_wl_skynet_cpp;
extern const bench_workload bench_wl_fib_cpp;
extern const bench_workload bench_wl_yield;
extern const bench_workload bench_wl_yield_fp;
extern const bench_workload bench_wl_ping_pong;
extern const bench_workload bench_wl_ping_pong_fp;
extern const bench_workload bench_wl_sync_wait;
extern const bench_workload bench_wl_timeout;
extern const bench_workload bench_wl_mutex;
extern const bench_workload bench_wl_sleepers;
extern const bench_workload bench_wl_sleep;
extern const bench_workload bench_wl_latency_yield;
extern const bench_workload bench_wl_latency_cpu;
extern const bench_workload bench_wl_latency_read;
extern const bench_workload bench_wl_idle;
extern const bench_workload bench_wl_memory;
extern const bench_workload bench_wl_memory_1m;
extern const bench_workload bench_wl_soak;
extern const bench_workload bench_wl_echo;
extern const bench_workload bench_wl_echo_borrowed;

/* The echo workloads' shared parts (wl_echo.c): one measurement of a
 * server program, its check value, its extra figures. */
struct bench_sample;
int bench_echo_run(const char *server, const char *bench_dir,
                   const bench_params *p, bench_sample *out, char *why,
                   size_t whylen);
uint64_t bench_echo_expect(const bench_params *p);
extern const bench_extra bench_echo_extra[];
extern const bench_workload bench_wl_http;
extern const bench_workload bench_wl_http_1k;
extern const bench_workload bench_wl_kv;
extern const bench_workload bench_wl_kv_p16;

/* Every workload, in --list and default run order. */
extern const bench_workload *const bench_workloads[];
extern const size_t bench_workload_count;

#endif /* WEFT_BENCH_WORKLOADS_H */
