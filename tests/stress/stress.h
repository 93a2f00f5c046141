/*
 * stress.h — shared helpers for the stress suite.
 *
 * Each stress program is bounded and runs under a watchdog thread: if the
 * progress counter does not move for STRESS_STALL_S seconds (a lost
 * wakeup, a deadlock), or the whole run passes its time limit, it prints
 * what it was doing and aborts.  Failed checks are counted (any thread)
 * and turn into a non-zero exit.
 *
 * WEFT_STRESS_SCALE (environment, default 1.0) scales every iteration
 * count, e.g. 0.1 under a sanitizer or valgrind.
 */
#ifndef STRESS_H
#define STRESS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <weft/coro.h>
#include <weft/event.h>
#include <weft/pool.h>
#include <weft/task.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define P(x) ((void *)(intptr_t)(x))
#define I(p) ((intptr_t)(p))

#ifndef STRESS_STALL_S
#define STRESS_STALL_S 30
#endif

__attribute__((unused)) static atomic_ulong st_progress;
__attribute__((unused)) static const char *volatile st_phase = "start";
__attribute__((unused)) static const char *st_name = "stress";
/* Called by the watchdog before it aborts, to print what a test knows of
 * its stall (a pool's internal state, say). */
__attribute__((unused)) static void (*volatile st_on_stall)(void);

#include "../check.h"

