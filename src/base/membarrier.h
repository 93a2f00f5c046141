/*
 * base/membarrier.h — the slow side of an asymmetric Dekker protocol
 * (internal).
 *
 * Some protocols have a side that runs all the time (a coroutine's owner
 * claiming it, a worker taking from its own FIFO of yielded tasks) and a
 * side that runs rarely (another thread claiming it, a thief taking that
 * FIFO).  Each side stores one word and then loads the other's, which
 * needs StoreLoad order on both.  Rather than pay a barrier on the common
 * side, that side orders its store and load for the compiler only, and
 * the rare side calls membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which
 * runs a full barrier on every thread of the process that is running at
 * that moment (a thread that is not running passed through the kernel's
 * context switch, a full barrier too).  Either that barrier lands before
 * the common side's store, and then its later load sees the rare side's
 * store; or after it, and then the rare side, loading after membarrier
 * returns, sees the common side's store.  (liburcu's urcu-memb flavour,
 * and the claim protocol of ctx/claim.h.)
 */
#ifndef WEFT_BASE_MEMBARRIER_H
#define WEFT_BASE_MEMBARRIER_H

#include <stdbool.h>

/* Whether the process may use weft__membarrier (the kernel has the
 * command and the process is registered for it; registered on the first
 * call).  Without it the protocols fall back to something slower. */
bool weft__membarrier_ok(void);

/* A full memory barrier on every running thread of the process.  Only
 * after weft__membarrier_ok() returned true.  False if the kernel could
 * not do it (-ENOMEM where it allocates its CPU mask): then no barrier
 * ran, and the caller must not go on as if one had. */
bool weft__membarrier(void);

#endif /* WEFT_BASE_MEMBARRIER_H */
