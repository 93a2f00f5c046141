/*
 * hook/resolve.c — getaddrinfo and getnameinfo: a pool task sends the
 * whole call to weft's blocking threads (weft_blocking) and parks until
 * it returns.  glibc's resolver makes its own sockets through entry
 * points no interposition reaches (and reads files, and may load NSS
 * modules), so it is not hooked piecewise: it runs unchanged on a thread
 * of its own.  A numeric address and port need no resolver: getaddrinfo
 * is then libc's, at once.
 *
 * A cancel ends the wait at once (EAI_SYSTEM, errno ECANCELED) while the
 * lookup runs on to its end on its thread, so the request lives on the
 * heap, with copies of the inputs, and says who frees it.  A cancel that
 * came before a blocking thread took the call: run never runs, and the
 * task frees it (weft__hook_blocking says which).  After: run runs, and a
 * state word decides: the task, if the exchange by which it gives the
 * request up sees DONE; else run's thread, whose move to RUNNING (not
 * started yet) or from RUNNING to DONE then fails.  An abandoned result
 * is freed with it.  Without
 * a blocking thread (none could start, no memory) the call is libc's,
 * blocking the worker.
 */
#include "hook/real.h"
#include "hook/wait.h"
#include "io/hook.h"

#include <weft/blocking.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum { IDLE, RUNNING, ABANDONED, DONE };

struct lookup {
    atomic_int state;
    int rc;
    int err;                     /* errno after the call (EAI_SYSTEM)  */
    bool name_info;
    /* getaddrinfo */
    char *node, *service;
    struct addrinfo hints;
    bool has_hints;
    struct addrinfo *res;
    /* getnameinfo */
    struct sockaddr_storage sa;
    socklen_t salen;
    char *host, *serv;
    socklen_t hostlen, servlen;
    int flags;
};

static void lookup_free(struct lookup *l)
{
    if (l->res)
        freeaddrinfo(l->res);
    free(l->node);
    free(l->service);
    free(l->host);
    free(l->serv);
    free(l);
}

static void *run(void *arg)
{
    struct lookup *l = arg;
    int idle = IDLE;
    /* acq_rel: the thread that frees (the task, after ABANDONED) must see
     * none of our writes pending, and we see the task's inputs. */
    if (!atomic_compare_exchange_strong_explicit(&l->state, &idle, RUNNING,
                                                 memory_order_acq_rel,
                                                 memory_order_acquire)) {
        lookup_free(l); /* given up as its thread took it: ours */
        return NULL;
    }
    if (l->name_info)
        l->rc = REAL(getnameinfo)((struct sockaddr *)&l->sa, l->salen,
                                  l->host, l->hostlen, l->serv, l->servlen,
                                  l->flags);
    else
        l->rc = REAL(getaddrinfo)(l->node, l->service,
                                  l->has_hints ? &l->hints : NULL, &l->res);
    l->err = errno;
    int running = RUNNING;
    /* Release: the task that sees DONE (after weft_blocking's own
     * ordering, or by its exchange) sees the result. */
    if (!atomic_compare_exchange_strong_explicit(&l->state, &running, DONE,
                                                 memory_order_acq_rel,
                                                 memory_order_acquire))
        lookup_free(l); /* the task gave up while it ran */
    return NULL;
}

/* Run l's lookup on a blocking thread.  1: done (l->rc set; the caller
 * frees l); 0: could not be sent (the caller frees l and makes libc's
 * call); -1: cancelled (l is freed, here or by the lookup's thread). */
static int offload(struct lookup *l)
{
    atomic_init(&l->state, IDLE);
    struct hook_park pk;
    hook_park_begin(&pk);
    bool runs;
    int r = weft__hook_blocking(run, l, NULL, &runs);
    hook_park_end(&pk);
    if (r == 0)
        return 1;
    if (r != -ECANCELED)
        return 0; /* -ENOMEM, -EAGAIN: run never started */
    /* acq_rel: DONE's result writes are seen before the free; a run that
     * fails its move sees the state the free's side left. */
    if (!runs || atomic_exchange_explicit(&l->state, ABANDONED,
                                          memory_order_acq_rel) == DONE)
        lookup_free(l); /* run never runs, or it has ended */
    return -1;
}

