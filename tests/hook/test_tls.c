/*
 * test_tls.c — blocking OpenSSL in pool tasks, through the hook (hooked
 * build only; built where OpenSSL is found).
 *
 * A self-signed certificate is made in memory (an EC P-256 key, an X509
 * signed by it).  The server is plain threads with blocking sockets and
 * blocking SSL_accept / SSL_read / SSL_write.  The clients are 20 tasks on
 * a 2-worker pool (no monitor: no spare thread runs them) with plain
 * blocking sockets and SSL_connect / SSL_write / SSL_read, as a library
 * that knows nothing of weft would do: the hook parks them.  To know that
 * it does, the server accepts all 20 TCP connections but starts no
 * handshake until all 20 clients are parked at once (the pool's count):
 * each has sent its ClientHello and waits in a read.  Two workers could
 * not hold 20 blocked reads.
 *
 * Each client checks the server's certificate against the one made here,
 * then echoes 4 KiB five times, checking every byte, and after every SSL
 * call that OpenSSL's error queue is empty (ERR_peek_error): the queue is
 * thread-local, and a task that moved thread inside an SSL call would see
 * another thread's queue, or leave errors behind in it.
 */
#include "hk.h"

#include <signal.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#define NCLIENTS 20
#define ROUNDS 5
#define CHUNK 4096

static EVP_PKEY *make_key(void)
{
    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *kc = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, NULL);
    assert_non_null(kc);
    assert_int_equal(EVP_PKEY_keygen_init(kc), 1);
    assert_int_equal(
        EVP_PKEY_CTX_set_ec_paramgen_curve_nid(kc, NID_X9_62_prime256v1), 1);
    assert_int_equal(EVP_PKEY_keygen(kc, &key), 1);
    EVP_PKEY_CTX_free(kc);
    return key;
}

static X509 *make_cert(EVP_PKEY *key)
{
    X509 *x = X509_new();
    assert_non_null(x);
    assert_int_equal(X509_set_version(x, 2), 1);
    assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), 1), 1);
    assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), -3600));
    assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), 24 * 3600));
    assert_int_equal(X509_set_pubkey(x, key), 1);
    X509_NAME *name = X509_get_subject_name(x);
    assert_int_equal(X509_NAME_add_entry_by_txt(
                         name, "CN", MBSTRING_ASC,
                         (const unsigned char *)"localhost", -1, -1, 0),
                     1);
    assert_int_equal(X509_set_issuer_name(x, name), 1);
    assert_true(X509_sign(x, key, EVP_sha256()) > 0);
    return x;
}

struct tls_run {
    weft_pool *pool;
    SSL_CTX *server_ctx, *client_ctx;
    struct sockaddr_in addr;
    int listener;
    atomic_int clients_ok;
    atomic_long bytes;
};

static unsigned char pattern(unsigned client, unsigned round, size_t i)
{
    return (unsigned char)((i * 2654435761u) >> 11 ^ client * 31u ^ round);
}

/* ---------------------------------------------------------------- server */

struct conn {
    struct tls_run *run;
    int fd;
};

static void *serve_conn(void *arg)
{
    struct conn *c = arg;
    SSL *ssl = SSL_new(c->run->server_ctx);
    CHECK(ssl != NULL);
    if (!ssl)
        return NULL;
    CHECK_EQ(SSL_set_fd(ssl, c->fd), 1);
    int r = SSL_accept(ssl);
    CHECK_EQ(r, 1);
    if (r == 1) {
        char buf[CHUNK];
        int n;
        while ((n = SSL_read(ssl, buf, sizeof buf)) > 0)
            CHECK_EQ(SSL_write(ssl, buf, n), n);
        /* The client's close_notify. */
        CHECK_EQ(SSL_get_error(ssl, n), SSL_ERROR_ZERO_RETURN);
        SSL_shutdown(ssl);
    } else {
        ERR_print_errors_fp(stderr);
    }
    SSL_free(ssl);
    ERR_clear_error();
    CHECK_EQ(close(c->fd), 0);
    return NULL;
}

/* Accept every client's connection, wait until all are parked (each in
 * its handshake's first read), then serve each on its own thread. */
