/*
 * http_server.c — an HTTP/1.1 server: one task per connection.
 *
 *     http_server PORT [THREADS]
 *
 * Listens on 127.0.0.1:PORT (0: a free port), prints "listening on PORT",
 * and answers
 *
 *     GET /plaintext   200, text/plain, "Hello, World!"
 *     GET /json        200, application/json, {"message":"Hello, World!"}
 *
 * (HEAD too, without the body); any other method on those paths: 405 with
 * Allow; any other path: 404.  Every response has Date and Content-Length.
 * HTTP/1.1 connections are kept alive and may pipeline (responses go out
 * in request order, those of one read's worth of requests in one write);
 * HTTP/1.0 ones close after the response unless they ask for keep-alive;
 * "Connection: close" is honoured.  THREADS: the pool's size (default:
 * one worker per CPU).  SIGINT/SIGTERM: graceful shutdown (serve.h).
 *
 * Requests are parsed by http-parser (Debian's libhttp-parser-dev), which
 * takes the bytes as they come, so a request split across reads needs no
 * buffering of ours.
 *
 * Bad input and slow or greedy clients (every limit from the environment,
 * in milliseconds or bytes):
 *
 *     malformed request          400, then close
 *     HTTP version other than 1  505, then close
 *     request head over 8 KiB    431, then close (HTTP_MAX_HEAD bytes)
 *     head not complete within   HTTP_HEADER_TIMEOUT_MS (10000) of its
 *                                first byte: close (slowloris)
 *     no next request within     HTTP_KEEPALIVE_TIMEOUT_MS (5000): close
 *     responses not taken        at most HTTP_OUTPUT_LIMIT (65536) bytes
 *                                are queued: parsing stops until they are
 *                                written, and a write that cannot finish
 *                                within HTTP_WRITE_TIMEOUT_MS (10000)
 *                                closes the connection
 *
 * so a connection holds at most its 4 KiB input and its output limit,
 * whatever the client does (and 6 KiB plus its stack while it does not
 * pipeline).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "serve.h"

#include <http_parser.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Requests are small: 4 KiB per read takes a batch of ~100 pipelined
 * ones, and a head up to the 8 KiB limit arrives in a few reads (the
 * parser keeps no bytes of ours).  Output starts small and doubles up to
 * the output limit only for a client that pipelines. */
#define INPUT_SIZE 4096
#define OUTPUT_INITIAL 2048
/* The longest path worth keeping: longer ones are no route of ours. */
#define PATH_KEEP 32
/* Room one response needs in the output buffer (the longest is ~200). */
#define RESPONSE_MAX 512

static uint64_t header_timeout_ns, keepalive_timeout_ns, write_timeout_ns;
static size_t output_limit;

typedef struct http_conn {
    int fd;
    http_parser parser;
    /* The request being parsed. */
    bool in_message;   /* its first byte has been seen            */
    bool in_head;      /* ...and its headers are not complete yet  */
    uint64_t head_deadline;
    /* Between requests: when the keep-alive time runs out.  Fixed when
     * the connection becomes idle, not restarted by each read: the empty
     * lines a parser skips before a request (RFC 9112, 2.2) start no
     * message, and a client that sent one now and then kept its
     * connection for ever. */
    uint64_t idle_deadline;
    char path[PATH_KEEP];
    size_t path_len;
    bool path_too_long;
    /* Set once a response that says "Connection: close" is queued: the
     * rest of the input is ignored and the connection closes. */
    bool closing;
    char *out;
    size_t out_len, out_cap;
    char in[INPUT_SIZE];
} http_conn;

/* ---------------------------------------------------------- Date */

/* The Date header's value (RFC 9110's IMF-fixdate) changes once a second:
 * each worker thread formats it at most once a second.  Read and copied
 * without waiting in between, so the task stays on one thread meanwhile. */
static _Thread_local struct {
    time_t second;
    char text[32];
    size_t len;
} date_cache;

static void append(http_conn *c, const char *s, size_t len)
{
    memcpy(c->out + c->out_len, s, len);
    c->out_len += len;
}

#define APPEND_LITERAL(c, s) append((c), (s), sizeof(s) - 1)

