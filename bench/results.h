/*
 * results.h — what one weft-bench invocation measured, shared by the parts
 * of the runner: weft_bench.c (options, the measuring loop), report.c (the
 * tables on stdout), json.c (--json), plot.c (--plot), machine.c (facts
 * about where it ran) and spawn.c (running a peer or a child).
 *
 * A cell is one workload at one worker count: a run without --sweep has
 * one cell per workload; --sweep T1,T2,... gives each pooled workload one
 * cell per Ti (single-thread workloads still get one).  A cell holds one
 * impl_result per implementation, weft first, then the workload's peers in
 * its order.
 */
#ifndef WEFT_BENCH_RESULTS_H
#define WEFT_BENCH_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "workloads.h"

typedef enum {
    IMPL_OK,      /* measured (so far)                          */
    IMPL_SKIPPED, /* not built, or not found                    */
    IMPL_NA,      /* the peer does not implement this workload  */
    IMPL_FAILED,  /* crashed, bad output or wrong check value   */
} impl_state;

/* Everything measured for one implementation in one cell. */
typedef struct impl_result {
    const char *name;   /* "weft" or a peer name */
    impl_state state;
    char why[160];      /* for SKIPPED and FAILED */
    double *runs;       /* each completed run's value, in run order */
    unsigned count;
    /* The workload's extra figures (bench_workload.extra), count of each,
     * in run order. */
    double *extra_runs[BENCH_MAX_EXTRA];
    /* Filled by results_summarise() when count > 0. */
    double median, min, max;
    double extra_median[BENCH_MAX_EXTRA];
    /* The counted figures per operation (counters.h), count of each, in
     * run order; counted_runs of the runs had them (all or none, unless
     * weft had to run in-process).  A syscalls figure < 0: not counted. */
    double *count_runs[BENCH_NCOUNTS];
    unsigned counted_runs;
    double count_median[BENCH_NCOUNTS];
} impl_result;

typedef struct bench_cell {
    const bench_workload *w;
    bench_params p;
    impl_result *impl;  /* impl[0] is weft */
    size_t nimpl;
} bench_cell;

/* A peer as meson configured it (bench_config.h: BENCH_PEER_TABLE). */
typedef struct peer_info {
    const char *name;    /* program is peers/peer-NAME                   */
    int built;           /* 0: its package was missing at configure time */
    const char *package; /* what to install to get it built              */
    const char *version; /* as detected at configure time, "" if unknown */
} peer_info;

extern const peer_info bench_peer_table[];
extern const size_t bench_peer_count;
const peer_info *bench_find_peer(const char *name);

/* The whole invocation. */
typedef struct bench_run {
    unsigned runs;          /* per implementation and cell */
    bool quick;
    const unsigned *threads;/* the worker counts asked for (--threads or --sweep) */
    size_t nthreads;
    bench_cell *cells;
    size_t ncells;
} bench_run;

/* Sorts nothing in place: fills median/min/max of every OK result. */
void results_summarise(bench_run *run);

/* How many times weft is ahead of impl k of cell c: peer median / weft
 * median, or weft / peer for a higher-is-better workload; < 0 if either
 * side has no figure. */
double results_ratio(const bench_cell *c, size_t k);

/* The speed-up of x over base (two medians of one implementation of
 * workload w at two worker counts): base / x, or x / base for a
 * higher-is-better workload. */
double results_speedup(const bench_workload *w, double base, double x);

/* How many extra figures workload w reports. */
size_t results_extra_count(const bench_workload *w);

/* The cell of workload w at `threads` workers, or NULL. */
const bench_cell *results_find_cell(const bench_run *run,
                                    const bench_workload *w, unsigned threads);

/* Facts about the machine and the build (machine.c). */
typedef struct bench_machine {
    char cpu[128];      /* model name */
    unsigned cpus;      /* online */
    char kernel[128];   /* uname -srm */
    uint64_t mem_bytes;
    char date[32];      /* UTC, ISO 8601 */
    char vendor[32];    /* vendor_id, or "unknown" */
    int family, model;  /* cpu family and model; -1 unknown */
    char meltdown[96];  /* /sys/.../vulnerabilities/meltdown: "Mitigation:
                           PTI" means page-table isolation is on */
    bool syscalls_counted; /* the syscalls column is measured */
    char syscalls_why[160];/* why not, when it is not */
    double line_handoff_ns;/* probe.c: a cache line between two threads;
                              0 if not measured (one CPU) */
    double first_touch_ns; /* probe.c: the first write to a fresh page;
                              0 if not measured */
} bench_machine;

void bench_machine_read(bench_machine *m);

/* probe.c: measures line_handoff_ns and first_touch_ns (some 100 ms). */
void bench_machine_probe(bench_machine *m);

/* report.c: the main table, then (with a sweep) the scaling table. */
void report_print(const bench_run *run, const bench_machine *m);

/* json.c: writes the whole run to path.  0, or -errno (message printed). */
int json_write(const char *path, const bench_run *run, const bench_machine *m);

/* plot.c: whether gnuplot can be run; drawing the chart(s) into path. */
bool plot_available(void);
int plot_write(const char *path, const bench_run *run, const bench_machine *m);

/* spawn.c: runs `prog [extra] WORKLOAD N THREADS` (the peer protocol, see
 * peers/peer.h).  Returns 0 with *out filled (its counts too), 2 if the program has no such
 * workload, -1 with why[] set on any failure. */
int spawn_measure(const char *prog, const char *extra, const bench_workload *w,
                  const bench_params *p, bench_sample *out, char *why,
                  size_t whylen);

/* spawn.c: starts argv[0] with argv, its stdout on a pipe whose read end
 * goes to *out_fd (its stderr is ours).  0, or -1 with why[] set. */
int spawn_piped(char *const argv[], pid_t *pid, int *out_fd, char *why,
                size_t whylen);

/* spawn.c: reads fd to its end, keeping the first len - 1 bytes in buf
 * (NUL-terminated); returns how many were kept. */
size_t read_all(int fd, char *buf, size_t len);

/* spawn.c: waits for pid to end, for at most timeout_ms (< 0: no limit;
 * past it the program is killed).  Returns its exit status, or -1 with
 * why[] set (killed by a signal, timed out). */
int wait_exit(pid_t pid, int timeout_ms, char *why, size_t whylen);

/* spawn.c: the same, also storing the program's resource usage (CPU time
 * in user and kernel mode) in *usage when it exits. */
int wait_exit_usage(pid_t pid, int timeout_ms, struct rusage *usage,
                    char *why, size_t whylen);

/* Three significant digits or so: 2.13, 45.6, 953. */
void fmt_value(char *buf, size_t len, double v);

#endif /* WEFT_BENCH_RESULTS_H */
