/*
 * failure.pml -- a failure nobody will consume: dropped once, by whichever
 * of the handle's detach and the task's end comes second on the state
 * word; never dropped when an awaiter took it; no freed record touched.
 *   src/sched/task.h: WEFT__H_FAILED, WEFT__H_DETACHED (the rule),
 *     weft__handle_failed, the state word, weft__task_settle,
 *     weft__task_consume
 *   src/sched/task_run.c: task_entry (the result), task_finish (the
 *     waiter slot's exchange to DONE, before the RMW to COMPLETE),
 *     finish_action, finish_failed
 *   src/sched/task_state.c: weft__failure_drop, weft__task_detach_handle,
 *     weft__task_drop_handle, free_task, unref_seen / weft__task_unref,
 *     weft__task_claim_queued (move's CAS, the stale entry's unref_seen)
 *   src/sched/task.c: weft_task_detach, weft_task_fail, weft_spawn's
 *     queue_spawned (no handle: DETACHED before the task is queued)
 *   src/sched/await.c: await_until (the wait for DONE, the look at FAILED,
 *     the consume), try_inline (the claim by CAS, the body inline, its
 *     end with or without keep), weft_task_result, weft_task_join
 *
 * Processes
 *   worker   the worker that popped T's spawn entry:
 *            weft__task_claim_queued(T); claimed: T's body (it fails or
 *            not), task_finish's exchange of the waiter slot to DONE, then
 *            finish_action: finish_failed for a failed body, else the
 *            normal end (COMPLETE and the life reference in one RMW,
 *            settle).  Not claimed (the holder ran T inline): the stale
 *            entry's unref_seen.
 *   holder   T's handle's holder (absent with -DNO_HANDLE), one of
 *              - weft_task_detach at any moment;
 *              - weft_task_result (or weft_await): try_inline's claim by
 *                CAS and T's body inline, ended there, the failure taken;
 *                or the wait for DONE, the look at FAILED, the consume
 *                (weft__task_consume: the result taken, then
 *                weft__task_drop_handle);
 *              - weft_task_join (keep: inline as above, the handle kept,
 *                or the wait for DONE), then weft_task_detach.
 *   third    (unless -DNO_THIRD) a third holder of one run-side reference,
 *            from the start, that it drops at any moment by
 *            weft__task_unref (an acquire load, then unref_seen): records
 *            freed by neither the end nor the holder.  In the code that
 *            is a weft_task_cancel's reference for a moment (through a
 *            borrowed pointer: weft_task_current passed on, say).  The
 *            cancel takes it by CAS only while T has not ended, and before
 *            T's end no step depends on the count (every free needs
 *            COMPLETE, or refs 0, which the life reference rules out; the
 *            detacher's CAS only subtracts; try_inline's CAS fails on any
 *            change and falls back to the wait, as it may anyway), so
 *            holding it from the start changes no decision: the count
 *            aside, every run is one of the code.  (A stale queue entry is
 *            the other kind of third holder: the worker's above, real
 *            whenever the holder runs T inline; such a task ends in
 *            try_inline, never in finish_failed.)
 *
 * T is spawned with a handle (queue_spawned: SCHEDULED | HANDLE, 3
 * references: the entry, its life, the handle; + the third's), or with
 * -DNO_HANDLE by weft_spawn with out NULL (SCHEDULED, the entry and its
 * life; DETACHED set in the run word before queue_new's release store).  With
 * -DKEEP it has a room (weft_spawn_with, weft_spawn_copy: weft.hpp's
 * tasks), so KEEP: the run record stays as long as the handle, and the
 * frees differ (both records go at the handle's drop).
 *
 * Model variable      C
 *   st                h->state: lifecycle (SCHEDULED 1, RUNNING 2,
 *                     COMPLETE 3) | STARTED 4 | HANDLE 8 | KEEP 16 |
 *                     refs * 32 (C's bit values differ; NOTIFIED, LAZY
 *                     and ROOM are not this model's subject: no wake, no
 *                     lazy task, nobody reads the room)
 *   id_failed         h->run's WEFT__H_FAILED
 *   id_detached       h->run's WEFT__H_DETACHED
 *   waiter_done       h->waiter holds the end's mark (WEFT__WAITER_ENDED;
 *                     who parks in the
 *                     slot and how it is woken is task.pml's subject: the
 *                     awaiter here simply waits for DONE)
 *   fobj              h->result's failure: F_NONE (the body returned a
 *                     value, or has not ended), F_ALIVE, F_DROPPED
 *                     (weft__failure_drop ran its drop), F_TAKEN (an
 *                     awaiter's *result has it: the caller's to drop)
 *   run_freed         weft__record_free(t) has run (the run record)
 *   h_freed           the handle went back (weft__handle_free, or
 *                     weft__record_free_pair: both)
 *   ran               T's body has run (how often)
 *
 * Steps (each line one step; see "Atomicity")
 *   body        T's body, with weft_task_fail's fetch_or of FAILED and
 *               task_entry's store of h->result (a failure) or a value
 *   worker      claim_queued: t->done, s = state (acquire); SCHEDULED:
 *               CAS s -> RUNNING | STARTED, - REF (a failed CAS re-reads);
 *               else unref_seen(s, 1).  Claimed: body; exchange(waiter,
 *               DONE) (acq_rel); finish_action: FAILED (relaxed, its own
 *               mark); failed: finish_failed: COMPLETE, refs unchanged
 *               (acq_rel); HANDLE clear in what it wrote: id (relaxed),
 *               DETACHED: drop; weft__task_unref(t, 1): s = state
 *               (acquire), unref_seen(s, 1); not failed: COMPLETE, -1
 *               (acq_rel), settle
 *   holder      weft_task_detach: fetch_or(id, DETACHED) (relaxed);
 *               detach_handle: s = state (acquire); while not COMPLETE:
 *               CAS s -> s - REF - HANDLE (acq_rel; a failed CAS re-reads,
 *               acquire), done when it wins; COMPLETE: FAILED (relaxed),
 *               set: drop; then weft__task_drop_handle
 *               try_inline: s = state (acquire); SCHEDULED, not STARTED:
 *               CAS s -> RUNNING | STARTED (or no try: another pool, no
 *               stack room); won: body; *failed = FAILED (its own mark),
 *               the result taken (keep: left in h->result); waiter = DONE
 *               (relaxed store); COMPLETE, -2 and HANDLE cleared (keep: -1)
 *               (acq_rel); refs 0: both go; keep: settle
 *               the wait: waiter == DONE (acquire); FAILED (relaxed); the
 *               result taken; weft__task_drop_handle
 *   drop_handle s = state (acquire); COMPLETE and refs 1: ours alone,
 *               free_task, no RMW; else fetch_sub(REF + HANDLE) (acq_rel),
 *               it read refs 1: free_task
 *   free_task   the handle (the run record went, or goes, by the run
 *               side's settle: it touches only the run record); KEEP:
 *               both
 *   unref_seen(s, 1)  COMPLETE and refs 1: ours alone, both go, no RMW;
 *               else fetch_sub(REF) (acq_rel), settle
 *   settle(n)   refs 0: both go; refs 1 with HANDLE, not KEEP: the run
 *               record goes
 *   drop        weft__failure_drop: h->result read, cleared, its drop run
 *
 * Atomicity: every CAS loop is its successful CAS (one step comparing the
 * word with what the loop read; a failed CAS is a step that re-reads);
 * weft__task_set's loop is one RMW (it carries only NOTIFIED and the count
 * along, and its result is the word it wrote); a load, a store, a
 * fetch_or / fetch_sub / exchange is one step; a free checks and frees in
 * one step.  The body is one step.
 *
 * Memory order.  Sequential consistency over these steps covers the
 * code's orders: the state word is one location (its RMWs and acquire
 * loads are totally ordered in its modification order, which the
 * interleaving is), and each relaxed access to the id that a decision
 * rests on is ordered by a release/acquire pair on the state, or on the
 * waiter slot, after the write it must see.  The id's bits are only set
 * while T lives (task_new's store is before T is published), so a stale
 * load can only miss a bit, never see one too early; the cases:
 *   - DETACHED at the end's look: the end looks only when its RMW to
 *     COMPLETE read HANDLE clear.  HANDLE is cleared by the holder's drop
 *     alone: a detacher's CAS (the only drop of a detacher before
 *     COMPLETE) or an awaiter's drop_handle (no DETACHED, ever).  The
 *     detacher's fetch_or of DETACHED is sequenced before its CAS
 *     (release); the end's RMW (acquire) reads that CAS's write or a later
 *     RMW's in the word's modification order (a release sequence), so it
 *     synchronizes with the CAS, the fetch_or happens before the end's
 *     load, and by write-read coherence that load sees DETACHED.  With
 *     -DNO_HANDLE the relaxed store of DETACHED precedes queue_new's
 *     release store of SCHEDULED, which claim_queued's acquire CAS reads:
 *     the end, on the claimer's thread (or one it reached since through
 *     a park's release and a claim's acquire), sees it.
 *   - FAILED at the detacher's look: it looks only when its acquire load
 *     or failed CAS (acquire) read COMPLETE, written by the end's acq_rel
 *     RMW (or a later RMW: a release sequence), which T's fetch_or of
 *     FAILED precedes on T's thread.
 *   - FAILED at the awaiter's look: it read DONE by an acquire load of
 *     the waiter slot, written by task_finish's acq_rel exchange after the
 *     fetch_or; or the awaiter ran T's body itself (try_inline).
 *   - FAILED at the end's own look (finish_action): T's own write, program
 *     order (a task may move between threads only through a release /
 *     acquire pair on its state).
 *   - h->result: written by T's body (task_entry) before the exchange to
 *     DONE and the RMW to COMPLETE; read by whoever saw either, as FAILED.
 * The frees rest on the value an RMW read or an acquire load read of the
 * one word, as in task.pml and cancel_start.pml.  So the model has no
 * store buffer; the twin BROKEN_DETACHED_LATE (DETACHED set after the
 * detacher's CAS) shows that the order of the fetch_or and the CAS is
 * what the end's look needs.
 *
 * Assertions
 *   - a failure dropped at most once, never after an awaiter took it, and
 *     never taken after a drop (drop and take assert F_ALIVE);
 *   - no freed record used: every access to the handle (its state, id,
 *     waiter slot, result) asserts !h_freed, every access to the run record
 *     (t->done, the body) !run_freed; no record freed twice; a free without
 *     an RMW (ours alone) finds the word it read unchanged; no count below
 *     0;
 *   - when every process is done: T's body ran once, a failure that
 *     nobody took was dropped (F_ALIVE is a leak), both records were
 *     freed.
 *
 * Broken twins
 *   BROKEN_END_NO_DETACHED  finish_failed drops whenever its RMW reads
 *                           HANDLE clear, without looking at DETACHED: an
 *                           awaiter's consume clears HANDLE too, between
 *                           DONE and COMPLETE.
 *   BROKEN_DETACH_NO_DROP   the detacher drops the handle with
 *                           weft__task_drop_handle (a fetch_sub, even when
 *                           COMPLETE) and never drops the failure: the end
 *                           that read HANDLE set left it to it.
 *   BROKEN_DETACH_DROP_AFTER  the detacher's fetch_sub of the handle
 *                           first, then, if it read COMPLETE, the drop: the
 *                           end's unref may free the records between.
 *   BROKEN_END_UNREF        finish_failed as the normal end: COMPLETE and
 *                           the life reference in one RMW, then the look
 *                           at HANDLE and the id, then settle: the third
 *                           holder's unref may free the records between.
 *                           Needs the third holder (passes with
 *                           -DNO_THIRD: the end alone then holds what is
 *                           left once the handle is gone).
 *   BROKEN_DETACHED_LATE    weft_task_detach's fetch_or of DETACHED after
 *                           the handle's drop (detach_handle).
 *   BROKEN_SPAWN_NO_DETACHED  with -DNO_HANDLE: queue_spawned does not set
 *                           DETACHED: nobody drops the failure.
 *
 * Lines
 *   (none)         T spawned with a handle, the third holder
 *   KEEP           the same, T with a room (KEEP)
 *   NO_HANDLE      weft_spawn with out NULL: the worker and the third
 *                  holder only
 *
 * Not in run.sh (run by hand; verify/README.md)
 *   NO_THIRD       no third holder: the lines pass, and so does the twin
 *                  BROKEN_END_UNREF; every other twin still fails.
 */

