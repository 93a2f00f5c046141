/*
 * wl_echo_borrowed.c — the echo workload (wl_echo.c) with weft's server
 * holding its connections as borrowed fds (weft/io.h): it accepts them
 * with accept4(2) itself (ECHO_FDS=borrowed), so weft registers each wait
 * anew (one epoll_ctl per wait that parks) and reads and writes with
 * MSG_DONTWAIT on blocking sockets.  Beside the `echo` row (owned fds,
 * registered once) it shows what the per-wait registration costs.  The
 * peers' servers are echo's (server_suffix), for the ratio.
 */
#include <stdlib.h>

#include "results.h"
#include "workloads.h"

static int run_borrowed(const char *server, const char *bench_dir,
                        const bench_params *p, bench_sample *out, char *why,
                        size_t whylen)
{
    /* The server reads it at start; peers ignore it. */
    setenv("ECHO_FDS", "borrowed", 1);
    int rc = bench_echo_run(server, bench_dir, p, out, why, whylen);
    unsetenv("ECHO_FDS");
    return rc;
}

static const char *const echo_borrowed_peers[] = { "go", "epoll", NULL };

const bench_workload bench_wl_echo_borrowed = {
    .name = "echo-borrowed",
    .desc = "echo with weft's server on borrowed fds (accept4, one-shot "
            "registration per wait)",
    .unit = "msgs/s",
    .default_n = 1000,
    .quick_n = 10,
    .pooled = true,
    .run_weft = NULL,
    .expect = bench_echo_expect,
    .peers = echo_borrowed_peers,
    .higher_is_better = true,
    .extra = bench_echo_extra,
    .run_server = run_borrowed,
    .weft_server = "echo/weft-echo-server",
    .server_suffix = "echo", /* the same Go server as echo's */
};
