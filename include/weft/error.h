/*
 * weft/error.h — error convention.
 *
 * Every weft function that can fail returns int: 0 on success or a negative
 * errno value (-EINVAL, -ENOMEM, -EPERM, -EBUSY, -ESRCH, -EDEADLK,
 * -ECANCELED, -ESHUTDOWN, -ETIMEDOUT, -EPIPE, -EAGAIN).  A call that returns
 * an error has no other effect.
 *
 * Callable from any context.
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
 * weft_strerror - name a weft error code.
 * Accepts the negative value a weft call returned (a positive errno works
 * too).  Returns a static string, never NULL; unknown codes give
 * "unknown error".
 */
WEFT_API const char *weft_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_ERROR_H */
