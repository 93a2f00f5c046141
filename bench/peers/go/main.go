// Command peer-go: goroutines on Go's scheduler, for weft-bench.
//
//	peer-go WORKLOAD N [THREADS]   ->   "result <value> <check> [<extra>...]"
//
// The protocol is bench/peers/peer.h's (exit 2: workload not implemented).
// GOMAXPROCS is set to THREADS, so THREADS Ps run goroutines, as THREADS
// weft workers run tasks.  Go starts its OS threads on demand, so a small
// parallel warm-up runs before the clock starts, as weft's pool is created
// first.  The clock (time.Now, monotonic) runs in the main goroutine.
// Standard library only.
//
//	spawn-join  N goroutines, goroutine i stores i+1 in slot i of a slice
//	            made before the clock (the slot plays the task handle's
//	            part), one sync.WaitGroup joins them all, then the sum is
//	            taken (N(N+1)/2).  ms per run.
//	skynet      skynet(num, size): size 1 sends num; else 10 child goroutines
//	            skynet(num + i*size/10, size/10) each send their sum on the
//	            parent's unbuffered channel, which receives 10 values and
//	            sums (the classic Go skynet shape).  N leaves (a power of
//	            10); check N(N-1)/2.  ms per run.
//	fib         fib(n) = n < 2 ? n : a goroutine computes fib(n-1) and sends
//	            it on a channel, fib(n-2) inline, receive, add: the same
//	            shape as every implementation.  N is the argument; check
//	            fib(N).  ms per run.
//	yield       1000 goroutines each call runtime.Gosched() N times and
//	            count; WaitGroup; check 1000 N; ns per yield (elapsed /
//	            (1000 N)).
//	yield-fp    The same, except that every iteration of every goroutine
//	            first does one float64 division of variables (1.0 / 3.0:
//	            raises inexact), as weft's yield-fp.  Go has no way to
//	            clear the FP exception flags (no fenv), so nothing clears
//	            them: the goroutines do not differ in their raised flags,
//	            and this adds only the division's cost.  Go's goroutine
//	            switch neither saves nor loads MXCSR (FPCR) at all.
//	ping-pong   goroutines A and B bounce a token N round trips through two
//	            unbuffered channels, each side adding 1.  Go decides where
//	            each goroutine runs (a woken goroutine usually goes to the
//	            waker's P), as weft does.  Check: the token, 2N.  us per
//	            round trip.
//	ping-pong-fp  The same, except that both sides do one float64 division
//	            at every move, before they send; as for yield-fp, nothing
//	            clears the flags (Go cannot).
//	            (yield, ping-pong, sync-wait, mutex, sleepers and the -fp
//	            variants also report `cpu`: the process's CPU time, user +
//	            system, every thread, from syscall.Getrusage at the clock's
//	            two readings, per yield or lock in ns or per round trip or
//	            sleep in us: Go's idle Ps spin looking for work before they
//	            park, and pay for it there.)
//	sleep       time.Sleep(time.Millisecond) N times in one goroutine; the
//	            mean lateness (time asleep - 1 ms) in us.  Check: N (none
//	            returned early).
//	sync-wait   N rounds of `go func() { ch <- i + 1 }()` then `<-ch` in the
//	            main goroutine.  Go has no plain thread outside its
//	            scheduler: main is itself a goroutine on a P, so this is the
//	            closest analogue of weft_sync_wait on a task that hops to the
//	            pool (the new goroutine often runs on main's own P once main
//	            blocks).  Check: sum of (result - i) = N.  us per round trip.
//	mutex       (wl_mutex.c) A shared account, a float64 balance and a
//	            count of operations, guarded by one sync.Mutex: the main
//	            goroutine starts 8 goroutines, each making N / 8 deposits
//	            (at least 1) of math.Sqrt(float64(i)) * rate, computed
//	            outside the lock, under Lock / Unlock (balance += it,
//	            ops++), and waits for them with a sync.WaitGroup.  sync.Mutex
//	            spins a little before it parks a goroutine, lets a running
//	            goroutine take the lock ahead of a woken one, and hands it
//	            over directly once a waiter has waited 1 ms (starvation
//	            mode).  Check: ops, 8 (N / 8).  ns per lock, and `cpu` in ns
//	            per lock.
//	sleepers    (wl_sleepers.c) The main goroutine starts 10,000 goroutines
//	            (fixed), each calling time.Sleep(time.Millisecond) N times
//	            and adding its count of completed sleeps to a shared counter
//	            (sync/atomic) as it ends, and waits for them with a
//	            sync.WaitGroup.  A sleeping goroutine is parked with its own
//	            stack (a few KiB, grown on demand) and a timer on its P's
//	            timer heap; the P that runs the timers readies it.  Check:
//	            the sleeps completed, 10,000 N.  ms per round of sleeps
//	            (elapsed / N: 1 ms at best), and `cpu` in us per sleep (CPU
//	            time / (10,000 N)).
//	timeout     P = 500 goroutine pairs (P = N when N < 500) pass N messages
//	            (N / P per pair, the first N % P pairs one more) through two
//	            channels of capacity 1 per pair, A -> B and B -> A: message k
//	            goes from A if k is even, from B if odd, and carries k + 1.
//	            Every receive that has to wait is a select on its channel and
//	            a 1 s timer (recvFor).  The fired timer, or one found expired
//	            on the way out, fails the run.  Check: messages received with
//	            the expected value (N).  ns per message.
//	idle        (wl_idle.c) A burst: 10,000 goroutines (goroutine i stores
//	            i+1 in its slot) and a WaitGroup, from the main goroutine;
//	            then the main goroutine time.Sleeps N ms, the Ps with
//	            nothing to do: the process's CPU ms per second of that is
//	            the value.  Another burst; then the main goroutine waits on
//	            a channel for a goroutine that time.Sleeps N ms: CPU ms per
//	            second of that is the extra figure `wait`.  Check: 3 (both
//	            bursts' sums right, the goroutine slept N ms).
//	latency-yield, latency-cpu, latency-read  (wl_latency.c) A ticker
//	            goroutine loops time.Sleep(time.Millisecond) for N ms (at
//	            least once) and records each wake-up's lateness (time asleep
//	            - 1 ms); the main goroutine waits until the ticker has
//	            started, then starts the load and joins it (WaitGroup) and
//	            the ticker.  The loads: latency-yield, 200 goroutines each
//	            looping { 1 ms of float64 arithmetic; runtime.Gosched() }
//	            until the window ends (at least once); latency-cpu, THREADS
//	            goroutines each computing N ms with no call that yields (Go
//	            preempts them asynchronously: that is its answer, measured);
//	            latency-read, THREADS goroutines each in syscall.Read of one
//	            byte on its own blocking pipe from syscall.Pipe2 (os.Pipe's
//	            reads would go through the netpoller instead of blocking in
//	            the system call), and a writer goroutine that time.Sleeps
//	            until the window ends, then writes byte i + 1 into pipe i
//	            (Go has no plain thread; a sleeping goroutine holds no P).
//	            The arithmetic is weft's: blocks of the Basel partial sum
//	            (1 / i^2, i = 1..1000), each checked against the sum computed
//	            before the clock, the clock read between blocks.  Value: the
//	            worst lateness in ms; extras p50 and p99 in ms (nearest rank),
//	            ticks (wake-ups as a percentage of N) and cpu (CPU ms per
//	            second from the clock's start to the last join).  Check: the
//	            load goroutines whose work checked out (every block right and
//	            at least one; a reader got its own byte), + 1 if the ticker
//	            woke at least once and never before its 1 ms.
//	memory,     N goroutines each count themselves and block receiving
//	memory-1m   from one channel, so all N are parked at once; bytes of RSS
//	            per goroutine: (RSS with N parked - RSS before) / N, RSS from
//	            /proc/self/statm (weft's figure is the same difference).
//	            Check: N (goroutines that counted themselves).
package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	skynetDiv   = 10
	timeoutPair = 500
	yieldTasks  = 1000
	exitFailed  = 1
	exitUnknown = 2
)

