/*
 * sched/sleep.c — weft_sleep: a wait (sched/wait.h) that only its timer or a
 * cancel ends.
 */
#include <weft/timer.h>

#include "base/clock.h"
#include "base/compiler.h"
#include "sched/task.h"
#include "sched/wait.h"

#include <errno.h>
#include <time.h>

static void sleep_thread(uint64_t ns)
{
    struct timespec ts = weft__timespec_of(ns);
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

WEFT_EXPORT int weft_sleep(uint64_t ns)
{
    if (!weft__task_current()) {
        sleep_thread(ns);
        return 0;
    }
    /* Nothing to wait for: done, even in a cancelled task (weft/weft.h,
     * "Cancellation": only a call that would wait sees it). */
    if (ns == 0)
        return 0;
    struct weft__wait w;
    if (weft__wait_init(&w, weft__deadline_after(ns), &weft__wait_sleep, NULL))
        return -ECANCELED;
    uint32_t outcome = weft__wait_block(&w);
    return outcome == WEFT__W_TIMEDOUT && !w.nomem ? 0
                                                    : weft__wait_error(&w, outcome);
}
