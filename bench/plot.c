/*
 * plot.c — --plot FILE.svg: the run as a picture, drawn by gnuplot.
 *
 * Top: the ratio chart, one bar per (workload, peer): how many times weft
 * is ahead (peer median / weft median, or weft / peer for a rate such as
 * msgs/s) on a log scale, so 2x faster and 2x slower are bars of the same
 * length up and down from 1.  With a sweep it shows the first worker count
 * of the sweep.  Below, with a sweep of two or more worker counts: one
 * panel per pooled workload, speed-up over the smallest worker count
 * against workers, one line per implementation, and the ideal line.
 *
 * gnuplot (Debian: gnuplot-nox) is run as a program and fed the script and
 * the data inline (datablocks) on its stdin; weft-bench checks that it is
 * on PATH before measuring anything, so a missing gnuplot is reported at
 * once, not after minutes of measurements.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "results.h"

bool plot_available(void)
{
    const char *path = getenv("PATH");
    char buf[4096];

    if (path == NULL)
        return false;
    for (const char *p = path; *p != '\0';) {
        size_t len = strcspn(p, ":");

        if (len > 0 && len < sizeof buf - 16) {
            snprintf(buf, sizeof buf, "%.*s/gnuplot", (int)len, p);
            if (access(buf, X_OK) == 0)
                return true;
        }
        p += len;
        if (*p == ':')
            p++;
    }
    return false;
}

/* The colour of implementation `name`: stable across panels and runs. */
static const char *impl_colour(const char *name)
{
    static const char *const names[] = {
        "weft", "go", "boost-fiber", "boost-context", "tbb", "openmp",
        "mutex-pool", "futex-pair", "ucontext",
    };
    static const char *const colours[] = {
        "#d62728", "#1f77b4", "#2ca02c", "#98df8a", "#ff7f0e", "#9467bd",
        "#8c564b", "#e377c2", "#7f7f7f",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i], name) == 0)
            return colours[i];
    return "#17becf";
}

