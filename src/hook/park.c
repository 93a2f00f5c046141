/*
 * hook/park.c — what a park inside a hooked call keeps for its task.
 *
 * The task parks pinned (sched/hook.c): it continues on the thread it
 * parked on, so thread-locals whose address its caller holds stay valid.
 * Their contents are another matter: the thread runs other tasks
 * meanwhile.  errno each hooked call saves itself.  OpenSSL's error queue
 * is per thread, and OpenSSL reads it after a call (SSL_get_error looks
 * at it first: an entry another task left there turns a clean close, 0
 * from SSL_read, into SSL_ERROR_SSL, and a cancelled read's ECANCELED
 * into another connection's failure).  OpenSSL's rule is to empty the
 * queue before each call, and a call that fails returns rather than
 * blocks, so a task nearly always parks with the queue empty: then it is
 * emptied again when the task continues, of whatever the tasks that ran
 * meanwhile left in it.  A queue that holds entries at the park is left
 * as it is: its entries, their strings and their marks cannot be set
 * aside and put back with the public API of every version.
 *
 * Not around the nap of a contended pthread mutex (mutex.c): the mutex
 * may be libcrypto's own, locked inside its code, which must not be
 * entered again from there.
 *
 * libcrypto is not a dependency: its two functions are looked up in the
 * process (dlsym), and while it is not loaded, again at most once a
 * second (a program may load it late, with dlopen).
 */
#include "hook/wait.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef unsigned long (*err_peek_fn)(void);
typedef void (*err_clear_fn)(void);

/* Set once, clear before peek: whoever sees peek (acquire) sees clear. */
static _Atomic(err_peek_fn) err_peek;
static _Atomic(err_clear_fn) err_clear;
/* When to look for libcrypto again (hook_now's ns). */
static _Atomic uint64_t next_look;

#define LOOK_AGAIN_NS 1000000000u

/* libcrypto's ERR_peek_error, or NULL while it is not loaded. */
static err_peek_fn openssl_peek(void)
{
    err_peek_fn peek = atomic_load_explicit(&err_peek, memory_order_acquire);
    if (peek)
        return peek;
    uint64_t now = hook_now();
    /* Relaxed: a lookup more or less, never a wrong result. */
    if (now < atomic_load_explicit(&next_look, memory_order_relaxed))
        return NULL;
    atomic_store_explicit(&next_look, now + LOOK_AGAIN_NS,
                          memory_order_relaxed);
    void *p = dlsym(RTLD_DEFAULT, "ERR_peek_error");
    void *c = dlsym(RTLD_DEFAULT, "ERR_clear_error");
    if (!p || !c)
        return NULL;
    /* Function pointers from dlsym's object pointers (POSIX guarantees
     * the conversion; ISO C does not say, hence the memcpy). */
    err_clear_fn clear;
    memcpy(&peek, &p, sizeof peek);
    memcpy(&clear, &c, sizeof clear);
    atomic_store_explicit(&err_clear, clear, memory_order_relaxed);
    atomic_store_explicit(&err_peek, peek, memory_order_release);
    return peek;
}

void hook_park_begin(struct hook_park *pk)
{
    err_peek_fn peek = openssl_peek();
    pk->clear_openssl = peek && peek() == 0;
    weft__hook_pin();
}

void hook_park_end(struct hook_park *pk)
{
    weft__hook_unpin();
    if (pk->clear_openssl)
        atomic_load_explicit(&err_clear, memory_order_relaxed)();
}