// cpuNow is the process's CPU time so far, user + system, every thread
// (getrusage RUSAGE_SELF, as bench/cpu.h reads it for the C and C++
// implementations).
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// The -fp workloads' division: operands in package variables, so the
// compiler cannot fold it, and the quotient stored, so it cannot drop it.
var fpNum, fpDen, fpSink = 1.0, 3.0, 0.0

func fpRaise() { fpSink = fpNum / fpDen }

// cpuSpent is the CPU time of the last run's timed region, for the
// workloads that report it (set by their run functions).
var cpuSpent time.Duration

func skynet(out chan<- uint64, num, size uint64) {
	if size == 1 {
		out <- num
		return
	}
	child := size / skynetDiv
	rc := make(chan uint64)
	for i := uint64(0); i < skynetDiv; i++ {
		go skynet(rc, num+i*child, child)
	}
	var sum uint64
	for i := 0; i < skynetDiv; i++ {
		sum += <-rc
	}
	out <- sum
}

func fib(n uint64) uint64 {
	if n < 2 {
		return n
	}
	xc := make(chan uint64, 1)
	go func() { xc <- fib(n - 1) }()
	y := fib(n - 2)
	return <-xc + y
}

func isPowerOf10(n uint64) bool {
	for n > 1 && n%10 == 0 {
		n /= 10
	}
	return n == 1
}

