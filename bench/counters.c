/*
 * counters.c — the counted figures of a measurement (counters.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* syscall */
#endif
#include "counters.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

const char *const bench_count_names[BENCH_NCOUNTS] = {
    "cpu_ns", "minflt", "nvcsw", "nivcsw", "syscalls",
};

static int inherited_fd = -1; /* the runner and, by inheritance, its children */
static int self_fd = -1;      /* the runner's own thread alone */
static char why_not[160] = "not opened";

/* The id of the tracepoint raw_syscalls:sys_enter, or -1. */
static long tracepoint_id(void)
{
    static const char *const paths[] = {
        "/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
        "/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
    };

    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        FILE *f = fopen(paths[i], "r");
        long id;

        if (f == NULL)
            continue;
        if (fscanf(f, "%ld", &id) != 1)
            id = -1;
        fclose(f);
        if (id >= 0)
            return id;
    }
    return -1;
}

static int open_counter(long id, pid_t tid, bool inherit)
{
    struct perf_event_attr a;

    memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_TRACEPOINT;
    a.size = sizeof a;
    a.config = (uint64_t)id;
    a.inherit = inherit;
    /* Counted in the kernel's entry path, so user-only restrictions do
     * not apply; exclude nothing. */
    return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1,
                        PERF_FLAG_FD_CLOEXEC);
}

static long syscall_tracepoint = -1;

void bench_counters_open(void)
{
    syscall_tracepoint = tracepoint_id();
    if (syscall_tracepoint < 0) {
        snprintf(why_not, sizeof why_not, "no tracefs event "
                 "raw_syscalls/sys_enter (mount tracefs, or run as root)");
        return;
    }
    inherited_fd = open_counter(syscall_tracepoint, 0, true);
    if (inherited_fd >= 0)
        self_fd = open_counter(syscall_tracepoint, 0, false);
    if (inherited_fd < 0 || self_fd < 0) {
        snprintf(why_not, sizeof why_not, "perf_event_open: %s "
                 "(kernel.perf_event_paranoid, or a container)",
                 strerror(errno));
        if (inherited_fd >= 0)
            close(inherited_fd);
        inherited_fd = self_fd = -1;
        syscall_tracepoint = -1;
        return;
    }
    why_not[0] = '\0';
}

bool bench_counters_syscalls(void)
{
    return inherited_fd >= 0;
}

const char *bench_counters_why(void)
{
    return why_not;
}

static uint64_t read_counter(int fd)
{
    uint64_t v = 0;

    if (fd < 0 || read(fd, &v, sizeof v) != (ssize_t)sizeof v)
        return 0;
    return v;
}

void bench_counters_mark(bench_count_mark *m)
{
    m->inherited = read_counter(inherited_fd);
    m->self = read_counter(self_fd);
}

static double tv_ns(const struct timeval *tv)
{
    return (double)tv->tv_sec * 1e9 + (double)tv->tv_usec * 1e3;
}

static void from_rusage(const struct rusage *ru, bench_counts *out)
{
    out->v[BENCH_COUNT_CPU] = tv_ns(&ru->ru_utime) + tv_ns(&ru->ru_stime);
    out->v[BENCH_COUNT_MINFLT] = (double)ru->ru_minflt;
    out->v[BENCH_COUNT_NVCSW] = (double)ru->ru_nvcsw;
    out->v[BENCH_COUNT_NIVCSW] = (double)ru->ru_nivcsw;
}

void bench_counters_child(const bench_count_mark *m, const struct rusage *ru,
                          bench_counts *out)
{
    from_rusage(ru, out);
    out->v[BENCH_COUNT_SYSCALLS] = -1.0;
    if (inherited_fd < 0)
        return;
    /* The child's copies were added back when each of its tasks exited,
     * all before wait4 could reap it; what the runner's own thread did
     * meanwhile is in both counters. */
    bench_count_mark now;
    bench_counters_mark(&now);
    double all = (double)(now.inherited - m->inherited);
    double own = (double)(now.self - m->self);
    out->v[BENCH_COUNT_SYSCALLS] = all > own ? all - own : 0.0;
}

int bench_counters_attach(pid_t pid, bench_count_attach *a)
{
    char path[64];
    DIR *d;
    struct dirent *e;

    a->nfds = 0;
    if (syscall_tracepoint < 0)
        return 0;
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    d = opendir(path);
    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (a->nfds == (int)(sizeof a->fds / sizeof a->fds[0])) {
            closedir(d);
            for (int i = 0; i < a->nfds; i++)
                close(a->fds[i]);
            a->nfds = -1;
            return -1;
        }
        int fd = open_counter(syscall_tracepoint,
                              (pid_t)atoi(e->d_name), true);
        if (fd >= 0)
            a->fds[a->nfds++] = fd;
    }
    closedir(d);
    return 0;
}

void bench_counters_detach(bench_count_attach *a, const struct rusage *ru,
                           bench_counts *out)
{
    from_rusage(ru, out);
    out->v[BENCH_COUNT_SYSCALLS] = -1.0;
    if (a->nfds <= 0 || syscall_tracepoint < 0)
        return;
    double sum = 0.0;
    for (int i = 0; i < a->nfds; i++) {
        sum += (double)read_counter(a->fds[i]);
        close(a->fds[i]);
    }
    a->nfds = 0;
    out->v[BENCH_COUNT_SYSCALLS] = sum;
}
