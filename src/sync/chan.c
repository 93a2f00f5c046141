/*
 * sync/chan.c — the bounded MPMC channel (weft/chan.h).
 *
 * Everything is under one lock: the ring buffer, the closed flag and two
 * FIFOs of wait records (sched/wait.h), senders and receivers.
 *
 * Invariants, kept by every operation under the lock:
 *   - receivers wait only while the buffer is empty, and a send serves a
 *     waiting receiver before it touches the buffer;
 *   - senders wait only while the buffer is full (always, at capacity 0),
 *     and a receive that frees a slot refills it from the first waiting
 *     sender;
 * so values leave in the order they came, and a listed sender's value is
 * behind every buffered one.
 *
 * Hand-over: a waiting sender's value travels in its record (w.value) to
 * the receiver that wakes it; a waiting receiver is woken with the value
 * written into its record.  The woken party reads its record only after
 * it retakes the lock (waitq.h), so the waker may fill it in after the
 * wake succeeded.  w.data tells a woken waiter why: DELIVERED (its value
 * was taken, or it got one) or CLOSED.
 *
 * Destroy: a woken waiter still retakes the lock before it returns, after
 * its record left the lists; `waiting` counts parties from listing their
 * record to that last touch, so destroy can refuse (-EBUSY) instead of
 * freeing memory one of them is about to use.
 */
#include <weft/chan.h>

#include "base/compiler.h"
#include "sync/objects.h"
#include "base/alloc.h"
#include "sync/waitq.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum { DELIVERED = 0, CLOSED = 1 };


struct weft_chan {
    weft__spinlock lock;
    bool closed;
    size_t cap;        /* buffer slots                               */
    size_t head, len;  /* ring: first value, values held             */
    size_t waiting;    /* listed or woken waiters yet to return      */
    weft__waitq senders, receivers;
    void *buf[];
};

/* For the dump: the channel (its capacity never changes). */
static void describe(const struct weft__wait *w, char *buf, size_t n)
{
    const struct weft_chan *ch = w->obj;
    snprintf(buf, n, "chan %p (capacity %zu)", w->obj, ch->cap);
}

static const struct weft__wait_kind send_kind = {WEFT__WR_CHAN_SEND,
                                                 "chan send", 0, describe};
static const struct weft__wait_kind recv_kind = {WEFT__WR_CHAN_RECV,
                                                 "chan recv", 0, describe};

static void buf_push(weft_chan *ch, void *v)
{
    size_t i = ch->head + ch->len;
    ch->buf[i < ch->cap ? i : i - ch->cap] = v;
    ch->len++;
}

static void *buf_pop(weft_chan *ch)
{
    void *v = ch->buf[ch->head];
    ch->head = ch->head + 1 == ch->cap ? 0 : ch->head + 1;
    ch->len--;
    return v;
}

/*
 * With the lock held: wait in q until deadline (0: none), or if nowait is
 * an error code, return it instead of waiting.  *value: in, the value to
 * send (a sender); out, on 0 only, the value received (a receiver).  Drops
 * the lock.  Returns 0, -EPIPE (closed meanwhile), or the wait's error.
 */
static int wait_in(weft_chan *ch, weft__waitq *q, void **value,
                   uint64_t deadline, int nowait)
{
    struct weft__wait w;
    if (nowait ||
        weft__wait_init(&w, deadline,
                        q == &ch->senders ? &send_kind : &recv_kind, ch)) {
        weft__spin_unlock(&ch->lock);
        return nowait ? nowait : -ECANCELED;
    }
    w.value = *value;
    ch->waiting++;
    uint32_t outcome = weft__wq_block(&ch->lock, q, &w, false);
    ch->waiting--;
    weft__spin_unlock(&ch->lock);
    if (outcome != WEFT__W_WOKEN)
        return weft__wait_error(&w, outcome);
    if (w.data == CLOSED)
        return -EPIPE;
    *value = w.value;
    return 0;
}

static int send(weft_chan *ch, void *v, uint64_t deadline, int nowait)
{
    if (!ch)
        return -EINVAL;
    weft__spin_lock(&ch->lock);
    if (ch->closed) {
        weft__spin_unlock(&ch->lock);
        return -EPIPE;
    }
    struct weft__wait *r = weft__wq_wake_one(&ch->receivers);
    if (r) {
        r->value = v;
        r->data = DELIVERED;
    } else if (ch->len < ch->cap) {
        buf_push(ch, v);
    } else {
        return wait_in(ch, &ch->senders, &v, deadline, nowait);
    }
    weft__spin_unlock(&ch->lock);
    return 0;
}

