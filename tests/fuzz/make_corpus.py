#!/usr/bin/env python3
"""make_corpus.py — write the seed corpus of fuzz_ops (tests/fuzz/corpus/).

Each seed is a short scenario spelled with fuzz_ops.c's ops (three bytes
each: code, a, b; the codes below must follow its enum opcode).  The
comments say which context performs each op: root (the main thread), coN
(coroutine slot N) or drv (the driver task).  Run it from anywhere; it
rewrites the files.
"""
import os

(CO_CREATE, CO_RESUME, CO_YIELD, CO_TRANSFER, RETURN, CO_DESTROY, CO_STATUS,
 T_SPAWN, T_CREATE, T_AWAIT, T_SYNC_WAIT, T_DETACH, EV_SET, EV_WAIT, DRIVE,
 T_YIELD, POOL2) = range(17)

# Leaf task bodies: b = kind + NKINDS * arg; the event is arg % 2.
VALUE, YIELDS, WAIT, SET, CHILD, HOP, MISUSE, WAIT_FOR, AWAIT_SELF, NKINDS = \
    range(10)


def leaf(kind, arg):
    return kind + NKINDS * arg


SEEDS = {
    # resume/yield/return passing values both ways
    "coro_values": [
        (CO_CREATE, 0, 0), (CO_RESUME, 0, 10),   # root -> co0
        (CO_YIELD, 0, 11),                       # co0 -> root
        (CO_STATUS, 0, 0), (CO_RESUME, 0, 12),   # root -> co0
        (RETURN, 0, 13),                         # co0 ends
        (CO_STATUS, 0, 0), (CO_RESUME, 0, 14),   # -ESRCH
        (CO_DESTROY, 0, 0),
    ],
    # symmetric transfer: co0 -> co1 -> co2, each inherits root as resumer
    "coro_transfer": [
        (CO_CREATE, 0, 0), (CO_CREATE, 1, 0), (CO_CREATE, 2, 0),
        (CO_RESUME, 0, 1),                       # root -> co0
        (CO_TRANSFER, 1, 2),                     # co0 -> co1
        (CO_TRANSFER, 2, 3),                     # co1 -> co2
        (CO_YIELD, 0, 4),                        # co2 -> root
        (CO_RESUME, 1, 5),                       # root -> co1 (its transfer)
        (CO_TRANSFER, 0, 6),                     # co1 -> co0
        (RETURN, 0, 7),                          # co0 ends -> root
        (CO_STATUS, 1, 0), (CO_STATUS, 2, 0),
    ],                                           # teardown cancels co1, co2
    # every refusal: plain thread, self, NORMAL resumer, DEAD, NULL
    "coro_misuse": [
        (CO_YIELD, 0, 1), (CO_TRANSFER, 0, 2),   # root: -EPERM, -EINVAL
        (CO_CREATE, 0, 0), (CO_TRANSFER, 0, 3),  # root: -EPERM
        (CO_DESTROY, 3, 0), (CO_RESUME, 3, 0),   # empty slot: -EINVAL
        (CO_RESUME, 0, 4),                       # root -> co0
        (CO_RESUME, 0, 5), (CO_DESTROY, 0, 0),   # co0 on itself: -EBUSY
        (CO_TRANSFER, 0, 6),                     # -EBUSY
        (CO_CREATE, 1, 0), (CO_RESUME, 1, 7),    # co0 -> co1
        (CO_RESUME, 0, 8), (CO_DESTROY, 0, 0),   # co1 on NORMAL co0: -EBUSY
        (CO_TRANSFER, 0, 9),                     # -EBUSY
        (RETURN, 0, 10),                         # co1 ends -> co0
        (CO_TRANSFER, 1, 11),                    # co0: co1 DEAD, -ESRCH
        (RETURN, 0, 12),                         # co0 ends -> root
        (CO_RESUME, 0, 13), (CO_DESTROY, 0, 0), (CO_DESTROY, 1, 0),
    ],
    # destroy of a suspended coroutine: cancellation, and what it may do
    "coro_cancel": [
        (CO_CREATE, 0, 0), (CO_CREATE, 1, 0), (CO_CREATE, 2, 0),
        (CO_RESUME, 0, 1),                       # root -> co0
        (CO_YIELD, 0, 2),                        # co0 -> root
        (CO_DESTROY, 0, 0),                      # co0's yield: -ECANCELED
        (CO_YIELD, 0, 3), (CO_TRANSFER, 2, 4),   # co0: -ECANCELED at once
        (CO_RESUME, 1, 5),                       # co0 -> co1: still works
        (CO_YIELD, 0, 6),                        # co1 -> co0
        (CO_DESTROY, 1, 0),                      # co0 cancels co1 too
        (CO_DESTROY, 0, 0),                      # co1: NORMAL co0, -EBUSY
        (RETURN, 0, 7),                          # co1 ends -> co0
        (RETURN, 0, 8),                          # co0 ends -> root
        (CO_STATUS, 2, 0),
    ],
    # spawned tasks of every kind, awaited by a driver task on the pool
    "tasks_spawn_await": [
        (T_SPAWN, 0, leaf(VALUE, 3)), (T_SPAWN, 1, leaf(YIELDS, 2)),
        (T_SPAWN, 2, leaf(CHILD, 5)), (T_SPAWN, 3, leaf(MISUSE, 1)),
        (T_AWAIT, 0, 0),                         # root: -EPERM
        (DRIVE, 0, 0),                           # root -> drv (spawned)
        (T_AWAIT, 0, 0), (T_AWAIT, 1, 0), (T_AWAIT, 2, 0),
        (T_SYNC_WAIT, 3, 0),                     # drv: -EDEADLK
        (T_SPAWN, 0, leaf(CHILD, 9)), (T_AWAIT, 0, 0),  # likely inline
        (T_SPAWN, 0, leaf(AWAIT_SELF, 2)), (T_AWAIT, 0, 0),
        (T_YIELD, 0, 0), (T_YIELD, 1, 0),
        (RETURN, 0, 1),                          # drv ends -> root
        (T_SYNC_WAIT, 3, 0), (T_AWAIT, 2, 0),    # empty: -EINVAL
    ],
    # lazy tasks, a lazy driver on no pool that later hops onto the pool
    "tasks_lazy": [
        (T_CREATE, 0, leaf(YIELDS, 1)), (T_CREATE, 1, leaf(HOP, 2)),
        (T_CREATE, 2, leaf(MISUSE, 3)), (T_CREATE, 3, leaf(VALUE, 4)),
        (DRIVE, 1, 0),                           # root -> drv (no pool)
        (T_AWAIT, 0, 0), (T_AWAIT, 1, 0),        # run on the main thread
        (T_YIELD, 0, 0),                         # no pool: -EPERM
        (T_YIELD, 1, 0),                         # hop onto the pool
        (T_AWAIT, 2, 0), (T_YIELD, 0, 0),
        (RETURN, 0, 2),
        (T_SYNC_WAIT, 3, 0),                     # lazy on the main thread
        (T_CREATE, 3, leaf(HOP, 1)), (T_DETACH, 3, 0),  # never runs
        (DRIVE, 2, 0),                           # lazy driver that hops
        (T_CREATE, 0, leaf(WAIT_FOR, 2)), (T_AWAIT, 0, 0),
        (T_CREATE, 1, leaf(AWAIT_SELF, 1)), (T_AWAIT, 1, 0),
        (RETURN, 0, 3),
    ],
    # events: waiters parked and blocked, setters, timed waits, is_set
    "events": [
        (EV_WAIT, 0, 1), (EV_WAIT, 1, 3),        # unset: -ETIMEDOUT, false
        (T_SPAWN, 0, leaf(WAIT, 0)),             # waits on event 0
        (T_SPAWN, 1, leaf(WAIT_FOR, 0)),
        (T_SPAWN, 2, leaf(SET, 0)),              # sets event 0
        (EV_WAIT, 0, 0),                         # root blocks until set
        (T_SYNC_WAIT, 0, 0), (T_SYNC_WAIT, 2, 0),
        (T_CREATE, 3, leaf(WAIT, 1)),            # waits on event 1
        (DRIVE, 0, 0),
        (EV_WAIT, 1, 2),                         # drv: 50 us, -ETIMEDOUT
        (EV_SET, 1, 0), (EV_WAIT, 1, 0), (EV_WAIT, 1, 3),
        (T_AWAIT, 3, 0), (T_AWAIT, 1, 0),
        (RETURN, 0, 1),
    ],
    # coroutines resumed by a driver task on the pool, across a hop
    "coro_in_task": [
        (CO_CREATE, 0, 0), (CO_RESUME, 0, 1),    # root -> co0
        (CO_YIELD, 0, 2),                        # co0 -> root
        (DRIVE, 0, 0),                           # root -> drv
        (CO_RESUME, 0, 3),                       # drv -> co0 (a worker)
        (T_AWAIT, 0, 0), (T_SYNC_WAIT, 0, 0),    # co0: -EINVAL (empty)
        (T_SPAWN, 0, leaf(VALUE, 1)),
        (T_AWAIT, 0, 0), (T_SYNC_WAIT, 0, 0),    # co0: -EPERM, -EDEADLK
        (DRIVE, 0, 0), (T_YIELD, 1, 0),          # co0: -EDEADLK, -EPERM
        (CO_YIELD, 0, 4),                        # co0 -> drv
        (T_YIELD, 0, 0), (T_YIELD, 0, 0),        # drv may change thread
        (CO_RESUME, 0, 5),                       # drv -> co0
        (CO_CREATE, 1, 0), (CO_TRANSFER, 1, 6),  # co0 -> co1
        (CO_YIELD, 0, 7),                        # co1 -> drv
        (CO_YIELD, 0, 8),                        # drv: -EPERM
        (T_AWAIT, 0, 0),
        (RETURN, 0, 9),                          # drv ends -> root
        (CO_RESUME, 1, 10),                      # root -> co1
        (RETURN, 0, 11),                         # co1 ends -> root
    ],
    # a second pool, drained by its destroy
    "pool2": [
        (POOL2, 3, 0), (T_SPAWN, 0, leaf(YIELDS, 4)), (POOL2, 0, 0),
        (T_SYNC_WAIT, 0, 0),
    ],
}

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
os.makedirs(here, exist_ok=True)
for name, ops in SEEDS.items():
    with open(os.path.join(here, name), "wb") as f:
        f.write(bytes(b for op in ops for b in op))
