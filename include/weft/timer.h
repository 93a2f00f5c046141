/*
 * weft/timer.h — sleeping.
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
 * runs others) on a timer of its pool; it wakes within about a millisecond
 * of the deadline on an idle pool.  On a plain thread (or in a standalone
 * coroutine): sleeps the thread (nanosleep).
 * Returns 0, -ECANCELED (the task was cancelled), -ENOMEM (no memory to
 * arm the timer; it did not sleep).
 */
WEFT_API int weft_sleep(uint64_t ns);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_TIMER_H */
