/*
 * driver.pml -- weft_sync_wait's driver, on the waiting thread's stack,
 * against the last party that still touches it.
 *   src/sched/driver.c: top comment, weft_sync_wait, weft__driver_submit,
 *     weft__driver_finish, driver_pop
 *   src/sched/task_run.c: task_finish (its WEFT__WAITER_THREAD branch, and
 *     at_home), finish_action, weft__task_run, weft__task_block
 *   src/sched/task_state.c: wake (weft__task_wake), enqueue_home,
 *     weft__task_park, weft__task_claim_queued
 *   src/sched/await.c: await_until, await_action (default model)
 *   src/sync/event.c, src/sync/waitq.h, src/sched/wait.c: wait_until,
 *     weft__wq_block, weft__wait_block, weft_event_set, weft__wq_wake_one,
 *     weft__wait_wake (-DEVENT)
 *   src/sched/parker_futex.c: the parker
 *
 * Processes
 *   syncer      the thread in weft_sync_wait(T): sets the driver up, runs
 *               the driver loop (pop under d.lock, claim and run, else park
 *               on d.parker) until `done`, then spins until `wakers` is 0
 *               and returns: the driver is gone (d_freed).
 *   default     T is lazy: it starts on the syncer's thread (its home is
 *               the driver, no pool), and awaits a pool task U: its
 *               await_action CASes U's waiter slot (or finds DONE and goes
 *               on) and parks.  completer, the pool worker that runs U to
 *               its end: task_finish's exchange finds T, at_home(T) fails
 *               (T belongs to no pool), so it wakes T (IDLE -> SCHEDULED,
 *               enqueue_home -> driver_submit), or finds it still RUNNING
 *               (NOTIFIED: T's park requeues it, through driver_submit on
 *               the syncer's own thread).  T's second run, on the syncer,
 *               ends it: task_finish -> driver_finish.  The completer holds
 *               nothing that T waits for: `wakers` alone keeps d alive.
 *   -DEVENT     T waits on an event instead (a wait record: wait_until
 *               links it under the event's lock, weft__wait_block parks
 *               while the outcome is PENDING, then T retakes the lock and
 *               waits for SET); setter, a thread in weft_event_set: under
 *               the lock, unlink, decide WOKEN, wake T; unlock; SET.
 *   -DPOOL      T is a pool task: the syncer CASes the waiter slot (or
 *               finds DONE and sets done itself); worker runs T to its end
 *               and calls driver_finish from the pool's thread.
 *
 * Model variable      C
 *   done, wakers      d.done, d.wakers
 *   dlock, dq         d.lock, d.queue_head/tail
 *   permit            d.parker.permit (unpark = 1; park takes it, blocking)
 *   d_freed           weft_sync_wait returned: d's stack frame is gone
 *   waiter            T->waiter: NONE 0, THREAD 1 (d | WEFT__WAITER_THREAD),
 *                     DONE 2
 *   ts                T's lifecycle | NOTIFIED
 *   uwaiter           (default) U->waiter: NONE 0, T 1, DONE 2
 *   elock, listed, outcome, ev_set   (-DEVENT) the event's lock, T's
 *                     record on its list, the record's outcome, state SET
 *
 * Memory order: wakers' increments are seq_cst RMWs that come before the
 * store of `done` (release) or the queue append (under d.lock) and the
 * unpark (release exchange); the syncer reads `done` and then `wakers`
 * with acquire.  So an increment happens before the syncer's loop exit
 * (through done's release/acquire, or d.lock and the pop), and the final
 * load of wakers sees it or the later decrement: the orders the argument
 * uses are all happens-before edges on words the model reads, which SC
 * interleavings cover.  The slot CAS and exchange, and the event's lock
 * and outcome CAS, are single RMWs or locked sections (task.pml, wait.pml).
 *
 * Assertions: nobody touches d (wakers, done, lock, queue, parker) after
 * weft_sync_wait returned (every access asserts !d_freed); the syncer
 * returns only after T ended; no deadlock (every process ends).
 *
 * Broken twins
 *   BROKEN_NO_WAKERS_WAIT  weft_sync_wait returns as soon as it sees done,
 *                          without waiting for wakers == 0.  (With -DEVENT
 *                          it passes: T cannot end before the setter drops
 *                          the event's lock, after its driver_submit; so
 *                          no twin line there.)
 *   BROKEN_WAKERS_LATE     (-DPOOL) driver_finish counts itself in wakers
 *                          only after storing done.  (Without POOL
 *                          driver_finish runs on the syncer's own thread,
 *                          so the twin has nothing to race with there.)
 */

