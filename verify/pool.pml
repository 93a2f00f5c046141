/*
 * pool.pml -- no lost wakeup between submitters and searching / parking
 * workers, with the parker's kept permit and, built with -DIO, the
 * netpoller's hand-off and eventfd path; built with -DSPARE, a spare
 * that covers and is recalled; built with -DMONITOR, the monitor's deep
 * sleep.
 *   src/sched/pool.c: top comment ("No lost wakeup"), inject, inject_take,
 *     wakep, weft__pool_kick, wake_if_needed, submit_outside,
 *     weft__pool_submit (push_local), weft__pool_submit_fifo, pop_local,
 *     take_global, steal_work (steal_from), any_work, found_work,
 *     leave_idle_list, park_worker, find_work, worker_main
 *   src/sched/worker.h: the worker and pool records
 *   src/sched/parker.h, src/sched/parker_futex.c: the parker's permit
 *   src/sched/poller.h: struct weft__poller_ops, the pool's only way to
 *     the netpoller (take, block, finish, wake, unattended, poll_now)
 *   src/io/netpoll.c: top comment (steps 1-4), np_take (try_take, wanted),
 *     give_up, np_block, np_finish, dispatch, np_wake, np_unattended,
 *     np_poll_now
 *   src/io/fd.c: weft__fd_report, weft__fd_wake, unlink_wait (the poller's
 *     side of an owned fd)
 *   src/sched/wait.c weft__wait_wake_fifo; src/sched/task_state.c
 *     weft__task_wake_fifo, enqueue_home: the woken reader's way back to
 *     weft__pool_submit_fifo
 *   -DSPARE, -DMONITOR: src/sched/pool.c "Spares": spare_leave,
 *     weft__pool_spare_recall, weft__pool_monitor_may_sleep, and in
 *     park_worker the retire check and the monitor's wake; find_work's
 *     retire check at its top; src/sched/monitor.c monitor_main (the
 *     deep sleep) and look (the recall)
 *
 * Processes
 *   submitter   a thread outside the pool: submit_outside() (inject();
 *               wake_if_needed()) for task 1, then for task 3 (NTASK 3).
 *   worker(0/1) worker_main() -> find_work() -> park_worker(), and
 *               weft__task_run() of what it found, inline.
 *   drain       the store buffer of each worker's ring push (below).
 *   check       fires only when nothing else can move (timeout).
 *
 * Tasks (bounded):
 *   base        task 1 is queued from outside; its body spawns task 2 from
 *               the worker (weft_spawn -> weft__pool_submit -> push_local;
 *               wake_if_needed); task 3 is queued from outside; all plain.
 *   -DIO        task 2 is a reader already parked on an fd (its wait
 *               linked: nwaiters = 1) when the run starts; when woken it
 *               runs again and finds the data.  Tasks 1 and 3 are queued
 *               from outside (-DNTASK=2: task 1 only).  Task WRITER
 *               (default 3) makes the fd readable (the kernel queues its
 *               edge event); task HOG (default 1) then runs on without
 *               ever yielding until the reader is done, so the other
 *               worker alone must serve the netpoller and the queues (a
 *               CPU-bound task, taken to the limit).  run.sh checks
 *               HOG=1 WRITER=1, HOG=1 WRITER=3, HOG=3 WRITER=3, and
 *               NTASK=2 HOG=1 WRITER=1 (one task that writes and hogs).
 *
 *   -DSPARE     worker 1 is a spare covering a stuck worker (which is
 *               not modelled: it holds nothing this model needs) from the
 *               start, one of the pool's workers in every respect: nactive
 *               is 2; the monitor process recalls it once, at any moment
 *               (weft__pool_spare_recall: retire = 1, then under idle_lock
 *               take it off the idle list if it is there, count it as
 *               searching, unpark it).  The spare checks retire at the top
 *               of find_work (our `loop`) and in park_worker after its
 *               last look, and leaves (spare_leave: its ring's task to the
 *               global queue, nactive -= 1 under idle_lock, found_work,
 *               wake_if_needed if it handed a task over); then it is no
 *               worker any more (spare_wait is not modelled).
 *   -DMONITOR   the monitor process also tries MSLEEPS (default 2) deep
 *               sleeps, each at any moment: under idle_lock, if nidle ==
 *               nactive, monitor_asleep = 1; then it parks on its own
 *               parker until a worker leaving park_worker (which reads and
 *               clears monitor_asleep under idle_lock, in the lock it
 *               leaves the idle list under) unparks it.
 *   run.sh checks -DSPARE -DMONITOR -DNTASK=2 -DMSLEEPS=1 (task 1 from
 *   outside spawns task 2 onto the ring of whichever worker runs it: the
 *   spare's, which its leave hands over, or worker 0's).
 *
 * Model variable      C
 *   gq                 p->inject_head/tail (cds_wfcq; inject(), take_global())
 *   inject_lock        p->inject_lock (inject_take's trylock)
 *   lq[w]              w->q as thieves see it (weft__runq_*; one slot is
 *                      enough: only task 2 is ever pushed locally)
 *   pend[w]            w's push to its own ring that other threads do not
 *                      see yet (see "memory order")
 *   nspinning, nidle   p->nspinning, p->nidle
 *   idle_lock, il[],   p->idle_lock, p->idle_list (il[0] is the head),
 *   iln                its length
 *   idle[w], in_poll[w]  w->idle, w->in_poll (written under idle_lock;
 *                      w->woken, bookkeeping that nothing reads, is left out)
 *   spinning (local)   w->spinning
 *   permit[w]          w->parker.permit (PERMIT = 1; EMPTY/SLEEPING = 0:
 *                      the futex wait is the blocking guard on permit)
 *   -DIO: polling, missed, nwaiters  np->polling, np->missed, np->nwaiters
 *         evcount        the eventfd's counter (np_wake writes 1, dispatch's
 *                        read takes all)
 *         ev_pending     the fd's edge-triggered event, queued in epoll
 *         io_data, io_seq, rec_lock, linked   the fd's data, rec->seq,
 *                        rec->lock, the reader's wait record on rec->waiters
 *         WRITER=0       (an option) a peer outside the pool writes the fd
 *   -DSPARE: retire    the spare's w->retire (its w->active is nactive's
 *                      share: thieves find its ring empty once it left)
 *            recalled, spare_left  ghosts: the recall was made, the spare
 *                      has left
 *   -DSPARE or -DMONITOR: nactive  p->nactive (under idle_lock)
 *   -DMONITOR: monitor_asleep  p->monitor_asleep (under idle_lock)
 *            mon_permit  the monitor's parker (m->parker)
 *            mon_parked, mon_owed, nrun  ghosts: the monitor is in its
 *                      park; a worker has taken monitor_asleep and its
 *                      unpark comes next; active workers outside
 *                      park_worker (from its unpark of the monitor, or
 *                      its unlock, to its join of the idle list)
 *
 * Steps (each Promela statement is one atomic access of the C code, or a
 * run of accesses to data that only the holder of a lock touches):
 *   wake_if_needed   load nspinning; load nidle; wakep()
 *   wakep            CAS nspinning 0->1; lock idle_lock, unlink a worker
 *                    (not the poller's if another sleeps) and nidle -= 1,
 *                    or, with nobody idle, nspinning -= 1; unlock; unpark,
 *                    or ops->wake (np_wake: evcount += 1) if it was in_poll
 *   find_work        pop_local; take_global; (-DIO) poll_now; the spinning
 *                    decision (either way, or with -DSPIN_RULE the rule:
 *                    see "memory order"); steal_work (one round: steal
 *                    from the other's ring, then take_global: more rounds,
 *                    and search_spin's timed looks before parking, only
 *                    add failed attempts, which change nothing);
 *                    park_worker
 *   found_work       if spinning: nspinning -= 1; the last one looks at the
 *                    queues (and -DIO the poller: unattended) one load at
 *                    a time and calls wake_if_needed if any has work
 *                    (-DFOUND_WAKE_ALWAYS: Go's unconditional wake, the
 *                    code before)
 *   park_worker      lock; join idle list; (-DIO) in_poll = ops->take;
 *                    nidle += 1; unlock; if spinning: nspinning -= 1; the
 *                    fence; sleep = !any_work (the global queue, (-DIO)
 *                    ops->unattended, each ring); park or ops->block; lock;
 *                    polled = in_poll; leave the list if still on it
 *                    (nidle -= 1, and spinning again if it did not sleep),
 *                    else it was woken as a searcher; unlock; (-DIO)
 *                    ops->finish
 *   parker           weft__parker_park = take the permit, blocking while
 *                    there is none; weft__parker_unpark = make it 1.
 *   -DIO np_take     load nwaiters (wanted); CAS polling 0->1; else
 *                    missed = 1 and CAS once more
 *        give_up     polling = 0; load missed; exchange missed -> 0;
 *                    weft__pool_kick = wakep
 *        np_unattended  load nwaiters; load polling: waits parked and the
 *                    poller free
 *        np_poll_now load nwaiters; load polling; CAS polling 0->1;
 *                    epoll_wait(0); dispatch; give_up
 *        np_block    epoll_wait until the eventfd or the fd is ready
 *        np_finish   dispatch what np_block gathered; give_up
 *        dispatch    read the eventfd (evcount = 0); for the fd event
 *                    (weft__fd_report): lock rec; seq += 1; unlink the
 *                    waiter (nwaiters -= 1), decide it WOKEN,
 *                    weft__task_wake_fifo = weft__pool_submit_fifo =
 *                    inject + wake_if_needed; unlock
 *        reader      parked with its wait linked when the run starts;
 *                    when woken it runs once more and reads the data.
 *                    (The waiter's side of netpoll.c, "no readiness is
 *                    lost": the seq snapshot and re-check under rec->lock
 *                    in weft__fd_park, is not this model's subject.)
 *
 * What is left out, and why it does not matter here: timers (no deadline:
 * park(0), and any_work's timer look finds none), shutdown and drain
 * (check_stop, the stop flag), the LIFO slot and the yielded FIFO (run by
 * their own worker, the slot also stolen in a search's last round: like
 * the ring push, never announced by a wake), the fairness tick (an extra
 * look at the global queue and the poller), fd.c's check of the
 * registrations (check_if_due).  The ring's own protocol (Chase-Lev,
 * runq.h) is assumed linearisable: a push, pop and steal are each one
 * step.  The reader's switch-out after its link is one step with the
 * link: a wake that lands while it still runs sets NOTIFIED and its own
 * worker requeues it and runs it (that hand-off is task.pml's subject).
 * The fd is taken as registered from the start (a registration reports
 * the data already there, so a later one is the same as an early one).
 * With -DSPARE: the spare's LIFO slot and yielded FIFO (spare_leave hands
 * them to the global queue as it hands its ring: the same inject, counted
 * in `handed`), the covered worker (stuck in one task: it queues nothing
 * and takes nothing), weft__pool_spare_cover and the spare's thread
 * states (the monitor's own thread makes a spare active, under idle_lock,
 * before the spare runs find_work), and the monitor's other looks (they
 * only decide whether to recall or to cover: either way is in the model).
 *
 * Memory order.  Every access that the proof rests on is seq_cst, a
 * locked RMW, or follows a seq_cst fence: the push to the global queue is
 * cds_wfcq's xchg (liburcu: a full barrier), the loads in wake_if_needed
 * are seq_cst, nspinning changes only by seq_cst RMWs, nidle grows only
 * by park_worker's seq_cst RMW, polling and missed are seq_cst (try_take,
 * give_up, np_take's store, np_unattended's load), park_worker's any_work
 * comes after atomic_thread_fence(memory_order_seq_cst), and the rest is
 * under idle_lock or rec->lock.  So interleavings under sequential
 * consistency cover those, with these exceptions:
 *   - a worker's push to its own ring has no StoreLoad barrier before
 *     wake_if_needed's loads (pool.c: "Go makes the same trade").  The
 *     model gives each worker a store buffer for it: the push sits in
 *     pend[w], visible to w's own pops (store forwarding) and to nobody
 *     else, until the drain process moves it to lq[w] at any later
 *     moment.  So a searcher may miss it and park; the pushing worker
 *     must then run it itself.
 *   - nidle's decrements (wakep, leave_idle_list: under idle_lock) are
 *     relaxed RMWs.  A read still returns a value of nidle's modification
 *     order, in which each worker's decrement follows its own increment,
 *     so a 0 means every worker counted in had been taken off the list
 *     (as in some interleaving); a stale non-zero only makes
 *     wake_if_needed call wakep, which decides from the list under
 *     idle_lock.
 *   - the spinning decision in find_work reads nspinning and nidle
 *     relaxed; the rule (2 * nspinning < nworkers - nidle) only bounds
 *     the searchers.  The passing lines let a worker take either
 *     decision, whatever the counts: a superset of what any values read
 *     would give (and fewer states: no copies of the counts).  The twins
 *     are built with -DSPIN_RULE, the rule applied to the values read, so
 *     that their counterexamples are runs of the broken C code and do not
 *     lean on the superset.
 *   - nwaiters is read relaxed (wanted) and its decrement in unlink_wait
 *     is relaxed.  Here it only ever goes from 1 (before any process
 *     runs) to 0 (the reader's wake, under rec->lock), so a stale read
 *     can only be a 1 after the wake: a worker then takes the poller with
 *     nobody parked (and is woken through the eventfd like any poller),
 *     or np_unattended says "work" once more and the worker searches
 *     again: extra work, never a lost wakeup.  (The increment that a new
 *     wait makes is seq_cst, under rec->lock, on a worker that is awake:
 *     netpoll.c step 2; not modelled.)  np_poll_now's first look at
 *     polling is relaxed: a stale 1 only skips a non-blocking poll, as
 *     when the poller is busy, which the model includes.
 *   The fence before any_work is needed: park_worker's RMWs on nidle and
 *   nspinning do not order the relaxed loads after them under C11 (x86's
 *   locked instructions would, AArch64's ldaxr/stlxr do not: a later
 *   plain load may be satisfied before the store-exclusive is visible).
 *   The twin BROKEN_RMW_NOT_FENCE models the code without the fence (the
 *   re-check's loads performed right after the lock is taken, before both
 *   RMWs) and Spin finds the lost wakeup.
 *
 * Assertions
 *   - every task is queued only when not queued or running, and runs only
 *     from queued (no task run twice, none queued twice);
 *   - when no process can move (timeout), every task has ended: no worker
 *     is parked, on its futex or in epoll_wait, with work left queued or
 *     an I/O wait left unserved.  (A worker blocked anywhere but in its
 *     park is an invalid end state.)  With -DSPARE the spare is among
 *     those workers until it leaves, and a recalled spare has left (it
 *     never sleeps on with retire set);
 *   - -DMONITOR: at every moment, the monitor is not asleep (parked, no
 *     permit, no unpark on its way) while an active worker is outside
 *     park_worker (asleep_watch).
 *
 * Broken twins (spin -DSPIN_RULE -DBROKEN_...), each with the
 * configuration in which run.sh checks it (verify/README.md has the
 * counterexamples):
 *   NO_RECHECK        park_worker sleeps without any_work after
 *                     nspinning -= 1.
 *   READ_BEFORE_PUSH  submit_outside reads nspinning/nidle before the push.
 *   LOST_UNPARK       the parker drops an unpark that comes before the park.
 *   RMW_NOT_FENCE     no fence before any_work: see "memory order" above.
 *   EVFD_LOST (-DIO HOG=1 WRITER=1)  the eventfd keeps no count: a write
 *                     that comes before epoll_wait is lost.
 *   WAKEP_LATE_GIVEBACK (-DIO HOG=1 WRITER=3)  wakep as it was before the
 *                     fix: with nobody idle it unlocks idle_lock and only
 *                     then gives nspinning back, so a worker that joins
 *                     the list meanwhile and a submitter that reads the 1
 *                     both leave the task to a searcher that does not
 *                     exist.
 *   NO_POLL_RECHECK (-DIO NTASK=2 HOG=1 WRITER=1)  any_work as it was
 *                     before the fix, without np_unattended: the missed
 *                     kick is a wakep, which does nothing while anyone is
 *                     counted spinning (the kicker itself, and the
 *                     sleeper-to-be); the kicker then runs the hog and
 *                     nobody polls.
 *
 *   -DSPARE -DNTASK=2 (the spare alone: a smaller space, whose runs are
 *   runs of the checked -DSPARE -DMONITOR line with the monitor's sleep
 *   tried last):
 *   NO_RETIRE_CHECK   park_worker sleeps without reading retire.
 *   RECALL_NO_WAKE    the recall only sets retire.
 *   RECALL_UNCOUNTED  the recall takes the spare off the idle list without
 *                     counting it as searching (the spare, woken, thinks
 *                     it was, as after wakep).
 *   LEAVE_NO_WAKE     spare_leave hands its task over and wakes nobody.
 *   -DMONITOR -DNTASK=2 (the monitor alone, likewise):
 *   MONITOR_UNLOCKED  weft__pool_monitor_may_sleep reads the counts and
 *                     sets monitor_asleep without idle_lock.
 *   NO_MONITOR_WAKE   park_worker does not look at monitor_asleep.
 *
 * Options that are not twins: -DNO_MISSED (np_take never sets missed)
 * passes in every configuration run.sh checks: with np_unattended in the
 * last look, `missed` is redundant (verify/README.md).
 */