// warm starts the runtime's threads: every P runs a goroutine at once.
func warm(procs int) {
	var wg sync.WaitGroup
	for i := 0; i < 4*procs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for j := 0; j < 100000; j++ {
				x += j
			}
			_ = x
		}()
	}
	wg.Wait()
}

func spawnJoin(n uint64) (time.Duration, uint64) {
	slots := make([]uint64, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	wg.Add(int(n))
	for i := uint64(0); i < n; i++ {
		go func(i uint64) {
			slots[i] = i + 1
			wg.Done()
		}(i)
	}
	wg.Wait()
	var sum uint64
	for _, v := range slots {
		sum += v
	}
	return time.Since(t0), sum
}

func yieldRun(n uint64, fp bool) (time.Duration, uint64) {
	counts := make([]uint64, yieldTasks)
	var wg sync.WaitGroup
	c0 := cpuNow()
	t0 := time.Now()
	wg.Add(yieldTasks)
	for k := 0; k < yieldTasks; k++ {
		go func(k int) {
			var c uint64
			if fp {
				for j := uint64(0); j < n; j++ {
					fpRaise()
					runtime.Gosched()
					c++
				}
			} else {
				for j := uint64(0); j < n; j++ {
					runtime.Gosched()
					c++
				}
			}
			counts[k] = c
			wg.Done()
		}(k)
	}
	wg.Wait()
	d := time.Since(t0)
	cpuSpent = cpuNow() - c0
	var sum uint64
	for _, c := range counts {
		sum += c
	}
	return d, sum
}

// sleepRun returns the total lateness of n 1 ms sleeps (the caller divides
// by n) and how many did not return early.
func sleepRun(n uint64) (time.Duration, uint64) {
	var late time.Duration
	var onTime uint64
	for i := uint64(0); i < n; i++ {
		t0 := time.Now()
		time.Sleep(time.Millisecond)
		if d := time.Since(t0); d >= time.Millisecond {
			late += d - time.Millisecond
			onTime++
		}
	}
	return late, onTime
}

func pingPong(n uint64, fp bool) (time.Duration, uint64) {
	ping := make(chan uint64)
	pong := make(chan uint64)
	done := make(chan struct{})
	var d time.Duration
	var token uint64
	go func() {
		for i := uint64(0); i < n; i++ {
			v := <-ping
			if fp {
				fpRaise()
			}
			pong <- v + 1
		}
	}()
	go func() {
		var v uint64
		c0 := cpuNow()
		t0 := time.Now()
		for i := uint64(0); i < n; i++ {
			if fp {
				fpRaise()
			}
			ping <- v + 1
			v = <-pong
		}
		d = time.Since(t0)
		cpuSpent = cpuNow() - c0
		token = v
		close(done)
	}()
	<-done
	return d, token
}

// recvFor receives from ch, waiting at most 1 s; false on timeout.
//
// One timer per goroutine, made stopped, is Reset before each wait and
// stopped after it: Reset arms it (an insertion into the runtime's timer
// heap of this P) and Stop disarms it (a removal), with no allocation, as
// weft_chan_recv_for arms a timer embedded in the waiter and disarms it on
// wake.  A timer made per receive (time.NewTimer) would add an allocation
// of a timer and its channel, and the garbage collection of both, to every
// message.  As weft and Boost.Fiber do, it arms only when it must wait: a
// value already there is taken at once.  A Stop that finds the timer
// expired means the wait lasted 1 s: a timeout, whichever case select
// chose (so no stale tick is ever left in t.C for the next wait).
func recvFor(ch <-chan uint64, t *time.Timer) (uint64, bool) {
	select {
	case v := <-ch:
		return v, true
	default:
	}
	t.Reset(time.Second)
	select {
	case v := <-ch:
		return v, t.Stop()
	case <-t.C:
		return 0, false
	}
}

// timeoutSide is one goroutine of a pair: msgs messages, sending message k
// when k%2 == parity.  It adds the messages received with the expected
// value to *ok and reports a timeout in *failed.
func timeoutSide(in <-chan uint64, out chan<- uint64, msgs, parity uint64,
	ok *uint64, failed *int32, wg *sync.WaitGroup) {
	defer wg.Done()
	t := time.NewTimer(time.Hour)
	t.Stop()
	var good uint64
	for k := uint64(0); k < msgs; k++ {
		if k%2 == parity {
			out <- k + 1
			continue
		}
		v, inTime := recvFor(in, t)
		if !inTime {
			atomic.StoreInt32(failed, 1)
			break
		}
		if v == k+1 {
			good++
		}
	}
	atomic.AddUint64(ok, good)
}

func timeoutRun(n uint64) (time.Duration, uint64, bool) {
	pairs := uint64(timeoutPair)
	if n < pairs {
		pairs = n
	}
	chans := make([]chan uint64, 2*pairs)
	for i := range chans {
		chans[i] = make(chan uint64, 1)
	}
	var ok uint64
	var failed int32
	var wg sync.WaitGroup
	t0 := time.Now()
	wg.Add(int(2 * pairs))
	for j := uint64(0); j < pairs; j++ {
		msgs := n / pairs
		if j < n%pairs {
			msgs++
		}
		ab, ba := chans[2*j], chans[2*j+1]
		go timeoutSide(ba, ab, msgs, 0, &ok, &failed, &wg)
		go timeoutSide(ab, ba, msgs, 1, &ok, &failed, &wg)
	}
	wg.Wait()
	return time.Since(t0), atomic.LoadUint64(&ok), atomic.LoadInt32(&failed) == 0
}

func syncWait(n uint64) (time.Duration, uint64) {
	ch := make(chan uint64)
	var sum uint64
	c0 := cpuNow()
	t0 := time.Now()
	for i := uint64(0); i < n; i++ {
		go func(i uint64) { ch <- i + 1 }(i)
		sum += <-ch - i
	}
	d := time.Since(t0)
	cpuSpent = cpuNow() - c0
	return d, sum
}

const (
	mutexTasks = 8
	// The interest rate; any value: only the multiplication's cost matters.
	mutexRate = 1e-6
)

// account is mutex's shared state: balance and ops are guarded by mu.
type account struct {
	mu      sync.Mutex
	balance float64
	ops     uint64
}

// mutexPerTask is each goroutine's deposits: n / 8, at least 1 (as every
// implementation).
func mutexPerTask(n uint64) uint64 {
	if n/mutexTasks > 0 {
		return n / mutexTasks
	}
	return 1
}

func mutexRun(n uint64) (time.Duration, uint64) {
	var acc account
	var wg sync.WaitGroup
	per := mutexPerTask(n)
	c0 := cpuNow()
	t0 := time.Now()
	wg.Add(mutexTasks)
	for k := 0; k < mutexTasks; k++ {
		go func() {
			defer wg.Done()
			for i := uint64(0); i < per; i++ {
				interest := math.Sqrt(float64(i)) * mutexRate
				acc.mu.Lock()
				acc.balance += interest
				acc.ops++
				acc.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	d := time.Since(t0)
	cpuSpent = cpuNow() - c0
	acc.mu.Lock()
	ops := acc.ops
	acc.mu.Unlock()
	return d, ops
}

const sleepersTasks = 10000

func sleepersRun(n uint64) (time.Duration, uint64) {
	var sleeps uint64
	var wg sync.WaitGroup
	c0 := cpuNow()
	t0 := time.Now()
	wg.Add(sleepersTasks)
	for k := 0; k < sleepersTasks; k++ {
		go func() {
			defer wg.Done()
			var c uint64
			for i := uint64(0); i < n; i++ {
				time.Sleep(time.Millisecond)
				c++
			}
			atomic.AddUint64(&sleeps, c)
		}()
	}
	wg.Wait()
	d := time.Since(t0)
	cpuSpent = cpuNow() - c0
	return d, atomic.LoadUint64(&sleeps)
}

const idleBurst = 10000

// idleBurstRun is idle's burst: 1 if the sum is right.
func idleBurstRun() uint64 {
	slots := make([]uint64, idleBurst)
	var wg sync.WaitGroup
	wg.Add(idleBurst)
	for i := uint64(0); i < idleBurst; i++ {
		go func(i uint64) {
			slots[i] = i + 1
			wg.Done()
		}(i)
	}
	wg.Wait()
	var sum uint64
	for _, v := range slots {
		sum += v
	}
	if sum == idleBurst*(idleBurst+1)/2 {
		return 1
	}
	return 0
}

// cpuMsPerSec is CPU ms per elapsed second.
func cpuMsPerSec(cpu, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(cpu.Nanoseconds()) / 1e6 / elapsed.Seconds()
}

// idle returns the CPU ms per second of an idle pool, the same while the
// main goroutine waits for a sleeping one, and the check.
func idle(ms uint64) (float64, float64, uint64) {
	sleep := time.Duration(ms) * time.Millisecond
	check := idleBurstRun()
	c0, t0 := cpuNow(), time.Now()
	time.Sleep(sleep)
	d1, c1 := time.Since(t0), cpuNow()
	check += idleBurstRun()
	ch := make(chan uint64)
	c2, t2 := cpuNow(), time.Now()
	go func() {
		s0 := time.Now()
		time.Sleep(sleep)
		if time.Since(s0) >= sleep {
			ch <- 1
		} else {
			ch <- 0
		}
	}()
	check += <-ch
	d3, c3 := time.Since(t2), cpuNow()
	return cpuMsPerSec(c1-c0, d1), cpuMsPerSec(c3-c2, d3), check
}

const (
	latencyTick     = time.Millisecond
	latencyYielders = 200
	baselTerms      = 1000
)

// baselTermsVar is read by every block, so that the compiler cannot fold
// the blocks of a slice into one.
var baselTermsVar = baselTerms

// baselBlock is one block of the latency loads' arithmetic: the sum of
// 1 / i^2 for i = 1..terms.
//
//go:noinline
func baselBlock(terms int) float64 {
	sum := 0.0
	for i := 1; i <= terms; i++ {
		x := float64(i)
		sum += 1 / (x * x)
	}
	return sum
}

// latencyLoader is one goroutine of a latency load.
type latencyLoader struct {
	blocks, wrong uint64
	ok            bool
}

// crunchUntil computes blocks until d has passed since start (at least one).
func (l *latencyLoader) crunchUntil(start time.Time, d time.Duration, ref float64) {
	for {
		if baselBlock(baselTermsVar) != ref {
			l.wrong++
		}
		l.blocks++
		if time.Since(start) >= d {
			return
		}
	}
}

// percentileMs is the ceil(pct n / 100)-th smallest of sorted (n > 0), in ms.
func percentileMs(sorted []time.Duration, pct int) float64 {
	rank := (len(sorted)*pct + 99) / 100
	if rank > 0 {
		rank--
	}
	return float64(sorted[rank].Nanoseconds()) / 1e6
}

// latency runs one of the latency workloads and prints its result line.
func latency(load string, n uint64, threads int) error {
	window := time.Duration(n) * time.Millisecond
	ref := baselBlock(baselTermsVar)
	nload := threads
	if load == "latency-yield" {
		nload = latencyYielders
	}
	loaders := make([]latencyLoader, nload)
	var pipes [][2]int
	if load == "latency-read" {
		pipes = make([][2]int, nload)
		for i := range pipes {
			if err := syscall.Pipe2(pipes[i][:], syscall.O_CLOEXEC); err != nil {
				return fmt.Errorf("pipe2: %v", err)
			}
		}
		defer func() {
			for _, p := range pipes {
				syscall.Close(p[0])
				syscall.Close(p[1])
			}
		}()
	}
	// Every wake-up takes at least 1 ms: at most N end inside the window,
	// and the last one may end after it.
	late := make([]time.Duration, 0, n+1)
	var early uint64
	var writeFailed int32
	started := make(chan struct{})
	tickerDone := make(chan struct{})

	c0 := cpuNow()
	t0 := time.Now()
	end := t0.Add(window)
	go func() {
		close(started)
		for {
			s := time.Now()
			time.Sleep(latencyTick)
			if d := time.Since(s); d < latencyTick {
				early++
			} else {
				late = append(late, d-latencyTick)
			}
			if !time.Now().Before(end) || len(late) == cap(late) {
				break
			}
		}
		close(tickerDone)
	}()
	<-started
	if load == "latency-read" {
		go func() {
			time.Sleep(time.Until(end))
			for i, p := range pipes {
				b := []byte{byte(i + 1)}
				for {
					w, err := syscall.Write(p[1], b)
					if err == syscall.EINTR {
						continue
					}
					if err != nil || w != 1 {
						// Its reader then reads end of file: no hang.
						atomic.StoreInt32(&writeFailed, 1)
						syscall.Close(p[1])
					}
					break
				}
			}
		}()
	}
	var wg sync.WaitGroup
	wg.Add(nload)
	for i := range loaders {
		l := &loaders[i]
		switch load {
		case "latency-yield":
			go func() {
				defer wg.Done()
				for {
					l.crunchUntil(time.Now(), latencyTick, ref)
					runtime.Gosched()
					if !time.Now().Before(end) {
						break
					}
				}
				l.ok = l.blocks > 0 && l.wrong == 0
			}()
		case "latency-cpu":
			go func() {
				defer wg.Done()
				l.crunchUntil(time.Now(), window, ref)
				l.ok = l.blocks > 0 && l.wrong == 0
			}()
		case "latency-read":
			fd, want := pipes[i][0], byte(i+1)
			go func() {
				defer wg.Done()
				var b [1]byte
				for {
					r, err := syscall.Read(fd, b[:])
					if err == syscall.EINTR {
						continue
					}
					l.ok = err == nil && r == 1 && b[0] == want
					break
				}
			}()
		}
	}
	wg.Wait()
	// As weft's: a ticker still asleep 1 s after the load ended has a timer
	// that does not fire; fail rather than hang.
	select {
	case <-tickerDone:
	case <-time.After(time.Second):
		return fmt.Errorf("%s: the ticker was still asleep 1 s after the load ended", load)
	}
	elapsed := time.Since(t0)
	cpu := cpuNow() - c0
	if atomic.LoadInt32(&writeFailed) != 0 {
		return fmt.Errorf("%s: a write to a pipe failed", load)
	}

	var check uint64
	for i := range loaders {
		if loaders[i].ok {
			check++
		}
	}
	var max, p50, p99 float64
	if len(late) > 0 {
		sort.Slice(late, func(a, b int) bool { return late[a] < late[b] })
		max = float64(late[len(late)-1].Nanoseconds()) / 1e6
		p50 = percentileMs(late, 50)
		p99 = percentileMs(late, 99)
		if early == 0 {
			check++
		}
	}
	ticks := 100 * float64(len(late)) / float64(n)
	fmt.Printf("result %.9g %d %.9g %.9g %.9g %.9g\n", max, check, p50, p99,
		ticks, cpuMsPerSec(cpu, elapsed))
	return nil
}

// rssBytes reads the resident set from /proc/self/statm (second field, pages).
func rssBytes() (int64, error) {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(data), &size, &resident); err != nil {
		return 0, err
	}
	return resident * int64(os.Getpagesize()), nil
}

// memory parks n goroutines on one channel and reports RSS per goroutine.
func memory(n uint64) (float64, uint64, error) {
	var parked uint64
	var wg sync.WaitGroup
	release := make(chan struct{})

	before, err := rssBytes()
	if err != nil {
		return 0, 0, err
	}
	wg.Add(int(n))
	for i := uint64(0); i < n; i++ {
		go func() {
			atomic.AddUint64(&parked, 1)
			wg.Done()
			<-release
		}()
	}
	wg.Wait()
	after, err := rssBytes()
	close(release)
	if err != nil {
		return 0, 0, err
	}
	return float64(after-before) / float64(n), atomic.LoadUint64(&parked), nil
}

func main() {
	if len(os.Args) < 3 || len(os.Args) > 4 {
		fmt.Fprintf(os.Stderr, "usage: %s WORKLOAD N [THREADS]\n", os.Args[0])
		os.Exit(exitFailed)
	}
	workload := os.Args[1]
	n, err := strconv.ParseUint(os.Args[2], 10, 64)
	if err != nil || n == 0 {
		fmt.Fprintf(os.Stderr, "usage: %s WORKLOAD N [THREADS]\n", os.Args[0])
		os.Exit(exitFailed)
	}
	threads := uint64(1)
	if len(os.Args) == 4 {
		threads, err = strconv.ParseUint(os.Args[3], 10, 32)
		if err != nil || threads == 0 || threads > 4096 {
			fmt.Fprintf(os.Stderr, "usage: %s WORKLOAD N [THREADS]\n", os.Args[0])
			os.Exit(exitFailed)
		}
	}

	if workload == "memory" || workload == "memory-1m" {
		runtime.GOMAXPROCS(int(threads))
		perG, check, err := memory(n)
		if err != nil {
			fmt.Fprintln(os.Stderr, "peer-go: memory:", err)
			os.Exit(exitFailed)
		}
		fmt.Printf("result %.9g %d\n", perG, check)
		return
	}

	if workload == "idle" {
		runtime.GOMAXPROCS(int(threads))
		warm(int(threads))
		value, wait, check := idle(n)
		fmt.Printf("result %.9g %d %.9g\n", value, check, wait)
		return
	}

	if workload == "latency-yield" || workload == "latency-cpu" ||
		workload == "latency-read" {
		runtime.GOMAXPROCS(int(threads))
		warm(int(threads))
		if err := latency(workload, n, int(threads)); err != nil {
			fmt.Fprintln(os.Stderr, "peer-go:", err)
			os.Exit(exitFailed)
		}
		return
	}

	var run func(uint64) (time.Duration, uint64)
	perUnit := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 } // ms
	// cpu: the workload reports cpuSpent per operation, in its unit's scale.
	var cpuPerUnit func(time.Duration) float64
	switch workload {
	case "spawn-join":
		run = spawnJoin
	case "skynet":
		if !isPowerOf10(n) {
			fmt.Fprintln(os.Stderr, "peer-go: skynet needs a power of 10 leaves")
			os.Exit(exitFailed)
		}
		run = func(n uint64) (time.Duration, uint64) {
			out := make(chan uint64)
			t0 := time.Now()
			go skynet(out, 0, n)
			sum := <-out
			return time.Since(t0), sum
		}
	case "fib":
		if n > 90 {
			fmt.Fprintf(os.Stderr, "peer-go: fib(%d) overflows\n", n)
			os.Exit(exitFailed)
		}
		run = func(n uint64) (time.Duration, uint64) {
			t0 := time.Now()
			r := fib(n)
			return time.Since(t0), r
		}
	case "yield", "yield-fp":
		fp := workload == "yield-fp"
		run = func(n uint64) (time.Duration, uint64) { return yieldRun(n, fp) }
		perUnit = func(d time.Duration) float64 {
			return float64(d.Nanoseconds()) / (float64(yieldTasks) * float64(n))
		}
		cpuPerUnit = perUnit // ns per yield
	case "ping-pong", "ping-pong-fp":
		fp := workload == "ping-pong-fp"
		run = func(n uint64) (time.Duration, uint64) { return pingPong(n, fp) }
		perUnit = func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n) }
		cpuPerUnit = perUnit // us per round trip
	case "sleep":
		run = sleepRun
		perUnit = func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n) }
	case "sync-wait":
		run = syncWait
		perUnit = func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n) }
		cpuPerUnit = perUnit // us per round trip
	case "mutex":
		run = mutexRun
		// Per lock made (8 (n / 8)), as weft's.
		perUnit = func(d time.Duration) float64 {
			return float64(d.Nanoseconds()) / float64(mutexTasks*mutexPerTask(n))
		}
		cpuPerUnit = perUnit // ns per lock
	case "sleepers":
		run = sleepersRun
		// ms per round of sleeps, as weft's.
		perUnit = func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 / float64(n) }
		cpuPerUnit = func(d time.Duration) float64 { // us per sleep
			return float64(d.Nanoseconds()) / 1e3 / (float64(sleepersTasks) * float64(n))
		}
	case "timeout":
		run = func(n uint64) (time.Duration, uint64) {
			d, check, inTime := timeoutRun(n)
			if !inTime {
				fmt.Fprintln(os.Stderr, "peer-go: timeout: a receive timed out")
				os.Exit(exitFailed)
			}
			return d, check
		}
		perUnit = func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n) }
	default:
		fmt.Fprintf(os.Stderr, "peer-go: no workload '%s'\n", workload)
		os.Exit(exitUnknown)
	}

	runtime.GOMAXPROCS(int(threads))
	warm(int(threads))
	d, check := run(n)
	if cpuPerUnit != nil {
		fmt.Printf("result %.9g %d %.9g\n", perUnit(d), check, cpuPerUnit(cpuSpent))
		return
	}
	fmt.Printf("result %.9g %d\n", perUnit(d), check)
}
