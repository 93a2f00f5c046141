/*
 * boost_fiber.cc — peer-boost-fiber: Boost.Fiber on its work_stealing
 * scheduler.
 *
 * Boost.Fiber is the closest peer in kind: stackful fibers (Boost.Context
 * switch), futures, channels, and a work-stealing scheduler.  Its pool is
 * THREADS threads: main plus THREADS-1 helper threads, every one of which
 * installs `algo::work_stealing(THREADS)` (the pattern of Boost's own
 * work_stealing example): the helpers' main fibers then wait in a fiber
 * condition variable for a job main hands every thread (on_every_thread)
 * or the end of the run, so their schedulers run fibers meanwhile.  A
 * thread-blocking barrier keeps every fiber launch until all THREADS
 * schedulers are registered (a thief picks a victim among all of them).
 * Idle schedulers sleep on a condition variable (suspend = true), as
 * weft's, Go's and TBB's idle workers sleep; Boost's default, false,
 * makes them spin on their queues for ever, which burns every CPU of the
 * pool and, on a small VM, competes with the threads doing the work
 * (BENCH_BOOST_FIBER_SUSPEND=0 selects it, for comparison).  A scheduler
 * asleep so wakes only for a timer of its own or a fiber of its own
 * readied from another thread, never for fibers queued on another
 * thread: fibers launched from main's fiber reach a helper only if it
 * happens to be awake to steal them (measured at T = 2: in yield with
 * N = 20,000 the helper thread used no CPU; latency-cpu launched from
 * main's fiber alone ran its two crunchers one after the other in 1 run
 * of 6).  The latency workloads therefore launch their load from every
 * thread's main fiber; the others launch from main's fiber and take what
 * stealing gives them.  Fiber stacks are Boost.Fiber's default
 * (fixedsize_stack, 128 KiB here), malloc'd when the fiber is made: a
 * fiber owns its stack from creation to end, so N fibers launched before any
 * is joined hold N stacks (about 9 KiB each resident: a full spawn-join or
 * skynet run peaks near 10 GB).  The clock runs in main's fiber.
 *
 *   spawn-join  main launches N fibers with fibers::async(launch::post)
 *               (each returns i + 1) and keeps the futures in a vector
 *               reserved before the clock; then get()s each in order and
 *               sums (N(N+1)/2).  A future is Boost.Fiber's task handle; the
 *               fiber itself is detached, so its stack goes when it ends.
 *               ms per run.
 *   skynet      skynet(num, size): size 1 returns num; else 10 async
 *               children skynet(num + i*size/10, size/10), get() each, sum.
 *               N leaves (a power of 10); check N(N-1)/2.  ms per run.
 *   fib         fib(n) = n < 2 ? n : async(fib(n-1)), fib(n-2) inline, get:
 *               the same shape as every implementation.  N is the argument;
 *               check fib(N).  ms per run.
 *   yield       1000 fibers each call this_fiber::yield() N times and count;
 *               joined through their fiber handles; check 1000 N; ns per
 *               yield (elapsed / (1000 N)).
 *   yield-fp    The same, except that every iteration of every fiber first
 *               does one double division (fp.h: raises inexact), and the
 *               odd fibers then clear their flags (bench_fp_clear), as
 *               weft's yield-fp.  Boost.Context's switch saves and loads
 *               MXCSR and the x87 control word (FPCR) at every switch,
 *               flags included, so each fiber gets its own flags back and a
 *               switch between an odd and an even fiber writes a different
 *               MXCSR value (fp.h).
 *   ping-pong   fibers A and B bounce a token N round trips through two
 *               buffered_channel<uint64_t>s of capacity 2 (A pushes on one,
 *               pops the other; B the reverse; each side adds 1).  Which
 *               thread runs each fiber is the scheduler's choice, as in weft.
 *               Check: the token, 2N.  us per round trip.
 *   ping-pong-fp  The same, except that both fibers do one double division
 *               (fp.h) at every move, before they push, and B then clears
 *               its flags, as weft's ping-pong-fp.
 *   sync-wait   N rounds of `async(launch::post, job).get()` from main's
 *               fiber, job returning i + 1.  main is a fiber on one of the
 *               pool's threads (a thread outside every scheduler cannot hand
 *               a fiber to a work_stealing pool), so this is the closest
 *               analogue of weft_sync_wait: the waiting fiber suspends and
 *               its thread may run the job itself.  Check: sum of
 *               (result - i) = N.  us per round trip.
 *   mutex       (wl_mutex.c) A shared account, a double balance and a
 *               count of operations, guarded by one fibers::mutex: main's
 *               fiber launches 8 fibers, each making N / 8 deposits (at
 *               least 1) of sqrt(double(i)) * rate, computed outside the
 *               lock, under lock / unlock (balance += it, ops++), and joins
 *               them.  fibers::mutex is an owner and a wait queue under a
 *               spinlock: a fiber that finds it held suspends in the queue,
 *               and unlock frees it and readies the first waiter, which
 *               tries again when its scheduler runs it.  Launched from
 *               main's fiber, as the other non-latency workloads: the
 *               fibers reach the helper threads only by stealing.  Check:
 *               ops, 8 (N / 8).  ns per lock.
 *   sleepers    (wl_sleepers.c) main's fiber launches 10,000 fibers
 *               (fixed), each calling this_fiber::sleep_for(1 ms) N times
 *               and adding its count of completed sleeps to a shared
 *               std::atomic as it ends, and joins them.  A sleeping fiber
 *               is parked with its own stack, Boost.Fiber's default
 *               (fixedsize_stack, 128 KiB of address space, malloc'd when
 *               the fiber is made, as the top of this file says): 10,000
 *               of them fit (about 1.3 GB of address space, a few pages
 *               touched each), so no smaller stack is needed.  glibc maps
 *               each such block apart and unmaps it when its fiber ends:
 *               on the 2-vCPU guest where this was written a run cost
 *               about 1.2 s whatever N, on top of some 15 ms a round, most
 *               of it (two thirds of perf's samples) the TLB flushes of
 *               those 10,000 munmaps (pooled_fixedsize_stack was slower
 *               still).  They are in the timed region, as the making and
 *               freeing of weft's stacks are.  The
 *               fiber goes on its thread's sleep queue, and that thread's
 *               dispatcher readies it once due.  Launched from main's
 *               fiber, as the other non-latency workloads: the fibers reach
 *               the helper threads only by stealing.  With THREADS = 1 on
 *               a thread of its own with the default round_robin
 *               scheduler, as sleep and timeout (a lone work_stealing(1)
 *               scheduler never wakes a sleeping fiber).  Check: the
 *               sleeps completed, 10,000 N.  ms per round of sleeps
 *               (elapsed / N: 1 ms at best).
 *   (yield, ping-pong, sync-wait, mutex, sleepers and the -fp variants
 *               also report `cpu`: the process's CPU time, user + system,
 *               every thread, from getrusage (cpu.h) at the clock's two
 *               readings, per yield or lock in ns or per round trip or
 *               sleep in us: a scheduler that spins instead of suspending
 *               pays for it there.)
 *   idle        (wl_idle.c) A burst: main's fiber launches 10,000 fibers
 *               with async(launch::post) (each returns i + 1) and get()s
 *               them; then main's thread sleeps N ms
 *               (std::this_thread::sleep_for: its scheduler is not running,
 *               as weft's main is no worker) while the THREADS-1 helper
 *               schedulers have nothing to do: the process's CPU ms per
 *               second of that is the value.  Another burst; then main's
 *               fiber get()s the future of a fiber that sleeps N ms in
 *               this_fiber::sleep_for: CPU ms per second of that is the
 *               extra figure `wait`.  With THREADS = 1 that wait runs on a
 *               thread of its own with the default round_robin scheduler, as
 *               sleep does (a lone work_stealing(1) scheduler never wakes a
 *               sleeping fiber).  Check: 3 (both bursts' sums right, the
 *               fiber slept N ms).
 *   latency-yield, latency-cpu, latency-read  (wl_latency.c) A ticker
 *               fiber loops this_fiber::sleep_for(1 ms) until the window (N
 *               ms from the clock's start) ends, at least once, and records
 *               each wake-up's lateness (time asleep - 1 ms).  main's fiber
 *               waits until it has started (a fibers::future), then hands
 *               pool thread k the load fibers k, k + T, k + 2T...: thread
 *               k's main fiber launches and joins them (on_every_thread).
 *               The loads: latency-yield, 200 fibers each looping { 1 ms of
 *               arithmetic; this_fiber::yield(); } until the window ends
 *               (at least once); latency-cpu, THREADS fibers each computing
 *               N ms without a yield; latency-read, THREADS fibers each in a
 *               blocking read(2) of one byte on its own pipe (pipe2), into
 *               which a plain std::thread writes byte i + 1 at the window's
 *               end (clock_nanosleep, absolute).  The arithmetic is weft's:
 *               blocks of the sum of 1 / i^2 for i = 1..1000, each checked
 *               against the sum computed before the clock.  A sleeping
 *               fiber is readied only by its thread's dispatcher, itself a
 *               fiber of that thread's ready queue, run once per round of
 *               it; the woken fiber then goes to the queue's tail.  Beside
 *               its thread's share of the yielders (100 at T = 2) a ticker
 *               thus waits up to a round of slices to be readied and
 *               another to run; and while a cruncher or a reader holds
 *               its thread, until that fiber is done: Boost.Fiber neither
 *               preempts a fiber nor takes its thread back.  Measured as it is.  Figures as weft's: value, the
 *               worst lateness in ms; extras p50 and p99 in ms (nearest
 *               rank), ticks (% of N) and cpu (CPU ms per second from the
 *               clock's start to the ticker's join).  Check: load fibers
 *               whose work checked out (every block right and at least
 *               one; a reader got its own byte) + 1 for a ticker that woke
 *               and never early.  Every run ends by its clock: main's
 *               fiber waits for the ticker until 1 s after the load ended
 *               (or after the window, were it sooner), then exits 1 with
 *               the reason on stderr (std::_Exit: a sleeping fiber can be
 *               neither cancelled nor left behind, its scheduler would wait
 *               for it at exit).  With THREADS = 1 on a thread of its own
 *               with the default round_robin scheduler, as sleep and
 *               timeout.
 *   timeout     P = 500 fiber pairs (P = N when N < 500) pass N messages
 *               (N / P per pair, the first N % P pairs one more) through
 *               two buffered_channel<uint64_t>s per pair, A -> B and B -> A,
 *               of capacity 2, Boost's smallest (it holds one value, as
 *               weft's capacity-1 channel does): message k goes from A if k
 *               is even, from B if odd, and carries k + 1; every receive is
 *               pop_wait_for(v, 1 s), which arms a deadline (the fiber goes
 *               on its scheduler's sleep queue) only when the channel is
 *               empty, as weft_chan_recv_for does.  The fibers are launched
 *               from main's fiber and spread by stealing (with THREADS = 1,
 *               from a round_robin thread: work_stealing(1) never ends a
 *               timed wait when nothing else is ready, see measure()); any
 *               status but success fails the run.  Check: messages received
 *               with the expected value (N).  ns per message.
 */
