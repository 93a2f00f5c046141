/*
 * accept-compute — issue 23: workers held by code that never switches.
 * On a 2-worker pool with default options, 2 tasks ("cruncher-0/1") each
 * compute for 2 s without a yield (crunch_numbers) beside a 1 ms ticker
 * task; 1 s after they start, main dumps the pool (weft_pool_dump).
 * Targets: the ticker's worst lateness <= 25 ms; the dump shows each
 * cruncher "running" for >= 500 ms without a switch, with a frame of
 * crunch_numbers.  Exit 0: met, 1: not met, 2: error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream */
#endif
#include "accept.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

enum { CRUNCHERS = 2 };

static struct ticker ticker;
static atomic_int started;

/* Sums the Basel series block after block until the clock reads `end`,
 * with no call into weft: nothing the scheduler could switch at. */
static __attribute__((noinline)) double crunch_numbers(uint64_t end)
{
    double x = 0;
    do
        for (int i = 1; i <= 100000; i++)
            x += 1.0 / ((double)i * i);
    while (now_ns() < end);
    return x;
}

static void *cruncher(void *arg)
{
    double *result = arg;
    atomic_fetch_add(&started, 1);
    *result = crunch_numbers(now_ns() + 2000 * MS);
    return NULL;
}

/* The duration in "[running, 1000 ms without a switch]", in ms; -1 if absent. */
static double running_ms(const char *line)
{
    const char *at = strstr(line, "[running, ");
    double v;
    char unit[8];
    if (!at || sscanf(at + 10, "%lf %7s", &v, unit) != 2)
        return -1;
    if (strcmp(unit, "us") == 0)
        return v / 1e3;
    if (strcmp(unit, "ms") == 0)
        return v;
    if (strcmp(unit, "s") == 0)
        return v * 1e3;
    return strcmp(unit, "min") == 0 ? v * 60e3 : -1;
}

/* Checks the dump's block about task `name` (its "task" line and the
 * indented lines after it), printing its lines; 1 if it shows the task
 * running for >= 500 ms with a frame of crunch_numbers. */
static int check_block(const char *dump, const char *name)
{
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\" [", name);
    const char *at = strstr(dump, quoted);
    if (!at) {
        printf("dump_%s: (missing)\n", name);
        return 0;
    }
    while (at > dump && at[-1] != '\n')
        at--;
    const char *end = strchr(at, '\n');
    while (end && strncmp(end + 1, "  ", 2) == 0)
        end = strchr(end + 1, '\n');
    int len = end ? (int)(end - at) : (int)strlen(at);
    char block[4096];
    snprintf(block, sizeof block, "%.*s", len, at);
    double ms = running_ms(block);
    int ok = ms >= 500 && strstr(block, "crunch_numbers") != NULL;
    for (char *line = strtok(block, "\n"); line; line = strtok(NULL, "\n"))
        printf("dump_%s: %s\n", name, line);
    printf("%s_running_ms: %.0f\n", name, ms);
    return ok;
}

int main(void)
{
    watchdog(30);
    weft_task *tick, *load[CRUNCHERS];
    double results[CRUNCHERS];
    weft_pool *pool = start_pool_and_ticker(&ticker, &tick);
    for (int i = 0; i < CRUNCHERS; i++) {
        char name[32];
        snprintf(name, sizeof name, "cruncher-%d", i);
        weft_task_opts topts = {.name = name};
        if (weft_spawn(&load[i], pool, cruncher, &results[i], &topts) != 0)
            return 2;
    }
    while (atomic_load(&started) < CRUNCHERS)
        weft_sleep(100000);
    uint64_t crunch_start = now_ns();

    /* 1 s in: the dump. */
    sleep_until_ns(crunch_start + 1000 * MS);
    uint64_t dump_start = now_ns();
    char *dump = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&dump, &size);
    if (!f || weft_pool_dump(pool, f) != 0 || fclose(f) != 0) {
        fprintf(stderr, "error: weft_pool_dump\n");
        return 2;
    }

    for (int i = 0; i < CRUNCHERS; i++)
        weft_sync_wait(load[i], NULL);
    stop_ticker_and_pool(&ticker, tick, pool);

    struct ticker_figures tf = ticker_report(&ticker);
    printf("time_crunchers_started_ms: %.0f\n", (double)(crunch_start - ticker.first_ns) / 1e6);
    printf("time_of_dump_ms: %.0f\n", (double)(dump_start - ticker.first_ns) / 1e6);
    int dump_ok = strstr(dump, "running") != NULL;
    for (int i = 0; i < CRUNCHERS; i++) {
        char name[32];
        snprintf(name, sizeof name, "cruncher-%d", i);
        dump_ok &= check_block(dump, name);
    }
    free(dump);
    printf("dump_ok: %s\n", dump_ok ? "yes" : "no");
    int met = tf.worst <= 25.0 && dump_ok;
    printf("target: worst <= 25 ms, dump shows both crunchers: %s\n", met ? "met" : "NOT met");
    return met ? 0 : 1;
}
