/*
 * epoll_echo.c — peer-epoll-echo: a TCP echo server with no runtime, for
 * weft-bench's echo workload: the hand-written baseline that a runtime's
 * convenience is measured against.
 *
 *     peer-epoll-echo PORT [THREADS]
 *
 * Listens on 127.0.0.1:PORT (0: a free port), prints "listening on PORT",
 * and sends back every byte each client sends until the client closes.
 * THREADS threads (default: one per CPU), each with its own epoll set;
 * all of them watch the one listening socket with EPOLLEXCLUSIVE (the
 * kernel wakes one waiting thread per new connection, not all), and a
 * thread serves the connections it accepted for their whole life, so no
 * connection is ever touched by two threads and nothing is locked.
 * Connections are level-triggered: each readiness report is one read of
 * up to 16 KiB and one write of it.  Bytes a write could not take (the
 * client not reading) wait in the connection's buffer, reading stops, and
 * EPOLLOUT is watched until they are gone.
 *
 * SIGINT or SIGTERM: stop accepting (the listener is closed once every
 * thread has dropped it), let the open connections run until their
 * clients close, then exit 0.  The main thread reads the signal with
 * sigwait and wakes the workers through an eventfd in each epoll set.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF_SIZE 16384
#define MAX_THREADS 256

typedef struct conn {
    int fd;
    size_t pending_off, pending_len; /* unsent bytes in buf */
    char buf[BUF_SIZE];
} conn;

static int listener;
static int stop_fd; /* eventfd: readable once shutdown begins */

/* Marks in epoll_event.data.ptr for the two fds that are not conns. */
static char listener_mark, stop_mark;

static void drop(int ep, conn *c, unsigned *open)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c);
    (*open)--;
}

/* Sends what is pending; 1 all gone, 0 some left, -1 the connection failed. */
static int send_pending(conn *c)
{
    while (c->pending_len > 0) {
        ssize_t n = send(c->fd, c->buf + c->pending_off, c->pending_len,
                         MSG_NOSIGNAL);
        if (n < 0)
            return errno == EAGAIN ? 0 : -1;
        c->pending_off += (size_t)n;
        c->pending_len -= (size_t)n;
    }
    return 1;
}

static void on_conn(int ep, conn *c, uint32_t events, unsigned *open)
{
    if (c->pending_len > 0) { /* waiting for room: only EPOLLOUT matters */
        int r = send_pending(c);
        if (r < 0) {
            drop(ep, c, open);
        } else if (r > 0) {
            struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
            epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        }
        return;
    }
    (void)events;
    ssize_t n = recv(c->fd, c->buf, sizeof c->buf, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN)) {
        drop(ep, c, open);
        return;
    }
    if (n < 0)
        return;
    c->pending_off = 0;
    c->pending_len = (size_t)n;
    int r = send_pending(c);
    if (r < 0) {
        drop(ep, c, open);
    } else if (r == 0) {
        struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
    }
}

static void accept_all(int ep, unsigned *open)
{
    for (;;) {
        int fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN: another thread took it, or none left */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn *c = malloc(sizeof *c);
        if (c == NULL) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->pending_len = 0;
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            close(fd);
            free(c);
            continue;
        }
        (*open)++;
    }
}

static void *worker(void *arg)
{
    (void)arg;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE,
                              .data.ptr = &listener_mark };
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev) != 0) {
        perror("peer-epoll-echo: epoll");
        exit(1);
    }
    ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &stop_mark };
    epoll_ctl(ep, EPOLL_CTL_ADD, stop_fd, &ev);
    unsigned open = 0;
    bool stopping = false;
    struct epoll_event events[256];
    while (!stopping || open > 0) {
        int n = epoll_wait(ep, events, 256, -1);
        for (int i = 0; i < n; i++) {
            void *p = events[i].data.ptr;
            if (p == &listener_mark) {
                if (!stopping)
                    accept_all(ep, &open);
            } else if (p == &stop_mark) {
                if (!stopping) { /* level-triggered: drop it once seen */
                    stopping = true;
                    epoll_ctl(ep, EPOLL_CTL_DEL, stop_fd, NULL);
                    epoll_ctl(ep, EPOLL_CTL_DEL, listener, NULL);
                }
            } else {
                on_conn(ep, p, events[i].events, &open);
            }
        }
    }
    close(ep);
    return NULL;
}

static int listen_on(unsigned port, unsigned *bound)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(fd, SOMAXCONN) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    *bound = ntohs(a.sin_port);
    return fd;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: peer-epoll-echo PORT [THREADS]\n");
        return 2;
    }
    unsigned port = (unsigned)strtoul(argv[1], NULL, 10);
    long threads = argc > 2 ? strtol(argv[2], NULL, 10)
                            : sysconf(_SC_NPROCESSORS_ONLN);
    if (port > 65535 || threads < 1 || threads > MAX_THREADS) {
        fprintf(stderr, "peer-epoll-echo: bad port or thread count\n");
        return 2;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL); /* inherited by the workers */

    unsigned bound;
    listener = listen_on(port, &bound);
    stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (listener < 0 || stop_fd < 0) {
        perror("peer-epoll-echo");
        return 1;
    }
    pthread_t tids[MAX_THREADS];
    for (long i = 0; i < threads; i++) {
        if (pthread_create(&tids[i], NULL, worker, NULL) != 0) {
            fprintf(stderr, "peer-epoll-echo: pthread_create failed\n");
            return 1;
        }
    }
    printf("listening on %u\n", bound);
    fflush(stdout);

    int sig;
    sigwait(&stop, &sig);
    /* New clients are refused from here on (shutdown(2) of a listening
     * socket ends its listening); the fd itself is closed only once no
     * thread can be using it. */
    shutdown(listener, SHUT_RDWR);
    uint64_t one = 1;
    if (write(stop_fd, &one, sizeof one) != sizeof one)
        return 1;
    for (long i = 0; i < threads; i++)
        pthread_join(tids[i], NULL);
    close(listener);
    return 0;
}
