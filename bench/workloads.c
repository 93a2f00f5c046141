/* workloads.c — the registry: every workload weft-bench knows, in order. */
#include "workloads.h"

const bench_workload *const bench_workloads[] = {
    &bench_wl_switch,
    &bench_wl_create,
};

const size_t bench_workload_count =
    sizeof bench_workloads / sizeof bench_workloads[0];
