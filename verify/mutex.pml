/*
 * mutex.pml -- the mutex: barging lockers, a woken waiter that tries
 * again, and the hand-off after a waiter starved.
 *   src/sync/mutex.c top comment; try_lock, try_barge, lock_slow,
 *     weft__mutex_release, wake_waiter, hand_off
 *   src/sync/waitq.h: weft__wq_block (weft__wq_push, _push_head,
 *     weft__wq_remove), weft__wq_wake_one
 *
 * Processes
 *   locker(i), NL of them, each locking and unlocking ITER times:
 *     try_lock: CAS 0 -> LOCKED, else the barge (CAS s -> s | LOCKED while
 *     s has neither LOCKED nor STARVING); then lock_slow under lock_:
 *     the barge again, else CAS s -> s | WAITERS (| STARVING when it was
 *     woken before and chooses to have waited STARVE_NS: a nondeterministic
 *     choice), list itself (at the head if woken before), drop lock_,
 *     block until its outcome is set, retake lock_; handed (owner == i):
 *     holds it (and may clear STARVING: the "served quickly" choice);
 *     else clear WOKEN and go round.  Then the critical section, then
 *     weft__mutex_release: owner = none; CAS LOCKED -> 0, else the loop
 *     (STARVING: hand_off; WAITERS without WOKEN: CAS to clear LOCKED and
 *     set WOKEN, then wake_waiter; else CAS to clear LOCKED).
 *
 * Model variable      C
 *   st                mx->state_: LOCKED 1, WAITERS 2, WOKEN 4, STARVING 8
 *   lk                mx->lock_
 *   q[], qn           mx->q_ (waiter ids, q[0] the head)
 *   outcome[i]        the waiter's record's outcome (PENDING 0, WOKEN 1)
 *   owner             mx->owner_ (NL: nobody)
 *   in_cs             lockers inside the critical section
 *
 * Each CAS is one atomic step; each section under lock_ is its steps
 * between taking and dropping lk (other processes' CASes on st interleave
 * with them, as in C: only q and the WAITERS/WOKEN/STARVING clears are
 * lock_'s).  The wait is the record's outcome (wait.pml checks the record
 * itself); a wake sets it under lock_, and the waiter reads it after it
 * retakes lock_.
 *
 * Memory order: st is only ever changed by RMWs (CAS, fetch_and), which
 * are atomic on their word; the lock_ sections are mutually exclusive and
 * ordered by its acquire/release; a CAS that sets LOCKED is acquire and
 * the RMW that clears it release, which orders the critical sections.
 * The plain loads of st (lock_slow's first, under lock_) may be stale in
 * C: the model lets each such load be any value st has had since the
 * last write under lock_ only through the CAS that follows, which fails
 * on a stale value (the broken twin below is a code path that did not).
 * owner is written under lock_ by hand_off and read by the waiter under
 * lock_; the barger's owner store (outside lock_) is the owner's own.
 *
 * Left out: timeouts and cancellation (a waiter that leaves the list;
 * WAITERS may then stay set with nobody listed, which costs the next
 * unlock one slow pass: wake_waiter and hand_off find nobody and clear
 * it), plain threads against tasks (the same record and outcome).
 *
 * Assertions
 *   - at most one locker in the critical section;
 *   - a locker that returns handed over is the owner hand_off named;
 *   - no locker blocks for good: every run ends with all lockers done
 *     (an invalid end state otherwise), the mutex free (st == 0) and
 *     nobody listed.
 *
 * Broken twins
 *   BROKEN_STALE_STATE   lock_slow computes its WAITERS (| STARVING) from
 *                        the value it loaded before its failed barge, not
 *                        from the value the barge saw (the first version
 *                        of this code): its CAS can then succeed on a
 *                        free mutex and list it with nobody to wake it.
 *   BROKEN_HANDOFF_FREE  hand_off names the waiter as owner but clears
 *                        LOCKED as a plain unlock would: a barger takes
 *                        the mutex while the waiter holds it.
 */

#ifndef NL
#define NL 3
#endif
#ifndef ITER
#define ITER 2
#endif

#define LOCKED 1
#define WAITERS 2
#define WOKEN 4
#define STARVING 8

byte st;
bit lk;
byte q[NL];
byte qn;
bit outcome[NL];
byte owner = NL;
byte in_cs;
byte finished;

inline lock_() { atomic { lk == 0 -> lk = 1 } }
inline unlock_() { lk = 0 }

/* q operations: under lock_ */
inline push_tail(id) { q[qn] = id; qn++ }
inline push_head(id) {
    j = qn;
    do
    :: j > 0 -> q[j] = q[j - 1]; j--
    :: else -> break
    od;
    q[0] = id;
    qn++
}
/* weft__wq_wake_one: the head (every record can be woken here) */
inline pop_head(id) {
    id = q[0];
    j = 0;
    do
    :: j + 1 < qn -> q[j] = q[j + 1]; j++
    :: else -> break
    od;
    qn--;
    q[qn] = 0
}

