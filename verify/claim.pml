/*
 * claim.pml -- who may start a suspended coroutine: the owner's fast claim
 * (no RMW, a compiler fence only) against slow claims that pay a
 * membarrier (src/ctx/claim.h top comment, weft__claim_fast, weft__claim;
 * src/ctx/claim.c weft__claim_slow).
 *
 * Processes: claimer(1), claimer(2), claimer(3), three threads with claim
 * records 1, 2, 3 (struct weft__claimer), all claiming one coroutine.
 * Record 1 made it, so co->owner starts as 1 (src/ctx/coro.c:
 * atomic_init(&co->owner, weft__tls.claimer)).  Threads 1 and 2 each claim
 * twice (claim, run, suspend, claim again), thread 3 once; a thread that
 * owns the coroutine takes the fast path (weft__claim: weft__claim_fast,
 * and on WEFT__CLAIM_NOT_OWNER weft__claim_slow).  drain: the store
 * buffers.
 *
 * Model variable      C
 *   mem[ST]           co->state (SUSP = WEFT_CORO_SUSPENDED, RUN = RUNNING)
 *   mem[OWN]          co->owner (a record 1..3, LOCKED = WEFT__CLAIM_LOCKED)
 *   mem[CL + r]       record r's `claiming` (1 = this coroutine, 0 = NULL)
 *   sb_a/sb_v[r][]    thread r's store buffer (see "memory order")
 *   running           threads that won a claim and run the coroutine now
 *
 * Steps
 *   fast (F1)   claiming = co            buffered store (relaxed)
 *               compiler barrier         nothing: loads may pass the store
 *               o = owner                load (own buffer first)
 *               if o == me: s = state; if SUSP: state = RUN (buffered)
 *               claiming = NULL          buffered store (release)
 *   slow        o = owner; wait while LOCKED; CAS owner o -> LOCKED (a
 *               locked RMW: own buffer drained first, then one step)
 *               membarrier (if o names another thread): one step that
 *               drains every thread's store buffer
 *               wait while mem[CL + o] == 1 (acquire load)
 *               CAS state SUSP -> RUN (one step)
 *               owner = won ? me : o (release store, buffered)
 *   run         running += 1; assert running == 1; running -= 1
 *   suspend     state = SUSP, a release store by the running thread
 *               (the switch-out: weft__ctx_jump's `publish` store, once
 *               the registers are saved; src/ctx/coro.c top comment,
 *               src/ctx/ctx.h), buffered
 *
 * Memory order.  The fast path is the point: its store of `claiming` and
 * its load of `owner` have no StoreLoad barrier (atomic_signal_fence only),
 * so the model gives every thread a FIFO store buffer (x86-TSO): a store
 * waits there, visible to its own thread's loads (forwarding) and to no one
 * else, until the drain process writes it to memory at any later moment.
 * FIFO order also stands for the release store of claiming = NULL, which
 * must not pass the state store before it.  A weaker machine (AArch64) may
 * also let F1 become visible after the later state store; that adds
 * nothing here: any point the membarrier picks in T's stream either
 * precedes F1 (T then reads LOCKED) or follows it (all of F1 and what
 * precedes the point is visible), and U waits for NULL, which is released
 * after the state store.  The slow path uses CAS (full barriers, modelled
 * as draining the own buffer and one step on memory) and acquire loads.
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) is modelled as what it
 * guarantees: each other running thread executes a full barrier at some
 * point during the call, i.e. at a point between two of its steps, where
 * its store buffer empties into memory.
 *
 * Assertions: never two threads running the coroutine (running <= 1,
 * checked right after each win); at the end no claim is left half done
 * (owner is not LOCKED, every claiming is NULL); no deadlock.
 *
 * Broken twins
 *   BROKEN_NO_MEMBARRIER  the slow claim skips membarrier: the owner's F1
 *                         may still sit in its store buffer.
 *   BROKEN_NO_WAIT        the slow claim issues membarrier but does not
 *                         wait for the owner's claiming to clear.
 */

