/*
 * loadgen.c — load generator for the echo workload (plain C: pthreads and
 * epoll, no weft, so it measures the server, not itself on weft).
 *
 *     loadgen HOST PORT [CONNS [MSGS [THREADS]]]
 *
 * Opens CONNS connections (default 1000) to HOST:PORT (a numeric IPv4
 * address), split evenly over THREADS threads (default 2), each an epoll
 * loop over its share.  Once every connection is open the clock starts and
 * each connection sends MSGS messages (default 1000) of 64 bytes one at a
 * time: send one, wait for all 64 bytes to come back, check every byte,
 * then send the next.  The round-trip time of each message (from the send
 * to the last byte back) is kept; at the end the connections are closed.
 *
 * Every message's bytes depend on its connection, its number and the byte's
 * position, so an echo from another connection, a stale one, or a byte out
 * of place is caught.
 *
 * Output, one line on stdout:
 *     messages=M seconds=S msgs_per_s=R p50_us=A p99_us=B
 * (M: messages echoed and checked, CONNS x MSGS; R = M / S, S from the
 * first send to the last echo).  Exit status 0; 1 on any failure (a refused
 * or reset connection, a wrong byte, an early close, ten seconds without
 * progress), with the reason on stderr; 2 on a bad command line.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum {
    MSG_SIZE = 64,
    STALL_MS = 10000, /* no event for this long: the server is stuck */
    MAX_EVENTS = 256,
};

struct conn {
    int fd;
    uint32_t id;
    uint32_t sent;          /* messages sent so far                     */
    uint32_t got;           /* bytes of the current echo received       */
    uint64_t sent_at;       /* when the current message went out (ns)  */
    unsigned char msg[MSG_SIZE];
    unsigned char echo[MSG_SIZE];
};

struct worker {
    pthread_t thread;
    struct conn *conns;
    size_t nconns;
    uint64_t *lat;          /* round trips, ns: nconns * msgs slots      */
    size_t nlat;
    uint64_t last_echo;     /* when the last echo came back (ns)        */
    bool failed;
};

static struct sockaddr_in server;
static uint32_t msgs;
static pthread_barrier_t connected;
static uint64_t start_ns; /* written before the barrier's second wait */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Message n of connection id: each byte a function of all three. */
static void fill(unsigned char *m, uint32_t id, uint32_t n)
{
    uint32_t x = id * 2654435761u ^ n * 40503u ^ 0x9e3779b9u;
    for (int i = 0; i < MSG_SIZE; i++) {
        x = x * 1103515245u + 12345u;
        m[i] = (unsigned char)(x >> 16);
    }
}

static int open_conn(struct conn *c)
{
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -errno;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* Blocking connect (loopback: immediate, or refused), then
     * non-blocking for the epoll loop. */
    if (connect(c->fd, (struct sockaddr *)&server, sizeof server) != 0)
        return -errno;
    int fl = fcntl(c->fd, F_GETFL);
    if (fl < 0 || fcntl(c->fd, F_SETFL, fl | O_NONBLOCK) != 0)
        return -errno;
    return 0;
}

static bool send_next(struct worker *w, struct conn *c)
{
    fill(c->msg, c->id, c->sent);
    c->got = 0;
    c->sent_at = now_ns();
    /* 64 bytes into a socket whose previous echo has been read: the send
     * buffer is empty, so anything short of all of it is a failure. */
    ssize_t n = send(c->fd, c->msg, MSG_SIZE, MSG_NOSIGNAL);
    if (n != MSG_SIZE) {
        fprintf(stderr, "loadgen: connection %" PRIu32 ": send: %s\n", c->id,
                n < 0 ? strerror(errno) : "short");
        w->failed = true;
        return false;
    }
    c->sent++;
    return true;
}

/* Reads what is there; returns false on a failure, true otherwise.  *done
 * is set when the connection has had all its echoes. */
