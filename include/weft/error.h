/*
 * weft/error.h — the error convention (weft/weft.h, "Errors") and names
 * for the codes.
 *
 * weft's calls return negative errno values.  The codes weft itself
 * decides on, across the API, each with one meaning: -EINVAL (a bad
 * argument), -ENOMEM (no memory, or no address space for a stack), -EPERM
 * (not allowed from this context), -EBUSY (running, or in use), -ESRCH
 * (no such thing to act on: a dead coroutine, a trace not being
 * recorded), -EDEADLK (would wait for itself), -ECANCELED (the task was
 * cancelled), -ESHUTDOWN (the pool is being destroyed), -ETIMEDOUT (the
 * timeout passed), -EPIPE (a closed channel), -EAGAIN (not now: a try
 * that would have had to wait, or a thread that could not be had, as
 * pthread_create says), -EEXIST (already so), -EMFILE/-ENFILE (no file
 * descriptors).  The I/O calls also pass on the system's own codes
 * (-ECONNRESET, -EBADF...), as their declarations say.
 */
#ifndef WEFT_ERROR_H
#define WEFT_ERROR_H

#include <errno.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with -fvisibility=hidden; only WEFT_API names are
 * exported. */
#define WEFT_API __attribute__((visibility("default")))

/*
 * weft_strerror - a short description of an error code: weft's own words
 * for the codes listed above, the C library's description for every other
 * errno value.  Takes the negative value a call returned (a positive errno
 * works too).  Returns a static string, never NULL: "success" for 0,
 * "unknown error" for a value that is no errno.  Any context; thread-safe.
 */
WEFT_API const char *weft_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_ERROR_H */