#define N 3                /* threads / records 1..N */
#define SUSP 0
#define RUN 1
#define LOCKED 9
#define ST 0               /* mem[] addresses */
#define OWN 1
#define CL 1               /* mem[CL + r], r = 1..N */
#define NADDR 5
#define SBN 4              /* store buffer entries per thread */

byte mem[NADDR];
byte sb_a[(N + 1) * SBN];  /* thread r's entries: [r*SBN .. r*SBN + n-1], oldest first */
byte sb_v[(N + 1) * SBN];
byte sb_n[N + 1];
byte running;
byte finished;

/* buffered store by thread me (waits while the buffer is full) */
inline store(a, x) {
    d_step {
        sb_n[me] < SBN ->
        sb_a[me * SBN + sb_n[me]] = a;
        sb_v[me * SBN + sb_n[me]] = x;
        sb_n[me]++
    }
}

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

/* oldest entry of thread r's buffer to memory */
inline drain_one(r) {
    mem[sb_a[r * SBN]] = sb_v[r * SBN];
    j = 0;
    do
    :: j + 1 < sb_n[r] ->
        sb_a[r * SBN + j] = sb_a[r * SBN + j + 1];
        sb_v[r * SBN + j] = sb_v[r * SBN + j + 1];
        j++
    :: else -> break
    od;
    sb_n[r]--;
    sb_a[r * SBN + sb_n[r]] = 0;
    sb_v[r * SBN + sb_n[r]] = 0;
    j = 0
}

inline drain_all(r) {
    do
    :: sb_n[r] > 0 -> drain_one(r)
    :: else -> break
    od
}

proctype drain() {
    byte j;
end_drain:
    do
    :: d_step { sb_n[1] > 0 -> drain_one(1) }
    :: d_step { sb_n[2] > 0 -> drain_one(2) }
    :: d_step { sb_n[3] > 0 -> drain_one(3) }
    od
}

proctype claimer(byte me; byte attempts) {
    byte o, s, i, j, k;
    bit won;
    do
    :: attempts > 0 ->
        attempts--;
        won = 0;
        /* weft__claim_fast */
        store(CL + me, 1);                       /* F1 */
        load(OWN, o);                            /* may pass F1 */
        if
        :: o == me ->
            load(ST, s);
            if
            :: s == SUSP -> store(ST, RUN); won = 1
            :: else -> skip
            fi
        :: else -> skip
        fi;
        store(CL + me, 0);                       /* release */
        if
        :: o != me ->
            /* weft__claim_slow: serialise, stop new fast claims */
            do
            :: d_step {
                   sb_n[me] == 0 && mem[OWN] != LOCKED ->  /* CAS: a full barrier */
                   o = mem[OWN]; mem[OWN] = LOCKED
               };
               break
            od;
            if
            :: o != 0 && o != me ->
#ifndef BROKEN_NO_MEMBARRIER
                /* membarrier(): a full barrier in every thread's stream */
                d_step { k = 1; do :: k <= N -> drain_all(k); k++ :: else -> break od; k = 0 };
#endif
#ifndef BROKEN_NO_WAIT
                mem[CL + o] == 0;                /* wait while o->claiming == co */
#endif
                skip
            :: else -> skip
            fi;
            d_step { if :: mem[ST] == SUSP -> mem[ST] = RUN; won = 1 :: else -> won = 0 fi };
            if
            :: won -> store(OWN, me)
            :: else -> store(OWN, o)
            fi
        :: else -> skip
        fi;
        if
        :: won ->
            d_step { running++; assert(running == 1) };
            running--;
            store(ST, SUSP)                      /* switch-out: SUSPENDED, release */
        :: else -> skip
        fi;
        o = 0; s = 0; won = 0
    :: else -> break
    od;
    finished++
}

init {
    mem[OWN] = 1;
    atomic {
        run drain();
        run claimer(1, 2);
        run claimer(2, 2);
        run claimer(3, 1)
    }
}

active proctype check() {
    byte j;
    finished == N && sb_n[1] == 0 && sb_n[2] == 0 && sb_n[3] == 0 ->
    assert(mem[OWN] != LOCKED && mem[CL + 1] == 0 && mem[CL + 2] == 0 &&
           mem[CL + 3] == 0 && mem[ST] == SUSP)
}
