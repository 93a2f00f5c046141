/*
 * weft/coro.h — standalone stackful coroutines (no pool needed).
 *
 * Semantics are Lua's, with C error codes:
 *
 *   - weft_coro_create() makes a SUSPENDED, never-started coroutine.
 *   - The first weft_coro_resume(co, in, &out) calls fn(in) on co's stack.
 *     Later resumes make co's pending weft_coro_yield()/weft_coro_transfer()
 *     return 0 with *in set.  resume returns 0 when co yields (*out = the
 *     yielded value) or returns (*out = fn's return value, co is now DEAD).
 *   - The coroutine that called resume is NORMAL until control comes back.
 *   - weft_coro_transfer(to, in, &out) is a symmetric switch: the caller
 *     becomes SUSPENDED, `to` runs in its place and inherits its resumer.
 *     Whenever a coroutine yields or returns, control goes to its resumer.
 *   - weft_coro_destroy() of a started, SUSPENDED coroutine resumes it with
 *     cancellation: its pending yield/transfer returns -ECANCELED, every
 *     later yield/transfer returns -ECANCELED at once, and destroy returns
 *     once the body has returned.
 *
 * Threads: a coroutine is bound to no thread.  It may be resumed on any
 * thread, one resumer at a time: the state word is claimed by an atomic
 * compare-exchange, so a second concurrent resumer gets -EBUSY and a
 * coroutine never runs twice at once.  A coroutine and every coroutine it
 * resumes or transfers to run on the thread that resumed it, until control
 * comes back to that resume.
 *
 * Thread-local storage: after any call that may switch (resume, yield,
 * transfer), a coroutine may be running on another thread.  Do not keep the
 * address of a thread_local (or errno) across such a call; weft's own
 * accessors (weft_coro_current) read their thread-local state afresh on
 * every call.  Nor a thread's identity: glibc declares pthread_self()
 * const, so the compiler may reuse a value it read before the switch
 * (call it through a volatile function pointer where it matters).
 *
 * Floating point: the control state (x86_64: MXCSR's rounding, flush and
 * exception-mask bits and the x87 control word; AArch64: FPCR) is each
 * coroutine's own, saved and restored by every switch, as the ABI keeps it
 * across a call; a new coroutine starts with its creator's, as at
 * weft_coro_create.  The exception flags are not kept (the ABI does not
 * keep them across a call either): test them before a switch.
 *
 * Stacks: stack_size is rounded up to whole pages; the coroutine's own
 * record and name and a stagger of up to 448 bytes (so that stacks do not
 * all start at the same cache-set offset) take about 1 KiB of its top.
 * Below the stack is one guard page: a single frame larger than a page
 * can step over it, unless the code is built with
 * -fstack-clash-protection (Debian's gcc 12 does not enable it by
 * default), which touches each page of a large frame in turn.
 *
 * Ownership: the caller owns the weft_coro made by create until it passes it
 * to weft_coro_destroy.  `name` is copied.
 */
#ifndef WEFT_CORO_H
#define WEFT_CORO_H

#include <stddef.h>
#include <stdint.h>
#include <weft/error.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct weft_coro weft_coro;

/* A coroutine or task body. */
typedef void *(*weft_fn)(void *arg);

typedef enum {
    WEFT_CORO_SUSPENDED, /* created or yielded: may be resumed            */
    WEFT_CORO_RUNNING,   /* running now (on some thread)                  */
    WEFT_CORO_NORMAL,    /* resumed another coroutine and waits for it    */
    WEFT_CORO_DEAD       /* its body returned                             */
} weft_coro_state;

/* Options; NULL or zero fields mean defaults (weft/weft.h, "Options"). */
typedef struct weft_coro_opts {
    size_t stack_size;  /* bytes, rounded up to whole pages; 0 = default   */
    const char *name;   /* copied (first 31 bytes); NULL = "coro"          */
    void *reserved_[4]; /* must be zero                                     */
} weft_coro_opts;

#define WEFT_STACK_DEFAULT (256u * 1024u)
/* The largest stack a coroutine or task may ask for. */
#define WEFT_STACK_MAX ((size_t)1 << 30)

/*
 * weft_coro_create - make a coroutine that will run fn.
 * The stack is reserved, not committed (pages commit on first touch), and
 * sits above a guard region.  Any context.
 * Returns 0 and sets *out, -EINVAL (out or fn NULL, stack size over
 * WEFT_STACK_MAX, a reserved option set), -ENOMEM (no memory, or no address
 * space left for the stack).
 */
