#!/usr/bin/env bash
# verify/run.sh -- model-check weft's lock-free protocols with Spin.
#
# For every model: spin -a, gcc the verifier (pan) with -DSAFETY (assertions
# and invalid end states; the models put their "nothing left behind"
# checks in a process that runs only when nothing else can move), and run
# it exhaustively.  A model must report errors: 0 on a complete search (no
# "max search depth too small", no "search not completed", no running out
# of memory).  Each broken twin must report errors >= 1 and leave a trail.
# verify/README.md explains every line.
#
# Usage: verify/run.sh [-v] [NAME...]   (-v: keep the work folder and say
# where; NAMEs: run only those lines)
# Needs: spin (6.x), gcc.  Exit status: 0 when every model passes and every
# twin is rejected; 1 otherwise; 2 when a tool is missing.
set -u

here=$(cd "$(dirname "$0")" && pwd)
keep=0
if [ "${1:-}" = "-v" ]; then keep=1; shift; fi
only=("$@")

for tool in spin gcc; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "verify: $tool not found (apt-get install spin gcc)" >&2
        exit 2
    fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-verify.XXXXXX")
if [ "$keep" = 1 ]; then
    echo "verify: work folder $work"
else
    trap 'rm -rf "$work"' EXIT
fi

DEPTH=1000000          # pan -m: far above any model's reachable depth
CFLAGS="-w -DSAFETY -DCOLLAPSE -DMEMLIM=4096"
JOBS=${VERIFY_JOBS:-$(nproc 2>/dev/null || echo 2)}
bad=0
t_all=$(date +%s.%N)
names=()

