/*
 * tls_echo.c — a TLS echo server and client on weft's sockets (OpenSSL).
 *
 *     tls_echo server PORT CERT KEY [THREADS]
 *     tls_echo client HOST PORT [CAFILE]
 *
 * The server listens on 127.0.0.1:PORT (0: a free port chosen by the
 * kernel), prints "listening on PORT" (the port it got) on stdout, and
 * sends back every byte each client sends over TLS, one task per
 * connection, until the client closes.  CERT and KEY are PEM files.  A
 * connection whose handshake fails or takes longer than 10 s (the
 * environment variable TLS_ECHO_HANDSHAKE_MS changes that) is closed with
 * one line on stderr saying why; the others go on.  THREADS is the
 * pool's size (default: one worker per CPU).  SIGTERM or SIGINT stops it
 * at once.
 *
 * The client sends its standard input to the server at HOST:PORT, prints
 * what comes back, and checks it is the same.  It verifies the server's
 * certificate against CAFILE (default: the system's trusted CAs) and
 * HOST, an IP address or a name.  Exit status 0 when the echo matched, 1
 * on a failure (said on stderr), 2 on bad arguments.
 *
 * How OpenSSL runs on weft's sockets: the socket is non-blocking (weft's
 * sockets always are), and OpenSSL reads and writes it itself.  When a
 * call (SSL_accept, SSL_connect, SSL_read, SSL_write) cannot go on, it
 * fails with SSL_ERROR_WANT_READ or SSL_ERROR_WANT_WRITE: the task then
 * waits for the socket with weft_wait_fd_for, which parks the task and
 * frees its worker, and repeats the same call.  Every wait has a deadline,
 * so a peer that stops half-way cannot hold a task for ever.
 *
 * The rule that makes this correct is in tls_wait: see there.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX sockets and getaddrinfo beside C11 */
#endif
#include <weft/weft.h>
#include <weft/io.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MS 1000000ull

/* How long a handshake may take, and how long an established connection
 * may stay silent, before it is closed. */
static uint64_t handshake_ns = 10000 * MS;
static const uint64_t idle_ns = 60000 * MS;
/* The client's bound on its whole input (it is sent, then checked). */
enum { CLIENT_MAX = 1 << 20 };

static const char usage[] =
    "usage: tls_echo server PORT CERT KEY [THREADS]\n"
    "       tls_echo client HOST PORT [CAFILE]\n"
    "\n"
    "server: TLS echo on 127.0.0.1:PORT (0: any free port; it prints\n"
    "        'listening on PORT'), with the PEM certificate CERT and key KEY;\n"
    "        a handshake is bounded by TLS_ECHO_HANDSHAKE_MS (default 10000);\n"
    "        THREADS workers (default: one per CPU)\n"
    "client: sends standard input (at most 1 MiB) to HOST:PORT over TLS,\n"
    "        prints the echo and checks it; the server's certificate is\n"
    "        verified against CAFILE (default: the system's CAs) and HOST\n";

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One TLS connection: its socket, whether OpenSSL called it lost (no
 * close_notify may be sent then), and why it failed (for the message). */
struct tls_conn {
    SSL *ssl;
    int fd;
    bool fatal;
    char why[256];
};

/* The OpenSSL errors queued on this thread, as text in c->why; the queue
 * is left empty. */
static void take_errors(struct tls_conn *c, const char *otherwise)
{
    unsigned long e = ERR_get_error();
    if (e == 0) {
        snprintf(c->why, sizeof c->why, "%s", otherwise);
        return;
    }
    ERR_error_string_n(e, c->why, sizeof c->why);
    /* A failed verification: the certificate's own reason says more than
     * "certificate verify failed".  (Kept in the SSL object, not in a
     * thread's queue.) */
    long v = SSL_get_verify_result(c->ssl);
    if (v != X509_V_OK) {
        size_t n = strlen(c->why);
        snprintf(c->why + n, sizeof c->why - n, " (%s)",
                 X509_verify_cert_error_string(v));
    }
    ERR_clear_error();
}

