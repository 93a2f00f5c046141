/*
 * weft_bench.c — weft-bench: runs the workloads on weft and on its peers and
 * prints one table.
 *
 *   weft-bench [--list] [--only NAME[,NAME...]] [--runs R] [--quick]
 *              [--size N] [--threads T | --sweep T1,T2,...]
 *              [--json FILE] [--plot FILE.svg] [--peer-dir DIR]
 *
 * How a run goes.  The selected workloads (bench/workloads.h) become cells:
 * one per workload, or, with --sweep, one per worker count for each pooled
 * workload.  For each cell, for run j = 1..R: one weft measurement (the
 * workload's run_weft, in a fresh child process `weft-bench --child
 * WORKLOAD N T`), then one measurement of each of its peers (a separate
 * program), so that every implementation is measured alike, start-up
 * included, and the kernel counts each one's system calls, page faults and
 * context switches apart (counters.h).  The
 * implementations are interleaved run by run rather than measured in blocks,
 * so a slow drift of the machine (frequency, a noisy neighbour on a VM) hits
 * every implementation alike instead of biasing whichever ran last.  Each
 * measurement's check value is compared with the workload's expect(); a
 * wrong answer is a failure, never a number in the table.  The table gives,
 * per implementation, the median and the min-max of its R values and the
 * ratio: peer median / weft median, or weft / peer for a rate (> 1: weft
 * is faster, or smaller).
 *
 * Peers.  A peer is a small program `peer-NAME` built beside this one, in
 * the `peers/` directory next to the weft-bench executable (found through
 * /proc/self/exe; --peer-dir overrides).  It is built only when its package
 * is installed; meson writes which peers it built, the package each missing
 * one needs and each one's version into bench_config.h.  The protocol is
 * bench/peers/peer.h's (spawn.c runs it).
 *
 * Sizes and runs.  A full run uses each workload's default_n and R = 5 (the
 * minimum: fewer runs give a median that one outlier can move).  --quick
 * (used by the test suite to check that every implementation gives correct
 * answers, not to measure) runs each workload's quick size (1/100 of the
 * full one unless the workload says otherwise, e.g. fib(20) for fib(30))
 * once; --size overrides N for every selected workload.
 *
 * Threads.  The pooled workloads (spawn-join, skynet, fib, yield, ping-pong,
 * sync-wait, echo) run on --threads T workers (default 2), or once at each
 * count of --sweep: weft creates its pool with T threads outside the timed
 * region, and each peer gets T as its THREADS argument.  The single-thread
 * workloads (switch, create, memory) always get 1, once.
 *
 * Servers.  A server workload (echo, http, kv...) has no in-process weft
 * measurement: weft's server program (built beside weft-bench, when it
 * can be) and each peer's (peers/peer-NAME-SUFFIX, SUFFIX the workload's
 * server_suffix or name) are run alike by the workload's run_server,
 * interleaved run by run as above; a run_server whose client program is
 * not installed makes the row n/a, naming the package.  Its unit is a
 * rate (more is better), so its ratio is weft / peer.
 *
 * Output.  Progress goes to stderr ("[i/N] WORKLOAD T=t run j/R: ..."), the
 * tables to stdout (report.c), so `weft-bench > table.txt` keeps only the
 * tables.  --json writes every run's raw figures with the machine, compiler
 * and versions (json.c; schema in bench/README.md); --plot draws the ratio
 * chart and, with a sweep, the scaling curves (plot.c, needs gnuplot).
 * Exit status: 0; 1 if any measurement failed or gave a wrong check value
 * (the tables are printed anyway) or a --json/--plot file could not be
 * written; 2 on a bad command line.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2, O_CLOEXEC */
#endif
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <weft/error.h>

#include "bench_config.h"
#include "peers/peer.h"
#include "results.h"

#define MIN_RUNS 5
#define DEFAULT_RUNS 5
#define QUICK_DIVISOR 100
#define DEFAULT_THREADS 2
#define MAX_THREADS 1024 /* weft_pool_create's limit */
#define MAX_SWEEP 16

