/*
 * kv_server.c — an in-memory key-value server speaking Redis's protocol
 * (RESP2): one task per connection.
 *
 *     kv_server PORT [THREADS]
 *
 * Listens on 127.0.0.1:PORT (0: a free port), prints "listening on PORT".
 * Commands: PING [msg], ECHO msg, SET key value [EX s | PX ms] [NX | XX]
 * [KEEPTTL], GET, DEL key..., EXISTS key..., INCR, MSET key value ...,
 * MGET key..., QUIT, and CONFIG GET (answering only what redis-benchmark
 * asks: save and appendonly, both off).  Requests are RESP arrays of bulk
 * strings or inline commands (a line of words, with Redis's quoting; the
 * reader is resp.c, fuzzed by tests/fuzz/fuzz_resp.c), and may be
 * pipelined: every complete command in one read is executed in
 * order and their replies go out in one write.  Errors are RESP errors,
 * worded as redis-server 7 words them (-ERR unknown command 'FOO', with
 * args beginning with: ...; -ERR wrong number of arguments for 'get'
 * command; ...), so clients written for Redis (redis-cli, redis-benchmark)
 * work unchanged.  THREADS: the pool's size (default: one worker per
 * CPU).  SIGINT/SIGTERM: graceful shutdown (serve.h).
 *
 * The map is split into 64 shards by key hash, each a chained hash table
 * behind its own weft_mutex, so connections on different workers contend
 * only when their keys share a shard.  A key set with EX or PX is gone
 * once its time is up: every lookup checks the deadline, and a sweeper
 * task walks a slice of every shard ten times a second to free keys that
 * are never looked up again.
 *
 * Bad input (limits from the environment):
 *
 *     malformed frame               -ERR Protocol error: ..., then close
 *     bulk string over KV_MAX_BULK  -ERR Protocol error: invalid bulk
 *       (bytes, default 8 MiB)      length, then close
 *     more than 1,048,576 args      -ERR Protocol error: invalid
 *                                   multibulk length, then close
 *     inline line over 64 KiB       -ERR Protocol error: too big inline
 *                                   request, then close
 *     replies not taken             queued replies are written once they
 *                                   pass 64 KiB (reading stops meanwhile),
 *                                   and a write that cannot finish within
 *                                   KV_WRITE_TIMEOUT_MS (10000) closes
 *
 * so a connection holds at most about two of its largest frames (one
 * being read, one reply being written) plus 64 KiB.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "resp.h"
#include "serve.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SHARDS 64
/* The input buffer starts at 4 KiB and doubles while a frame that does
 * not fit is arriving; pipelined small commands are consumed read by
 * read and never grow it. */
#define INPUT_INITIAL 4096
/* Queued replies are written once they pass this. */
#define OUTPUT_FLUSH (64 * 1024)
#define SWEEP_EVERY_NS (100 * SERVE_MS)
#define SWEEP_BUCKETS 64 /* per shard per sweep */

static size_t max_bulk;
static uint64_t write_timeout_ns;

/* ================================================================ store */

typedef struct entry {
    struct entry *next;  /* in its bucket */
    uint64_t hash;
    uint64_t expires_ns; /* CLOCK_MONOTONIC; 0: never */
    size_t klen, vlen;
    char data[];         /* key, then value */
} entry;

typedef struct shard {
    weft_mutex lock;
    entry **buckets;
    size_t nbuckets; /* a power of two */
    size_t count;
    size_t sweep_cursor;
} shard;

static shard shards[SHARDS];

/* FNV-1a: short keys, no adversary worth a keyed hash in an example. */
static uint64_t hash_key(const char *k, size_t len)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)k[i]) * 1099511628211ull;
    return h;
}

static shard *shard_of(uint64_t h)
{
    /* The top bits pick the shard, the low bits the bucket within it. */
    return &shards[h >> 58];
}

static bool expired(const entry *e, uint64_t now)
{
    return e->expires_ns != 0 && e->expires_ns <= now;
}

/* The wall clock in ms since 1970, by which Redis bounds an expiry. */
static long long unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t now_ns(void)
{
    return serve_now_ns();
}

/* The link that points at key's entry (or at the NULL where it would go).
 * With the shard locked.  An expired entry found on the way is freed.
 * The clock is read only for an entry with an expiry: most are without,
 * and a clock read per command was 4% of the server's time at -P 1. */
