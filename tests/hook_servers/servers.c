/*
 * servers.c — running the hook_servers tests' servers, the watchdog and
 * the ticker (servers.h says why each is as it is).
 *
 * Everything here but the ticker task runs on plain threads (the main
 * thread, the watchdog's, the plain ticker's), whose calls (connect,
 * nanosleep, read) the interposition library passes straight to libc:
 * the servers are started and stopped the same with the hook linked and
 * without it (a build of these files without the hook is how the
 * tickers were seen to fail: a 1 to 2 s gap, "slept or blocked").
 */
#include "servers.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <grp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* State: written by the main thread, read by the watchdog's cleanup    */

enum { MAX_KIDS = 8 };

static struct kid {
    _Atomic pid_t pid; /* 0: free slot */
    int stop_signal;
} kids[MAX_KIDS];

static char dir[128];           /* the temporary directory; "" if none   */
static int switch_user;         /* children drop root to run_uid/gid     */
static uid_t run_uid;
static gid_t run_gid;
static atomic_int cleaned;      /* the cleanup ran (or runs) once only   */
static _Atomic(weft_pool *) watched_pool;
static atomic_int atexit_set;

uint64_t hs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int remove_one(const char *path, const struct stat *st, int flag,
                      struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0; /* remove what can be removed, whatever fails */
}

/* Waits for pid at most ms; status as hs_wait_exit, or -2 when it was
 * already reaped (by the other thread's cleanup). */
static int reap(pid_t pid, int ms)
{
    uint64_t deadline = hs_now_ns() + HS_MS(ms);
    for (;;) {
        int status;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status)
                                     : 128 + WTERMSIG(status);
        if (r < 0 && errno != EINTR)
            return -2;
        if (hs_now_ns() >= deadline)
            return -1;
        sleep_ms(5);
    }
}

static void forget(pid_t pid)
{
    for (int i = 0; i < MAX_KIDS; i++) {
        pid_t p = pid;
        atomic_compare_exchange_strong(&kids[i].pid, &p, 0);
    }
}

/* Stops every child (its stop signal, 5 s, then SIGKILL to its process
 * group) and removes the directory.  Once, from whichever thread comes
 * first: atexit on the main thread, or the watchdog. */
static void cleanup(void)
{
    if (atomic_exchange(&cleaned, 1))
        return;
    for (int i = 0; i < MAX_KIDS; i++) {
        pid_t pid = atomic_load(&kids[i].pid);
        if (pid > 0)
            kill(pid, kids[i].stop_signal);
    }
    for (int i = 0; i < MAX_KIDS; i++) {
        pid_t pid = atomic_load(&kids[i].pid);
        if (pid <= 0)
            continue;
        if (reap(pid, 5000) == -1) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            reap(pid, 5000);
        }
        forget(pid);
    }
    if (dir[0] != '\0')
        nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void ensure_atexit(void)
{
    if (!atomic_exchange(&atexit_set, 1))
        atexit(cleanup);
}

_Noreturn void hs_skip(const char *what, const char *packages)
{
    printf("SKIP: %s not found; install the Debian packages: %s\n", what,
           packages);
    fflush(stdout);
    exit(77);
}

_Noreturn void hs_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1); /* atexit: cleanup */
}

/* ------------------------------------------------------------------ */
/* Programs, user, directory, files, ports                              */

const char *hs_find_program(const char *const *patterns, char *buf,
                            size_t len)
{
    for (const char *const *p = patterns; *p != NULL; p++) {
        glob_t g;
        if (glob(*p, 0, NULL, &g) != 0)
            continue;
        /* The highest version: strverscmp orders .../9/bin before
         * .../15/bin, where glob's own sort would not. */
        const char *best = NULL;
        for (size_t i = 0; i < g.gl_pathc; i++)
            if (access(g.gl_pathv[i], X_OK) == 0 &&
                (best == NULL || strverscmp(g.gl_pathv[i], best) > 0))
                best = g.gl_pathv[i];
        if (best != NULL && strlen(best) < len) {
            strcpy(buf, best);
            globfree(&g);
            return buf;
        }
        globfree(&g);
    }
    return NULL;
}