/* With the lock held, and a value there to take (buffered, or held by a
 * waiting sender): take it, or return false. */
static bool take(weft_chan *ch, void **v)
{
    if (ch->len > 0) {
        *v = buf_pop(ch);
        struct weft__wait *s = weft__wq_wake_one(&ch->senders);
        if (s) { /* its value goes behind the buffered ones */
            buf_push(ch, s->value);
            s->data = DELIVERED;
        }
        return true;
    }
    struct weft__wait *s = weft__wq_wake_one(&ch->senders);
    if (!s)
        return false;
    *v = s->value;
    s->data = DELIVERED;
    return true;
}

static int recv(weft_chan *ch, void **v, uint64_t deadline, int nowait)
{
    if (!ch || !v)
        return -EINVAL;
    weft__spin_lock(&ch->lock);
    if (take(ch, v)) {
        weft__spin_unlock(&ch->lock);
        return 0;
    }
    if (ch->closed) {
        weft__spin_unlock(&ch->lock);
        return -EPIPE;
    }
    return wait_in(ch, &ch->receivers, v, deadline, nowait);
}

WEFT_EXPORT int weft_chan_create(weft_chan **out, size_t capacity)
{
    if (!out)
        return -EINVAL;
    if (capacity > (SIZE_MAX - sizeof(weft_chan)) / sizeof(void *))
        return -ENOMEM;
    weft_chan *ch = weft__malloc(sizeof *ch + capacity * sizeof(void *));
    if (!ch)
        return -ENOMEM;
    ch->lock = 0;
    ch->closed = false;
    ch->cap = capacity;
    ch->head = ch->len = 0;
    ch->waiting = 0;
    weft__wq_init(&ch->senders);
    weft__wq_init(&ch->receivers);
    *out = ch;
    return 0;
}

WEFT_EXPORT int weft_chan_send(weft_chan *ch, void *v)
{
    return send(ch, v, 0, 0);
}

WEFT_EXPORT int weft_chan_try_send(weft_chan *ch, void *v)
{
    return send(ch, v, 0, -EAGAIN);
}

WEFT_EXPORT int weft_chan_send_for(weft_chan *ch, void *v,
                                   uint64_t timeout_ns)
{
    return send(ch, v, weft__deadline_after(timeout_ns),
                timeout_ns ? 0 : -ETIMEDOUT);
}

WEFT_EXPORT int weft_chan_recv(weft_chan *ch, void **v)
{
    return recv(ch, v, 0, 0);
}

WEFT_EXPORT int weft_chan_try_recv(weft_chan *ch, void **v)
{
    return recv(ch, v, 0, -EAGAIN);
}

WEFT_EXPORT int weft_chan_recv_for(weft_chan *ch, void **v,
                                   uint64_t timeout_ns)
{
    return recv(ch, v, weft__deadline_after(timeout_ns),
                timeout_ns ? 0 : -ETIMEDOUT);
}

WEFT_EXPORT void weft_chan_close(weft_chan *ch)
{
    if (!ch)
        return;
    weft__spin_lock(&ch->lock);
    if (!ch->closed) {
        ch->closed = true;
        struct weft__wait *w;
        while ((w = weft__wq_wake_one(&ch->receivers)))
            w->data = CLOSED;
        while ((w = weft__wq_wake_one(&ch->senders)))
            w->data = CLOSED;
    }
    weft__spin_unlock(&ch->lock);
}

size_t weft__chan_waiting(weft_chan *ch)
{
    weft__spin_lock(&ch->lock);
    size_t n = ch->waiting;
    weft__spin_unlock(&ch->lock);
    return n;
}

WEFT_EXPORT int weft_chan_destroy(weft_chan *ch)
{
    if (!ch)
        return -EINVAL;
    weft__spin_lock(&ch->lock);
    bool busy = ch->waiting > 0;
    weft__spin_unlock(&ch->lock);
    if (busy)
        return -EBUSY;
    free(ch);
    return 0;
}