#define NONE 0
#define THREAD 1
#define DONE 2
#define TASK_T 1

#define LC_IDLE 0
#define LC_SCHED 1
#define LC_RUN 2
#define LC_DONE 3
#define NOTIF 4
#define LC(s) ((s) & 3)

bit done;
byte wakers;
bit dlock;
chan dq = [1] of { bit };
bit permit;
bit d_freed;
byte waiter;
byte ts;
bit t_ended;
#if !defined(POOL) && !defined(EVENT)
byte uwaiter;
#endif
#ifdef EVENT
bit elock;
bit listed;
bit outcome;
bit ev_set;
#endif

#define DACC assert(!d_freed)

/* driver_submit(d, T): wakers keeps d alive while we touch it */
inline driver_submit() {
    d_step { DACC; wakers++ };
    atomic { dlock == 0 -> DACC; dlock = 1; dq!1 };
    dlock = 0;
    d_step { DACC; permit = 1 };               /* weft__parker_unpark */
    d_step { DACC; wakers-- }                   /* the last touch */
}

/* driver_finish(d), from task_finish */
inline driver_finish() {
#ifndef BROKEN_WAKERS_LATE
    d_step { DACC; wakers++ };
#endif
    d_step { DACC; done = 1 };
#ifdef BROKEN_WAKERS_LATE
    d_step { DACC; wakers++ };
#endif
    d_step { DACC; permit = 1 };
    d_step { DACC; wakers-- }
}

/* T's end: task_finish's exchange; a thread waiter gets driver_finish */
inline finish_T() {
    d_step { w = waiter; waiter = DONE; t_ended = 1 };
    if
    :: w == THREAD -> driver_finish()
    :: else -> skip
    fi;
    ts = (ts & ~(3 | NOTIF)) | LC_DONE           /* finish_action */
}

/* wake(T): IDLE -> SCHEDULED and queue it home (the driver); RUNNING ->
 * NOTIFIED */
inline wake_T() {
    d_step {
        if
        :: LC(ts) == LC_IDLE -> ts = (ts & ~3) | LC_SCHED; r = 1
        :: LC(ts) == LC_RUN -> ts = ts | NOTIF; r = 0
        :: else -> r = 0
        fi
    };
    if
    :: r -> driver_submit() /* enqueue_home: T belongs to the driver */
    :: else -> skip
    fi
}

/* weft__task_park(T) in T's post-switch action, on the syncer's thread */
inline park_T() {
    d_step {
        if
        :: ts & NOTIF -> ts = (ts & ~(3 | NOTIF)) | LC_SCHED; r = 1
        :: else -> ts = (ts & ~3) | LC_IDLE; r = 0
        fi
    };
    if
    :: r -> driver_submit() /* the requeue goes home, to this very driver */
    :: else -> skip
    fi
}

#ifdef EVENT
/* T, its wait over: weft__wq_block retakes the event's lock and unlinks
 * the record if still listed; wait_until unlocks and, the event touched,
 * waits for the setter's SET (await_set) */
inline event_after() {
    atomic { elock == 0 -> elock = 1; listed = 0 };
    elock = 0;
    ev_set == 1
}
#endif

