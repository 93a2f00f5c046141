/*
 * task.pml -- an await against the awaited task's completion, against a
 * cancel of the awaiter, on the task state word and the waiter slot.
 *   src/sched/await.c: top comment, await_until (weft_await), try_inline,
 *     await_action, take_back, take_back_if_cancelled, end_await, consume;
 *     with -DLAZY start_lazy and lazy_park_action
 *   src/sched/task_run.c: task_finish (and at_home), finish_action,
 *     weft__task_block (park_action)
 *   src/sched/task_state.c: weft__task_claim_idle, weft__task_claim_queued,
 *     weft__task_make_scheduled, wake (weft__task_wake), weft__task_park,
 *     weft__task_unref
 *   src/sched/task.c: weft_task_cancel
 *   src/sched/wait.c: weft__wait_init_hook, weft__wait_cancel,
 *     weft__wait_resume, weft__wait_leave (no deadline: arm_if_timed and
 *     weft__wait_disarm do nothing)
 *   src/sched/task.h: the state word (lifecycle, NOTIFIED, STARTED, refs)
 *
 * Processes
 *   awaiter     task A running weft_await(T) (and, being a task, its own
 *               post-switch actions on the thread it runs on; A's home is
 *               the pool).  A's code after a suspension goes on only when
 *               a resumer hands it the one resumption token (a_resume).
 *   worker x2   pool workers: pop an entry; claim_queued; run T's body and
 *               task_finish, or resume A.
 *   canceller   another thread: weft_task_cancel(A) (A is never COMPLETE
 *               here, so its first check never returns early).
 *   -DLAZY: lazy_runner  the thread A ran on, now running T (start_lazy
 *               switches to T, runs lazy_park_action there, then T's body).
 *
 * T: spawned (SCHEDULED, one queue entry, references: the entry, its life,
 * A's handle), or with -DLAZY made by weft_task_create (IDLE, never queued,
 * references: life and handle).  T's body either ends, or never ends (a
 * task that blocks for good): a cancelled await must end all the same.
 *
 * Model variable      C
 *   ts                T->state: lifecycle (IDLE 0, SCHEDULED 1, RUNNING 2,
 *                     COMPLETE 3) | NOTIFIED 4 | STARTED 8 | refs * 16
 *   as                A->state (lifecycle | NOTIFIED; A's references are
 *                     not this model's subject)
 *   waiter            T->waiter: NONE 0, A 1, DONE 2 (the end's mark,
 *                     weft__waiter_done: WEFT__WAITER_ENDED and the id)
 *   result            T->result
 *   t_freed           record_free(T) has run
 *   cancelled, wl     A->cancelled, A->wait_lock
 *   cur_wait          A->cur_wait == &w (w: A's wait record, on A's stack)
 *   outcome, w_freed  w.outcome; w is gone (weft_await returned)
 *   q                 the pool's queues (entries ET = T, EA = A); whether
 *                     T's entry is the newest of A's own deque (try_inline's
 *                     pop) is left open: either, while ET is queued
 *
 * Atomicity: each CAS loop on a state word (wake, park, claim_idle,
 * claim_queued, make_scheduled, finish_action's weft__task_set) is one
 * step: it takes effect at its successful CAS, whose decision rests on the
 * value that CAS read.  An exchange, a fetch_sub, a store or a load is one
 * step; a locked section on wait_lock is its steps between a lock and an
 * unlock step.
 *
 * Memory order.  The orderings that the argument rests on are seq_cst:
 * cancel's store of the flag, the awaiter's CAS into the slot and its load
 * of the flag (take_back_if_cancelled), take_back's CAS; the rest pairs
 * release with acquire on the same word (result written before the
 * exchange that publishes DONE, read after the acquire load that sees
 * DONE; the park's release and the claims' acquire), and the reference
 * count is acq_rel.  Release/acquire pairs on one word add no outcome
 * that SC interleavings lack for these properties (every assertion reads
 * the word the pair is on, or data published through it), and the seq_cst
 * accesses form the single total order that the interleavings are.  The
 * one reordering the seq_cst forbids is modelled by the twin
 * BROKEN_CANCEL_REORDER: cancel's flag store passing its CAS.  Two
 * relaxed accesses: await_until's first look at A's flag (a stale 0 only
 * leads to weft__wait_init_hook, which reads it again under wait_lock; the
 * flag never goes back to 0), and try_inline's plain store of the popped
 * T's state (nobody else can reach T then: the entry was the only way).
 *
 * Assertions
 *   - A is resumed only while it waits, and by one party at a time (never
 *     run twice); when nothing can move, A has finished its await and no
 *     entry, resumption or NOTIFIED for it is left over;
 *   - A consumes T only once T ended, and then sees T's result;
 *   - exactly one party decides a cancelled await: the slot is CASed back
 *     once, the completer's exchange then finds nobody;
 *   - T's record is freed exactly once, never touched after (every access
 *     asserts !t_freed), and freed once T ended and all references went;
 *   - w is never touched after weft_await returned.
 *
 * Broken twins
 *   BROKEN_PARK_IGNORES_NOTIFIED  park goes IDLE even with NOTIFIED set.
 *   BROKEN_NO_TAKEBACK   await_action skips take_back_if_cancelled (the
 *                        re-check of the flag after entering the slot).
 *   BROKEN_CANCEL_REORDER  cancel's flag store becomes visible only after
 *                        its slot CAS (what seq_cst rules out).
 *   BROKEN_INLINE_REF    try_inline's claim by CAS (T not the newest of
 *                        our own deque) also drops the queue entry's
 *                        reference, though the entry stays queued.
 *   BROKEN_LAZY_NO_TAKEBACK (-DLAZY)  lazy_park_action skips the re-check.
 */

