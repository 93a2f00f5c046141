/*
 * weft_bench.c — weft-bench: runs the workloads on weft and on its peers and
 * prints one table.
 *
 *   weft-bench [--list] [--only NAME[,NAME...]] [--runs R] [--quick]
 *              [--size N] [--threads T] [--peer-dir DIR]
 *
 * How a run goes.  For each selected workload (bench/workloads.h), for run
 * j = 1..R: one weft measurement (the workload's run_weft, in this process),
 * then one measurement of each of its peers (a separate program).  The
 * implementations are interleaved run by run rather than measured in blocks,
 * so a slow drift of the machine (frequency, a noisy neighbour on a VM) hits
 * every implementation alike instead of biasing whichever ran last.  Each
 * measurement's check value is compared with the workload's expect(); a
 * wrong answer is a failure, never a number in the table.  The table gives,
 * per implementation, the median and the min-max of its R values and the
 * ratio peer median / weft median (> 1: weft is faster).
 *
 * Peers.  A peer is a small program `peer-NAME` built beside this one, in
 * the `peers/` directory next to the weft-bench executable (found through
 * /proc/self/exe; --peer-dir overrides).  It is built only when its package
 * is installed; meson writes which peers it built, and which package each
 * missing one needs, into bench_config.h.  The protocol (bench/peers/peer.h):
 *
 *     peer-NAME WORKLOAD N THREADS      (one measurement)
 *  -> stdout: "result <value> <check>"   exit 0
 *     exit 2: this peer has no such workload (shown as "n/a")
 *     any other exit, a signal, or no result line: failure
 *
 * Peers run with posix_spawn; their stdout comes back through a pipe and
 * their stderr goes straight to ours.
 *
 * Sizes and runs.  A full run uses each workload's default_n and R = 5 (the
 * minimum: fewer runs give a median that one outlier can move).  --quick
 * (used by the test suite to check that every implementation gives correct
 * answers, not to measure) runs each workload's quick size (1/100 of the
 * full one unless the workload says otherwise, e.g. fib(20) for fib(30))
 * once; --size overrides N for every selected workload.
 *
 * Threads.  The pooled workloads (spawn-join, skynet, fib, yield, ping-pong,
 * sync-wait) run on --threads T workers (default 2): weft creates its pool
 * with T threads outside the timed region, and each peer gets T as its
 * THREADS argument.  The single-thread workloads (switch, create) always
 * get 1.
 *
 * Output.  Progress goes to stderr ("[workload i/N] NAME run j/R: ..."), the
 * table to stdout, so `weft-bench > table.txt` keeps only the table.
 * Exit status: 0; 1 if any measurement failed or gave a wrong check value
 * (the table is printed anyway); 2 on a bad command line.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2, O_CLOEXEC */
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <weft/error.h>

#include "bench_config.h"
#include "workloads.h"

extern char **environ;

#define MIN_RUNS 5
#define DEFAULT_RUNS 5
#define QUICK_DIVISOR 100
#define DEFAULT_THREADS 2
#define MAX_THREADS 1024 /* weft_pool_create's limit */

/* A peer as meson configured it (bench_config.h: BENCH_PEER_TABLE). */
typedef struct peer_info {
    const char *name;    /* program is peers/peer-NAME                   */
    int built;           /* 0: its package was missing at configure time */
    const char *package; /* what to install to get it built              */
} peer_info;

/* The sentinel keeps the array valid C when meson configured no peer. */
static const peer_info peer_table[] = { BENCH_PEER_TABLE { NULL, 0, NULL } };

typedef enum {
    IMPL_OK,      /* measured (so far)                          */
    IMPL_SKIPPED, /* not built, or not found                    */
    IMPL_NA,      /* the peer does not implement this workload  */
    IMPL_FAILED,  /* crashed, bad output or wrong check value   */
} impl_state;

/* Everything measured for one implementation of one workload. */
typedef struct impl_result {
    const char *name;   /* "weft" or a peer name */
    impl_state state;
    char why[160];      /* for SKIPPED and FAILED */
    double *values;     /* one per completed run */
    unsigned count;
} impl_result;