static char *dup_or_null(const char *s, bool *failed)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *failed = true;
    return d;
}

/* Whether getaddrinfo can answer from its arguments alone: a numeric
 * address (or none) and a numeric port (or none), which glibc answers
 * without a file or a socket.  Libraries pass these all the time (libpq
 * with hostaddr, a client given "127.0.0.1"): a round trip through a
 * blocking thread would cost more than the call. */
static bool answers_at_once(const char *node, const char *service,
                            const struct addrinfo *hints)
{
    if (service)
        for (const char *c = service; *c; c++)
            if (*c < '0' || *c > '9')
                return false;
    if (!node || (hints && (hints->ai_flags & AI_NUMERICHOST)))
        return true;
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, node, buf) == 1 ||
           inet_pton(AF_INET6, node, buf) == 1;
}

HOOK_API int getaddrinfo(const char *node, const char *service,
                         const struct addrinfo *hints, struct addrinfo **res)
{
    if (!weft__hook_here() || answers_at_once(node, service, hints))
        return REAL(getaddrinfo)(node, service, hints, res);
    struct lookup *l = calloc(1, sizeof *l);
    bool failed = !l;
    if (l) {
        l->node = dup_or_null(node, &failed);
        l->service = dup_or_null(service, &failed);
        if (hints) {
            /* Only the four fields getaddrinfo reads from hints. */
            l->hints.ai_flags = hints->ai_flags;
            l->hints.ai_family = hints->ai_family;
            l->hints.ai_socktype = hints->ai_socktype;
            l->hints.ai_protocol = hints->ai_protocol;
            l->has_hints = true;
        }
    }
    if (failed) {
        if (l)
            lookup_free(l);
        return REAL(getaddrinfo)(node, service, hints, res);
    }
    /* Other tasks run on this thread while we park, and set its errno:
     * a call that does not fail with EAI_SYSTEM leaves it as it was. */
    int saved = errno;
    int o = offload(l);
    if (o == 0) {
        lookup_free(l);
        errno = saved;
        return REAL(getaddrinfo)(node, service, hints, res);
    }
    if (o < 0) {
        errno = ECANCELED;
        return EAI_SYSTEM;
    }
    int rc = l->rc;
    *res = l->res;
    l->res = NULL;
    errno = rc == EAI_SYSTEM ? l->err : saved;
    lookup_free(l);
    return rc;
}

HOOK_API int getnameinfo(const struct sockaddr *sa, socklen_t salen,
                         char *host, socklen_t hostlen, char *serv,
                         socklen_t servlen, int flags)
{
    if (!weft__hook_here() || salen > sizeof(struct sockaddr_storage))
        return REAL(getnameinfo)(sa, salen, host, hostlen, serv, servlen,
                                 flags);
    struct lookup *l = calloc(1, sizeof *l);
    bool failed = !l;
    if (l) {
        l->name_info = true;
        memcpy(&l->sa, sa, salen);
        l->salen = salen;
        l->flags = flags;
        l->hostlen = host ? hostlen : 0;
        l->servlen = serv ? servlen : 0;
        if (host && hostlen && !(l->host = malloc(hostlen)))
            failed = true;
        if (serv && servlen && !(l->serv = malloc(servlen)))
            failed = true;
    }
    if (failed) {
        if (l)
            lookup_free(l);
        return REAL(getnameinfo)(sa, salen, host, hostlen, serv, servlen,
                                 flags);
    }
    int saved = errno; /* as in getaddrinfo */
    int o = offload(l);
    if (o == 0) {
        lookup_free(l);
        errno = saved;
        return REAL(getnameinfo)(sa, salen, host, hostlen, serv, servlen,
                                 flags);
    }
    if (o < 0) {
        errno = ECANCELED;
        return EAI_SYSTEM;
    }
    int rc = l->rc;
    if (rc == 0) {
        if (l->host)
            memcpy(host, l->host, hostlen);
        if (l->serv)
            memcpy(serv, l->serv, servlen);
    }
    errno = rc == EAI_SYSTEM ? l->err : saved;
    lookup_free(l);
    return rc;
}