#define LC_IDLE 0
#define LC_SCHED 1
#define LC_RUN 2
#define LC_DONE 3
#define NOTIF 4
#define STARTED 8
#define REF 16
#define LC(s) ((s) & 3)
#define REFS(s) ((s) / REF)

#define W_NONE 0
#define W_A 1
#define W_DONE 2

#define PENDING 0
#define WOKEN 1
#define CANCELED 3

#define ET 1
#define EA 2

byte ts;
byte as = LC_RUN;
byte waiter;
byte result;
bit t_freed;
bit t_ended;
bit cancelled;
bit wl;
bit cur_wait;
byte outcome;
bit w_freed;
chan q = [3] of { byte };
byte a_resume;
bit a_done;
byte nfree;

#define TACC assert(!t_freed)

/* weft__task_unref(T, 1) */
inline unref1() {
    atomic {
        TACC; assert(REFS(ts) >= 1);
        ts = ts - REF;
        if
        :: REFS(ts) == 0 -> t_freed = 1; nfree++
        :: else -> skip
        fi
    }
}

/* finish_action (and try_inline's end): COMPLETE, the life reference goes */
inline complete_T() {
    d_step {
        TACC; assert(REFS(ts) >= 1);
        ts = ((ts & ~(3 | NOTIF)) | LC_DONE) - REF;
        t_ended = 1;
        if
        :: REFS(ts) == 0 -> t_freed = 1; nfree++
        :: else -> skip
        fi
    }
}

/* hand A its resumption: only while it waits for one, one at a time */
inline resume_A() {
    d_step { assert(a_resume == 0 && !a_done && LC(as) == LC_RUN); a_resume = 1 }
}

/* wake(A): one CAS loop, then queue it if it was IDLE */
inline wake_A() {
    d_step {
        if
        :: LC(as) == LC_IDLE -> as = (as & ~3) | LC_SCHED; r = 1
        :: LC(as) == LC_RUN -> as = as | NOTIF; r = 0
        :: else -> r = 0 /* already queued */
        fi
    };
    if
    :: r -> q!EA
    :: else -> skip
    fi;
    r = 0
}

/* weft__task_park(A), in a post-switch action of A */
inline park_A() {
    d_step {
        assert(LC(as) == LC_RUN);
        if
#ifndef BROKEN_PARK_IGNORES_NOTIFIED
        :: as & NOTIF ->
            /* make_scheduled: a requeue, NOTIFIED answered */
            as = (as & ~(3 | NOTIF)) | LC_SCHED; r = 1
#endif
        :: else -> as = (as & ~3) | LC_IDLE; r = 0
        fi
    };
    if
    :: r -> q!EA
    :: else -> skip
    fi;
    r = 0
}

