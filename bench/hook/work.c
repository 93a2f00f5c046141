/*
 * work.c — one mode of one workload, in a process of its own (the child
 * side of weft-hook-bench; hook_bench.h has the protocol).
 *
 * The program, the same in every mode: N clients (--tasks, 200), each
 * with a connection of its own, send synchronous commands (redis: GET of
 * a 16-byte value with hiredis' redisCommand; pq: `SELECT 1` with libpq's
 * PQexec) one after the other, checking every answer, for --seconds; and
 * a ticker sleeps 1 ms in a loop, measuring how late each wake-up is (the
 * time the sleep took, the clock read just before the call and just after
 * its return, minus 1 ms).
 *
 *   naive     the clients and the ticker are tasks of a pool of W workers
 *             (--workers, 2); a client calls the library as is, so each
 *             call blocks its worker thread in read(2) (what weft's
 *             monitor then does about stuck workers is part of the mode);
 *             the ticker loops weft_sleep(1 ms).  A client never
 *             switches once it runs: the monitor finds its worker stuck
 *             and spare threads take the queued clients, up to the pool's
 *             limit (256), so this ends up close to a thread per client.
 *   naive-nomon  the same on a pool made with WEFT_POOL_NO_MONITOR: no
 *             spares, so W clients run (each blocking its worker) and the
 *             others and the ticker wait for the end of the window.
 *   hooked    the same code, in the executable linked with libweft-hook:
 *             the library's blocking calls park the task instead.
 *   blocking  as naive, but each library call (the connect too) is run by
 *             weft_blocking: the task parks while a blocking thread makes
 *             the call.
 *   pthreads  no pool: N plain threads run the clients, and a plain
 *             thread the ticker, with nanosleep(1 ms).
 *
 * Sequence: the clients connect (in their task or thread) and wait on an
 * event; once every one is connected (or has failed to), main reads the
 * counters (getrusage, the server's CPU from /proc), sets the event, sleeps
 * the window, reads the counters again and sets the stop flag.  A command
 * counts if it completed before the stop flag was set; a ticker wake-up
 * counts if it came after the start.  Then main joins everyone and prints
 * the result line.  alarm(2) bounds the whole child (the driver has its
 * own deadline too); a watchdog thread, 3 s before that alarm, reports
 * where main waits and dumps every pool to stderr.
 */
#include "hook_bench.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#ifdef HB_HAVE_PQ
#include <libpq-fe.h>
#endif
#include <weft/weft.h>

const char *const hb_mode_names[HB_MODES] = { "naive", "naive-nomon",
                                              "hooked", "blocking",
                                              "pthreads" };
const char *const hb_db_names[HB_DBS] = { "redis", "pq" };

enum {
    READY_S = 60, /* every client connected, at most           */
    TAIL_S = 60,  /* after the window: everyone joined, at most */
    TICK_NS = 1000000,
};

uint64_t hb_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the client libraries ------------------------------------------ */

typedef struct args {
    hb_mode mode;
    hb_db db;
    unsigned port;
    unsigned tasks;
    unsigned workers;
    double seconds;
    long server_pid;
} args;

static args opt;

/* The first error seen, for stderr (one line is enough to say why). */
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;
static char first_err[256];

static void note_error(const char *what, const char *detail)
{
    pthread_mutex_lock(&err_lock);
    if (first_err[0] == '\0')
        snprintf(first_err, sizeof first_err, "%s: %s", what,
                 detail != NULL ? detail : "?");
    pthread_mutex_unlock(&err_lock);
}