void hs_choose_user(void)
{
    ensure_atexit();
    if (geteuid() != 0)
        return;
    /* Looked up here, not in the child between fork and exec, where only
     * async-signal-safe calls belong. */
    struct passwd *pw = getpwnam("postgres");
    if (pw == NULL)
        pw = getpwnam("nobody");
    if (pw == NULL)
        hs_fail("running as root, and neither 'postgres' nor 'nobody' "
                "exists to run the servers as");
    switch_user = 1;
    run_uid = pw->pw_uid;
    run_gid = pw->pw_gid;
    printf("running as root: the servers run as '%s' (uid %u)\n",
           pw->pw_name, (unsigned)run_uid);
}

const char *hs_tmpdir(const char *tag)
{
    ensure_atexit();
    /* postgres puts its Unix socket here: a sun_path holds 107 bytes. */
    const char *base = getenv("TMPDIR");
    if (base == NULL || base[0] != '/' || strlen(base) > 40)
        base = "/tmp";
    snprintf(dir, sizeof dir, "%s/weft-hs-%s-XXXXXX", base, tag);
    if (mkdtemp(dir) == NULL) {
        int e = errno;
        dir[0] = '\0';
        hs_fail("mkdtemp under %s: %s", base, strerror(e));
    }
    if (switch_user && chown(dir, run_uid, run_gid) != 0)
        hs_fail("chown %s: %s", dir, strerror(errno));
    return dir;
}

void hs_write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        hs_fail("creating %s: %s", path, strerror(errno));
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            hs_fail("writing %s: %s", path, strerror(errno));
        p += n;
        len -= (size_t)n;
    }
    if (close(fd) != 0)
        hs_fail("closing %s: %s", path, strerror(errno));
}

static struct sockaddr_in loopback(unsigned port)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

unsigned hs_free_port(void)
{
    struct sockaddr_in a = loopback(0);
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        hs_fail("finding a free port: %s", strerror(errno));
    close(fd);
    return ntohs(a.sin_port);
}

/* ------------------------------------------------------------------ */
/* Children                                                             */

pid_t hs_spawn(char *const argv[], const char *log, int stop_signal)
{
    ensure_atexit();
    int slot = -1;
    for (int i = 0; i < MAX_KIDS && slot < 0; i++)
        if (atomic_load(&kids[i].pid) == 0)
            slot = i;
    if (slot < 0)
        hs_fail("more than %d children", MAX_KIDS);
    int logfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (logfd < 0 || nullfd < 0)
        hs_fail("opening %s: %s", log, strerror(errno));
    if (switch_user && fchown(logfd, run_uid, run_gid) != 0)
        hs_fail("chown %s: %s", log, strerror(errno));
    pid_t parent = getpid();
    fflush(NULL); /* nothing buffered twice */

    pid_t pid = fork();
    if (pid < 0)
        hs_fail("fork: %s", strerror(errno));
    if (pid == 0) {
        /* The child of a threaded process: async-signal-safe calls only
         * until exec. */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        setpgid(0, 0);
        if (dup2(nullfd, STDIN_FILENO) < 0 || dup2(logfd, STDOUT_FILENO) < 0 ||
            dup2(logfd, STDERR_FILENO) < 0)
            _exit(126);
        if (switch_user && (setgroups(0, NULL) != 0 ||
                            setresgid(run_gid, run_gid, run_gid) != 0 ||
                            setresuid(run_uid, run_uid, run_uid) != 0))
            _exit(126);
        /* After the change of user, which clears it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) /* the test died before the prctl */
            _exit(126);
        if (dir[0] != '\0' && chdir(dir) != 0)
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    setpgid(pid, pid); /* as the child does: whichever runs first */
    close(logfd);
    close(nullfd);
    kids[slot].stop_signal = stop_signal;
    atomic_store(&kids[slot].pid, pid);
    return pid;
}

int hs_wait_exit(pid_t pid, int ms)
{
    int status = reap(pid, ms);
    if (status != -1)
        forget(pid);
    return status == -2 ? -1 : status;
}

void hs_print_log(const char *log)
{
    FILE *f = fopen(log, "r");
    if (f == NULL)
        return;
    /* The last 40 lines: a server says why it would not start at the end. */
    static char lines[40][256];
    unsigned n = 0;
    while (fgets(lines[n % 40], sizeof lines[0], f) != NULL)
        n++;
    fclose(f);
    fprintf(stderr, "---- %s (last lines) ----\n", log);
    for (unsigned i = n > 40 ? n - 40 : 0; i < n; i++)
        fputs(lines[i % 40], stderr);
    fprintf(stderr, "----\n");
}

static int accepts(unsigned port)
{
    struct sockaddr_in a = loopback(port);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

int hs_wait_ready(pid_t pid, unsigned port, int ms, const char *log)
{
    uint64_t deadline = hs_now_ns() + HS_MS(ms);
    while (!accepts(port)) {
        int status = reap(pid, 0);
        if (status >= 0) {
            forget(pid);
            fprintf(stderr, "the server exited (status %d) before it "
                    "accepted on port %u\n", status, port);
            hs_print_log(log);
            return -1;
        }
        if (hs_now_ns() >= deadline) {
            hs_print_log(log);
            hs_fail("the server did not accept on 127.0.0.1:%u within %d "
                    "ms", port, ms);
        }
        sleep_ms(10);
    }
    return 0;
}

int hs_stop(pid_t pid)
{
    int sig = SIGTERM;
    for (int i = 0; i < MAX_KIDS; i++)
        if (atomic_load(&kids[i].pid) == pid)
            sig = kids[i].stop_signal;
    kill(pid, sig);
    int status = reap(pid, 10000);
    if (status == -1) {
        fprintf(stderr, "pid %d still runs 10 s after signal %d: "
                "killing its group\n", (int)pid, sig);
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        status = reap(pid, 10000);
    }
    forget(pid);
    return status < 0 ? -1 : status;
}

/* ------------------------------------------------------------------ */
/* Watchdog                                                             */

static void *watchdog(void *arg)
{
    unsigned seconds = (unsigned)(uintptr_t)arg;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += seconds;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) ==
           EINTR)
        ;
    fprintf(stderr, "FAIL: watchdog: the test still runs after %u s; "
            "its pool:\n", seconds);
    weft_pool *p = atomic_load(&watched_pool);
    if (p != NULL)
        weft_pool_dump(p, stderr);
    fflush(stderr);
    cleanup();
    _exit(1);
}

