/*
 * yielded.pml -- a worker's FIFO of yielded tasks: the owner's append and
 * pop (no barrier, a compiler fence only) against thieves that seize the
 * whole list with a CAS, a membarrier and a look at the owner's busy flag
 * (src/sched/yielded.h top comment, weft__yielded_enter, _exit, _append,
 * _pop, _looks_empty; src/sched/yielded.c weft__yielded_wait,
 * weft__yielded_seize; src/sched/pool.c steal_one, which appends the
 * seized list to the thief's own FIFO and pops from it).
 *
 * Processes: owner (thread 1), thief(2) and with -DNTHIEF=2 thief(3),
 * drain (the store buffers), check (the end).  The owner runs append(1),
 * append(2), pop, append(3), pop, pop: each operation bracketed by
 * weft__yielded_enter / _exit.  A thief tries to seize ATTEMPTS times
 * (default 1) and walks what it got from first to last, as pool.c's
 * steal_one does when it appends the list to its own FIFO and pops it.
 * run.sh checks -DPSO -DNTHIEF=2 -DATTEMPTS=2 (two thieves, two seizes
 * each, the weaker store order: it includes every run of the FIFO
 * buffers), and builds each twin in the smallest configuration that
 * rejects it.
 *
 * Model variable      C
 *   mem[HEAD]         y->head (a task 1..3, 0 = NULL)
 *   mem[TAIL]         y->tail
 *   mem[BUSY]         y->busy
 *   mem[SEIZED]       y->seized
 *   mem[LINK + t]     task t's ->link
 *   sb_*[r]           thread r's store buffer (see "memory order")
 *   holders           threads inside the list now (ghost)
 *   taken[t]          times task t was popped by the owner or taken by a
 *                     thief's walk (ghost)
 *
 * Steps
 *   owner enter (O1)  busy = 1                 buffered store (relaxed)
 *                     compiler barrier         nothing: the load may pass
 *                     s = seized               load (acquire)
 *                     if s: weft__yielded_wait: busy = 0 (release);
 *                       wait until seized == 0 (acquire); busy = 1;
 *                       s = seized; again while s
 *   append(x)         x->link = 0; tl = tail; if tl: tl->link = x else
 *                     head = x; tail = x       buffered stores
 *   pop               t = head; if t: n = t->link; head = n; if !n:
 *                     tail = 0
 *   owner exit        busy = 0                 buffered store (release)
 *   thief (seize)     h = head (looks_empty); if h == 0 give up
 *                     CAS seized 0 -> 1 (T1: a locked RMW, own buffer
 *                       drained, then one step on memory); failed: give up
 *                     membarrier (T2): one step that drains every buffer
 *                     b = busy (T3, acquire); if b == 0: first = head,
 *                       last = tail; head = 0; tail = 0 (buffered)
 *                     seized = 0 (T4, buffered, release)
 *                     walk first .. last through ->link, taking each
 *
 * Memory order.  Every thread has a store buffer; its loads see its own
 * newest buffered store to the address first, else memory.  By default
 * the buffer is FIFO (x86-TSO: stores become visible in program order, a
 * store may pass later loads), as in claim.pml.  With -DPSO a store may
 * also become visible before older stores to other addresses, except
 * that a release store passes nothing and nothing passes it (the C
 * code's relaxed and plain stores against its release stores: the order
 * AArch64 gives them).  Loads stay in program order: every load that
 * the argument uses comes after an acquire load (the owner's of
 * `seized`, the thief's of `busy`) or is the owner's own data.  A CAS is
 * a full barrier: the thread's buffer drains first.  membarrier
 * (MEMBARRIER_CMD_PRIVATE_EXPEDITED) is what it guarantees: every other
 * running thread executes a full barrier at some point of its stream
 * during the call, where its buffer empties into memory; it is one step
 * that empties every buffer (a thread that is not running has an empty
 * buffer: the context switch drained it).
 *
 * Assertions
 *   - never the owner and a thief, or two thieves, inside the list at once
 *     (holders == 1 at every entry: the owner from its enter's successful
 *     look to its exit's store, a thief from its look at busy to T4);
 *   - no task taken twice (taken[t] == 1 at each take), and a thief's
 *     walk from first reaches last through ->link (no NULL, no cycle);
 *   - at the end (every thread done, every buffer empty): busy and seized
 *     are 0, the list in memory is well formed (its walk from head ends
 *     at tail), and every task is either taken once or still in the list
 *     (none lost, none taken twice).
 *
 * Broken twins
 *   BROKEN_NO_MEMBARRIER  the thief skips T2: the owner's busy = 1 may
 *                         still sit in its store buffer at T3.
 *   BROKEN_NO_BUSY_CHECK  the thief takes the list without T3.
 *   BROKEN_WAIT_NO_RECHECK  weft__yielded_wait returns after its busy = 1
 *                         without loading seized again (needs a second
 *                         seize: ATTEMPTS=2).
 *   BROKEN_T4_RELAXED (-DPSO)  T4 is a relaxed store: it may pass the
 *                         thief's head = 0 / tail = 0.
 *   BROKEN_EXIT_RELAXED (-DPSO)  the owner's exit is a relaxed store: it
 *                         may pass the operation's list stores.
 */

