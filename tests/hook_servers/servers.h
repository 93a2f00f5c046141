/*
 * servers.h — what the hook_servers tests share: running a real server
 * (redis-server, postgres, nginx) on 127.0.0.1 from a temporary
 * directory, stopping it whatever happens to the test, and the ticker
 * that shows whether the pool froze while unmodified blocking clients
 * (hiredis, libpq, libcurl) talked to that server from its tasks.
 *
 * Why a ticker.  The interposition library (docs/foreign.md) must turn a
 * client's blocking read, poll or connect, made in a pool task, into a
 * park of that task, so that the worker runs other tasks meanwhile.  A
 * task that sleeps 1 ms in a loop and records its worst gap between two
 * ticks sees the difference at once: when a call blocks its worker
 * instead, the gap is as long as the call (a 2 s BLPOP, a 1 s pg_sleep, a
 * 1.6 s rate-limited download).  The pools here run without the monitor
 * (WEFT_POOL_NO_MONITOR): its spare threads would fire a stuck worker's
 * timers and hide a call the hook let block, which is exactly what these
 * tests are there to catch.
 *
 * Cleanup.  Every process started here gets its own process group, a
 * parent-death signal (SIGKILL, once it runs as the user it will run as:
 * a change of credentials clears it) and a place in a table that an
 * atexit handler and the watchdog thread stop and reap; the temporary
 * directory is removed the same way.  So a failing check, a hung hook
 * (the watchdog) or a crash of the test (the parent-death signal) leaves
 * no server behind.
 *
 * Threads: hs_fail, the server calls and the ticker's start and stop are
 * for the main thread; in tasks, report through CHECK (check.h).
 */
#ifndef WEFT_TEST_HOOK_SERVERS_H
#define WEFT_TEST_HOOK_SERVERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <weft/weft.h>

#define HS_MS(n) ((uint64_t)(n) * 1000000u)

/* CLOCK_MONOTONIC in ns. */
uint64_t hs_now_ns(void);

/* Prints "SKIP: <what> not found; Debian packages: <packages>" and exits
 * 77, which meson reports as skipped. */
_Noreturn void hs_skip(const char *what, const char *packages);

/* Prints "FAIL: ...", stops the servers, removes the directory, exits 1. */
_Noreturn void hs_fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* The first of the glob patterns that names an executable file (the last
 * match of a pattern in sorted order: the highest version of
 * /usr/lib/postgresql/ * /bin/initdb), copied to buf; NULL if none. */
const char *hs_find_program(const char *const *patterns, char *buf,
                            size_t len);

/* Whom the servers run as.  postgres refuses to run as root: when this
 * process is root the servers are started as the user 'postgres', else
 * 'nobody' (the temporary directory is given to that user); otherwise as
 * this process's user.  Fills the globals below; call once, first. */
void hs_choose_user(void);

/* The run's temporary directory ($TMPDIR if short enough for a Unix
 * socket path under it, else /tmp), owned by the servers' user; removed
 * at exit.  Returns its path. */
const char *hs_tmpdir(const char *tag);

/* Writes data to path (mode 0644), or fails the test. */
void hs_write_file(const char *path, const void *data, size_t len);

/* A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0,
 * read back, released; the server binds it next, so a start that fails
 * for "address in use" is worth one more try with another). */
unsigned hs_free_port(void);

/* Starts argv[0] as the servers' user in the temporary directory, in its
 * own process group, stdout and stderr appended to log, with
 * stop_signal as the signal that asks it to end (SIGTERM for redis and
 * nginx, SIGINT for postgres's fast shutdown).  It is stopped at exit
 * unless hs_stop or hs_wait_exit reaps it first.  Returns its pid. */
pid_t hs_spawn(char *const argv[], const char *log, int stop_signal);

/* Waits at most ms for pid (from hs_spawn) to exit; returns its exit
 * status (128 + signal for a signal), or -1 (still running after ms). */
int hs_wait_exit(pid_t pid, int ms);

