/*
 * json.c — --json FILE: everything one invocation measured, for scripts.
 * The schema ("weft-bench/4") is documented in bench/README.md; a change
 * to what is written here changes that document and the schema name.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bench_config.h"
#include "results.h"

/* A JSON string: quotes, backslashes and control characters escaped. */
static void jstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* A number; JSON has no NaN or infinity, so those become null. */
static void jnum(FILE *f, double v)
{
    if (v != v || v > 1e308 || v < -1e308)
        fputs("null", f);
    else
        fprintf(f, "%.9g", v);
}

static const char *state_name(impl_state s)
{
    switch (s) {
    case IMPL_OK: return "ok";
    case IMPL_SKIPPED: return "skipped";
    case IMPL_NA: return "n/a";
    case IMPL_FAILED: return "failed";
    }
    return "?";
}

static void write_impl(FILE *f, const bench_cell *c, size_t k)
{
    const impl_result *r = &c->impl[k];
    bool figures = r->state == IMPL_OK && r->count > 0;
    double ratio = results_ratio(c, k);

    fputs("        {\"impl\": ", f);
    jstr(f, r->name);
    fputs(", \"state\": ", f);
    jstr(f, state_name(r->state));
    fputs(", \"why\": ", f);
    if (r->state == IMPL_SKIPPED || r->state == IMPL_FAILED ||
        (r->state == IMPL_NA && r->why[0] != '\0'))
        jstr(f, r->why);
    else
        fputs("null", f);
    fputs(",\n         \"runs\": [", f);
    for (unsigned j = 0; j < r->count; j++) {
        if (j > 0)
            fputs(", ", f);
        jnum(f, r->runs[j]);
    }
    fputs("],\n         \"extra\": {", f);
    for (size_t e = 0; e < results_extra_count(c->w); e++) {
        fputs(e > 0 ? ", " : "", f);
        jstr(f, c->w->extra[e].name);
        fputs(": {\"unit\": ", f);
        jstr(f, c->w->extra[e].unit);
        fputs(", \"runs\": [", f);
        for (unsigned j = 0; j < r->count; j++) {
            if (j > 0)
                fputs(", ", f);
            jnum(f, r->extra_runs[e][j]);
        }
        fputs("]", f);
        if (figures) {
            fputs(", \"median\": ", f);
            jnum(f, r->extra_median[e]);
        }
        fputs("}", f);
    }
    fputs("}", f);
    if (figures) {
        fputs(", \"median\": ", f);
        jnum(f, r->median);
        fputs(", \"min\": ", f);
        jnum(f, r->min);
        fputs(", \"max\": ", f);
        jnum(f, r->max);
    }
    fputs(",\n         \"counted_per_op\": ", f);
    if (r->counted_runs == 0) {
        fputs("null", f);
    } else {
        fputs("{", f);
        for (size_t e = 0; e < BENCH_NCOUNTS; e++) {
            fputs(e > 0 ? ", " : "", f);
            jstr(f, bench_count_names[e]);
            fputs(": {\"runs\": [", f);
            for (unsigned j = 0; j < r->counted_runs; j++) {
                fputs(j > 0 ? ", " : "", f);
                if (r->count_runs[e][j] < 0.0)
                    fputs("null", f);
                else
                    jnum(f, r->count_runs[e][j]);
            }
            fputs("], \"median\": ", f);
            if (r->count_median[e] < 0.0)
                fputs("null", f);
            else
                jnum(f, r->count_median[e]);
            fputs("}", f);
        }
        fputs("}", f);
    }
    fputs(", \"ratio\": ", f);
    if (ratio >= 0.0)
        jnum(f, ratio);
    else
        fputs("null", f);
    fputs("}", f);
}

