/*
 * weft/chan.h — a bounded channel of void * for many senders and many
 * receivers, tasks and plain threads alike.
 *
 * A channel of capacity n buffers up to n values; a send waits while the
 * buffer is full, a receive while it is empty.  Capacity 0 is a rendezvous:
 * a send waits until a receiver has taken its value.  Values come out in
 * the order they went in, waiting senders and receivers are served first
 * come, first served, and a value a waiting sender holds goes straight to
 * the receiver that takes it.
 *
 * A task that has to wait is parked (its worker runs other tasks); a plain
 * thread (or a standalone coroutine) blocks.  Every wait can end by timeout
 * (the _for variants: -ETIMEDOUT) or, in a task, by weft_task_cancel
 * (-ECANCELED); cancellation is seen only by a call that would wait.  A
 * timed wait whose timer cannot be armed for lack of memory returns
 * -ENOMEM without waiting.  A call that fails has no other effect: a send
 * that fails did not deliver its value, a receive that fails took none.
 *
 * Close: after weft_chan_close every send returns -EPIPE (blocked ones
 * too: their values are not delivered), and every receive returns the
 * values still buffered, then -EPIPE.
 *
 * Ownership: the channel belongs to whoever created it, who destroys it
 * once no call on it is in progress.  The values are the user's: the
 * channel never dereferences or frees them (values left in the buffer at
 * destroy are dropped).  Any function may be called from any context.
 */
#ifndef WEFT_CHAN_H
#define WEFT_CHAN_H

#include <stddef.h>
#include <stdint.h>
#include <weft/error.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct weft_chan weft_chan;

/* weft_chan_create - a channel buffering up to capacity values (0: a
 * rendezvous).  Returns 0, -EINVAL (out NULL), -ENOMEM (no memory for the
 * buffer, or a capacity too large to allocate); *out is set only on 0. */
WEFT_API int weft_chan_create(weft_chan **out, size_t capacity);

/* weft_chan_send - send v, waiting while the channel is full (or, for a
 * rendezvous, until a receiver takes it).  Returns 0, -EINVAL (ch NULL),
 * -EPIPE (closed, before or while it waited), -ECANCELED. */
WEFT_API int weft_chan_send(weft_chan *ch, void *v);

/* weft_chan_recv - receive into *v, waiting while the channel is empty.
 * Returns 0, -EINVAL (ch or v NULL), -EPIPE (closed and drained),
 * -ECANCELED. */
WEFT_API int weft_chan_recv(weft_chan *ch, void **v);

/* weft_chan_try_send - send v only if that needs no wait.  Returns 0,
 * -EINVAL, -EPIPE, -EAGAIN (full, or a rendezvous nobody waits on). */
WEFT_API int weft_chan_try_send(weft_chan *ch, void *v);

/* weft_chan_try_recv - receive only if a value is there (buffered, or held
 * by a waiting sender).  Returns 0, -EINVAL, -EPIPE, -EAGAIN (empty). */
WEFT_API int weft_chan_try_recv(weft_chan *ch, void **v);

/* weft_chan_send_for - as weft_chan_send, waiting at most timeout_ns;
 * also -ETIMEDOUT, -ENOMEM. */
WEFT_API int weft_chan_send_for(weft_chan *ch, void *v, uint64_t timeout_ns);

/* weft_chan_recv_for - as weft_chan_recv, waiting at most timeout_ns; also
 * -ETIMEDOUT, -ENOMEM. */
WEFT_API int weft_chan_recv_for(weft_chan *ch, void **v, uint64_t timeout_ns);

/* weft_chan_close - close ch and wake every waiter (see above).  Closing
 * twice does nothing more; nothing for NULL. */
WEFT_API void weft_chan_close(weft_chan *ch);

/* weft_chan_destroy - free ch.  Returns 0, -EINVAL (NULL), -EBUSY (a send
 * or receive is waiting on it, or has been woken and not yet returned: ch
 * is left as it was). */
WEFT_API int weft_chan_destroy(weft_chan *ch);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_CHAN_H */