typedef struct options {
    bool list;
    bool quick;
    unsigned runs;          /* 0 = not given */
    uint64_t size;          /* 0 = not given */
    unsigned threads[MAX_SWEEP]; /* --threads T (one) or --sweep (several) */
    size_t nthreads;
    bool threads_given, sweep_given;
    const char *only;       /* comma-separated names, NULL = all */
    const char *peer_dir;   /* NULL = <dir of /proc/self/exe>/peers */
    const char *json;       /* --json FILE */
    const char *plot;       /* --plot FILE.svg */
} options;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: weft-bench [options]\n"
            "  --list             list the workloads and their peers, then exit\n"
            "  --only NAME[,...]  run only these workloads, in this order\n"
            "  --runs R           runs per implementation (default %d, at least %d)\n"
            "  --quick            small sizes (mostly 1/%d), 1 run: a correctness check\n"
            "  --size N           use N instead of each workload's size\n"
            "  --threads T        worker threads for the pooled workloads (default %d)\n"
            "  --sweep T1,T2,...  run the pooled workloads at each worker count and\n"
            "                     add a scaling table (e.g. --sweep 1,2,4,8,16)\n"
            "  --json FILE        write every run's figures, the machine and the\n"
            "                     versions to FILE (schema: bench/README.md)\n"
            "  --plot FILE.svg    draw the ratio chart (and scaling curves) with\n"
            "                     gnuplot (Debian package gnuplot-nox)\n"
            "  --peer-dir DIR     where the peer-* programs are (default: peers/\n"
            "                     beside this executable)\n"
            "  --help             this text\n"
            "The tables go to stdout, progress to stderr.  Ratio = peer/weft\n"
            "(weft/peer for rates such as msgs/s): above 1 means weft is faster\n"
            "(or, for memory, smaller).\n",
            DEFAULT_RUNS, MIN_RUNS, QUICK_DIVISOR, DEFAULT_THREADS);
}

static void die_usage(const char *fmt, ...)
{
    va_list ap;

    fputs("weft-bench: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n(weft-bench --help for usage)\n", stderr);
    exit(2);
}

/* Unsigned decimal with no sign, no junk and no overflow, else usage. */
static uint64_t parse_u64(const char *opt, const char *s)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (s[0] == '\0' || s[0] == '-' || *end != '\0' || errno != 0 || v == 0)
        die_usage("%s wants a positive integer, not '%s'", opt, s);
    return (uint64_t)v;
}

static unsigned parse_threads(const char *opt, const char *s)
{
    uint64_t t = parse_u64(opt, s);

    if (t > MAX_THREADS)
        die_usage("%s %s: at most %d workers", opt, s, MAX_THREADS);
    return (unsigned)t;
}

/* "1,2,4,8": distinct worker counts, in the order given. */
static void parse_sweep(const char *v, options *o)
{
    char item[32];

    o->nthreads = 0;
    for (const char *p = v; *p != '\0';) {
        size_t len = strcspn(p, ",");
        unsigned t;

        if (len == 0 || len >= sizeof item)
            die_usage("--sweep '%s': a comma-separated list of worker counts", v);
        memcpy(item, p, len);
        item[len] = '\0';
        t = parse_threads("--sweep", item);
        for (size_t k = 0; k < o->nthreads; k++)
            if (o->threads[k] == t)
                die_usage("--sweep '%s': %u twice", v, t);
        if (o->nthreads == MAX_SWEEP)
            die_usage("--sweep '%s': at most %d worker counts", v, MAX_SWEEP);
        o->threads[o->nthreads++] = t;
        p += len;
        if (*p == ',' && *++p == '\0')
            die_usage("--sweep '%s': trailing comma", v);
    }
    if (o->nthreads == 0)
        die_usage("--sweep needs at least one worker count");
}