void hs_watchdog_start(unsigned seconds)
{
    ensure_atexit();
    pthread_t t;
    int e = pthread_create(&t, NULL, watchdog, (void *)(uintptr_t)seconds);
    if (e != 0)
        hs_fail("watchdog thread: %s", strerror(e));
    pthread_detach(t);
}

void hs_watch_pool(weft_pool *pool)
{
    atomic_store(&watched_pool, pool);
}

/* ------------------------------------------------------------------ */
/* Pool and tickers                                                     */

weft_pool *hs_pool(void)
{
    weft_pool_opts o = {.threads = 2, .name = "hs",
                        .flags = WEFT_POOL_NO_MONITOR};
    weft_pool *p = NULL;
    int e = weft_pool_create(&p, &o);
    if (e != 0)
        hs_fail("weft_pool_create: %s", weft_strerror(e));
    hs_watch_pool(p);
    return p;
}

void hs_pool_destroy(weft_pool *pool)
{
    hs_watch_pool(NULL);
    int e = weft_pool_destroy(pool);
    if (e != 0)
        hs_fail("weft_pool_destroy: %s", weft_strerror(e));
}

enum { LOG_CAP = 1u << 18 }; /* ticks: over 4 min at 1 ms */

static void log_init(hs_tick_log *l, int with_thread)
{
    memset(l, 0, sizeof *l);
    l->cap = LOG_CAP;
    l->t = malloc(LOG_CAP * sizeof *l->t);
    if (with_thread) {
        l->tid = malloc(LOG_CAP * sizeof *l->tid);
        l->cpu = malloc(LOG_CAP * sizeof *l->cpu);
        l->runq = malloc(LOG_CAP * sizeof *l->runq);
    }
    if (l->t == NULL ||
        (with_thread && (l->tid == NULL || l->cpu == NULL || l->runq == NULL)))
        hs_fail("no memory for the tick logs");
}

static void log_free(hs_tick_log *l)
{
    free(l->t);
    free(l->tid);
    free(l->cpu);
    free(l->runq);
    memset(l, 0, sizeof *l);
}

