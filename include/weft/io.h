/*
 * weft/io.h — socket (and pipe) I/O that parks the calling task, not its
 * worker.
 *
 * Each call first tries the system call without blocking.  When it would
 * block, a task on a pool parks until the pool's netpoller (epoll, polled
 * by an idle worker) reports the fd ready, then tries again.  A plain
 * thread, a standalone coroutine, and a task run by weft_sync_wait's thread
 * without a pool block their thread in poll(2) instead (timeouts are
 * honoured; such a task sees weft_task_cancel only when a call starts, and
 * weft_close from another thread does not wake it: shutdown(2) the socket
 * for that).  Timeouts and cancellation: weft/weft.h.
 *
 * Two kinds of fd.
 *
 * Owned fds are those weft made (weft_socket, weft_accept) or that the
 * program handed over (weft_fd_adopt).  weft sets O_NONBLOCK on them,
 * registers each with a netpoller once, edge-triggered, the first time a
 * task waits on it, and remembers what it learnt of it (that it is a
 * stream socket, that its receive queue is empty).  This is the fast path:
 * a wait costs no system call beyond the one that would block.  The
 * program closes an owned fd with weft_close, which also wakes the tasks
 * that wait on it (-EBADF).  Closing one with close(2), dup2(2) over it
 * or fclose(3) of a FILE on it is a bug in the program: weft would take a
 * new file that gets the same number for the old one.  weft notices it
 * where that costs nothing and prints one line to stderr ("weft: fd N ...
 * was closed without weft_close"): when the kernel answers -EBADF or
 * -ENOTSOCK for it, when the number comes back from weft_accept or
 * weft_socket, and in a check that the netpoller makes every ten seconds
 * or so of every owned fd with parked waits (its registration must still
 * be there); that check also wakes the waits with -EBADF, so none stays
 * parked on a file that is gone.
 *
 * Borrowed fds are all others: a socket some library made and will close
 * itself with close(2) (a database client, an HTTP client, a resolver), a
 * pipe, a terminal.  weft never changes their flags and keeps nothing it
 * would have to trust later: each wait registers the fd for one report
 * (EPOLLONESHOT, level-triggered: readiness already there is reported at
 * once), re-arming it for the next wait, and a registration left over from
 * a file that was closed meanwhile is replaced, not trusted.  Sockets are
 * read and written with MSG_DONTWAIT, so a blocking socket stays blocking
 * for its library and still never blocks a worker.  Other borrowed fds
 * (pipes, ttys...) are read and written only if they are non-blocking
 * (O_NONBLOCK): on a blocking one weft_read and weft_write say -EINVAL
 * (they could only block the worker); waiting on one with weft_wait_fd is
 * fine.  Likewise weft_connect needs a non-blocking borrowed socket, and
 * weft_accept a non-blocking borrowed listening socket.  Cost: one
 * epoll_ctl per wait that parks, and, while a wait stays parked, one in
 * the netpoller's check about once a second (the environment variable
 * WEFT_FD_CHECK_MS sets the period, read once).  The check is also what
 * ends, with -EBADF, a wait whose fd is closed with close(2) or dup2(2)'d
 * over by someone else: never a hang, but up to a period late.
 *
 * Who may call: any context.  Several tasks may wait on one fd at once (a
 * readiness change wakes them all, and each tries again).
 *
 * Libraries with per-thread state.  A task that waits may resume on
 * another worker, so what a library keeps per thread is not the task's
 * across a wait: errno, and OpenSSL's error queue, which SSL_get_error and
 * ERR_get_error read.  After a non-blocking TLS call fails, read
 * SSL_get_error (and ERR_get_error, errno) at once, then wait with
 * weft_wait_fd for what SSL_ERROR_WANT_READ or SSL_ERROR_WANT_WRITE asks,
 * then repeat the call: never read them after the wait
 * (examples/tls_echo.c).
 *
 * Codes every call that takes an fd may return (each declaration names
 * them as "the fd codes"): -EBADF (fd negative or not open), -EINVAL (fd
 * at or above 4,194,304, beyond weft's table of fds), -ENOMEM (no memory
 * for weft's record of fd).  A call that waits may also return, in a task
 * on a pool ("the wait codes"): -ECANCELED; -EMFILE or -ENFILE (the pool's
 * first wait on an fd makes its netpoller, an epoll instance and an
 * eventfd, and the process or the system had no fd left for them);
 * -ENOSPC (the system's bound on fds watched by epoll,
 * fs.epoll.max_user_watches, is reached); -ENOMEM (no memory for the
 * netpoller, or in the kernel).  Its _for form also -ETIMEDOUT, and
 * -ENOMEM when its timer cannot be armed.
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

/* ------------------------------------------------------- owned fds */

