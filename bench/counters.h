/*
 * counters.h — what the clock hides: the system calls, page faults and
 * context switches a measurement cost, counted by the kernel.
 *
 * Every measurement (weft's included) runs in a child process: the peer
 * protocol's program, or `weft-bench --child`.  Its counts are the whole
 * child's, start-up included, read when it has been reaped:
 *
 *   - CPU time, minor page faults, voluntary and involuntary context
 *     switches: the rusage wait4 returns for the child (every thread of it,
 *     the ones that ended too);
 *   - system calls: a perf counter on the tracepoint raw_syscalls:sys_enter
 *     that the runner opens on itself with `inherit` before it starts any
 *     child, so every child process and thread gets its own copy, which
 *     the kernel adds back into the runner's when that task exits; the
 *     child's calls are the rise of that counter over the child's life less
 *     the rise of a second, not inherited, counter on the runner's own
 *     thread (its spawn, its reads of the pipe, its wait4).  Where perf
 *     cannot open the tracepoint (no tracefs, perf_event_paranoid, a
 *     container), the system calls are n/a and say why.
 *
 * A server workload's server is a child too, but its client is another
 * child: its system calls are counted by counters opened on each of the
 * server's threads once it is listening (inherited by the threads it makes
 * later), so the client's calls stay out.
 *
 * The per-operation figures divide by the workload's operation count
 * (bench_workload.ops, else N); the default sizes keep a process's
 * start-up (some hundreds of calls and faults) under 0.01 per operation on
 * the rows this matters for.
 */
#ifndef WEFT_BENCH_COUNTERS_H
#define WEFT_BENCH_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

/* The counted figures, in this order everywhere (tables, JSON). */
enum {
    BENCH_COUNT_CPU,      /* user + system CPU time, ns */
    BENCH_COUNT_MINFLT,   /* minor page faults */
    BENCH_COUNT_NVCSW,    /* voluntary context switches */
    BENCH_COUNT_NIVCSW,   /* involuntary context switches */
    BENCH_COUNT_SYSCALLS, /* system calls; < 0: not counted */
    BENCH_NCOUNTS
};

typedef struct bench_counts {
    double v[BENCH_NCOUNTS]; /* totals of one measurement */
} bench_counts;

/* Names and units of the per-operation columns, for the table and JSON. */
extern const char *const bench_count_names[BENCH_NCOUNTS];

/* Opens the runner's syscall counters; call before the first child.  On
 * failure the syscall figures are n/a and bench_counters_why says why. */
void bench_counters_open(void);
bool bench_counters_syscalls(void);
const char *bench_counters_why(void);

/* A reading of the runner's counters, taken before a child is started. */
typedef struct bench_count_mark {
    uint64_t inherited, self;
} bench_count_mark;

void bench_counters_mark(bench_count_mark *m);

/* The totals of a child that has been reaped: its rusage, and its system
 * calls since m (taken before it was started). */
void bench_counters_child(const bench_count_mark *m, const struct rusage *ru,
                          bench_counts *out);

/* Counters on every thread of a running process (a server). */
typedef struct bench_count_attach {
    int fds[256];
    int nfds;
} bench_count_attach;

/* Opens them (nothing if syscalls cannot be counted); 0, or -1 when the
 * process has more threads than fit (its syscalls are then n/a). */
int bench_counters_attach(pid_t pid, bench_count_attach *a);

/* After the process has been reaped: its rusage and the attached counts
 * into out; closes the counters. */
void bench_counters_detach(bench_count_attach *a, const struct rusage *ru,
                           bench_counts *out);

#endif /* WEFT_BENCH_COUNTERS_H */
