/*
 * report.c — the tables weft-bench prints on stdout.
 *
 * The main table: one block per cell (workload at a worker count), one row
 * per implementation: median, min-max of its runs, the ratio (how many
 * times weft is ahead: peer median / weft median, or weft / peer for a
 * rate; > 1: weft is faster, or uses less memory), and the medians of the
 * workload's extra figures if it has any (echo: latency percentiles).  With a
 * sweep (two or more worker counts), a scaling table follows: for each
 * pooled workload and implementation, the speed-up at each worker count
 * over the smallest one (1 unless the sweep leaves it out), the median
 * value beside it.  Then the counted table: per operation, the medians of
 * what each measurement cost the kernel's counters (counters.h), which the
 * clock hides and which move with the machine (a system call costs several
 * times more under page-table isolation).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results.h"

void fmt_value(char *buf, size_t len, double v)
{
    if (v < 10.0)
        snprintf(buf, len, "%.2f", v);
    else if (v < 100.0)
        snprintf(buf, len, "%.1f", v);
    else
        snprintf(buf, len, "%.0f", v);
}

#define NCOLS 8

/* One row, all text, so the column widths can be measured first. */
typedef struct row {
    char col[NCOLS][64];
    char tail[200]; /* last column: ratio or reason; not padded */
} row;

static const bool main_align[NCOLS] = {
    false, true, true, false, true, false, false, false,
};
static const bool scaling_align[NCOLS] = {
    false, false, true, true, true, true, true, true,
};

static void make_row(row *out, const bench_cell *c, size_t k, bool first)
{
    const impl_result *r = &c->impl[k];

    memset(out, 0, sizeof *out);
    if (first) {
        snprintf(out->col[0], sizeof out->col[0], "%s", c->w->name);
        snprintf(out->col[1], sizeof out->col[1], "%" PRIu64, c->p.n);
        snprintf(out->col[2], sizeof out->col[2], "%u", c->p.threads);
    }
    snprintf(out->col[3], sizeof out->col[3], "%s", r->name);

    switch (r->state) {
    case IMPL_SKIPPED:
        snprintf(out->col[4], sizeof out->col[4], "skipped");
        snprintf(out->tail, sizeof out->tail, "(%s)", r->why);
        return;
    case IMPL_NA:
        snprintf(out->col[4], sizeof out->col[4], "n/a");
        if (r->why[0] != '\0') /* a server workload's missing client */
            snprintf(out->tail, sizeof out->tail, "(%s)", r->why);
        return;
    case IMPL_FAILED:
        snprintf(out->col[4], sizeof out->col[4], "FAILED");
        snprintf(out->tail, sizeof out->tail, "(%s)", r->why);
        return;
    case IMPL_OK:
        break;
    }
    if (r->count == 0)
        return;

    char lo[16], hi[16];
    double ratio = results_ratio(c, k);

    fmt_value(out->col[4], sizeof out->col[4], r->median);
    fmt_value(lo, sizeof lo, r->min);
    fmt_value(hi, sizeof hi, r->max);
    snprintf(out->col[5], sizeof out->col[5], "%s-%s", lo, hi);
    snprintf(out->col[6], sizeof out->col[6], "%s", c->w->unit);
    if (ratio >= 0.0)
        snprintf(out->tail, sizeof out->tail, "%.2f", ratio);
    else
        snprintf(out->tail, sizeof out->tail, "-");
    for (size_t e = 0; e < results_extra_count(c->w); e++) {
        size_t len = strlen(out->tail);
        char v[16];

        fmt_value(v, sizeof v, r->extra_median[e]);
        snprintf(out->tail + len, sizeof out->tail - len, "  %s %s %s",
                 c->w->extra[e].name, v, c->w->extra[e].unit);
    }
}

/* Prints rows[] as aligned columns; a blank line before each new block
 * (a row whose first column is set).  No trailing blanks. */