#ifndef NTHIEF
#define NTHIEF 1
#endif
#ifndef ATTEMPTS
#define ATTEMPTS 1
#endif
#define N (1 + NTHIEF)     /* threads 1 (owner) .. N */
#define NT 3               /* tasks 1..NT */

#define HEAD 0             /* mem[] addresses */
#define TAIL 1
#define BUSY 2
#define SEIZED 3
#define LINK 3             /* mem[LINK + t], t = 1..NT */
#define NADDR 7
#define SBN 5              /* store buffer entries per thread */

byte mem[NADDR];
byte sb_a[(N + 1) * SBN];  /* thread r's entries: [r*SBN .. r*SBN + n-1], oldest first */
byte sb_v[(N + 1) * SBN];
#ifdef PSO
bit sb_rel[(N + 1) * SBN];
#endif
byte sb_n[N + 1];
byte holders;
byte taken[NT + 1];
byte finished;

/* buffered store by thread me (waits while the buffer is full); rel: a
 * release store (matters with -DPSO only) */
inline store_mo(a, x, rel) {
    d_step {
        sb_n[me] < SBN ->
        sb_a[me * SBN + sb_n[me]] = a;
        sb_v[me * SBN + sb_n[me]] = x;
#ifdef PSO
        sb_rel[me * SBN + sb_n[me]] = rel;
#endif
        sb_n[me]++
    }
}
#define store(a, x) store_mo(a, x, 0)
#define store_release(a, x) store_mo(a, x, 1)

/* load by thread me into dst: own newest buffered store to a, else memory */
inline load(a, dst) {
    d_step {
        dst = mem[a];
        i = 0;
        do
        :: i < sb_n[me] -> if :: sb_a[me * SBN + i] == a -> dst = sb_v[me * SBN + i] :: else -> skip fi; i++
        :: else -> break
        od;
        i = 0
    }
}

/* entry kk of thread rr's buffer to memory, the later ones moved up */
inline drain_at(rr, kk) {
    mem[sb_a[rr * SBN + kk]] = sb_v[rr * SBN + kk];
    j = kk;
    do
    :: j + 1 < sb_n[rr] ->
        sb_a[rr * SBN + j] = sb_a[rr * SBN + j + 1];
        sb_v[rr * SBN + j] = sb_v[rr * SBN + j + 1];
#ifdef PSO
        sb_rel[rr * SBN + j] = sb_rel[rr * SBN + j + 1];
#endif
        j++
    :: else -> break
    od;
    sb_n[rr]--;
    sb_a[rr * SBN + sb_n[rr]] = 0;
    sb_v[rr * SBN + sb_n[rr]] = 0;
#ifdef PSO
    sb_rel[rr * SBN + sb_n[rr]] = 0;
#endif
    j = 0
}

/* membarrier, a CAS: every entry of thread r's buffer, oldest first */
inline drain_all(r) {
    do
    :: sb_n[r] > 0 -> drain_at(r, 0)
    :: else -> break
    od
}

#ifdef PSO
/* entry k of r may go before the older ones: none of them is a release
 * or to the same address, and it is no release itself */
#define E(r, k) (r * SBN + k)
#define PASS(r, i, k) (!sb_rel[E(r, i)] && sb_a[E(r, i)] != sb_a[E(r, k)])
#define MAY1(r) (sb_n[r] > 1 && !sb_rel[E(r, 1)] && PASS(r, 0, 1))
#define MAY2(r) (sb_n[r] > 2 && !sb_rel[E(r, 2)] && PASS(r, 0, 2) && PASS(r, 1, 2))
#define MAY3(r) (sb_n[r] > 3 && !sb_rel[E(r, 3)] && PASS(r, 0, 3) && PASS(r, 1, 3) && PASS(r, 2, 3))
#define MAY4(r) (sb_n[r] > 4 && !sb_rel[E(r, 4)] && PASS(r, 0, 4) && PASS(r, 1, 4) && PASS(r, 2, 4) && PASS(r, 3, 4))
#define DRAIN_ANY(r) \
    :: d_step { sb_n[r] > 0 -> drain_at(r, 0) } \
    :: d_step { MAY1(r) -> drain_at(r, 1) } \
    :: d_step { MAY2(r) -> drain_at(r, 2) } \
    :: d_step { MAY3(r) -> drain_at(r, 3) } \
    :: d_step { MAY4(r) -> drain_at(r, 4) }
#else
#define DRAIN_ANY(r) \
    :: d_step { sb_n[r] > 0 -> drain_at(r, 0) }
#endif

proctype drain() {
    byte j;
end_drain:
    do
    DRAIN_ANY(1)
    DRAIN_ANY(2)
#if NTHIEF == 2
    DRAIN_ANY(3)
#endif
    od
}

