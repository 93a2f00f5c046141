/*
 * probe.c — two costs of the machine that move rows between machines, and
 * that neither the CPU's name nor the kernel's says: how long a cache line
 * takes to move from one thread's core to another's, and what the first
 * write to a fresh page of memory costs.
 *
 * The first is what every hand-off between workers pays (a steal, a wake,
 * a record freed by one worker and reused by another); the second is what
 * a fresh process pays for each page its tasks touch (spawn-join keeps a
 * million handles).  On the 2-vCPU AMD guest of docs/performance.md both
 * change while the machine runs: a line moves in about 64 ns or about 240
 * ns as the host places the two vCPUs, and a first touch costs 6-11 us a
 * page (a paravirtualised guest: the hypervisor maps each page as well).
 * So the header prints them beside the CPU, measured at the end of the
 * run: what the machine was like then, not a promise for the whole run.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "clock.h"
#include "results.h"

#define HANDOFFS 100000u /* a run: some 6-25 ms where a line moves in 64-240 ns */
#define HANDOFF_RUNS 5u

/* One line, taken in turns: the even values are main's to write, the odd
 * ones the partner's.  Each side spins until the other's write shows, so
 * each write costs one move of the line. */
static struct {
    _Alignas(64) _Atomic uint64_t turn;
    char pad[64 - sizeof(uint64_t)];
} line;

static void *partner(void *arg)
{
    uint64_t end = (uint64_t)(uintptr_t)arg;

    for (uint64_t v = 1; v < end; v += 2) {
        while (atomic_load_explicit(&line.turn, memory_order_acquire) != v)
            ;
        atomic_store_explicit(&line.turn, v + 1, memory_order_release);
    }
    return NULL;
}

/* ns for one move of the line, the lowest of a few runs (the others met
 * preemption); 0 with fewer than two CPUs, where the two sides would take
 * turns by preemption instead. */
static double line_handoff_ns(unsigned cpus)
{
    double best = 0;

    if (cpus < 2)
        return 0;
    for (unsigned r = 0; r < HANDOFF_RUNS; r++) {
        pthread_t th;
        uint64_t end = 2 * HANDOFFS;

        atomic_store(&line.turn, 0);
        if (pthread_create(&th, NULL, partner, (void *)(uintptr_t)end) != 0)
            return 0;
        uint64_t t0 = bench_now_ns();
        for (uint64_t v = 0; v < end; v += 2) {
            while (atomic_load_explicit(&line.turn, memory_order_acquire) != v)
                ;
            atomic_store_explicit(&line.turn, v + 1, memory_order_release);
        }
        while (atomic_load_explicit(&line.turn, memory_order_acquire) != end)
            ;
        uint64_t t1 = bench_now_ns();
        pthread_join(th, NULL);
        double ns = (double)(t1 - t0) / (double)end;
        if (best == 0 || ns < best)
            best = ns;
    }
    return best;
}

#define TOUCH_BYTES ((size_t)16 << 20)

/* ns for the first write to a fresh page of anonymous memory (the fault,
 * the zeroing, whatever the hypervisor adds), the lower of two runs; 0 if
 * no memory could be mapped. */
static double first_touch_ns(void)
{
    long psize = sysconf(_SC_PAGESIZE);
    double best = 0;

    if (psize <= 0)
        return 0;
    for (int r = 0; r < 2; r++) {
        char *m = mmap(NULL, TOUCH_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return best;
        uint64_t t0 = bench_now_ns();
        for (size_t off = 0; off < TOUCH_BYTES; off += (size_t)psize)
            ((volatile char *)m)[off] = 1;
        uint64_t t1 = bench_now_ns();
        munmap(m, TOUCH_BYTES);
        double ns = (double)(t1 - t0) / (double)(TOUCH_BYTES / (size_t)psize);
        if (best == 0 || ns < best)
            best = ns;
    }
    return best;
}

void bench_machine_probe(bench_machine *m)
{
    m->line_handoff_ns = line_handoff_ns(m->cpus);
    m->first_touch_ns = first_touch_ns();
}
