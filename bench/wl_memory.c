/*
 * wl_memory.c — bytes of RSS per live suspended coroutine.
 *
 * N coroutines with the default stack (WEFT_STACK_DEFAULT, guard page on:
 * whatever weft_coro_create gives a caller who asks for nothing) are each
 * created and resumed once; each body counts itself and yields, so all N
 * sit SUSPENDED at once, as a server's idle connections do.  The figure is
 * (RSS with all N parked - RSS before) / N, read from /proc/self/statm: what
 * one parked coroutine costs in memory the machine really holds (its touched
 * stack pages and its record; the untouched rest of its 256 KiB reservation
 * costs address space only).  Page tables are kernel memory outside RSS, for
 * every implementation alike.
 *
 * The runner starts a fresh process for each measurement (fresh_process),
 * because stacks that earlier workloads left in weft's stack pools are
 * already resident: reusing them would hide the cost being measured.  The
 * array of N handles is allocated and touched before the first reading, so
 * it is not counted either.  Afterwards every coroutine is destroyed (its
 * pending yield returns -ECANCELED and the body ends).
 *
 * Check: the number of coroutines found SUSPENDED after their first resume
 * (each body counts itself once before yielding): N.
 *
 * Two workloads share this code: memory (100,000 parked) and memory-1m
 * (1,000,000, the scale a big server reaches; it must work with the
 * default vm.max_map_count of 65530, i.e. with guard pages that cost no
 * VMA, or stacks carved so that mappings merge).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/coro.h>

#include "rss.h"
#include "workloads.h"

static uint64_t bodies_parked;

static void *parked_body(void *arg)
{
    void *in;

    (void)arg;
    bodies_parked++;
    /* Returns -ECANCELED when the coroutine is destroyed; nothing to undo. */
    (void)weft_coro_yield(NULL, &in);
    return NULL;
}

static int memory_weft(const bench_params *p, bench_sample *out)
{
    weft_coro **co = malloc(p->n * sizeof *co);
    uint64_t made = 0, suspended = 0;
    int64_t before, after;
    int rc = 0;

    if (co == NULL) {
        fprintf(stderr, "memory: no memory for %llu handles\n",
                (unsigned long long)p->n);
        return -ENOMEM;
    }
    memset(co, 0, p->n * sizeof *co); /* resident before the first reading */
    bodies_parked = 0;

    before = bench_rss_bytes();
    for (; made < p->n; made++) {
        rc = weft_coro_create(&co[made], parked_body, NULL);
        if (rc != 0) {
            fprintf(stderr, "memory: weft_coro_create #%llu: %s\n",
                    (unsigned long long)made, weft_strerror(rc));
            break;
        }
        rc = weft_coro_resume(co[made], NULL, NULL);
        if (rc != 0) {
            fprintf(stderr, "memory: first resume #%llu: %s\n",
                    (unsigned long long)made, weft_strerror(rc));
            made++; /* created: destroy it below */
            break;
        }
    }
    after = bench_rss_bytes();

    for (uint64_t i = 0; i < made; i++) {
        if (weft_coro_status(co[i]) == WEFT_CORO_SUSPENDED)
            suspended++;
        int d = weft_coro_destroy(co[i]);
        if (d != 0 && rc == 0) {
            fprintf(stderr, "memory: destroy #%llu: %s\n",
                    (unsigned long long)i, weft_strerror(d));
            rc = d;
        }
    }
    free(co);
    if (rc != 0)
        return rc;
    if (before < 0 || after < 0) {
        fprintf(stderr, "memory: cannot read /proc/self/statm\n");
        return -ENOENT;
    }
    out->value = (double)(after - before) / (double)p->n;
    out->check = suspended == bodies_parked ? suspended : 0;
    return 0;
}

static uint64_t memory_expect(const bench_params *p)
{
    return p->n;
}

static const char *const memory_peers[] = { "go", "boost-context", NULL };

const bench_workload bench_wl_memory = {
    .name = "memory",
    .desc = "RSS per suspended coroutine, N parked at once (default stack, guarded)",
    .unit = "B/coro",
    .default_n = 100000,
    .run_weft = memory_weft,
    .expect = memory_expect,
    .peers = memory_peers,
    .fresh_process = true,
};

const bench_workload bench_wl_memory_1m = {
    .name = "memory-1m",
    .desc = "as memory, 1,000,000 parked at once",
    .unit = "B/coro",
    .default_n = 1000000,
    .run_weft = memory_weft,
    .expect = memory_expect,
    .peers = memory_peers,
    .fresh_process = true,
};