/* Connect: the connection, or NULL (error noted). */
static void *db_connect(void)
{
    if (opt.db == HB_REDIS) {
        redisContext *c = redisConnect("127.0.0.1", (int)opt.port);
        if (c == NULL) {
            note_error("redisConnect", "no memory");
            return NULL;
        }
        if (c->err != 0) {
            note_error("redisConnect", c->errstr);
            redisFree(c);
            return NULL;
        }
        return c;
    }
#ifdef HB_HAVE_PQ
    char conninfo[160];
    snprintf(conninfo, sizeof conninfo,
             "host=127.0.0.1 port=%u user=postgres dbname=postgres "
             "sslmode=disable gssencmode=disable connect_timeout=30",
             opt.port);
    PGconn *pc = PQconnectdb(conninfo);
    if (pc == NULL) {
        note_error("PQconnectdb", "no memory");
        return NULL;
    }
    if (PQstatus(pc) != CONNECTION_OK) {
        note_error("PQconnectdb", PQerrorMessage(pc));
        PQfinish(pc);
        return NULL;
    }
    return pc;
#else
    note_error("pq", "not built with libpq");
    return NULL;
#endif
}

/* One command: 0 (answer right), 1 (wrong answer: go on), -1 (the
 * connection failed: stop). */
static int db_command(void *conn)
{
    if (opt.db == HB_REDIS) {
        redisContext *c = conn;
        redisReply *r = redisCommand(c, "GET %s", HB_REDIS_KEY);
        if (r == NULL) {
            note_error("redisCommand", c->errstr);
            return -1;
        }
        int rc = r->type == REDIS_REPLY_STRING &&
                         r->len == (int)strlen(HB_REDIS_VALUE) &&
                         memcmp(r->str, HB_REDIS_VALUE, (size_t)r->len) == 0
                     ? 0
                     : 1;
        if (rc != 0)
            note_error("GET", "wrong reply");
        freeReplyObject(r);
        return rc;
    }
#ifdef HB_HAVE_PQ
    PGconn *pc = conn;
    PGresult *res = PQexec(pc, "SELECT 1");
    int rc = 0;
    if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK) {
        note_error("SELECT 1", PQerrorMessage(pc));
        rc = PQstatus(pc) == CONNECTION_OK ? 1 : -1;
    } else if (PQntuples(res) != 1 || PQnfields(res) != 1 ||
               strcmp(PQgetvalue(res, 0, 0), "1") != 0) {
        note_error("SELECT 1", "wrong answer");
        rc = 1;
    }
    PQclear(res);
    return rc;
#else
    return -1;
#endif
}

static void db_close(void *conn)
{
    if (opt.db == HB_REDIS) {
        redisFree(conn);
        return;
    }
#ifdef HB_HAVE_PQ
    PQfinish(conn);
#endif
}

/* The blocking mode's hops: each call made by a blocking thread. */
typedef struct hop {
    void *conn;
    int rc;
} hop;

static void *hop_connect(void *p)
{
    ((hop *)p)->conn = db_connect();
    return NULL;
}

static void *hop_command(void *p)
{
    hop *h = p;
    h->rc = db_command(h->conn);
    return NULL;
}

static void *hop_close(void *p)
{
    db_close(((hop *)p)->conn);
    return NULL;
}

/* ---- the run -------------------------------------------------------- */

static weft_event ready_ev, go_ev;
static atomic_uint ready_count;
static atomic_bool stop_flag;
static _Atomic uint64_t go_ns; /* 0 until the window starts */
static _Atomic uint64_t total_commands, total_errors;

/* The ticker's samples (lateness in ns), written by the ticker alone. */
static uint64_t *samples;
static size_t samples_cap, samples_len;

static bool in_weft(void)
{
    return opt.mode != HB_PTHREADS;
}

static void announce_ready(void)
{
    if (atomic_fetch_add(&ready_count, 1) + 1 == opt.tasks)
        weft_event_set(&ready_ev);
}