static void print_rows(const row *rows, size_t nrows, size_t ncols,
                       const bool *right_aligned)
{
    int width[NCOLS] = { 0 };

    for (size_t i = 0; i < nrows; i++)
        for (size_t j = 0; j < ncols; j++) {
            int l = (int)strlen(rows[i].col[j]);
            if (l > width[j])
                width[j] = l;
        }
    for (size_t i = 0; i < nrows; i++) {
        char line[1024];
        size_t len = 0;

        if (i > 1 && rows[i].col[0][0] != '\0')
            putchar('\n');
        for (size_t j = 0; j < ncols; j++)
            len += (size_t)snprintf(line + len, sizeof line - len,
                                    right_aligned[j] ? "%*s  " : "%-*s  ",
                                    width[j], rows[i].col[j]);
        snprintf(line + len, sizeof line - len, "%s", rows[i].tail);
        len = strlen(line);
        while (len > 0 && line[len - 1] == ' ')
            line[--len] = '\0';
        puts(line);
    }
}

/* Rows for a table of one row per implementation and cell, the first
 * one the heading; NULL (said) when out of memory. */
static row *table_rows(const bench_run *run, const char *const head[NCOLS])
{
    size_t nrows = 1;
    row *rows;

    for (size_t i = 0; i < run->ncells; i++)
        nrows += run->cells[i].nimpl;
    rows = calloc(nrows, sizeof *rows);
    if (rows == NULL) {
        perror("weft-bench");
        return NULL;
    }
    for (size_t j = 0; j < NCOLS; j++)
        snprintf(rows[0].col[j], sizeof rows[0].col[j], "%s", head[j]);
    return rows;
}

static void print_main_table(const bench_run *run)
{
    static const char *const head[NCOLS] = {
        "workload", "N", "T", "impl", "median", "min-max", "unit", "",
    };
    size_t nrows;
    row *rows = table_rows(run, head);

    if (rows == NULL)
        return;
    snprintf(rows[0].tail, sizeof rows[0].tail, "ratio");
    nrows = 1;
    for (size_t i = 0; i < run->ncells; i++)
        for (size_t k = 0; k < run->cells[i].nimpl; k++, nrows++)
            make_row(&rows[nrows], &run->cells[i], k, k == 0);
    print_rows(rows, nrows, NCOLS - 1, main_align);
    free(rows);
}

static void print_scaling_table(const bench_run *run)
{
    /* Base: the smallest worker count asked for. */
    unsigned base = run->threads[0];
    size_t ncols = 2 + run->nthreads;
    size_t nrows = 1, maxrows = 1;
    row *rows;

    if (ncols > NCOLS) {
        printf("\n(scaling table: at most %d worker counts fit)\n", NCOLS - 2);
        return;
    }
    for (size_t i = 1; i < run->nthreads; i++)
        if (run->threads[i] < base)
            base = run->threads[i];
    for (size_t i = 0; i < run->ncells; i++)
        maxrows += run->cells[i].nimpl;
    rows = calloc(maxrows, sizeof *rows);
    if (rows == NULL) {
        perror("weft-bench");
        return;
    }
    snprintf(rows[0].col[0], sizeof rows[0].col[0], "workload");
    snprintf(rows[0].col[1], sizeof rows[0].col[1], "impl");
    for (size_t j = 0; j < run->nthreads; j++)
        snprintf(rows[0].col[2 + j], sizeof rows[0].col[2 + j], "T=%u",
                 run->threads[j]);

    for (size_t i = 0; i < run->ncells; i++) {
        const bench_cell *c = &run->cells[i];
        const bench_cell *b;

        /* One block per pooled workload, built from its base cell. */
        if (!c->w->pooled || c->w->no_scaling || c->p.threads != base)
            continue;
        b = c;
        for (size_t k = 0; k < b->nimpl; k++) {
            row *r = &rows[nrows++];
            const impl_result *bi = &b->impl[k];

            if (k == 0)
                snprintf(r->col[0], sizeof r->col[0], "%s", b->w->name);
            snprintf(r->col[1], sizeof r->col[1], "%s", bi->name);
            for (size_t j = 0; j < run->nthreads; j++) {
                const bench_cell *cj = results_find_cell(run, b->w, run->threads[j]);
                const impl_result *x = cj != NULL ? &cj->impl[k] : NULL;
                char v[16];

                if (x == NULL || x->state != IMPL_OK || x->count == 0 ||
                    bi->state != IMPL_OK || bi->count == 0 ||
                    x->median <= 0.0 || bi->median <= 0.0) {
                    snprintf(r->col[2 + j], sizeof r->col[2 + j], "-");
                    continue;
                }
                fmt_value(v, sizeof v, x->median);
                snprintf(r->col[2 + j], sizeof r->col[2 + j], "%.2fx (%s)",
                         results_speedup(b->w, bi->median, x->median), v);
            }
        }
    }
    printf("\nscaling: speed-up over %u worker%s (median, in the workload's "
           "unit, in parentheses)\n", base, base == 1 ? "" : "s");
    print_rows(rows, nrows, ncols, scaling_align);
    free(rows);
}