WEFT_API int weft_coro_create(weft_coro **out, weft_fn fn,
                              const weft_coro_opts *opts);

/*
 * weft_coro_resume - run co until it yields or returns.
 * `in` is fn's argument on the first resume, else the value its pending
 * yield/transfer receives.  out may be NULL.  Any context.
 * Returns 0, -EINVAL (co NULL), -ESRCH (co is DEAD), -EBUSY (co is RUNNING
 * or NORMAL: on the current chain, or running on another thread).
 */
WEFT_API int weft_coro_resume(weft_coro *co, void *in, void **out);

/*
 * weft_coro_yield - suspend the running coroutine; control goes back to
 * its resumer, whose resume returns 0 with *out = `out`.
 * When resumed again, returns 0 and sets *in (in may be NULL).
 * Returns -EPERM (on a plain thread, or in a task's own body: a task
 * suspends through weft_yield and the other waits), -ECANCELED (the
 * coroutine is being destroyed; it does not suspend).
 */
WEFT_API int weft_coro_yield(void *out, void **in);

/*
 * weft_coro_transfer - symmetric switch from the running coroutine to `to`.
 * The caller becomes SUSPENDED; `to` runs with the caller's resumer as its
 * own, receiving `in` (fn's argument if `to` never ran).  Returns 0 when the
 * caller is resumed or transferred to again, with *out set.
 * Returns -EINVAL (to NULL), -EPERM (a plain thread, or a task's own body),
 * -ESRCH (to DEAD), -EBUSY (to is RUNNING or NORMAL, which includes
 * to == the caller), -ECANCELED (the caller is being destroyed).
 */
WEFT_API int weft_coro_transfer(weft_coro *to, void *in, void **out);

/*
 * weft_coro_destroy - free co.  A never-started or DEAD coroutine is freed
 * at once.  A started SUSPENDED one is first resumed with cancellation (see
 * the top of this file); destroy returns when its body has returned.
 * Returns 0, -EINVAL (co NULL), -EBUSY (co is RUNNING or NORMAL; nothing is
 * freed).
 */
WEFT_API int weft_coro_destroy(weft_coro *co);

/* weft_coro_status - co's state now; WEFT_CORO_DEAD for NULL. */
WEFT_API weft_coro_state weft_coro_status(const weft_coro *co);

/*
 * weft_coro_current - the standalone coroutine running on the calling
 * thread; NULL on a plain thread and in a task's own body (a task is not a
 * weft_coro: weft_task_current names it).  A coroutine that a task resumes
 * is current while it runs.  Reads thread-local state afresh on every call
 * (never cached across a switch).
 */
WEFT_API weft_coro *weft_coro_current(void);

/* weft_coro_name - co's name ("coro" by default); "" for NULL. */
WEFT_API const char *weft_coro_name(const weft_coro *co);

/* weft_coro_id - co's id: a number no other coroutine or task of this
 * process has had, fixed for co's life (never 0); 0 for NULL.  Tasks and
 * coroutines draw from one sequence (weft_task_id). */
WEFT_API uint64_t weft_coro_id(const weft_coro *co);

/*
 * Stack overflow diagnostics.  By default a coroutine or task that runs
 * into the guard page below its stack makes the process print
 *     weft: stack overflow in coroutine 'NAME' (stack N KiB)
 * (N: the size reserved, which for a task is twice its declared size,
 * docs/design.md, "Lazy stacks and inline awaits"; the line ends
 * ", no room for a signal's frame)" when a signal whose handler has no
 * alternate stack arrived with too little of the stack left for its
 * frame, which the kernel reports as a SIGSEGV of its own)
 * to stderr and abort.  For that weft installs a SIGSEGV and SIGBUS handler
 * (once per process, when a thread first runs a coroutine; it passes every
 * other fault on to the handler installed before it) and gives each thread
 * that runs coroutines an alternate signal stack (unless it has one).
 * Signal dispositions belong to the whole process, so this setting does
 * too: a program that owns those signals turns it off with
 * weft_overflow_handler_disable or by setting the environment variable
 * WEFT_OVERFLOW_HANDLER=0.  Without the handler an overflow simply kills
 * the process with SIGSEGV.
 */

/* weft_overflow_handler_disable - no stack overflow handler in this process
 * from now on: it is removed if it is installed and still the one in place
 * (another handler installed since is left alone), and never installed
 * later.  Alternate signal stacks already given stay.  Any context;
 * cannot be undone. */
WEFT_API void weft_overflow_handler_disable(void);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_CORO_H */