#ifdef POOL
proctype worker() {
    byte w;
    /* a pool worker runs T to its end */
    finish_T()
}
#elif defined(EVENT)
proctype setter() {
    bit r;
    /* weft_event_set, once T's record is listed (a set that comes before
     * the link: T finds SET and goes on, and nothing wakes it) */
    atomic { elock == 0 && listed -> elock = 1 };
    listed = 0;                                  /* weft__wq_remove */
    outcome = 1;                                 /* decide_as WOKEN (the only party) */
    wake_T();                                    /* resume: weft__task_wake */
    elock = 0;
    ev_set = 1                                   /* state = SET (release) */
}
#else
proctype completer() {
    byte w;
    bit r;
    /* U's task_finish, on a pool worker */
    d_step { w = uwaiter; uwaiter = DONE };
    if
    :: w == TASK_T -> wake_T() /* at_home(T) is false: T has no pool */
    :: else -> skip
    fi
}
#endif

proctype syncer() {
    byte w;
    bit r, got, p;
#ifdef POOL
    /* T queued in a pool: take the waiter slot, or T ended already */
    d_step { if :: waiter == NONE -> waiter = THREAD :: else -> done = 1 fi };
#else
    /* lazy: T runs here first (weft__task_run), its waiter slot names the
     * driver */
    d_step { waiter = THREAD; ts = LC_RUN };
#ifdef EVENT
    /* T's body: wait_until: link the record under the event's lock */
    atomic { elock == 0 -> elock = 1; listed = 1 };
    elock = 0;
    /* weft__wait_block: park while PENDING */
    if
    :: outcome == 0 -> park_T(); goto t_parked
    :: else -> skip
    fi;
    /* decided already (the wake left NOTIFIED, which finish_action
     * clears): T goes on at once */
    event_after();
    goto t_body_end;
#else
    /* T's body: weft_await(U) */
    d_step { p = (uwaiter == DONE) };
    if
    :: p -> goto t_body_end              /* U ended already: consume */
    :: else -> skip
    fi;
    /* weft__task_suspend(await_action): CAS U's slot, park */
    d_step { if :: uwaiter == NONE -> uwaiter = TASK_T; p = 1 :: else -> p = 0 fi };
    if
    :: p -> park_T(); goto t_parked
    :: else ->
        ts = ts & ~NOTIF;                /* U ended meanwhile: go on */
        goto t_body_end
    fi;
#endif
t_body_end:
    /* the rest of T's first run: its body returns */
    finish_T();
t_parked:
    skip;
#endif
    /* the driver loop */
    do
    :: d_step { DACC; r = done };
       if
       :: r -> break
       :: else ->
           /* driver_pop */
           atomic { dlock == 0 -> DACC; dlock = 1; got = 0; if :: len(dq) > 0 -> dq?_; got = 1 :: else -> skip fi };
           dlock = 0;
           if
           :: got ->
               /* claim_queued(T) and run it: its wait is over (or a
                * stray resume: it parks again), its body ends */
               d_step { assert(LC(ts) == LC_SCHED); ts = (ts & ~3) | LC_RUN };
#ifdef EVENT
               if
               :: outcome == 0 -> park_T(); goto next
               :: else -> skip
               fi;
               event_after();
#elif !defined(POOL)
               /* await_until: the loop on U's slot */
               if
               :: uwaiter != DONE -> park_T(); goto next
               :: else -> skip
               fi;
#endif
               finish_T()
           :: else ->
               atomic { permit == 1 -> DACC; permit = 0 } /* weft__parker_park */
           fi
       fi;
next:
       skip
    od;
#ifndef BROKEN_NO_WAKERS_WAIT
    /* the last waker's final touch comes before we return */
    wakers == 0;
#endif
    atomic { assert(t_ended); d_freed = 1 }
}

init {
    atomic {
        run syncer();
#ifdef POOL
        ts = LC_SCHED;
        run worker()
#elif defined(EVENT)
        ts = LC_IDLE;
        run setter()
#else
        ts = LC_IDLE;
        run completer()
#endif
    }
}
