/*
 * base/error.c — naming error codes (weft/error.h), and the version.
 */
#include <weft/error.h>
#include <weft/version.h>

#include <errno.h>
#include <string.h>

WEFT_API const char *weft_strerror(int err)
{
    /* Widened first: -INT_MIN does not fit in an int. */
    long long code = err;
    if (code < 0)
        code = -code;
    switch (code) {
    case 0: return "success";
    /* weft's own words for the codes it decides on (weft/error.h) */
    case EINVAL: return "invalid argument";
    case ENOMEM: return "out of memory";
    case EPERM: return "not allowed from this context";
    case EBUSY: return "busy: running, or in use";
    case ESRCH: return "no such thing: dead coroutine, or no trace";
    case EDEADLK: return "would deadlock";
    case ECANCELED: return "cancelled";
    case ESHUTDOWN: return "pool is shutting down";
    case ETIMEDOUT: return "timed out";
    case EPIPE: return "closed (channel or pipe)";
    case EAGAIN: return "not now: would wait, or no thread to be had";
    case EEXIST: return "already exists";
    case EMFILE: return "too many open files in the process";
    case ENFILE: return "too many open files in the system";
    default:
        break;
    }
    /* Every other errno: the C library's description.  strerrordesc_np
     * (glibc 2.32) returns a static string and NULL for an unknown code,
     * unlike strerror, which may format "Unknown error N" into a buffer
     * that the next call reuses. */
    const char *s = code <= 4095 ? strerrordesc_np((int)code) : NULL;
    return s ? s : "unknown error";
}

WEFT_API unsigned weft_version(void)
{
    return WEFT_VERSION;
}

WEFT_API const char *weft_version_string(void)
{
    return WEFT_VERSION_STRING;
}