static void *client(void *arg)
{
    (void)arg;
    bool hop_calls = opt.mode == HB_BLOCKING;
    hop h = { NULL, 0 };

    if (hop_calls) {
        int rc = weft_blocking(hop_connect, &h, NULL);
        if (rc != 0)
            note_error("weft_blocking(connect)", weft_strerror(rc));
    } else {
        h.conn = db_connect();
    }
    if (h.conn == NULL)
        atomic_fetch_add(&total_errors, 1);
    announce_ready();
    weft_event_wait(&go_ev);
    if (h.conn == NULL)
        return NULL;

    uint64_t done = 0, errors = 0;
    while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
        int rc;
        if (hop_calls) {
            int brc = weft_blocking(hop_command, &h, NULL);
            if (brc != 0) {
                note_error("weft_blocking(command)", weft_strerror(brc));
                errors++;
                break;
            }
            rc = h.rc;
        } else {
            rc = db_command(h.conn);
        }
        if (rc != 0) {
            errors++;
            if (rc < 0)
                break;
            continue;
        }
        if (!atomic_load_explicit(&stop_flag, memory_order_relaxed))
            done++;
    }
    atomic_fetch_add(&total_commands, done);
    atomic_fetch_add(&total_errors, errors);
    if (hop_calls)
        weft_blocking(hop_close, &h, NULL);
    else
        db_close(h.conn);
    return NULL;
}

static void *ticker(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_flag)) {
        uint64_t before = hb_now_ns();
        if (in_weft()) {
            weft_sleep(TICK_NS);
        } else {
            struct timespec ts = { 0, TICK_NS };
            nanosleep(&ts, NULL);
        }
        uint64_t after = hb_now_ns();
        uint64_t go = atomic_load(&go_ns);
        /* Every sleep that ended in the window (one that began before
         * and ended after the start too, so a ticker that never wakes
         * in the window shows its whole wait). */
        if (go != 0 && after >= go && samples_len < samples_cap)
            samples[samples_len++] =
                after - before > TICK_NS ? after - before - TICK_NS : 0;
    }
    return NULL;
}

/* Where main is after the window, for the watchdog (below). */
enum { AT_WINDOW, AT_TICKER, AT_CLIENTS, AT_DESTROY };
static const char *const at_names[] = {
    "in the window", "joining the ticker", "joining the clients",
    "destroying the pool"};
static _Atomic int main_at;
static _Atomic unsigned clients_joined;

/* Shortly before alarm(2) ends a child that hangs after its window, say
 * where main waits and what every pool runs (weft_dump_all: each
 * worker's task, its wait, the queues), so that the bench's stderr holds
 * the reason.  Started after the thread count (it is not one of the
 * program's threads); a child that ends in time never wakes it. */
static struct timespec watchdog_at;

static void *watchdog(void *arg)
{
    (void)arg;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &watchdog_at,
                           NULL) == EINTR)
        ;
    int at = atomic_load(&main_at);
    fprintf(stderr,
            "weft-hook-bench: child %s %s: still running near its alarm, "
            "main %s (%u of %u clients joined); every pool follows\n",
            hb_db_names[opt.db], hb_mode_names[opt.mode], at_names[at],
            atomic_load(&clients_joined), opt.tasks);
    if (in_weft())
        weft_dump_all(stderr);
    fflush(stderr);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* utime + stime of /proc/PID/stat, with cutime + cstime if `reaped`
 * (fields 14-17), in clock ticks; and its parent (field 4).  -1 if
 * unreadable. */
static long long proc_ticks(long pid, bool reaped, long *ppid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (p == NULL)
        return -1;
    /* After ") ": state(3) ppid(4) ... utime(14) stime(15) cutime(16)
     * cstime(17). */
    char state;
    long pp;
    unsigned long long ut, st;
    long long cut, cst;
    if (sscanf(p + 2,
               "%c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld",
               &state, &pp, &ut, &st, &cut, &cst) != 6)
        return -1;
    if (ppid != NULL)
        *ppid = pp;
    return (long long)(ut + st) + (reaped ? cut + cst : 0);
}

/* The server's CPU seconds so far: its own threads, the children it has
 * reaped, and its live children (postgres' backends).  -1 if unknown. */