static void *server(void *arg)
{
    struct tls_run *r = arg;
    struct conn conns[NCLIENTS];
    pthread_t th[NCLIENTS];
    for (int i = 0; i < NCLIENTS; i++) {
        conns[i].run = r;
        conns[i].fd = accept(r->listener, NULL, NULL);
        CHECK(conns[i].fd >= 0);
    }
    hk_wait_parked(r->pool, NCLIENTS);
    for (int i = 0; i < NCLIENTS; i++)
        CHECK_EQ(pthread_create(&th[i], NULL, serve_conn, &conns[i]), 0);
    for (int i = 0; i < NCLIENTS; i++)
        CHECK_EQ(pthread_join(th[i], NULL), 0);
    return NULL;
}

/* ---------------------------------------------------------------- client */

struct client {
    struct tls_run *run;
    unsigned index;
};

/* After every SSL call: nothing left in this thread's error queue. */
#define QUEUE_EMPTY()                                                   \
    do {                                                                \
        unsigned long e_ = ERR_peek_error();                            \
        CHECK_EQ(e_, 0);                                                \
        if (e_)                                                         \
            ERR_print_errors_fp(stderr);                                \
    } while (0)

static void *client(void *arg)
{
    struct client *cl = arg;
    struct tls_run *r = cl->run;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    if (fd < 0)
        return NULL;
    CHECK_EQ(connect(fd, (struct sockaddr *)&r->addr, sizeof r->addr), 0);
    int fl = hk_fl(fd);
    CHECK(!(fl & O_NONBLOCK));

    SSL *ssl = SSL_new(r->client_ctx);
    CHECK(ssl != NULL);
    if (!ssl) {
        close(fd);
        return NULL;
    }
    QUEUE_EMPTY();
    CHECK_EQ(SSL_set_fd(ssl, fd), 1);
    QUEUE_EMPTY();
    CHECK_EQ(SSL_set1_host(ssl, "localhost"), 1);
    QUEUE_EMPTY();
    int rc = SSL_connect(ssl);
    CHECK_EQ(rc, 1);
    QUEUE_EMPTY();
    bool ok = rc == 1;
    if (ok)
        CHECK_EQ(SSL_get_verify_result(ssl), X509_V_OK);

    unsigned char out[CHUNK], in[CHUNK];
    for (unsigned round = 0; ok && round < ROUNDS; round++) {
        for (size_t i = 0; i < CHUNK; i++)
            out[i] = pattern(cl->index, round, i);
        int w = SSL_write(ssl, out, CHUNK);
        CHECK_EQ(w, CHUNK);
        QUEUE_EMPTY();
        size_t got = 0;
        while (got < CHUNK) {
            int n = SSL_read(ssl, in + got, (int)(CHUNK - got));
            QUEUE_EMPTY();
            if (n <= 0) {
                CHECK_EQ(n, 1);
                ok = false;
                break;
            }
            got += (size_t)n;
        }
        size_t bad = 0;
        for (size_t i = 0; i < got; i++)
            bad += in[i] != pattern(cl->index, round, i);
        CHECK_EQ(got, CHUNK);
        CHECK_EQ(bad, 0);
        ok = ok && w == CHUNK && got == CHUNK && bad == 0;
        atomic_fetch_add(&r->bytes, (long)got);
        /* Let it move to the other worker between calls. */
        CHECK_EQ(weft_yield(), 0);
    }
    /* close_notify; the server's answer is not waited for. */
    CHECK(SSL_shutdown(ssl) >= 0);
    QUEUE_EMPTY();
    SSL_free(ssl);
    QUEUE_EMPTY();
    CHECK_EQ(hk_fl(fd), fl);
    CHECK_EQ(close(fd), 0);
    if (ok)
        atomic_fetch_add(&r->clients_ok, 1);
    return NULL;
}