/*
 * Accepts "--opt VALUE" and "--opt=VALUE".  Returns the value and advances
 * *i past it when argv[*i] is this option, NULL when it is another one.
 */
static const char *option_value(int argc, char **argv, int *i, const char *opt)
{
    size_t len = strlen(opt);
    const char *a = argv[*i];

    if (strncmp(a, opt, len) != 0)
        return NULL;
    if (a[len] == '=')
        return a + len + 1;
    if (a[len] != '\0')
        return NULL;
    if (*i + 1 >= argc)
        die_usage("%s needs a value", opt);
    return argv[++*i];
}

static void parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->threads[0] = DEFAULT_THREADS;
    o->nthreads = 1;
    for (int i = 1; i < argc; i++) {
        const char *v;

        if (strcmp(argv[i], "--list") == 0) {
            o->list = true;
        } else if (strcmp(argv[i], "--quick") == 0) {
            o->quick = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if ((v = option_value(argc, argv, &i, "--only")) != NULL) {
            o->only = v;
        } else if ((v = option_value(argc, argv, &i, "--runs")) != NULL) {
            uint64_t r = parse_u64("--runs", v);
            if (r > 1000)
                die_usage("--runs %s: at most 1000", v);
            o->runs = (unsigned)r;
        } else if ((v = option_value(argc, argv, &i, "--size")) != NULL) {
            o->size = parse_u64("--size", v);
        } else if ((v = option_value(argc, argv, &i, "--threads")) != NULL) {
            o->threads[0] = parse_threads("--threads", v);
            o->nthreads = 1;
            o->threads_given = true;
        } else if ((v = option_value(argc, argv, &i, "--sweep")) != NULL) {
            parse_sweep(v, o);
            o->sweep_given = true;
        } else if ((v = option_value(argc, argv, &i, "--json")) != NULL) {
            o->json = v;
        } else if ((v = option_value(argc, argv, &i, "--plot")) != NULL) {
            o->plot = v;
        } else if ((v = option_value(argc, argv, &i, "--peer-dir")) != NULL) {
            o->peer_dir = v;
        } else {
            die_usage("unknown argument '%s'", argv[i]);
        }
    }
    if (o->threads_given && o->sweep_given)
        die_usage("--threads and --sweep exclude each other (--sweep T is one count)");
    /* A median of fewer than 5 values is one outlier away from wrong; only a
     * correctness check (--quick) may run fewer. */
    if (o->runs != 0 && o->runs < MIN_RUNS && !o->quick)
        die_usage("--runs %u: at least %d (or add --quick for a check run)",
                  o->runs, MIN_RUNS);
    if (o->runs == 0)
        o->runs = o->quick ? 1 : DEFAULT_RUNS;
    /* Better now than after minutes of measuring. */
    if (o->plot != NULL && !plot_available())
        die_usage("--plot needs gnuplot, which is not on PATH "
                  "(Debian: apt-get install gnuplot-nox)");
}

static const bench_workload *find_workload(const char *name, size_t len)
{
    for (size_t i = 0; i < bench_workload_count; i++) {
        const char *w = bench_workloads[i]->name;
        if (strlen(w) == len && strncmp(w, name, len) == 0)
            return bench_workloads[i];
    }
    return NULL;
}

/*
 * Fills sel[] with the workloads --only names (in its order, each once), or
 * with all of them but those measured as a peer (as_peer).  Returns how
 * many.
 */