#if defined(BROKEN_SPAWN_NO_DETACHED) && !defined(NO_HANDLE)
#error "BROKEN_SPAWN_NO_DETACHED needs NO_HANDLE"
#endif
#if defined(NO_HANDLE) && (defined(BROKEN_DETACH_NO_DROP) || \
    defined(BROKEN_DETACH_DROP_AFTER) || defined(BROKEN_DETACHED_LATE))
#error "a detacher's twin needs the holder (no NO_HANDLE)"
#endif

#define LC_SCHED 1
#define LC_RUN 2
#define LC_DONE 3
#define STARTED 4
#define HANDLE 8
#define KEEP_BIT 16
#define REF 32
#define LC(s) ((s) & 3)
#define REFS(s) ((s) / REF)

#define F_NONE 0
#define F_ALIVE 1
#define F_DROPPED 2
#define F_TAKEN 3

#ifdef NO_THIRD
#define NTHIRD 0
#else
#define NTHIRD 1
#endif

#ifdef KEEP
#define ST_KEEP KEEP_BIT
#else
#define ST_KEEP 0
#endif

#ifdef NO_HANDLE
#define NPROC (1 + NTHIRD)
byte st = LC_SCHED + ST_KEEP + (2 + NTHIRD) * REF;
#ifdef BROKEN_SPAWN_NO_DETACHED
bit id_detached = 0;
#else
bit id_detached = 1;              /* queue_spawned, before the release */
#endif
#else
#define NPROC (2 + NTHIRD)
byte st = LC_SCHED + HANDLE + ST_KEEP + (3 + NTHIRD) * REF;
bit id_detached;
#endif
bit id_failed;
bit waiter_done;
byte fobj = F_NONE;
bit run_freed;
bit h_freed;
byte ran;
byte finished;