/* Waits until 127.0.0.1:port accepts a connection, for at most ms.
 * Returns 0; -1 if pid exited first (it is reaped; its log is printed).
 * Fails the test when ms pass. */
int hs_wait_ready(pid_t pid, unsigned port, int ms, const char *log);

/* Sends pid its stop signal and waits 10 s for it to exit, then kills
 * its process group.  Returns its exit status (as hs_wait_exit). */
int hs_stop(pid_t pid);

/* Prints the last lines of a log file on stderr (after a failure). */
void hs_print_log(const char *log);

/* The watchdog: a thread that, seconds from now, prints what the pool's
 * tasks are doing (weft_pool_dump of the pool hs_watch_pool named), stops
 * every server, removes the directory and exits 1: a hook that leaves a
 * task parked forever fails the test rather than hanging it until
 * meson's timeout, which would leave the servers running. */
void hs_watchdog_start(unsigned seconds);
void hs_watch_pool(weft_pool *pool);

/* A pool of 2 workers without the monitor (see the top), which the
 * watchdog dumps; and its destroy, which the watchdog no longer dumps. */
weft_pool *hs_pool(void);
void hs_pool_destroy(weft_pool *pool);

/* The ticker (see the top): a task that sleeps 1 ms (weft_sleep) in a
 * loop until stopped, recording when it ticked.
 *
 * Not every long gap is a blocked worker: a loaded machine (the server,
 * postgres's 100 fresh backends, other builds on 2 cores) can keep a
 * worker, or the whole process, off the CPU for a hundred milliseconds
 * and more.  So the limit is on the part of a gap that the machine does
 * not explain, which is the gap less the longer of:
 *   - the longest pause, within the gap, of a plain thread of this
 *     process that ticks alongside with nanosleep (outside the pool): a
 *     worker blocked in a call the hook let through stops the task's
 *     ticks, not the plain thread's;
 *   - when one worker ran the ticks at both ends (the usual case: a
 *     timer wakes its task on its own worker), that worker's time on a
 *     run queue in between, from /proc/thread-self/schedstat (runnable
 *     but waiting for a CPU, not blocked).
 * The worst gap, the most unexplained one and, for that one, how its
 * worker spent the time (on a CPU, waiting for one, asleep or blocked
 * in the kernel) are printed. */
typedef struct hs_tick_log {
    uint64_t *t;      /* tick times (hs_now_ns), the start first      */
    pid_t *tid;       /* the task's log: the thread that ticked       */
    uint64_t *cpu;    /* ... its time on a CPU then (schedstat)       */
    uint64_t *runq;   /* ... and on a run queue                       */
    size_t n, cap;
} hs_tick_log;

typedef struct hs_ticker {
    atomic_int stop, plain_stop;
    uint64_t start_ns;
    weft_task *task;
    pthread_t plain_thread;
    hs_tick_log pool_log, plain_log;
    uint64_t ticks, worst_gap_ns, worst_at_ns;    /* the task's     */
    uint64_t plain_ticks, plain_worst_gap_ns;     /* the thread's   */
    /* hs_ticker_report: the gap with the most unexplained time, and
     * what was found about it. */
    uint64_t worst_excess_ns, x_gap_ns, x_at_ns, x_pause_ns;
    int x_same_thread;
    uint64_t x_cpu_ns, x_runq_ns;
} hs_ticker;

void hs_ticker_start(hs_ticker *tk, weft_pool *pool);
void hs_ticker_stop(hs_ticker *tk);

/* The limits: more than HS_GAP_MAX_MS of a gap unexplained means a
 * worker was blocked (the blocking calls here last 1 s and more: 2 s in
 * hiredis's BLPOP, 1 s in pg_sleep, 1.5 s in the paced download); fewer
 * than HS_TICKS_MIN ticks means the ticker hardly ran. */
#define HS_GAP_MAX_MS 300
#define HS_TICKS_MIN 100

/* Prints the tickers' figures and the run's time, and returns the
 * number of limits broken (0 or more), each printed as FAIL. */
int hs_ticker_report(const char *test, hs_ticker *tk, uint64_t run_ns);

#endif