static size_t select_workloads(const char *only, const bench_workload **sel)
{
    size_t n = 0;

    if (only == NULL) {
        for (size_t i = 0; i < bench_workload_count; i++)
            if (!bench_workloads[i]->as_peer)
                sel[n++] = bench_workloads[i];
        return n;
    }
    for (const char *p = only; *p != '\0';) {
        size_t len = strcspn(p, ",");
        const bench_workload *w;
        bool dup = false;

        if (len > 0) {
            w = find_workload(p, len);
            if (w == NULL)
                die_usage("no workload '%.*s' (see --list)", (int)len, p);
            for (size_t k = 0; k < n; k++)
                dup |= sel[k] == w;
            if (!dup)
                sel[n++] = w;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    if (n == 0)
        die_usage("--only names no workload");
    return n;
}

/* N for --quick: the workload's own quick size, else 1/100 of the full. */
static uint64_t quick_size(const bench_workload *w)
{
    if (w->quick_n != 0)
        return w->quick_n;
    return w->default_n / QUICK_DIVISOR > 0 ? w->default_n / QUICK_DIVISOR : 1;
}

static void list_workloads(void)
{
    for (size_t i = 0; i < bench_workload_count; i++) {
        const bench_workload *w = bench_workloads[i];

        printf("%-10s %s\n", w->name, w->desc);
        printf("%-10s size %" PRIu64 " (quick %" PRIu64 "), unit %s, %s, peers:",
               "", w->default_n, quick_size(w), w->unit,
               w->pooled ? "--threads workers" : "1 thread");
        for (const char *const *p = w->peers; *p != NULL; p++) {
            const peer_info *pi = bench_find_peer(*p);
            printf(" %s%s", *p,
                   pi == NULL ? " (not configured)"
                   : pi->built ? "" : " (not built)");
        }
        if (w->run_server != NULL && w->weft_server == NULL)
            printf("; weft: %s", w->weft_missing);
        printf("\n");
    }
    printf("\npeers (version as detected when configured):\n");
    for (size_t i = 0; i < bench_peer_count; i++) {
        const peer_info *pi = &bench_peer_table[i];

        if (pi->built)
            printf("  %-14s %s\n", pi->name, pi->version[0] ? pi->version : "?");
        else
            printf("  %-14s not built: install %s\n", pi->name, pi->package);
    }
}

/* The path of this executable, into buf. */
static int self_exe(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);

    if (n <= 0)
        return -errno;
    buf[n] = '\0';
    return 0;
}

/* Where the programs are: this executable, its directory, the peers'. */
typedef struct locations {
    char exe[PATH_MAX];      /* "" if /proc/self/exe cannot be read */
    char dir[PATH_MAX];      /* "" likewise                         */
    char peers[PATH_MAX];    /* "" if unknown (no --peer-dir)       */
} locations;

/* Fills *at; peer_dir is --peer-dir's value, or NULL. */
static void locate(locations *at, const char *peer_dir)
{
    char *slash;

    at->dir[0] = at->peers[0] = '\0';
    if (self_exe(at->exe, sizeof at->exe) != 0)
        at->exe[0] = '\0';
    else
        /* For peer-weft-cpp, which runs this program's C++ workloads
         * (peers/weft_cpp.c), wherever --peer-dir put the peers. */
        (void)setenv("WEFT_BENCH", at->exe, 1);
    slash = strrchr(at->exe, '/');
    if (slash != NULL)
        snprintf(at->dir, sizeof at->dir, "%.*s", (int)(slash - at->exe),
                 at->exe);
    if (peer_dir != NULL) {
        snprintf(at->peers, sizeof at->peers, "%s", peer_dir);
    } else if (at->dir[0] == '\0' ||
               (size_t)snprintf(at->peers, sizeof at->peers, "%s/peers",
                                at->dir) >= sizeof at->peers) {
        /* Without /proc the peers cannot be found; weft still runs. */
        fprintf(stderr, "weft-bench: cannot locate own executable; use --peer-dir\n");
        at->peers[0] = '\0';
    }
}

/*
 * weft-bench --child WORKLOAD N THREADS: one weft measurement in this fresh
 * process, reported as a peer reports (peers/peer.h).
 */
static int child_main(int argc, char **argv)
{
    peer_args a;
    const bench_workload *w;
    bench_params p;
    bench_sample s = { .value = 0.0 };
    int rc;

    peer_parse_args(argc - 1, argv + 1, &a);
    w = find_workload(a.workload, strlen(a.workload));
    if (w == NULL) {
        fprintf(stderr, "weft-bench --child: no workload '%s'\n", a.workload);
        return PEER_EXIT_UNKNOWN_WORKLOAD;
    }
    p.n = a.n;
    p.threads = a.threads;
    rc = w->run_weft(&p, &s);
    if (rc != 0)
        return PEER_EXIT_FAILED; /* run_weft said what failed */
    peer_report_extra(s.value, s.check, s.extra, (int)results_extra_count(w));
    return 0;
}

/* Records one sample, or marks r failed if its check value is wrong. */
static void record(impl_result *r, const bench_cell *c, const bench_sample *s)
{
    uint64_t want = c->w->expect(&c->p);

    if (s->check != want) {
        r->state = IMPL_FAILED; /* r->why goes in the table */
        snprintf(r->why, sizeof r->why,
                 "wrong answer: check value %" PRIu64 ", expected %" PRIu64,
                 s->check, want);
        return;
    }
    for (size_t e = 0; e < results_extra_count(c->w); e++)
        r->extra_runs[e][r->count] = s->extra[e];
    r->runs[r->count++] = s->value;
    if (s->counted) {
        double ops = s->ops > 0.0 ? s->ops
                     : c->w->ops != NULL ? (double)c->w->ops(&c->p)
                                         : (double)c->p.n;
        for (size_t e = 0; e < BENCH_NCOUNTS; e++) {
            double v = s->counts.v[e];
            r->count_runs[e][r->counted_runs] = v < 0.0 || ops <= 0.0
                                                    ? -1.0 : v / ops;
        }
        r->counted_runs++;
    }
}

/* Appends run j's outcome for r to the current progress line. */
static void progress(const impl_result *r, unsigned j)
{
    char v[16];

    if (r->state == IMPL_OK && r->count == j + 1) {
        fmt_value(v, sizeof v, r->runs[j]);
        fprintf(stderr, " %s %s", r->name, v);
    } else if (r->state == IMPL_FAILED) {
        fprintf(stderr, " %s FAILED", r->name);
    } else if (r->state == IMPL_NA) {
        fprintf(stderr, " %s n/a", r->name);
    }
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);

    if (p == NULL) {
        perror("weft-bench");
        exit(1);
    }
    return p;
}