static void append_date(http_conn *c)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME_COARSE, &now);
    if (now.tv_sec != date_cache.second || date_cache.len == 0) {
        struct tm tm;
        gmtime_r(&now.tv_sec, &tm);
        date_cache.len = strftime(date_cache.text, sizeof date_cache.text,
                                  "%a, %d %b %Y %H:%M:%S GMT", &tm);
        date_cache.second = now.tv_sec;
    }
    APPEND_LITERAL(c, "Date: ");
    append(c, date_cache.text, date_cache.len);
    APPEND_LITERAL(c, "\r\n");
}

/* ---------------------------------------------------------- responses */

static const char plaintext_body[] = "Hello, World!";
static const char json_body[] = "{\"message\":\"Hello, World!\"}";

/*
 * Queues one response.  keep_alive is what the request asked for (false
 * also when the server must close: bad input, shutdown); HTTP/1.0 clients
 * that asked for keep-alive are told they have it.
 */
static void respond(http_conn *c, const char *status, const char *type,
                    const char *body, size_t body_len, bool send_body,
                    const char *extra_header, bool keep_alive, bool http10)
{
    char length[32];
    APPEND_LITERAL(c, "HTTP/1.1 ");
    append(c, status, strlen(status));
    APPEND_LITERAL(c, "\r\nServer: weft\r\nContent-Type: ");
    append(c, type, strlen(type));
    int n = snprintf(length, sizeof length, "\r\nContent-Length: %zu\r\n",
                     body_len);
    append(c, length, (size_t)n);
    append_date(c);
    if (extra_header != NULL)
        append(c, extra_header, strlen(extra_header));
    if (!keep_alive) {
        APPEND_LITERAL(c, "Connection: close\r\n");
        c->closing = true;
    } else if (http10) {
        APPEND_LITERAL(c, "Connection: keep-alive\r\n");
    }
    APPEND_LITERAL(c, "\r\n");
    if (send_body)
        append(c, body, body_len);
}

static void respond_error(http_conn *c, const char *status)
{
    respond(c, status, "text/plain", status, strlen(status), true, NULL,
            false, false);
}

/* ---------------------------------------------------------- parsing */

/* Doubles the output buffer, up to the output limit: false when it is at
 * the limit already (or no memory: then a smaller buffer just means
 * more writes). */
static bool grow_output(http_conn *c)
{
    if (c->out_cap >= output_limit)
        return false;
    size_t cap = c->out_cap * 2 < output_limit ? c->out_cap * 2 : output_limit;
    char *p = realloc(c->out, cap);
    if (p == NULL)
        return false;
    c->out = p;
    c->out_cap = cap;
    return true;
}

static int on_message_begin(http_parser *p)
{
    http_conn *c = p->data;
    c->in_message = c->in_head = true;
    c->head_deadline = serve_now_ns() + header_timeout_ns;
    c->path_len = 0;
    c->path_too_long = false;
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    http_conn *c = p->data; /* the URL may come in pieces */
    if (c->path_len + len > sizeof c->path) {
        c->path_too_long = true;
        return 0;
    }
    memcpy(c->path + c->path_len, at, len);
    c->path_len += len;
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    http_conn *c = p->data;
    c->in_head = false;
    return 0;
}

static bool path_is(const http_conn *c, const char *route)
{
    size_t n = strlen(route);
    if (c->path_too_long || c->path_len < n || memcmp(c->path, route, n) != 0)
        return false;
    /* The query string is no part of the route. */
    return c->path_len == n || c->path[n] == '?';
}

static int on_message_complete(http_parser *p)
{
    http_conn *c = p->data;
    bool keep = http_should_keep_alive(p) && !serve_stopping();
    bool http10 = p->http_major == 1 && p->http_minor == 0;
    bool head = p->method == HTTP_HEAD;
    bool allowed = p->method == HTTP_GET || head;

    c->in_message = false;
    c->idle_deadline = serve_now_ns() + keepalive_timeout_ns;
    if (p->http_major != 1) { /* http-parser reads any one-digit version */
        respond_error(c, "505 HTTP Version Not Supported");
    } else if (path_is(c, "/plaintext") || path_is(c, "/json")) {
        bool json = path_is(c, "/json");
        if (allowed)
            respond(c, "200 OK", json ? "application/json" : "text/plain",
                    json ? json_body : plaintext_body,
                    json ? sizeof json_body - 1 : sizeof plaintext_body - 1,
                    !head, NULL, keep, http10);
        else
            respond(c, "405 Method Not Allowed", "text/plain",
                    "Method Not Allowed", 18, true,
                    "Allow: GET, HEAD\r\n", keep, http10);
    } else {
        respond(c, "404 Not Found", "text/plain", "Not Found", 9, !head, NULL,
                keep, http10);
    }
    /* Stop here when the connection is closing (what follows is not to
     * be answered) or when the next response might not fit (flush first,
     * or grow the buffer while it is under the limit). */
    if (c->closing)
        http_parser_pause(p, 1);
    else if (c->out_len + RESPONSE_MAX > c->out_cap && !grow_output(c))
        http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_headers_complete = on_headers_complete,
    .on_message_complete = on_message_complete,
};

