/*
 * boost_fiber.cc — peer-boost-fiber: Boost.Fiber on its work_stealing
 * scheduler.
 *
 * Boost.Fiber is the closest peer in kind: stackful fibers (Boost.Context
 * switch), futures, channels, and a work-stealing scheduler.  Its pool is
 * THREADS threads: main plus THREADS-1 helper threads, every one of which
 * installs `algo::work_stealing(THREADS)` (the pattern of Boost's own
 * work_stealing example): the helpers then sleep in a fiber condition
 * variable until main says the run is over, so their schedulers run fibers
 * meanwhile.  A thread-blocking barrier keeps every fiber launch until all
 * THREADS schedulers are registered (a thief picks a victim among all of
 * them).  Idle schedulers sleep on a condition variable (suspend = true),
 * as weft's, Go's and TBB's idle workers sleep; Boost's default, false,
 * makes them spin on their queues for ever, which burns every CPU of the
 * pool and, on a small VM, competes with the threads doing the work
 * (BENCH_BOOST_FIBER_SUSPEND=0 selects it, for comparison).  Fiber stacks are Boost.Fiber's default
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
 *   ping-pong   fibers A and B bounce a token N round trips through two
 *               buffered_channel<uint64_t>s of capacity 2 (A pushes on one,
 *               pops the other; B the reverse; each side adds 1).  Which
 *               thread runs each fiber is the scheduler's choice, as in weft.
 *               Check: the token, 2N.  us per round trip.
 *   sync-wait   N rounds of `async(launch::post, job).get()` from main's
 *               fiber, job returning i + 1.  main is a fiber on one of the
 *               pool's threads (a thread outside every scheduler cannot hand
 *               a fiber to a work_stealing pool), so this is the closest
 *               analogue of weft_sync_wait: the waiting fiber suspends and
 *               its thread may run the job itself.  Check: sum of
 *               (result - i) = N.  us per round trip.
 */
#include <boost/fiber/all.hpp>

#include <array>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "peer.h"

namespace fibers = boost::fibers;

namespace {

constexpr uint64_t skynet_div = 10;
constexpr int yield_fibers = 1000;

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

// The end of the run, as the helper threads' main fibers wait for it.
fibers::mutex end_mu;
fibers::condition_variable end_cv;
bool end_flag = false;

bool suspend_when_idle()
{
    const char *s = std::getenv("BENCH_BOOST_FIBER_SUSPEND");
    return s == nullptr || std::strcmp(s, "0") != 0;
}

void helper(unsigned threads, bool suspend, thread_barrier *ready)
{
    fibers::use_scheduling_algorithm<fibers::algo::work_stealing>(threads, suspend);
    ready->arrive_and_wait();
    std::unique_lock<fibers::mutex> lk(end_mu);
    end_cv.wait(lk, [] { return end_flag; });
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

bool is_power_of_10(uint64_t n)
{
    while (n > 1 && n % 10 == 0)
        n /= 10;
    return n == 1;
}

// One measurement in main's fiber: sets *value and *check; false = n/a.
bool measure(const char *w, uint64_t n, double *value, uint64_t *check)
{
    uint64_t t0, t1, sum = 0;

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
    } else if (std::strcmp(w, "yield") == 0) {
        std::vector<uint64_t> counts(yield_fibers);
        std::vector<fibers::fiber> fs;
        fs.reserve(yield_fibers);
        t0 = bench_now_ns();
        for (int k = 0; k < yield_fibers; k++)
            fs.emplace_back([&counts, k, n] {
                uint64_t c = 0;
                for (uint64_t j = 0; j < n; j++) {
                    boost::this_fiber::yield();
                    c++;
                }
                counts[size_t(k)] = c;
            });
        for (auto &f : fs)
            f.join();
        t1 = bench_now_ns();
        for (uint64_t c : counts)
            sum += c;
        *value = double(t1 - t0) / (double(yield_fibers) * double(n));
    } else if (std::strcmp(w, "ping-pong") == 0) {
        fibers::buffered_channel<uint64_t> ping{2}, pong{2};
        uint64_t token = 0;
        fibers::fiber b([&ping, &pong, n] {
            uint64_t v;
            for (uint64_t i = 0; i < n; i++) {
                ping.pop(v);
                pong.push(v + 1);
            }
        });
        fibers::fiber a([&ping, &pong, &token, &t0, &t1, n] {
            uint64_t v = 0;
            t0 = bench_now_ns();
            for (uint64_t i = 0; i < n; i++) {
                ping.push(v + 1);
                pong.pop(v);
            }
            t1 = bench_now_ns();
            token = v;
        });
        a.join();
        b.join();
        sum = token;
        *value = double(t1 - t0) / 1e3 / double(n);
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
    } else if (std::strcmp(w, "sync-wait") == 0) {
        t0 = bench_now_ns();
        for (uint64_t i = 0; i < n; i++)
            sum += fibers::async(fibers::launch::post,
                                 [i] { return i + 1; }).get() - i;
        t1 = bench_now_ns();
        *value = double(t1 - t0) / 1e3 / double(n);
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
                                         "yield", "ping-pong", "sync-wait",
                                         "sleep" };
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
        helpers.emplace_back(helper, a.threads, suspend, &ready);
    fibers::use_scheduling_algorithm<fibers::algo::work_stealing>(a.threads, suspend);
    ready.arrive_and_wait();

    double value = 0.0;
    uint64_t check = 0;
    measure(w, a.n, &value, &check);

    {
        std::unique_lock<fibers::mutex> lk(end_mu);
        end_flag = true;
    }
    end_cv.notify_all();
    for (auto &t : helpers)
        t.join();

    peer_report(value, check);
    return 0;
}
