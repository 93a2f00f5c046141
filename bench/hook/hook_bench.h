/*
 * hook_bench.h — weft-hook-bench (bench/hook/): what its two halves share.
 *
 * The driver (driver.c, servers.c; executable weft-hook-bench) starts the
 * server, runs each mode in a child process of its own and prints the
 * table.  A child runs one mode of one workload (work.c) and prints one
 * line of figures.  work.c is built into both executables: into
 * weft-hook-bench, linked with the shared libweft alone (modes naive,
 * naive-nomon, blocking, pthreads), and into weft-hook-bench-hooked, the
 * same code linked with libweft-hook too (mode hooked).  Hooking is
 * decided at link time, so the hooked mode needs an executable of its
 * own; the driver finds it beside its own.
 *
 * The child protocol (internal; the driver and the children come from one
 * build):
 *
 *   PROG --child MODE --db redis|pq --port P --tasks N --workers W
 *        --seconds S --server-pid PID
 *
 * prints one line on stdout,
 *
 *   result commands=N seconds=S cpu_s=S nvcsw=N nivcsw=N ...
 *
 * (key=value pairs: hb_result below), and exits 0; anything else is a
 * failed run, and its stderr says why.
 */
#ifndef WEFT_BENCH_HOOK_BENCH_H
#define WEFT_BENCH_HOOK_BENCH_H

#include <stddef.h>
#include <stdint.h>

/* The modes, in the order they run and are shown. */
typedef enum hb_mode {
    HB_NAIVE,    /* weft tasks calling the client library as is          */
    HB_NAIVE_NOMON, /* the same on a pool without its monitor: no spare
                       threads cover the blocked workers                 */
    HB_HOOKED,   /* the same code, linked with libweft-hook              */
    HB_BLOCKING, /* each client call wrapped in weft_blocking            */
    HB_PTHREADS, /* one plain pthread per connection                     */
    HB_MODES
} hb_mode;

extern const char *const hb_mode_names[HB_MODES];

/* The workloads: the client library and its server. */
typedef enum hb_db {
    HB_REDIS, /* hiredis, GET of a 16-byte value, redis-server           */
    HB_PQ,    /* libpq, SELECT 1, PostgreSQL                             */
    HB_DBS
} hb_db;

extern const char *const hb_db_names[HB_DBS];

/* The key and value the redis workload reads (the child of each mode
 * SETs it first, on a connection of its main thread). */
#define HB_REDIS_KEY "weft-hook-bench:key"
#define HB_REDIS_VALUE "0123456789abcdef"

/* A child's figures, as its result line carries them. */
typedef struct hb_result {
    uint64_t commands;      /* completed and checked in the window      */
    double seconds;         /* the window: go to stop                   */
    double cpu_s;           /* getrusage(RUSAGE_SELF) user + sys, window */
    double server_cpu_s;    /* the server's (and its children's), window;
                               < 0: could not be read                   */
    uint64_t nvcsw, nivcsw; /* getrusage(RUSAGE_SELF), window           */
    double ticker_max_ms;   /* worst lateness of a 1 ms sleep           */
    double ticker_p99_ms;
    double ticker_p50_ms;
    uint64_t ticks;         /* wake-ups of the ticker in the window     */
    uint64_t errors;        /* failed or wrong commands, failed connects */
    uint64_t threads;       /* the child's threads at the end of the window */
    uint64_t spares;        /* weft pool: spare threads started (stuck
                               workers covered); 0 outside weft modes   */
    uint64_t stalls;        /* weft pool: stuck workers found            */
    char hook[96];          /* where read() resolves: the file's name    */
} hb_result;

/* work.c: the child's main (argv[0] is "--child"). */
int hb_child_main(int argc, char **argv);

/* Monotonic time in ns. */
uint64_t hb_now_ns(void);

#endif /* WEFT_BENCH_HOOK_BENCH_H */