typedef struct options {
    bool list;
    bool quick;
    unsigned runs;          /* 0 = not given */
    uint64_t size;          /* 0 = not given */
    unsigned threads;       /* for pooled workloads */
    const char *only;       /* comma-separated names, NULL = all */
    const char *peer_dir;   /* NULL = <dir of /proc/self/exe>/peers */
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
            "  --peer-dir DIR     where the peer-* programs are (default: peers/\n"
            "                     beside this executable)\n"
            "  --help             this text\n"
            "The table goes to stdout, progress to stderr.  Ratio = peer/weft:\n"
            "above 1 means weft is faster.\n",
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
    o->threads = DEFAULT_THREADS;
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
            uint64_t t = parse_u64("--threads", v);
            if (t > MAX_THREADS)
                die_usage("--threads %s: at most %d", v, MAX_THREADS);
            o->threads = (unsigned)t;
        } else if ((v = option_value(argc, argv, &i, "--peer-dir")) != NULL) {
            o->peer_dir = v;
        } else {
            die_usage("unknown argument '%s'", argv[i]);
        }
    }
    /* A median of fewer than 5 values is one outlier away from wrong; only a
     * correctness check (--quick) may run fewer. */
    if (o->runs != 0 && o->runs < MIN_RUNS && !o->quick)
        die_usage("--runs %u: at least %d (or add --quick for a check run)",
                  o->runs, MIN_RUNS);
    if (o->runs == 0)
        o->runs = o->quick ? 1 : DEFAULT_RUNS;
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
 * with all of them.  Returns how many.
 */
static size_t select_workloads(const char *only, const bench_workload **sel)
{
    size_t n = 0;

    if (only == NULL) {
        for (size_t i = 0; i < bench_workload_count; i++)
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

static const peer_info *find_peer(const char *name)
{
    for (size_t i = 0; i < sizeof peer_table / sizeof peer_table[0]; i++)
        if (peer_table[i].name != NULL && strcmp(peer_table[i].name, name) == 0)
            return &peer_table[i];
    return NULL;
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
            const peer_info *pi = find_peer(*p);
            printf(" %s%s", *p,
                   pi == NULL ? " (not configured)"
                   : pi->built ? "" : " (not built)");
        }
        printf("\n");
    }
}

/* The directory of this executable plus "/peers", into buf. */
static int default_peer_dir(char *buf, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash;

    if (n <= 0)
        return -errno;
    exe[n] = '\0';
    slash = strrchr(exe, '/');
    if (slash == NULL)
        return -ENOENT;
    *slash = '\0';
    if ((size_t)snprintf(buf, len, "%s/peers", exe) >= len)
        return -ENAMETOOLONG;
    return 0;
}

/*
 * Runs one peer measurement.  Returns 0 with *out filled, 2 if the peer has
 * no such workload, -1 with r->why set on any failure.
 */
static int run_peer(const char *path, const bench_workload *w,
                    const bench_params *p, bench_sample *out, impl_result *r)
{
    char n_arg[32];
    char t_arg[16];
    char *argv[] = { (char *)path, (char *)w->name, n_arg, t_arg, NULL };
    posix_spawn_file_actions_t fa;
    char buf[4096];
    size_t used = 0;
    int fds[2];
    pid_t pid;
    int status;
    int rc;

    snprintf(n_arg, sizeof n_arg, "%" PRIu64, p->n);
    snprintf(t_arg, sizeof t_arg, "%u", p->threads);

    /* CLOEXEC so the read end does not leak into the child; the dup2 onto
     * fd 1 clears the flag on the child's copy of the write end. */
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(r->why, sizeof r->why, "pipe: %s", strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    rc = posix_spawn(&pid, path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        snprintf(r->why, sizeof r->why, "spawn %.100s: %s", path, strerror(rc));
        return -1;
    }

    /* Read everything (a chatty peer must not block on a full pipe), keep
     * the first 4 KiB: the result line is all we need. */
    for (;;) {
        char sink[512];
        char *dst = used < sizeof buf - 1 ? buf + used : sink;
        size_t room = used < sizeof buf - 1 ? sizeof buf - 1 - used : sizeof sink;
        ssize_t n = read(fds[0], dst, room);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (dst == buf + used)
            used += (size_t)n;
    }
    buf[used] = '\0';
    close(fds[0]);

    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            snprintf(r->why, sizeof r->why, "waitpid: %s", strerror(errno));
            return -1;
        }
    }
    if (WIFSIGNALED(status)) {
        snprintf(r->why, sizeof r->why, "killed by signal %d", WTERMSIG(status));
        return -1;
    }
    if (WEXITSTATUS(status) == 2)
        return 2;
    if (WEXITSTATUS(status) != 0) {
        snprintf(r->why, sizeof r->why, "exit status %d", WEXITSTATUS(status));
        return -1;
    }
    for (char *line = buf; line != NULL && *line != '\0';) {
        char *next = strchr(line, '\n');
        double value;
        uint64_t check;

        if (next != NULL)
            *next++ = '\0';
        if (sscanf(line, "result %lf %" SCNu64, &value, &check) == 2) {
            out->value = value;
            out->check = check;
            return 0;
        }
        line = next;
    }
    snprintf(r->why, sizeof r->why, "no 'result' line in its output");
    return -1;
}

