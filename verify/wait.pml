/*
 * wait.pml -- one wait record: a waker against the record's timer against
 * cancellation.
 *   src/sched/wait.h top comment; src/sched/wait.c: setup,
 *     weft__wait_init / weft__wait_init_hook, decide_as (decide),
 *     weft__wait_wake, resume, timer_fired, weft__wait_cancel,
 *     weft__wait_arm (weft__task_timer_add), weft__wait_block,
 *     weft__wait_disarm, weft__wait_leave
 *   src/sync/waitq.h: weft__wq_wait, weft__wq_block (weft__wq_push,
 *     weft__wq_remove), weft__wq_wake_one -- the path of every primitive
 *     (mutex, cond, sem, wait group, channel) and of the event
 *     (src/sync/event.c: wait_until, weft_event_set)
 *   src/sched/timer.c: weft__timers_add, weft__timers_run (fire under the
 *     lock), weft__timers_remove
 *   src/sched/task.c: weft_task_cancel; src/sched/task_state.c: wake
 *     (weft__task_wake), weft__task_park, weft__task_claim_queued;
 *     src/sched/task_run.c: weft__task_block
 *
 * Processes
 *   waiter     a task in a primitive's wait (src/sync/waitq.h
 *              weft__wq_wait, weft__wq_block): under the primitive's lock,
 *              weft__wait_init and the link; unlock; weft__wait_block (arm
 *              the timer if it has a deadline; park while PENDING; remove
 *              the timer; leave); retake the lock, unlink itself if still
 *              listed; return: the record, on its stack, is gone (w_freed).
 *   waker      the primitive's post (weft__wq_wake_one; weft_event_set
 *              calls it for every listed record): under the primitive's
 *              lock, unlink the listed record and weft__wait_wake it.  It
 *              may never come.  (The event's SETTING/SET step after the
 *              unlock, and its waiters' wait for SET, are the event's own
 *              lifetime rule, not the record's: event.c's top comment.)
 *   timers     a worker running the heap: under the timers' lock, take
 *              the due record out and fire it (timer_fired).  Fires only
 *              if the wait has a deadline (chosen by the waiter).
 *   canceller  weft_task_cancel: store the flag, then under the task's
 *              wait_lock weft__wait_cancel its current wait.  May never come.
 *   worker     claims the queued task and resumes it.
 *
 * Model variable      C
 *   outcome           w->outcome (PENDING 0, WOKEN 1, TIMEDOUT 2, CANCELED 3)
 *   listed            w->listed, the primitive's list holds w
 *   armed             w->timer is in the heap (tm->index != SIZE_MAX)
 *   prim_lock, tlock, wl   the primitive's lock, ts->lock, task->wait_lock
 *   cancelled, cur_wait    task->cancelled, task->cur_wait == w
 *   ts                the task's state word: lifecycle | NOTIFIED
 *   q, a_resume       the pool's queue; the task's resumption token
 *   wins              parties whose decide_as CAS won
 *   w_freed           weft__wait_block's caller has returned
 *
 * Each CAS is one step, each locked section is its steps between lock and
 * unlock; task wake / park are one step each (their CAS loops: task.pml).
 *
 * Memory order: every shared access here is under one of the three locks
 * or is a CAS on the outcome (acq_rel) or the task's state word; the
 * cancel flag is read under wait_lock (weft__wait_init_hook: relaxed, the
 * lock orders it).  Lock-protected data and single RMWs need no more than
 * SC interleavings: the lock's acquire/release makes each critical section
 * appear atomic to the others, and a CAS is atomic on its word.  The
 * outcome's loads in weft__wait_block's loop are acquire and see the CAS
 * in coherence order; the model's interleavings give exactly that.
 *
 * Left out: a plain thread's wait (its parker instead of the task's state
 * word), the timer's -ENOMEM path (weft__wait_block then decides TIMEDOUT
 * itself: one more party racing by the same CAS), weft__wait_init_nocancel
 * (a record that no canceller can see), and the value a waker hands over
 * (written under the primitive's lock, read after the waiter retakes it).
 *
 * Assertions
 *   - exactly one party decides (wins <= 1 when a CAS wins; at the end,
 *     wins == 1 unless init refused with -ECANCELED) and only the winner
 *     wakes the task: one resumption per wake, never two at once;
 *   - the waiter returns once, with a decided outcome, and nothing is left
 *     queued for it (a NOTIFIED may be left: see check below);
 *   - no party touches w after the waiter returned (every access asserts
 *     !w_freed);
 *   - the wait ends if a post, a deadline or a cancel comes (it may stay
 *     parked for good only when none of them does).
 *
 * Broken twins
 *   BROKEN_DECIDE_STORE     decide_as loads PENDING, then stores its
 *                           outcome (a plain store instead of the CAS).
 *   BROKEN_INIT_UNLOCKED    weft__wait_init_hook reads `cancelled` before
 *                           taking wait_lock.
 *   BROKEN_REMOVE_UNLOCKED  weft__timers_remove takes the timer out without
 *                           the timers' lock (so without waiting for a
 *                           fire() in progress).
 */