#define NW 2
#define NONE 255
#ifndef NTASK
#define NTASK 3
#endif
#if NTASK != 3 && (NTASK != 2 || !(defined(IO) || defined(SPARE) || defined(MONITOR)))
#error "NTASK is 3, or 2 with -DIO, -DSPARE or -DMONITOR (no task 3)"
#endif

/* Task roles (0: none).  Base: task 1 spawns task 2 on its worker's ring. */
#ifndef IO
#define SPAWNER 1
#else
#define SPAWNER 0
#ifndef HOG
#define HOG 1
#endif
#ifndef WRITER
#define WRITER 3
#endif
#if HOG == 2 || WRITER == 2 || HOG > NTASK || WRITER > NTASK
#error "HOG and WRITER name an outside task (1, or 3 when NTASK is 3)"
#endif
#endif

/* task bookkeeping */
#define T_NEW 0
#define T_QUEUED 1
#define T_RUNNING 2
#define T_PARKED 3
#define T_DONE 4

byte tstate[NTASK + 1];
byte ndone;

chan gq = [NTASK] of { byte };
bit inject_lock;
byte lq[NW];
byte pend[NW];

byte nspinning;
byte nidle;
bit idle_lock;
byte il[NW];
byte iln;
bool idle[NW];
bool in_poll[NW];
bit permit[NW];
#ifdef BROKEN_LOST_UNPARK
bool sleeping[NW];
#endif