/* T's body and task_finish, on the thread that runs T */
inline run_T() {
    if
    :: true ->
        d_step { TACC; result = 1 };
        d_step { TACC; w = waiter; waiter = W_DONE };   /* exchange, acq_rel */
        if
        :: w == W_A ->
            /* at_home(A) (A's home is this thread's pool; either way
             * here) && weft__task_claim_idle(A) */
            if
            :: d_step { if :: LC(as) == LC_IDLE -> as = (as & ~3) | LC_RUN; ok = 1 :: else -> ok = 0 fi }
            :: ok = 0 /* not at home: wake it instead */
            fi;
            if
            :: ok ->
                /* continuation chaining: switch to A, finish_action on A's
                 * stack before A's code goes on */
                complete_T();
                resume_A()
            :: else ->
                wake_A();
                complete_T()
            fi
        :: else ->
            complete_T()
        fi
    :: true ->
end_hang: false /* T's body never returns */
    fi
}

proctype worker() {
    byte e, w;
    bit ok, r, stale;
end_w:
    do
    :: q?e ->
        if
        :: e == ET ->
            /* weft__task_claim_queued(T) */
            d_step {
                TACC;
                if
                :: LC(ts) != LC_SCHED -> stale = 1
                :: else -> stale = 0; ts = ((ts & ~3) | LC_RUN | STARTED) - REF
                fi
            };
            if
            :: stale -> unref1() /* a stale entry: T ran inline */
            :: else -> run_T()
            fi
        :: e == EA ->
            /* weft__task_claim_queued(A) */
            d_step { assert(LC(as) == LC_SCHED); as = (as & ~3) | LC_RUN };
            resume_A()
        fi;
        d_step { e = 0; w = 0; ok = 0; r = 0; stale = 0 }
    od
}

#ifdef LAZY
/* start_lazy's switch lands on T's fresh stack: lazy_park_action, then
 * T's body (task_entry) */
proctype lazy_runner() {
    byte w;
    bit ok, r, tb;
    park_A();
    /* take_back_if_cancelled(&a) (on the copy of the arguments) */
#ifndef BROKEN_LAZY_NO_TAKEBACK
    if
    :: cancelled ->
        d_step { TACC; if :: waiter == W_A -> waiter = W_NONE; tb = 1 :: else -> tb = 0 fi };
        if
        :: tb -> d_step { assert(!w_freed); outcome = CANCELED }; wake_A()
        :: else -> skip
        fi
    :: else -> skip
    fi;
#endif
    run_T()
}
#endif

