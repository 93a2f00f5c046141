/*
 * cancel_start.pml -- a cancel of a task that has not started yet, through
 * a borrowed pointer, against the start of that task: the request bit in
 * the handle's run word, an asymmetric Dekker pair with membarrier.
 *   src/sched/task.h: WEFT__H_CANCEL (the top comment of the protocol),
 *     weft__handle_cancel_requested, the state word, weft__task_settle
 *   src/sched/task.c: weft_task_cancel; with -DLAZY_START weft_task_start
 *   src/sched/await.c: try_inline (the pop of T's entry from the
 *     awaiter's own deque and the plain store, or with -DCLAIM the claim
 *     by CAS; the look at the bit; the end with keep, as weft_task_join)
 *   src/sched/task_state.c: weft__task_claim_queued and move() (-DCLAIM),
 *     unref_seen / weft__task_unref, weft__task_drop_handle
 *   src/sched/task_run.c: finish_action's weft__task_set and settle
 *   src/base/membarrier.h, membarrier.c: weft__membarrier
 *   docs/design.md "Waits" (its last paragraph), "Continuations"
 *
 * Processes
 *   holder       task H, which holds T's handle and runs weft_task_join(T)
 *                (keep: the handle is not consumed there) on a worker of
 *                T's pool; once the join returned and nobody borrows the
 *                pointer any more it consumes the handle
 *                (weft__task_drop_handle), as stress_cancel_start's
 *                holder does (it unpublishes the pointer under the mutex
 *                the canceller takes, then awaits).  By default T's entry
 *                is the newest of H's own deque: try_inline pops it and
 *                makes T RUNNING with the plain store.  With -DCLAIM the
 *                entry is elsewhere: H may try try_inline's CAS, else (or
 *                when the CAS fails) it waits for T's end.
 *   worker       (-DCLAIM) the worker that popped T's entry:
 *                weft__task_claim_queued(T), then T's body and
 *                finish_action; or, T claimed inline, the stale entry's
 *                drop (unref_seen).
 *   canceller xNCANCEL  other threads (default 2), each
 *                weft_task_cancel(T) through a borrowed pointer, the
 *                borrow valid for the whole call (the caller's duty).
 *   drain        the store buffers (see "Memory order").
 *
 * T: spawned (SCHEDULED, one queue entry; references: the entry, its
 * life, the handle: queue_spawned's 3 * REF | HANDLE), or with
 * -DLAZY_START made by weft_task_create (IDLE | LAZY | HANDLE, references:
 * life and handle) and queued by H's weft_task_start on its own worker
 * (weft__pool_submit: push_local), then joined.  T's body reads
 * t->cancelled at its first wait (await_until refuses with -ECANCELED, a
 * wait with -ECANCELED under wait_lock) and returns.
 *
 * Model variable      C
 *   mem_st            h->state in memory: lifecycle (IDLE 0, SCHEDULED
 *                     1, RUNNING 2, COMPLETE 3) | STARTED 4 | LAZY 8 |
 *                     HANDLE 16 | refs * 32 (C's bit values differ;
 *                     NOTIFIED and KEEP are not this model's subject:
 *                     nobody waits for or wakes T, T has no room or name)
 *   mem_id            h->run's WEFT__H_CANCEL bit
 *   sb_full/sb_val[i] thread i's store buffer, one entry, for h->state
 *                     (i = 0 H, 1 the worker; the cancellers buffer
 *                     nothing: their only writes are RMWs)
 *   cancelled         t->cancelled (the run record's flag)
 *   run_freed         weft__record_free(t) has run (the run record)
 *   h_freed           the handle went back (weft__handle_free, or
 *                     weft__record_free_pair: both)
 *   ran, saw          T's body has run (how often); the value of
 *                     t->cancelled its first wait read
 *   by_bit            cancels that returned on the bit path (loaded
 *                     SCHEDULED, not STARTED, after membarrier)
 *   ncancel_done      cancels that returned (the borrow ends after them)
 *
 * Steps (each line one step; see "Atomicity")
 *   canceller   s = state (acquire); COMPLETE: return
 *               id |= CANCEL (fetch_or, relaxed: a locked RMW)
 *               membarrier: every thread's buffer to memory, one step
 *               s = state (acquire, from memory); SCHEDULED and not
 *               STARTED: return (by_bit), nothing of T touched again
 *               else the fallback: CAS loop state s -> s + REF, until
 *               COMPLETE (return) or a CAS wins; t = h->run;
 *               cancelled = 1 (an exchange); wait_lock / cur_wait (no
 *               wait record here: wait.pml's subject); weft__task_unref:
 *               load, then the ended-and-all-ours free or a fetch_sub and
 *               settle
 *   holder      (-DLAZY_START: weft_task_start's fetch_add, IDLE|LAZY ->
 *               SCHEDULED, + REF)
 *               try_inline: s = state (acquire); pop: state = running -
 *               REF, a PLAIN store (relaxed, buffered); signal fence
 *               (nothing); b = id & CANCEL; b: cancelled = 1; T's body;
 *               the end: COMPLETE, -1 (keep: the life reference),
 *               acq_rel RMW, then refs 0: free both, else settle
 *               (-DCLAIM: try_inline's CAS SCHEDULED -> RUNNING|STARTED,
 *               references unchanged, then the same; or wait for T's end)
 *               then, every cancel returned: weft__task_drop_handle
 *   worker      (-DCLAIM) move(): s = state (acquire), not SCHEDULED: the
 *               stale entry's unref_seen(s, 1); else CAS s -> RUNNING |
 *               STARTED, - REF; the CAS read s without STARTED: b = id &
 *               CANCEL, b: cancelled = 1; T's body; finish_action: COMPLETE,
 *               -1, settle
 *   settle(n)   refs 0: both records go; refs 1 with HANDLE: the run
 *               record goes (only the handle is left)
 *
 * Atomicity: every CAS loop is its one successful CAS (one step that
 * compares the word it reads with what the loop read before; a failed
 * CAS is a step that re-reads), a fetch_or / fetch_sub / exchange /
 * load / store is one step; a step that frees a record also checks it.
 * The body is one step: what it does besides its first look at
 * t->cancelled is not this model's subject.
 *
 * Memory order.  The point of the protocol is a StoreLoad pair with no
 * hardware fence on one side: try_inline's pop path stores RUNNING |
 * STARTED with a relaxed store followed only by atomic_signal_fence (a
 * compiler barrier), then loads the id; an x86 core may satisfy that load
 * while the store still sits in its store buffer, invisible to the other
 * cores.  So the model gives the starting thread a store buffer (x86-TSO):
 * the store goes there, its own loads of the state see it (forwarding),
 * everybody else's see memory until the drain process writes it back at
 * any later moment.  The canceller's fetch_or is a locked RMW, but its
 * load of the state must not miss a store still buffered on the other
 * core: weft__membarrier is modelled as what MEMBARRIER_CMD_PRIVATE_
 * EXPEDITED guarantees, a full barrier in every running thread at some
 * point during the call, i.e. one step, between two of the starter's
 * steps, that empties every buffer; the canceller's load comes after it
 * (the call itself is a full barrier on the calling thread, so its own
 * fetch_or is visible before that load too).  Either the barrier lands
 * before the starter's store, and the starter's later load sees the bit
 * (set before the call), or after it, and the canceller's load sees
 * STARTED.  Sequential consistency would hide what the membarrier is for:
 * under SC (-DSC: the store goes straight to memory) the twin
 * BROKEN_NO_MEMBARRIER passes (run by hand), because in any interleaving
 * either the starter's store precedes the canceller's load, or the
 * canceller's fetch_or precedes the starter's load; only a buffered store
 * lets both loads miss.  BROKEN_BIT_BEFORE_STORE fails under SC too.
 *
 * The CAS starters (try_inline's CAS, weft__task_claim_queued): on x86 a
 * locked instruction, so its own buffer drains first and the CAS acts on
 * memory; with that alone (-DCLAIM without -DWEAK_RMW) the CAS is a full
 * barrier on the starter's side, the canceller's fetch_or one on its
 * side, and BROKEN_NO_MEMBARRIER passes (run by hand).  On AArch64 the
 * CAS is acquire only (claim_queued's comment: "an acquire: the load is
 * not made before it"): that orders the later load of the id after the
 * CAS's read, not after its write becoming visible, so an LL/SC or LSE
 * CAS leaves the same StoreLoad hole as the plain store.  -DWEAK_RMW
 * models it: a starter's CAS reads (its own buffer, else memory) and puts
 * its write in its store buffer; every RMW on the state, anyone's, first
 * waits until no thread's buffer holds a write to it (coherence: an RMW
 * reads the newest write in the word's order; exclusive monitors), while
 * a plain load may still read memory.  The release/acq_rel RMWs (T's end,
 * the unrefs) drain their own buffer first (release: earlier stores
 * first).  The canceller's relaxed fetch_or stays one write to memory:
 * the membarrier call is a full barrier on its own thread as well, so the
 * bit is visible before the canceller's load (without membarrier, on
 * AArch64, it could be later still: one more way for that twin to fail).
 * The passing -DCLAIM line uses -DWEAK_RMW, a superset of the x86 runs (a
 * drain may follow the CAS at once); its twin BROKEN_NO_MEMBARRIER fails
 * there.  -DWEAK_RMW needs -DCLAIM: with the plain store in play its
 * coherence rule would also hold back the RMWs that may pass a buffered
 * plain store, on x86 and AArch64 alike (the very overwrite that
 * BROKEN_REF_UNSTARTED shows).
 *
 * Everything else: t->cancelled is written by the starter and read by T's
 * body on the same thread (forwarding), or written by the fallback's
 * exchange, whose timing against the body's look is wait.pml's subject
 * (the wait registers under wait_lock); the reference count's RMWs are
 * acq_rel, and every free decision rests on the value an RMW read or an
 * acquire load read of the one word, which SC interleavings of memory
 * (plus the buffers above) cover.
 *
 * Assertions
 *   - no lost cancel: when nothing can move, if a cancel returned on the
 *     bit path, T's body saw t->cancelled (the equivalent of: never the
 *     canceller's load SCHEDULED and not STARTED and the starter's load
 *     of the bit 0);
 *   - T's body runs once (one owner);
 *   - no freed record used: every access to the run record (the fallback's
 *     h->run, cancelled and unref; the body; the end) asserts
 *     !run_freed, every access to the handle !h_freed; no record freed
 *     twice, no reference count below 0; the bit path touches nothing
 *     after its decision (it returns);
 *   - at the end every reference went and both records were freed.
 *
 * Broken twins
 *   BROKEN_NO_MEMBARRIER    the canceller loads the state right after its
 *                           fetch_or, with no membarrier.  Under the store
 *                           buffer it fails; under -DSC it would pass.
 *   BROKEN_BIT_BEFORE_STORE the starter loads the id before its store of
 *                           STARTED (try_inline: before the plain store;
 *                           -DCLAIM: the worker before its CAS).
 *   BROKEN_REF_UNSTARTED    the cancel without the bit path: a reference
 *                           by CAS for any task not ended, the code before
 *                           commit 0d36e8d, and today's code where
 *                           weft__membarrier_ok() or weft__membarrier()
 *                           fails (task.c's comment says so).
 *
 *   BROKEN_REF_LAZY         with LAZY_START: the code before this
 *                           model, which took the bit path only for a
 *                           SCHEDULED task and the reference for a lazy
 *                           (IDLE | LAZY) one: its reference CAS (or, if
 *                           it took the reference before the start, its
 *                           drop) lands between try_inline's load and its
 *                           plain store, which undoes it: a use of the
 *                           freed run record (BFS trail), or a count one
 *                           too high and the records never freed.
 *
 *   LAZY_START     T lazy (weft_task_create), started by H's
 *                  weft_task_start on its own worker (push_local) and
 *                  then joined: try_inline pops it and makes the plain
 *                  store.  The code takes the bit path for every task
 *                  not STARTED and not COMPLETE (IDLE | LAZY as well), so
 *                  that no cancel touches the count of a task that has
 *                  not started (STARTED never goes away, so the
 *                  fallback's later CAS reads need no re-check).  A lazy
 *                  task's other starter, weft__task_start_here (an RMW:
 *                  start_lazy, driver.c's sync_wait), looks at the bit
 *                  too (not modelled).
 *
 * Not in run.sh (run by hand; verify/README.md)
 *   SC             the plain store straight to memory: the no_membarrier
 *                  twin passes.
 *   CLAIM without WEAK_RMW  x86's locked CAS: the no_membarrier twin
 *                  passes.
 */