#if defined(SPARE) || defined(MONITOR)
#ifdef IO
#error "SPARE and MONITOR are checked without IO"
#endif
byte nactive = NW;         /* p->nactive */
#endif
#ifdef SPARE
#define SPARE_W 1          /* worker 1 is the spare */
bit retire;                /* the spare's w->retire */
bit recalled;              /* the monitor has called recall (ghost) */
bit spare_left;            /* the spare has left (ghost) */
#endif
#ifdef MONITOR
bit monitor_asleep;        /* p->monitor_asleep */
bit mon_permit;            /* the monitor's parker */
bit mon_parked;            /* the monitor is in its park (ghost) */
bit mon_owed;              /* a worker has taken monitor_asleep and is
                              about to unpark the monitor (ghost) */
byte nrun = NW;            /* active workers outside park_worker (ghost) */
#define NRUN_DEC ; nrun--
#else
#define NRUN_DEC
#endif

#ifdef IO
byte nwaiters;
bit polling;
bit missed;
byte evcount;
bit ev_pending;
bit io_data;
byte io_seq;
bit rec_lock;
bit linked;
#ifdef BROKEN_EVFD_LOST
bool in_epoll[NW];
#endif
#endif

/* A task enters a queue: it must be new or parked (IDLE) or running (a
 * requeue by its own runner: not modelled). */
