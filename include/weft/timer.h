/*
 * weft/timer.h — sleeping, and how late a timer fires.
 *
 * A timed wait (weft_sleep, and every _for call) arms a timer on the heap
 * of the worker it runs on.  When it comes due it fires, and the task it
 * wakes runs, as follows (weft/pool.h, "Time, not rounds" and "Stuck
 * workers"; figures from the bench's sleep and latency-* workloads on the
 * 2-core machine of docs/performance.md, with a 1 ms ticker):
 *
 *   - some worker sleeps: it sleeps until the earliest deadline of the
 *     pool and fires it; late by the kernel's timer slack and a thread's
 *     wake-up (about 0.1 ms);
 *   - every worker runs tasks that switch now and then: the worker fires
 *     its due timers at its next scheduling point (a wait, a yield, a
 *     task's end) and runs the woken task next, so the timer is late by at
 *     most the task that was running when it came due (with 200 tasks
 *     that each compute 1 ms between yields: p99 1 ms, worst 2-3 ms);
 *   - the worker is blocked in a system call or a lock (a blocking read, a
 *     library's mutex): the monitor sees its timer 1 ms late and the
 *     thread asleep in the kernel, and a spare thread fires it: late by
 *     about 1-10 ms once, then as on an idle pool while the stall lasts;
 *   - the worker computes without a switch: the monitor covers it after
 *     10 ms (WEFT__STUCK_NS), and a spare fires its timers from then on:
 *     late by 10-15 ms once, then by the time the spare waits for a CPU
 *     beside the computing threads (the kernel shares the cores);
 *   - the monitor is off (WEFT_POOL_NO_MONITOR), or every spare is in use
 *     (weft_pool_opts.spares): as long as the worker is stuck.
 * A socket that becomes ready is served the same way: by a worker asleep
 * in the netpoller at once, by a busy worker at its next scheduling point
 * once nobody has polled for 0.5 ms, and by a spare during a stall.
 */
#ifndef WEFT_TIMER_H
#define WEFT_TIMER_H

#include <stdint.h>
#include <weft/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * weft_sleep - wait ns nanoseconds.  In a task: parks the task (its worker
 * runs others) on a timer of its pool; it wakes as the top of this file
 * says (within about 0.1 ms of the deadline on an idle pool).  On a plain
 * thread (or in a standalone coroutine): sleeps the thread (nanosleep).
 * Returns 0, -ECANCELED (the task was cancelled), -ENOMEM (no memory to
 * arm the timer; it did not sleep).
 */
WEFT_API int weft_sleep(uint64_t ns);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_TIMER_H */