#ifndef NCANCEL
#define NCANCEL 2
#endif

#if defined(WEAK_RMW) && !defined(CLAIM)
#error "WEAK_RMW needs CLAIM (see the header)"
#endif
#if defined(BROKEN_REF_LAZY) && defined(BROKEN_REF_UNSTARTED)
#error "BROKEN_REF_LAZY is a change of the bit path"
#endif
#if defined(LAZY_START) && defined(CLAIM)
#error "LAZY_START models the pop path (no CLAIM)"
#endif

#define LC_IDLE 0
#define LC_SCHED 1
#define LC_RUN 2
#define LC_DONE 3
#define STARTED 4
#define LAZY 8
#define HANDLE 16
#define REF 32
#define LC(s) ((s) & 3)
#define REFS(s) ((s) / REF)
#define UNSTARTED(s) (LC(s) == LC_SCHED && !((s) & STARTED))

#define TH 0               /* thread indexes: the holder */
#define TW 1               /* the worker (-DCLAIM) */
#define TC 2               /* the cancellers: no buffered stores */

#ifdef CLAIM
#define NPROC (NCANCEL + 2)
#else
#define NPROC (NCANCEL + 1)
#endif

#ifdef LAZY_START
byte mem_st = LC_IDLE | LAZY | HANDLE | 2 * REF;
#else
byte mem_st = LC_SCHED | HANDLE | 3 * REF;
#endif
bit mem_id;
bit sb_full[3];
byte sb_val[3];
bit cancelled;
bit run_freed;
bit h_freed;
byte ran;
bit saw;
byte by_bit;
byte ncancel_done;
byte finished;