/* Fatal on the main thread: print and exit. */
#define REQUIRE(c)                                                      \
    do {                                                                \
        if (!(c)) {                                                     \
            fprintf(stderr, "%s:%d: %s: required: %s\n", __FILE__,      \
                    __LINE__, st_name, #c);                             \
            exit(1);                                                    \
        }                                                               \
    } while (0)

#define REQUIRE_EQ(a, b)                                                \
    do {                                                                \
        long long st_a_ = (long long)(a), st_b_ = (long long)(b);       \
        if (st_a_ != st_b_) {                                           \
            fprintf(stderr, "%s:%d: %s: required: %s == %s (%lld vs %lld)\n", \
                    __FILE__, __LINE__, st_name, #a, #b, st_a_, st_b_); \
            exit(1);                                                    \
        }                                                               \
    } while (0)

static inline uint64_t st_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void st_sleep_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = ms / 1000,
                           .tv_nsec = (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static inline void st_spin(unsigned n)
{
    for (volatile unsigned i = 0; i < n; i++)
        ;
}

/* xorshift64*: a cheap per-thread generator. */
static inline uint64_t st_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static inline uint64_t st_seed(uint64_t k)
{
    uint64_t s = (st_now_ns() ^ (k * 0x9E3779B97F4A7C15ULL)) | 1;
    return s;
}

/* WEFT_STRESS_SCALE times n, at least 1. */
static inline long st_scaled(long n)
{
    const char *e = getenv("WEFT_STRESS_SCALE");
    double f = e ? atof(e) : 1.0;
    if (!(f > 0))
        f = 1.0;
    long r = (long)((double)n * f);
    return r < 1 ? 1 : r;
}

static inline void st_tick(void) { atomic_fetch_add(&st_progress, 1); }

struct st_watchdog {
    unsigned total_s;
    uint64_t t0;
};

static struct st_watchdog st_wd;

/* For a stall report: each thread of the process, from /proc (its name,
 * its state, and the system call it is in, with its arguments: under
 * qemu-user these are the host threads that run the guest's). */
__attribute__((unused)) static void st_print_threads(void)
{
    static const char *const files[] = {"comm", "stat", "syscall"};
    char path[300], line[512];
    DIR *dir = opendir("/proc/self/task");
    if (!dir)
        return;
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (e->d_name[0] == '.')
            continue;
        fprintf(stderr, "thread %s:", e->d_name);
        for (unsigned i = 0; i < sizeof files / sizeof *files; i++) {
            snprintf(path, sizeof path, "/proc/self/task/%s/%s", e->d_name,
                     files[i]);
            FILE *f = fopen(path, "r");
            if (f && fgets(line, sizeof line, f)) {
                line[strcspn(line, "\n")] = '\0';
                /* Of stat, only the state: the field after "(comm) ". */
                const char *shown = line;
                char *close = i == 1 ? strrchr(line, ')') : NULL;
                if (close && close[1] == ' ' && close[2]) {
                    close[3] = '\0';
                    shown = close + 2;
                }
                fprintf(stderr, " %s %s", files[i], shown);
            }
            if (f)
                fclose(f);
        }
        fputc('\n', stderr);
    }
    closedir(dir);
}

static inline void *st_watchdog_thread(void *arg)
{
    (void)arg;
    unsigned long last = atomic_load(&st_progress);
    uint64_t last_change = st_now_ns();
    for (;;) {
        st_sleep_ms(250);
        uint64_t now = st_now_ns();
        unsigned long cur = atomic_load(&st_progress);
        if (cur != last) {
            last = cur;
            last_change = now;
        }
        if (now - last_change > (uint64_t)STRESS_STALL_S * 1000000000u) {
            fprintf(stderr,
                    "\n%s: WATCHDOG: no progress for %d s in phase \"%s\" "
                    "(progress counter %lu): lost wakeup or deadlock\n",
                    st_name, STRESS_STALL_S, st_phase, cur);
            if (st_on_stall)
                st_on_stall();
            abort();
        }
        if (now - st_wd.t0 > (uint64_t)st_wd.total_s * 1000000000u) {
            fprintf(stderr,
                    "\n%s: WATCHDOG: over the %u s limit in phase \"%s\" "
                    "(progress counter %lu)\n",
                    st_name, st_wd.total_s, st_phase, cur);
            if (st_on_stall)
                st_on_stall();
            abort();
        }
    }
    return NULL;
}

/* Start the watchdog (detached) and a backstop alarm. */
static inline void st_start(const char *name, unsigned total_s)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    setvbuf(stderr, NULL, _IONBF, 0);
    st_name = name;
    st_wd.total_s = total_s;
    st_wd.t0 = st_now_ns();
    pthread_t th;
    if (pthread_create(&th, NULL, st_watchdog_thread, NULL) != 0) {
        fprintf(stderr, "%s: cannot start the watchdog\n", name);
        exit(1);
    }
    pthread_detach(th);
    alarm(total_s + 30); /* SIGALRM kills us if even the watchdog is stuck */
}

/* Print a phase's iteration count and time. */
static inline void st_report(const char *what, long iters, uint64_t t0)
{
    double s = (double)(st_now_ns() - t0) / 1e9;
    printf("%s: %s: %ld iterations in %.3f s (%.2f us each)\n", st_name,
           what, iters, s, iters ? s * 1e6 / (double)iters : 0.0);
}

/* Exit status: 0 when no check failed. */
static inline int st_finish(void)
{
    long f = atomic_load(&check_failures);
    double s = (double)(st_now_ns() - st_wd.t0) / 1e9;
    if (f) {
        fprintf(stderr, "%s: FAILED: %ld failed checks (%.3f s)\n", st_name,
                f, s);
        return 1;
    }
    printf("%s: ok (%.3f s)\n", st_name, s);
    return 0;
}

static inline weft_pool *st_pool(unsigned threads, const char *name)
{
    weft_pool_opts o = { .threads = threads, .name = name };
    weft_pool *p = NULL;
    int rc = weft_pool_create(&p, &o);
    if (rc != 0) {
        fprintf(stderr, "%s: weft_pool_create(%u): %s\n", st_name, threads,
                weft_strerror(rc));
        exit(1);
    }
    return p;
}

static inline unsigned st_online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

/* As many workers as CPUs, but from 2 (someone to steal) to 4. */
static inline unsigned st_workers_2_to_4(void)
{
    unsigned n = st_online_cpus();
    return n > 4 ? 4 : n < 2 ? 2 : n;
}

#endif /* STRESS_H */