static bool on_readable(struct worker *w, struct conn *c, bool *done)
{
    for (;;) {
        ssize_t n = recv(c->fd, c->echo + c->got, MSG_SIZE - c->got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        if (n <= 0) {
            fprintf(stderr, "loadgen: connection %" PRIu32 ", message %" PRIu32
                    ": %s after %" PRIu32 " of %d bytes\n", c->id, c->sent,
                    n == 0 ? "closed by the server" : strerror(errno), c->got,
                    MSG_SIZE);
            w->failed = true;
            return false;
        }
        c->got += (uint32_t)n;
        if (c->got < MSG_SIZE)
            continue;
        uint64_t t = now_ns();
        if (memcmp(c->echo, c->msg, MSG_SIZE) != 0) {
            fprintf(stderr, "loadgen: connection %" PRIu32 ", message %" PRIu32
                    ": the echo differs from what was sent\n", c->id, c->sent);
            w->failed = true;
            return false;
        }
        w->lat[w->nlat++] = t - c->sent_at;
        w->last_echo = t;
        if (c->sent == msgs) {
            *done = true;
            return true;
        }
        if (!send_next(w, c))
            return false;
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) {
        perror("loadgen: epoll_create1");
        w->failed = true;
    }
    for (size_t i = 0; i < w->nconns && !w->failed; i++) {
        struct conn *c = &w->conns[i];
        int rc = open_conn(c);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (rc == 0 && epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) != 0)
            rc = -errno;
        if (rc != 0) {
            fprintf(stderr, "loadgen: connection %" PRIu32 ": %s\n", c->id,
                    strerror(-rc));
            w->failed = true;
        }
    }
    /* Everyone connected (or failed); thread 0 reads the clock. */
    pthread_barrier_wait(&connected);
    pthread_barrier_wait(&connected);

    size_t left = w->nconns;
    for (size_t i = 0; i < w->nconns && !w->failed; i++)
        send_next(w, &w->conns[i]);
    while (left > 0 && !w->failed) {
        struct epoll_event evs[MAX_EVENTS];
        int n = epoll_wait(ep, evs, MAX_EVENTS, STALL_MS);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "loadgen: %s\n",
                    n == 0 ? "no echo for 10 s: the server is stuck"
                           : strerror(errno));
            w->failed = true;
            break;
        }
        for (int i = 0; i < n && !w->failed; i++) {
            struct conn *c = evs[i].data.ptr;
            bool done = false;
            if (on_readable(w, c, &done) && done) {
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                left--;
            }
        }
    }
    for (size_t i = 0; i < w->nconns; i++)
        if (w->conns[i].fd >= 0)
            close(w->conns[i].fd);
    if (ep >= 0)
        close(ep);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static unsigned long arg_number(const char *s, unsigned long max,
                                const char *what)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *s == '-' || *end != '\0' || errno || v == 0 ||
        v > max) {
        fprintf(stderr, "loadgen: bad %s '%s'\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 6) {
        fprintf(stderr, "usage: loadgen HOST PORT [CONNS [MSGS [THREADS]]]\n");
        return 2;
    }
    server.sin_family = AF_INET;
    server.sin_port = htons((uint16_t)arg_number(argv[2], 65535, "port"));
    if (inet_pton(AF_INET, argv[1], &server.sin_addr) != 1) {
        fprintf(stderr, "loadgen: HOST must be a numeric IPv4 address\n");
        return 2;
    }
    size_t nconns = argc > 3 ? arg_number(argv[3], 1000000, "CONNS") : 1000;
    msgs = argc > 4 ? (uint32_t)arg_number(argv[4], 100000000, "MSGS") : 1000;
    size_t nthreads = argc > 5 ? arg_number(argv[5], 64, "THREADS") : 2;
    if (nthreads > nconns)
        nthreads = nconns;

    /* One descriptor per connection. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    struct conn *conns = calloc(nconns, sizeof *conns);
    struct worker *ws = calloc(nthreads, sizeof *ws);
    uint64_t *lat = calloc(nconns * msgs, sizeof *lat);
    if (!conns || !ws || !lat) {
        fprintf(stderr, "loadgen: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < nconns; i++) {
        conns[i].fd = -1;
        conns[i].id = (uint32_t)i;
    }
    pthread_barrier_init(&connected, NULL, (unsigned)nthreads + 1);
    size_t at = 0;
    for (size_t t = 0; t < nthreads; t++) {
        struct worker *w = &ws[t];
        w->nconns = nconns / nthreads + (t < nconns % nthreads);
        w->conns = conns + at;
        w->lat = lat + at * msgs;
        at += w->nconns;
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            fprintf(stderr, "loadgen: cannot start a thread\n");
            return 1;
        }
    }
    pthread_barrier_wait(&connected);
    start_ns = now_ns();
    pthread_barrier_wait(&connected);

    bool failed = false;
    uint64_t end_ns = start_ns;
    size_t total = 0;
    for (size_t t = 0; t < nthreads; t++) {
        pthread_join(ws[t].thread, NULL);
        failed |= ws[t].failed;
        if (ws[t].last_echo > end_ns)
            end_ns = ws[t].last_echo;
        /* Pack the threads' figures together for one sort. */
        memmove(lat + total, ws[t].lat, ws[t].nlat * sizeof *lat);
        total += ws[t].nlat;
    }
    if (failed)
        return 1;
    if (total != nconns * msgs) {
        fprintf(stderr, "loadgen: %zu echoes, expected %zu\n", total,
                nconns * msgs);
        return 1;
    }
    qsort(lat, total, sizeof *lat, cmp_u64);
    double secs = (double)(end_ns - start_ns) / 1e9;
    printf("messages=%zu seconds=%.6f msgs_per_s=%.1f p50_us=%.2f "
           "p99_us=%.2f\n",
           total, secs, secs > 0 ? (double)total / secs : 0.0,
           (double)lat[(total - 1) / 2] / 1e3,
           (double)lat[(total * 99 - 1) / 100] / 1e3);
    free(lat);
    free(ws);
    free(conns);
    return 0;
}