static entry **find(shard *s, uint64_t h, const char *k, size_t klen)
{
    entry **link = &s->buckets[h & (s->nbuckets - 1)];
    while (*link != NULL) {
        entry *e = *link;
        if (e->hash == h && e->klen == klen && memcmp(e->data, k, klen) == 0) {
            if (e->expires_ns == 0 || !expired(e, now_ns()))
                return link;
            *link = e->next;
            free(e);
            s->count--;
            return link;
        }
        link = &e->next;
    }
    return link;
}

static void grow(shard *s)
{
    size_t n = s->nbuckets * 2;
    entry **b = calloc(n, sizeof *b);
    if (b == NULL)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < s->nbuckets; i++) {
        for (entry *e = s->buckets[i], *next; e != NULL; e = next) {
            next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    }
    free(s->buckets);
    s->buckets = b;
    s->nbuckets = n;
}

static entry *entry_new(uint64_t h, const char *k, size_t klen,
                        const char *v, size_t vlen, uint64_t expires)
{
    entry *e = malloc(sizeof *e + klen + vlen);
    if (e == NULL)
        return NULL;
    e->hash = h;
    e->expires_ns = expires;
    e->klen = klen;
    e->vlen = vlen;
    memcpy(e->data, k, klen);
    memcpy(e->data + klen, v, vlen);
    return e;
}

/* Puts e where *link is, replacing what is there.  Shard locked. */
static void place(shard *s, entry **link, entry *e)
{
    entry *old = *link;
    if (old != NULL) {
        e->next = old->next;
        free(old);
    } else {
        e->next = NULL;
        s->count++;
    }
    *link = e;
    if (s->count > s->nbuckets)
        grow(s);
}

static int store_init(void)
{
    for (size_t i = 0; i < SHARDS; i++) {
        weft_mutex_init(&shards[i].lock);
        shards[i].nbuckets = 256;
        shards[i].buckets = calloc(256, sizeof(entry *));
        if (shards[i].buckets == NULL)
            return -ENOMEM;
    }
    return 0;
}

/* ================================================================ replies */

typedef struct kv_conn {
    int fd;
    char *in;
    size_t in_cap, in_start, in_len; /* unparsed: in[in_start..in_len) */
    char *out;
    size_t out_len, out_cap;
    bool out_failed;   /* no memory for a reply: close */
    bool closing;      /* QUIT or a protocol error: close after replies */
    resp_args a;       /* the current command's arguments (pointers into in) */
} kv_conn;

static bool reserve(kv_conn *c, size_t more)
{
    if (c->out_len + more <= c->out_cap)
        return true;
    size_t cap = c->out_cap ? c->out_cap : 4096;
    while (cap < c->out_len + more)
        cap *= 2;
    char *p = realloc(c->out, cap);
    if (p == NULL) {
        c->out_failed = true;
        return false;
    }
    c->out = p;
    c->out_cap = cap;
    return true;
}

static void reply_raw(kv_conn *c, const char *s, size_t len)
{
    if (!reserve(c, len))
        return;
    memcpy(c->out + c->out_len, s, len);
    c->out_len += len;
}

#define REPLY_LITERAL(c, s) reply_raw((c), (s), sizeof(s) - 1)

static void reply_fmt(kv_conn *c, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof buf - 1)
        n = (int)sizeof buf - 1;
    reply_raw(c, buf, (size_t)n);
}

static void reply_int(kv_conn *c, long long v)
{
    reply_fmt(c, ":%lld\r\n", v);
}

static void reply_bulk(kv_conn *c, const char *s, size_t len)
{
    char head[32];
    int n = snprintf(head, sizeof head, "$%zu\r\n", len);
    if (!reserve(c, (size_t)n + len + 2))
        return;
    memcpy(c->out + c->out_len, head, (size_t)n);
    memcpy(c->out + c->out_len + n, s, len);
    memcpy(c->out + c->out_len + n + len, "\r\n", 2);
    c->out_len += (size_t)n + len + 2;
}

/* A RESP error: the text of an error line may not hold CR or LF, so the
 * client's bytes quoted in it are cut at the first one (Redis does the
 * same). */