/*
 * tls_wait - after an SSL call returned ret (not a success): wait until
 * the socket lets the call go on, but not past deadline.  Returns 0 (make
 * the same call again), 1 (the peer closed the TLS stream cleanly), or -1
 * (failed: c->why says why).
 *
 * THE RULE: OpenSSL's error queue (ERR_get_error) is per thread, and what
 * SSL_get_error reports is read from it and from errno, also per thread.
 * A task may resume on another worker after any wait, where the queue is
 * that worker's: empty, or worse, another task's.  So the failed call's
 * errors are read here, before the wait, on the thread that made the call
 * (and the callers clear the queue just before each call, on that same
 * thread).  Never call SSL_get_error or ERR_get_error after a wait for the
 * call that came before it.
 */
static int tls_wait(struct tls_conn *c, int ret, uint64_t deadline)
{
    int sys = errno; /* the socket call's, for SSL_ERROR_SYSCALL */
    int err = SSL_get_error(c->ssl, ret);
    unsigned events;
    switch (err) {
    case SSL_ERROR_WANT_READ:
        events = WEFT_IN;
        break;
    case SSL_ERROR_WANT_WRITE:
        events = WEFT_OUT;
        break;
    case SSL_ERROR_ZERO_RETURN:
        return 1;
    case SSL_ERROR_SYSCALL:
        c->fatal = true;
        take_errors(c, sys ? strerror(sys) : "the peer closed the connection");
        return -1;
    default:
        c->fatal = true;
        take_errors(c, "TLS error");
        return -1;
    }
    /* From here on the task may move to another worker: nothing above
     * may be read again after the wait. */
    uint64_t now = now_ns();
    int r = now >= deadline ? -ETIMEDOUT
                            : weft_wait_fd_for(c->fd, events, deadline - now);
    if (r < 0) {
        snprintf(c->why, sizeof c->why, "%s",
                 r == -ETIMEDOUT ? "timed out" : weft_strerror(r));
        return -1;
    }
    return 0;
}

/* The handshake, as server or client, within handshake_ns.  0 or -1. */
static int tls_handshake(struct tls_conn *c, bool server)
{
    uint64_t deadline = now_ns() + handshake_ns;
    for (;;) {
        ERR_clear_error(); /* see tls_wait: this thread's queue, now */
        int r = server ? SSL_accept(c->ssl) : SSL_connect(c->ssl);
        if (r == 1)
            return 0;
        int w = tls_wait(c, r, deadline);
        if (w == 1) {
            snprintf(c->why, sizeof c->why, "closed during the handshake");
            return -1;
        }
        if (w < 0)
            return -1;
    }
}

/* Up to len bytes, waiting at most idle_ns: the count, 0 (a clean close
 * by the peer), or -1. */
static int tls_read(struct tls_conn *c, void *buf, int len)
{
    uint64_t deadline = now_ns() + idle_ns;
    for (;;) {
        ERR_clear_error();
        int r = SSL_read(c->ssl, buf, len);
        if (r > 0)
            return r;
        int w = tls_wait(c, r, deadline);
        if (w)
            return w == 1 ? 0 : -1;
    }
}

/* All len bytes (SSL_write writes a whole record set or nothing, and is
 * repeated with the same arguments after a wait).  0 or -1. */
static int tls_write(struct tls_conn *c, const void *buf, int len)
{
    uint64_t deadline = now_ns() + idle_ns;
    for (;;) {
        ERR_clear_error();
        int r = SSL_write(c->ssl, buf, len);
        if (r > 0)
            return 0;
        if (tls_wait(c, r, deadline) != 0) {
            if (!c->why[0])
                snprintf(c->why, sizeof c->why, "the peer closed");
            return -1;
        }
    }
}

/* Our close_notify, sent if the socket takes it now: the stream's end is
 * said cleanly, and the peer's reply is not waited for (the socket is
 * closed next).  Not after a fatal error (OpenSSL forbids it) nor in an
 * unfinished handshake (there is no stream to end). */
