/*
 * cpu.h — the process's CPU time, the one CPU figure every implementation
 * reports (weft and the C/C++ peers; the Go peer reads the same counters
 * with syscall.Getrusage).
 *
 * getrusage(RUSAGE_SELF): user + system time of every thread of the
 * process, the live ones and those that have ended, in microseconds.  A
 * measurement takes the difference of two readings taken where it reads
 * its clock, so CPU time that threads burn while they wait (spinning
 * workers, busy polling) shows beside the elapsed time: a runtime that
 * spins to answer sooner pays for it here.  The counters have microsecond
 * resolution; the timed regions are long enough (tens of milliseconds or
 * more) for it.
 *
 * Header-only, valid C11 and C++17.
 */
#ifndef WEFT_BENCH_CPU_H
#define WEFT_BENCH_CPU_H

#include <stdint.h>
#include <sys/resource.h>
#include <sys/time.h>

/* User + system CPU time of the whole process so far, in ns (0 if the
 * counters cannot be read, which getrusage(RUSAGE_SELF) never fails to). */
static inline uint64_t bench_cpu_ns(void)
{
    struct rusage ru;

    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) *
               1000000000u +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) *
               1000u;
}

#endif /* WEFT_BENCH_CPU_H */