static void reply_error(kv_conn *c, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (char *p = buf; *p != '\0'; p++)
        if (*p == '\r' || *p == '\n')
            *p = ' ';
    REPLY_LITERAL(c, "-");
    reply_raw(c, buf, strlen(buf));
    REPLY_LITERAL(c, "\r\n");
}

static void reply_wrong_args(kv_conn *c, const char *name)
{
    reply_error(c, "ERR wrong number of arguments for '%s' command", name);
}

/* ================================================================ commands */


static bool arg_is(const kv_conn *c, size_t i, const char *word)
{
    size_t n = strlen(word);
    return c->a.argl[i] == n && strncasecmp(c->a.argv[i], word, n) == 0;
}

static void cmd_ping(kv_conn *c)
{
    if (c->a.argc > 2)
        reply_wrong_args(c, "ping");
    else if (c->a.argc == 2)
        reply_bulk(c, c->a.argv[1], c->a.argl[1]);
    else
        REPLY_LITERAL(c, "+PONG\r\n");
}

static void cmd_echo(kv_conn *c)
{
    if (c->a.argc != 2)
        reply_wrong_args(c, "echo");
    else
        reply_bulk(c, c->a.argv[1], c->a.argl[1]);
}

/* Stores key = value; keep_ttl keeps the old deadline.  Returns false
 * for want of memory (nothing changed). */
static bool set_one(const char *k, size_t klen, const char *v, size_t vlen,
                    uint64_t expires, int only, bool keep_ttl, bool *done)
{
    uint64_t h = hash_key(k, klen);
    shard *s = shard_of(h);
    /* Allocated before the lock: the critical section stays short. */
    entry *e = entry_new(h, k, klen, v, vlen, expires);
    if (e == NULL)
        return false;
    weft_mutex_lock(&s->lock);
    entry **link = find(s, h, k, klen);
    bool exists = *link != NULL;
    /* only: 0 always, 1 NX (only if absent), 2 XX (only if present) */
    *done = only == 0 || (only == 1 && !exists) || (only == 2 && exists);
    if (*done) {
        if (keep_ttl && exists)
            e->expires_ns = (*link)->expires_ns;
        place(s, link, e);
        e = NULL;
    }
    weft_mutex_unlock(&s->lock);
    free(e);
    return true;
}

static void cmd_set(kv_conn *c)
{
    if (c->a.argc < 3) {
        reply_wrong_args(c, "set");
        return;
    }
    uint64_t expires = 0;
    int only = 0;
    char unit = 0; /* 'E' or 'P' once an expiry was given (the last wins) */
    bool keep_ttl = false;
    for (size_t i = 3; i < c->a.argc; i++) {
        bool ex = arg_is(c, i, "EX"), px = arg_is(c, i, "PX");
        /* As Redis 7: an option may come again (EX 10 EX 20: the last),
         * but not with its opposite (EX with PX or KEEPTTL, NX with XX). */
        if ((ex || px) && i + 1 < c->a.argc && !keep_ttl &&
            unit != (ex ? 'P' : 'E')) {
            long long t;
            i++;
            if (!resp_parse_ll(c->a.argv[i], c->a.argl[i], &t)) {
                reply_error(c, "ERR value is not an integer or out of range");
                return;
            }
            /* Redis's bounds: positive, and the Unix time in ms it ends
             * at within a long long. */
            if (t <= 0 || (ex && t > LLONG_MAX / 1000) ||
                (ex ? t * 1000 : t) > LLONG_MAX - unix_ms()) {
                reply_error(c, "ERR invalid expire time in 'set' command");
                return;
            }
            uint64_t ms = (uint64_t)t * (ex ? 1000u : 1u);
            /* Beyond 64 bits of ns from now (some 584 years): never. */
            uint64_t now = now_ns();
            expires = ms > (UINT64_MAX - now) / SERVE_MS
                          ? UINT64_MAX
                          : now + ms * SERVE_MS;
            unit = ex ? 'E' : 'P';
        } else if (arg_is(c, i, "NX") && only != 2) {
            only = 1;
        } else if (arg_is(c, i, "XX") && only != 1) {
            only = 2;
        } else if (arg_is(c, i, "KEEPTTL") && unit == 0) {
            keep_ttl = true;
        } else {
            reply_error(c, "ERR syntax error");
            return;
        }
    }
    bool done;
    if (!set_one(c->a.argv[1], c->a.argl[1], c->a.argv[2], c->a.argl[2], expires,
                 only, keep_ttl, &done))
        reply_error(c, "ERR out of memory");
    else if (done)
        REPLY_LITERAL(c, "+OK\r\n");
    else
        REPLY_LITERAL(c, "$-1\r\n");
}

