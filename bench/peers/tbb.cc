/*
 * tbb.cc — peer-tbb: oneTBB tasks (tbb::task_group in a tbb::task_arena).
 *
 * oneTBB is stackless: a task is a function object run to completion, and a
 * waiting tbb::task_group::wait() does not suspend but runs other tasks on
 * the waiting thread's stack.  That is what makes its fork-join fast, and
 * what weft's inline awaits imitate.
 *
 * Fork-join workloads run inside `task_arena arena(THREADS)`: THREADS slots,
 * one of them reserved for the thread that calls arena.execute (main), so
 * THREADS threads in all do the work, as THREADS weft workers do while main
 * sleeps in weft_sync_wait.  The arena's worker threads are started and
 * warmed by one small parallel_for before the clock starts, as weft's pool
 * is created first.  The clock runs inside arena.execute.
 *
 *   spawn-join  from inside the arena, N tg.run() of a task that stores
 *               i + 1 in slot i (array allocated before the clock), one
 *               tg.wait(), sum (N(N+1)/2).  TBB has no per-task handle; the
 *               slot plays the handle's part.  ms per run.
 *   skynet      skynet(num, size): size 1 returns num; else a task_group
 *               runs 10 children skynet(num + i*size/10, size/10), each
 *               writing its slot of the parent's array, wait, sum.  N leaves
 *               (a power of 10); check N(N-1)/2.  ms per run.
 *   fib         fib(n) = n < 2 ? n : tg.run(fib(n-1)), fib(n-2) inline,
 *               tg.wait(), sum: the same shape as every implementation.
 *               N is the argument; check fib(N).  ms per run.
 *   sync-wait   N rounds: main (a plain thread, outside the arena) hands a
 *               job to the arena's workers with arena.enqueue and blocks on
 *               a std::future until the job has fulfilled its std::promise
 *               with i + 1.  The arena here is task_arena(THREADS, 0): no
 *               slot for main, THREADS workers.  (arena.execute would not do:
 *               it makes main join the arena and, with a free slot, run the
 *               job itself, so nothing would cross threads.)  Check: sum of
 *               (result - i) = N.  us per round trip.  Extra figure `cpu`:
 *               the process's CPU time (user + system, every thread:
 *               getrusage, cpu.h) over the same loop, us per round trip:
 *               TBB's workers spin a while before they sleep, and pay for
 *               it there.
 *   idle        (wl_idle.c) The same arena, task_arena(THREADS, 0), warmed
 *               as above.  A burst: main enqueues one job that runs 10,000
 *               tasks (tg.run, each storing i + 1 in its slot) and waits
 *               for them, and blocks on its std::future; then main sleeps N
 *               ms (nanosleep) outside the arena, the workers with nothing
 *               to do: the process's CPU ms per second of that sleep is the
 *               value.  Another burst; then main enqueues a job that sleeps
 *               N ms (std::this_thread::sleep_for: TBB has no task sleep, so
 *               it blocks its worker thread, which costs no CPU) and blocks
 *               on its future: CPU ms per second of that is the extra
 *               figure `wait`.  Check: 3 (both bursts' sums right, the job
 *               slept N ms).
 *   mutex       (wl_mutex.c) A shared account, a double balance and a
 *               count of operations, guarded by one std::mutex: inside the
 *               arena (THREADS slots, one for main, as the fork-join
 *               workloads), a task_group runs 8 tasks, each making N / 8
 *               deposits (at least 1) of sqrt(double(i)) * rate, computed
 *               outside the lock, under lock / unlock (balance += it,
 *               ops++); main's tg.wait() runs tasks meanwhile.  A task
 *               that finds the mutex held blocks its thread (glibc's
 *               mutex: a futex wait): a TBB task cannot give its thread up,
 *               so each thread works through its tasks one after the
 *               other.  Check: ops, 8 (N / 8).  ns per lock.  Extra
 *               figure `cpu`: the process's CPU time over the same region,
 *               ns per lock.
 *   yield, ping-pong, yield-fp, ping-pong-fp  n/a: a TBB task cannot
 *               give up its thread and be resumed later except through the
 *               resumable-task extension (tbb::task::suspend), which is not
 *               the task model TBB code is written in.
 *   latency-yield, latency-cpu, latency-read  n/a: a 1 ms ticker needs a
 *               task that sleeps without holding its thread, which TBB has
 *               not (see yield).
 */
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <sys/resource.h>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "cpu.h"
#include "peer.h"
#include "rss.h"