#define QUEUE(t) assert(tstate[t] == T_NEW || tstate[t] == T_PARKED); tstate[t] = T_QUEUED

inline inject(t) {
    d_step { QUEUE(t); gq!t }
}

inline unpark(v) {
#ifdef BROKEN_LOST_UNPARK
    /* Wakes the owner only if it already sleeps. */
    d_step { if :: sleeping[v] -> permit[v] = 1 :: else -> skip fi }
#else
    permit[v] = 1
#endif
}

/* ops->wake (np_wake): write 1 to the eventfd */
inline netpoll_wake(v) {
#ifdef BROKEN_EVFD_LOST
    /* A signal that counts nothing: lost unless the poller already waits. */
    d_step { if :: in_epoll[v] -> evcount = 1 :: else -> skip fi }
#else
    evcount = evcount + 1
#endif
}

/* wakep: uses the caller's ok, v, vpoll */
inline wakep() {
    d_step { if :: nspinning == 0 -> nspinning = 1; ok = 1 :: else -> ok = 0 fi }
    if
    :: ok ->
        atomic {
            idle_lock == 0 -> idle_lock = 1;
            if
            :: iln == 0 -> v = NONE
            :: iln == 1 -> v = il[0]; il[0] = NONE; iln = 0
            :: iln == 2 ->
                /* leave the netpoller's worker if another sleeps */
                if
                :: in_poll[il[0]] -> v = il[1]
                :: else -> v = il[0]; il[0] = il[1]
                fi;
                il[1] = NONE;
                iln = 1
            fi;
            if
            :: v != NONE -> idle[v] = 0; vpoll = in_poll[v]
            :: else -> vpoll = 0
            fi
        }
        if
        :: v != NONE -> nidle--
#ifdef BROKEN_WAKEP_LATE_GIVEBACK
        :: else -> skip
#else
        :: else -> nspinning-- /* nobody idle: the count goes back under the lock */
#endif
        fi;
        idle_lock = 0;
        if
#ifdef BROKEN_WAKEP_LATE_GIVEBACK
        :: v == NONE -> nspinning-- /* the code before the fix: after the unlock */
#else
        :: v == NONE -> skip
#endif
        :: v != NONE && vpoll ->
#ifdef IO
            netpoll_wake(v)
#else
            assert(false)
#endif
        :: v != NONE && !vpoll -> unpark(v)
        fi
    :: else -> skip
    fi
}