/* Records one sample, or marks r failed if its check value is wrong. */
static void record(impl_result *r, const bench_workload *w,
                   const bench_params *p, const bench_sample *s)
{
    uint64_t want = w->expect(p);

    if (s->check != want) {
        r->state = IMPL_FAILED; /* r->why goes in the table */
        snprintf(r->why, sizeof r->why,
                 "wrong answer: check value %" PRIu64 ", expected %" PRIu64,
                 s->check, want);
        return;
    }
    r->values[r->count++] = s->value;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Median of r->values (sorts them in place). */
static double median_of(impl_result *r)
{
    unsigned c = r->count;

    qsort(r->values, c, sizeof r->values[0], cmp_double);
    return c % 2 ? r->values[c / 2]
                 : (r->values[c / 2 - 1] + r->values[c / 2]) / 2.0;
}

/* Three significant digits or so: 2.13, 45.6, 953. */
static void fmt_value(char *buf, size_t len, double v)
{
    if (v < 10.0)
        snprintf(buf, len, "%.2f", v);
    else if (v < 100.0)
        snprintf(buf, len, "%.1f", v);
    else
        snprintf(buf, len, "%.0f", v);
}

/* One table row, all text, so the column widths can be measured first. */
typedef struct row {
    char workload[24];
    char n[24];
    char impl[24];
    char median[32];
    char range[48];
    char unit[24];
    char ratio[200];
} row;

static void make_row(row *out, const bench_workload *w, const bench_params *p,
                     impl_result *r, const impl_result *weft, double weft_median,
                     bool first)
{
    memset(out, 0, sizeof *out);
    snprintf(out->workload, sizeof out->workload, "%s", first ? w->name : "");
    if (first)
        snprintf(out->n, sizeof out->n, "%" PRIu64, p->n);
    snprintf(out->impl, sizeof out->impl, "%s", r->name);

    switch (r->state) {
    case IMPL_SKIPPED:
        snprintf(out->median, sizeof out->median, "skipped");
        snprintf(out->ratio, sizeof out->ratio, "(%s)", r->why);
        return;
    case IMPL_NA:
        snprintf(out->median, sizeof out->median, "n/a");
        return;
    case IMPL_FAILED:
        snprintf(out->median, sizeof out->median, "FAILED");
        snprintf(out->ratio, sizeof out->ratio, "(%s)", r->why);
        return;
    case IMPL_OK:
        break;
    }
    if (r->count == 0)
        return;

    double med = median_of(r);
    char lo[16], hi[16];

    fmt_value(out->median, sizeof out->median, med);
    fmt_value(lo, sizeof lo, r->values[0]);
    fmt_value(hi, sizeof hi, r->values[r->count - 1]);
    snprintf(out->range, sizeof out->range, "%s-%s", lo, hi);
    snprintf(out->unit, sizeof out->unit, "%s", w->unit);
    if (r == weft)
        snprintf(out->ratio, sizeof out->ratio, "1.00");
    else if (weft->state == IMPL_OK && weft->count > 0 && weft_median > 0.0)
        snprintf(out->ratio, sizeof out->ratio, "%.2f", med / weft_median);
    else
        snprintf(out->ratio, sizeof out->ratio, "-");
}

static void print_table(row *rows, size_t nrows)
{
    static const row head = {
        "workload", "N", "impl", "median", "min-max", "unit", "peer/weft",
    };
    int ww = 0, wn = 0, wi = 0, wm = 0, wr = 0, wu = 0;

#define WIDEN(w, s) do { int l_ = (int)strlen(s); if (l_ > (w)) (w) = l_; } while (0)
    WIDEN(ww, head.workload); WIDEN(wn, head.n); WIDEN(wi, head.impl);
    WIDEN(wm, head.median); WIDEN(wr, head.range); WIDEN(wu, head.unit);
    for (size_t i = 0; i < nrows; i++) {
        WIDEN(ww, rows[i].workload); WIDEN(wn, rows[i].n);
        WIDEN(wi, rows[i].impl); WIDEN(wm, rows[i].median);
        WIDEN(wr, rows[i].range); WIDEN(wu, rows[i].unit);
    }
#undef WIDEN

    /* Text columns left-aligned, numbers right-aligned; no trailing blanks
     * on rows whose last columns are empty. */
    for (size_t i = 0; i <= nrows; i++) {
        const row *r = i == 0 ? &head : &rows[i - 1];
        char line[512];
        size_t len;

        if (i > 1 && r->workload[0] != '\0')
            printf("\n");
        snprintf(line, sizeof line, "%-*s  %*s  %-*s  %*s  %-*s  %-*s  %s", ww,
                 r->workload, wn, r->n, wi, r->impl, wm, r->median, wr,
                 r->range, wu, r->unit, r->ratio);
        len = strlen(line);
        while (len > 0 && line[len - 1] == ' ')
            line[--len] = '\0';
        puts(line);
    }
}

/* Appends run j's outcome for r to the current progress line. */
static void progress(const impl_result *r, unsigned j)
{
    char v[16];

    if (r->state == IMPL_OK && r->count == j + 1) {
        fmt_value(v, sizeof v, r->values[j]);
        fprintf(stderr, " %s %s", r->name, v);
    } else if (r->state == IMPL_FAILED) {
        fprintf(stderr, " %s FAILED", r->name);
    } else if (r->state == IMPL_NA) {
        fprintf(stderr, " %s n/a", r->name);
    }
}

int main(int argc, char **argv)
{
    const bench_workload **sel;
    char peer_dir[PATH_MAX];
    options o;
    size_t nsel;
    row *rows;
    size_t nrows = 0;
    size_t maxrows = 0;
    bool failed = false;

    parse_options(argc, argv, &o);
    if (o.list) {
        list_workloads();
        return 0;
    }
    sel = calloc(bench_workload_count, sizeof *sel);
    if (sel == NULL) {
        perror("weft-bench");
        return 1;
    }
    nsel = select_workloads(o.only, sel);

    if (o.peer_dir != NULL) {
        snprintf(peer_dir, sizeof peer_dir, "%s", o.peer_dir);
    } else if (default_peer_dir(peer_dir, sizeof peer_dir) != 0) {
        /* Without /proc the peers cannot be found; weft still runs. */
        fprintf(stderr, "weft-bench: cannot locate own executable; use --peer-dir\n");
        peer_dir[0] = '\0';
    }

    /* Numbers from a sanitized or unoptimized build measure the tooling. */
    if (strcmp(BENCH_SANITIZE, "none") != 0 && strcmp(BENCH_SANITIZE, "") != 0)
        fprintf(stderr, "weft-bench: WARNING: built with -Db_sanitize=%s; "
                        "figures are not representative\n", BENCH_SANITIZE);
    if (strcmp(BENCH_OPTIMIZATION, "2") != 0 && strcmp(BENCH_OPTIMIZATION, "3") != 0)
        fprintf(stderr, "weft-bench: WARNING: libweft built with -O%s; "
                        "figures are not representative (use -Doptimization=2)\n",
                BENCH_OPTIMIZATION);

    for (size_t i = 0; i < nsel; i++) {
        size_t np = 0;
        while (sel[i]->peers[np] != NULL)
            np++;
        maxrows += 1 + np;
    }
    rows = calloc(maxrows, sizeof *rows);
    if (rows == NULL) {
        perror("weft-bench");
        return 1;
    }

    for (size_t wi = 0; wi < nsel; wi++) {
        const bench_workload *w = sel[wi];
        bench_params p = { .n = w->default_n,
                           .threads = w->pooled ? o.threads : 1 };
        impl_result *res;
        size_t nimpl = 1;
        double weft_median = 0.0;

        if (o.quick)
            p.n = quick_size(w);
        if (o.size != 0)
            p.n = o.size;

        while (w->peers[nimpl - 1] != NULL)
            nimpl++;
        res = calloc(nimpl, sizeof *res);
        if (res == NULL) {
            perror("weft-bench");
            return 1;
        }
        for (size_t k = 0; k < nimpl; k++) {
            impl_result *r = &res[k];

            r->name = k == 0 ? "weft" : w->peers[k - 1];
            r->values = calloc(o.runs, sizeof r->values[0]);
            if (r->values == NULL) {
                perror("weft-bench");
                return 1;
            }
            if (k > 0) {
                const peer_info *pi = find_peer(r->name);
                if (pi == NULL) {
                    r->state = IMPL_SKIPPED;
                    snprintf(r->why, sizeof r->why, "no such peer in bench/peers/meson.build");
                } else if (!pi->built) {
                    r->state = IMPL_SKIPPED;
                    snprintf(r->why, sizeof r->why, "install %s", pi->package);
                }
            }
        }

        for (unsigned j = 0; j < o.runs; j++) {
            /* One progress line per run, completed as each implementation
             * finishes (stderr is unbuffered), so a slow one shows where. */
            fprintf(stderr, "[workload %zu/%zu] %s run %u/%u (N=%" PRIu64 ", %u thread%s):",
                    wi + 1, nsel, w->name, j + 1, o.runs, p.n, p.threads,
                    p.threads == 1 ? "" : "s");
            for (size_t k = 0; k < nimpl; k++) {
                impl_result *r = &res[k];
                bench_sample s = { 0.0, 0 };
                char path[PATH_MAX + 64];
                int rc;

                if (r->state != IMPL_OK)
                    continue;
                if (k == 0) {
                    rc = w->run_weft(&p, &s);
                    if (rc != 0) {
                        r->state = IMPL_FAILED;
                        snprintf(r->why, sizeof r->why, "%s", weft_strerror(rc));
                    } else {
                        record(r, w, &p, &s);
                    }
                    progress(r, j);
                    continue;
                }
                snprintf(path, sizeof path, "%s/peer-%s", peer_dir, r->name);
                if (access(path, X_OK) != 0) {
                    /* Configured as built but not there: say where we looked. */
                    r->state = IMPL_SKIPPED;
                    snprintf(r->why, sizeof r->why, "not found: %.140s", path);
                    continue;
                }
                rc = run_peer(path, w, &p, &s, r);
                if (rc == 2) {
                    r->state = IMPL_NA;
                } else if (rc < 0) {
                    r->state = IMPL_FAILED; /* r->why goes in the table */
                } else {
                    record(r, w, &p, &s);
                }
                progress(r, j);
            }
            fprintf(stderr, " (%s)\n", w->unit);
        }

        /* The weft median first: every ratio divides by it. */
        if (res[0].state == IMPL_OK && res[0].count > 0) {
            impl_result tmp = res[0];
            weft_median = median_of(&tmp);
        }
        for (size_t k = 0; k < nimpl; k++) {
            if (res[k].state == IMPL_FAILED)
                failed = true;
            make_row(&rows[nrows++], w, &p, &res[k], &res[0], weft_median, k == 0);
            free(res[k].values);
        }
        free(res);
    }

    printf("weft-bench: median of %u run%s per implementation%s; "
           "pooled workloads on %u thread%s; "
           "peer/weft > 1 means weft is faster\n",
           o.runs, o.runs == 1 ? "" : "s",
           o.quick ? " (--quick: a check, not a measurement)" : "",
           o.threads, o.threads == 1 ? "" : "s");
    print_table(rows, nrows);
    free(rows);
    free(sel);
    return failed ? 1 : 0;
}