/* Replies with key's value as a bulk string, or nil. */
static void get_one(kv_conn *c, const char *k, size_t klen)
{
    uint64_t h = hash_key(k, klen);
    shard *s = shard_of(h);
    weft_mutex_lock(&s->lock);
    entry *e = *find(s, h, k, klen);
    if (e != NULL)
        reply_bulk(c, e->data + e->klen, e->vlen); /* copied under the lock */
    else
        REPLY_LITERAL(c, "$-1\r\n");
    weft_mutex_unlock(&s->lock);
}

static void cmd_get(kv_conn *c)
{
    if (c->a.argc != 2)
        reply_wrong_args(c, "get");
    else
        get_one(c, c->a.argv[1], c->a.argl[1]);
}

/* DEL (remove) and EXISTS: how many of the keys there were. */
static void count_keys(kv_conn *c, const char *name, bool remove)
{
    if (c->a.argc < 2) {
        reply_wrong_args(c, name);
        return;
    }
    long long n = 0;
    for (size_t i = 1; i < c->a.argc; i++) {
        uint64_t h = hash_key(c->a.argv[i], c->a.argl[i]);
        shard *s = shard_of(h);
        weft_mutex_lock(&s->lock);
        entry **link = find(s, h, c->a.argv[i], c->a.argl[i]);
        entry *e = *link;
        if (e != NULL) {
            n++;
            if (remove) {
                *link = e->next;
                free(e);
                s->count--;
            }
        }
        weft_mutex_unlock(&s->lock);
    }
    reply_int(c, n);
}

static void cmd_incr(kv_conn *c)
{
    if (c->a.argc != 2) {
        reply_wrong_args(c, "incr");
        return;
    }
    const char *k = c->a.argv[1];
    size_t klen = c->a.argl[1];
    uint64_t h = hash_key(k, klen);
    shard *s = shard_of(h);
    /* The new entry is made under the lock: its value depends on the old
     * one.  A malloc is short next to what contention would cost. */
    weft_mutex_lock(&s->lock);
    entry **link = find(s, h, k, klen);
    long long v = 0;
    if (*link != NULL &&
        !resp_parse_ll((*link)->data + (*link)->klen, (*link)->vlen, &v)) {
        weft_mutex_unlock(&s->lock);
        reply_error(c, "ERR value is not an integer or out of range");
        return;
    }
    if (v == LLONG_MAX) {
        weft_mutex_unlock(&s->lock);
        reply_error(c, "ERR increment or decrement would overflow");
        return;
    }
    v++;
    char text[24];
    int n = snprintf(text, sizeof text, "%lld", v);
    /* INCR keeps the key's deadline, as Redis does. */
    entry *e = entry_new(h, k, klen, text, (size_t)n,
                         *link != NULL ? (*link)->expires_ns : 0);
    if (e != NULL)
        place(s, link, e);
    weft_mutex_unlock(&s->lock);
    if (e == NULL)
        reply_error(c, "ERR out of memory");
    else
        reply_int(c, v);
}

static void cmd_mset(kv_conn *c)
{
    if (c->a.argc < 3 || c->a.argc % 2 == 0) {
        reply_wrong_args(c, "mset");
        return;
    }
    /* Key by key: another client may see some keys set before others (a
     * real Redis runs MSET atomically; this map has no multi-shard lock). */
    for (size_t i = 1; i < c->a.argc; i += 2) {
        bool done;
        if (!set_one(c->a.argv[i], c->a.argl[i], c->a.argv[i + 1], c->a.argl[i + 1],
                     0, 0, false, &done)) {
            reply_error(c, "ERR out of memory");
            return;
        }
    }
    REPLY_LITERAL(c, "+OK\r\n");
}

static bool flush(kv_conn *c);