#define PENDING 0
#define WOKEN 1
#define TIMEDOUT 2
#define CANCELED 3

#define LC_IDLE 0
#define LC_SCHED 1
#define LC_RUN 2
#define NOTIF 4
#define LC(s) ((s) & 3)

byte outcome;
bit listed;
bit armed;
bit prim_lock;
bit tlock;
bit wl;
bit cancelled;
bit cur_wait;
byte ts = LC_RUN;
chan q = [2] of { bit };
byte a_resume;
byte wins;
bit w_freed;
bit done;
bit refused;
bit wk_will, cn_will, dl_will;   /* a post / a cancel / a deadline will come */

#define WACC assert(!w_freed)

/* weft__task_wake (wake): IDLE -> queued, RUNNING -> NOTIFIED */
inline wake_task() {
    d_step {
        if
        :: LC(ts) == LC_IDLE -> ts = (ts & ~3) | LC_SCHED; r = 1
        :: LC(ts) == LC_RUN -> ts = ts | NOTIF; r = 0
        :: else -> r = 0
        fi
    };
    if
    :: r -> q!1
    :: else -> skip
    fi;
    r = 0
}

/* decide_as(w, o): CAS PENDING -> o; the winner, and only it, resumes */
inline decide(o) {
#ifdef BROKEN_DECIDE_STORE
    d_step { WACC; won = (outcome == PENDING) };
    if
    :: won -> d_step { WACC; outcome = o; wins++; assert(wins == 1) }
    :: else -> skip
    fi;
#else
    d_step {
        WACC;
        if
        :: outcome == PENDING -> outcome = o; won = 1; wins++; assert(wins == 1)
        :: else -> won = 0
        fi
    };
#endif
    if
    :: won -> wake_task() /* resume(w): weft__task_wake(w->task) */
    :: else -> skip
    fi;
    won = 0
}

proctype waker() {
    bit won, r;
    if
    :: skip /* no post comes */
    :: wk_will = 1;
end_wk: atomic { prim_lock == 0 && listed -> prim_lock = 1 };
        WACC;
        listed = 0; /* the waker unlinks the records it wakes */
        decide(WOKEN);
        prim_lock = 0
    fi
}

proctype timers() {
    bit won, r;
    /* weft__timers_run: the deadline has passed */
end_tm:
    atomic { tlock == 0 && armed -> tlock = 1 };
    WACC;
    armed = 0;                                  /* take_out */
    decide(TIMEDOUT);                           /* tm->fire(tm), under the lock */
    tlock = 0
}