#define RACC assert(!run_freed)
#define HACC assert(!h_freed)

/* may an RMW on the state by thread me take its step now? */
#ifdef WEAK_RMW
#define RMW_OK(me) (sb_full[TH] == 0 && sb_full[TW] == 0)
#else
#define RMW_OK(me) (sb_full[me] == 0)   /* a locked RMW drains its own buffer */
#endif

/* a load of the state by thread me: its own buffered store, else memory */
inline load_st(me, dst) {
    d_step {
        HACC;
        if
        :: sb_full[me] -> dst = sb_val[me]
        :: else -> dst = mem_st
        fi
    }
}

/* thread me's buffered write of v to the state */
inline buffer_st(me, v) {
    d_step { HACC; assert(!sb_full[me]); sb_full[me] = 1; sb_val[me] = v }
}

inline drain_st(i) {
    mem_st = sb_val[i]; sb_full[i] = 0; sb_val[i] = 0
}

proctype drain() {
end_drain:
    do
    :: d_step { sb_full[TH] -> drain_st(TH) }
#ifdef CLAIM
    :: d_step { sb_full[TW] -> drain_st(TW) }
#endif
    od
}

inline free_run() {
    assert(!run_freed); run_freed = 1
}

inline free_pair() {
    assert(!run_freed && !h_freed); run_freed = 1; h_freed = 1
}