inline wake_if_needed() {
    if
    :: nspinning == 0 ->
        if
        :: nidle > 0 -> wakep()
        :: else -> skip
        fi
    :: else -> skip
    fi
}

inline submit_outside(t) {
#ifdef BROKEN_READ_BEFORE_PUSH
    wake_if_needed();
    inject(t)
#else
    inject(t);
    wake_if_needed()
#endif
}

proctype submitter() {
    bit ok; byte v; bit vpoll;
    submit_outside(1);
#if NTASK == 3
    d_step { ok = 0; v = 0; vpoll = 0 };
    submit_outside(3)
#endif
}

/* The store buffer of the ring pushes: some time later, the push becomes
 * visible to thieves. */
proctype drain() {
end_drain:
    do
    :: d_step { pend[0] != 0 -> assert(lq[0] == 0); lq[0] = pend[0]; pend[0] = 0 }
    :: d_step { pend[1] != 0 -> assert(lq[1] == 0); lq[1] = pend[1]; pend[1] = 0 }
    od
}

/* take_global: uses the caller's t, got */
inline take_global() {
    if
    :: len(gq) > 0 ->
        /* inject_take with wait = false: trylock */
        d_step { if :: inject_lock == 0 -> inject_lock = 1; got = 1 :: else -> got = 0 fi };
        if
        :: got ->
            d_step {
                if
                :: len(gq) > 0 -> gq?t
                :: else -> skip
                fi;
                inject_lock = 0
            }
        :: else -> skip /* another worker dequeues: leave it to that one */
        fi
    :: else -> skip
    fi
}

#ifdef IO
/* in park_worker, under idle_lock: in_poll[me] = ops->take (np_take) */
inline netpoll_take() {
    if
    :: nwaiters != 0 ->
        d_step { if :: polling == 0 -> polling = 1; in_poll[me] = 1 :: else -> in_poll[me] = 0 fi };
        if
        :: !in_poll[me] ->
#ifndef NO_MISSED
            missed = 1;
#endif
            d_step { if :: polling == 0 -> polling = 1; in_poll[me] = 1 :: else -> skip fi }
        :: else -> skip
        fi
    :: else -> in_poll[me] = 0
    fi
}

inline give_up() {
    polling = 0;
    if
    :: missed ->
        d_step { if :: missed -> missed = 0; kick = 1 :: else -> kick = 0 fi };
        if
        :: kick -> wakep() /* weft__pool_kick */
        :: else -> skip
        fi
    :: else -> skip
    fi
}

/* dispatch the events in got_ev / got_evfd (the eventfd's read, and
 * weft__fd_report for the fd); woke = a wait was woken */
inline dispatch() {
    woke = 0;
    if
    :: got_evfd -> evcount = 0 /* read(evfd): takes the whole count */
    :: else -> skip
    fi;
    if
    :: got_ev ->
        atomic { rec_lock == 0 -> rec_lock = 1; io_seq = io_seq + 1 }
        if
        :: linked ->
            /* weft__fd_wake: unlink_wait (nwaiters -= 1), then
             * weft__wait_wake_fifo: decide_as WOKEN (nobody else decides:
             * no timer, no cancel), weft__task_wake_fifo: IDLE ->
             * SCHEDULED, enqueue_home -> weft__pool_submit_fifo */
            linked = 0;
            nwaiters--;
            inject(2);
            wake_if_needed();
            woke = 1
        :: else -> skip
        fi;
        rec_lock = 0
    :: else -> skip
    fi
}

