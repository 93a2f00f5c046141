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
int weft__hook_nap(uint64_t ns);

#endif /* WEFT_SCHED_HOOK_H */
