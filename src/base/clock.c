/*
 * base/clock.c — the rate of the tick counter (base/clock.h).
 */
#include "base/clock.h"
#include "base/direct.h"

#include <pthread.h>

static double tick_ns = 1.0;
static pthread_once_t tick_once = PTHREAD_ONCE_INIT;

static void measure(void)
{
#if defined(__x86_64__)
    /* Two (clock, ticks) pairs 5 ms apart; each pair is taken between two
     * tick reads, and the closest bracket is kept, so a preemption inside
     * a pair cannot skew the rate much. */
    uint64_t ns[2], tk[2];
    for (int k = 0; k < 2; k++) {
        uint64_t best = UINT64_MAX;
        for (int i = 0; i < 5; i++) {
            uint64_t a = weft__ticks();
            uint64_t n = weft__now_ns();
            uint64_t b = weft__ticks();
            if (b - a < best) {
                best = b - a;
                ns[k] = n;
                tk[k] = a + (b - a) / 2;
            }
        }
        if (k == 0) {
            struct timespec ts = {0, 5 * 1000 * 1000};
            weft__direct_begin();
            while (nanosleep(&ts, &ts) != 0)
                ;
            weft__direct_end();
        }
    }
    if (tk[1] > tk[0])
        tick_ns = (double)(ns[1] - ns[0]) / (double)(tk[1] - tk[0]);
#elif defined(__aarch64__)
    uint64_t f;
    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(f));
    if (f)
        tick_ns = 1e9 / (double)f;
#endif
}

double weft__tick_ns(void)
{
    pthread_once(&tick_once, measure);
    return tick_ns;
}
