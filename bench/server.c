/* server.c — running a server workload's server and client (server.h). */
#include "server.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "results.h"

enum {
    START_MS = 10000, /* for the server's "listening on PORT" line */
    STOP_MS = 10000,  /* for its exit after SIGTERM                */
};

/* Reads the server's first line from fd into buf, for at most START_MS. */
static int read_first_line(int fd, char *buf, size_t len)
{
    size_t used = 0;

    for (int waited = 0; waited < START_MS;) {
        struct pollfd p = { fd, POLLIN, 0 };
        int r = poll(&p, 1, 100);

        if (r < 0 && errno != EINTR)
            return -1;
        if (r <= 0) {
            waited += 100;
            continue;
        }
        ssize_t n = read(fd, buf + used, len - 1 - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        used += (size_t)n;
        buf[used] = '\0';
        if (strchr(buf, '\n') != NULL)
            return 0;
        if (used == len - 1)
            return -1;
    }
    return -1;
}

int bench_server_start(const char *prog, unsigned threads, bench_server *s,
                       char *why, size_t whylen)
{
    char t_arg[16], line[256];
    char *argv[] = { (char *)prog, "0", t_arg, NULL };

    snprintf(t_arg, sizeof t_arg, "%u", threads);
    if (spawn_piped(argv, &s->pid, &s->fd, why, whylen) != 0)
        return -1;
    s->port = 0;
    if (read_first_line(s->fd, line, sizeof line) != 0 ||
        sscanf(line, "listening on %u", &s->port) != 1 || s->port == 0) {
        snprintf(why, whylen, "no 'listening on PORT' line within %d s",
                 START_MS / 1000);
        kill(s->pid, SIGKILL);
        wait_exit(s->pid, -1, line, sizeof line);
        close(s->fd);
        return -1;
    }
    /* Its threads exist by now (a server makes its pool before it
     * listens); the ones it makes later inherit the counters. */
    bench_counters_attach(s->pid, &s->counting);
    return 0;
}

static double seconds(const struct timeval *tv)
{
    return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

int bench_server_stop(bench_server *s, double *cpu_seconds,
                      bench_counts *counts, char *why, size_t whylen)
{
    char stop_why[160];
    struct rusage usage;

    kill(s->pid, SIGTERM);
    int status = wait_exit_usage(s->pid, STOP_MS, &usage, stop_why,
                                 sizeof stop_why);
    close(s->fd);
    bench_counters_detach(&s->counting, &usage, counts);
    if (status != 0) {
        if (status > 0)
            snprintf(why, whylen, "after SIGTERM: exit status %d", status);
        else
            snprintf(why, whylen, "after SIGTERM: %s", stop_why);
        return -1;
    }
    *cpu_seconds = seconds(&usage.ru_utime) + seconds(&usage.ru_stime);
    return 0;
}

int bench_run_client(char *const argv[], char *out, size_t len, char *why,
                     size_t whylen)
{
    pid_t pid;
    int fd;

    if (spawn_piped(argv, &pid, &fd, why, whylen) != 0)
        return -1;
    read_all(fd, out, len);
    close(fd);
    int status = wait_exit(pid, -1, why, whylen);
    if (status < 0)
        return -1;
    if (status != 0) {
        const char *name = strrchr(argv[0], '/');
        snprintf(why, whylen, "%s: exit status %d",
                 name != NULL ? name + 1 : argv[0], status);
        return -1;
    }
    return 0;
}