/* A counted figure: three significant digits, "-" when not counted. */
static void fmt_count(char *buf, size_t len, double v)
{
    if (v < 0.0)
        snprintf(buf, len, "-");
    else if (v == 0.0)
        snprintf(buf, len, "0");
    else
        snprintf(buf, len, "%.3g", v);
}

static const bool counted_align[NCOLS] = {
    false, true, false, true, true, true, true, true,
};

static void print_counted_table(const bench_run *run, const bench_machine *m)
{
    static const char *const head[NCOLS] = {
        "workload", "T", "impl", "cpu us", "faults", "vcsw", "ivcsw",
        "syscalls",
    };
    size_t nrows = 1;
    row *rows = table_rows(run, head);

    if (rows == NULL)
        return;
    for (size_t i = 0; i < run->ncells; i++) {
        const bench_cell *c = &run->cells[i];

        for (size_t k = 0; k < c->nimpl; k++) {
            const impl_result *r = &c->impl[k];
            row *out = &rows[nrows++];

            if (k == 0) {
                snprintf(out->col[0], sizeof out->col[0], "%s", c->w->name);
                snprintf(out->col[1], sizeof out->col[1], "%u", c->p.threads);
            }
            snprintf(out->col[2], sizeof out->col[2], "%s", r->name);
            if (r->state != IMPL_OK || r->counted_runs == 0) {
                snprintf(out->col[3], sizeof out->col[3], "-");
                continue;
            }
            fmt_count(out->col[3], sizeof out->col[3],
                      r->count_median[BENCH_COUNT_CPU] / 1e3);
            for (size_t e = BENCH_COUNT_MINFLT; e < BENCH_NCOUNTS; e++)
                fmt_count(out->col[3 + e], sizeof out->col[3 + e],
                          r->count_median[e]);
        }
    }
    printf("\ncounted, per operation (median; the whole process, start-up "
           "included: counters.h): CPU time, minor page faults, voluntary and "
           "involuntary context switches, system calls%s%s%s\n",
           m->syscalls_counted ? "" : " (not counted: ",
           m->syscalls_counted ? "" : m->syscalls_why,
           m->syscalls_counted ? "" : ")");
    print_rows(rows, nrows, NCOLS, counted_align);
    free(rows);
}

void report_print(const bench_run *run, const bench_machine *m)
{
    printf("weft-bench: median of %u run%s per implementation%s; "
           "ratio > 1 means weft is ahead (peer/weft, or weft/peer for "
           "rates such as msgs/s)\n",
           run->runs, run->runs == 1 ? "" : "s",
           run->quick ? " (--quick: a check, not a measurement)" : "");
    print_main_table(run);
    if (run->nthreads > 1)
        print_scaling_table(run);
    print_counted_table(run, m);
}