#include <boost/fiber/all.hpp>

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "cpu.h"
#include "fp.h"
#include "peer.h"

namespace fibers = boost::fibers;

namespace {

constexpr uint64_t skynet_div = 10;
constexpr int yield_fibers = 1000;
constexpr uint64_t timeout_pairs = 500;

// Set by a measurement that failed (it says why on stderr).
bool run_failed = false;

// A one-use thread barrier (C++17 has none): blocks threads, not fibers.
class thread_barrier {
public:
    explicit thread_barrier(unsigned n) : left_(n) {}
    void arrive_and_wait()
    {
        std::unique_lock<std::mutex> lk(mu_);
        if (--left_ == 0)
            cv_.notify_all();
        else
            cv_.wait(lk, [this] { return left_ == 0; });
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    unsigned left_;
};

// What the helper threads' main fibers wait for: a job to run on their
// thread (on_every_thread) or the end of the run.
fibers::mutex pool_mu;
fibers::condition_variable pool_cv;
bool end_flag = false;
uint64_t job_seq = 0;                     // jobs posted so far
std::function<void(unsigned)> pool_job;   // the latest, fn(thread index)
unsigned job_left = 0;                    // helpers still running it

bool suspend_when_idle()
{
    const char *s = std::getenv("BENCH_BOOST_FIBER_SUSPEND");
    return s == nullptr || std::strcmp(s, "0") != 0;
}

void helper(unsigned index, unsigned threads, bool suspend,
            thread_barrier *ready)
{
    fibers::use_scheduling_algorithm<fibers::algo::work_stealing>(threads, suspend);
    ready->arrive_and_wait();
    uint64_t seen = 0;
    std::unique_lock<fibers::mutex> lk(pool_mu);
    for (;;) {
        pool_cv.wait(lk, [&seen] { return end_flag || job_seq != seen; });
        // on_every_thread waits for every helper before it returns, so
        // the end never overtakes a job.
        if (end_flag)
            return;
        seen = job_seq;
        const std::function<void(unsigned)> fn = pool_job;
        lk.unlock();
        fn(index);
        lk.lock();
        if (--job_left == 0)
            pool_cv.notify_all();
    }
}

// Runs fn(k) in the main fiber of each pool thread k (0 is the caller's,
// main's; threads = 1 runs fn(0) alone, on any thread) and returns once
// every call has: the fibers fn(k) launches start on thread k, where
// fibers launched from main's fiber alone would mostly stay on main's
// thread (helpers asleep are not woken to steal: the top of this file).
void on_every_thread(unsigned threads, const std::function<void(unsigned)> &fn)
{
    {
        std::unique_lock<fibers::mutex> lk(pool_mu);
        pool_job = fn;
        job_left = threads - 1;
        job_seq++;
    }
    pool_cv.notify_all();
    fn(0);
    std::unique_lock<fibers::mutex> lk(pool_mu);
    pool_cv.wait(lk, [] { return job_left == 0; });
    pool_job = nullptr; // what it captured may not outlive this call
}

uint64_t skynet(uint64_t num, uint64_t size)
{
    if (size == 1)
        return num;
    const uint64_t child = size / skynet_div;
    std::array<fibers::future<uint64_t>, skynet_div> f;
    for (uint64_t i = 0; i < skynet_div; i++)
        f[i] = fibers::async(fibers::launch::post, skynet, num + i * child, child);
    uint64_t sum = 0;
    for (auto &r : f)
        sum += r.get();
    return sum;
}

uint64_t fib(uint64_t n)
{
    if (n < 2)
        return n;
    fibers::future<uint64_t> x = fibers::async(fibers::launch::post, fib, n - 1);
    const uint64_t y = fib(n - 2);
    return x.get() + y;
}

using u64_channel = fibers::buffered_channel<uint64_t>;

// One fiber of a timeout pair: msgs messages, sending message k when
// k % 2 == parity; adds the messages received with the expected value to
// *ok, and sets *timed_out on a receive that did not succeed.
void timeout_side(u64_channel *in, u64_channel *out, uint64_t msgs,
                  uint64_t parity, std::atomic<uint64_t> *ok,
                  std::atomic<bool> *timed_out)
{
    uint64_t good = 0;

    for (uint64_t k = 0; k < msgs; k++) {
        if (k % 2 == parity) {
            out->push(k + 1);
            continue;
        }
        uint64_t v;
        if (in->pop_wait_for(v, std::chrono::seconds(1)) !=
            fibers::channel_op_status::success) {
            timed_out->store(true);
            break;
        }
        good += v == k + 1;
    }
    ok->fetch_add(good);
}

// The timeout workload, from a fiber of the calling thread: sets *value
// and *check, or run_failed.
void timeout_run(uint64_t n, double *value, uint64_t *check)
{
    const uint64_t pairs = n < timeout_pairs ? n : timeout_pairs;
    std::vector<std::unique_ptr<u64_channel>> chans;
    for (uint64_t i = 0; i < 2 * pairs; i++)
        chans.push_back(std::make_unique<u64_channel>(2));
    std::vector<fibers::fiber> fs;
    fs.reserve(2 * pairs);
    std::atomic<uint64_t> ok{0};
    std::atomic<bool> timed_out{false};
    const uint64_t t0 = bench_now_ns();
    for (uint64_t j = 0; j < pairs; j++) {
        const uint64_t msgs = n / pairs + (j < n % pairs ? 1 : 0);
        u64_channel *ab = chans[2 * j].get(), *ba = chans[2 * j + 1].get();
        fs.emplace_back(timeout_side, ba, ab, msgs, 0, &ok, &timed_out);
        fs.emplace_back(timeout_side, ab, ba, msgs, 1, &ok, &timed_out);
    }
    for (auto &f : fs)
        f.join();
    const uint64_t t1 = bench_now_ns();
    if (timed_out.load()) {
        std::fprintf(stderr, "peer-boost-fiber: timeout: a receive timed out\n");
        run_failed = true;
    }
    *check = ok.load();
    *value = double(t1 - t0) / double(n);
}

bool is_power_of_10(uint64_t n)
{
    while (n > 1 && n % 10 == 0)
        n /= 10;
    return n == 1;
}

// One yield-fp fiber's loop: fp and clear are constants in each caller,
// so yield's loop is exactly the plain one.
template <bool fp, bool clear>
uint64_t yield_loop(uint64_t n)
{
    uint64_t c = 0;
    for (uint64_t j = 0; j < n; j++) {
        if (fp) {
            bench_fp_raise();
            if (clear)
                bench_fp_clear();
        }
        boost::this_fiber::yield();
        c++;
    }
    return c;
}

// ping-pong's two sides; fp: ping-pong-fp (A raises, B raises and clears).
template <bool fp>
void pp_b(u64_channel *ping, u64_channel *pong, uint64_t n)
{
    uint64_t v;
    for (uint64_t i = 0; i < n; i++) {
        ping->pop(v);
        if (fp) {
            bench_fp_raise();
            bench_fp_clear();
        }
        pong->push(v + 1);
    }
}

template <bool fp>
uint64_t pp_a(u64_channel *ping, u64_channel *pong, uint64_t n)
{
    uint64_t v = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (fp)
            bench_fp_raise();
        ping->push(v + 1);
        pong->pop(v);
    }
    return v;
}

// mutex's account: balance and ops are guarded by mu.
constexpr int mutex_fibers = 8;
// The interest rate; any value: only the multiplication's cost matters.
constexpr double mutex_rate = 1e-6;

struct account {
    fibers::mutex mu;
    double balance = 0.0;
    uint64_t ops = 0;
};

// Deposits per fiber: n / 8, at least 1 (as every implementation).
uint64_t mutex_per_fiber(uint64_t n)
{
    return n / mutex_fibers > 0 ? n / mutex_fibers : 1;
}

void mutex_deposits(account *acc, uint64_t per)
{
    for (uint64_t i = 0; i < per; i++) {
        const double interest = std::sqrt(double(i)) * mutex_rate;
        std::lock_guard<fibers::mutex> lk(acc->mu);
        acc->balance += interest;
        acc->ops++;
    }
}

constexpr int sleepers_fibers = 10000;

// The sleepers workload, from a fiber of the calling thread: sets *value,
// *check and extra[0] (cpu).
void sleepers_run(uint64_t n, double *value, uint64_t *check, double *extra)
{
    std::atomic<uint64_t> sleeps{0};
    std::vector<fibers::fiber> fs;
    fs.reserve(sleepers_fibers);
    const uint64_t cpu0 = bench_cpu_ns();
    const uint64_t t0 = bench_now_ns();
    for (int k = 0; k < sleepers_fibers; k++)
        fs.emplace_back([&sleeps, n] {
            uint64_t c = 0;
            for (uint64_t i = 0; i < n; i++) {
                boost::this_fiber::sleep_for(std::chrono::milliseconds(1));
                c++;
            }
            sleeps.fetch_add(c, std::memory_order_relaxed);
        });
    for (auto &f : fs)
        f.join();
    const uint64_t t1 = bench_now_ns();
    const uint64_t cpu1 = bench_cpu_ns();
    *check = sleeps.load();
    *value = double(t1 - t0) / 1e6 / double(n);
    extra[0] = double(cpu1 - cpu0) / 1e3 / (double(sleepers_fibers) * double(n));
}

constexpr uint64_t idle_burst = 10000;

// idle's burst from main's fiber: 1 if the sum is right.
uint64_t idle_burst_run()
{
    std::vector<fibers::future<uint64_t>> futs;
    futs.reserve(idle_burst);
    for (uint64_t i = 0; i < idle_burst; i++)
        futs.push_back(fibers::async(fibers::launch::post,
                                     [i] { return i + 1; }));
    uint64_t sum = 0;
    for (auto &f : futs)
        sum += f.get();
    return sum == idle_burst * (idle_burst + 1) / 2 ? 1 : 0;
}

// idle's waited fiber, from a fiber: 1 if it slept ns or more.
uint64_t idle_sleeper_wait(uint64_t ns)
{
    return fibers::async(fibers::launch::post, [ns] {
               const uint64_t t0 = bench_now_ns();
               boost::this_fiber::sleep_for(std::chrono::nanoseconds(ns));
               return uint64_t(bench_now_ns() - t0 >= ns ? 1 : 0);
           }).get();
}

double cpu_ms_per_s(uint64_t cpu0, uint64_t cpu1, uint64_t t0, uint64_t t1)
{
    return t1 > t0 ? double(cpu1 - cpu0) / 1e6 / (double(t1 - t0) / 1e9) : 0.0;
}

// ---- latency-yield, latency-cpu, latency-read (wl_latency.c) ----

constexpr uint64_t tick_ns = 1000000;     // the ticker's sleep, a yield's slice
constexpr unsigned latency_yielders = 200;
constexpr unsigned basel_terms = 1000;    // terms per block of arithmetic
// How long main's fiber waits for the ticker once the load has ended.
constexpr auto ticker_grace = std::chrono::seconds(1);

enum class latency_load { yield, cpu, read };

// One block of arithmetic: the sum of 1 / i^2 for i = 1..terms.  Not
// inlined, and its argument read from memory at every call, so that the
// compiler cannot fold the blocks of a slice into one.
__attribute__((noinline)) double basel_block(unsigned terms)
{
    double sum = 0.0;
    for (unsigned i = 1; i <= terms; i++) {
        const double x = double(i);
        sum += 1.0 / (x * x);
    }
    return sum;
}

// One fiber of the load; read by main's fiber after the join.
struct latency_loader {
    int fd = -1;            // latency-read: its pipe's read end
    uint64_t blocks = 0;    // blocks of arithmetic done
    uint64_t wrong = 0;     // blocks whose sum was not the reference's
    bool ok = false;        // its work checked out
};

struct latency_state {
    latency_load load;
    uint64_t window_ns, end_ns;
    unsigned terms = basel_terms;   // read by each block from here
    double block_sum;               // what one block computes
    std::vector<latency_loader> loaders;
    std::vector<std::array<int, 2>> pipes;
    bool write_failed = false;      // by the writer, read after its join