/* One cell: its parameters, and its implementations with skip reasons. */
static void make_cell(bench_cell *c, const bench_workload *w, unsigned threads,
                      const options *o)
{
    c->w = w;
    c->p.n = o->size != 0 ? o->size : o->quick ? quick_size(w) : w->default_n;
    c->p.threads = threads;
    c->nimpl = 1;
    while (w->peers[c->nimpl - 1] != NULL)
        c->nimpl++;
    c->impl = xcalloc(c->nimpl, sizeof *c->impl);
    for (size_t k = 0; k < c->nimpl; k++) {
        impl_result *r = &c->impl[k];

        r->name = k == 0 ? "weft" : w->peers[k - 1];
        r->runs = xcalloc(o->runs, sizeof r->runs[0]);
        for (size_t e = 0; e < results_extra_count(w); e++)
            r->extra_runs[e] = xcalloc(o->runs, sizeof r->extra_runs[e][0]);
        for (size_t e = 0; e < BENCH_NCOUNTS; e++)
            r->count_runs[e] = xcalloc(o->runs, sizeof r->count_runs[e][0]);
        if (k == 0 && w->run_server != NULL && w->weft_server == NULL) {
            r->state = IMPL_SKIPPED;
            snprintf(r->why, sizeof r->why, "%s", w->weft_missing);
        } else if (k > 0) {
            const peer_info *pi = bench_find_peer(r->name);
            if (pi == NULL) {
                r->state = IMPL_SKIPPED;
                snprintf(r->why, sizeof r->why, "no such peer in bench/peers/meson.build");
            } else if (!pi->built) {
                r->state = IMPL_SKIPPED;
                snprintf(r->why, sizeof r->why, "install %s", pi->package);
            }
        }
    }
}

