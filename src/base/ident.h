/*
 * base/ident.h — process-unique ids for tasks and coroutines (internal).
 *
 * An id is a 64-bit number, never 0 (0 means "no id": a free task record,
 * a NULL handle).  Each thread takes a block of WEFT__ID_BLOCK ids from
 * one global counter (an atomic add, once per block) and hands them out
 * with plain loads and stores, so making a task or a coroutine costs no
 * atomic read-modify-write.  Ids are unique within the process and grow
 * on each thread, but threads' blocks interleave: an id says nothing about
 * the order in which tasks on different threads were made.
 */
#ifndef WEFT_BASE_IDENT_H
#define WEFT_BASE_IDENT_H

#include <stdint.h>

#define WEFT__ID_BLOCK 256u

struct weft__id_block {
    uint64_t next, end;
};

extern __thread struct weft__id_block weft__ids
    __attribute__((tls_model("initial-exec")));

/* A fresh block for the calling thread, and its first id. */
uint64_t weft__id_refill(void);

/* A new id.  Reads this thread's block: call it where no switch can
 * come between its thread-local read and its write (base/compiler.h). */
static inline uint64_t weft__id_new(void)
{
    struct weft__id_block *b = &weft__ids;
    if (__builtin_expect(b->next != b->end, 1))
        return b->next++;
    return weft__id_refill();
}

#endif /* WEFT_BASE_IDENT_H */
