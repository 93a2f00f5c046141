/* workloads.c — the registry: every workload weft-bench knows, in order. */
#include "workloads.h"

const bench_workload *const bench_workloads[] = {
    &bench_wl_switch,
    &bench_wl_switch_fp,
    &bench_wl_create,
    &bench_wl_spawn_join,
    &bench_wl_skynet,
    &bench_wl_fib,
#ifdef BENCH_HAVE_CXX
    &bench_wl_skynet_cpp,
    &bench_wl_fib_cpp,
#endif
    &bench_wl_yield,
    &bench_wl_yield_fp,
    &bench_wl_ping_pong,
    &bench_wl_ping_pong_fp,
    &bench_wl_sync_wait,
    &bench_wl_timeout,
    &bench_wl_mutex,
    &bench_wl_sleepers,
    &bench_wl_sleep,
    &bench_wl_latency_yield,
    &bench_wl_latency_cpu,
    &bench_wl_latency_read,
    &bench_wl_idle,
    &bench_wl_memory,
    &bench_wl_memory_1m,
    &bench_wl_soak,
    &bench_wl_echo,
    &bench_wl_echo_borrowed,
    &bench_wl_http,
    &bench_wl_http_1k,
    &bench_wl_kv,
    &bench_wl_kv_p16,
};

const size_t bench_workload_count =
    sizeof bench_workloads / sizeof bench_workloads[0];
