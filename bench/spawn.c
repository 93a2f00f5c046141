/*
 * spawn.c — running other programs: the helpers (a program with its stdout
 * on a pipe, reading it, waiting for its end with a time limit), and with
 * them one measurement by a peer (peers/peer-NAME) or by weft-bench itself
 * in --child mode (workloads that need a fresh process).  Both speak the
 * protocol of peers/peer.h:
 *
 *     PROG [EXTRA] WORKLOAD N THREADS
 *  -> stdout: "result <value> <check> [<extra>...]"   exit 0
 *     (as many extras as the workload has: bench_workload.extra)
 *     exit 2: no such workload
 *     any other exit, a signal, or no result line: failure
 *
 * The program runs with posix_spawn; its stdout comes back through a pipe,
 * its stderr goes straight to ours.  What it cost the kernel's counters
 * (its rusage, its system calls) comes back with its result (counters.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2 */
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "results.h"

extern char **environ;

int spawn_piped(char *const argv[], pid_t *pid, int *out_fd, char *why,
                size_t whylen)
{
    posix_spawn_file_actions_t fa;
    int fds[2];
    int rc;

    /* CLOEXEC so the read end does not leak into the child; the dup2 onto
     * fd 1 clears the flag on the child's copy of the write end. */
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(why, whylen, "pipe: %s", strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    rc = posix_spawn(pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        snprintf(why, whylen, "spawn %.100s: %s", argv[0], strerror(rc));
        return -1;
    }
    *out_fd = fds[0];
    return 0;
}

size_t read_all(int fd, char *buf, size_t len)
{
    size_t used = 0;

    /* Read everything (a chatty program must not block on a full pipe),
     * keep what fits. */
    for (;;) {
        char sink[512];
        char *dst = used < len - 1 ? buf + used : sink;
        size_t room = used < len - 1 ? len - 1 - used : sizeof sink;
        ssize_t n = read(fd, dst, room);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (dst == buf + used)
            used += (size_t)n;
    }
    buf[used] = '\0';
    return used;
}

int wait_exit(pid_t pid, int timeout_ms, char *why, size_t whylen)
{
    struct rusage usage;

    return wait_exit_usage(pid, timeout_ms, &usage, why, whylen);
}

int wait_exit_usage(pid_t pid, int timeout_ms, struct rusage *usage,
                    char *why, size_t whylen)
{
    int status;

    for (int waited = 0;; waited++) {
        pid_t r = wait4(pid, &status, timeout_ms < 0 ? 0 : WNOHANG, usage);

        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            snprintf(why, whylen, "waitpid: %s", strerror(errno));
            return -1;
        }
        if (r == 0 && waited >= timeout_ms) {
            kill(pid, SIGKILL);
            wait4(pid, &status, 0, usage);
            snprintf(why, whylen, "still running after %d ms (killed)",
                     timeout_ms);
            return -1;
        }
        if (r == 0)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    if (WIFSIGNALED(status)) {
        snprintf(why, whylen, "killed by signal %d", WTERMSIG(status));
        return -1;
    }
    return WEXITSTATUS(status);
}

int spawn_measure(const char *prog, const char *extra, const bench_workload *w,
                  const bench_params *p, bench_sample *out, char *why,
                  size_t whylen)
{
    char n_arg[32];
    char t_arg[16];
    char *argv[6];
    int argc = 0;
    char buf[4096];
    int fd;
    pid_t pid;
    int status;
    struct rusage usage;
    bench_count_mark mark;

    snprintf(n_arg, sizeof n_arg, "%" PRIu64, p->n);
    snprintf(t_arg, sizeof t_arg, "%u", p->threads);
    argv[argc++] = (char *)prog;
    if (extra != NULL)
        argv[argc++] = (char *)extra;
    argv[argc++] = (char *)w->name;
    argv[argc++] = n_arg;
    argv[argc++] = t_arg;
    argv[argc] = NULL;

    bench_counters_mark(&mark);
    if (spawn_piped(argv, &pid, &fd, why, whylen) != 0)
        return -1;
    /* The first 4 KiB: the result line is all we need. */
    read_all(fd, buf, sizeof buf);
    close(fd);

    status = wait_exit_usage(pid, -1, &usage, why, whylen);
    if (status < 0)
        return -1;
    bench_counters_child(&mark, &usage, &out->counts);
    out->counted = true;
    if (status == 2)
        return 2;
    if (status != 0) {
        snprintf(why, whylen, "exit status %d", status);
        return -1;
    }
    for (char *line = buf; line != NULL && *line != '\0';) {
        char *next = strchr(line, '\n');
        double value;
        uint64_t check;

        if (next != NULL)
            *next++ = '\0';
        int at = 0;
        if (sscanf(line, "result %lf %" SCNu64 "%n", &value, &check, &at) >= 2) {
            out->value = value;
            out->check = check;
            /* The extras that follow (peers/peer.h): every one the
             * workload has, or the run fails (a missing figure must not
             * show as 0). */
            const char *rest = line + at;
            size_t want = results_extra_count(w), got = 0;
            while (got < want) {
                int used = 0;
                if (sscanf(rest, " %lf%n", &out->extra[got], &used) != 1)
                    break;
                rest += used;
                got++;
            }
            if (got < want) {
                snprintf(why, whylen, "its result line has %zu of the "
                         "workload's %zu extra figures", got, want);
                return -1;
            }
            return 0;
        }
        line = next;
    }
    snprintf(why, whylen, "no 'result' line in its output");
    return -1;
}
