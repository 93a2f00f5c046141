/*
 * switch_count.c — weft-switch-count N: N switch round trips, nothing else.
 *
 * For instruction counting under callgrind (count_switch_instructions.sh):
 * it runs exactly the code weft-bench times for the "switch" workload
 * (wl_switch.c, linked in), without the runner's peers, table and output,
 * so two runs with different N differ only by the extra round trips.
 *
 * Prints the same "result <ns> <check>" line a peer prints, and exits 1 if
 * the check value is wrong.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "workloads.h"

int main(int argc, char **argv)
{
    bench_params p = { .n = 0, .threads = 1 };
    bench_sample s = { .value = 0.0 };
    char *end;
    int rc;

    if (argc == 2) {
        errno = 0;
        p.n = strtoull(argv[1], &end, 10);
        if (errno != 0 || *end != '\0' || argv[1][0] == '-')
            p.n = 0;
    }
    if (p.n == 0) {
        fprintf(stderr, "usage: %s N   (N switch round trips)\n", argv[0]);
        return 2;
    }
    rc = bench_wl_switch.run_weft(&p, &s);
    if (rc != 0)
        return 1;
    printf("result %.9g %" PRIu64 "\n", s.value, s.check);
    if (s.check != bench_wl_switch.expect(&p)) {
        fprintf(stderr, "%s: wrong check value\n", argv[0]);
        return 1;
    }
    return 0;
}