#define RACC assert(!run_freed)
#define HACC assert(!h_freed)

inline free_run() {
    assert(!run_freed); run_freed = 1
}

inline free_pair() {
    assert(!run_freed && !h_freed); run_freed = 1; h_freed = 1
}

/* free_task(h->run, h, !(s & KEEP)): the handle alone (its run record
 * went, or goes, by the run side's settle), or with KEEP both */
inline free_task(s) {
    if
    :: !(s & KEEP_BIT) -> assert(!h_freed); h_freed = 1
    :: else -> free_pair()
    fi
}

/* weft__failure_drop(h) */
inline drop() {
    d_step { HACC; assert(fobj == F_ALIVE); fobj = F_DROPPED }
}

/* T's body: weft_task_fail's fetch_or and a failure as fn's result, or a
 * value; then task_entry's (or try_inline's) h->result = r */
inline body() {
    if
    :: d_step { RACC; HACC; ran++; assert(ran == 1);
                id_failed = 1; fobj = F_ALIVE }
    :: d_step { RACC; HACC; ran++; assert(ran == 1) }
    fi
}

/* weft__task_settle(t, n), by the owner whose drop made n */
inline settle(n) {
    d_step {
        if
        :: REFS(n) == 0 -> free_pair()
        :: REFS(n) == 1 && (n & HANDLE) && !(n & KEEP_BIT) -> free_run()
        :: else -> skip
        fi
    }
}

