/*
 * mutex.h — what the condition variable needs of the mutex (internal).
 */
#ifndef WEFT_SYNC_MUTEX_H
#define WEFT_SYNC_MUTEX_H

#include <weft/sync.h>

#include <stdbool.h>
#include <stdint.h>

/* The caller's owner token: its task, or its thread outside a task. */
uintptr_t weft__mutex_self(void);

/* Whether m is held by the owner token me. */
bool weft__mutex_held(const weft_mutex *m, uintptr_t me);

/* Unlock m, which the caller holds (checked by the caller). */
void weft__mutex_release(weft_mutex *m);

/* Lock m for me, waiting as long as it takes: neither a deadline nor a
 * cancellation ends this wait (the condition's re-lock). */
void weft__mutex_relock(weft_mutex *m, uintptr_t me);

#endif /* WEFT_SYNC_MUTEX_H */