static double server_cpu(void)
{
    if (opt.server_pid <= 0)
        return -1;
    long long ticks = proc_ticks(opt.server_pid, true, NULL);
    if (ticks < 0)
        return -1;
    DIR *d = opendir("/proc");
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            char *end;
            long pid = strtol(e->d_name, &end, 10);
            long ppid = 0;
            if (*end != '\0' || pid <= 0)
                continue;
            long long t = proc_ticks(pid, false, &ppid);
            if (t >= 0 && ppid == opt.server_pid)
                ticks += t;
        }
        closedir(d);
    }
    return (double)ticks / (double)sysconf(_SC_CLK_TCK);
}

static unsigned long long count_threads(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long n = 0;
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "Threads: %llu", &n) == 1)
            break;
    fclose(f);
    return n;
}

/* Where read() resolves in this process: libweft-hook's file when the
 * hook is linked, libc's otherwise. */
static void which_read(char *out, size_t len)
{
    Dl_info info;
    void *addr = (void *)read;
    const char *name = "?";
    if (dladdr(addr, &info) != 0 && info.dli_fname != NULL) {
        name = strrchr(info.dli_fname, '/');
        name = name != NULL ? name + 1 : info.dli_fname;
    }
    snprintf(out, len, "%s", name);
}

/* The redis key every GET reads, set from main's own connection. */
static int redis_setup(void)
{
    redisContext *c = redisConnect("127.0.0.1", (int)opt.port);
    if (c == NULL || c->err != 0) {
        fprintf(stderr, "weft-hook-bench: child: redis connect: %s\n",
                c != NULL ? c->errstr : "no memory");
        if (c != NULL)
            redisFree(c);
        return -1;
    }
    redisReply *r = redisCommand(c, "SET %s %s", HB_REDIS_KEY, HB_REDIS_VALUE);
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        fprintf(stderr, "weft-hook-bench: child: redis SET failed\n");
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
    return ok ? 0 : -1;
}

static void usage_exit(const char *why)
{
    fprintf(stderr, "weft-hook-bench: child: %s\n", why);
    exit(2);
}

static void parse(int argc, char **argv)
{
    opt.mode = HB_MODES;
    opt.db = HB_DBS;
    opt.tasks = 200;
    opt.workers = 2;
    opt.seconds = 3;
    if (argc < 2)
        usage_exit("no mode");
    for (int m = 0; m < HB_MODES; m++)
        if (strcmp(argv[1], hb_mode_names[m]) == 0)
            opt.mode = (hb_mode)m;
    if (opt.mode == HB_MODES)
        usage_exit("unknown mode");
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (strcmp(k, "--db") == 0) {
            for (int d = 0; d < HB_DBS; d++)
                if (strcmp(v, hb_db_names[d]) == 0)
                    opt.db = (hb_db)d;
        } else if (strcmp(k, "--port") == 0) {
            opt.port = (unsigned)strtoul(v, NULL, 10);
        } else if (strcmp(k, "--tasks") == 0) {
            opt.tasks = (unsigned)strtoul(v, NULL, 10);
        } else if (strcmp(k, "--workers") == 0) {
            opt.workers = (unsigned)strtoul(v, NULL, 10);
        } else if (strcmp(k, "--seconds") == 0) {
            opt.seconds = strtod(v, NULL);
        } else if (strcmp(k, "--server-pid") == 0) {
            opt.server_pid = strtol(v, NULL, 10);
        } else {
            usage_exit("unknown option");
        }
    }
    if (opt.db == HB_DBS || opt.port == 0 || opt.port > 65535 ||
        opt.tasks == 0 || opt.workers == 0 || !(opt.seconds > 0))
        usage_exit("bad arguments");
}

static double ru_seconds(const struct rusage *ru)
{
    return (double)ru->ru_utime.tv_sec + (double)ru->ru_stime.tv_sec +
           ((double)ru->ru_utime.tv_usec + (double)ru->ru_stime.tv_usec) / 1e6;
}

