/*
 * machine.c — where a bench run happened: CPU model, online CPUs, kernel,
 * memory, date.  For the table's header line, --json and --plot; every
 * field falls back to "unknown"/0 rather than failing the run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "counters.h"
#include "results.h"

/* The value of the first /proc/cpuinfo line starting with key, if any. */
static bool cpuinfo_field(const char *key, char *out, size_t len)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    size_t klen = strlen(key);
    bool found = false;

    if (f == NULL)
        return false;
    while (!found && fgets(line, sizeof line, f) != NULL) {
        char *colon = strchr(line, ':');

        if (strncmp(line, key, klen) != 0 || colon == NULL)
            continue;
        colon++;
        while (*colon == ' ' || *colon == '\t')
            colon++;
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(out, len, "%s", colon);
        found = true;
    }
    fclose(f);
    return found;
}

void bench_machine_read(bench_machine *m)
{
    struct utsname u;
    time_t now = time(NULL);
    struct tm tm;
    long pages = sysconf(_SC_PHYS_PAGES);
    long psize = sysconf(_SC_PAGESIZE);
    long online = sysconf(_SC_NPROCESSORS_ONLN);

    memset(m, 0, sizeof *m);
    /* x86 names the model; arm64 kernels give only implementer/part. */
    if (!cpuinfo_field("model name", m->cpu, sizeof m->cpu) &&
        !cpuinfo_field("CPU part", m->cpu, sizeof m->cpu))
        snprintf(m->cpu, sizeof m->cpu, "unknown");
    m->cpus = online > 0 ? (unsigned)online : 0;
    if (uname(&u) == 0)
        snprintf(m->kernel, sizeof m->kernel, "%.40s %.60s %.20s", u.sysname,
                 u.release, u.machine);
    else
        snprintf(m->kernel, sizeof m->kernel, "unknown");
    m->mem_bytes = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0;
    if (gmtime_r(&now, &tm) != NULL)
        strftime(m->date, sizeof m->date, "%Y-%m-%dT%H:%M:%SZ", &tm);

    /* Why a row may move on another machine: the vendor and generation
     * (family 26 is AMD Zen 5), and whether every system call pays for
     * page-table isolation. */
    char num[32];
    if (!cpuinfo_field("vendor_id", m->vendor, sizeof m->vendor) &&
        !cpuinfo_field("CPU implementer", m->vendor, sizeof m->vendor))
        snprintf(m->vendor, sizeof m->vendor, "unknown");
    m->family = cpuinfo_field("cpu family", num, sizeof num) ? atoi(num) : -1;
    m->model = cpuinfo_field("model\t", num, sizeof num) ? atoi(num) : -1;
    FILE *f = fopen("/sys/devices/system/cpu/vulnerabilities/meltdown", "r");
    if (f == NULL || fgets(m->meltdown, sizeof m->meltdown, f) == NULL)
        snprintf(m->meltdown, sizeof m->meltdown, "unknown");
    m->meltdown[strcspn(m->meltdown, "\n")] = '\0';
    if (f != NULL)
        fclose(f);
    m->syscalls_counted = bench_counters_syscalls();
    snprintf(m->syscalls_why, sizeof m->syscalls_why, "%s",
             bench_counters_why());
}