/* poll_now: ops->poll_now (np_poll_now); woke = some wait was woken */
inline poll_now() {
    woke = 0;
    if
    :: nwaiters != 0 ->                 /* wanted() */
        if
        :: polling == 0 ->              /* the relaxed look at the flag */
            d_step { if :: polling == 0 -> polling = 1; got = 1 :: else -> got = 0 fi };
            if
            :: got ->
                /* epoll_wait with timeout 0: what is ready now */
                d_step { got_ev = ev_pending; ev_pending = 0; got_evfd = (evcount > 0) };
                dispatch();
                give_up()
            :: else -> skip
            fi
        :: else -> skip
        fi
    :: else -> skip
    fi
}
#endif


inline run_task() {
    d_step { assert(tstate[t] == T_QUEUED); tstate[t] = T_RUNNING };
    if
    :: t == SPAWNER ->
        /* weft_spawn(pool, ...) on a worker: push_local, wake_if_needed */
        d_step { assert(pend[me] == 0 && lq[me] == 0); QUEUE(2); pend[me] = 2 };
        wake_if_needed()
    :: else -> skip
    fi;
#ifdef IO
    if
    :: t == 2 ->
        /* the reader, woken: its read finds the data */
        assert(io_data)
    :: else -> skip
    fi;
    if
    :: t == WRITER ->
        /* data arrives on the fd; the kernel queues its edge event */
        d_step { io_data = 1; ev_pending = 1 }
    :: else -> skip
    fi;
    if
    :: t == HOG ->
        /* runs on without yielding until the reader is done */
        tstate[2] == T_DONE
    :: else -> skip
    fi;
#endif
    d_step { assert(tstate[t] == T_RUNNING); tstate[t] = T_DONE; ndone++ }
}

/* weft__parker_park(&w->parker, 0): take the permit, blocking while there
 * is none (macros, not inlines: the end label must sit on the blocking
 * statement itself) */
#ifdef BROKEN_LOST_UNPARK
#define PARK sleeping[me] = 1; \
end_park: atomic { permit[me] == 1 -> permit[me] = 0; sleeping[me] = 0 }
#else
#define PARK \
end_park: atomic { permit[me] == 1 -> permit[me] = 0 }
#endif

#ifdef IO
/* ops->block (np_block): epoll_wait until the eventfd or the fd is ready */
#ifdef BROKEN_EVFD_LOST
#define NETPOLL_BLOCK in_epoll[me] = 1; \
end_poll: atomic { (evcount > 0 || ev_pending) -> \
        got_ev = ev_pending; ev_pending = 0; got_evfd = (evcount > 0); \
        in_epoll[me] = 0 }
#else
#define NETPOLL_BLOCK \
end_poll: atomic { (evcount > 0 || ev_pending) -> \
        got_ev = ev_pending; ev_pending = 0; got_evfd = (evcount > 0) }
#endif
#endif

/* any_work: sleep = nothing anywhere, in the C code's order: the global
 * queue, (-DIO) np_unattended (nwaiters, then polling), the rings (our own
 * is empty here: our own pops came first and only we push there) */
#define RINGS_ANY \
    if \
    :: lq[other] != 0 -> sleep = 0 \
    :: else -> sleep = 1 \
    fi

inline any_work() {
    if
    :: len(gq) > 0 -> sleep = 0
    :: else ->
#if defined(IO) && !defined(BROKEN_NO_POLL_RECHECK)
        /* np_unattended: waits are parked on fds and nobody holds the
         * poller, so this worker must poll.  (The C code does not test
         * in_poll[me]: when we hold the poller, polling is 1.) */
        if
        :: nwaiters != 0 ->
            if
            :: polling == 0 -> sleep = 0
            :: else -> RINGS_ANY
            fi
        :: else -> RINGS_ANY
        fi
#else
        RINGS_ANY
#endif
    fi
}

inline park_worker() {
    atomic {
        idle_lock == 0 -> idle_lock = 1;
        idle[me] = 1;
        il[1] = il[0]; il[0] = me; iln++
        NRUN_DEC
    };
#ifdef BROKEN_RMW_NOT_FENCE
    /* no fence: the re-check's relaxed loads performed before the RMWs
     * below */
    any_work();
#endif
#ifdef IO
    netpoll_take();
#endif
    nidle++;
    idle_lock = 0;
    if
    :: spinning -> spinning = 0; nspinning--
    :: else -> skip
    fi;
    /* atomic_thread_fence(memory_order_seq_cst): the steps above and below
     * are already in one order here (sequential consistency) */
#if defined(BROKEN_NO_RECHECK)
    sleep = 1;
#elif !defined(BROKEN_RMW_NOT_FENCE)
    any_work();
#endif
#if defined(SPARE) && !defined(BROKEN_NO_RETIRE_CHECK)
    /* a spare asked to stop covering does not sleep: read after joining
     * the idle list under idle_lock, where the recall looks for it */
    if
    :: sleep && me == SPARE_W && retire -> sleep = 0
    :: else -> skip
    fi;
#endif
    if
    :: sleep ->
#ifdef IO
        if
        :: in_poll[me] -> NETPOLL_BLOCK
        :: else -> got_ev = 0; got_evfd = 0; PARK
        fi
#else
        PARK
#endif
    :: else -> skip
    fi;
    atomic {
        idle_lock == 0 -> idle_lock = 1;
        polled = in_poll[me]; in_poll[me] = 0;
#if defined(MONITOR) && !defined(BROKEN_NO_MONITOR_WAKE)
        /* the first to leave the idle list wakes the monitor */
        wake_mon = monitor_asleep; monitor_asleep = 0;
        mon_owed = mon_owed | wake_mon;
#endif
        if
        :: idle[me] ->
            /* leave_idle_list */
            idle[me] = 0;
            if
            :: il[0] == me -> il[0] = il[1]
            :: else -> assert(iln == 2 && il[1] == me)
            fi;
            il[1] = NONE;
            iln--;
            wasidle = 1
        :: else ->
            /* a waker took us off the list and counted us spinning */
            spinning = 1;
            wasidle = 0
        fi
    };
    if
    :: wasidle ->
        nidle--;
        if
        :: !sleep -> spinning = 1; nspinning++
        :: else -> skip
        fi
    :: else -> skip
    fi;
#ifdef MONITOR
    /* weft__monitor_wake after the unlock; running from here on */
    if
    :: wake_mon ->
        idle_lock = 0;
        d_step { mon_permit = 1; mon_owed = 0; nrun++; wake_mon = 0 }
    :: else -> d_step { idle_lock = 0; nrun++ }
    fi;
#else
    idle_lock = 0;
#endif
#ifdef IO
    if
    :: polled ->
        /* ops->finish (np_finish): dispatch what epoll_wait returned, give up */
        if
        :: !sleep -> got_ev = 0; got_evfd = 0
        :: else -> skip
        fi;
        dispatch();
        give_up()
    :: else -> skip
    fi
#endif
}