/* unref_seen(t, s, 1): s read by an acquire */
inline unref_seen1(s, n) {
    if
    :: LC(s) == LC_DONE && REFS(s) == 1 ->
        d_step { HACC; assert(st == s); free_pair() }   /* ours alone */
    :: else ->
        d_step {                                         /* acq_rel */
            HACC; assert(REFS(st) >= 1);
            st = st - REF; n = st
        };
        settle(n)
    fi
}

/* weft__task_drop_handle(h) */
inline drop_handle(s, n) {
    d_step { HACC; s = st };                    /* acquire */
    if
    :: LC(s) == LC_DONE && REFS(s) == 1 ->
        /* ours alone: free_task(h->run, h, run_gone = !KEEP) */
        d_step { HACC; assert(st == s); free_task(s) }
    :: else ->
        d_step {                                /* fetch_sub, acq_rel */
            HACC; assert(REFS(st) >= 1 && (st & HANDLE));
            n = st; st = st - REF - HANDLE
        };
        if
        :: REFS(n) == 1 -> d_step { free_task(n) }
        :: else -> skip
        fi
    fi
}

/* finish_failed(t), on the thread that ran T */
inline finish_failed(s, n, b) {
#ifndef BROKEN_END_UNREF
    /* COMPLETE, the life reference kept (acq_rel) */
    d_step {
        RACC; HACC; assert(REFS(st) >= 1);
        st = (st & ~3) | LC_DONE; n = st
    };
#else
    /* the normal end's RMW: the life reference goes with it */
    d_step {
        RACC; HACC; assert(REFS(st) >= 1);
        st = ((st & ~3) | LC_DONE) - REF; n = st
    };
#endif
    if
    :: !(n & HANDLE) ->
#ifdef BROKEN_END_NO_DETACHED
        drop()
#else
        d_step { HACC; b = id_detached };       /* relaxed */
        if
        :: b -> drop()
        :: else -> skip
        fi
#endif
    :: else -> skip
    fi;
#ifndef BROKEN_END_UNREF
    /* weft__task_unref(t, 1): t->done->state, acquire */
    d_step { RACC; HACC; s = st };
    unref_seen1(s, n)
#else
    settle(n)
#endif
}