namespace {

constexpr uint64_t skynet_div = 10;

uint64_t skynet(uint64_t num, uint64_t size)
{
    if (size == 1)
        return num;
    uint64_t r[skynet_div];
    const uint64_t child = size / skynet_div;
    tbb::task_group tg;
    for (uint64_t i = 0; i < skynet_div; i++)
        tg.run([&r, i, num, child] { r[i] = skynet(num + i * child, child); });
    tg.wait();
    uint64_t sum = 0;
    for (uint64_t v : r)
        sum += v;
    return sum;
}

uint64_t fib(uint64_t n)
{
    if (n < 2)
        return n;
    uint64_t x = 0;
    tbb::task_group tg;
    tg.run([&x, n] { x = fib(n - 1); });
    const uint64_t y = fib(n - 2);
    tg.wait();
    return x + y;
}

bool is_power_of_10(uint64_t n)
{
    while (n > 1 && n % 10 == 0)
        n /= 10;
    return n == 1;
}

// Starts the arena's workers before the clock does.
void warm(tbb::task_arena &arena)
{
    std::atomic<uint64_t> sink{0};
    arena.execute([&sink] {
        tbb::parallel_for(0, 10000, [&sink](int i) {
            sink.fetch_add(uint64_t(i), std::memory_order_relaxed);
        });
    });
}

// Runs body inside a THREADS-slot arena (one slot for main) and reports.
template <class Body>
int fork_join(unsigned threads, double divisor, Body body)
{
    tbb::task_arena arena{int(threads)};
    arena.initialize();
    warm(arena);
    uint64_t check = 0, t0 = 0, t1 = 0;
    arena.execute([&] {
        t0 = bench_now_ns();
        check = body();
        t1 = bench_now_ns();
    });
    peer_report(double(t1 - t0) / divisor, check);
    return 0;
}

// The job owns its promise: main must not destroy a promise while the
// worker may still be inside its set_value.  TBB calls a const functor.
struct sync_job {
    mutable std::promise<uint64_t> done;
    uint64_t i;
    void operator()() const { done.set_value(i + 1); }
};

int run_sync_wait(unsigned threads, uint64_t n)
{
    tbb::task_arena arena{int(threads), 0};
    arena.initialize();
    warm(arena);

    uint64_t sum = 0;
    const uint64_t cpu0 = bench_cpu_ns();
    const uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        std::promise<uint64_t> done;
        std::future<uint64_t> result = done.get_future();
        arena.enqueue(sync_job{std::move(done), i});
        sum += result.get() - i;
    }
    const uint64_t t1 = bench_now_ns();
    const uint64_t cpu1 = bench_cpu_ns();
    const double cpu = double(cpu1 - cpu0) / 1e3 / double(n);
    peer_report_extra(double(t1 - t0) / 1e3 / double(n), sum, &cpu, 1);
    return 0;
}

constexpr int mutex_tasks = 8;
// The interest rate; any value: only the multiplication's cost matters.
constexpr double mutex_rate = 1e-6;

// mutex's account: balance and ops are guarded by mu.
struct account {
    std::mutex mu;
    double balance = 0.0;
    uint64_t ops = 0;
};