/* The last searcher's look before it wakes another (pool.c, found_work:
 * any_queued, poller_unattended; no timers here): one step per load. */
inline found_look() {
    if
    :: len(gq) > 0 -> more = 1
    :: else -> skip
    fi;
    if
    :: more == 0 && lq[0] != 0 -> more = 1
    :: else -> skip
    fi;
    if
    :: more == 0 && lq[1] != 0 -> more = 1
    :: else -> skip
    fi
#ifdef IO
    ;
    if
    :: more == 0 && nwaiters != 0 ->
        if
        :: polling == 0 -> more = 1
        :: else -> skip
        fi
    :: else -> skip
    fi
#endif
}

inline found_work() {
    if
    :: spinning ->
        spinning = 0;
        d_step { last = (nspinning == 1); nspinning-- };
        if
        :: last ->
#if defined(BROKEN_FOUND_NO_WAKE)
            skip
#elif defined(FOUND_WAKE_ALWAYS)
            wake_if_needed()
#else
            found_look();
            if
            :: more -> wake_if_needed()
            :: else -> skip
            fi
#endif
        :: else -> skip
        fi
    :: else -> skip
    fi
}

proctype worker(byte me) {
    byte t, v, other;
#ifdef SPIN_RULE
    byte ns, ni;
#endif
    bit ok, vpoll, got, spinning, sleep, wasidle, polled, last, more;
#ifdef IO
    bit kick, woke, got_ev, got_evfd;
#endif
#ifdef MONITOR
    bit wake_mon;
#endif
#ifdef SPARE
    bit handed;
#ifdef SPIN_RULE
    byte na;
#endif
#endif
    other = 1 - me;
loop:
#ifdef SPARE
    /* find_work's top: a spare asked to stop covering leaves */
    if
    :: me == SPARE_W && retire -> goto leave
    :: else -> skip
    fi;
#endif
    /* pop_local: the newest first; our own pending push included.  (The
     * locals are cleared here only to keep the state space small.) */
    atomic {
        t = NONE; v = NONE;
#ifdef SPIN_RULE
        ns = 0; ni = 0;
#endif
        ok = 0; vpoll = 0; got = 0; sleep = 0; wasidle = 0; polled = 0; last = 0;
        more = 0;
#ifdef IO
        kick = 0; woke = 0; got_ev = 0; got_evfd = 0;
#endif
        if
        :: pend[me] != 0 -> t = pend[me]; pend[me] = 0
        :: pend[me] == 0 && lq[me] != 0 -> t = lq[me]; lq[me] = 0
        :: else -> skip
        fi
    };
    if
    :: t == NONE -> take_global()
    :: else -> skip
    fi;
    if
    :: t != NONE -> goto found
    :: else -> skip
    fi;
#ifdef IO
    poll_now();
    if
    :: woke -> goto loop /* woken I/O waits are queued here */
    :: else -> skip
    fi;
#endif
    /* search, with at most half of the busy workers searching */
    if
    :: !spinning ->
#ifdef SPIN_RULE
        /* the rule on the values read (twins: see "memory order") */
        ns = nspinning;
        ni = nidle;
#ifdef SPARE
        na = nactive;
        if
        :: 2 * ns < (na > ni -> na - ni : 0) -> spinning = 1; nspinning++
        :: else -> skip
        fi
#else
        if
        :: 2 * ns < NW - ni -> spinning = 1; nspinning++
        :: else -> skip
        fi
#endif
#else
        /* either decision, whatever the relaxed loads would read */
        if
        :: spinning = 1; nspinning++
        :: skip
        fi
#endif
    :: else -> skip
    fi;
    if
    :: spinning ->
        /* steal_work, one round */
        d_step { if :: lq[other] != 0 -> t = lq[other]; lq[other] = 0 :: else -> skip fi };
        if
        :: t == NONE -> take_global()
        :: else -> skip
        fi;
        if
        :: t != NONE -> goto found
        :: else -> skip
        fi
    :: else -> skip
    fi;
    park_worker();
    goto loop;
found:
    found_work();
    run_task();
    goto loop;
#ifdef SPARE
leave:
    /* spare_leave: what is queued here goes to the global queue (our own
     * pending push included: our own pops see it) */
    atomic {
        t = NONE;
        if
        :: pend[me] != 0 -> t = pend[me]; pend[me] = 0
        :: pend[me] == 0 && lq[me] != 0 -> t = lq[me]; lq[me] = 0
        :: else -> skip
        fi
    };
    if
    :: t != NONE -> gq!t; handed = 1 /* inject: still QUEUED */
    :: else -> skip
    fi;
    /* out of the active set, under idle_lock */
    atomic { idle_lock == 0 -> idle_lock = 1; nactive-- NRUN_DEC };
    idle_lock = 0;
    found_work();
    if
#ifdef BROKEN_LEAVE_NO_WAKE
    :: handed -> skip
#else
    :: handed -> wake_if_needed()
#endif
    :: else -> skip
    fi;
    spare_left = 1
    /* spare_wait: no longer one of the pool's workers */
#endif
}

