/*
 * child_main.c — weft-hook-bench-hooked: work.c linked with libweft-hook,
 * run by weft-hook-bench for the mode hooked (hook_bench.h).  Not meant
 * to be run by hand: `weft-hook-bench --modes hooked` does.
 */
#include <stdio.h>
#include <string.h>

#include "hook_bench.h"

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--child") == 0)
        return hb_child_main(argc - 1, argv + 1);
    fprintf(stderr, "weft-hook-bench-hooked: run by weft-hook-bench "
                    "(weft-hook-bench --modes hooked)\n");
    return 2;
}