/* gnuplot string literal in single quotes: a quote is doubled. */
static void gq(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s != '\0'; s++) {
        if (*s == '\'')
            fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

/* gnuplot's "lc rgb variable" wants a number: colour "#rrggbb" as int. */
static unsigned long colour_int(const char *hex)
{
    return strtoul(hex + 1, NULL, 16);
}

/* The ratio bars the chart will draw: OK peers of first-count cells. */
static bool charted(const bench_run *run, const bench_cell *c, size_t k)
{
    return (!c->w->pooled || c->p.threads == run->threads[0]) &&
           results_ratio(c, k) > 0.0;
}

static size_t count_bars(const bench_run *run)
{
    size_t bars = 0;

    for (size_t i = 0; i < run->ncells; i++)
        for (size_t k = 1; k < run->cells[i].nimpl; k++)
            bars += charted(run, &run->cells[i], k);
    return bars;
}

/*
 * Horizontal bars (labels stay horizontal and readable however many there
 * are), first workload at the top, x = log10(ratio) so that weft's lead and
 * its lag read alike, from the line at 1.
 */
static void ratio_chart(FILE *g, const bench_run *run, const bench_machine *m,
                        double top, double height)
{
    unsigned t0 = run->threads[0];
    size_t bars = count_bars(run), y = bars;
    char title[512];

    fputs("$ratios << EOD\n", g);
    for (size_t i = 0; i < run->ncells; i++) {
        const bench_cell *c = &run->cells[i];

        for (size_t k = 1; k < c->nimpl; k++) {
            double r = results_ratio(c, k);
            char v[16];

            if (!charted(run, c, k))
                continue;
            fmt_value(v, sizeof v, r);
            /* y, label, log10(ratio), ratio as printed, colour */
            fprintf(g, "%zu \"%s: %s\" %.6f \"%s\" %lu\n", --y, c->w->name,
                    c->impl[k].name, log10(r), v,
                    colour_int(impl_colour(c->impl[k].name)));
        }
    }
    fputs("EOD\n", g);
    fprintf(g, "set origin 0,%.4f\nset size 1,%.4f\n", top - height, height);
    snprintf(title, sizeof title,
             "peer median / weft median, weft / peer for rates "
             "(right of 1: weft faster, or smaller)"
             "\\n%s, %u CPUs, %s, pooled workloads on %u worker%s, "
             "median of %u run%s",
             m->cpu, m->cpus, m->date, t0, t0 == 1 ? "" : "s", run->runs,
             run->runs == 1 ? "" : "s");
    fprintf(g, "set title \"%s\"\n", title);
    fputs("set style fill solid 0.85 border -1\n"
          "set grid xtics\n"
          "set ytics nomirror font ',9'\n"
          "set xtics ('0.01' -2, '0.03' log10(0.03), '0.1' -1, '0.3' log10(0.3), "
          "'0.5' log10(0.5), '1' 0, '2' log10(2), '3' log10(3), '10' 1, "
          "'30' log10(30), '100' 2, '300' log10(300))\n"
          "set xlabel 'weft ahead by (log scale)'\n"
          "set yzeroaxis lt -1 lw 1.5\n"
          "set lmargin 24\n"
          "unset key\n", g);
    if (bars == 0) {
        fputs("set label 1 'no ratio to draw (no peer measured)' at graph 0.5,0.5 center\n"
              "plot [-1:1][0:1] NaN notitle\nunset label 1\n", g);
    } else {
        fprintf(g, "set yrange [-0.6:%zu.6]\n", bars - 1);
        fputs("set xrange [*:*]\nset offsets 0.25, 0.25, 0, 0\n", g);
        fputs("plot $ratios using ($3/2):1:($3 < 0 ? $3 : 0):($3 < 0 ? 0 : $3)"
              ":($1-0.38):($1+0.38):5:ytic(2) with boxxyerror "
              "lc rgb variable notitle, "
              "$ratios using ($3 >= 0 ? $3 + 0.1 : $3 - 0.1):1:4 with labels "
              "font ',8' notitle\n", g);
    }
    fputs("unset xtics\nunset ytics\nunset xlabel\nunset title\n"
          "unset yzeroaxis\nunset grid\nset lmargin\nset offsets 0,0,0,0\n"
          "set xtics\nset ytics\nset xrange [*:*]\nset yrange [*:*]\n", g);
}

static void scaling_panels(FILE *g, const bench_run *run, double top,
                           double height, size_t npanels)
{
    size_t cols = npanels < 3 ? npanels : 3;
    size_t rows = (npanels + cols - 1) / cols;
    double pw = 1.0 / (double)cols, ph = height / (double)rows;
    unsigned base = run->threads[0], maxt = run->threads[0];
    size_t panel = 0;

    for (size_t i = 1; i < run->nthreads; i++) {
        if (run->threads[i] < base)
            base = run->threads[i];
        if (run->threads[i] > maxt)
            maxt = run->threads[i];
    }
    fputs("set logscale x 2\nset logscale y 2\nset key top left font ',8'\n"
          "set grid\nset xlabel 'workers' font ',9'\n"
          "unset ylabel\n", g);
    fprintf(g, "set xrange [%u:%u]\n", base, maxt);
    for (size_t i = 0; i < run->ncells; i++) {
        const bench_cell *b = &run->cells[i];
        size_t r = panel / cols, col = panel % cols;

        if (!b->w->pooled || b->w->no_scaling || b->p.threads != base)
            continue;
        fprintf(g, "set origin %.4f,%.4f\nset size %.4f,%.4f\n", pw * (double)col,
                top - ph * (double)(r + 1), pw, ph);
        fprintf(g, "set title '%s: speed-up over %u worker%s'\n", b->w->name,
                base, base == 1 ? "" : "s");
        /* One datablock per implementation, then one plot command. */
        for (size_t k = 0; k < b->nimpl; k++) {
            fprintf(g, "$s%zu << EOD\n", k);
            for (size_t j = 0; j < run->nthreads; j++) {
                const bench_cell *c = results_find_cell(run, b->w, run->threads[j]);
                const impl_result *v = c != NULL ? &c->impl[k] : NULL;

                if (v == NULL || v->state != IMPL_OK || v->count == 0 ||
                    v->median <= 0 || b->impl[k].state != IMPL_OK ||
                    b->impl[k].count == 0 || b->impl[k].median <= 0)
                    continue;
                fprintf(g, "%u %.6g\n", run->threads[j],
                        results_speedup(b->w, b->impl[k].median, v->median));
            }
            fputs("EOD\n", g);
        }
        fputs("plot x/", g);
        fprintf(g, "%u", base);
        fputs(" with lines dt 2 lc rgb '#999999' title 'ideal'", g);
        for (size_t k = 0; k < b->nimpl; k++) {
            if (b->impl[k].state != IMPL_OK || b->impl[k].count == 0)
                continue;
            fprintf(g, ", $s%zu with linespoints lw %s lc rgb 0x%06lx title ", k,
                    k == 0 ? "2.5" : "1.2", colour_int(impl_colour(b->impl[k].name)));
            gq(g, b->impl[k].name);
        }
        fputc('\n', g);
        panel++;
    }
}

int plot_write(const char *path, const bench_run *run, const bench_machine *m)
{
    size_t npanels = 0;
    double ratio_px = 130.0 + 20.0 * (double)count_bars(run);
    double panel_px = 300.0, total;
    FILE *g;
    int status;

    if (run->nthreads > 1)
        for (size_t i = 0; i < run->ncells; i++)
            if (run->cells[i].w->pooled && !run->cells[i].w->no_scaling &&
                run->cells[i].p.threads == run->threads[0])
                npanels++;
    total = ratio_px + panel_px * (double)((npanels + 2) / 3);

    g = popen("gnuplot", "w");
    if (g == NULL) {
        fprintf(stderr, "weft-bench: --plot: cannot run gnuplot: %s\n",
                strerror(errno));
        return -errno;
    }
    fprintf(g, "set terminal svg size 1100,%.0f dynamic font 'sans,11' "
               "background '#ffffff'\n", total);
    fputs("set output ", g);
    gq(g, path);
    fputs("\nset multiplot\n", g);
    ratio_chart(g, run, m, 1.0, ratio_px / total);
    if (npanels > 0)
        scaling_panels(g, run, 1.0 - ratio_px / total,
                       1.0 - ratio_px / total, npanels);
    fputs("unset multiplot\nset output\n", g);
    status = pclose(g);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "weft-bench: --plot: gnuplot failed (status %d); "
                        "%s may be incomplete\n", status, path);
        return -EIO;
    }
    return 0;
}
