/*
 * weft/io.h — socket (and pipe) I/O that parks the calling task, not its
 * worker.
 *
 * Each call first tries the system call.  When it would block, a task on a
 * pool parks until the pool's netpoller (epoll, polled by an idle worker)
 * reports the fd ready, then tries again.  A plain thread, a standalone
 * coroutine, and a task run by weft_sync_wait's thread without a pool
 * block their thread in poll(2) instead (timeouts are honoured; such a
 * task sees weft_task_cancel only when a call starts, and weft_close from
 * another thread does not wake it: shutdown(2) the socket for that).
 *
 * Timeouts: timeout_ns < 0 waits without limit; 0 tries once and returns
 * -ETIMEDOUT instead of waiting; otherwise the call gives up with
 * -ETIMEDOUT after timeout_ns (the whole call, however many waits).
 * Every wait in a task also ends with -ECANCELED if the task is cancelled
 * (weft_task_cancel); a call that can complete without waiting does so.
 *
 * The fd: weft_read, weft_write, weft_accept and weft_connect make it
 * non-blocking (O_NONBLOCK, fcntl) the first time weft sees it, and it
 * stays so; that flag belongs to the open file description, so it is also
 * seen through dup(2)s and by other processes sharing it (think twice
 * before passing 0, 1 or 2).  The first wait of a task on an fd registers
 * it (edge-triggered) with the netpoller of the task's pool.
 *
 * Close an fd that these calls have used with weft_close, not close(2):
 * weft remembers, per fd number, that the fd is non-blocking and
 * registered.  After a plain close(2), a new file that gets the same
 * number would be taken for both, until weft_accept returns that number
 * or weft_connect is called on it (both start the fd afresh): reads could
 * block the worker and waits would see no readiness.  weft_close also
 * wakes every task parked on the fd (their calls return -EBADF), which a
 * plain close(2) cannot do: epoll is not told about it.
 *
 * Who may call: any context.  The fd is owned by the caller; weft_accept's
 * result belongs to its caller.  Several tasks may wait on one fd at once
 * (a readiness change wakes them all, and each tries again).
 */
#ifndef WEFT_IO_H
#define WEFT_IO_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <weft/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Readiness bits (the values of POLLIN and POLLOUT). */
enum { WEFT_IN = 1, WEFT_OUT = 4 };

/*
 * weft_wait_fd - wait until fd is readable (WEFT_IN) and/or writable
 * (WEFT_OUT), as `events` asks.  Returns the ready subset of `events`
 * (never 0); an error or hang-up on the fd counts as both (the next read
 * or write reports it).  Returns -EINVAL (events 0 or with other bits),
 * -EBADF (fd not open, or closed by weft_close while waiting),
 * -ETIMEDOUT, -ECANCELED, -ENOMEM.
 */
WEFT_API int weft_wait_fd(int fd, unsigned events, int64_t timeout_ns);

/*
 * weft_read - read(2) up to len bytes, waiting until some are available.
 * Returns the count (0 at end of file), or -errno: read(2)'s errors (never
 * -EAGAIN), -ETIMEDOUT, -ECANCELED, -ENOMEM, -EBADF (also: closed by
 * weft_close while waiting).
 */
WEFT_API ssize_t weft_read(int fd, void *buf, size_t len, int64_t timeout_ns);

/*
 * weft_write - write all len bytes, waiting for room as needed.  Returns
 * len, or -errno: write(2)'s errors (-EPIPE: and SIGPIPE is raised as
 * write(2) does; servers usually ignore it), -ETIMEDOUT, -ECANCELED,
 * -ENOMEM, -EBADF.  On an error after part of buf went out, how much went
 * is not reported: the stream should be closed.
 */
WEFT_API ssize_t weft_write(int fd, const void *buf, size_t len,
                            int64_t timeout_ns);

/*
 * weft_accept - accept a connection on listening socket lfd, waiting for
 * one.  addr and len are as for accept(2) (both may be NULL).  Returns the
 * new connected fd, non-blocking and close-on-exec, or -errno: accept(2)'s
 * errors (aborted connections are skipped, not reported), -ETIMEDOUT,
 * -ECANCELED, -ENOMEM.
 */
WEFT_API int weft_accept(int lfd, struct sockaddr *addr, socklen_t *len,
                         int64_t timeout_ns);

/*
 * weft_connect - connect socket fd to addr, waiting for the handshake.
 * Returns 0, or -errno: connect(2)'s errors (-ECONNREFUSED...; the
 * asynchronous outcome is read from SO_ERROR), -ETIMEDOUT (the attempt may
 * still be in progress: close the socket), -ECANCELED, -ENOMEM.
 */
WEFT_API int weft_connect(int fd, const struct sockaddr *addr, socklen_t len,
                          int64_t timeout_ns);

/*
 * weft_close - wake every task parked on fd in these calls (they return
 * -EBADF), forget what weft knows about fd, and close(2) it.  Returns 0 or
 * close(2)'s error (-EBADF, -EIO...).  A call that starts on fd after
 * weft_close began is a use after close, as with close(2).
 */
WEFT_API int weft_close(int fd);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_IO_H */