static void test_tls_echo(void **state)
{
    (void)state;
    assert_true(hk_hook_loaded());
    static struct tls_run r;
    memset(&r, 0, sizeof r);

    EVP_PKEY *key = make_key();
    X509 *cert = make_cert(key);
    r.server_ctx = SSL_CTX_new(TLS_server_method());
    assert_non_null(r.server_ctx);
    assert_int_equal(SSL_CTX_use_certificate(r.server_ctx, cert), 1);
    assert_int_equal(SSL_CTX_use_PrivateKey(r.server_ctx, key), 1);
    r.client_ctx = SSL_CTX_new(TLS_client_method());
    assert_non_null(r.client_ctx);
    assert_int_equal(
        X509_STORE_add_cert(SSL_CTX_get_cert_store(r.client_ctx), cert), 1);
    SSL_CTX_set_verify(r.client_ctx, SSL_VERIFY_PEER, NULL);

    r.listener = hk_listener(&r.addr, NCLIENTS);
    r.pool = hk_pool(2, WEFT_POOL_NO_MONITOR);
    pthread_t srv = wt_thread(server, &r);

    struct client cl[NCLIENTS];
    weft_task *t[NCLIENTS];
    for (unsigned i = 0; i < NCLIENTS; i++) {
        cl[i] = (struct client){&r, i};
        assert_int_equal(weft_spawn(&t[i], r.pool, client, &cl[i], NULL), 0);
    }
    for (unsigned i = 0; i < NCLIENTS; i++)
        assert_int_equal(weft_sync_wait(t[i], NULL), 0);
    wt_join(srv);
    wt_destroy(r.pool);
    close(r.listener);

    printf("clients ok %d, bytes echoed %ld\n", atomic_load(&r.clients_ok),
           atomic_load(&r.bytes));
    assert_int_equal(atomic_load(&r.clients_ok), NCLIENTS);
    assert_int_equal(atomic_load(&r.bytes), (long)NCLIENTS * ROUNDS * CHUNK);

    SSL_CTX_free(r.server_ctx);
    SSL_CTX_free(r.client_ctx);
    X509_free(cert);
    EVP_PKEY_free(key);
    WT_CLEAN();
}

/* ------------------------------------------------------------------ */
/* The error queue of a task parked in a hooked call                     */

struct queue_run {
    int sv[2];
    atomic_long reader_tid, failer_tid;
};

/* Follows OpenSSL's rule (an empty queue before the call), then blocks in
 * read as a BIO would: the hook parks it, and its thread runs others. */
static void *queue_reader(void *arg)
{
    struct queue_run *q = arg;
    atomic_store(&q->reader_tid, hk_tid());
    ERR_clear_error();
    char c;
    CHECK_EQ(read(q->sv[0], &c, 1), 1);
    CHECK_EQ(hk_tid(), atomic_load(&q->reader_tid)); /* pinned */
    /* Not the entry the failer left on this thread. */
    CHECK_EQ(ERR_peek_error(), 0);
    return NULL;
}

/* A task whose handshake failed and that gave up: it leaves its entry in
 * the queue of the thread it ran on, then wakes the reader. */
static void *queue_failer(void *arg)
{
    struct queue_run *q = arg;
    atomic_store(&q->failer_tid, hk_tid());
    ERR_raise(ERR_LIB_SSL, SSL_R_CERTIFICATE_VERIFY_FAILED);
    CHECK(ERR_peek_error() != 0);
    CHECK_EQ(write(q->sv[1], "x", 1), 1);
    return NULL;
}

static void test_queue_kept_across_park(void **state)
{
    (void)state;
    assert_true(hk_hook_loaded());
    static struct queue_run q;
    memset(&q, 0, sizeof q);
    hk_pair(q.sv);
    /* One worker, no spares: the failer runs on the reader's thread,
     * while the reader is parked. */
    weft_pool *p = hk_pool(1, WEFT_POOL_NO_MONITOR);
    weft_task *reader, *failer;
    assert_int_equal(weft_spawn(&reader, p, queue_reader, &q, NULL), 0);
    hk_wait_parked(p, 1);
    assert_int_equal(weft_spawn(&failer, p, queue_failer, &q, NULL), 0);
    assert_int_equal(weft_sync_wait(failer, NULL), 0);
    assert_int_equal(weft_sync_wait(reader, NULL), 0);
    assert_int_equal(atomic_load(&q.failer_tid), atomic_load(&q.reader_tid));
    wt_destroy(p);
    close(q.sv[0]);
    close(q.sv[1]);
    WT_CLEAN();
}

int main(void)
{
    wt_main_init();
    /* A peer gone early must fail a check, not kill the program. */
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        WT_TEST1(test_tls_echo),
        WT_TEST1(test_queue_kept_across_park),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
