/*
 * boost_context.cc — peer-boost-context: boost::context::fiber (callcc API).
 *
 * Boost.Context's fcontext switch is the reference for a hand-written
 * user-space switch (no system call, callee-saved registers only), and
 * pooled_fixedsize_stack is its answer to stack allocation cost.
 *
 *   switch  A fiber and main ping-pong N round trips with
 *           `f = std::move(f).resume()`.  resume() carries no value, so the
 *           checked counter lives in a variable both sides capture by
 *           reference.  Stack: pooled_fixedsize_stack of 256 KiB (weft's
 *           default).  Reports elapsed / (2N).
 *   switch-fp  The same, except that the fiber clears its floating-point
 *           exception flags (bench_fp_clear, fp.h) when it starts and main
 *           raises inexact (a double division) after the first resume,
 *           before the clock: the two sides differ in their raised flags,
 *           nothing in the timed loop computes.  fcontext saves and loads
 *           MXCSR and the x87 control word (FPCR on aarch64) at every
 *           switch, flags included, so each side gets its own flags back
 *           and every switch writes a different MXCSR value, which the
 *           next stmxcsr waits for (fp.h).  Reports elapsed / (2N).
 *   create  Each cycle constructs a fiber on a pooled_fixedsize_stack of
 *           64 KiB (one allocator object for all cycles, so after the first
 *           cycle the stack comes from its free list), resumes it once, and
 *           the body returns at once: Boost then frees the stack back to the
 *           pool on the way out and resume() returns an empty fiber, which
 *           destroys nothing more.  Reports elapsed / N.
 *   memory, memory-1m
 *           N fibers on fixedsize_stack (Boost's default allocator: 64 KiB
 *           from malloc, no guard page: Boost's guarded
 *           protected_fixedsize_stack costs two VMAs a stack and stops near
 *           32,700 under the default vm.max_map_count), each resumed once;
 *           each body counts itself and resumes main back, so all N sit
 *           suspended.  Bytes of RSS per fiber: (RSS with N suspended - RSS
 *           before) / N, as for weft.  Check: N.
 */
#include <boost/context/fiber.hpp>
#include <boost/context/pooled_fixedsize_stack.hpp>

#include <boost/context/fixedsize_stack.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "fp.h"
#include "peer.h"
#include "rss.h"

namespace ctx = boost::context;

static int run_switch(uint64_t n, bool fp)
{
    ctx::pooled_fixedsize_stack salloc(256 * 1024);
    uint64_t value = 0;
    bool stop = false;

    ctx::fiber f{std::allocator_arg, salloc,
                 [&value, &stop, fp](ctx::fiber &&main) {
                     if (fp)
                         bench_fp_clear();
                     while (!stop) {
                         value++;
                         main = std::move(main).resume();
                     }
                     return std::move(main);
                 }};

    // First entry outside the timed loop, as for weft.
    f = std::move(f).resume();
    const uint64_t start = value;
    if (fp)
        bench_fp_raise(); // main's flags raised, the fiber's clear

    const uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++)
        f = std::move(f).resume();
    const uint64_t t1 = bench_now_ns();

    peer_report(double(t1 - t0) / (2.0 * double(n)), value - start);

    stop = true;
    f = std::move(f).resume(); // the body returns; f becomes empty
    return 0;
}

static int run_create(uint64_t n)
{
    ctx::pooled_fixedsize_stack salloc(64 * 1024);
    uint64_t sum = 0;

    const uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        uint64_t r = 0;
        ctx::fiber f{std::allocator_arg, salloc,
                     [i, &r](ctx::fiber &&main) {
                         r = i + 1;
                         return std::move(main);
                     }};
        f = std::move(f).resume();
        sum += r - i;
    }
    const uint64_t t1 = bench_now_ns();

    peer_report(double(t1 - t0) / double(n), sum);
    return 0;
}

static int run_memory(uint64_t n)
{
    ctx::fixedsize_stack salloc;
    std::vector<ctx::fiber> parked;
    uint64_t counted = 0;
    bool stop = false;

    parked.reserve(n);
    // Touch the handle array now, as weft's side does, so it is resident
    // before the first reading and not counted.
    for (uint64_t i = 0; i < n; i++)
        parked.emplace_back();
    parked.clear();

    const int64_t before = bench_rss_bytes();
    for (uint64_t i = 0; i < n; i++) {
        ctx::fiber f{std::allocator_arg, salloc,
                     [&counted, &stop](ctx::fiber &&main) {
                         counted++;
                         while (!stop)
                             main = std::move(main).resume();
                         return std::move(main);
                     }};
        parked.push_back(std::move(f).resume());
    }
    const int64_t after = bench_rss_bytes();
    if (before < 0 || after < 0) {
        std::fprintf(stderr, "peer-boost-context: cannot read /proc/self/statm\n");
        return PEER_EXIT_FAILED;
    }
    peer_report(double(after - before) / double(n), counted);

    // Let every body return so its stack goes back to the allocator.
    stop = true;
    for (auto &f : parked)
        f = std::move(f).resume();
    return 0;
}

int main(int argc, char **argv)
{
    peer_args a;

    peer_parse_args(argc, argv, &a);
    if (std::strcmp(a.workload, "switch") == 0)
        return run_switch(a.n, false);
    if (std::strcmp(a.workload, "switch-fp") == 0)
        return run_switch(a.n, true);
    if (std::strcmp(a.workload, "create") == 0)
        return run_create(a.n);
    if (std::strcmp(a.workload, "memory") == 0 ||
        std::strcmp(a.workload, "memory-1m") == 0)
        return run_memory(a.n);
    std::fprintf(stderr, "peer-boost-context: no workload '%s'\n", a.workload);
    return PEER_EXIT_UNKNOWN_WORKLOAD;
}
