/*
 * uninstrumented.c — stands in for a hook_servers test in a
 * ThreadSanitizer build: the client libraries (libhiredis, libpq,
 * libcurl) come from Debian, built without ThreadSanitizer, whose
 * reports about their own threads and locks would then be noise.  The
 * hook's own code is checked under ThreadSanitizer by suite 'hook',
 * whose programs are all built here.  Exits 77 (skipped).
 */
#include <stdio.h>

int main(void)
{
    printf("SKIP: %s is not built with ThreadSanitizer (a Debian "
           "library); suite 'hook' checks the hook under it\n", HS_WHAT);
    return 77;
}