    // The ticker's, read by main's fiber once the ticker is done.
    std::vector<uint64_t> late_ns;  // each wake-up's lateness, in order
    size_t tick_cap;
    uint64_t early = 0;             // sleeps that returned before 1 ms

    ~latency_state()
    {
        for (auto &p : pipes)
            for (int fd : p)
                if (fd >= 0)
                    close(fd);
    }
};

// Computes blocks until ns have passed since start; at least one.
void crunch_until(latency_state *r, latency_loader *l, uint64_t start,
                  uint64_t ns)
{
    do {
        const double sum = basel_block(r->terms);
        l->blocks++;
        l->wrong += sum != r->block_sum;
    } while (bench_now_ns() - start < ns);
}

void latency_ticker(latency_state *r, fibers::promise<void> *started,
                    fibers::promise<void> *done)
{
    started->set_value();
    do {
        const uint64_t s = bench_now_ns();
        boost::this_fiber::sleep_for(std::chrono::nanoseconds(tick_ns));
        const uint64_t slept = bench_now_ns() - s;
        if (slept < tick_ns)
            r->early++;
        else
            r->late_ns.push_back(slept - tick_ns);
    } while (bench_now_ns() < r->end_ns && r->late_ns.size() < r->tick_cap);
    done->set_value();
}

// The byte the writer puts into pipe i.
unsigned char pipe_byte(size_t i)
{
    return (unsigned char)(i + 1);
}

// One fiber of the load, by kind.
void latency_loader_body(latency_state *r, size_t i)
{
    latency_loader *l = &r->loaders[i];

    switch (r->load) {
    case latency_load::yield:
        do {
            crunch_until(r, l, bench_now_ns(), tick_ns);
            boost::this_fiber::yield();
        } while (bench_now_ns() < r->end_ns);
        l->ok = l->blocks > 0 && l->wrong == 0;
        break;
    case latency_load::cpu:
        crunch_until(r, l, bench_now_ns(), r->window_ns);
        l->ok = l->blocks > 0 && l->wrong == 0;
        break;
    case latency_load::read: {
        unsigned char byte = 0;
        ssize_t n;
        do
            n = read(l->fd, &byte, 1);
        while (n < 0 && errno == EINTR);
        l->ok = n == 1 && byte == pipe_byte(i);
        break;
    }
    }
}

// latency-read's plain thread: at the window's end, one byte into each pipe.
void latency_writer(latency_state *r)
{
    const struct timespec at = { time_t(r->end_ns / 1000000000u),
                                 long(r->end_ns % 1000000000u) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr) == EINTR)
        ;
    for (size_t i = 0; i < r->pipes.size(); i++) {
        const unsigned char byte = pipe_byte(i);
        ssize_t n;
        do
            n = write(r->pipes[i][1], &byte, 1);
        while (n < 0 && errno == EINTR);
        if (n != 1) {
            // Its reader then reads end of file instead of waiting on.
            r->write_failed = true;
            close(r->pipes[i][1]);
            r->pipes[i][1] = -1;
        }
    }
}

