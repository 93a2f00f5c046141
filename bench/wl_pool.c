/* wl_pool.c — the pooled workloads' shared plumbing (see wl_pool.h). */
#include <stdio.h>

#include "wl_pool.h"

int bench_pool_create(weft_pool **out, unsigned threads, const char *who)
{
    const weft_pool_opts opts = { .threads = threads, .stack_size = 0,
                                  .name = "bench" };
    int rc = weft_pool_create(out, &opts);

    if (rc != 0)
        fprintf(stderr, "%s: weft_pool_create(%u threads): %s\n", who, threads,
                weft_strerror(rc));
    return rc;
}

int bench_pool_destroy(weft_pool *pool, const char *who)
{
    int rc = weft_pool_destroy(pool);

    if (rc != 0)
        fprintf(stderr, "%s: weft_pool_destroy: %s\n", who, weft_strerror(rc));
    return rc;
}

int bench_pool_run(weft_pool *pool, weft_fn fn, void *arg, void **result,
                   const char *who)
{
    weft_task *t;
    int rc = weft_spawn(&t, pool, fn, arg, NULL);

    if (rc != 0) {
        fprintf(stderr, "%s: weft_spawn (root task): %s\n", who, weft_strerror(rc));
        return rc;
    }
    rc = weft_sync_wait(t, result);
    if (rc != 0)
        fprintf(stderr, "%s: weft_sync_wait (root task): %s\n", who,
                weft_strerror(rc));
    return rc;
}

void bench_task_err_reset(bench_task_err *e)
{
    atomic_store(&e->rc, 0);
    e->what = NULL;
}

void bench_task_error(bench_task_err *e, int rc, const char *what)
{
    int none = 0;

    if (rc != 0 && atomic_compare_exchange_strong(&e->rc, &none, rc))
        e->what = what; /* read by main only after the root task ended */
}

int bench_task_err_check(bench_task_err *e, const char *who)
{
    int rc = atomic_load(&e->rc);

    if (rc != 0)
        fprintf(stderr, "%s: %s in a task: %s\n", who,
                e->what != NULL ? e->what : "a call", weft_strerror(rc));
    return rc;
}

int bench_pool_session(weft_pool **pool, unsigned threads, weft_fn root,
                       void *arg, bench_task_err *err, const char *who)
{
    bench_task_err_reset(err);
    int rc = bench_pool_create(pool, threads, who);
    if (rc != 0)
        return rc;
    rc = bench_pool_run(*pool, root, arg, NULL, who);
    int rc2 = bench_pool_destroy(*pool, who);
    *pool = NULL;
    if (rc == 0)
        rc = bench_task_err_check(err, who);
    return rc != 0 ? rc : rc2;
}
