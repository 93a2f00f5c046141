/*
 * accept-read — issue 23: workers held in a blocking system call.  On a
 * 2-worker pool with default options, 2 tasks each block in a plain
 * read(2) on a blocking pipe for 2 s (a plain thread then writes a byte
 * to each), beside a 1 ms ticker task and an echo server on the pool
 * (weft_accept, weft_read, weft_write); a plain thread, with ordinary
 * blocking sockets, sends it 100 messages 10 ms apart while the readers
 * block and times each round trip.
 * Targets: the ticker's worst lateness <= 25 ms, every round trip
 * <= 25 ms.  Exit 0: met, 1: not met, 2: error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "accept.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <weft/weft.h>

enum { READERS = 2, MESSAGES = 100, MSG_SIZE = 64 };

static struct ticker ticker;
static int pipes[READERS][2];
static uint64_t write_at; /* when the writer writes into the pipes */
static struct sockaddr_in server;
static double rtt_ms[MESSAGES];

static void *reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    char c = 0;
    ssize_t n = read(pipes[i][0], &c, 1); /* blocks its worker */
    return (void *)(intptr_t)(n != 1 || c != 'a' + i);
}

static void *writer(void *arg)
{
    (void)arg;
    sleep_until_ns(write_at);
    for (int i = 0; i < READERS; i++) {
        char c = (char)('a' + i);
        if (write(pipes[i][1], &c, 1) != 1)
            return (void *)1;
    }
    return NULL;
}

static void *echo_connection(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[4096];
    ssize_t n;
    while ((n = weft_read(fd, buf, sizeof buf)) > 0)
        if (weft_write(fd, buf, (size_t)n) != n)
            break;
    weft_close(fd);
    return NULL;
}

static void *acceptor(void *arg)
{
    int lfd = (int)(intptr_t)arg;
    for (;;) {
        int fd = weft_accept(lfd, NULL, NULL);
        if (fd < 0)
            break; /* -ECANCELED: main is done */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (weft_spawn(NULL, weft_pool_current(), echo_connection,
                       (void *)(intptr_t)fd, NULL) != 0)
            weft_close(fd);
    }
    weft_close(lfd);
    return NULL;
}

/* A plain client: one connection, MESSAGES round trips 10 ms apart. */
static void *client(void *arg)
{
    (void)arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0 || connect(fd, (struct sockaddr *)&server, sizeof server) != 0)
        return (void *)1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char out[MSG_SIZE], in[MSG_SIZE];
    uint64_t next = now_ns();
    for (int m = 0; m < MESSAGES; m++) {
        next += 10 * MS;
        sleep_until_ns(next);
        memset(out, 'A' + m % 26, sizeof out);
        uint64_t sent = now_ns();
        if (write(fd, out, sizeof out) != (ssize_t)sizeof out)
            return close(fd), (void *)1;
        for (size_t got = 0; got < sizeof in;) {
            ssize_t n = read(fd, in + got, sizeof in - got);
            if (n <= 0)
                return close(fd), (void *)1;
            got += (size_t)n;
        }
        rtt_ms[m] = (double)(now_ns() - sent) / 1e6;
        if (memcmp(in, out, sizeof in) != 0)
            return close(fd), (void *)1;
    }
    close(fd);
    return NULL;
}

/* A listening socket of weft's on 127.0.0.1, port chosen by the kernel. */
static int listen_loopback(void)
{
    int fd = weft_socket(AF_INET, SOCK_STREAM, 0);
    socklen_t len = sizeof server;
    server.sin_family = AF_INET;
    server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&server, sizeof server) != 0 ||
        listen(fd, 16) != 0 ||
        getsockname(fd, (struct sockaddr *)&server, &len) != 0)
        return -1;
    return fd;
}

int main(void)
{
    watchdog(30);
    signal(SIGPIPE, SIG_IGN);
    int lfd = listen_loopback();
    if (lfd < 0) {
        fprintf(stderr, "error: listen\n");
        return 2;
    }
    weft_task *tick, *acc, *readers[READERS];
    weft_pool *pool = start_pool_and_ticker(&ticker, &tick);
    if (weft_spawn(&acc, pool, acceptor, (void *)(intptr_t)lfd, NULL) != 0)
        return 2;

    write_at = now_ns() + 2000 * MS;
    for (int i = 0; i < READERS; i++)
        if (pipe(pipes[i]) != 0 ||
            weft_spawn(&readers[i], pool, reader, (void *)(intptr_t)i, NULL) != 0)
            return 2;
    pthread_t wt, ct;
    if (pthread_create(&wt, NULL, writer, NULL) != 0)
        return 2;
    sleep_until_ns(now_ns() + 100 * MS); /* the readers are in read(2) */
    if (pthread_create(&ct, NULL, client, NULL) != 0)
        return 2;

    void *wbad, *cbad, *rbad, *tbad;
    int bad = 0;
    pthread_join(ct, &cbad);
    pthread_join(wt, &wbad);
    for (int i = 0; i < READERS; i++)
        bad |= weft_sync_wait(readers[i], &rbad) != 0 || rbad;
    atomic_store(&ticker.stop, true);
    bad |= weft_sync_wait(tick, &tbad) != 0 || tbad;
    weft_task_cancel(acc);
    weft_sync_wait(acc, NULL);
    weft_pool_destroy(pool);
    if (bad || cbad || wbad) {
        fprintf(stderr, "error: a reader, the writer, the client or the ticker failed\n");
        return 2;
    }

    struct ticker_figures tf = ticker_report(&ticker);
    struct summary echo = summarize(rtt_ms, MESSAGES);
    printf("echo_worst_ms: %.3f\n", echo.worst);
    printf("echo_p99_ms: %.3f\n", echo.p99);
    int met = tf.worst <= 25.0 && echo.worst <= 25.0;
    printf("target: ticker worst <= 25 ms, echo worst <= 25 ms: %s\n", met ? "met" : "NOT met");
    return met ? 0 : 1;
}