static void tls_close(struct tls_conn *c)
{
    if (!c->fatal && SSL_is_init_finished(c->ssl)) {
        ERR_clear_error();
        if (SSL_shutdown(c->ssl) < 0)
            ERR_clear_error();
    }
    SSL_free(c->ssl);
    weft_close(c->fd);
}

/* ------------------------------------------------------------ server */

static SSL_CTX *ctx;
static weft_pool *pool;

static void *serve(void *arg)
{
    struct tls_conn c = {.fd = (int)(intptr_t)arg};
    char peer[64] = "?";
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    if (getpeername(c.fd, (struct sockaddr *)&a, &alen) == 0 &&
        a.sin_family == AF_INET) {
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
        snprintf(peer, sizeof peer, "%s:%u", ip, (unsigned)ntohs(a.sin_port));
    }
    c.ssl = SSL_new(ctx);
    if (!c.ssl || !SSL_set_fd(c.ssl, c.fd)) {
        fprintf(stderr, "tls_echo: %s: no memory for the connection\n", peer);
        ERR_clear_error();
        SSL_free(c.ssl);
        weft_close(c.fd);
        return NULL;
    }
    if (tls_handshake(&c, true) != 0) {
        fprintf(stderr, "tls_echo: %s: handshake failed: %s\n", peer, c.why);
        tls_close(&c);
        return NULL;
    }
    char buf[16384];
    int n;
    while ((n = tls_read(&c, buf, sizeof buf)) > 0)
        if (tls_write(&c, buf, n) != 0) {
            n = -1;
            break;
        }
    if (n < 0)
        fprintf(stderr, "tls_echo: %s: %s\n", peer, c.why);
    tls_close(&c);
    return NULL;
}

static void *accept_loop(void *arg)
{
    int listener = (int)(intptr_t)arg;
    for (;;) {
        int fd = weft_accept(listener, NULL, NULL);
        if (fd < 0) {
            /* Out of descriptors or memory: say so, and go on serving the
             * connections already open. */
            fprintf(stderr, "tls_echo: accept: %s\n", weft_strerror(fd));
            weft_sleep(100 * MS);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (weft_spawn(NULL, pool, serve, (void *)(intptr_t)fd, NULL) != 0)
            weft_close(fd);
    }
    return NULL;
}

/* A number in [min, max], or exit 2 naming what was wrong. */
static unsigned long number(const char *s, unsigned long min,
                            unsigned long max, const char *what)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *s == '-' || *end != '\0' || errno || v < min ||
        v > max) {
        fprintf(stderr, "tls_echo: bad %s '%s' (%lu to %lu)\n", what, s, min,
                max);
        exit(2);
    }
    return v;
}

static int server(const char *port_arg, const char *cert, const char *key,
                  const char *threads_arg)
{
    unsigned port = (unsigned)number(port_arg, 0, 65535, "port");
    weft_pool_opts opts = {.name = "tls_echo"};
    if (threads_arg)
        opts.threads = (unsigned)number(threads_arg, 1, WEFT_POOL_THREADS_MAX,
                                        "thread count");
    const char *hs = getenv("TLS_ECHO_HANDSHAKE_MS");
    if (hs)
        handshake_ns = number(hs, 1, 3600000, "TLS_ECHO_HANDSHAKE_MS") * MS;

    ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)) {
        ERR_print_errors_fp(stderr);
        return 1;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        fprintf(stderr, "tls_echo: cannot use certificate %s:\n", cert);
        ERR_print_errors_fp(stderr);
        return 1;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        fprintf(stderr, "tls_echo: cannot use key %s with %s:\n", key, cert);
        ERR_print_errors_fp(stderr);
        return 1;
    }

    int listener = weft_socket(AF_INET, SOCK_STREAM, 0);
    if (listener < 0) {
        fprintf(stderr, "tls_echo: socket: %s\n", weft_strerror(listener));
        return 1;
    }
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (bind(listener, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(listener, SOMAXCONN) != 0 ||
        getsockname(listener, (struct sockaddr *)&a, &alen) != 0) {
        fprintf(stderr, "tls_echo: 127.0.0.1:%u: %s\n", port, strerror(errno));
        return 1;
    }

    weft_task *acceptor;
    int rc = weft_pool_create(&pool, &opts);
    if (rc == 0)
        rc = weft_spawn(&acceptor, pool, accept_loop,
                        (void *)(intptr_t)listener, NULL);
    if (rc != 0) {
        fprintf(stderr, "tls_echo: %s\n", weft_strerror(rc));
        return 1;
    }
    printf("listening on %u\n", (unsigned)ntohs(a.sin_port));
    fflush(stdout);
    /* The accept task never ends: the server runs until a signal. */
    weft_sync_wait(acceptor, NULL);
    return 0;
}

