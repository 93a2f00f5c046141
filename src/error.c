/*
 * error.c — names for weft's error codes.
 */
#include <weft/error.h>

#include <errno.h>

WEFT_API const char *weft_strerror(int err)
{
    /* Widened first: -INT_MIN does not fit in an int. */
    long long code = err;
    switch (code < 0 ? -code : code) {
    case 0: return "success";
    case EINVAL: return "invalid argument";
    case ENOMEM: return "out of memory";
    case EPERM: return "not allowed from this context";
    case EBUSY: return "busy: running, or in use";
    case ESRCH: return "coroutine is dead";
    case EDEADLK: return "would deadlock";
    case ECANCELED: return "cancelled";
    case ESHUTDOWN: return "pool is shutting down";
    case ETIMEDOUT: return "timed out";
    case EPIPE: return "channel closed";
    case EAGAIN: return "would block";
    default: return "unknown error";
    }
}
