/*
 * base/ident.c — the global side of the id blocks (base/ident.h).
 */
#include "base/ident.h"

#include <stdatomic.h>

__thread struct weft__id_block weft__ids
    __attribute__((tls_model("initial-exec")));

/* The first id of the next block; ids start at 1. */
static _Atomic uint64_t next_block = 1;

uint64_t weft__id_refill(void)
{
    /* Relaxed: uniqueness needs only the atomicity of the add. */
    uint64_t first = atomic_fetch_add_explicit(&next_block, WEFT__ID_BLOCK,
                                               memory_order_relaxed);
    weft__ids.next = first + 1;
    weft__ids.end = first + WEFT__ID_BLOCK;
    return first;
}