/* The calling thread's time on a CPU and waiting on a run queue, in ns
 * (/proc/thread-self/schedstat); 0 and 0 where the kernel has no such
 * file.  Read by the ticker task on the worker that runs it: the file's
 * read goes through the hook, which passes a read of a non-socket
 * straight to libc. */
static void read_schedstat(uint64_t *cpu, uint64_t *runq)
{
    *cpu = *runq = 0;
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[128];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    unsigned long long c, q;
    if (sscanf(buf, "%llu %llu", &c, &q) == 2)
        *cpu = c, *runq = q;
}

/* Appends a tick; past the capacity the log just stops (the online
 * figures go on). */
static void log_tick(hs_tick_log *l, uint64_t t, int with_thread)
{
    if (l->n >= l->cap)
        return;
    if (with_thread) {
        l->tid[l->n] = gettid();
        read_schedstat(&l->cpu[l->n], &l->runq[l->n]);
    }
    l->t[l->n++] = t;
}

static void *ticker(void *arg)
{
    hs_ticker *tk = arg;
    uint64_t prev = tk->start_ns;
    log_tick(&tk->pool_log, prev, 1);
    while (!atomic_load(&tk->stop)) {
        int e = weft_sleep(HS_MS(1));
        if (e != 0) {
            fprintf(stderr, "ticker: weft_sleep: %s\n", weft_strerror(e));
            return (void *)1;
        }
        uint64_t now = hs_now_ns();
        log_tick(&tk->pool_log, now, 1);
        if (now - prev > tk->worst_gap_ns) {
            tk->worst_gap_ns = now - prev;
            tk->worst_at_ns = now - tk->start_ns;
        }
        prev = now;
        tk->ticks++;
    }
    return NULL;
}

/* The plain thread's ticker: the same loop with nanosleep, outside the
 * pool (servers.h, hs_ticker). */
static void *plain_ticker(void *arg)
{
    hs_ticker *tk = arg;
    uint64_t prev = tk->start_ns;
    log_tick(&tk->plain_log, prev, 0);
    while (!atomic_load(&tk->plain_stop)) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
        uint64_t now = hs_now_ns();
        log_tick(&tk->plain_log, now, 0);
        if (now - prev > tk->plain_worst_gap_ns)
            tk->plain_worst_gap_ns = now - prev;
        prev = now;
        tk->plain_ticks++;
    }
    return NULL;
}

void hs_ticker_start(hs_ticker *tk, weft_pool *pool)
{
    memset(tk, 0, sizeof *tk);
    log_init(&tk->pool_log, 1);
    log_init(&tk->plain_log, 0);
    tk->start_ns = hs_now_ns();
    /* The plain thread first and (hs_ticker_stop) last: its log covers
     * every gap of the task's. */
    int e = pthread_create(&tk->plain_thread, NULL, plain_ticker, tk);
    if (e != 0)
        hs_fail("the plain ticker's thread: %s", strerror(e));
    weft_task_opts o = {.name = "ticker"};
    e = weft_spawn(&tk->task, pool, ticker, tk, &o);
    if (e != 0)
        hs_fail("spawning the ticker: %s", weft_strerror(e));
}

void hs_ticker_stop(hs_ticker *tk)
{
    atomic_store(&tk->stop, 1);
    void *r = NULL;
    int e = weft_sync_wait(tk->task, &r);
    if (e != 0 || r != NULL)
        hs_fail("the ticker: %s", e ? weft_strerror(e) : "weft_sleep failed");
    atomic_store(&tk->plain_stop, 1);
    pthread_join(tk->plain_thread, NULL);
}

/* The longest stretch of [a, b] in which the plain thread did not tick.
 * *k walks the plain log forwards across calls (the gaps come in
 * order).  Past the plain log's end nothing is explained. */
static uint64_t plain_pause_within(const hs_tick_log *l, size_t *k,
                                   uint64_t a, uint64_t b)
{
    while (*k + 1 < l->n && l->t[*k + 1] <= a)
        (*k)++;
    uint64_t longest = 0;
    for (size_t i = *k; i + 1 < l->n && l->t[i] < b; i++) {
        uint64_t lo = l->t[i] > a ? l->t[i] : a;
        uint64_t hi = l->t[i + 1] < b ? l->t[i + 1] : b;
        if (hi > lo && hi - lo > longest)
            longest = hi - lo;
    }
    return longest;
}

