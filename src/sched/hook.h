/*
 * sched/hook.h — what libweft exports for its interposition library
 * (sched/hook.c has the rules; src/hook/ is the library).  Not public:
 * the two are built and installed together.
 */
#ifndef WEFT_SCHED_HOOK_H
#define WEFT_SCHED_HOOK_H

#include <stdint.h>

int weft__hook_here(void);
void weft__hook_pin(void);
void weft__hook_unpin(void);
/* What weft__hook_nap waits for: its wait kind's name in dumps. */
enum weft__hook_nap_for { WEFT__HOOK_NAP_MUTEX, WEFT__HOOK_NAP_JOIN };
int weft__hook_nap(uint64_t ns, enum weft__hook_nap_for what);

#endif /* WEFT_SCHED_HOOK_H */
