/*
 * fault_records.c — task records are reused across pools (suite 'fault';
 * it reads the allocation counts of base/alloc.h).
 *
 * Task records are never given back to malloc: each thread keeps a cache,
 * which it must hand back to the global list when it exits.  Workers that
 * only free records (they run tasks spawned from this thread) used to
 * strand their caches when a pool was destroyed, so every pool's lifetime
 * leaked up to 512 records a worker; still reachable, so no leak checker
 * saw it.  Here pools come and go, each running the same number of tasks
 * spawned from this thread.  How many records are alive at once depends on
 * how fast the workers keep up, so a later round may well need more than
 * the first did; but all rounds together never need more than one round's
 * worth at most (TASKS records, plus a refill batch of slack), whereas a
 * stranding leak costs up to 512 records a worker every round (malloc is
 * used for nothing else here, one 64-record chunk at a time).
 */
#include "base/alloc.h"

#include <weft/weft.h>

#include <stdio.h>

#define ROUNDS 8
#define TASKS 3000
#define CHUNK 64
/* TASKS records, and slack for the spawning thread's refill batch. */
#define MAX_CHUNKS ((TASKS + CHUNK - 1) / CHUNK + 256 / CHUNK)

static void *nothing(void *arg)
{
    return arg;
}

int main(void)
{
    unsigned long total = 0;
    for (int round = 0; round < ROUNDS; round++) {
        unsigned long before = weft__fault_calls_of("malloc");
        weft_pool *pool;
        weft_pool_opts opts = {.threads = 2};
        if (weft_pool_create(&pool, &opts) != 0) {
            fprintf(stderr, "pool_create failed\n");
            return 1;
        }
        for (int i = 0; i < TASKS; i++) {
            if (weft_spawn(NULL, pool, nothing, NULL, NULL) != 0) {
                fprintf(stderr, "spawn failed\n");
                return 1;
            }
        }
        if (weft_pool_destroy(pool) != 0) {
            fprintf(stderr, "pool_destroy failed\n");
            return 1;
        }
        unsigned long chunks = weft__fault_calls_of("malloc") - before;
        printf("round %d: %lu record chunks allocated\n", round, chunks);
        total += chunks;
    }
    if (total > MAX_CHUNKS) {
        fprintf(stderr,
                "records were not reused: %lu chunks in %d rounds (at most "
                "%d needed)\n",
                total, ROUNDS, MAX_CHUNKS);
        return 1;
    }
    return 0;
}