#if defined(SPARE) || defined(MONITOR)
#ifndef MSLEEPS
#define MSLEEPS 2
#endif
#ifdef SPARE
#define RECALL_DONE recalled
#else
#define RECALL_DONE 1
#endif
#ifdef MONITOR
#define SLEEPS_DONE (sleeps == MSLEEPS)
#else
#define SLEEPS_DONE 1
#endif
/* The monitor (src/sched/monitor.c, monitor_main and look): with -DSPARE
 * one recall of the spare (weft__pool_spare_recall), with -DMONITOR up to
 * MSLEEPS deep sleeps (weft__pool_monitor_may_sleep, then its park until
 * a worker wakes it), in any order, each at any moment. */
proctype monitor() {
    bit ok, woken, vpoll;
    byte sleeps, na;
    do
#ifdef SPARE
    :: !recalled ->
        d_step { retire = 1; recalled = 1 };
#ifndef BROKEN_RECALL_NO_WAKE
        /* if the spare is on the idle list, take it off as wakep would,
         * counted as searching, and wake it */
        atomic {
            idle_lock == 0 -> idle_lock = 1;
            woken = idle[SPARE_W];
            if
            :: woken ->
                idle[SPARE_W] = 0;
                vpoll = in_poll[SPARE_W];
                if
                :: il[0] == SPARE_W -> il[0] = il[1]
                :: else -> assert(iln == 2 && il[1] == SPARE_W)
                fi;
                il[1] = NONE;
                iln--
            :: else -> skip
            fi
        };
        if
        :: woken ->
            nidle--;
#ifndef BROKEN_RECALL_UNCOUNTED
            nspinning++
#else
            skip
#endif
        :: else -> skip
        fi;
        idle_lock = 0;
        if
        :: woken -> assert(!vpoll); unpark(SPARE_W)
        :: else -> skip
        fi;
        woken = 0
#else
        skip
#endif
#endif
#ifdef MONITOR
    :: sleeps < MSLEEPS ->
        sleeps++;
#ifdef BROKEN_MONITOR_UNLOCKED
        /* the look and the flag without idle_lock */
        na = nactive;
        ok = (nidle == na);
        if
        :: ok -> monitor_asleep = 1
        :: else -> skip
        fi;
#else
        atomic {
            idle_lock == 0 -> idle_lock = 1;
            ok = (nidle == nactive);
            if
            :: ok -> monitor_asleep = 1
            :: else -> skip
            fi
        };
        idle_lock = 0;
#endif
        if
        :: ok ->
            mon_parked = 1;
end_mpark:  atomic { mon_permit -> mon_permit = 0; mon_parked = 0 }
        :: else -> skip
        fi;
        ok = 0; na = 0
#endif
    :: RECALL_DONE && SLEEPS_DONE -> break
    od
}
#endif

#ifdef MONITOR
/* The monitor never sleeps (parked, no permit, no wake on its way: a
 * worker that took monitor_asleep unparks it next) while an active worker
 * is outside park_worker. */
active proctype asleep_watch() {
end_watch:
    atomic { (mon_parked && !mon_permit && !mon_owed && nrun > 0) -> assert(false) }
}
#endif

#ifdef SPARE
#define SPARE_DONE (!recalled || spare_left)
#else
#define SPARE_DONE 1
#endif

active proctype check() {
    timeout ->
    assert(ndone == NTASK && len(gq) == 0 && lq[0] == 0 && lq[1] == 0 &&
           pend[0] == 0 && pend[1] == 0 && SPARE_DONE)
}

#ifdef IO
#if WRITER == 0
proctype peer() {
    d_step { io_data = 1; ev_pending = 1 }
}
#endif
#endif

init {
    il[0] = NONE; il[1] = NONE;
#ifdef IO
    /* the reader has parked on the fd before the run starts */
    d_step { tstate[2] = T_PARKED; linked = 1; nwaiters = 1 };
#endif
    atomic {
#if defined(IO) && WRITER == 0
        run peer();
#endif
        run worker(0);
        run worker(1);
        run drain();
        run submitter()
#if defined(SPARE) || defined(MONITOR)
        ;
        run monitor()
#endif
    }
}
