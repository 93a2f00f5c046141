/*
 * weft/event.h — a fire-once event, for threads and coroutines alike.
 *
 * weft_event_set wakes every waiter, now and later: once set, an event
 * stays set.  A task that waits is parked (its worker runs other tasks);
 * a plain thread that waits blocks (futex, or a condition variable in the
 * -Devent=condvar build).
 *
 * The struct is embedded by the user and set up with weft_event_init; its
 * fields are private.  Its memory may be reused once every waiter has
 * returned and no set is in progress; in particular an event on a waiter's
 * own stack may be set by another thread: the setter's last access to it
 * happens before the waiter's wait returns.
 */
#ifndef WEFT_EVENT_H
#define WEFT_EVENT_H

#include <stdbool.h>
#include <stdint.h>
#include <weft/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque storage (weft/weft.h, "Objects"). */
typedef struct weft_event {
    uint64_t opaque_[4];
} weft_event;

/* weft_event_init - an unset event.  Any context; does nothing for NULL. */
WEFT_API void weft_event_init(weft_event *ev);

/* weft_event_set - set it (once; later sets do nothing) and wake all
 * waiters.  Any context; does nothing for NULL. */
WEFT_API void weft_event_set(weft_event *ev);

/* weft_event_is_set - whether it is set (acquire: what the setter wrote
 * before setting is visible).  Any context; false for NULL. */
WEFT_API bool weft_event_is_set(const weft_event *ev);

/*
 * weft_event_wait - wait until it is set.  In a task: parks the task.  On
 * a plain thread: blocks the thread.  In a standalone coroutine (not a
 * task): blocks the thread it runs on.  A set event returns 0 at once,
 * also in a cancelled task.
 * Returns 0, -EINVAL (NULL), -ECANCELED (in a task that was cancelled
 * before or while it waited; weft_task_cancel).
 */
WEFT_API int weft_event_wait(weft_event *ev);

/* weft_event_wait_for - as weft_event_wait, for at most timeout_ns.
 * Returns 0 (set), -EINVAL (NULL), -ETIMEDOUT, -ECANCELED, -ENOMEM (in a
 * task: no memory to arm its timer; it did not wait). */
WEFT_API int weft_event_wait_for(weft_event *ev, uint64_t timeout_ns);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_EVENT_H */