/* ---------------------------------------------------------- connection */

static bool flush(http_conn *c)
{
    if (c->out_len == 0)
        return true;
    ssize_t n = weft_write_for(c->fd, c->out, c->out_len, write_timeout_ns);
    c->out_len = 0;
    return n >= 0;
}

/* Feeds in[0..len) to the parser, queueing (and, as the output limit
 * requires, writing) the responses.  Returns false when the connection is
 * to close. */
static bool consume(http_conn *c, size_t len)
{
    size_t off = 0;
    while (off < len && !c->closing) {
        size_t used = http_parser_execute(&c->parser, &settings,
                                          c->in + off, len - off);
        off += used;
        enum http_errno err = HTTP_PARSER_ERRNO(&c->parser);
        if (err == HPE_OK && (c->parser.upgrade || used == 0)) {
            /* An Upgrade or CONNECT request (answered like any other; we
             * switch to no other protocol): what follows it is not
             * HTTP, so the connection ends after the response. */
            c->closing = true;
        } else if (err == HPE_PAUSED) {
            http_parser_pause(&c->parser, 0);
            if (!c->closing && !flush(c))
                return false;
        } else if (err == HPE_HEADER_OVERFLOW) {
            respond_error(c, "431 Request Header Fields Too Large");
        } else if (err != HPE_OK) {
            respond_error(c, "400 Bad Request");
        }
    }
    return flush(c) && !c->closing;
}

static void handle(serve_conn *sc, int fd)
{
    http_conn *c = malloc(sizeof *c);
    char *out = malloc(OUTPUT_INITIAL);
    if (c == NULL || out == NULL) {
        free(c);
        free(out);
        return;
    }
    c->fd = fd;
    c->out = out;
    c->out_len = 0;
    c->out_cap = OUTPUT_INITIAL;
    c->in_message = c->in_head = c->closing = false;
    c->idle_deadline = serve_now_ns() + keepalive_timeout_ns;
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c;

    for (;;) {
        uint64_t timeout = keepalive_timeout_ns; /* a body's next bytes */
        bool idle = !c->in_message;
        if (c->in_head || idle) {
            uint64_t now = serve_now_ns();
            uint64_t until = idle ? c->idle_deadline : c->head_deadline;
            if (now >= until)
                break; /* slowloris, or the keep-alive time is over */
            timeout = until - now;
        }
        if (idle && !serve_idle(sc))
            break;
        ssize_t n = weft_read_for(fd, c->in, sizeof c->in, timeout);
        if (idle)
            serve_busy(sc);
        if (n <= 0) /* closed, reset, or timed out: idle or too slow */
            break;
        if (!consume(c, (size_t)n))
            break;
    }
    free(c->out);
    free(c);
}

static int start(weft_pool *pool)
{
    (void)pool;
    header_timeout_ns = serve_env("HTTP_HEADER_TIMEOUT_MS", 10000) * SERVE_MS;
    keepalive_timeout_ns =
        serve_env("HTTP_KEEPALIVE_TIMEOUT_MS", 5000) * SERVE_MS;
    write_timeout_ns = serve_env("HTTP_WRITE_TIMEOUT_MS", 10000) * SERVE_MS;
    output_limit = serve_env("HTTP_OUTPUT_LIMIT", 65536);
    if (output_limit < OUTPUT_INITIAL)
        output_limit = OUTPUT_INITIAL;
    /* http-parser counts the request line and headers together against
     * this limit (a process-wide setting) and fails with
     * HPE_HEADER_OVERFLOW past it. */
    http_parser_set_max_header_size(
        (uint32_t)serve_env("HTTP_MAX_HEAD", 8192));
    return 0;
}

int main(int argc, char **argv)
{
    static const serve_spec spec = {
        .name = "http_server",
        .handle = handle,
        .stack_size = 64 * 1024,
        .start = start,
    };
    return serve_main(&spec, argc, argv);
}
