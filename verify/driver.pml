/*
 * driver.pml -- weft_sync_wait's driver, on the waiting thread's stack,
 * against the last party that still touches it (src/task.c:
 * weft_sync_wait, driver_submit, driver_finish, driver_pop, task_finish's
 * WEFT__WAITER_THREAD branch, enqueue_home, wake, weft__task_park;
 * src/sched/parker_futex.c for the parker).
 *
 * Processes
 *   syncer      the thread in weft_sync_wait(T): sets the driver up, runs
 *               the driver loop (pop under d.lock, run, else park on
 *               d.parker) until `done`, then spins until `wakers` is 0 and
 *               returns: the driver is gone (d_freed).
 *   default     T is lazy: it starts on the syncer's thread (its home is
 *               the driver), registers with an event and parks; waker, a
 *               thread that fires the event, wakes T (wake: IDLE ->
 *               SCHEDULED, enqueue_home -> driver_submit), or finds it
 *               still RUNNING (NOTIFIED: T's park requeues it, through
 *               driver_submit on the syncer's own thread).  T's second run,
 *               on the syncer, ends it: task_finish -> driver_finish.
 *   -DPOOL      T is a pool task: the syncer CASes the waiter slot (or
 *               finds DONE and sets done itself); worker runs T to its
 *               end and calls driver_finish from the pool's thread.
 *
 * Model variable      C
 *   done, wakers      d.done, d.wakers
 *   dlock, dq         d.lock, d.queue_head/tail
 *   permit            d.parker.permit (unpark = 1; park takes it, blocking)
 *   d_freed           weft_sync_wait returned: d's stack frame is gone
 *   waiter            T->waiter: NONE 0, THREAD 1 (d | WEFT__WAITER_THREAD),
 *                     DONE 2
 *   ts                T's lifecycle | NOTIFIED
 *   ev_reg            T is registered with the event (its waker can see it)
 *
 * Memory order: wakers' increments are seq_cst RMWs that come before the
 * store of `done` (release) or the queue append (under d.lock) and the
 * unpark (release exchange); the syncer reads `done` and then `wakers`
 * with acquire.  So an increment happens before the syncer's loop exit
 * (through done's release/acquire, or d.lock and the pop), and the final
 * load of wakers sees it or the later decrement: the orders the argument
 * uses are all happens-before edges on words the model reads, which SC
 * interleavings cover.
 *
 * Assertions: nobody touches d (wakers, done, lock, queue, parker) after
 * weft_sync_wait returned (every access asserts !d_freed); the syncer
 * returns only after T ended; no deadlock (every process ends).
 *
 * Broken twins
 *   BROKEN_NO_WAKERS_WAIT  weft_sync_wait returns as soon as it sees done,
 *                          without waiting for wakers == 0.
 *   BROKEN_WAKERS_LATE     (-DPOOL) driver_finish counts itself in wakers
 *                          only after storing done.  (Without POOL
 *                          driver_finish runs on the syncer's own thread,
 *                          so the twin has nothing to race with there.)
 */

#define NONE 0
#define THREAD 1
#define DONE 2

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
bit ev_reg;
bit t_ended;

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

#ifdef POOL
proctype worker() {
    byte w;
    /* a pool worker runs T to its end */
    finish_T()
}
#else
proctype waker() {
    bit r;
    /* the event fires once T is registered: wake(T) */
    ev_reg == 1;
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
#endif

proctype syncer() {
    byte w;
    bit r, got;
#ifdef POOL
    /* T queued in a pool: take the waiter slot, or T ended already */
    d_step { if :: waiter == NONE -> waiter = THREAD :: else -> done = 1 fi };
#else
    /* lazy: T runs here first, its waiter slot names the driver */
    d_step { waiter = THREAD; ts = LC_RUN };
    /* T's body: registers with the event, then blocks (park_action) */
    ev_reg = 1;
    d_step {
        if
        :: ts & NOTIF -> ts = (ts & ~(3 | NOTIF)) | LC_SCHED; r = 1
        :: else -> ts = (ts & ~3) | LC_IDLE; r = 0
        fi
    };
    if
    :: r -> driver_submit() /* the requeue goes home, to this very driver */
    :: else -> skip
    fi;
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
               /* claim_queued(T) and run it: its body ends */
               d_step { assert(LC(ts) == LC_SCHED); ts = (ts & ~3) | LC_RUN };
               finish_T()
           :: else ->
               atomic { permit == 1 -> DACC; permit = 0 } /* weft__parker_park */
           fi
       fi
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
#else
        ts = LC_IDLE;
        run waker()
#endif
    }
}