/*
 * weft_socket - socket(2) for weft: the new socket is owned (see the top),
 * non-blocking and close-on-exec.  Returns the fd, or -errno: socket(2)'s
 * errors (-EAFNOSUPPORT, -EMFILE...), -ENOMEM (no memory for weft's
 * record of it: the socket is closed again), -EINVAL (its number is beyond
 * weft's table: it is closed again).
 */
WEFT_API int weft_socket(int domain, int type, int protocol);

/*
 * weft_fd_adopt - hand fd over to weft: it becomes owned (see the top) and
 * non-blocking (O_NONBLOCK is set on its open file description, which
 * every dup(2) of it and every process sharing it sees).  A task waiting
 * on fd meanwhile goes on waiting, now on an owned fd.  Returns 0, or
 * the fd codes (-EBADF: not open; -EINVAL: beyond the table; -ENOMEM),
 * -EEXIST (weft owns it already; if the program closed it with close(2)
 * since, that was the bug: weft_close it).
 */
WEFT_API int weft_fd_adopt(int fd);

/*
 * weft_close - close fd, owned or borrowed: wake every task waiting on fd
 * in these calls (they return -EBADF), forget what weft knows about fd,
 * and close(2) it (an fd beyond weft's table too).  Returns 0, -EBADF (fd
 * not open: nothing done), or another of close(2)'s errors (a file whose
 * last write-back failed); after one of those the number is released all
 * the same, as close(2) releases it on Linux.  A call that starts on fd
 * after weft_close began is a use after close, as with close(2).
 */
WEFT_API int weft_close(int fd);

/* ------------------------------------------------------- any fd */

/*
 * weft_wait_fd - wait until fd is readable (WEFT_IN) and/or writable
 * (WEFT_OUT), as `events` asks.  Returns the ready subset of `events`
 * (never 0); an error or hang-up on the fd counts as both (the next read
 * or write reports it).  Returns -EINVAL (events 0 or with other bits),
 * the fd codes (-EBADF also: closed while waiting) and the wait codes
 * (see the top): -EBADF, -EINVAL, -ENOMEM, -ECANCELED, -EMFILE, -ENFILE,
 * -ENOSPC.
 */
WEFT_API int weft_wait_fd(int fd, unsigned events);

/* weft_wait_fd_for - as weft_wait_fd, waiting at most timeout_ns; also
 * -ETIMEDOUT. */
WEFT_API int weft_wait_fd_for(int fd, unsigned events, uint64_t timeout_ns);

/*
 * weft_read - read up to len bytes, waiting until some are available.
 * Returns the count (0 at end of file), or -errno: read(2)'s errors
 * (-ECONNRESET...; a read that would block waits instead), -EINVAL (also:
 * a blocking borrowed fd that is not a socket), the fd codes (-EBADF
 * also: closed while waiting) and the wait codes (see the top): -EBADF,
 * -ENOMEM, -ECANCELED, -EMFILE, -ENFILE, -ENOSPC.  A failed read took
 * nothing.
 */
WEFT_API ssize_t weft_read(int fd, void *buf, size_t len);

/* weft_read_for - as weft_read, waiting at most timeout_ns; also
 * -ETIMEDOUT. */
WEFT_API ssize_t weft_read_for(int fd, void *buf, size_t len,
                               uint64_t timeout_ns);