static void cmd_mget(kv_conn *c)
{
    if (c->a.argc < 2) {
        reply_wrong_args(c, "mget");
        return;
    }
    reply_fmt(c, "*%zu\r\n", c->a.argc - 1);
    for (size_t i = 1; i < c->a.argc && !c->closing; i++) {
        get_one(c, c->a.argv[i], c->a.argl[i]);
        /* A long answer goes out as it grows (no lock is held here). */
        if (c->out_len > OUTPUT_FLUSH && !flush(c))
            c->closing = true;
    }
}

static void cmd_config(kv_conn *c)
{
    /* redis-benchmark reads these two at start; nothing is persisted. */
    if (c->a.argc == 3 && arg_is(c, 1, "GET") && arg_is(c, 2, "save"))
        REPLY_LITERAL(c, "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
    else if (c->a.argc == 3 && arg_is(c, 1, "GET") && arg_is(c, 2, "appendonly"))
        REPLY_LITERAL(c, "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n");
    else if (c->a.argc == 3 && arg_is(c, 1, "GET"))
        REPLY_LITERAL(c, "*0\r\n");
    else if (c->a.argc < 2)
        reply_wrong_args(c, "config");
    else
        reply_error(c, "ERR unknown subcommand or wrong number of arguments "
                       "for 'CONFIG'");
}

static void cmd_unknown(kv_conn *c)
{
    /* Redis's wording: the name, then each argument quoted, up to 128
     * bytes of them. */
    char args[160] = "";
    size_t used = 0;
    for (size_t i = 1; i < c->a.argc && used < 128; i++) {
        int n = snprintf(args + used, sizeof args - used, "'%.*s' ",
                         (int)(c->a.argl[i] < 128 ? c->a.argl[i] : 128),
                         c->a.argv[i]);
        if (n < 0 || (size_t)n >= sizeof args - used)
            break;
        used += (size_t)n;
    }
    reply_error(c, "ERR unknown command '%.*s', with args beginning with: %s",
                (int)(c->a.argl[0] < 128 ? c->a.argl[0] : 128), c->a.argv[0], args);
}

static void execute(kv_conn *c)
{
    if (arg_is(c, 0, "GET"))
        cmd_get(c);
    else if (arg_is(c, 0, "SET"))
        cmd_set(c);
    else if (arg_is(c, 0, "PING"))
        cmd_ping(c);
    else if (arg_is(c, 0, "INCR"))
        cmd_incr(c);
    else if (arg_is(c, 0, "DEL"))
        count_keys(c, "del", true);
    else if (arg_is(c, 0, "EXISTS"))
        count_keys(c, "exists", false);
    else if (arg_is(c, 0, "MSET"))
        cmd_mset(c);
    else if (arg_is(c, 0, "MGET"))
        cmd_mget(c);
    else if (arg_is(c, 0, "ECHO"))
        cmd_echo(c);
    else if (arg_is(c, 0, "CONFIG"))
        cmd_config(c);
    else if (arg_is(c, 0, "QUIT")) {
        REPLY_LITERAL(c, "+OK\r\n");
        c->closing = true;
    } else
        cmd_unknown(c);
}

/* ================================================================ connection */

static bool flush(kv_conn *c)
{
    if (c->out_len == 0)
        return true;
    ssize_t n = weft_write_for(c->fd, c->out, c->out_len, write_timeout_ns);
    c->out_len = 0;
    /* A big reply's buffer is not kept for the connection's life. */
    if (c->out_cap > 4 * OUTPUT_FLUSH) {
        free(c->out);
        c->out = NULL;
        c->out_cap = 0;
    }
    return n >= 0;
}

/* Executes every complete command in the input.  Returns false when the
 * connection is to close (its replies are queued). */
static bool run_commands(kv_conn *c)
{
    while (c->in_start < c->in_len && !c->closing) {
        size_t consumed = 0;
        const char *why = NULL;
        int r = resp_parse(c->in + c->in_start, c->in_len - c->in_start,
                           max_bulk, &c->a, &consumed, &why);
        if (r == RESP_MORE)
            break;
        if (r == RESP_ERROR) {
            reply_error(c, "ERR Protocol error: %s", why);
            return false;
        }
        if (c->a.argc > 0) /* empty lines and *0 are skipped, as Redis does */
            execute(c);
        c->in_start += consumed;
        if (c->out_failed)
            return false;
        if (c->out_len > OUTPUT_FLUSH && !flush(c))
            return false;
    }
    return !c->closing;
}

/* Makes room to read into: moves the unparsed rest to the front, and grows
 * the buffer when a frame being received needs more (up to a frame of
 * max_bulk bytes).  Returns false for want of memory or past the limit. */
static bool make_room(kv_conn *c)
{
    if (c->in_start > 0) {
        memmove(c->in, c->in + c->in_start, c->in_len - c->in_start);
        c->in_len -= c->in_start;
        c->in_start = 0;
    }
    if (c->in_len < c->in_cap)
        return true;
    size_t limit = max_bulk + RESP_INLINE_MAX;
    if (c->in_cap >= limit)
        return false;
    size_t cap = c->in_cap * 2 < limit ? c->in_cap * 2 : limit;
    char *p = realloc(c->in, cap);
    if (p == NULL)
        return false;
    /* The parsed arguments point into the old buffer, but none survive a
     * read: a command is only executed once all of it is in. */
    c->in = p;
    c->in_cap = cap;
    return true;
}

static void handle(serve_conn *sc, int fd)
{
    kv_conn c = {.fd = fd, .in_cap = INPUT_INITIAL};
    c.in = malloc(c.in_cap);
    if (c.in == NULL)
        return;
    for (;;) {
        if (!make_room(&c))
            break;
        /* Idle: nothing of a next command has arrived. */
        bool idle = c.in_len == 0;
        if (idle && !serve_idle(sc))
            break;
        ssize_t n = weft_read(fd, c.in + c.in_len, c.in_cap - c.in_len);
        if (idle)
            serve_busy(sc);
        if (n <= 0) /* the client closed (0) or reset the connection */
            break;
        c.in_len += (size_t)n;
        bool go_on = run_commands(&c);
        if (!flush(&c) || !go_on)
            break;
        if (c.in_start == c.in_len)
            c.in_start = c.in_len = 0;
        /* A buffer grown for one big frame shrinks back once it is done. */
        if (c.in_len == 0 && c.in_cap > 4 * INPUT_INITIAL) {
            char *p = realloc(c.in, INPUT_INITIAL);
            if (p != NULL) {
                c.in = p;
                c.in_cap = INPUT_INITIAL;
            }
        }
    }
    free(c.in);
    free(c.out);
    resp_args_free(&c.a);
}

/* ================================================================ sweeper */

static weft_task *sweeper;

/* Frees expired keys that nobody looks up any more: a slice of each shard
 * per round, so a round holds each lock briefly. */
static void *sweep(void *arg)
{
    (void)arg;
    while (weft_sleep(SWEEP_EVERY_NS) == 0) {
        uint64_t now = now_ns();
        for (size_t i = 0; i < SHARDS; i++) {
            shard *s = &shards[i];
            weft_mutex_lock(&s->lock);
            for (size_t b = 0; b < SWEEP_BUCKETS; b++) {
                size_t at = (s->sweep_cursor + b) & (s->nbuckets - 1);
                for (entry **link = &s->buckets[at]; *link != NULL;) {
                    entry *e = *link;
                    if (expired(e, now)) {
                        *link = e->next;
                        free(e);
                        s->count--;
                    } else {
                        link = &e->next;
                    }
                }
            }
            s->sweep_cursor = (s->sweep_cursor + SWEEP_BUCKETS) &
                              (s->nbuckets - 1);
            weft_mutex_unlock(&s->lock);
        }
    }
    return NULL;
}

static int start(weft_pool *pool)
{
    max_bulk = serve_env("KV_MAX_BULK", 8u * 1024 * 1024);
    write_timeout_ns = serve_env("KV_WRITE_TIMEOUT_MS", 10000) * SERVE_MS;
    int rc = store_init();
    if (rc == 0)
        rc = weft_spawn(&sweeper, pool, sweep, NULL, NULL);
    return rc;
}

static void stop(void)
{
    weft_task_cancel(sweeper);
    weft_await(sweeper, NULL);
}

int main(int argc, char **argv)
{
    static const serve_spec spec = {
        .name = "kv_server",
        .handle = handle,
        .stack_size = 64 * 1024,
        .start = start,
        .stop = stop,
    };
    return serve_main(&spec, argc, argv);
}