int json_write(const char *path, const bench_run *run, const bench_machine *m)
{
    FILE *f = fopen(path, "w");
    int rc = 0;

    if (f == NULL) {
        rc = -errno;
        fprintf(stderr, "weft-bench: --json %s: %s\n", path, strerror(errno));
        return rc;
    }
    fputs("{\n  \"schema\": \"weft-bench/6\",\n  \"date\": ", f);
    jstr(f, m->date);
    fputs(",\n  \"machine\": {\"cpu\": ", f);
    jstr(f, m->cpu);
    fprintf(f, ", \"cpus\": %u, \"kernel\": ", m->cpus);
    jstr(f, m->kernel);
    fprintf(f, ", \"memory_bytes\": %llu,\n              \"vendor\": ",
            (unsigned long long)m->mem_bytes);
    jstr(f, m->vendor);
    fprintf(f, ", \"family\": %d, \"model\": %d, \"meltdown\": ", m->family,
            m->model);
    jstr(f, m->meltdown);
    fprintf(f, ", \"page_table_isolation\": %s,\n              "
               "\"syscalls_counted\": %s, \"syscalls_why\": ",
            strstr(m->meltdown, "PTI") != NULL ? "true" : "false",
            m->syscalls_counted ? "true" : "false");
    if (m->syscalls_counted)
        fputs("null", f);
    else
        jstr(f, m->syscalls_why);
    fprintf(f, ",\n              \"line_handoff_ns\": %.1f, "
               "\"first_touch_ns\": %.1f",
            m->line_handoff_ns, m->first_touch_ns);
    fputs("},\n", f);
    fputs("  \"build\": {\"weft_version\": ", f);
    jstr(f, BENCH_WEFT_VERSION);
    fputs(", \"compiler\": ", f);
    jstr(f, BENCH_COMPILER);
    fputs(", \"optimization\": ", f);
    jstr(f, BENCH_OPTIMIZATION);
    fputs(", \"sanitize\": ", f);
    jstr(f, BENCH_SANITIZE);
    fputs(", \"event\": ", f);
    jstr(f, BENCH_EVENT);
    fputs("},\n  \"peers\": [\n", f);
    for (size_t i = 0; i < bench_peer_count; i++) {
        const peer_info *pi = &bench_peer_table[i];

        fputs("    {\"name\": ", f);
        jstr(f, pi->name);
        fprintf(f, ", \"built\": %s, \"package\": ", pi->built ? "true" : "false");
        jstr(f, pi->package);
        fputs(", \"version\": ", f);
        jstr(f, pi->version);
        fprintf(f, "}%s\n", i + 1 < bench_peer_count ? "," : "");
    }
    fprintf(f, "  ],\n  \"options\": {\"runs\": %u, \"quick\": %s, \"threads\": [",
            run->runs, run->quick ? "true" : "false");
    for (size_t i = 0; i < run->nthreads; i++)
        fprintf(f, "%s%u", i > 0 ? ", " : "", run->threads[i]);
    fputs("]},\n  \"results\": [\n", f);
    for (size_t i = 0; i < run->ncells; i++) {
        const bench_cell *c = &run->cells[i];

        fputs("    {\"workload\": ", f);
        jstr(f, c->w->name);
        fputs(", \"unit\": ", f);
        jstr(f, c->w->unit);
        fprintf(f, ", \"n\": %llu, \"threads\": %u, \"pooled\": %s, "
                   "\"higher_is_better\": %s,\n     \"impls\": [\n",
                (unsigned long long)c->p.n, c->p.threads,
                c->w->pooled ? "true" : "false",
                c->w->higher_is_better ? "true" : "false");
        for (size_t k = 0; k < c->nimpl; k++) {
            write_impl(f, c, k);
            fputs(k + 1 < c->nimpl ? ",\n" : "\n", f);
        }
        fprintf(f, "     ]}%s\n", i + 1 < run->ncells ? "," : "");
    }
    fputs("  ]\n}\n", f);
    if (ferror(f))
        rc = -EIO;
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    if (rc != 0)
        fprintf(stderr, "weft-bench: --json %s: %s\n", path, strerror(-rc));
    return rc;
}
