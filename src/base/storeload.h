/*
 * base/storeload.h — the store of a Dekker-style protocol (internal).
 *
 * Several protocols (the deque's pop and drop_bottom against steal, the
 * netpoller's give_up against a parking worker's take, the trace's
 * append against its stop) store one word and then load another that the
 * other side stores before loading the first: each side must see the
 * other's store, or one of them must not go on.  That needs StoreLoad
 * order between the store and the later load, which C11 gives a seq_cst
 * store followed by a seq_cst load.
 *
 * weft__storeload_store makes that store an atomic exchange instead:
 *   - on x86 it is the same instruction (gcc's seq_cst store is an xchg);
 *   - on AArch64 it is a swpal (or an LL/SC pair) instead of an stlr.
 *     Real AArch64 orders stlr before a later ldar (release/acquire are
 *     RCsc there), so the plain store would be enough; qemu-user does
 *     not: it translates stlr and ldar with their barriers on the far
 *     sides, so on an x86 host the load passes the store in the host's
 *     store buffer.  The litmus test (tests/stress/stress_storeload.c)
 *     saw 576 such reorderings in 10 M pairs under qemu 7.2 with stores,
 *     none with exchanges, and CI's aarch64 runs met them as a deque
 *     entry taken twice (a task run on two workers at once).  An exchange
 *     is a read-modify-write, which qemu runs as a host atomic (a full
 *     barrier on x86).
 * ThreadSanitizer models the exchange as the seq_cst RMW it is.  For an
 * _Atomic object; the trace's flag, a plain int read with __atomic loads,
 * uses __atomic_exchange_n the same way (trace.c).
 */
#ifndef WEFT_BASE_STORELOAD_H
#define WEFT_BASE_STORELOAD_H

#include <stdatomic.h>

/* Store v in *obj, ordered before every later load of this thread
 * (seq_cst, and StoreLoad under emulation too). */
#define weft__storeload_store(obj, v)                                        \
    ((void)atomic_exchange_explicit((obj), (v), memory_order_seq_cst))

#endif /* WEFT_BASE_STORELOAD_H */