proctype worker() {
    byte s, n;
    bit b, ok;
    /* weft__task_claim_queued: move(): t->done, then the state (acquire) */
    d_step { RACC; HACC; s = st };
    do
    :: LC(s) != LC_SCHED -> break
    :: else ->
        d_step {                                /* CAS, acquire */
            HACC;
            if
            :: st == s -> st = ((s & ~3) | LC_RUN | STARTED) - REF; ok = 1
            :: else -> s = st
            fi
        };
        if
        :: ok -> break
        :: else -> skip
        fi
    od;
    if
    :: ok ->
        body();
        /* task_finish: exchange(waiter, DONE), acq_rel */
        d_step { RACC; HACC; waiter_done = 1 };
        /* finish_action: weft__handle_failed(t->done), its own mark */
        d_step { RACC; HACC; b = id_failed };
        if
        :: b -> finish_failed(s, n, b)
        :: else ->
            /* COMPLETE, and the life reference goes (acq_rel) */
            d_step {
                RACC; HACC; assert(REFS(st) >= 1);
                st = ((st & ~3) | LC_DONE) - REF; n = st
            };
            settle(n)
        fi
    :: else ->
        /* a stale entry: T was claimed inline; s is the CAS's read */
        unref_seen1(s, n)
    fi;
    d_step { finished++; s = 0; n = 0; b = 0; ok = 0 }
}

#ifndef NO_HANDLE
/* weft_task_detach(h): T spawned, not lazy */
inline detach(s, n, b, ok) {
    ok = 0;
#ifndef BROKEN_DETACHED_LATE
    d_step { HACC; id_detached = 1 };           /* fetch_or, relaxed */
#endif
#if defined(BROKEN_DETACH_NO_DROP)
    drop_handle(s, n);
#elif defined(BROKEN_DETACH_DROP_AFTER)
    d_step {                                    /* fetch_sub, acq_rel */
        HACC; assert(REFS(st) >= 1 && (st & HANDLE));
        n = st; st = st - REF - HANDLE
    };
    if
    :: LC(n) == LC_DONE ->                      /* the end came first */
        d_step { HACC; b = id_failed };
        if
        :: b -> drop()
        :: else -> skip
        fi
    :: else -> skip
    fi;
    if
    :: REFS(n) == 1 -> d_step { free_task(n) }
    :: else -> skip
    fi;
#else
    /* weft__task_detach_handle(h) */
    d_step { HACC; s = st };                    /* acquire */
    do
    :: LC(s) == LC_DONE -> break
    :: else ->
        d_step {                                /* CAS, acq_rel */
            HACC;
            if
            :: st == s -> st = s - REF - HANDLE; ok = 1
            :: else -> s = st                   /* acquire */
            fi
        };
        if
        :: ok -> break
        :: else -> skip
        fi
    od;
    if
    :: ok -> skip            /* not ended: the end drops a failure */
    :: else ->
        /* ended while the handle was held: a failure is ours to drop */
        d_step { HACC; b = id_failed };         /* relaxed */
        if
        :: b -> drop()
        :: else -> skip
        fi;
        drop_handle(s, n)
    fi;
#endif
#ifdef BROKEN_DETACHED_LATE
    d_step { HACC; id_detached = 1 };
#endif
    skip
}