wanted() {
    [ ${#only[@]} -eq 0 ] && return 0
    local n
    for n in "${only[@]}"; do [ "$n" = "$1" ] && return 0; done
    return 1
}

# check NAME KIND MODEL "DEFINES" "DESCRIPTION": one line's work; writes
# its report to $work/NAME/report and "bad" to $work/NAME/bad on failure
check() {
    local name=$1 kind=$2 model=$3 defs=$4 what=$5
    local d="$work/$name"
    local opt=-O0           # small models: compiling costs more than running
    case $model in pool.pml|claim.pml|yielded.pml) opt=-O2 ;; esac
    local search=""        # twins: breadth first, so the trail
    [ "$kind" = pass ] || search=-DBFS   # is a shortest one
    cp "$here/$model" "$d/"
    local t0 t1 secs out errors states depth why
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    if ! (cd "$d" && spin $defs -a "$model" >spin.log 2>&1 &&
          gcc $opt $CFLAGS $search -o pan pan.c >gcc.log 2>&1); then
        printf '%-32s %-8s BUILD FAILED (%s)\n' "$name" "$kind" "$d"
        cat "$d/spin.log" "$d/gcc.log" 2>/dev/null | head -5
        echo bad >"$d/bad"
        return
    fi
    (cd "$d" && ./pan -m"$DEPTH" -c1 >pan.out 2>&1)
    t1=$(date +%s.%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    out="$d/pan.out"
    errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$out" | head -1)
    states=$(awk '/states, stored/ { print $1; exit }' "$out")
    depth=$(sed -n 's/.*depth reached \([0-9][0-9]*\).*/\1/p' "$out" | head -1)
    : "${errors:=?}" "${states:=?}" "${depth:=?}"
    local incomplete=""
    if grep -q -i -e "depth too small" -e "search not completed" \
                -e "out of memory" -e "memory limit" "$out"; then
        incomplete="incomplete search"
    fi
    why=$(grep -m1 -o -e "assertion violated.*" -e "invalid end state.*" \
          -e "acceptance cycle.*" "$out" | sed 's/ (at depth.*//' | cut -c1-70)
    case $kind in
    pass)
        if [ "$errors" = 0 ] && [ -z "$incomplete" ]; then
            printf '%-32s ok       %10s states  depth %6s  %6ss\n' \
                "$name" "$states" "$depth" "$secs"
        else
            printf '%-32s FAILED   %10s states  errors %s %s  %6ss  (-v keeps %s)\n' \
                "$name" "$states" "$errors" "$incomplete" "$secs" "$d"
            [ -n "$why" ] && echo "    $why"
            echo bad >"$d/bad"
        fi
        ;;
    twin)
        if [ "$errors" != "?" ] && [ "$errors" -ge 1 ] &&
           ls "$d"/*.trail >/dev/null 2>&1; then
            printf '%-32s rejected %10s states  %6ss  counterexample: %s\n' \
                "$name" "$states" "$secs" "$what"
            printf '%-32s          pan: %s\n' "" "$why"
        else
            printf '%-32s PASSED (a broken twin must fail)  %s states  %ss\n' \
                "$name" "$states" "$secs"
            echo bad >"$d/bad"
        fi
        ;;
    esac
}

# one NAME KIND MODEL "DEFINES" "DESCRIPTION"
#   KIND: pass (must verify), twin (must be rejected).  Runs JOBS lines at
#   a time; the reports are printed in this file's order at the end.
one() {
    wanted "$1" || return 0
    mkdir -p "$work/$1"
    names+=("$1")
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
    check "$@" >"$work/$1/report" 2>&1 &
}

echo "verify: Spin $(spin -V 2>/dev/null | sed -n 's/^Spin Version \([^ ]*\).*/\1/p'), every interleaving, safety (assertions + end states)"

# 1. no lost wakeup (src/sched/pool.c, the parker, and through
#    src/sched/poller.h the netpoller: src/io/netpoll.c, src/io/fd.c)
one pool            pass pool.pml "" ""
one pool.no_recheck twin pool.pml "-DSPIN_RULE -DBROKEN_NO_RECHECK" \
    "the submitter pushes two tasks and reads nspinning = 1 (one searcher); that searcher parks without re-checking, the other worker, which did not search, parks too: both asleep, two tasks queued"
one pool.read_before_push twin pool.pml "-DSPIN_RULE -DBROKEN_READ_BEFORE_PUSH" \
    "the submitter reads nspinning = 1 before pushing its second task; the searcher drops nspinning and re-checks, the other worker re-checks, both before the push lands: both asleep, the task queued"
one pool.lost_unpark twin pool.pml "-DSPIN_RULE -DBROKEN_LOST_UNPARK" \
    "wakep takes a worker off the idle list and unparks it before it sleeps; the unpark is dropped; counted as the searcher (nspinning = 1, so the next submit wakes nobody), it sleeps for good"
one pool.rmw_not_fence twin pool.pml "-DSPIN_RULE -DBROKEN_RMW_NOT_FENCE" \
    "without the fence, the searcher's re-check loads complete before its nidle += 1 / nspinning -= 1 are visible (C11 and AArch64 LL/SC allow it); the submitter reads nspinning = 1 and leaves its tasks to it; both workers sleep"
one pool_io         pass pool.pml "-DIO -DHOG=1 -DWRITER=1" ""
one pool_io.found_no_wake twin pool.pml "-DSPIN_RULE -DIO -DHOG=1 -DWRITER=1 -DBROKEN_FOUND_NO_WAKE" \
    "task 3 is queued while worker 1 searches (nspinning = 1: no wake); worker 1 takes the hog and stops searching without its look; worker 0 sleeps with task 3 queued and the fd readable while the hog never returns"
one pool_io.evfd_lost twin pool.pml "-DSPIN_RULE -DIO -DHOG=1 -DWRITER=1 -DBROKEN_EVFD_LOST" \
    "the missed-kick's wakep picks the poller, the only idle worker, before it enters epoll_wait; the eventfd write is lost; counted as the searcher it blocks in epoll_wait, the other sleeps, the tasks wait"
one pool_io_h3w3    pass pool.pml "-DIO -DHOG=3 -DWRITER=3" ""
one pool_io_w3      pass pool.pml "-DIO -DHOG=1 -DWRITER=3" ""
one pool_io_w3.wakep_late_giveback twin pool.pml "-DSPIN_RULE -DIO -DHOG=1 -DWRITER=3 -DBROKEN_WAKEP_LATE_GIVEBACK" \
    "a wakep that found the idle list empty gives nspinning back only after unlocking: a worker parks meanwhile and a submitter reads that 1; the task stays queued, the poller sleeps in epoll_wait, the other worker runs the hog"
one pool_io_solo    pass pool.pml "-DIO -DNTASK=2 -DHOG=1 -DWRITER=1" ""
one pool_io_solo.no_poll_recheck twin pool.pml "-DSPIN_RULE -DIO -DNTASK=2 -DHOG=1 -DWRITER=1 -DBROKEN_NO_POLL_RECHECK" \
    "the poller's give_up sees missed and kicks, but wakep does nothing while both workers count as spinning; the kicker takes the hog, the other's last look misses the free poller and it sleeps on its futex: nobody polls"

# 1b. the monitor's spares and its deep sleep against the same protocol
#    (src/sched/pool.c "Spares", src/sched/monitor.c)
one pool_spare      pass pool.pml "-DSPARE -DMONITOR -DNTASK=2 -DMSLEEPS=1" ""
one pool_spare.no_retire_check twin pool.pml "-DSPIN_RULE -DSPARE -DNTASK=2 -DBROKEN_NO_RETIRE_CHECK" \
    "the recall sets retire and finds the spare off the idle list; the spare, past its look at retire at find_work's top, searches, parks without reading retire and sleeps: recalled, it never leaves"
one pool_spare.recall_no_wake twin pool.pml "-DSPIN_RULE -DSPARE -DNTASK=2 -DBROKEN_RECALL_NO_WAKE" \
    "the spare runs both tasks and sleeps on the idle list; the recall only sets retire: the spare sleeps on with retire set"
one pool_spare.recall_uncounted twin pool.pml "-DSPIN_RULE -DSPARE -DNTASK=2 -DBROKEN_RECALL_UNCOUNTED" \
    "the recall takes the parking spare off the idle list without counting it as searching; the spare drops its own count, then, leaving, the one it believes the recall added: nspinning wraps to 255 and the submit wakes nobody"
one pool_spare.leave_no_wake twin pool.pml "-DSPIN_RULE -DSPARE -DNTASK=2 -DBROKEN_LEAVE_NO_WAKE" \
    "the spare runs task 1, whose spawn sits unseen in its ring; worker 0 re-checks and parks; the recalled spare hands task 2 to the global queue and leaves without a wake: worker 0 sleeps, task 2 queued"
one pool_spare.monitor_unlocked twin pool.pml "-DSPIN_RULE -DMONITOR -DNTASK=2 -DBROKEN_MONITOR_UNLOCKED" \
    "the monitor reads nidle == nactive without idle_lock; a worker whose last look found task 1 leaves the idle list and reads monitor_asleep = 0; the monitor then sets it and sleeps while that worker runs"
one pool_spare.monitor_no_wake twin pool.pml "-DSPIN_RULE -DMONITOR -DNTASK=2 -DBROKEN_NO_MONITOR_WAKE" \
    "the monitor sleeps with both workers on the idle list; one finds task 1 on its last look, leaves without looking at monitor_asleep and runs: the monitor sleeps on"

# 2. the coroutine claim (src/ctx/claim.h, claim.c)
one claim           pass claim.pml "" ""
one claim.no_membarrier twin claim.pml "-DBROKEN_NO_MEMBARRIER" \
    "the owner's F1 and RUNNING sit in its store buffer; the slow claim, without membarrier, reads claiming = NULL and wins its CAS: two threads run the coroutine"
one claim.no_wait   twin claim.pml "-DBROKEN_NO_WAIT" \
    "membarrier makes the owner's F1 visible, but the slow claim does not wait for claiming to clear and wins the CAS before the owner's RUNNING lands"

# 2b. the yielded FIFO's seize (src/sched/yielded.h, yielded.c, and
#     pool.c steal_one)
one yielded         pass yielded.pml "-DPSO -DNTHIEF=2 -DATTEMPTS=2" ""
one yielded.no_membarrier twin yielded.pml "-DBROKEN_NO_MEMBARRIER" \
    "the owner's busy = 1 sits in its store buffer while it reads seized = 0 and enters; the thief CASes seized and, without membarrier, reads the busy = 0 of the last exit: both hold the list"
one yielded.no_busy_check twin yielded.pml "-DBROKEN_NO_BUSY_CHECK" \
    "the owner is inside an append; the thief CASes seized and takes the list without looking at busy"
one yielded.wait_no_recheck twin yielded.pml "-DATTEMPTS=2 -DBROKEN_WAIT_NO_RECHECK" \
    "a first seize gives up but makes the owner wait (busy = 0); the wait sees seized = 0, but before its busy = 1 a second seize CASes seized, its membarrier drains the wait's busy = 0 and it takes the list; the owner stores busy = 1 and enters without looking again"
one yielded.t4_relaxed twin yielded.pml "-DPSO -DBROKEN_T4_RELAXED" \
    "the thief's seized = 0 becomes visible before its head = 0; the owner enters, reads the old head and pops task 1, which the thief took too"
one yielded.exit_relaxed twin yielded.pml "-DPSO -DBROKEN_EXIT_RELAXED" \
    "the thief CASes and its membarrier lands while the owner is inside its first append; the owner then stores tail = 1 and a relaxed busy = 0, which becomes visible first: the thief reads busy = 0, head = 1, tail = NULL, and its walk from head ends at NULL before the tail"

# 3. await vs completion vs cancel (src/sched/await.c, task_run.c,
#    task_state.c, task.c)
one task            pass task.pml "" ""
one task.park_ignores_notified twin task.pml "-DBROKEN_PARK_IGNORES_NOTIFIED" \
    "end_await takes the awaiter back and wakes it while it is still RUNNING (NOTIFIED); the park ignores the flag and goes IDLE; nobody wakes the awaiter again"
one task.no_takeback twin task.pml "-DBROKEN_NO_TAKEBACK" \
    "the cancel finds the slot empty; the awaiter then enters the slot without re-reading the flag and parks; the awaited task never ends"
one task.cancel_reorder twin task.pml "-DBROKEN_CANCEL_REORDER" \
    "cancel's flag store passes its slot CAS: the CAS finds the slot empty, the awaiter enters it, its re-check still reads the flag clear and it parks; the await never ends"
one task.inline_ref twin task.pml "-DBROKEN_INLINE_REF" \
    "the inline claim by CAS also drops the queue entry's reference; the awaiter's consume frees the record; the worker that popped the stale entry then reads the freed record"
one task_lazy       pass task.pml "-DLAZY" ""
one task_lazy.no_takeback twin task.pml "-DLAZY -DBROKEN_LAZY_NO_TAKEBACK" \
    "start_lazy puts the awaiter in the slot; the cancel came before and found nothing; lazy_park_action skips the re-check; the lazy task never ends"

# 3b. a cancel of a task not started (the request bit, membarrier) vs its
#     start (src/sched/task.c weft_task_cancel, task.h WEFT__H_CANCEL,
#     await.c try_inline, task_state.c weft__task_claim_queued)
one cancel_start    pass cancel_start.pml "" ""
one cancel_start.no_membarrier twin cancel_start.pml "-DBROKEN_NO_MEMBARRIER" \
    "try_inline's plain store of RUNNING|STARTED sits in its store buffer while it reads the bit clear; the cancel sets the bit and, without membarrier, reads SCHEDULED from memory and returns: the body never sees the cancel"
one cancel_start.bit_before_store twin cancel_start.pml "-DBROKEN_BIT_BEFORE_STORE" \
    "try_inline reads the bit (clear) before its store; the cancel sets it, its membarrier finds nothing buffered, it reads SCHEDULED and returns; the store lands: the body never sees the cancel"
one cancel_start.ref_unstarted twin cancel_start.pml "-DBROKEN_REF_UNSTARTED" \
    "the cancel takes a reference by CAS between try_inline's load and its plain store, which overwrites it; the body ends, the run record goes with the handle's the only reference left, and the cancel writes t->cancelled into it"
one cancel_start_lazy pass cancel_start.pml "-DLAZY_START" ""
one cancel_start_lazy.ref_lazy twin cancel_start.pml "-DLAZY_START -DBROKEN_REF_LAZY" \
    "the cancel reads IDLE|LAZY after its membarrier and goes for a reference; the holder starts T onto its own deque, and the cancel's CAS lands between try_inline's load and its plain store, which undoes it: the body ends, the run record goes, and the cancel writes t->cancelled into it"
one cancel_start_claim pass cancel_start.pml "-DCLAIM -DWEAK_RMW" ""
one cancel_start_claim.no_membarrier twin cancel_start.pml "-DCLAIM -DWEAK_RMW -DNCANCEL=1 -DBROKEN_NO_MEMBARRIER" \
    "claim_queued's CAS write (acquire only: AArch64) is not yet visible when it reads the bit clear; the cancel, without membarrier, reads SCHEDULED and returns: the body never sees the cancel"
one cancel_start_claim.bit_before_store twin cancel_start.pml "-DCLAIM -DWEAK_RMW -DNCANCEL=1 -DBROKEN_BIT_BEFORE_STORE" \
    "the worker reads the bit (clear) before its CAS; the cancel sets it, runs membarrier, reads SCHEDULED and returns; the CAS wins: the body never sees the cancel"

# 3c. a failure nobody will consume, dropped once by the later of the
#     handle's detach and the task's end (src/sched/task.h
#     WEFT__H_DETACHED, task_run.c finish_failed, task_state.c
#     weft__task_detach_handle, task.c weft_task_detach and queue_spawned,
#     await.c await_until and try_inline)
one failure         pass failure.pml "" ""
one failure.end_no_detached twin failure.pml "-DBROKEN_END_NO_DETACHED" \
    "the awaiter sees DONE, takes the failure and drops the handle (HANDLE clear) before T's end reaches its RMW; the end, finding HANDLE clear, drops the failure the awaiter took"
one failure.detach_no_drop twin failure.pml "-DBROKEN_DETACH_NO_DROP" \
    "T fails and its end's RMW reads HANDLE set, so it leaves the failure to the holder; the detacher's plain drop_handle finds COMPLETE with one reference and frees the handle without a drop: leaked"
one failure.detach_drop_after twin failure.pml "-DBROKEN_DETACH_DROP_AFTER" \
    "T has ended (COMPLETE); the detacher's fetch_sub reads COMPLETE; the third holder finds COMPLETE with one reference and frees both records; the detacher then reads FAILED in the freed handle"
one failure.end_unref_first twin failure.pml "-DBROKEN_END_UNREF" \
    "the detacher's CAS drops the handle; T fails, its end's RMW to COMPLETE drops its life reference and reads HANDLE clear; the third holder frees both records; the end reads DETACHED in the freed handle"
one failure.detached_late twin failure.pml "-DBROKEN_DETACHED_LATE" \
    "the detacher's CAS drops the handle before it sets DETACHED; T ends, the third holder frees both records, and the fetch_or of DETACHED writes the freed handle"
one failure_keep    pass failure.pml "-DKEEP" ""
one failure_spawn   pass failure.pml "-DNO_HANDLE" ""
one failure_spawn.no_detached twin failure.pml "-DNO_HANDLE -DBROKEN_SPAWN_NO_DETACHED" \
    "weft_spawn without a handle leaves DETACHED clear; T fails, its end's RMW reads HANDLE clear, sees no DETACHED and leaves the failure; the records go: leaked"

# 4. a wait record: wake vs timeout vs cancel (src/sched/wait.c, timer.c,
#    src/sync/waitq.h)
one wait            pass wait.pml "" ""
one wait.decide_store twin wait.pml "-DBROKEN_DECIDE_STORE" \
    "the cancel and the post both load PENDING, then both store their outcome: two winners, two wakes"
one wait.init_unlocked twin wait.pml "-DBROKEN_INIT_UNLOCKED" \
    "init reads cancelled = 0 outside the lock; the cancel then finds no current wait; the record is published after: the cancelled wait never ends"
one wait.remove_unlocked twin wait.pml "-DBROKEN_REMOVE_UNLOCKED" \
    "the cancel decides first; the timer starts firing under its lock; the waiter takes the timer out without the lock and returns; fire() then reads the freed record"

# 4b. the mutex: barging, the woken waiter's retry, the hand-off after a
#     waiter starved (src/sync/mutex.c, src/sync/waitq.h)
one mutex_3x1       pass mutex.pml "-DNL=3 -DITER=1" ""
one mutex_2x4       pass mutex.pml "-DNL=2 -DITER=4" ""
one mutex.stale_state twin mutex.pml "-DNL=2 -DITER=2 -DBROKEN_STALE_STATE" \
    "a locker's barge fails on a held mutex; its CAS then expects the value it loaded before the barge, which the mutex has again once it is free: it sets WAITERS on a free mutex and lists itself, and nobody unlocks to wake it"
one mutex.handoff_free twin mutex.pml "-DNL=2 -DITER=3 -DBROKEN_HANDOFF_FREE" \
    "a waiter starves and the unlock hands it the mutex but clears LOCKED as a plain unlock does; the unlocker locks again by the fast path while the waiter holds it: two in the critical section"

# 5. sync_wait's last-waker hand-off (src/sched/driver.c)
one driver          pass driver.pml "" ""
one driver.no_wakers_wait twin driver.pml "-DBROKEN_NO_WAKERS_WAIT" \
    "the awaited task's end wakes the parked task and queues it on the driver; the driver runs it to its end and returns; the completer's unpark then writes the freed driver's parker"
one driver_event    pass driver.pml "-DEVENT" ""
one driver_pool     pass driver.pml "-DPOOL" ""
one driver_pool.no_wakers_wait twin driver.pml "-DPOOL -DBROKEN_NO_WAKERS_WAIT" \
    "driver_finish on the pool's thread stores done; the waiting thread returns at once; the unpark then touches the freed driver"
one driver_pool.wakers_late twin driver.pml "-DPOOL -DBROKEN_WAKERS_LATE" \
    "driver_finish stores done before counting itself; the waiting thread sees done and wakers = 0 and returns; the unpark touches the freed driver"

wait
for n in "${names[@]}"; do
    cat "$work/$n/report"
    [ -e "$work/$n/bad" ] && bad=1
done
t_end=$(date +%s.%N)
total=$(awk -v a="$t_all" -v b="$t_end" 'BEGIN { printf "%.1f", b - a }')
if [ "$bad" = 0 ]; then
    echo "verify: all models verified, all broken twins rejected (${total}s)"
else
    echo "verify: FAILED (${total}s)"
fi
exit "$bad"
