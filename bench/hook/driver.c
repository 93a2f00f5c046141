/*
 * driver.c — weft-hook-bench: what libweft-hook buys a program that calls
 * a blocking client library (hiredis, libpq) from weft tasks.
 *
 *   weft-hook-bench [--seconds S] [--tasks N] [--workers W] [--json FILE]
 *                   [--only redis,pq]
 *                   [--modes naive,naive-nomon,hooked,blocking,pthreads]
 *
 * For each workload (redis: GET of a 16-byte value with hiredis against a
 * redis-server; pq: `SELECT 1` with libpq against a PostgreSQL cluster),
 * starts the server (servers.h), then runs each mode (work.c says what
 * they are) in a child process of its own, one after the other, against
 * that one server, and stops it.  The modes naive, naive-nomon, blocking
 * and pthreads run this executable as the child; the mode hooked runs
 * weft-hook-bench-hooked, found beside it: the same work.c linked with
 * libweft-hook.  The ratio columns compare commands/s with the pthreads
 * and the naive rows of the same run.
 *
 * Prints a table per workload on stdout (progress on stderr), and the
 * targets of the issue that asked for the benchmark, which it reports and
 * does not assert: hooked >= 1.2x the pthreads baseline's commands/s and
 * >= 2x naive's, and a hooked ticker's worst lateness <= 25 ms.
 *
 * Build and run (from the top of the checkout; any build dir with
 * -Dbench=true, the default, where hiredis is found):
 *
 *     meson setup build-h3 -Dtests=false -Dbuildtype=release
 *     ninja -C build-h3
 *     build-h3/bench/hook/weft-hook-bench --json hook-bench.json
 *     meson test -C build-h3 --suite bench hook-bench hook-bench-pq
 *
 * The servers run on the same machine as the clients and share its CPUs:
 * on a small machine (2 CPUs) every mode is bound by the CPU that the
 * server and the client burn per command together, and the figures move
 * with whatever else runs there: --runs 3 or more for figures to compare.
 *
 * Exit status: 0; 1 if a mode failed, made no command or saw an error;
 * 77 if no workload could run (no server installed); 2 for bad options;
 * 128 + the signal when interrupted (SIGINT, SIGTERM, SIGHUP) or stopped by
 * the watchdog (SIGALRM).  The servers are stopped in every case.
 */
#include "hook_bench.h"
#include "servers.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum {
    CHILD_SLACK_S = 150, /* a child's deadline: --seconds + this (its own
                            alarm is --seconds + 121)                     */
};

enum { RUNS_MAX = 15 };

/* One mode of one workload: r is the run of median commands/s (all its
 * figures are that run's); min_rate, max_rate over the runs. */
typedef struct row {
    bool ran;        /* tried */
    bool ok;         /* every run gave a result line and exit 0 */
    char why[256];   /* why not ok: the first failure */
    hb_result r;
    unsigned runs;   /* results so far */
    hb_result all[RUNS_MAX];
    double min_rate, max_rate;
} row;

typedef struct workload {
    bool ran;
    char skipped[256];
    char server[64];
    row rows[HB_MODES];
} workload;

static struct {
    double seconds;
    unsigned tasks, workers, runs;
    const char *json;
    bool dbs[HB_DBS];
    bool modes[HB_MODES];
} opt = { 3.0, 200, 2, 1, NULL, { true, true },
            { true, true, true, true, true } };

static hb_server server; /* the one running, if any */
static char self_exe[PATH_MAX], hooked_exe[PATH_MAX + 32];

static void on_signal(int sig)
{
    hb_interrupted = sig;
}

static void stop_server_at_exit(void)
{
    hb_server_stop(&server);
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: weft-hook-bench [--seconds S] [--tasks N] [--workers W]\n"
            "                       [--runs R] [--json FILE]\n"
            "                       [--only redis,pq]\n"
            "                       [--modes naive,naive-nomon,hooked,\n"
            "                                blocking,pthreads]\n"
            "  N connections (default 200), each doing synchronous commands\n"
            "  for S seconds (default 3) per mode, on a pool of W workers\n"
            "  (default 2); modes and workloads run one after the other,\n"
            "  R times (default 1) interleaved: each row is the run of median\n"
            "  commands/s.\n");
}