/* ------------------------------------------------------------ client */

struct client_job {
    const struct addrinfo *addr;
    const char *host;
    SSL_CTX *ctx;         /* verifying against CAFILE or the system's */
    const char *out;      /* what to send */
    size_t len;
    char *back;           /* what came back (len bytes) */
    char why[320];        /* the failure */
};

static void *client_task(void *arg)
{
    struct client_job *j = arg;
    struct tls_conn c = {.fd = -1};
    /* Each of HOST's addresses in turn ("localhost" may be ::1 first,
     * and the server on 127.0.0.1 only), 5 s each. */
    int r = -EHOSTUNREACH;
    for (const struct addrinfo *ai = j->addr; ai && c.fd < 0; ai = ai->ai_next) {
        r = weft_socket(ai->ai_family, SOCK_STREAM, 0);
        if (r < 0)
            continue;
        c.fd = r;
        r = weft_connect_for(c.fd, ai->ai_addr, ai->ai_addrlen, 5000 * MS);
        if (r < 0) {
            weft_close(c.fd);
            c.fd = -1;
        }
    }
    if (c.fd < 0) {
        snprintf(j->why, sizeof j->why, "connect: %s", weft_strerror(r));
        return (void *)1;
    }
    int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

    bool ok = (c.ssl = SSL_new(j->ctx)) != NULL && SSL_set_fd(c.ssl, c.fd);
    if (ok) {
        /* Whose certificate it must be: an address is matched against the
         * certificate's IP entries, a name against its DNS ones (and sent
         * as SNI). */
        unsigned char ip[16];
        bool is_ip = inet_pton(AF_INET, j->host, ip) == 1 ||
                     inet_pton(AF_INET6, j->host, ip) == 1;
        X509_VERIFY_PARAM *vp = SSL_get0_param(c.ssl);
        ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(vp, j->host)
                   : SSL_set1_host(c.ssl, j->host) &&
                         SSL_set_tlsext_host_name(c.ssl, j->host);
    }
    if (!ok) {
        unsigned long e = ERR_get_error();
        char msg[256] = "no memory";
        if (e)
            ERR_error_string_n(e, msg, sizeof msg);
        snprintf(j->why, sizeof j->why, "setting up TLS: %s", msg);
        ERR_clear_error();
        if (c.ssl)
            SSL_free(c.ssl);
        weft_close(c.fd);
        return (void *)1;
    }

    int fail = 0;
    if (tls_handshake(&c, false) != 0) {
        snprintf(j->why, sizeof j->why, "handshake failed: %s", c.why);
        fail = 1;
    }
    /* Sent in pieces of at most 16 KiB, each read back before the next,
     * so that neither side's buffers need hold the whole input. */
    size_t done = 0;
    while (!fail && done < j->len) {
        int piece = j->len - done < 16384 ? (int)(j->len - done) : 16384;
        if (tls_write(&c, j->out + done, piece) != 0) {
            snprintf(j->why, sizeof j->why, "write: %s", c.why);
            fail = 1;
            break;
        }
        for (int got = 0; got < piece;) {
            int n = tls_read(&c, j->back + done + got, piece - got);
            if (n <= 0) {
                snprintf(j->why, sizeof j->why, "read: %s",
                         n == 0 ? "the server closed early" : c.why);
                fail = 1;
                break;
            }
            got += n;
        }
        done += (size_t)piece;
    }
    tls_close(&c);
    return (void *)(intptr_t)fail;
}

