/*
 * rss.h — the process's resident set, the one memory figure every memory
 * measurement uses (weft and the C/C++ peers; the Go peer reads the same
 * file itself).
 *
 * /proc/self/statm's second field: pages mapped and resident now, the
 * kernel's RSS (anonymous + file-backed).  Page tables are not in it (they
 * are VmPTE in /proc/self/status); a memory measurement takes the
 * difference of two readings around the thing it measures, in one process,
 * so the program's own text and libraries cancel out.
 *
 * Header-only, valid C11 and C++17.
 */
#ifndef WEFT_BENCH_RSS_H
#define WEFT_BENCH_RSS_H

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

/* Bytes resident now, or -1 if /proc is not there. */
static inline int64_t bench_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long long size = 0, resident = 0;
    int got;

    if (f == NULL)
        return -1;
    got = fscanf(f, "%lld %lld", &size, &resident);
    fclose(f);
    if (got != 2)
        return -1;
    return (int64_t)resident * (int64_t)sysconf(_SC_PAGESIZE);
}

/* The most bytes this program has had resident: VmHWM in
 * /proc/self/status, or -1.  Not getrusage's ru_maxrss: Linux carries that
 * across execve, so a program that weft-bench forks and execs reports the
 * bench's own resident set at the fork if it never grows past it (the soak
 * rows once showed 259 MB for weft and TBB alike).  VmHWM is the address
 * space's, and exec makes a new one. */
static inline int64_t bench_peak_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long kib = -1;

    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmHWM: %lld kB", &kib) == 1)
            break;
    fclose(f);
    return kib < 0 ? -1 : (int64_t)kib * 1024;
}

#endif /* WEFT_BENCH_RSS_H */