/* weft__task_settle(t, n), by the owner whose drop made n */
inline settle(n) {
    d_step {
        if
        :: REFS(n) == 0 -> free_pair()
        :: REFS(n) == 1 && (n & HANDLE) -> free_run()
        :: else -> skip
        fi
    }
}

/* unref_seen(t, s, 1) by thread me: s read by an acquire (through
 * t->done: the run record) */
inline unref_seen1(me, s, n) {
    if
    :: LC(s) == LC_DONE && REFS(s) == 1 ->
        d_step { free_pair() }            /* ours alone: no RMW */
    :: else ->
        d_step {                          /* fetch_sub, acq_rel */
            RMW_OK(me) -> HACC; assert(REFS(mem_st) >= 1);
            mem_st = mem_st - REF; n = mem_st
        };
        settle(n)
    fi
}

/* T's body on thread me, its first wait's look at the flag */
inline body() {
    d_step { RACC; ran++; assert(ran == 1); saw = cancelled }
}

/* the end: weft__task_set(t, COMPLETE, NOTIFIED, -1) (acq_rel; for
 * try_inline with keep), refs 0: free both, else settle */
inline finish(me, n) {
    d_step {
        RMW_OK(me) && sb_full[me] == 0 ->
        RACC; HACC; assert(REFS(mem_st) >= 1);
        mem_st = ((mem_st & ~3) | LC_DONE) - REF; n = mem_st
    };
    settle(n)
}