/* try_barge: while s has neither LOCKED nor STARVING, CAS s -> s|LOCKED;
 * got = 1 on success; s left at the value that made it fail. */
inline try_barge(s, got) {
    got = 0;
    do
    :: (s & (LOCKED | STARVING)) -> break
    :: else ->
        atomic {
            if
            :: st == s -> st = s | LOCKED; got = 1
            :: else -> s = st
            fi
        };
        if
        :: got -> break
        :: else -> skip
        fi
    od
}

proctype locker(byte me)
{
    byte s, s0, want, w, j, n;
    bit got, woken, cas;
    n = 0;
    do
    :: n < ITER ->
        /* try_lock: the fast CAS 0 -> LOCKED, which leaves s at st */
        atomic {
            if
            :: st == 0 -> st = LOCKED; got = 1
            :: else -> s = st; got = 0
            fi
        };
        if
        :: !got -> try_barge(s, got)
        :: else -> skip
        fi;
        if
        :: got -> owner = me
        :: else ->
            /* lock_slow */
            woken = 0;
            lock_();
slow:
            s = st;
            do
            :: true ->
                s0 = s;
                try_barge(s, got);
                if
                :: got -> owner = me; unlock_(); goto locked
                :: else -> skip
                fi;
#ifdef BROKEN_STALE_STATE
                s = s0;
#endif
                want = s | WAITERS;
                if
                :: woken -> want = want | STARVING   /* waited STARVE_NS */
                :: woken -> skip
                :: else -> skip
                fi;
                if
                :: want == s -> break
                :: else ->
                    atomic {
                        if
                        :: st == s -> st = want; cas = 1
                        :: else -> s = st; cas = 0
                        fi
                    };
                    if
                    :: cas -> break
                    :: else -> skip
                    fi
                fi
            od;
            /* weft__wq_block: list, drop lock_, wait, retake lock_ */
            outcome[me] = 0;
            if
            :: woken -> push_head(me)
            :: else -> push_tail(me)
            fi;
            unlock_();
            outcome[me] == 1;
            lock_();
            if
            :: owner == me ->
                /* handed over; served quickly: barging may resume */
                if
                :: atomic { st = st & ~STARVING }
                :: skip
                fi;
                unlock_();
                goto locked
            :: else ->
                atomic { st = st & ~WOKEN };
                woken = 1;
                goto slow
            fi
        fi;
locked:
        atomic { in_cs++; assert(in_cs == 1) };
        assert(owner == me);
        in_cs--;
        /* weft__mutex_release */
        owner = NL;
        atomic {
            if
            :: st == LOCKED -> st = 0; got = 1
            :: else -> s = st; got = 0
            fi
        };
        if
        :: got -> skip
        :: else ->
            do
            :: (s & STARVING) ->
                /* hand_off */
                lock_();
                if
                :: qn > 0 ->
                    pop_head(w);
                    owner = w;
#ifdef BROKEN_HANDOFF_FREE
                    atomic { st = st & ~LOCKED };
#endif
                    if
                    :: qn == 0 -> atomic { st = st & ~(STARVING | WAITERS) }
                    :: else -> skip
                    fi;
                    outcome[w] = 1
                :: else ->
                    atomic { st = st & ~(LOCKED | STARVING | WAITERS) }
                fi;
                unlock_();
                break
            :: else ->
                atomic {
                    if
                    :: st == s ->
                        if
                        :: (s & (WAITERS | WOKEN)) == WAITERS ->
                            st = (s & ~LOCKED) | WOKEN; cas = 1; got = 1
                        :: else -> st = s & ~LOCKED; cas = 1; got = 0
                        fi
                    :: else -> s = st; cas = 0
                    fi
                };
                if
                :: cas && got ->
                    /* wake_waiter */
                    lock_();
                    if
                    :: qn > 0 ->
                        pop_head(w);
                        if
                        :: qn == 0 -> atomic { st = st & ~WAITERS }
                        :: else -> skip
                        fi;
                        outcome[w] = 1
                    :: else ->
                        atomic { st = st & ~(WAITERS | WOKEN) }
                    fi;
                    unlock_();
                    break
                :: cas && !got -> break
                :: else -> skip
                fi
            od
        fi;
        n++
    :: else -> break
    od;
    atomic { finished++ }
}

init {
    atomic {
        byte i = 0;
        do
        :: i < NL -> run locker(i); i++
        :: else -> break
        od
    };
    finished == NL;
    assert(st == 0);
    assert(qn == 0);
    assert(owner == NL)
}
