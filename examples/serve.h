/*
 * serve.h — what the HTTP and key-value example servers share: the
 * command line (PORT [THREADS]), the listening socket, the accept loop,
 * one task per connection, and graceful shutdown on SIGINT/SIGTERM.
 *
 * It is examples/echo_server.c's skeleton, grown by what a server with
 * persistent connections needs:
 *
 *  - Accept backs off when it fails for want of a resource (-EMFILE,
 *    -ENFILE, -ENOBUFS, -ENOMEM).  The listening socket stays readable
 *    while connections queue in its backlog, so retrying at once would
 *    spin a worker at 100% CPU; sleeping 1 ms, doubling up to 200 ms,
 *    keeps the open connections served and picks the queue up again
 *    within 200 ms of a descriptor coming free.
 *
 *  - Shutdown.  The first SIGINT or SIGTERM closes the listener (new
 *    clients are refused) and ends every connection that is idle, i.e.
 *    waiting for its client's next request (serve_idle), by shutting its
 *    reading side: its pending read sees end of file.  A connection busy
 *    with a request finishes it; the next time it would go idle,
 *    serve_idle tells it to close instead.  The process exits 0 once every
 *    connection is gone.
 *
 * Every connection is a weft task running spec->handle(conn, fd); fd is
 * owned by weft and closed by serve after handle returns.
 */
#ifndef WEFT_EXAMPLES_SERVE_H
#define WEFT_EXAMPLES_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <weft/weft.h>

#define SERVE_MS 1000000ull /* nanoseconds per millisecond */

typedef struct serve_conn serve_conn;

typedef struct serve_spec {
    const char *name;                      /* for usage and messages      */
    void (*handle)(serve_conn *c, int fd); /* one connection, until done  */
    size_t stack_size;                     /* of each task; 0: weft's     */
    /* Optional: after the pool starts (before the first accept), and once
     * shutdown begins (in a task, before the connections drain).  start
     * returns 0 or a negative errno (the server then exits 1). */
    int (*start)(weft_pool *pool);
    void (*stop)(void);
} serve_spec;

/* Parses argv (PORT [THREADS]), runs the server until it is shut down;
 * returns the process's exit status. */
int serve_main(const serve_spec *spec, int argc, char **argv);

/*
 * The connection is about to wait for its client's next request.  Returns
 * false when the server is shutting down: the handler should return (its
 * connection is closed).  After true, the wait may end early with end of
 * file if shutdown begins meanwhile.  serve_busy marks the end of the
 * wait.
 */
bool serve_idle(serve_conn *c);
void serve_busy(serve_conn *c);

/* True once shutdown has begun (a response may then say it closes). */
bool serve_stopping(void);

/* A setting from the environment: NAME's value as a decimal number, or
 * def when NAME is unset; a malformed value ends the program (exit 2). */
uint64_t serve_env(const char *name, uint64_t def);

/* CLOCK_MONOTONIC, in nanoseconds. */
uint64_t serve_now_ns(void);

#endif /* WEFT_EXAMPLES_SERVE_H */