/* Parses a comma list of names into flags; false on an unknown name. */
static bool parse_list(const char *list, const char *const names[], int n,
                       bool *flags)
{
    for (int i = 0; i < n; i++)
        flags[i] = false;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t != NULL;
         t = strtok_r(NULL, ",", &save)) {
        int i = 0;
        while (i < n && strcmp(t, names[i]) != 0)
            i++;
        if (i == n)
            return false;
        flags[i] = true;
    }
    return true;
}

static void parse_options(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (v == NULL)
            goto bad;
        i++;
        if (strcmp(a, "--seconds") == 0) {
            opt.seconds = strtod(v, &end);
            if (*end != '\0' || !(opt.seconds > 0) || opt.seconds > 3600)
                goto bad;
        } else if (strcmp(a, "--tasks") == 0) {
            unsigned long n = strtoul(v, &end, 10);
            if (*end != '\0' || n == 0 || n > 100000)
                goto bad;
            opt.tasks = (unsigned)n;
        } else if (strcmp(a, "--workers") == 0) {
            unsigned long n = strtoul(v, &end, 10);
            if (*end != '\0' || n == 0 || n > 1024)
                goto bad;
            opt.workers = (unsigned)n;
        } else if (strcmp(a, "--runs") == 0) {
            unsigned long n = strtoul(v, &end, 10);
            if (*end != '\0' || n == 0 || n > RUNS_MAX)
                goto bad;
            opt.runs = (unsigned)n;
        } else if (strcmp(a, "--json") == 0) {
            opt.json = v;
        } else if (strcmp(a, "--only") == 0) {
            if (!parse_list(v, hb_db_names, HB_DBS, opt.dbs))
                goto bad;
        } else if (strcmp(a, "--modes") == 0) {
            if (!parse_list(v, hb_mode_names, HB_MODES, opt.modes))
                goto bad;
        } else {
            goto bad;
        }
        continue;
    bad:
        fprintf(stderr, "weft-hook-bench: bad option %s%s%s\n", a,
                v != NULL ? " " : "", v != NULL ? v : "");
        usage(stderr);
        exit(2);
    }
}

/* ---- one mode in a child ------------------------------------------- */

static bool parse_result(const char *text, hb_result *r)
{
    const char *line = strstr(text, "result ");
    if (line == NULL || (line != text && line[-1] != '\n'))
        return false;
    memset(r, 0, sizeof *r);
    int seen = 0;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", line + strlen("result "));
    char *nl = strchr(buf, '\n');
    if (nl != NULL)
        *nl = '\0';
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t != NULL;
         t = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(t, '=');
        if (eq == NULL)
            continue;
        *eq = '\0';
        const char *k = t, *v = eq + 1;
        seen++;
        if (strcmp(k, "commands") == 0)
            r->commands = strtoull(v, NULL, 10);
        else if (strcmp(k, "seconds") == 0)
            r->seconds = strtod(v, NULL);
        else if (strcmp(k, "cpu_s") == 0)
            r->cpu_s = strtod(v, NULL);
        else if (strcmp(k, "server_cpu_s") == 0)
            r->server_cpu_s = strtod(v, NULL);
        else if (strcmp(k, "nvcsw") == 0)
            r->nvcsw = strtoull(v, NULL, 10);
        else if (strcmp(k, "nivcsw") == 0)
            r->nivcsw = strtoull(v, NULL, 10);
        else if (strcmp(k, "ticker_max_ms") == 0)
            r->ticker_max_ms = strtod(v, NULL);
        else if (strcmp(k, "ticker_p99_ms") == 0)
            r->ticker_p99_ms = strtod(v, NULL);
        else if (strcmp(k, "ticker_p50_ms") == 0)
            r->ticker_p50_ms = strtod(v, NULL);
        else if (strcmp(k, "ticks") == 0)
            r->ticks = strtoull(v, NULL, 10);
        else if (strcmp(k, "errors") == 0)
            r->errors = strtoull(v, NULL, 10);
        else if (strcmp(k, "threads") == 0)
            r->threads = strtoull(v, NULL, 10);
        else if (strcmp(k, "spares") == 0)
            r->spares = strtoull(v, NULL, 10);
        else if (strcmp(k, "stalls") == 0)
            r->stalls = strtoull(v, NULL, 10);
        else if (strcmp(k, "hook") == 0)
            snprintf(r->hook, sizeof r->hook, "%s", v);
        else
            seen--;
    }
    return seen >= 15 && r->seconds > 0;
}

