/*
 * serve.c — the listening, accepting and shutting down that the HTTP and
 * key-value example servers share (see serve.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX sockets and signals beside C11 */
#endif
#include "serve.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Accept's back-off while descriptors or memory are short (serve.h). */
#define BACKOFF_FIRST_NS (1 * SERVE_MS)
#define BACKOFF_MAX_NS (200 * SERVE_MS)

/* One open connection.  Linked into `conns` for as long as its fd is
 * open, so that shutdown can reach the idle ones. */
struct serve_conn {
    int fd;
    atomic_bool idle;
    serve_conn *prev, *next;
};

static const serve_spec *spec;
static weft_pool *pool;
static int listener;
static weft_task *acceptor;

/* The accept task and every open connection hold one count; the last one
 * out sets `drained`. */
static atomic_long running = 1;
static weft_event drained;

/* The open connections.  A plain mutex: it is held for a few pointer
 * updates (or, at shutdown, one shutdown(2) per idle connection) and
 * never across a wait, so a task holding it never parks. */
static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static serve_conn conns = {.prev = &conns, .next = &conns};
static atomic_bool stopping;

uint64_t serve_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t serve_env(const char *name, uint64_t def)
{
    const char *s = getenv(name);
    if (s == NULL)
        return def;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno != 0) {
        fprintf(stderr, "%s: bad %s '%s' (a decimal number)\n", spec->name,
                name, s);
        exit(2);
    }
    return v;
}

bool serve_stopping(void)
{
    return atomic_load(&stopping);
}

bool serve_idle(serve_conn *c)
{
    /* Dekker's pattern with the shutdown below (both sequentially
     * consistent): either this sees `stopping`, or shutdown sees `idle`
     * and shuts the read side, or both; never neither. */
    atomic_store(&c->idle, true);
    if (atomic_load(&stopping)) {
        atomic_store(&c->idle, false);
        return false;
    }
    return true;
}

void serve_busy(serve_conn *c)
{
    atomic_store(&c->idle, false);
}

static void leave(void)
{
    if (atomic_fetch_sub(&running, 1) == 1)
        weft_event_set(&drained);
}

static void *connection(void *arg)
{
    serve_conn *c = arg;
    spec->handle(c, c->fd);
    /* Unlinked before the fd is closed: shutdown must never shut a number
     * that has meanwhile been given to another file. */
    pthread_mutex_lock(&conns_lock);
    c->prev->next = c->next;
    c->next->prev = c->prev;
    pthread_mutex_unlock(&conns_lock);
    weft_close(c->fd); /* owned by weft: weft_close, not close */
    free(c);
    leave();
    return NULL;
}

/* A descriptor or memory shortage: the condition passes once some
 * connection closes, so wait rather than fail. */
static bool out_of_resources(int err)
{
    return err == -EMFILE || err == -ENFILE || err == -ENOBUFS ||
           err == -ENOMEM;
}

static void *accept_loop(void *arg)
{
    (void)arg;
    uint64_t backoff = 0;
    for (;;) {
        int fd = weft_accept(listener, NULL, NULL);
        if (fd == -ECANCELED) /* shutting down */
            break;
        if (fd < 0) {
            if (!out_of_resources(fd)) {
                /* Not expected to last, but never retried in a tight
                 * loop either. */
                fprintf(stderr, "%s: accept: %s\n", spec->name,
                        weft_strerror(fd));
                if (weft_sleep(10 * SERVE_MS) == -ECANCELED)
                    break;
                continue;
            }
            /* Said once per shortage, not once per retry. */
            if (backoff == 0)
                fprintf(stderr, "%s: accept: %s; retrying with back-off\n",
                        spec->name, weft_strerror(fd));
            backoff = backoff == 0 ? BACKOFF_FIRST_NS : backoff * 2;
            if (backoff > BACKOFF_MAX_NS)
                backoff = BACKOFF_MAX_NS;
            if (weft_sleep(backoff) == -ECANCELED)
                break;
            continue;
        }
        backoff = 0;
        /* Replies go out at once rather than waiting to be merged with
         * later ones (Nagle): these are request-response protocols, and a
         * pipelined batch is already written as one. */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        serve_conn *c = calloc(1, sizeof *c);
        if (c == NULL) {
            weft_close(fd);
            continue;
        }
        c->fd = fd;
        atomic_init(&c->idle, false);
        pthread_mutex_lock(&conns_lock);
        c->next = &conns;
        c->prev = conns.prev;
        conns.prev->next = c;
        conns.prev = c;
        pthread_mutex_unlock(&conns_lock);
        atomic_fetch_add(&running, 1);
        weft_task_opts topts = {.stack_size = spec->stack_size};
        if (weft_spawn(NULL, pool, connection, c, &topts) != 0) {
            pthread_mutex_lock(&conns_lock);
            c->prev->next = c->next;
            c->next->prev = c->prev;
            pthread_mutex_unlock(&conns_lock);
            weft_close(fd);
            free(c);
            leave();
        }
    }
    weft_close(listener);
    leave();
    return NULL;
}

/* Shutdown: stop accepting, then end the idle connections (serve.h). */
static void *signal_watch(void *arg)
{
    int sfd = (int)(intptr_t)arg;
    struct signalfd_siginfo si;
    /* A signal, or (should the read fail) nothing more to wait for:
     * either way, shut down. */
    (void)weft_read(sfd, &si, sizeof si);
    weft_task_cancel(acceptor);
    atomic_store(&stopping, true);
    pthread_mutex_lock(&conns_lock);
    for (serve_conn *c = conns.next; c != &conns; c = c->next)
        if (atomic_load(&c->idle))
            shutdown(c->fd, SHUT_RD); /* its pending read sees EOF */
    pthread_mutex_unlock(&conns_lock);
    if (spec->stop != NULL)
        spec->stop();
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
        fprintf(stderr, "%s: bad %s '%s'\n", spec->name, what, s);
        exit(2);
    }
    return (unsigned)v;
}

int serve_main(const serve_spec *s, int argc, char **argv)
{
    spec = s;
    bool help = argc == 2 && (strcmp(argv[1], "--help") == 0 ||
                              strcmp(argv[1], "-h") == 0);
    if (help || argc < 2 || argc > 3) {
        fprintf(help ? stdout : stderr,
                "usage: %s PORT [THREADS]   (serves on 127.0.0.1:PORT with "
                "THREADS workers, 0: one a CPU)\n",
                spec->name);
        return help ? 0 : 2;
    }
    unsigned port = number(argv[1], 65535, "port");
    unsigned threads = argc > 2 ? number(argv[2], 1024, "thread count") : 0;

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
        fprintf(stderr, "%s: %s\n", spec->name, strerror(errno));
        return 1;
    }
    weft_event_init(&drained);
    weft_pool_opts opts = {.threads = threads, .name = spec->name};
    weft_task *watcher;
    int rc = weft_pool_create(&pool, &opts);
    if (rc == 0 && spec->start != NULL)
        rc = spec->start(pool);
    if (rc == 0)
        rc = weft_spawn(&acceptor, pool, accept_loop, NULL, NULL);
    if (rc == 0)
        rc = weft_spawn(&watcher, pool, signal_watch, (void *)(intptr_t)sfd,
                        NULL);
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n", spec->name, weft_strerror(rc));
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