/* weft__task_drop_handle(h), by the holder, every borrow over */
inline drop_handle(me, s, n) {
    ncancel_done == NCANCEL;
    load_st(me, s);
    if
    :: LC(s) == LC_DONE && REFS(s) == 1 ->
        d_step { HACC; h_freed = 1 }      /* free_task: run record gone (!KEEP) */
    :: else ->
        d_step {
            RMW_OK(me) -> HACC; assert(REFS(mem_st) >= 1 && (mem_st & HANDLE));
            n = mem_st; mem_st = mem_st - REF - HANDLE
        };
        if
        :: REFS(n) == 1 -> d_step { HACC; h_freed = 1 }
        :: else -> skip
        fi
    fi
}

proctype canceller() {
    byte s, n;
    bit ok;
    /* weft_task_cancel(h) */
    d_step { HACC; s = mem_st };          /* acquire */
    if
    :: LC(s) == LC_DONE -> goto done
    :: else -> skip
    fi;
#ifndef BROKEN_REF_UNSTARTED
    /* weft__membarrier_ok(): yes */
    d_step { HACC; mem_id = 1 };          /* fetch_or(id, CANCEL), relaxed */
#ifndef BROKEN_NO_MEMBARRIER
    d_step {                              /* weft__membarrier() */
        if :: sb_full[TH] -> drain_st(TH) :: else -> skip fi;
        if :: sb_full[TW] -> drain_st(TW) :: else -> skip fi
    };
#endif
    d_step { HACC; s = mem_st };          /* acquire */
    if
#ifndef BROKEN_REF_LAZY
    :: LC(s) != LC_DONE && !(s & STARTED) -> by_bit++; goto done
#else
    :: UNSTARTED(s) -> by_bit++; goto done /* the starter passes it on */
#endif
    :: else -> skip
    fi;
#endif
    /* A reference for the moment: a CAS loop from s */
    do
    :: LC(s) == LC_DONE -> goto done
    :: else ->
        d_step {
            RMW_OK(TC) -> HACC;
            if
            :: mem_st == s -> mem_st = s + REF; ok = 1
            :: else -> s = mem_st
            fi
        };
        if
        :: ok -> break
        :: else -> skip
        fi
    od;
    /* t = h->run; the flag, seq_cst (an exchange) */
    atomic { HACC; RACC; cancelled = 1 };
    /* wait_lock, cur_wait: no wait record in this model */
    d_step { RACC };
    /* weft__task_unref(t, 1): t->done->state, acquire */
    d_step { RACC; HACC; s = mem_st };
    unref_seen1(TC, s, n);
done:
    atomic { ncancel_done++; finished++; s = 0; n = 0; ok = 0 }
}

/* try_inline's start once it holds T (s: what it claimed from), then
 * the body and the end with keep (weft_task_join) */
inline inline_run(s, n, b) {
#ifndef BROKEN_BIT_BEFORE_STORE
    d_step { HACC; b = mem_id };          /* weft__handle_cancel_requested */
#endif
    if
    :: b -> d_step { RACC; cancelled = 1 }
    :: else -> skip
    fi;
    body();
    finish(TH, n)
}

