/*
 * results.c — summarising what was measured, and the peer table meson
 * configured (bench_config.h).
 */
#include <stdbool.h>
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

/* Median, min and max of v[0..c-1] (c > 0); false if out of memory. */
static bool median_of(const double *v, unsigned c, double *median,
                      double *min, double *max)
{
    /* Sort a copy: the runs stay in run order for --json. */
    double *sorted = malloc(c * sizeof *sorted);

    if (sorted == NULL)
        return false;
    memcpy(sorted, v, c * sizeof *sorted);
    qsort(sorted, c, sizeof *sorted, cmp_double);
    *min = sorted[0];
    *max = sorted[c - 1];
    *median = c % 2 ? sorted[c / 2] : (sorted[c / 2 - 1] + sorted[c / 2]) / 2.0;
    free(sorted);
    return true;
}

static void summarise(const bench_workload *w, impl_result *r)
{
    double lo, hi;
    bool ok;

    if (r->state != IMPL_OK || r->count == 0)
        return;
    ok = median_of(r->runs, r->count, &r->median, &r->min, &r->max);
    for (size_t e = 0; ok && e < results_extra_count(w); e++)
        ok = median_of(r->extra_runs[e], r->count, &r->extra_median[e], &lo,
                       &hi);
    for (size_t e = 0; ok && r->counted_runs > 0 && e < BENCH_NCOUNTS; e++)
        ok = median_of(r->count_runs[e], r->counted_runs, &r->count_median[e],
                       &lo, &hi);
    if (!ok) {
        r->state = IMPL_FAILED;
        strcpy(r->why, "out of memory while summarising");
    }
}

void results_summarise(bench_run *run)
{
    for (size_t i = 0; i < run->ncells; i++)
        for (size_t k = 0; k < run->cells[i].nimpl; k++)
            summarise(run->cells[i].w, &run->cells[i].impl[k]);
}

double results_ratio(const bench_cell *c, size_t k)
{
    const impl_result *weft = &c->impl[0];
    const impl_result *r = &c->impl[k];

    if (weft->state != IMPL_OK || weft->count == 0 || weft->median <= 0.0 ||
        r->state != IMPL_OK || r->count == 0 ||
        (c->w->higher_is_better && r->median <= 0.0))
        return -1.0;
    return c->w->higher_is_better ? weft->median / r->median
                                  : r->median / weft->median;
}

double results_speedup(const bench_workload *w, double base, double x)
{
    return w->higher_is_better ? x / base : base / x;
}

size_t results_extra_count(const bench_workload *w)
{
    size_t n = 0;

    while (w->extra != NULL && n < BENCH_MAX_EXTRA && w->extra[n].name != NULL)
        n++;
    return n;
}

const bench_cell *results_find_cell(const bench_run *run,
                                    const bench_workload *w, unsigned threads)
{
    for (size_t i = 0; i < run->ncells; i++)
        if (run->cells[i].w == w && run->cells[i].p.threads == threads)
            return &run->cells[i];
    return NULL;
}