proctype awaiter() {
    bit ok, r, tb, c, ended;
    /* weft_await(T): await_until */
    d_step { TACC; ended = (waiter == W_DONE) };
    if
    :: ended -> goto consume
    :: else -> skip
    fi;
    /* a cancelled task starts no wait, and runs no body inline */
    if
    :: cancelled -> goto detach /* -ECANCELED */
    :: else -> skip
    fi;
#ifndef LAZY
    /* try_inline: take T while it sits, never started, in a queue */
    d_step {
        TACC;
        if
        :: LC(ts) == LC_SCHED && !(ts & STARTED) && q??[ET] ->
            /* T's entry is the newest of our own deque: the pop takes the
             * entry and its reference; a plain store of the state */
            q??ET;
            ts = ((ts & ~3) | LC_RUN | STARTED) - REF;
            ok = 1
        :: LC(ts) == LC_SCHED && !(ts & STARTED) ->
            /* elsewhere (another deque, the global queue): claim by CAS */
#ifdef BROKEN_INLINE_REF
            ts = ((ts & ~3) | LC_RUN | STARTED) - REF;
#else
            ts = (ts & ~3) | LC_RUN | STARTED; /* the entry keeps its reference */
#endif
            ok = 1
        :: else -> ok = 0
        fi
    };
    if
    :: ok ->
        d_step { TACC; result = 1 };            /* T's body, inline */
        d_step { TACC; waiter = W_DONE };
        complete_T();
        goto consume
    :: else -> skip
    fi;
#endif
    /* weft__wait_init_hook(&w, 0, end_await, T) */
    atomic { wl == 0 -> wl = 1; c = cancelled; if :: !c -> cur_wait = 1 :: else -> skip fi };
    wl = 0;
    if
    :: c -> goto detach
    :: else -> skip
    fi;
#ifdef LAZY
    /* start_lazy: the slot is ours before T can run (seq_cst store), T
     * RUNNING, then the switch to T: the rest is lazy_runner's */
    d_step { TACC; waiter = W_A };
    d_step { TACC; ts = (ts & ~3) | LC_RUN | STARTED };
    run lazy_runner();
    goto suspended;
#else
    /* weft__task_suspend(await_action): A's context is saved; the action
     * runs on this thread's scheduler stack */
    d_step { TACC; if :: waiter == W_NONE -> waiter = W_A; ok = 1 :: else -> ok = 0 fi };
    if
    :: ok ->
        tb = 0;
#ifndef BROKEN_NO_TAKEBACK
        /* take_back_if_cancelled */
        if
        :: cancelled ->
            d_step { TACC; if :: waiter == W_A -> waiter = W_NONE; tb = 1 :: else -> tb = 0 fi };
            if
            :: tb -> outcome = CANCELED
            :: else -> skip
            fi
        :: else -> skip
        fi;
#endif
        if
        :: tb ->
            as = as & ~NOTIF; /* continue at once */
            goto resumed
        :: else ->
            park_A();
            goto suspended
        fi
    :: else ->
        /* T ended while we switched out: continue at once */
        as = as & ~NOTIF;
        goto resumed
    fi;
#endif
suspended:
    atomic { a_resume == 1 -> a_resume = 0; assert(LC(as) == LC_RUN) };
resumed:
    /* resumed for another reason than T's end?  wait on */
    do
    :: atomic { TACC; ended = (waiter == W_DONE) };
       if
       :: !ended && outcome == PENDING ->
           /* weft__task_block: suspend with park_action */
           park_A();
           d_step { a_resume == 1 -> a_resume = 0; assert(LC(as) == LC_RUN) }
       :: else -> break
       fi
    od;
    /* weft__wait_leave */
    atomic { wl == 0 -> wl = 1; cur_wait = 0 };
    wl = 0;
    d_step { TACC; ended = (waiter == W_DONE) };
    if
    :: !ended -> goto detach /* -ECANCELED */
    :: else -> skip
    fi;
consume:
    atomic { TACC; assert(waiter == W_DONE && result == 1) };
    unref1();
    goto out;
detach:
    /* -ECANCELED: T not consumed; the caller gives the handle up
     * (weft_task_detach) */
    unref1();
out:
    atomic { w_freed = 1; a_done = 1 }
}

proctype canceller() {
    bit ok, r;
    /* weft_task_cancel(A) */
#ifndef BROKEN_CANCEL_REORDER
    cancelled = 1;
#endif
    atomic { wl == 0 -> wl = 1 };
    if
    :: cur_wait ->
        /* weft__wait_cancel -> end_await(w, CANCELED): take_back */
        d_step {
            assert(!w_freed); TACC;
            if :: waiter == W_A -> waiter = W_NONE; ok = 1 :: else -> ok = 0 fi
        };
        if
        :: ok ->
            d_step { assert(!w_freed); outcome = CANCELED };
            wake_A() /* weft__wait_resume */
        :: else -> skip
        fi
    :: else -> skip
    fi;
#ifdef BROKEN_CANCEL_REORDER
    cancelled = 1; /* the flag store passed the CAS; the unlock orders it */
#endif
    wl = 0
}

init {
    atomic {
#ifdef LAZY
        ts = LC_IDLE | 2 * REF;
#else
        ts = LC_SCHED | 3 * REF;
        q!ET;
#endif
        run worker();
        run worker();
        run awaiter();
        run canceller()
    }
}

active proctype check() {
    timeout ->
    assert(a_done && a_resume == 0 && len(q) == 0 && !(as & NOTIF) &&
           LC(as) == LC_RUN && nfree <= 1 && (t_freed || !t_ended))
}