static int client(const char *host, const char *port_arg, const char *cafile)
{
    number(port_arg, 1, 65535, "port");
    /* Every way out goes through `out`, which frees what was made. */
    int status = 1;
    SSL_CTX *cctx = NULL;
    struct addrinfo *ai = NULL;
    /* All of standard input, first: the client sends it, then checks the
     * echo against it. */
    char *in = malloc(CLIENT_MAX), *back = malloc(CLIENT_MAX);
    if (!in || !back) {
        fprintf(stderr, "tls_echo: no memory\n");
        goto out;
    }
    size_t len = fread(in, 1, CLIENT_MAX, stdin);
    if (ferror(stdin)) {
        fprintf(stderr, "tls_echo: reading standard input: %s\n",
                strerror(errno));
        goto out;
    }
    if (len == CLIENT_MAX && getc(stdin) != EOF) {
        fprintf(stderr, "tls_echo: standard input over %d bytes\n",
                CLIENT_MAX);
        status = 2;
        goto out;
    }

    /* The CAs first: a missing or bad CAFILE is said before anything is
     * sent. */
    cctx = SSL_CTX_new(TLS_client_method());
    if (!cctx || !SSL_CTX_set_min_proto_version(cctx, TLS1_2_VERSION)) {
        ERR_print_errors_fp(stderr);
        goto out;
    }
    if (cafile ? SSL_CTX_load_verify_locations(cctx, cafile, NULL) != 1
               : SSL_CTX_set_default_verify_paths(cctx) != 1) {
        fprintf(stderr, "tls_echo: cannot load the CAs of %s:\n",
                cafile ? cafile : "the system");
        ERR_print_errors_fp(stderr);
        goto out;
    }
    SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, NULL);

    struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    int g = getaddrinfo(host, port_arg, &hints, &ai);
    if (g != 0) {
        fprintf(stderr, "tls_echo: %s: %s\n", host, gai_strerror(g));
        ai = NULL;
        goto out;
    }
    struct client_job job = {.addr = ai, .host = host, .ctx = cctx,
                             .out = in, .len = len, .back = back};
    weft_task *t;
    void *res = (void *)1;
    int rc = weft_pool_create(&pool, NULL);
    if (rc == 0) {
        rc = weft_spawn(&t, pool, client_task, &job, NULL);
        if (rc == 0)
            rc = weft_sync_wait(t, &res);
        weft_pool_destroy(pool);
    }
    if (rc != 0) {
        fprintf(stderr, "tls_echo: %s\n", weft_strerror(rc));
        goto out;
    }
    if (res != NULL) {
        fprintf(stderr, "tls_echo: %s:%s: %s\n", host, port_arg, job.why);
        goto out;
    }
    fwrite(back, 1, len, stdout);
    fflush(stdout);
    if (memcmp(in, back, len) != 0) {
        fprintf(stderr, "tls_echo: the echo differs from what was sent\n");
        goto out;
    }
    status = 0;
out:
    if (ai)
        freeaddrinfo(ai);
    SSL_CTX_free(cctx);
    free(in);
    free(back);
    return status;
}

int main(int argc, char **argv)
{
    if (argc == 2 &&
        (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage, stdout);
        return 0;
    }
    /* A peer that resets its connection must not kill us with SIGPIPE at
     * the next write; the write fails with EPIPE instead. */
    signal(SIGPIPE, SIG_IGN);
    if ((argc == 5 || argc == 6) && strcmp(argv[1], "server") == 0)
        return server(argv[2], argv[3], argv[4], argc == 6 ? argv[5] : NULL);
    if ((argc == 4 || argc == 5) && strcmp(argv[1], "client") == 0)
        return client(argv[2], argv[3], argc == 5 ? argv[4] : NULL);
    fputs(usage, stderr);
    return 2;
}
