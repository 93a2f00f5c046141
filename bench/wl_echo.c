/*
 * wl_echo.c — messages per second through a TCP echo server on loopback,
 * with the round-trip latency's median and 99th percentile.
 *
 * Each implementation is a server program: weft's is examples/echo_server.c
 * (one task per connection on a pool), built beside weft-bench as
 * echo/weft-echo-server; Go's is peers/go/echo (one goroutine per
 * connection), peers/peer-go-echo.  One measurement:
 *
 *   1. start the server: `SERVER 0 THREADS` (0: any free port; THREADS: the
 *      pool's size, GOMAXPROCS for Go) and read its first line,
 *      "listening on PORT", within 10 s;
 *   2. run the load generator (echo/loadgen: plain C, 2 threads with an
 *      epoll loop each): `loadgen 127.0.0.1 PORT N N 2` opens N connections,
 *      then each sends N messages of 64 bytes one at a time, waiting for
 *      each echo and checking every byte;
 *   3. stop the server with SIGTERM: it must exit 0 within 10 s (graceful
 *      shutdown: the load generator has closed its connections by then).
 *
 * So size N is N connections x N messages: 1000 x 1000 (10^6 messages),
 * --quick 10 x 10.  The load generator and the server share the machine's
 * CPUs, as they would on a loopback test anywhere.  Reported: messages/s
 * (loadgen's count over the time from its first send to its last echo;
 * more is better), and as extra figures the median and 99th percentile of
 * the per-message round trip, in us, and the server's CPU time (user +
 * kernel, from wait4's resource usage, its whole life) per message, in us.
 * The load generator and the server share the CPUs, so a server that
 * needs less CPU per message leaves more to the load generator: that
 * figure is what the server itself costs, and it is steadier than the
 * rate on a shared machine.  Check: messages echoed and verified, N * N.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench_config.h"
#include "results.h"

enum {
    START_MS = 10000,  /* for the server's "listening on PORT" line */
    STOP_MS = 10000,   /* for its exit after SIGTERM                */
    LOADGEN_THREADS = 2,
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

/* Runs the load generator against port; its output line into buf. */
static int run_loadgen(const char *bench_dir, unsigned port,
                       const bench_params *p, char *buf, size_t len,
                       char *why, size_t whylen)
{
    char prog[PATH_MAX + 16], port_arg[16], n_arg[32], t_arg[16];
    char *argv[] = { prog, "127.0.0.1", port_arg, n_arg, n_arg, t_arg, NULL };
    pid_t pid;
    int fd, status;

    snprintf(prog, sizeof prog, "%s/echo/loadgen", bench_dir);
    snprintf(port_arg, sizeof port_arg, "%u", port);
    snprintf(n_arg, sizeof n_arg, "%" PRIu64, p->n);
    snprintf(t_arg, sizeof t_arg, "%d", LOADGEN_THREADS);
    if (spawn_piped(argv, &pid, &fd, why, whylen) != 0)
        return -1;
    read_all(fd, buf, len);
    close(fd);
    status = wait_exit(pid, -1, why, whylen);
    if (status < 0)
        return -1;
    if (status != 0) {
        snprintf(why, whylen, "loadgen: exit status %d", status);
        return -1;
    }
    return 0;
}

static double cpu_seconds(const struct timeval *tv)
{
    return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

int bench_echo_run(const char *server, const char *bench_dir,
                   const bench_params *p, bench_sample *out, char *why,
                   size_t whylen)
{
    char t_arg[16], line[256], report[512];
    char *argv[] = { (char *)server, "0", t_arg, NULL };
    unsigned port = 0;
    uint64_t messages;
    double rate, p50, p99;
    pid_t pid;
    int fd;

    snprintf(t_arg, sizeof t_arg, "%u", p->threads);
    if (spawn_piped(argv, &pid, &fd, why, whylen) != 0)
        return -1;
    if (read_first_line(fd, line, sizeof line) != 0 ||
        sscanf(line, "listening on %u", &port) != 1 || port == 0) {
        snprintf(why, whylen, "no 'listening on PORT' line within %d s",
                 START_MS / 1000);
        kill(pid, SIGKILL);
        wait_exit(pid, -1, line, sizeof line);
        close(fd);
        return -1;
    }
    int measured = run_loadgen(bench_dir, port, p, report, sizeof report,
                               why, whylen);
    /* Stop it either way; a server that does not exit 0 fails the run. */
    kill(pid, SIGTERM);
    char stop_why[160];
    struct rusage usage;
    int status = wait_exit_usage(pid, STOP_MS, &usage, stop_why,
                                 sizeof stop_why);
    close(fd);
    if (measured != 0)
        return -1;
    if (status != 0) {
        if (status > 0)
            snprintf(why, whylen, "after SIGTERM: exit status %d", status);
        else
            snprintf(why, whylen, "after SIGTERM: %s", stop_why);
        return -1;
    }
    if (sscanf(report, "messages=%" SCNu64 " seconds=%*f msgs_per_s=%lf "
               "p50_us=%lf p99_us=%lf", &messages, &rate, &p50, &p99) != 4) {
        snprintf(why, whylen, "loadgen: unreadable report '%.100s'", report);
        return -1;
    }
    out->value = rate;
    out->check = messages;
    out->extra[0] = p50;
    out->extra[1] = p99;
    out->extra[2] = messages ? (cpu_seconds(&usage.ru_utime) +
                                cpu_seconds(&usage.ru_stime)) *
                                   1e6 / (double)messages
                             : 0.0;
    return 0;
}

uint64_t bench_echo_expect(const bench_params *p)
{
    return p->n * p->n;
}

static const char *const echo_peers[] = { "go", NULL };

const bench_extra bench_echo_extra[] = {
    { "p50", "us" },
    { "p99", "us" },
    { "cpu", "us/msg" },
    { NULL, NULL },
};

const bench_workload bench_wl_echo = {
    .name = "echo",
    .desc = "TCP echo on loopback: N connections x N messages of 64 bytes, "
            "one at a time each",
    .unit = "msgs/s",
    .default_n = 1000,
    .quick_n = 10,
    .pooled = true,
    .run_weft = NULL,
    .expect = bench_echo_expect,
    .peers = echo_peers,
    .higher_is_better = true,
    .extra = bench_echo_extra,
    .run_server = bench_echo_run,
    .weft_server = "echo/weft-echo-server",
};