proctype holder() {
    byte s, n;
    bit b, ok;
#ifdef LAZY_START
    /* weft_task_start(h, pool): fetch_add, release */
    d_step {
        RMW_OK(TH) -> HACC; assert(LC(mem_st) == LC_IDLE && (mem_st & LAZY));
        mem_st = mem_st - LAZY + LC_SCHED + REF
    };
    /* weft__pool_submit: push_local onto our deque; then weft_task_join */
#endif
    /* try_inline: acquire load */
    load_st(TH, s);
#ifdef BROKEN_BIT_BEFORE_STORE
    d_step { HACC; b = mem_id };
#endif
#ifndef CLAIM
    /* T is the bottom of our deque: popped, ours alone */
    assert(UNSTARTED(s));
#ifdef SC
    d_step { HACC; mem_st = ((s & ~3) | LC_RUN | STARTED) - REF };
#else
    buffer_st(TH, ((s & ~3) | LC_RUN | STARTED) - REF);   /* plain store */
#endif
    /* atomic_signal_fence: the compiler's order only */
    inline_run(s, n, b);
#else
    /* the entry is elsewhere: try_inline's CAS, or none (another pool, no
     * stack room, ...) */
    if
    :: UNSTARTED(s) ->
        d_step {
            RMW_OK(TH) -> HACC;
            if
            :: mem_st == s ->
#ifdef WEAK_RMW
                sb_full[TH] = 1; sb_val[TH] = (s & ~3) | LC_RUN | STARTED;
#else
                mem_st = (s & ~3) | LC_RUN | STARTED;
#endif
                ok = 1
            :: else -> ok = 0             /* a worker took it first */
            fi
        }
    :: true -> ok = 0
    fi;
    if
    :: ok -> inline_run(s, n, b)
    :: else ->
        /* the join waits for T's end (parks; the end resumes it) */
        d_step { LC(mem_st) == LC_DONE -> HACC }
    fi;
#endif
    drop_handle(TH, s, n);
    d_step { finished++; s = 0; n = 0; b = 0; ok = 0 }
}

#ifdef CLAIM
/* a worker that popped T's entry: weft__task_claim_queued(T) */
proctype worker() {
    byte s, n;
    bit b, ok;
    d_step { RACC };                      /* t->done, acquire */
    load_st(TW, s);
#ifdef BROKEN_BIT_BEFORE_STORE
    d_step { HACC; b = mem_id };
#endif
    do
    :: LC(s) != LC_SCHED -> break
    :: else ->
        d_step {
            RMW_OK(TW) -> HACC;
            if
            :: mem_st == s ->
#ifdef WEAK_RMW
                sb_full[TW] = 1; sb_val[TW] = ((s & ~3) | LC_RUN | STARTED) - REF;
#else
                mem_st = ((s & ~3) | LC_RUN | STARTED) - REF;
#endif
                ok = 1
            :: else -> s = mem_st
            fi
        };
        if
        :: ok -> break
        :: else -> skip
        fi
    od;
    if
    :: ok ->
        /* its first start: pass a request on (after the CAS) */
        if
        :: !(s & STARTED) ->
#ifndef BROKEN_BIT_BEFORE_STORE
            d_step { HACC; b = mem_id };
#endif
            if
            :: b -> d_step { RACC; cancelled = 1 }
            :: else -> skip
            fi
        :: else -> skip
        fi;
        body();
        finish(TW, n)                     /* finish_action */
    :: else ->
        /* a stale entry: claimed inline meanwhile; s is the CAS's read */
        d_step { RACC };
        unref_seen1(TW, s, n)
    fi;
    d_step { finished++; s = 0; n = 0; b = 0; ok = 0 }
}
#endif

init {
    byte k;
    atomic {
        run drain();
        run holder();
#ifdef CLAIM
        run worker();
#endif
        do
        :: k < NCANCEL -> run canceller(); k++
        :: else -> break
        od
    }
}

active proctype check() {
    finished == NPROC && sb_full[TH] == 0 && sb_full[TW] == 0 ->
    assert(ran == 1);
    assert(by_bit == 0 || saw == 1);      /* no lost cancel */
    assert(run_freed && h_freed)         /* every reference went (the last drop may free without an RMW) */
}
