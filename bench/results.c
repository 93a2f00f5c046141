/*
 * results.c — summarising what was measured, and the peer table meson
 * configured (bench_config.h).
 */
#include <stdlib.h>
#include <string.h>

#include "bench_config.h"
#include "results.h"

/* The sentinel keeps the array valid C when meson configured no peer. */
const peer_info bench_peer_table[] = { BENCH_PEER_TABLE { NULL, 0, NULL, NULL } };
const size_t bench_peer_count =
    sizeof bench_peer_table / sizeof bench_peer_table[0] - 1;

const peer_info *bench_find_peer(const char *name)
{
    for (size_t i = 0; i < bench_peer_count; i++)
        if (strcmp(bench_peer_table[i].name, name) == 0)
            return &bench_peer_table[i];
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;

    return (x > y) - (x < y);
}

static void summarise(impl_result *r)
{
    unsigned c = r->count;
    double *sorted;

    if (r->state != IMPL_OK || c == 0)
        return;
    /* Sort a copy: runs[] stays in run order for --json. */
    sorted = malloc(c * sizeof *sorted);
    if (sorted == NULL) {
        r->state = IMPL_FAILED;
        strcpy(r->why, "out of memory while summarising");
        return;
    }
    memcpy(sorted, r->runs, c * sizeof *sorted);
    qsort(sorted, c, sizeof *sorted, cmp_double);
    r->min = sorted[0];
    r->max = sorted[c - 1];
    r->median = c % 2 ? sorted[c / 2] : (sorted[c / 2 - 1] + sorted[c / 2]) / 2.0;
    free(sorted);
}

void results_summarise(bench_run *run)
{
    for (size_t i = 0; i < run->ncells; i++)
        for (size_t k = 0; k < run->cells[i].nimpl; k++)
            summarise(&run->cells[i].impl[k]);
}

double results_ratio(const bench_cell *c, size_t k)
{
    const impl_result *weft = &c->impl[0];
    const impl_result *r = &c->impl[k];

    if (weft->state != IMPL_OK || weft->count == 0 || weft->median <= 0.0 ||
        r->state != IMPL_OK || r->count == 0)
        return -1.0;
    return r->median / weft->median;
}

const bench_cell *results_find_cell(const bench_run *run,
                                    const bench_workload *w, unsigned threads)
{
    for (size_t i = 0; i < run->ncells; i++)
        if (run->cells[i].w == w && run->cells[i].p.threads == threads)
            return &run->cells[i];
    return NULL;
}