// The ceil(pct n / 100)-th smallest of sorted (n > 0), in ms.
double percentile_ms(const std::vector<uint64_t> &sorted, unsigned pct)
{
    const size_t rank = (sorted.size() * pct + 99) / 100;
    return double(sorted[rank > 0 ? rank - 1 : 0]) / 1e6;
}

// One latency measurement from a fiber of pool thread 0 (the top of this
// file says how): sets *value, *check and the four extras; false (said on
// stderr) if it failed.
bool latency_run(latency_load load, uint64_t n, unsigned threads,
                 double *value, uint64_t *check, double *extra)
{
    static const char *const name[] = { "latency-yield", "latency-cpu",
                                        "latency-read" };
    const char *w = name[int(load)];
    latency_state r;

    r.load = load;
    r.window_ns = n * 1000000u;
    r.loaders.resize(load == latency_load::yield ? latency_yielders : threads);
    // Every wake-up takes at least 1 ms: at most N of them end inside the
    // window, and the last one may end after it.
    r.tick_cap = size_t(n) + 1;
    r.late_ns.reserve(r.tick_cap);
    r.block_sum = basel_block(r.terms);
    if (load == latency_load::read) {
        r.pipes.assign(r.loaders.size(), { -1, -1 });
        for (size_t i = 0; i < r.pipes.size(); i++) {
            if (pipe2(r.pipes[i].data(), O_CLOEXEC) != 0) {
                std::fprintf(stderr, "peer-boost-fiber: %s: pipe2: %s\n", w,
                             std::strerror(errno));
                return false;
            }
            r.loaders[i].fd = r.pipes[i][0];
        }
    }

    fibers::promise<void> started, done;
    fibers::future<void> started_f = started.get_future();
    fibers::future<void> done_f = done.get_future();
    const uint64_t cpu0 = bench_cpu_ns();
    const uint64_t t0 = bench_now_ns();
    r.end_ns = t0 + r.window_ns;
    fibers::fiber ticker(latency_ticker, &r, &started, &done);
    started_f.get();

    // Readers only with a writer: without one they would block for ever.
    std::thread writer;
    if (load == latency_load::read) {
        try {
            writer = std::thread(latency_writer, &r);
        } catch (const std::system_error &e) {
            std::fprintf(stderr, "peer-boost-fiber: %s: writer thread: %s\n",
                         w, e.what());
        }
    }
    if (load != latency_load::read || writer.joinable()) {
        // Loader i starts on thread i mod T (on_every_thread says why).
        on_every_thread(threads, [&r, threads](unsigned k) {
            std::vector<fibers::fiber> fs;
            for (size_t i = k; i < r.loaders.size(); i += threads)
                fs.emplace_back(latency_loader_body, &r, i);
            for (auto &f : fs)
                f.join();
        });
    }
    // 1 s after the load ended, or after the window if no load ran: the
    // ticker's last sleep was due by the later of the two.
    const uint64_t now = bench_now_ns();
    const auto grace = ticker_grace + std::chrono::nanoseconds(
                           r.end_ns > now ? r.end_ns - now : 0);
    if (done_f.wait_for(grace) == fibers::future_status::timeout) {
        std::fprintf(stderr, "peer-boost-fiber: %s: the ticker was still "
                             "asleep 1 s after the load ended\n", w);
        std::fflush(stderr);
        std::_Exit(PEER_EXIT_FAILED);
    }
    ticker.join();
    const uint64_t t1 = bench_now_ns(), cpu1 = bench_cpu_ns();
    if (writer.joinable())
        writer.join();
    else if (load == latency_load::read)
        return false;
    if (r.write_failed) {
        std::fprintf(stderr, "peer-boost-fiber: %s: a write to a pipe failed\n", w);
        return false;
    }

    uint64_t ok = 0;
    for (const auto &l : r.loaders)
        ok += l.ok;
    std::vector<uint64_t> &late = r.late_ns;
    std::sort(late.begin(), late.end());
    *check = ok + (!late.empty() && r.early == 0);
    *value = late.empty() ? 0 : double(late.back()) / 1e6;
    extra[0] = late.empty() ? 0 : percentile_ms(late, 50);
    extra[1] = late.empty() ? 0 : percentile_ms(late, 99);
    extra[2] = 100.0 * double(late.size()) / double(n);
    extra[3] = cpu_ms_per_s(cpu0, cpu1, t0, t1);
    return true;
}