int run_mutex(unsigned threads, uint64_t n)
{
    tbb::task_arena arena{int(threads)};
    arena.initialize();
    warm(arena);
    // Deposits per task: n / 8, at least 1 (as every implementation).
    const uint64_t per = n / mutex_tasks > 0 ? n / mutex_tasks : 1;
    account acc;
    uint64_t t0 = 0, t1 = 0, cpu0 = 0, cpu1 = 0;
    arena.execute([&] {
        cpu0 = bench_cpu_ns();
        t0 = bench_now_ns();
        tbb::task_group tg;
        for (int k = 0; k < mutex_tasks; k++)
            tg.run([&acc, per] {
                for (uint64_t i = 0; i < per; i++) {
                    const double interest = std::sqrt(double(i)) * mutex_rate;
                    std::lock_guard<std::mutex> lk(acc.mu);
                    acc.balance += interest;
                    acc.ops++;
                }
            });
        tg.wait();
        t1 = bench_now_ns();
        cpu1 = bench_cpu_ns();
    });
    const double ops = double(mutex_tasks) * double(per);
    const double cpu = double(cpu1 - cpu0) / ops;
    peer_report_extra(double(t1 - t0) / ops, acc.ops, &cpu, 1);
    return 0;
}

constexpr uint64_t idle_burst = 10000;

// idle's burst, run by a worker of the arena: 10,000 tasks and a wait.
struct burst_job {
    mutable std::promise<uint64_t> done;
    void operator()() const
    {
        std::vector<uint64_t> slots(idle_burst);
        tbb::task_group tg;
        for (uint64_t i = 0; i < idle_burst; i++)
            tg.run([&slots, i] { slots[i] = i + 1; });
        tg.wait();
        uint64_t sum = 0;
        for (uint64_t v : slots)
            sum += v;
        done.set_value(sum);
    }
};

// idle's waited job: sleeps ns; 1 if that lasted long enough.
struct sleep_job {
    mutable std::promise<uint64_t> done;
    uint64_t ns;
    void operator()() const
    {
        const uint64_t t0 = bench_now_ns();
        std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
        done.set_value(bench_now_ns() - t0 >= ns ? 1 : 0);
    }
};

template <class Job>
uint64_t enqueue_and_wait(tbb::task_arena &arena, Job job)
{
    std::future<uint64_t> result = job.done.get_future();
    arena.enqueue(std::move(job));
    return result.get();
}

// CPU ms per elapsed second between two readings of each.
double cpu_ms_per_s(uint64_t cpu0, uint64_t cpu1, uint64_t t0, uint64_t t1)
{
    return t1 > t0 ? double(cpu1 - cpu0) / 1e6 / (double(t1 - t0) / 1e9) : 0.0;
}

int run_idle(unsigned threads, uint64_t ms)
{
    tbb::task_arena arena{int(threads), 0};
    arena.initialize();
    warm(arena);
    const uint64_t want = idle_burst * (idle_burst + 1) / 2;
    const uint64_t ns = ms * 1000000u;
    uint64_t check = 0;

    check += enqueue_and_wait(arena, burst_job{}) == want;
    const uint64_t cpu0 = bench_cpu_ns(), t0 = bench_now_ns();
    struct timespec left = {time_t(ns / 1000000000u), long(ns % 1000000000u)};
    while (nanosleep(&left, &left) != 0 && errno == EINTR)
        ;
    const uint64_t t1 = bench_now_ns(), cpu1 = bench_cpu_ns();

    check += enqueue_and_wait(arena, burst_job{}) == want;
    const uint64_t cpu2 = bench_cpu_ns(), t2 = bench_now_ns();
    check += enqueue_and_wait(arena, sleep_job{{}, ns});
    const uint64_t t3 = bench_now_ns(), cpu3 = bench_cpu_ns();

    const double wait = cpu_ms_per_s(cpu2, cpu3, t2, t3);
    peer_report_extra(cpu_ms_per_s(cpu0, cpu1, t0, t1), check, &wait, 1);
    return 0;
}