/* One run of mode m: 0 with *res filled, or -1 with why[] set. */
static int run_once(hb_db db, hb_mode m, hb_result *res, char *why,
                    size_t whylen)
{
    char port[16], tasks[16], workers[16], seconds[32], pid[16];
    const char *exe = m == HB_HOOKED ? hooked_exe : self_exe;
    char *argv[] = { (char *)exe, "--child", (char *)hb_mode_names[m],
                     "--db", (char *)hb_db_names[db], "--port", port,
                     "--tasks", tasks, "--workers", workers,
                     "--seconds", seconds, "--server-pid", pid, NULL };

    if (access(exe, X_OK) != 0) {
        snprintf(why, whylen, "%.160s not built", exe);
        return -1;
    }
    snprintf(port, sizeof port, "%u", server.port);
    snprintf(tasks, sizeof tasks, "%u", opt.tasks);
    snprintf(workers, sizeof workers, "%u", opt.workers);
    snprintf(seconds, sizeof seconds, "%g", opt.seconds);
    snprintf(pid, sizeof pid, "%ld", (long)server.pid);

    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(why, whylen, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t parent = getpid();
    pid_t child = fork();
    if (child < 0) {
        snprintf(why, whylen, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (child == 0) {
        dup2(fds[1], STDOUT_FILENO);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        signal(SIGPIPE, SIG_DFL);
        execv(exe, argv);
        _exit(127);
    }
    close(fds[1]);

    char text[4096];
    size_t used = 0;
    uint64_t deadline =
        hb_now_ns() + (uint64_t)((opt.seconds + CHILD_SLACK_S) * 1e9);
    bool killed = false;
    for (;;) {
        if (hb_interrupted || hb_now_ns() > deadline) {
            kill(child, SIGKILL);
            killed = true;
            break;
        }
        struct pollfd p = { fds[0], POLLIN, 0 };
        int r = poll(&p, 1, 100);
        if (r <= 0)
            continue;
        ssize_t n = read(fds[0], text + used, sizeof text - 1 - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        used += (size_t)n;
        if (used == sizeof text - 1)
            used = 0; /* only the last line matters */
    }
    text[used] = '\0';
    close(fds[0]);
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    if (killed) {
        snprintf(why, whylen, "%s",
                 hb_interrupted ? "interrupted" : "no result by the deadline");
        return -1;
    }
    if (WIFSIGNALED(status)) {
        snprintf(why, whylen, "killed by signal %d (%s)%s",
                 WTERMSIG(status), strsignal(WTERMSIG(status)),
                 WTERMSIG(status) == SIGALRM ? ": its watchdog" : "");
        return -1;
    }
    if (WEXITSTATUS(status) != 0) {
        snprintf(why, whylen, "exit status %d (stderr above)",
                 WEXITSTATUS(status));
        return -1;
    }
    if (!parse_result(text, res)) {
        snprintf(why, whylen, "no result line");
        return -1;
    }
    /* A hooked row without the hook in effect would be a naive one. */
    if ((m == HB_HOOKED) != (strstr(res->hook, "weft-hook") != NULL)) {
        snprintf(why, whylen, "read() resolves to %.80s in this mode",
                 res->hook);
        return -1;
    }
    return 0;
}

static double rate_of(const hb_result *r)
{
    return r->seconds > 0 ? (double)r->commands / r->seconds : 0;
}

/* One more run of mode m into *out, and out->r the median so far. */
static void run_mode(hb_db db, hb_mode m, row *out)
{
    hb_result res;
    char why[256];

    if (out->ran && !out->ok)
        return; /* failed before: one failure fails the row */
    out->ran = true;
    if (run_once(db, m, &res, why, sizeof why) != 0) {
        out->ok = false;
        snprintf(out->why, sizeof out->why, "%s", why);
        return;
    }
    out->ok = true;
    out->all[out->runs++] = res;
    /* The median by rate (the lower one of an even count). */
    unsigned n = out->runs, best = 0;
    double lo = rate_of(&out->all[0]), hi = lo;
    for (unsigned i = 0; i < n; i++) {
        unsigned below = 0, equal = 0;
        double ri = rate_of(&out->all[i]);
        lo = ri < lo ? ri : lo;
        hi = ri > hi ? ri : hi;
        for (unsigned j = 0; j < n; j++) {
            double rj = rate_of(&out->all[j]);
            below += rj < ri;
            equal += rj == ri;
        }
        if (below <= (n - 1) / 2 && (n - 1) / 2 < below + equal)
            best = i;
    }
    out->r = out->all[best];
    out->min_rate = lo;
    out->max_rate = hi;
}

/* ---- the table ------------------------------------------------------ */

static double rate(const row *w)
{
    return w->ok ? (double)w->r.commands / w->r.seconds : 0;
}

static double per_cmd(double x, const row *w)
{
    return w->r.commands > 0 ? x / (double)w->r.commands : 0;
}

static bool row_good(const row *w)
{
    if (!w->ok)
        return false;
    for (unsigned i = 0; i < w->runs; i++)
        if (w->all[i].commands == 0 || w->all[i].errors != 0)
            return false;
    return true;
}

static void fmt_ratio(char *buf, size_t len, const row *w, const row *base)
{
    if (!row_good(w) || !row_good(base))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.2fx", rate(w) / rate(base));
}

static const char *what(hb_db db)
{
    return db == HB_REDIS ? "hiredis GET, 16-byte value"
                          : "libpq PQexec(\"SELECT 1\")";
}

static void print_table(hb_db db, const workload *wl)
{
    printf("\n%s against %s: %u connections, %u workers, %g s per mode",
           what(db), wl->server, opt.tasks, opt.workers, opt.seconds);
    if (opt.runs > 1)
        printf(", median of %u runs", opt.runs);
    printf("\n");
    printf("%-11s %9s %9s %7s %9s %7s %6s %8s %9s %7s %7s %7s\n", "mode",
           "cmds/s", "/pthreads", "/naive", "ticker ms", "p99 ms", "ticks",
           "CPU us/c", "server us", "vcsw/c", "ivcsw/c", "threads");
    for (int m = 0; m < HB_MODES; m++) {
        const row *w = &wl->rows[m];
        if (!w->ran)
            continue;
        if (!w->ok) {
            printf("%-11s FAILED: %s\n", hb_mode_names[m], w->why);
            continue;
        }
        char vs_pt[16], vs_naive[16], srv[16];
        fmt_ratio(vs_pt, sizeof vs_pt, w, &wl->rows[HB_PTHREADS]);
        fmt_ratio(vs_naive, sizeof vs_naive, w, &wl->rows[HB_NAIVE]);
        if (w->r.server_cpu_s >= 0 && w->r.commands > 0)
            snprintf(srv, sizeof srv, "%.2f",
                     per_cmd(w->r.server_cpu_s * 1e6, w));
        else
            snprintf(srv, sizeof srv, "-");
        printf("%-11s %9.0f %9s %7s %9.2f %7.2f %6llu %8.2f %9s %7.2f %7.2f "
               "%7llu%s\n",
               hb_mode_names[m], rate(w), vs_pt, vs_naive, w->r.ticker_max_ms,
               w->r.ticker_p99_ms, (unsigned long long)w->r.ticks,
               per_cmd(w->r.cpu_s * 1e6, w), srv,
               per_cmd((double)w->r.nvcsw, w), per_cmd((double)w->r.nivcsw, w),
               (unsigned long long)w->r.threads,
               row_good(w) ? "" : "  ERRORS or NO COMMANDS");
        if (opt.runs > 1)
            printf("%-11s %9s (%.0f to %.0f over %u runs)\n", "", "",
                   w->min_rate, w->max_rate, w->runs);
    }
    const row *h = &wl->rows[HB_HOOKED], *nv = &wl->rows[HB_NAIVE];
    if (h->ran && h->ok)
        printf("hooked: read() resolves to %s\n", h->r.hook);
    if (nv->ran && nv->ok)
        printf("naive: the monitor found %llu stuck workers and started %llu "
               "spare threads\n",
               (unsigned long long)nv->r.stalls,
               (unsigned long long)nv->r.spares);
    if (row_good(h)) {
        const row *pt = &wl->rows[HB_PTHREADS];
        printf("targets (reported, not asserted):");
        if (row_good(pt))
            printf(" hooked/pthreads %.2fx (>= 1.2: %s);", rate(h) / rate(pt),
                   rate(h) >= 1.2 * rate(pt) ? "met" : "MISSED");
        if (row_good(nv))
            printf(" hooked/naive %.2fx (>= 2: %s);", rate(h) / rate(nv),
                   rate(h) >= 2 * rate(nv) ? "met" : "MISSED");
        printf(" hooked ticker worst %.2f ms (<= 25: %s)\n", h->r.ticker_max_ms,
               h->r.ticker_max_ms <= 25 ? "met" : "MISSED");
    }
    printf("(ticker: worst and p99 lateness of a 1 ms sleep, and its "
           "wake-ups; CPU us/c: this process's user+sys CPU per command; "
           "server us: the server's; vcsw/ivcsw: voluntary/involuntary "
           "context switches per command; threads: the process's, near the "
           "end of the window)\n");
    fflush(stdout);
}

/* ---- JSON ----------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double x)
{
    fprintf(f, "%.6g", x);
}

static int write_json(const char *path, const workload *wls)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "weft-hook-bench: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char date[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    struct utsname u;
    char kernel[200] = "";
    if (uname(&u) == 0)
        snprintf(kernel, sizeof kernel, "%s %s %s", u.sysname, u.release,
                 u.machine);

    fprintf(f, "{\n  \"schema\": \"weft-hook-bench/1\",\n  \"date\": ");
    json_str(f, date);
    fprintf(f, ",\n  \"machine\": {\"cpus\": %ld, \"kernel\": ",
            sysconf(_SC_NPROCESSORS_ONLN));
    json_str(f, kernel);
    fprintf(f, "},\n  \"options\": {\"seconds\": ");
    json_num(f, opt.seconds);
    fprintf(f, ", \"tasks\": %u, \"workers\": %u, \"runs\": %u},\n",
            opt.tasks, opt.workers, opt.runs);
    fprintf(f, "  \"targets\": {\"hooked_vs_pthreads_min\": 1.2, "
               "\"hooked_vs_naive_min\": 2, \"hooked_ticker_max_ms\": 25},\n");
    fprintf(f, "  \"workloads\": [");
    bool first_wl = true;
    for (int d = 0; d < HB_DBS; d++) {
        const workload *wl = &wls[d];
        if (!wl->ran && wl->skipped[0] == '\0')
            continue;
        fprintf(f, "%s\n    {\"name\": ", first_wl ? "" : ",");
        first_wl = false;
        json_str(f, hb_db_names[d]);
        fprintf(f, ", \"what\": ");
        json_str(f, what((hb_db)d));
        fprintf(f, ", \"server\": ");
        json_str(f, wl->server);
        if (!wl->ran) {
            fprintf(f, ", \"skipped\": ");
            json_str(f, wl->skipped);
            fprintf(f, ", \"modes\": []}");
            continue;
        }
        fprintf(f, ",\n     \"modes\": [");
        bool first = true;
        for (int m = 0; m < HB_MODES; m++) {
            const row *w = &wl->rows[m];
            if (!w->ran)
                continue;
            fprintf(f, "%s\n      {\"mode\": ", first ? "" : ",");
            first = false;
            json_str(f, hb_mode_names[m]);
            fprintf(f, ", \"ok\": %s", row_good(w) ? "true" : "false");
            if (!w->ok) {
                fprintf(f, ", \"error\": ");
                json_str(f, w->why);
                fprintf(f, "}");
                continue;
            }
            const row *pt = &wl->rows[HB_PTHREADS], *nv = &wl->rows[HB_NAIVE];
            fprintf(f, ", \"commands\": %llu, \"seconds\": ",
                    (unsigned long long)w->r.commands);
            json_num(f, w->r.seconds);
            fprintf(f, ", \"commands_per_s\": ");
            json_num(f, rate(w));
            fprintf(f, ", \"commands_per_s_min\": ");
            json_num(f, w->min_rate);
            fprintf(f, ", \"commands_per_s_max\": ");
            json_num(f, w->max_rate);
            fprintf(f, ", \"runs\": %u", w->runs);
            fprintf(f, ", \"ratio_pthreads\": ");
            if (row_good(w) && row_good(pt))
                json_num(f, rate(w) / rate(pt));
            else
                fprintf(f, "null");
            fprintf(f, ", \"ratio_naive\": ");
            if (row_good(w) && row_good(nv))
                json_num(f, rate(w) / rate(nv));
            else
                fprintf(f, "null");
            fprintf(f, ",\n       \"ticker_max_ms\": ");
            json_num(f, w->r.ticker_max_ms);
            fprintf(f, ", \"ticker_p99_ms\": ");
            json_num(f, w->r.ticker_p99_ms);
            fprintf(f, ", \"ticker_p50_ms\": ");
            json_num(f, w->r.ticker_p50_ms);
            fprintf(f, ", \"ticks\": %llu", (unsigned long long)w->r.ticks);
            fprintf(f, ", \"cpu_us_per_command\": ");
            json_num(f, per_cmd(w->r.cpu_s * 1e6, w));
            fprintf(f, ", \"server_cpu_us_per_command\": ");
            if (w->r.server_cpu_s >= 0)
                json_num(f, per_cmd(w->r.server_cpu_s * 1e6, w));
            else
                fprintf(f, "null");
            fprintf(f, ",\n       \"voluntary_switches_per_command\": ");
            json_num(f, per_cmd((double)w->r.nvcsw, w));
            fprintf(f, ", \"involuntary_switches_per_command\": ");
            json_num(f, per_cmd((double)w->r.nivcsw, w));
            fprintf(f, ", \"errors\": %llu, \"threads\": %llu, "
                       "\"spares\": %llu, \"stalls\": %llu, \"read_from\": ",
                    (unsigned long long)w->r.errors,
                    (unsigned long long)w->r.threads,
                    (unsigned long long)w->r.spares,
                    (unsigned long long)w->r.stalls);
            json_str(f, w->r.hook);
            fprintf(f, "}");
        }
        fprintf(f, "\n     ]}");
    }
    fprintf(f, "\n  ]\n}\n");
    if (fclose(f) != 0) {
        fprintf(stderr, "weft-hook-bench: %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- main ----------------------------------------------------------- */

static void find_executables(const char *argv0)
{
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    if (n <= 0)
        snprintf(self_exe, sizeof self_exe, "%s", argv0);
    else
        self_exe[n] = '\0';
    snprintf(hooked_exe, sizeof hooked_exe, "%s", self_exe);
    char *slash = strrchr(hooked_exe, '/');
    size_t at = slash != NULL ? (size_t)(slash - hooked_exe) + 1 : 0;
    snprintf(hooked_exe + at, sizeof hooked_exe - at,
             "weft-hook-bench-hooked");
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--child") == 0)
        return hb_child_main(argc - 1, argv + 1);

    parse_options(argc, argv);
    find_executables(argv[0]);

    /* Descriptors for every connection, in the children too. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGALRM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    atexit(stop_server_at_exit);

    /* The watchdog: the whole run, generously. */
    int n_modes = 0;
    for (int m = 0; m < HB_MODES; m++)
        n_modes += opt.modes[m];
    double budget = 60;
    for (int d = 0; d < HB_DBS; d++)
        if (opt.dbs[d])
            budget += 200 + opt.runs * n_modes *
                                (opt.seconds + CHILD_SLACK_S + 5);
    alarm((unsigned)budget);

    static workload wls[HB_DBS];
    bool any_ran = false, all_good = true, all_missing = true;
    for (int d = 0; d < HB_DBS && !hb_interrupted; d++) {
        if (!opt.dbs[d])
            continue;
        workload *wl = &wls[d];
        char why[256];
        fprintf(stderr, "weft-hook-bench: %s: starting the server\n",
                hb_db_names[d]);
        if (hb_server_start(&server, (hb_db)d, opt.tasks, why, sizeof why) !=
            0) {
            snprintf(wl->skipped, sizeof wl->skipped, "%s", why);
            printf("\n%s: skipped: %s\n", what((hb_db)d), why);
            if (hb_server_missing((hb_db)d) == NULL) {
                all_good = false; /* installed, but would not start */
                all_missing = false;
            }
            continue;
        }
        snprintf(wl->server, sizeof wl->server, "%s", server.version);
        wl->ran = any_ran = true;
        for (unsigned r = 0; r < opt.runs && !hb_interrupted; r++) {
            for (int m = 0; m < HB_MODES && !hb_interrupted; m++) {
                if (!opt.modes[m])
                    continue;
                fprintf(stderr,
                        "weft-hook-bench: %s %s: %u connections, %g s, "
                        "run %u of %u\n",
                        hb_db_names[d], hb_mode_names[m], opt.tasks,
                        opt.seconds, r + 1, opt.runs);
                run_mode((hb_db)d, (hb_mode)m, &wl->rows[m]);
            }
        }
        for (int m = 0; m < HB_MODES; m++)
            if (wl->rows[m].ran && !row_good(&wl->rows[m]))
                all_good = false;
        hb_server_stop(&server);
        print_table((hb_db)d, wl);
    }
    hb_server_stop(&server);
    if (opt.json != NULL && write_json(opt.json, wls) != 0)
        all_good = false;
    if (hb_interrupted) {
        fprintf(stderr, "weft-hook-bench: %s\n",
                hb_interrupted == SIGALRM ? "stopped by the watchdog"
                                          : "interrupted");
        return 128 + hb_interrupted;
    }
    if (!any_ran && all_missing)
        return 77;
    return all_good ? 0 : 1;
}
