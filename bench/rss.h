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

#endif /* WEFT_BENCH_RSS_H */