/* Run j of implementation k of a server workload: weft's server program
 * or the peer's, driven by the workload's run_server. */
static void measure_server(bench_cell *c, size_t k, unsigned j,
                           const locations *at)
{
    impl_result *r = &c->impl[k];
    bench_sample s = { .value = 0.0 };
    char path[2 * PATH_MAX];

    if (k == 0)
        snprintf(path, sizeof path, "%s/%s", at->dir, c->w->weft_server);
    else
        snprintf(path, sizeof path, "%s/peer-%s-%s", at->peers, r->name,
                 c->w->server_suffix != NULL ? c->w->server_suffix
                                             : c->w->name);
    if ((k == 0 ? at->dir : at->peers)[0] == '\0' || access(path, X_OK) != 0) {
        r->state = k == 0 ? IMPL_FAILED : IMPL_SKIPPED;
        snprintf(r->why, sizeof r->why, "not found: %.140s", path);
        progress(r, j);
        return;
    }
    int rc = c->w->run_server(path, at->dir, &c->p, &s, r->why,
                              sizeof r->why);
    if (rc == 2)
        r->state = IMPL_NA; /* its client is not installed: r->why says */
    else if (rc != 0)
        r->state = IMPL_FAILED; /* r->why goes in the table */
    else
        record(r, c, &s);
    progress(r, j);
}

/* Measures run j of implementation k of cell c. */
static void measure(bench_cell *c, size_t k, unsigned j, const locations *at)
{
    impl_result *r = &c->impl[k];
    bench_sample s = { .value = 0.0 };
    char path[PATH_MAX + 64];
    int rc;

    if (r->state != IMPL_OK)
        return;
    if (c->w->run_server != NULL) {
        measure_server(c, k, j, at);
        return;
    }
    /* weft runs in a child process as the peers do, so that the kernel
     * counts its measurement alone (counters.h); in this process only when
     * its own executable cannot be found again (then uncounted). */
    if (k == 0 && at->exe[0] == '\0' && !c->w->fresh_process) {
        rc = c->w->run_weft(&c->p, &s);
        if (rc != 0) {
            r->state = IMPL_FAILED;
            snprintf(r->why, sizeof r->why, "%s", weft_strerror(rc));
        } else {
            record(r, c, &s);
        }
        progress(r, j);
        return;
    }
    if (k == 0) {
        if (at->exe[0] == '\0') {
            r->state = IMPL_FAILED;
            snprintf(r->why, sizeof r->why, "needs a fresh process, but "
                     "/proc/self/exe cannot be read");
            progress(r, j);
            return;
        }
        rc = spawn_measure(at->exe, "--child", c->w, &c->p, &s, r->why,
                           sizeof r->why);
    } else {
        snprintf(path, sizeof path, "%s/peer-%s", at->peers, r->name);
        if (access(path, X_OK) != 0) {
            /* Configured as built but not there: say where we looked. */
            r->state = IMPL_SKIPPED;
            snprintf(r->why, sizeof r->why, "not found: %.140s", path);
            return;
        }
        rc = spawn_measure(path, NULL, c->w, &c->p, &s, r->why, sizeof r->why);
    }
    if (rc == 2)
        r->state = IMPL_NA;
    else if (rc < 0)
        r->state = IMPL_FAILED; /* r->why goes in the table */
    else
        record(r, c, &s);
    progress(r, j);
}

