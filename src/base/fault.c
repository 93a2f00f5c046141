/*
 * base/fault.c — the counter behind base/alloc.h's wrappers; built only
 * with -Dfault_injection=true.
 *
 * Calls are numbered in the order they reach the counter, from every thread
 * (one atomic increment), so in a multi-threaded program the number of a
 * given call can differ between runs; the sweep only relies on each run
 * failing exactly one call.  Sites are remembered by file and line, so a
 * test can report which ones it reached.
 */
#include "base/alloc.h"
#include "base/direct.h"

#include <stdatomic.h>
#include <string.h>

static _Atomic unsigned long armed;   /* the call to fail; 0: none */
static atomic_bool all_fail;          /* weft__fault_fail_all */
static _Atomic unsigned long calls;
static atomic_bool fired;
static bool old_kernel;               /* WEFT_FAULT_OLD_KERNEL */

struct site {
    const char *file;
    int line;
    const char *func;
    const char *what;
    unsigned long calls;
};

/* More than weft has; a site past the table is still counted, only not
 * listed. */
#define MAX_SITES 128
static pthread_mutex_t sites_lock = PTHREAD_MUTEX_INITIALIZER;
static struct site sites[MAX_SITES];
static unsigned nsites;

static void note_site(const char *file, int line, const char *func,
                      const char *what)
{
    weft__lock(&sites_lock);
    unsigned i = 0;
    while (i < nsites && !(sites[i].line == line &&
                           strcmp(sites[i].file, file) == 0))
        i++;
    if (i == nsites && nsites < MAX_SITES)
        sites[nsites++] = (struct site){file, line, func, what, 0};
    if (i < nsites)
        sites[i].calls++;
    pthread_mutex_unlock(&sites_lock);
}

int weft__fault_hit(const char *file, int line, const char *func,
                    const char *what)
{
    note_site(file, line, func, what);
    /* madvise is only used for guard pages (stack.c). */
    if (old_kernel && strcmp(what, "madvise") == 0)
        return EINVAL;
    unsigned long n = atomic_fetch_add(&calls, 1) + 1;
    if (atomic_load(&all_fail))
        return ENOMEM;
    if (n != atomic_load(&armed))
        return 0;
    atomic_store(&fired, true);
    fprintf(stderr, "weft-fault: call %lu fails: %s at %s:%d (%s)\n", n, what,
            file, line, func);
    return ENOMEM;
}

void weft__fault_arm(unsigned long k)
{
    atomic_store(&calls, 0);
    atomic_store(&fired, false);
    atomic_store(&armed, k);
}

void weft__fault_fail_all(bool on)
{
    atomic_store(&all_fail, on);
}

bool weft__fault_failing_all(void)
{
    return atomic_load_explicit(&all_fail, memory_order_relaxed);
}

unsigned long weft__fault_calls(void)
{
    return atomic_load(&calls);
}

bool weft__fault_fired(void)
{
    return atomic_load(&fired);
}

unsigned long weft__fault_calls_of(const char *what)
{
    unsigned long n = 0;
    weft__lock(&sites_lock);
    for (unsigned i = 0; i < nsites; i++)
        if (strcmp(sites[i].what, what) == 0)
            n += sites[i].calls;
    pthread_mutex_unlock(&sites_lock);
    return n;
}

void weft__fault_print_sites(FILE *to)
{
    weft__lock(&sites_lock);
    for (unsigned i = 0; i < nsites; i++) {
        /* Paths are relative to the build folder: keep what follows src/. */
        const char *f = strstr(sites[i].file, "src/");
        fprintf(to, "site %s:%d %s %s\n", f ? f : sites[i].file,
                sites[i].line, sites[i].func, sites[i].what);
    }
    pthread_mutex_unlock(&sites_lock);
}

/* Before main, so that calls made by constructors of the program count. */
__attribute__((constructor)) static void arm_from_env(void)
{
    const char *at = getenv("WEFT_FAULT_AT");
    if (at && *at)
        weft__fault_arm(strtoul(at, NULL, 10));
    const char *old = getenv("WEFT_FAULT_OLD_KERNEL");
    old_kernel = old && strcmp(old, "1") == 0;
}