// One measurement in main's fiber (timeout on one thread: see there): sets
// *value, *check and the workload's extra figures (*nextra of them); false
// = n/a.
bool measure(const char *w, uint64_t n, unsigned threads, double *value,
             uint64_t *check, double *extra, int *nextra)
{
    uint64_t t0, t1, sum = 0, cpu0 = 0, cpu1 = 0;
    const bool fp_variant = std::strcmp(w, "yield-fp") == 0 ||
                            std::strcmp(w, "ping-pong-fp") == 0;

    if (std::strcmp(w, "spawn-join") == 0) {
        std::vector<fibers::future<uint64_t>> futs;
        futs.reserve(n);
        t0 = bench_now_ns();
        for (uint64_t i = 0; i < n; i++)
            futs.push_back(fibers::async(fibers::launch::post,
                                         [i] { return i + 1; }));
        for (auto &f : futs)
            sum += f.get();
        t1 = bench_now_ns();
        *value = double(t1 - t0) / 1e6;
    } else if (std::strcmp(w, "skynet") == 0) {
        t0 = bench_now_ns();
        sum = skynet(0, n);
        t1 = bench_now_ns();
        *value = double(t1 - t0) / 1e6;
    } else if (std::strcmp(w, "fib") == 0) {
        t0 = bench_now_ns();
        sum = fib(n);
        t1 = bench_now_ns();
        *value = double(t1 - t0) / 1e6;
    } else if (std::strcmp(w, "yield") == 0 || std::strcmp(w, "yield-fp") == 0) {
        std::vector<uint64_t> counts(yield_fibers);
        std::vector<fibers::fiber> fs;
        fs.reserve(yield_fibers);
        cpu0 = bench_cpu_ns();
        t0 = bench_now_ns();
        for (int k = 0; k < yield_fibers; k++)
            fs.emplace_back([&counts, k, n, fp_variant] {
                counts[size_t(k)] = !fp_variant ? yield_loop<false, false>(n)
                                    : k % 2    ? yield_loop<true, true>(n)
                                               : yield_loop<true, false>(n);
            });
        for (auto &f : fs)
            f.join();
        t1 = bench_now_ns();
        cpu1 = bench_cpu_ns();
        for (uint64_t c : counts)
            sum += c;
        const double ops = double(yield_fibers) * double(n);
        *value = double(t1 - t0) / ops;
        extra[0] = double(cpu1 - cpu0) / ops;
        *nextra = 1;
    } else if (std::strcmp(w, "ping-pong") == 0 ||
               std::strcmp(w, "ping-pong-fp") == 0) {
        u64_channel ping{2}, pong{2};
        uint64_t token = 0;
        fibers::fiber b([&ping, &pong, n, fp_variant] {
            if (fp_variant)
                pp_b<true>(&ping, &pong, n);
            else
                pp_b<false>(&ping, &pong, n);
        });
        fibers::fiber a([&ping, &pong, &token, &t0, &t1, &cpu0, &cpu1, n,
                         fp_variant] {
            cpu0 = bench_cpu_ns();
            t0 = bench_now_ns();
            token = fp_variant ? pp_a<true>(&ping, &pong, n)
                               : pp_a<false>(&ping, &pong, n);
            t1 = bench_now_ns();
            cpu1 = bench_cpu_ns();
        });
        a.join();
        b.join();
        sum = token;
        *value = double(t1 - t0) / 1e3 / double(n);
        extra[0] = double(cpu1 - cpu0) / 1e3 / double(n);
        *nextra = 1;
    } else if (std::strcmp(w, "mutex") == 0) {
        account acc;
        const uint64_t per = mutex_per_fiber(n);
        std::vector<fibers::fiber> fs;
        fs.reserve(mutex_fibers);
        cpu0 = bench_cpu_ns();
        t0 = bench_now_ns();
        for (int k = 0; k < mutex_fibers; k++)
            fs.emplace_back(mutex_deposits, &acc, per);
        for (auto &f : fs)
            f.join();
        t1 = bench_now_ns();
        cpu1 = bench_cpu_ns();
        sum = acc.ops;
        const double ops = double(mutex_fibers) * double(per);
        *value = double(t1 - t0) / ops;
        extra[0] = double(cpu1 - cpu0) / ops;
        *nextra = 1;
    } else if (std::strcmp(w, "sleepers") == 0) {
        /* T = 1 on a thread of its own with round_robin, as sleep and
         * timeout: a lone work_stealing(1) scheduler never wakes a
         * sleeping fiber. */
        if (threads > 1)
            sleepers_run(n, value, check, extra);
        else
            std::thread([n, value, check, extra] {
                fibers::fiber([n, value, check, extra] {
                    sleepers_run(n, value, check, extra);
                }).join();
            }).join();
        *nextra = 1;
        return true;
    } else if (std::strcmp(w, "sleep") == 0) {
        /* Total lateness of n 1 ms sleeps, and how many were not early.
         * On a thread of its own, with Boost.Fiber's default round_robin
         * scheduler: a lone work_stealing(1) scheduler (Boost 1.74) never
         * wakes a sleeping fiber (found hanging here). */
        uint64_t late = 0;
        std::thread([&late, &sum, n] {
            fibers::fiber f([&late, &sum, n] {
                for (uint64_t i = 0; i < n; i++) {
                    uint64_t s0 = bench_now_ns();
                    boost::this_fiber::sleep_for(std::chrono::milliseconds(1));
                    uint64_t slept = bench_now_ns() - s0;
                    if (slept >= 1000000u) {
                        late += slept - 1000000u;
                        sum++;
                    }
                }
            });
            f.join();
        }).join();
        *value = sum ? double(late) / 1e3 / double(sum) : 0;
        *check = sum;
        return true;
    } else if (std::strcmp(w, "timeout") == 0) {
        /* On one thread, a fiber of a lone work_stealing(1) scheduler that
         * waits with a deadline while nothing else is ready never wakes
         * (Boost 1.74: pick_next, its own queue empty, loops for ever
         * drawing a victim other than itself among one scheduler, so the
         * dispatcher never reaches its sleep queue; found hanging with a
         * 10 ms pop_wait_for).  The runs that succeed never leave the
         * queue empty (a push readies the partner before the pusher
         * waits), but a receive that should time out would hang instead of
         * failing the run: so T = 1 runs on a thread of its own with the
         * default round_robin scheduler, as sleep does. */
        if (threads > 1)
            timeout_run(n, value, check);
        else
            std::thread([n, value, check] { timeout_run(n, value, check); }).join();
        return true;
    } else if (std::strncmp(w, "latency-", 8) == 0) {
        const latency_load load = std::strcmp(w, "latency-yield") == 0
                                      ? latency_load::yield
                                  : std::strcmp(w, "latency-cpu") == 0
                                      ? latency_load::cpu
                                      : latency_load::read;
        bool ok = false;
        /* T = 1 on a thread of its own with round_robin, as sleep and
         * timeout: main's fiber waits for the ticker with a deadline, and
         * a lone work_stealing(1) scheduler with nothing else ready would
         * never wake it, nor the ticker. */
        if (threads > 1)
            ok = latency_run(load, n, threads, value, check, extra);
        else
            std::thread([&ok, load, n, value, check, extra] {
                ok = latency_run(load, n, 1, value, check, extra);
            }).join();
        run_failed |= !ok;
        *nextra = 4;
        return true;
    } else if (std::strcmp(w, "sync-wait") == 0) {
        cpu0 = bench_cpu_ns();
        t0 = bench_now_ns();
        for (uint64_t i = 0; i < n; i++)
            sum += fibers::async(fibers::launch::post,
                                 [i] { return i + 1; }).get() - i;
        t1 = bench_now_ns();
        cpu1 = bench_cpu_ns();
        *value = double(t1 - t0) / 1e3 / double(n);
        extra[0] = double(cpu1 - cpu0) / 1e3 / double(n);
        *nextra = 1;
    } else if (std::strcmp(w, "idle") == 0) {
        const uint64_t ns = n * 1000000u;
        sum = idle_burst_run();
        cpu0 = bench_cpu_ns();
        t0 = bench_now_ns();
        std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
        t1 = bench_now_ns();
        cpu1 = bench_cpu_ns();
        sum += idle_burst_run();
        const uint64_t cpu2 = bench_cpu_ns(), t2 = bench_now_ns();
        if (threads > 1) {
            sum += idle_sleeper_wait(ns);
        } else {
            uint64_t slept = 0;
            std::thread([&slept, ns] {
                fibers::fiber([&slept, ns] { slept = idle_sleeper_wait(ns); }).join();
            }).join();
            sum += slept;
        }
        const uint64_t t3 = bench_now_ns(), cpu3 = bench_cpu_ns();
        *value = cpu_ms_per_s(cpu0, cpu1, t0, t1);
        extra[0] = cpu_ms_per_s(cpu2, cpu3, t2, t3);
        *nextra = 1;
    } else {
        return false;
    }
    *check = sum;
    return true;
}

} // namespace