int hb_child_main(int argc, char **argv)
{
    parse(argc, argv);
    unsigned budget = (unsigned)(READY_S + TAIL_S + opt.seconds + 1);
    alarm(budget);
    clock_gettime(CLOCK_MONOTONIC, &watchdog_at);
    watchdog_at.tv_sec += (time_t)budget - 3;
    signal(SIGPIPE, SIG_IGN);

    hb_result res;
    memset(&res, 0, sizeof res);
    which_read(res.hook, sizeof res.hook);
#ifdef HB_HOOKED_BUILD
    if (opt.mode != HB_HOOKED)
        usage_exit("this executable runs the hooked mode only");
#else
    if (opt.mode == HB_HOOKED)
        usage_exit("the hooked mode is weft-hook-bench-hooked's");
#endif
    if (opt.db == HB_REDIS && redis_setup() != 0)
        return 1;

    samples_cap = (size_t)(opt.seconds * 1000.0 * 1.2) + 100;
    samples = calloc(samples_cap, sizeof *samples);
    if (samples == NULL)
        return 1;
    weft_event_init(&ready_ev);
    weft_event_init(&go_ev);

    weft_pool *pool = NULL;
    weft_task **tasks = NULL, *tick_task = NULL;
    pthread_t *threads = NULL, tick_thread;
    if (in_weft()) {
        weft_pool_opts po = { .threads = opt.workers, .name = "hb" };
        if (opt.mode == HB_NAIVE_NOMON)
            po.flags = WEFT_POOL_NO_MONITOR;
        int rc = weft_pool_create(&pool, &po);
        if (rc != 0) {
            fprintf(stderr, "weft-hook-bench: child: weft_pool_create: %s\n",
                    weft_strerror(rc));
            return 1;
        }
        tasks = calloc(opt.tasks, sizeof *tasks);
        if (tasks == NULL)
            return 1;
        rc = weft_spawn(&tick_task, pool, ticker, NULL, NULL);
        for (unsigned i = 0; rc == 0 && i < opt.tasks; i++)
            rc = weft_spawn(&tasks[i], pool, client, NULL, NULL);
        if (rc != 0) {
            fprintf(stderr, "weft-hook-bench: child: weft_spawn: %s\n",
                    weft_strerror(rc));
            return 1;
        }
    } else {
        threads = calloc(opt.tasks, sizeof *threads);
        if (threads == NULL)
            return 1;
        int rc = pthread_create(&tick_thread, NULL, ticker, NULL);
        for (unsigned i = 0; rc == 0 && i < opt.tasks; i++)
            rc = pthread_create(&threads[i], NULL, client, NULL);
        if (rc != 0) {
            fprintf(stderr, "weft-hook-bench: child: pthread_create: %s\n",
                    strerror(rc));
            return 1;
        }
    }

    if (weft_event_wait_for(&ready_ev, (uint64_t)READY_S * 1000000000u) != 0) {
        fprintf(stderr,
                "weft-hook-bench: child: %u of %u clients connected in %d s\n",
                atomic_load(&ready_count), opt.tasks, READY_S);
        return 1;
    }

    /* The window. */
    struct rusage ru0, ru1;
    double srv0 = server_cpu();
    getrusage(RUSAGE_SELF, &ru0);
    uint64_t t0 = hb_now_ns();
    atomic_store(&go_ns, t0);
    weft_event_set(&go_ev);
    uint64_t end = t0 + (uint64_t)(opt.seconds * 1e9);
    struct timespec end_ts = { (time_t)(end / 1000000000u),
                               (long)(end % 1000000000u) };
    uint64_t mid = t0 + (end - t0) * 9 / 10;
    struct timespec mid_ts = { (time_t)(mid / 1000000000u),
                               (long)(mid % 1000000000u) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &mid_ts, NULL) ==
           EINTR)
        ;
    /* Threads near the end of the window, while every client still runs
     * (the clients end at once after the stop flag). */
    res.threads = count_threads();
    pthread_t dog;
    if (pthread_create(&dog, NULL, watchdog, NULL) == 0)
        pthread_detach(dog);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &end_ts, NULL) ==
           EINTR)
        ;
    /* The server's first (its scan of /proc takes a while), and all of
     * it before the stop: the clients' closes end postgres backends,
     * whose CPU a scan under way could then miss. */
    double srv1 = server_cpu();
    getrusage(RUSAGE_SELF, &ru1);
    uint64_t t1 = hb_now_ns();
    atomic_store(&stop_flag, true);
    if (pool != NULL) {
        struct weft_pool_stats st = { .size = sizeof st };
        if (weft_pool_stats(pool, &st) == 0) {
            res.spares = st.spares_started;
            res.stalls = st.stalls;
        }
    }

    /* Everyone ends at its next check of the flag. */
    if (in_weft()) {
        atomic_store(&main_at, AT_TICKER);
        weft_sync_wait(tick_task, NULL);
        atomic_store(&main_at, AT_CLIENTS);
        for (unsigned i = 0; i < opt.tasks; i++) {
            weft_sync_wait(tasks[i], NULL);
            atomic_store(&clients_joined, i + 1);
        }
        atomic_store(&main_at, AT_DESTROY);
        weft_pool_destroy(pool);
    } else {
        atomic_store(&main_at, AT_TICKER);
        pthread_join(tick_thread, NULL);
        atomic_store(&main_at, AT_CLIENTS);
        for (unsigned i = 0; i < opt.tasks; i++) {
            pthread_join(threads[i], NULL);
            atomic_store(&clients_joined, i + 1);
        }
    }

    res.commands = atomic_load(&total_commands);
    res.errors = atomic_load(&total_errors);
    res.seconds = (double)(t1 - t0) / 1e9;
    res.cpu_s = ru_seconds(&ru1) - ru_seconds(&ru0);
    res.server_cpu_s = srv0 >= 0 && srv1 >= 0 ? srv1 - srv0 : -1;
    res.nvcsw = (uint64_t)(ru1.ru_nvcsw - ru0.ru_nvcsw);
    res.nivcsw = (uint64_t)(ru1.ru_nivcsw - ru0.ru_nivcsw);
    res.ticks = samples_len;
    if (samples_len > 0) {
        qsort(samples, samples_len, sizeof *samples, cmp_u64);
        res.ticker_max_ms = (double)samples[samples_len - 1] / 1e6;
        size_t r99 = (samples_len * 99 + 99) / 100; /* nearest rank */
        res.ticker_p99_ms = (double)samples[r99 - 1] / 1e6;
        res.ticker_p50_ms = (double)samples[(samples_len + 1) / 2 - 1] / 1e6;
    }
    if (first_err[0] != '\0')
        fprintf(stderr, "weft-hook-bench: %s %s: %llu errors, first: %s\n",
                hb_db_names[opt.db], hb_mode_names[opt.mode],
                (unsigned long long)res.errors, first_err);

    printf("result commands=%llu seconds=%.6f cpu_s=%.6f server_cpu_s=%.4f "
           "nvcsw=%llu nivcsw=%llu ticker_max_ms=%.3f ticker_p99_ms=%.3f "
           "ticker_p50_ms=%.3f ticks=%llu errors=%llu threads=%llu "
           "spares=%llu stalls=%llu hook=%s\n",
           (unsigned long long)res.commands, res.seconds, res.cpu_s,
           res.server_cpu_s, (unsigned long long)res.nvcsw,
           (unsigned long long)res.nivcsw, res.ticker_max_ms,
           res.ticker_p99_ms, res.ticker_p50_ms,
           (unsigned long long)res.ticks,
           (unsigned long long)res.errors, (unsigned long long)res.threads,
           (unsigned long long)res.spares, (unsigned long long)res.stalls,
           res.hook);
    fflush(stdout);
    free(samples);
    free(tasks);
    free(threads);
    return 0;
}