/* try_inline(self, h, ..., keep, ...): ok = 1 if T ran here */
inline try_inline(keep, s, n, ok) {
    ok = 0;
    /* acquire; what it reads of the run record before the claim only
     * decides whether to try (await.c), not modelled */
    d_step { HACC; s = st };
    if
    :: LC(s) == LC_SCHED && !(s & STARTED) ->
        d_step {                                /* CAS, acquire */
            HACC;
            if
            :: st == s -> st = (s & ~3) | LC_RUN | STARTED; ok = 1
            :: else -> skip                     /* a worker took it */
            fi
        }
    :: true -> skip          /* another pool, no stack room: no try */
    fi;
    if
    :: ok ->
        body();
        /* *result = r, *failed = weft__handle_failed(h): its own mark */
        if
        :: !keep -> d_step { HACC; if :: fobj == F_ALIVE -> fobj = F_TAKEN
                                      :: else -> skip fi }
        :: else -> skip
        fi;
        d_step { HACC; waiter_done = 1 };       /* relaxed store */
        if
        :: !keep ->
            d_step {                            /* acq_rel */
                RACC; HACC; assert(REFS(st) >= 2 && (st & HANDLE));
                st = ((st & ~(3 | HANDLE)) | LC_DONE) - 2 * REF; n = st
            };
            if
            :: REFS(n) == 0 -> d_step { free_pair() }
            :: else -> skip  /* a stale entry's (or the third's) is left */
            fi
        :: else ->
            d_step {
                RACC; HACC; assert(REFS(st) >= 1);
                st = ((st & ~3) | LC_DONE) - REF; n = st
            };
            if
            :: REFS(n) == 0 -> d_step { free_pair() }
            :: else -> settle(n)
            fi
        fi
    :: else -> skip
    fi
}

/* await_until's wait: until the slot says DONE (acquire) */
inline wait_done() {
    d_step { waiter_done -> HACC }
}

/* await_until's end without keep: FAILED, then weft__task_consume */
inline consume(s, n, b) {
    d_step { HACC; b = id_failed };             /* relaxed */
    d_step {                                    /* *result = h->result */
        HACC;
        if
        :: b -> assert(fobj == F_ALIVE); fobj = F_TAKEN
        :: else -> assert(fobj == F_NONE)
        fi
    };
    drop_handle(s, n)
}

proctype holder() {
    byte s, n;
    bit b, ok;
    if
    :: /* weft_task_detach, at any moment */
        detach(s, n, b, ok)
    :: /* weft_task_result (weft_await) */
        try_inline(0, s, n, ok);
        if
        :: ok -> skip
        :: else -> wait_done(); consume(s, n, b)
        fi
    :: /* weft_task_join, then weft_task_detach */
        try_inline(1, s, n, ok);
        if
        :: ok -> skip
        :: else -> wait_done()
        fi;
        detach(s, n, b, ok)
    fi;
    d_step { finished++; s = 0; n = 0; b = 0; ok = 0 }
}
#endif

#if NTHIRD
/* a third holder of one reference: weft__task_unref(t, 1) at any moment */
proctype third() {
    byte s, n;
    d_step { RACC; HACC; s = st };              /* t->done->state, acquire */
    unref_seen1(s, n);
    d_step { finished++; s = 0; n = 0 }
}
#endif

init {
    atomic {
        run worker();
#ifndef NO_HANDLE
        run holder();
#endif
#if NTHIRD
        run third();
#endif
    }
}

active proctype check() {
    finished == NPROC ->
    assert(ran == 1);
    assert(fobj != F_ALIVE);          /* nobody took it: dropped */
    assert(run_freed && h_freed)
}