// The soak workload (wl_soak.c): rounds of skynet(1M) and of 100,000
// task_groups of 10 tasks, for n seconds, in one arena; the median round,
// the first and last, the peak RSS and the idle RSS a second after.
int run_soak(unsigned threads, uint64_t seconds)
{
    tbb::task_arena arena{int(threads)};
    arena.initialize();
    warm(arena);
    std::vector<double> ms;
    bool good = true;
    const uint64_t until = bench_now_ns() + seconds * 1000000000ull;
    while (ms.empty() || bench_now_ns() < until) {
        const uint64_t t0 = bench_now_ns();
        uint64_t a = 0, b = 0;
        arena.execute([&] {
            a = skynet(0, 1000000);
            for (unsigned r = 0; r < 100000; r++) {
                uint64_t v[10];
                tbb::task_group tg;
                for (uint64_t i = 0; i < 10; i++)
                    tg.run([&v, i] { v[i] = i; });
                tg.wait();
                for (uint64_t x : v)
                    b += x;
            }
        });
        ms.push_back(double(bench_now_ns() - t0) / 1e6);
        good = good && a == 1000000ull * 999999 / 2 && b == 100000ull * 45;
    }
    struct timespec one = {1, 0};
    nanosleep(&one, nullptr);
    const double idle = double(bench_rss_bytes()) / (1024.0 * 1024.0);
    const double peak = double(bench_peak_rss_bytes()) / (1024.0 * 1024.0);
    const double extra[4] = {ms.front(), ms.back(), peak,
                             idle};
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    peer_report_extra(sorted[sorted.size() / 2], good ? 1 : 0, extra, 4);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    peer_args a;

    peer_parse_args(argc, argv, &a);
    const uint64_t n = a.n;
    const char *w = a.workload;

    // TBB caps its worker threads at the CPU count minus one; lift the cap
    // so THREADS workers (plus main) exist whatever the machine.
    tbb::global_control allow{tbb::global_control::max_allowed_parallelism,
                              size_t(a.threads) + 1};

    if (std::strcmp(w, "spawn-join") == 0) {
        std::vector<uint64_t> slots(n);
        return fork_join(a.threads, 1e6, [&slots, n] {
            tbb::task_group tg;
            for (uint64_t i = 0; i < n; i++)
                tg.run([&slots, i] { slots[i] = i + 1; });
            tg.wait();
            uint64_t sum = 0;
            for (uint64_t v : slots)
                sum += v;
            return sum;
        });
    }
    if (std::strcmp(w, "skynet") == 0) {
        if (!is_power_of_10(n)) {
            std::fprintf(stderr, "peer-tbb: skynet needs a power of 10 leaves\n");
            return PEER_EXIT_FAILED;
        }
        return fork_join(a.threads, 1e6, [n] { return skynet(0, n); });
    }
    if (std::strcmp(w, "fib") == 0) {
        if (n > 90) {
            std::fprintf(stderr, "peer-tbb: fib(%" PRIu64 ") overflows\n", n);
            return PEER_EXIT_FAILED;
        }
        return fork_join(a.threads, 1e6, [n] { return fib(n); });
    }
    if (std::strcmp(w, "sync-wait") == 0)
        return run_sync_wait(a.threads, n);
    if (std::strcmp(w, "mutex") == 0)
        return run_mutex(a.threads, n);
    if (std::strcmp(w, "soak") == 0)
        return run_soak(a.threads, n);
    if (std::strcmp(w, "idle") == 0)
        return run_idle(a.threads, n);
    if (std::strcmp(w, "yield") == 0 || std::strcmp(w, "ping-pong") == 0 ||
        std::strcmp(w, "yield-fp") == 0 || std::strcmp(w, "ping-pong-fp") == 0 ||
        std::strncmp(w, "latency-", 8) == 0)
        return PEER_EXIT_UNKNOWN_WORKLOAD; // see the top of this file
    std::fprintf(stderr, "peer-tbb: no workload '%s'\n", w);
    return PEER_EXIT_UNKNOWN_WORKLOAD;
}