/* Finds the gap of the task's ticks with the most time unexplained by
 * the machine: the gap less the longer of the plain thread's pause in
 * it and, when one worker ran both ends, that worker's wait on a run
 * queue meanwhile. */
static void analyse(hs_ticker *tk)
{
    const hs_tick_log *pl = &tk->pool_log;
    size_t k = 0;
    for (size_t i = 0; i + 1 < pl->n; i++) {
        uint64_t a = pl->t[i], b = pl->t[i + 1];
        uint64_t pause = plain_pause_within(&tk->plain_log, &k, a, b);
        int same = pl->tid[i] == pl->tid[i + 1] && pl->cpu[i + 1] != 0;
        /* Samples come a moment after the ticks: clamp. */
        uint64_t runq = same && pl->runq[i + 1] > pl->runq[i]
                            ? pl->runq[i + 1] - pl->runq[i] : 0;
        uint64_t cpu = same && pl->cpu[i + 1] > pl->cpu[i]
                           ? pl->cpu[i + 1] - pl->cpu[i] : 0;
        uint64_t explained = pause > runq ? pause : runq;
        if (explained > b - a)
            explained = b - a;
        uint64_t excess = b - a - explained;
        if (excess > tk->worst_excess_ns || i == 0) {
            tk->worst_excess_ns = excess;
            tk->x_gap_ns = b - a;
            tk->x_at_ns = b - tk->start_ns;
            tk->x_pause_ns = pause;
            tk->x_same_thread = same;
            tk->x_cpu_ns = cpu;
            tk->x_runq_ns = runq;
        }
    }
}

int hs_ticker_report(const char *test, hs_ticker *tk, uint64_t run_ns)
{
    analyse(tk);
    printf("%s: run %.3f s; ticker task: %llu ticks, worst gap %.1f ms "
           "(ending %.3f s into the run); plain thread: %llu ticks, worst "
           "gap %.1f ms\n",
           test, (double)run_ns / 1e9, (unsigned long long)tk->ticks,
           (double)tk->worst_gap_ns / 1e6, (double)tk->worst_at_ns / 1e9,
           (unsigned long long)tk->plain_ticks,
           (double)tk->plain_worst_gap_ns / 1e6);
    char worker[160] = "its ends ran on different workers";
    if (tk->x_same_thread) {
        uint64_t rest = tk->x_gap_ns - (tk->x_cpu_ns + tk->x_runq_ns <
                                                tk->x_gap_ns
                                            ? tk->x_cpu_ns + tk->x_runq_ns
                                            : tk->x_gap_ns);
        snprintf(worker, sizeof worker,
                 "its worker ran %.1f ms, waited for a CPU %.1f ms, slept "
                 "or blocked %.1f ms",
                 (double)tk->x_cpu_ns / 1e6, (double)tk->x_runq_ns / 1e6,
                 (double)rest / 1e6);
    }
    printf("%s: most unexplained gap: %.1f ms of %.1f ms (ending %.3f s "
           "into the run; the plain thread paused %.1f ms in it; %s)\n",
           test, (double)tk->worst_excess_ns / 1e6,
           (double)tk->x_gap_ns / 1e6, (double)tk->x_at_ns / 1e9,
           (double)tk->x_pause_ns / 1e6, worker);
    int bad = 0;
    if (tk->worst_excess_ns > HS_MS(HS_GAP_MAX_MS)) {
        fprintf(stderr, "FAIL: %s: the ticker task waited %.1f ms between "
                "two ticks, %.1f ms of it not explained by the machine "
                "(limit %d ms): a worker was blocked, not parked\n",
                test, (double)tk->x_gap_ns / 1e6,
                (double)tk->worst_excess_ns / 1e6, HS_GAP_MAX_MS);
        bad++;
    }
    if (tk->ticks < HS_TICKS_MIN) {
        fprintf(stderr, "FAIL: %s: the ticker task ticked %llu times (at "
                "least %d expected)\n", test, (unsigned long long)tk->ticks,
                HS_TICKS_MIN);
        bad++;
    }
    log_free(&tk->pool_log);
    log_free(&tk->plain_log);
    fflush(stdout);
    return bad;
}
