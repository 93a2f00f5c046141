/*
 * server.h — what the server workloads (wl_echo.c, wl_http.c, wl_kv.c)
 * share: starting a server program, running a client against it, and
 * stopping the server with the CPU time it used.
 *
 * A server program is run as `SERVER 0 THREADS`; it must print
 * "listening on PORT" (the port it got) within 10 s, and exit 0 within
 * 10 s of SIGTERM (graceful shutdown: the client has closed its
 * connections by then).  Its CPU time (user + kernel, its whole life,
 * from wait4's resource usage, which includes the children it reaped: a
 * wrapper that runs nginx or redis-server and waits for it reports theirs)
 * is what a server-side cost per request is computed from.
 */
#ifndef WEFT_BENCH_SERVER_H
#define WEFT_BENCH_SERVER_H

#include <stddef.h>
#include <sys/types.h>

#include "counters.h"

typedef struct bench_server {
    pid_t pid;
    int fd;        /* its stdout */
    unsigned port;
    bench_count_attach counting; /* its system calls, once listening */
} bench_server;

/* Starts prog; 0 with *s filled, or -1 with why[] set. */
int bench_server_start(const char *prog, unsigned threads, bench_server *s,
                       char *why, size_t whylen);

/* SIGTERM, then waits: 0 with *cpu_seconds and *counts (its whole life's
 * rusage, its system calls since it listened) set, or -1 with why[] set
 * (did not exit 0 in time). */
int bench_server_stop(bench_server *s, double *cpu_seconds,
                      bench_counts *counts, char *why, size_t whylen);

/* Runs a client program (argv[0] a path) to its end, its stdout into
 * out[len]: 0 if it exited 0, else -1 with why[] set. */
int bench_run_client(char *const argv[], char *out, size_t len, char *why,
                     size_t whylen);

#endif /* WEFT_BENCH_SERVER_H */
