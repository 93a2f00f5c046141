/*
 * echo_server.c — a TCP echo server: one task per connection.
 *
 *     echo_server PORT [THREADS]
 *
 * Listens on 127.0.0.1:PORT (0: a free port chosen by the kernel), prints
 * "listening on PORT" (the port it got) on stdout, and sends back every
 * byte each client sends until the client closes.  THREADS is the pool's
 * size (default: one worker per CPU).
 *
 * Each connection is a task that reads and writes as if with blocking
 * calls: weft_read and weft_write park the task while the socket is not
 * ready and the worker runs other connections meanwhile.  One more task
 * accepts, and one waits for a signal.
 *
 * SIGINT or SIGTERM shuts it down gracefully: stop accepting (the
 * listening socket is closed, so new clients are refused), let the open
 * connections run until their clients close, then exit 0.  The signals are
 * blocked in every thread and read from a signalfd by a task, which then
 * cancels the accept task: its weft_accept returns -ECANCELED.  Main counts
 * what is still running (the accept task and each connection) and waits
 * on an event set when the count reaches zero.
 *
 * The connections' fds come from weft_accept, so they are owned by weft
 * (weft/io.h): the fast path.  With ECHO_FDS=borrowed in the environment
 * the server accepts with accept4(2) itself, as code that hands weft
 * sockets it did not make would, so every connection is a borrowed fd:
 * the bench measures the two side by side (echo, echo-borrowed).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX sockets and signals beside C11 */
#endif
#include <weft/weft.h>
#include <weft/io.h>

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define MS 1000000u

static weft_pool *pool;
static int listener;
static weft_task *acceptor;
/* The accept task and every open connection hold one count; the last one
 * out sets `drained`. */
static atomic_long running = 1;
static weft_event drained;
static bool borrowed; /* ECHO_FDS=borrowed: see the top */

static void leave(void)
{
    if (atomic_fetch_sub(&running, 1) == 1)
        weft_event_set(&drained);
}

static void *connection(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[16384];
    for (;;) {
        ssize_t n = weft_read(fd, buf, sizeof buf);
        if (n <= 0) /* the client closed (0), or reset the connection */
            break;
        if (weft_write(fd, buf, (size_t)n) != n)
            break;
    }
    /* weft_accept's fds are weft's: weft_close, not close(2). */
    if (borrowed)
        close(fd);
    else
        weft_close(fd);
    leave();
    return NULL;
}

static void *accept_loop(void *arg)
{
    (void)arg;
    for (;;) {
        int fd;
        if (!borrowed) {
            fd = weft_accept(listener, NULL, NULL);
        } else {
            int ready = weft_wait_fd(listener, WEFT_IN);
            fd = ready < 0 ? ready : accept4(listener, NULL, NULL, SOCK_CLOEXEC);
            if (fd == -1)
                fd = -errno;
            if (fd == -EAGAIN) /* the readiness was for a connection gone */
                continue;
        }
        if (fd == -ECANCELED) /* shutting down */
            break;
        if (fd < 0) {
            /* Out of descriptors or memory, or an aborted handshake: say
             * so, and go on serving the connections already open. */
            fprintf(stderr, "echo_server: accept: %s\n", strerror(-fd));
            if (fd != -ECONNABORTED)
                weft_sleep(100 * MS);
            continue;
        }
        /* Small messages go out at once rather than waiting to be merged
         * with later ones (Nagle): an echo is a request-response protocol. */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        atomic_fetch_add(&running, 1);
        if (weft_spawn(NULL, pool, connection, (void *)(intptr_t)fd, NULL) != 0) {
            if (borrowed)
                close(fd);
            else
                weft_close(fd);
            leave();
        }
    }
    weft_close(listener);
    leave();
    return NULL;
}

static void *signal_watch(void *arg)
{
    int sfd = (int)(intptr_t)arg;
    struct signalfd_siginfo si;
    /* A signal, or (should the read fail) nothing more to wait for:
     * either way, shut down. */
    (void)weft_read(sfd, &si, sizeof si);
    weft_task_cancel(acceptor);
    return NULL;
}

/* A listening socket on 127.0.0.1:port; the port it got in *bound. */
static int listen_on(unsigned port, unsigned *bound)
{
    int fd = weft_socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(fd, SOMAXCONN) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        weft_close(fd);
        return -1;
    }
    *bound = ntohs(a.sin_port);
    return fd;
}

static unsigned number(const char *s, unsigned max, const char *what)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v > max) {
        fprintf(stderr, "echo_server: bad %s '%s'\n", what, s);
        exit(2);
    }
    return (unsigned)v;
}

int main(int argc, char **argv)
{
    bool help = argc == 2 && (strcmp(argv[1], "--help") == 0 ||
                              strcmp(argv[1], "-h") == 0);
    if (help || argc < 2 || argc > 3) {
        fprintf(help ? stdout : stderr,
                "usage: echo_server PORT [THREADS]   (echoes every TCP "
                "connection on 127.0.0.1:PORT; THREADS workers, 0: one a "
                "CPU)\n");
        return help ? 0 : 2;
    }
    unsigned port = number(argv[1], 65535, "port");
    unsigned threads = argc > 2 ? number(argv[2], 1024, "thread count") : 0;
    const char *fds = getenv("ECHO_FDS");
    borrowed = fds && strcmp(fds, "borrowed") == 0;

    /* One descriptor per connection: lift the soft limit (often 1024) to
     * the hard one. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    /* A client that resets its connection must not kill us with SIGPIPE
     * at the next write; the write fails with EPIPE instead. */
    signal(SIGPIPE, SIG_IGN);
    /* Block the shutdown signals before any thread starts (threads inherit
     * the mask), so that they are only ever read from the signalfd. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    int sfd = signalfd(-1, &stop, SFD_CLOEXEC);
    /* Handed to weft (made non-blocking), so a task can wait on it. */
    if (sfd >= 0 && weft_fd_adopt(sfd) != 0)
        sfd = -1;

    unsigned bound;
    listener = listen_on(port, &bound);
    if (sfd < 0 || listener < 0) {
        perror("echo_server");
        return 1;
    }
    weft_event_init(&drained);
    weft_pool_opts opts = {.threads = threads, .name = "echo"};
    weft_task *watcher;
    int rc = weft_pool_create(&pool, &opts);
    if (rc == 0)
        rc = weft_spawn(&acceptor, pool, accept_loop, NULL, NULL);
    if (rc == 0)
        rc = weft_spawn(&watcher, pool, signal_watch, (void *)(intptr_t)sfd, NULL);
    if (rc != 0) {
        fprintf(stderr, "echo_server: %s\n", weft_strerror(rc));
        return 1;
    }
    printf("listening on %u\n", bound);
    fflush(stdout);

    /* The watcher uses the accept task's handle, so it is waited for
     * first; the accept task ends only once the watcher has cancelled it. */
    weft_sync_wait(watcher, NULL);
    weft_sync_wait(acceptor, NULL);
    weft_event_wait(&drained);
    weft_pool_destroy(pool);
    weft_close(sfd);
    return 0;
}