int main(int argc, char **argv)
{
    const bench_workload **sel;
    static locations at;
    bench_machine machine;
    bench_run run;
    options o;
    size_t nsel;
    bool failed = false;

    if (argc > 1 && strcmp(argv[1], "--child") == 0)
        return child_main(argc, argv);
    parse_options(argc, argv, &o);
    if (o.list) {
        list_workloads();
        return 0;
    }
    sel = xcalloc(bench_workload_count, sizeof *sel);
    nsel = select_workloads(o.only, sel);

    locate(&at, o.peer_dir);
    /* Before the first child: they inherit its syscall counter. */
    bench_counters_open();

    /* Numbers from a sanitized or unoptimized build measure the tooling. */
    if (strcmp(BENCH_SANITIZE, "none") != 0 && strcmp(BENCH_SANITIZE, "") != 0)
        fprintf(stderr, "weft-bench: WARNING: built with -Db_sanitize=%s; "
                        "figures are not representative\n", BENCH_SANITIZE);
    if (strcmp(BENCH_OPTIMIZATION, "2") != 0 && strcmp(BENCH_OPTIMIZATION, "3") != 0)
        fprintf(stderr, "weft-bench: WARNING: libweft built with -O%s; "
                        "figures are not representative (use -Doptimization=2)\n",
                BENCH_OPTIMIZATION);

    /* The cells, in workload order; a pooled workload once per count. */
    memset(&run, 0, sizeof run);
    run.runs = o.runs;
    run.quick = o.quick;
    run.threads = o.threads;
    run.nthreads = o.nthreads;
    run.cells = xcalloc(nsel * o.nthreads, sizeof *run.cells);
    for (size_t i = 0; i < nsel; i++) {
        if (!sel[i]->pooled) {
            make_cell(&run.cells[run.ncells++], sel[i], 1, &o);
            continue;
        }
        for (size_t t = 0; t < o.nthreads; t++)
            make_cell(&run.cells[run.ncells++], sel[i], o.threads[t], &o);
    }

    for (size_t ci = 0; ci < run.ncells; ci++) {
        bench_cell *c = &run.cells[ci];

        unsigned runs = c->w->max_runs && c->w->max_runs < o.runs
                            ? c->w->max_runs
                            : o.runs;
        for (unsigned j = 0; j < runs; j++) {
            /* One progress line per run, completed as each implementation
             * finishes (stderr is unbuffered), so a slow one shows where. */
            fprintf(stderr, "[%zu/%zu] %s T=%u run %u/%u (N=%" PRIu64 "):",
                    ci + 1, run.ncells, c->w->name, c->p.threads, j + 1,
                    runs, c->p.n);
            for (size_t k = 0; k < c->nimpl; k++)
                measure(c, k, j, &at);
            fprintf(stderr, " (%s)\n", c->w->unit);
        }
        for (size_t k = 0; k < c->nimpl; k++)
            failed |= c->impl[k].state == IMPL_FAILED;
    }

    results_summarise(&run);
    bench_machine_read(&machine);
    bench_machine_probe(&machine);
    printf("weft-bench %s on %s (%u CPUs), %s; %s\n", BENCH_WEFT_VERSION,
           machine.cpu, machine.cpus, machine.kernel, BENCH_COMPILER);
    printf("cpu: %s family %d model %d; meltdown: %s\n", machine.vendor,
           machine.family, machine.model, machine.meltdown);
    printf("at the end of the run: a cache line moves between two threads "
           "in %.0f ns; a first write to a fresh page costs %.2f us\n",
           machine.line_handoff_ns, machine.first_touch_ns / 1e3);
    report_print(&run, &machine);
    if (o.json != NULL && json_write(o.json, &run, &machine) != 0)
        failed = true;
    if (o.plot != NULL) {
        if (plot_write(o.plot, &run, &machine) != 0)
            failed = true;
        else
            fprintf(stderr, "weft-bench: plot written to %s\n", o.plot);
    }
    if (o.json != NULL && !failed)
        fprintf(stderr, "weft-bench: figures written to %s\n", o.json);

    for (size_t ci = 0; ci < run.ncells; ci++) {
        for (size_t k = 0; k < run.cells[ci].nimpl; k++) {
            free(run.cells[ci].impl[k].runs);
            for (size_t e = 0; e < BENCH_MAX_EXTRA; e++)
                free(run.cells[ci].impl[k].extra_runs[e]);
        }
        free(run.cells[ci].impl);
    }
    free(run.cells);
    free(sel);
    return failed ? 1 : 0;
}
