/*
 * peer.h — the command-line protocol every peer program speaks (C and C++).
 *
 *     peer-NAME WORKLOAD N [THREADS]
 *
 * runs one measurement of WORKLOAD at size N (THREADS defaults to 1) and
 * prints one line on stdout:
 *
 *     result <value> <check> [<extra>...]
 *
 * <value> is in the workload's unit (see bench/workloads.h), <check> is the
 * workload's check value as an unsigned decimal, and the optional extras
 * the workload's further figures, in its order (bench/workloads.h).  Exit status: 0 after the
 * result line; 2 if this peer does not implement WORKLOAD (weft-bench shows
 * "n/a"); 1 on any other failure, with the reason on stderr.  A peer of
 * another language (Go, ...) speaks the same protocol without this header.
 */
#ifndef WEFT_BENCH_PEER_H
#define WEFT_BENCH_PEER_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

#define PEER_EXIT_FAILED 1
#define PEER_EXIT_UNKNOWN_WORKLOAD 2

typedef struct peer_args {
    const char *workload;
    uint64_t n;
    unsigned threads;
} peer_args;

/* Parses argv into *a; on a malformed command line prints usage, exits 1. */
static inline void peer_parse_args(int argc, char **argv, peer_args *a)
{
    char *end;

    if (argc < 3 || argc > 4)
        goto usage;
    a->workload = argv[1];
    errno = 0;
    a->n = strtoull(argv[2], &end, 10);
    if (errno != 0 || *end != '\0' || a->n == 0 || argv[2][0] == '-')
        goto usage;
    a->threads = 1;
    if (argc == 4) {
        unsigned long t = strtoul(argv[3], &end, 10);
        if (*end != '\0' || t == 0 || t > 4096 || argv[3][0] == '-')
            goto usage;
        a->threads = (unsigned)t;
    }
    return;
usage:
    fprintf(stderr, "usage: %s WORKLOAD N [THREADS]\n", argv[0]);
    exit(PEER_EXIT_FAILED);
}

/* Prints the one result line the runner parses. */
static inline void peer_report(double value, uint64_t check)
{
    printf("result %.9g %" PRIu64 "\n", value, check);
    fflush(stdout);
}

/* The same with the workload's extra figures after the check (at most
 * BENCH_MAX_EXTRA, in the workload's order: bench/workloads.h). */
static inline void peer_report_extra(double value, uint64_t check,
                                     const double *extra, int n)
{
    printf("result %.9g %" PRIu64, value, check);
    for (int i = 0; i < n; i++)
        printf(" %.9g", extra[i]);
    printf("\n");
    fflush(stdout);
}

#endif /* WEFT_BENCH_PEER_H */
