/*
 * servers.h — the servers weft-hook-bench measures against, started from
 * scratch on a free port of 127.0.0.1 in a fresh temporary directory and
 * always stopped by their pid (servers.c).
 *
 *   redis: redis-server with persistence off.
 *   pq:    a PostgreSQL cluster made by initdb (trust authentication,
 *          fsync off), run as the user postgres when we are root (the
 *          server refuses root), as ourselves otherwise.
 *
 * Each server runs in a process group of its own, with PR_SET_PDEATHSIG:
 * it dies with the driver even if the driver is killed.
 */
#ifndef WEFT_BENCH_HOOK_SERVERS_H
#define WEFT_BENCH_HOOK_SERVERS_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "hook_bench.h"

typedef struct hb_server {
    hb_db db;
    pid_t pid;          /* 0: not running                          */
    unsigned port;
    char dir[64];       /* the temporary directory ("" once removed) */
    char version[64];   /* "redis 7.0.15", "PostgreSQL 15.4"       */
} hb_server;

/* Set by the driver's signal handlers (SIGINT, SIGTERM, SIGHUP, SIGALRM):
 * every wait here gives up when it is non-zero. */
extern volatile sig_atomic_t hb_interrupted;

/* Whether the workload's server is installed: NULL if so, else the
 * reason (the package to install). */
const char *hb_server_missing(hb_db db);

/* Starts db's server for `clients` connections: 0 with *s filled, or -1
 * with why[] set (nothing left running, the directory removed). */
int hb_server_start(hb_server *s, hb_db db, unsigned clients, char *why,
                    size_t whylen);

/* Stops it (SIGTERM, or SIGINT for postgres: a fast shutdown; SIGKILL to
 * its group after 10 s) and removes its directory.  Idempotent. */
void hb_server_stop(hb_server *s);

#endif /* WEFT_BENCH_HOOK_SERVERS_H */
