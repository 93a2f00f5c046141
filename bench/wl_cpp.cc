/*
 * wl_cpp.cc — skynet-cpp and fib-cpp: the skynet and fib workloads
 * (wl_skynet.c, wl_fib.c) written with the C++ layer, weft/weft.hpp:
 * lambdas spawned with weft::spawn, their values taken with
 * weft::task<T>::get().  The same trees, the same pool, the clock in the
 * same place (inside the root task, around the top call); what differs is
 * what the C++ layer adds to a spawn and an await: the callable in the
 * task's room (weft_spawn_copy or weft_spawn_with), the typed result, and
 * weft_task_take.  They are measured as the peer "weft-cpp" of the C rows
 * (peers/weft_cpp.c runs `weft-bench --child skynet-cpp ...`), run by run
 * beside them, so the C rows' ratio column for weft-cpp is the C++ layer's
 * time over the C API's (target: at most 1.1); `--only skynet-cpp` still
 * makes a row of its own.
 *
 * Check: as the C rows'.
 */
#include <weft/weft.hpp>

#include <array>
#include <cstdio>

extern "C" {
#include "clock.h"
#include "workloads.h"
}

namespace {

/* ------------------------------------------------------------ fib */

std::uint64_t fib(weft_pool *p, std::uint64_t n)
{
    if (n < 2)
        return n;
    auto child = weft::spawn(p, [p, n] { return fib(p, n - 1); });
    std::uint64_t y = fib(p, n - 2);
    return child.get() + y;
}

/* ---------------------------------------------------------- skynet */

constexpr std::uint64_t DIV = 10;

std::uint64_t skynet(weft_pool *p, std::uint64_t num, std::uint64_t size)
{
    if (size == 1)
        return num;
    std::uint64_t child = size / DIV;
    std::array<weft::task<std::uint64_t>, DIV> kids;
    for (std::uint64_t i = 0; i < DIV; i++)
        kids[i] = weft::spawn(p, [p, num, i, child] {
            return skynet(p, num + i * child, child);
        });
    std::uint64_t sum = 0;
    for (auto &k : kids)
        sum += k.get();
    return sum;
}

/* One measurement: a pool of p->threads made outside the clock, a root
 * task on it from this thread, the clock inside the root around `top`. */
template <class Top>
int session(const bench_params *p, bench_sample *out, const char *who,
            Top top)
{
    try {
        weft::pool pool{p->threads};
        weft_pool *h = pool.native_handle();
        std::uint64_t t0 = 0, t1 = 0;
        std::uint64_t v = weft::spawn(pool, [&] {
                              t0 = bench_now_ns();
                              std::uint64_t r = top(h);
                              t1 = bench_now_ns();
                              return r;
                          }).get();
        pool.destroy();
        out->value = static_cast<double>(t1 - t0) / 1e6;
        out->check = v;
        return 0;
    } catch (const std::system_error &e) {
        std::fprintf(stderr, "%s: %s\n", who, e.what());
        return -e.code().value();
    }
}

bool is_power_of_10(std::uint64_t n)
{
    while (n > 1 && n % 10 == 0)
        n /= 10;
    return n == 1;
}

int skynet_cpp(const bench_params *p, bench_sample *out)
{
    if (!is_power_of_10(p->n)) {
        std::fprintf(stderr, "skynet-cpp: N = %llu leaves: must be a power "
                     "of 10\n", static_cast<unsigned long long>(p->n));
        return -EINVAL;
    }
    std::uint64_t n = p->n;
    return session(p, out, "skynet-cpp",
                   [n](weft_pool *h) { return skynet(h, 0, n); });
}

int fib_cpp(const bench_params *p, bench_sample *out)
{
    if (p->n > 90) {
        std::fprintf(stderr, "fib-cpp: fib(%llu) is past 90\n",
                     static_cast<unsigned long long>(p->n));
        return -EINVAL;
    }
    std::uint64_t n = p->n;
    return session(p, out, "fib-cpp",
                   [n](weft_pool *h) { return fib(h, n); });
}

const char *const no_peers[] = {nullptr};

bench_workload make(const bench_workload &c, const char *name,
                    const char *desc,
                    int (*run)(const bench_params *, bench_sample *))
{
    bench_workload w = c;
    w.name = name;
    w.desc = desc;
    w.run_weft = run;
    w.peers = no_peers;
    w.as_peer = true; /* the weft-cpp peer of the C row */
    return w;
}

} // namespace

/* As the C rows, but for their name, body and peers. */
extern "C" const bench_workload bench_wl_skynet_cpp =
    make(bench_wl_skynet, "skynet-cpp",
         "skynet with weft.hpp: lambdas, weft::task<uint64_t>::get()",
         skynet_cpp);
extern "C" const bench_workload bench_wl_fib_cpp =
    make(bench_wl_fib, "fib-cpp",
         "fib with weft.hpp: lambdas, weft::task<uint64_t>::get()", fib_cpp);