int main(int argc, char **argv)
{
    peer_args a;

    peer_parse_args(argc, argv, &a);
    const char *w = a.workload;
    static const char *const known[] = { "spawn-join", "skynet", "fib",
                                         "yield", "yield-fp", "ping-pong",
                                         "ping-pong-fp", "sync-wait", "sleep",
                                         "timeout", "mutex", "sleepers",
                                         "idle", "latency-yield",
                                         "latency-cpu", "latency-read" };
    bool ok = false;
    for (const char *k : known)
        ok |= std::strcmp(w, k) == 0;
    if (!ok) {
        std::fprintf(stderr, "peer-boost-fiber: no workload '%s'\n", w);
        return PEER_EXIT_UNKNOWN_WORKLOAD;
    }
    if (std::strcmp(w, "skynet") == 0 && !is_power_of_10(a.n)) {
        std::fprintf(stderr, "peer-boost-fiber: skynet needs a power of 10 leaves\n");
        return PEER_EXIT_FAILED;
    }
    if (std::strcmp(w, "fib") == 0 && a.n > 90) {
        std::fprintf(stderr, "peer-boost-fiber: fib(%" PRIu64 ") overflows\n", a.n);
        return PEER_EXIT_FAILED;
    }

    // The pool: main and THREADS-1 helpers, all registered before any
    // fiber is launched.
    const bool suspend = suspend_when_idle();
    thread_barrier ready(a.threads);
    std::vector<std::thread> helpers;
    for (unsigned i = 1; i < a.threads; i++)
        helpers.emplace_back(helper, i, a.threads, suspend, &ready);
    fibers::use_scheduling_algorithm<fibers::algo::work_stealing>(a.threads, suspend);
    ready.arrive_and_wait();

    double value = 0.0, extra[4] = {0.0, 0.0, 0.0, 0.0};
    uint64_t check = 0;
    int nextra = 0;
    measure(w, a.n, a.threads, &value, &check, extra, &nextra);

    {
        std::unique_lock<fibers::mutex> lk(pool_mu);
        end_flag = true;
    }
    pool_cv.notify_all();
    for (auto &t : helpers)
        t.join();

    if (run_failed)
        return PEER_EXIT_FAILED;
    peer_report_extra(value, check, extra, nextra);
    return 0;
}
