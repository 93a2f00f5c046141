/*
 * missing.c — stands in for a hook_servers test whose client library's
 * development package was missing when the build was configured: it
 * says which packages to install and exits 77, which meson reports as
 * skipped (HS_WHAT and HS_PACKAGES come from meson.build).
 */
#include <stdio.h>

int main(void)
{
    printf("SKIP: %s not found when the build was configured; install the "
           "Debian packages: %s (and reconfigure)\n", HS_WHAT, HS_PACKAGES);
    return 77;
}