/* ------------------------------------------------------------ the owner */

inline take(t) {
    d_step { taken[t]++; assert(taken[t] == 1) }
}

/* weft__yielded_enter (and weft__yielded_wait) */
inline enter() {
    store(BUSY, 1);                              /* O1 */
    load(SEIZED, s);                             /* may pass O1 */
    do                                           /* weft__yielded_wait */
    :: s ->
        store_release(BUSY, 0);                  /* out of the thief's way */
        mem[SEIZED] == 0;                        /* spin (acquire) */
        store(BUSY, 1);
#ifdef BROKEN_WAIT_NO_RECHECK
        s = 0
#else
        load(SEIZED, s)
#endif
    :: else -> break
    od;
    atomic { holders++; assert(holders == 1); s = 0 }
}

/* weft__yielded_exit */
inline exit_() {
    holders--;
#ifdef BROKEN_EXIT_RELAXED
    store(BUSY, 0)
#else
    store_release(BUSY, 0)
#endif
}

inline append(x) {
    enter();
    store(LINK + x, 0);                          /* last->link = NULL */
    load(TAIL, tl);
    if
    :: tl != 0 -> store(LINK + tl, x)            /* tail->link = first */
    :: else -> store(HEAD, x)
    fi;
    store(TAIL, x);
    exit_();
    tl = 0
}

inline pop() {
    enter();
    load(HEAD, t);
    if
    :: t != 0 ->
        load(LINK + t, n);
        store(HEAD, n);
        if
        :: n == 0 -> store(TAIL, 0)
        :: else -> skip
        fi;
        take(t)
    :: else -> skip
    fi;
    exit_();
    t = 0; n = 0
}

proctype owner() {
    byte me = 1;
    byte s, t, n, tl, i, j;
    append(1);
    append(2);
    pop();
    append(3);
    pop();
    pop();
    finished++
}

/* ------------------------------------------------------------ a thief */

proctype thief(byte me) {
    byte attempts = ATTEMPTS;
    byte h, first, last, t, k, i, j;
    bit won, b;
    do
    :: attempts > 0 ->
        attempts--;
        load(HEAD, h);                           /* looks_empty */
        if
        :: h != 0 ->
            d_step {                             /* T1 */
                sb_n[me] == 0 ->
                if
                :: mem[SEIZED] == 0 -> mem[SEIZED] = 1; won = 1
                :: else -> won = 0
                fi
            };
            if
            :: won ->
#ifndef BROKEN_NO_MEMBARRIER
                d_step {                         /* T2 */
                    k = 1;
                    do
                    :: k <= N -> drain_all(k); k++
                    :: else -> break
                    od;
                    k = 0
                };
#endif
#ifdef BROKEN_NO_BUSY_CHECK
                b = 0;
#else
                load(BUSY, b);                   /* T3 */
#endif
                if
                :: b == 0 ->
                    d_step { holders++; assert(holders == 1) };
                    load(HEAD, first);
                    load(TAIL, last);
                    store(HEAD, 0);
                    store(TAIL, 0);
                    holders--
                :: else -> first = 0
                fi;
#ifdef BROKEN_T4_RELAXED
                store(SEIZED, 0);
#else
                store_release(SEIZED, 0);        /* T4 */
#endif
                /* the thief's append of first..last to its own FIFO, and
                 * its pops */
                if
                :: first != 0 ->
                    t = first;
                    do
                    :: t != 0 ->
                        take(t);
                        k++;
                        assert(k <= NT);
                        if
                        :: t == last -> break
                        :: else -> load(LINK + t, t); assert(t != 0)
                        fi
                    od
                :: else -> skip
                fi
            :: else -> skip
            fi
        :: else -> skip
        fi;
        h = 0; first = 0; last = 0; t = 0; k = 0; won = 0; b = 0
    :: else -> break
    od;
    finished++
}

init {
    atomic {
        run drain();
        run owner();
        run thief(2)
#if NTHIEF == 2
        ;
        run thief(3)
#endif
    }
}

#if NTHIEF == 2
#define BUFFERS_EMPTY (sb_n[1] == 0 && sb_n[2] == 0 && sb_n[3] == 0)
#else
#define BUFFERS_EMPTY (sb_n[1] == 0 && sb_n[2] == 0)
#endif

/* The end: every thread done, every buffer empty. */
active proctype check() {
    byte t, last, k;
    byte inlist[NT + 1];
    finished == N && BUFFERS_EMPTY ->
    d_step {
        assert(mem[BUSY] == 0 && mem[SEIZED] == 0 && holders == 0);
        t = mem[HEAD];
        do
        :: t != 0 ->
            assert(k < NT);
            k++;
            inlist[t]++;
            last = t;
            t = mem[LINK + t]
        :: else -> break
        od;
        assert(mem[TAIL] == last);
        t = 1;
        do
        :: t <= NT -> assert(taken[t] + inlist[t] == 1); t++
        :: else -> break
        od
    }
}
