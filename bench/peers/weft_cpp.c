/*
 * weft_cpp.c — peer-weft-cpp: weft's C++ layer (weft/weft.hpp) as a peer
 * of the C rows it mirrors, so that weft-bench measures the two run by
 * run, interleaved in one cell, and the ratio column is the C++ layer's
 * time over the C API's (the "at most 1.1x in the same run").
 *
 *     peer-weft-cpp skynet|fib N [THREADS]
 *
 * runs `weft-bench --child skynet-cpp|fib-cpp N THREADS` (wl_cpp.cc), whose
 * result line is this peer's: the weft-bench named by $WEFT_BENCH (set by
 * the weft-bench that runs this peer), else the one beside this program's
 * directory (build-bench/bench/peers/..).  Other workloads: exit 2 (n/a).
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "peer.h"

int main(int argc, char **argv)
{
    peer_args a;
    char self[PATH_MAX], bench[PATH_MAX + 16], name[32], n[24], t[16];
    ssize_t len;
    char *slash;

    peer_parse_args(argc, argv, &a);
    if (strcmp(a.workload, "skynet") != 0 && strcmp(a.workload, "fib") != 0)
        return PEER_EXIT_UNKNOWN_WORKLOAD;
    snprintf(name, sizeof name, "%s-cpp", a.workload);
    snprintf(n, sizeof n, "%llu", (unsigned long long)a.n);
    snprintf(t, sizeof t, "%u", a.threads);
    const char *env = getenv("WEFT_BENCH");
    if (env != NULL && *env != '\0') {
        execl(env, "weft-bench", "--child", name, n, t, (char *)NULL);
        fprintf(stderr, "peer-weft-cpp: %s: %s\n", env, strerror(errno));
        return PEER_EXIT_FAILED;
    }
    /* peers/peer-weft-cpp -> peers/../weft-bench */
    len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        fprintf(stderr, "peer-weft-cpp: /proc/self/exe: %s\n", strerror(errno));
        return PEER_EXIT_FAILED;
    }
    self[len] = '\0';
    slash = strrchr(self, '/');
    if (slash == NULL) {
        fprintf(stderr, "peer-weft-cpp: no directory in %s\n", self);
        return PEER_EXIT_FAILED;
    }
    *slash = '\0';
    snprintf(bench, sizeof bench, "%s/../weft-bench", self);
    execl(bench, "weft-bench", "--child", name, n, t, (char *)NULL);
    fprintf(stderr, "peer-weft-cpp: %s: %s\n", bench, strerror(errno));
    return PEER_EXIT_FAILED;
}