/*
 * weft_write - write all len bytes, waiting for room as needed.  Returns
 * len, or -errno: write(2)'s errors (-EPIPE, and SIGPIPE is raised as
 * write(2) does: servers usually ignore it; -ECONNRESET...), -EINVAL (len
 * over SSIZE_MAX, or a blocking borrowed fd that is not a socket), the fd
 * codes (-EBADF also: closed while waiting) and the wait codes (see the
 * top): -EBADF, -ENOMEM, -ECANCELED, -EMFILE, -ENFILE, -ENOSPC.  An error
 * may come after part of buf went out, and how much went is not reported
 * (weft/weft.h, "Errors"): the stream should be closed then, or written
 * with weft_write_some, which says.
 */
WEFT_API ssize_t weft_write(int fd, const void *buf, size_t len);

/* weft_write_for - as weft_write, waiting at most timeout_ns for the whole
 * of it; also -ETIMEDOUT (how much went is not reported). */
WEFT_API ssize_t weft_write_for(int fd, const void *buf, size_t len,
                                uint64_t timeout_ns);

/*
 * weft_write_some - as weft_write, but it writes what fd takes of buf:
 * it waits for room for at least one byte (as write(2) does on a blocking
 * socket; Boost.Asio's write_some) and gives the number of bytes that
 * went, 1 to len (0 for len 0).  It fails, with weft_write's codes, only
 * with nothing written, so a loop of it writes a stream and always knows
 * how much went.
 */
WEFT_API ssize_t weft_write_some(int fd, const void *buf, size_t len);

/* weft_write_some_for - as weft_write_some, waiting at most timeout_ns;
 * also -ETIMEDOUT (nothing written). */
WEFT_API ssize_t weft_write_some_for(int fd, const void *buf, size_t len,
                                     uint64_t timeout_ns);

/*
 * weft_accept - accept a connection on listening socket lfd, waiting for
 * one.  addr and len are as for accept(2) (both may be NULL).  Returns the
 * new connected fd, owned by weft (see the top), non-blocking and
 * close-on-exec, or -errno: accept(2)'s errors (aborted connections are
 * skipped, not reported; -EMFILE when the process is out of fds, -ENFILE
 * when the system is), -EINVAL (lfd is borrowed and blocking, or not a
 * listening socket), the fd codes (-EBADF: lfd not open) and the wait
 * codes (see the top): -EBADF, -ENOMEM, -ECANCELED, -ENOSPC.  -ENOMEM and
 * -EINVAL may also say that the accepted connection could get no record
 * in weft's table of fds: it was accepted and is closed again (its peer
 * sees it end), the one case where a failed accept took a connection.
 */
WEFT_API int weft_accept(int lfd, struct sockaddr *addr, socklen_t *len);

/* weft_accept_for - as weft_accept, waiting at most timeout_ns; also
 * -ETIMEDOUT. */
WEFT_API int weft_accept_for(int lfd, struct sockaddr *addr, socklen_t *len,
                             uint64_t timeout_ns);

/*
 * weft_connect - connect socket fd to addr, waiting for the handshake.
 * Returns 0 (also for a socket connected already, by a handshake an
 * earlier call left going on, as Go's connect does), or -errno:
 * connect(2)'s errors (-ECONNREFUSED...; the asynchronous outcome is read
 * from SO_ERROR), -EINVAL (fd is borrowed and blocking: make it with
 * weft_socket, adopt it, or set O_NONBLOCK), the fd codes (-EBADF: fd not
 * open) and the wait codes (see the top): -EBADF, -ENOMEM, -ECANCELED,
 * -EMFILE, -ENFILE, -ENOSPC.  After -ECANCELED (and weft_connect_for's
 * timeout) the handshake, once begun, goes on in the kernel: call
 * weft_connect again with the same address to wait for its outcome (0
 * once connected), or close the socket to give it up.
 */
WEFT_API int weft_connect(int fd, const struct sockaddr *addr, socklen_t len);

/* weft_connect_for - as weft_connect, waiting at most timeout_ns; also
 * -ETIMEDOUT (the handshake goes on: see weft_connect). */
WEFT_API int weft_connect_for(int fd, const struct sockaddr *addr,
                              socklen_t len, uint64_t timeout_ns);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_IO_H */