proctype canceller() {
    bit won, r;
    if
    :: skip /* nobody cancels */
    :: cn_will = 1;
        cancelled = 1;                          /* seq_cst store */
        atomic { wl == 0 -> wl = 1 };
        if
        :: cur_wait -> decide(CANCELED)         /* weft__wait_cancel (no hook) */
        :: else -> skip
        fi;
        wl = 0
    fi
}

proctype worker() {
    bit e;
end_w:
    do
    :: q?e ->
        /* weft__task_claim_queued, then run the task: resume it */
        d_step {
            assert(LC(ts) == LC_SCHED); ts = (ts & ~3) | LC_RUN;
            assert(a_resume == 0 && !done); a_resume = 1; e = 0
        }
    od
}

proctype waiter() {
    bit c, deadline, r, p;
    /* weft__wq_wait (src/sync/waitq.h): with the primitive's lock held,
     * weft__wait_init makes the record the task's current wait, unless
     * the task is cancelled */
    atomic { prim_lock == 0 -> prim_lock = 1 };
#ifdef BROKEN_INIT_UNLOCKED
    c = cancelled;
    atomic { wl == 0 -> wl = 1; if :: !c -> cur_wait = 1 :: else -> skip fi };
#else
    atomic { wl == 0 -> wl = 1; c = cancelled; if :: !c -> cur_wait = 1 :: else -> skip fi };
#endif
    wl = 0;
    if
    :: c -> prim_lock = 0; d_step { refused = 1; w_freed = 1; done = 1 }; goto out /* -ECANCELED */
    :: else -> skip
    fi;
    /* weft__wq_block: link w at the tail, drop the lock */
    listed = 1;
    prim_lock = 0;
    /* weft__wait_block */
    if
    :: deadline = 1;
        dl_will = 1;
        atomic { tlock == 0 -> tlock = 1; armed = 1 };   /* arm_timer */
        tlock = 0
    :: deadline = 0
    fi;
    do
    :: d_step { WACC; p = (outcome == PENDING) };
       if
       :: p ->
           /* weft__task_block: park (a wake that came meanwhile left
            * NOTIFIED: the park requeues), then wait to be resumed */
           d_step {
               assert(LC(ts) == LC_RUN);
               if
               :: ts & NOTIF -> ts = (ts & ~(3 | NOTIF)) | LC_SCHED; r = 1
               :: else -> ts = (ts & ~3) | LC_IDLE; r = 0
               fi
           };
           if
           :: r -> q!1
           :: else -> skip
           fi;
           r = 0;
           /* an end state only when nobody will come: see check */
end_parked: atomic { a_resume == 1 -> a_resume = 0 }
       :: else -> break
       fi
    od;
    if
    :: deadline ->
#ifdef BROKEN_REMOVE_UNLOCKED
        armed = 0
#else
        atomic { tlock == 0 -> tlock = 1; armed = 0 };   /* weft__timers_remove */
        tlock = 0                                          /* fire() is over */
#endif
    :: else -> skip
    fi;
    atomic { wl == 0 -> wl = 1; cur_wait = 0 };          /* weft__wait_leave */
    wl = 0;
    /* weft__wq_block: retake the primitive's lock, unlink w if listed */
    atomic { prim_lock == 0 -> prim_lock = 1; listed = 0 };
    prim_lock = 0;
    d_step { assert(outcome != PENDING); w_freed = 1; done = 1 };
out:
    skip
}

init {
    atomic {
        run waiter();
        run waker();
        run timers();
        run canceller();
        run worker()
    }
}

active proctype check() {
    timeout ->
    /* NOTIFIED may be left set: a wake that found the task still
     * RUNNING, when the loop then saw the outcome decided and did not
     * park; the task's next park requeues it once, a stray resume that
     * every park loop absorbs (wait.c's top comment says so; task.h:
     * weft__task_park with NOTIFIED queues the task again and returns
     * NULL) */
    assert(a_resume == 0 && len(q) == 0 && !armed &&
           (done && !listed && (refused || wins == 1) ||
            !done && !wk_will && !cn_will && !dl_will))
}
