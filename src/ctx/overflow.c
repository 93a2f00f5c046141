/*
 * overflow.c — the stack overflow handler and the alternate signal stacks
 * it runs on.  See overflow.h for what it does and how to turn it off.
 *
 * Everything the handler touches is async-signal-safe: thread-local and
 * static data, sigaction, pthread_sigmask, raise, write and abort.
 */
#include "ctx/overflow.h"

#include "base/direct.h"
#include "ctx/coro.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

enum { UNDECIDED, ON, OFF };

/* Installation and removal are rare (once per thread at most): a mutex. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int state = UNDECIDED;
static pthread_key_t altstack_key;
static size_t altstack_bytes;

/* The dispositions ours replaced: [0] SIGSEGV, [1] SIGBUS.  Written before
 * ours is in place, only read afterwards. */
static struct sigaction previous[2];

/* How close to the guard a signal's frame may fail to fit (set at
 * install: frame_did_not_fit). */
static uintptr_t sigframe_bytes;

static const int signals[2] = {SIGSEGV, SIGBUS};

static const struct sigaction *previous_of(int sig)
{
    return &previous[sig == SIGBUS];
}

/*
 * A fault in the guard below the stack of the coroutine running on this
 * thread.  Not recognised: a fault during the few pushes of a context
 * switch made after `current` already names the destination; that one
 * goes down the chain (by default, the process dies of SIGSEGV).
 */
static bool in_guard(const struct weft_coro *co, const siginfo_t *si)
{
    /* si_code <= 0: sent by kill() or raise(), si_addr means nothing. */
    if (si->si_code <= 0 || (co->flags & WEFT__CORO_ROOT) || co->stack.canary)
        return false;
    uintptr_t low = (uintptr_t)co->stack.map;
    return (uintptr_t)si->si_addr - low < weft__stack_guard();
}

/* The stack pointer of the code the signal interrupted. */
static uintptr_t interrupted_sp(const void *uc)
{
    const mcontext_t *m = &((const ucontext_t *)uc)->uc_mcontext;
#if defined(__x86_64__)
    return (uintptr_t)m->gregs[REG_RSP];
#elif defined(__aarch64__)
    return (uintptr_t)m->sp;
#else
#error "overflow.c: no stack pointer in this architecture's ucontext"
#endif
}

/*
 * A signal whose handler has no alternate stack arrived while the
 * coroutine running here had too little stack left for the signal's
 * frame: the kernel could not write the frame, dropped that signal and
 * sent SIGSEGV with SI_KERNEL and no address instead (the same code as a
 * general protection fault, which is why the interrupted sp must be near
 * the guard too).  "Near": within the largest frame the kernel writes
 * (AT_MINSIGSTKSZ, which counts the CPU's whole register state: 3 KiB with
 * AVX-512, 11 KiB with AMX's tiles), plus the red zone.
 */
static bool frame_did_not_fit(const struct weft_coro *co, const siginfo_t *si,
                              const void *uc)
{
    if (si->si_code != SI_KERNEL || (co->flags & WEFT__CORO_ROOT) ||
        co->stack.canary)
        return false;
    uintptr_t map = (uintptr_t)co->stack.map;
    uintptr_t low = map + weft__stack_guard();
    uintptr_t sp = interrupted_sp(uc);
    return sp >= map && sp < low + sigframe_bytes &&
           sp <= map + co->stack.size;
}

static void set_default(int sig)
{
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
}

/* Do what the kernel would have done without us. */
static void chain(int sig, siginfo_t *si, void *uc)
{
    const struct sigaction *prev = previous_of(sig);
    bool sent = si->si_code <= 0;
    /* SI_KERNEL: maybe a fault the instruction repeats, maybe the kernel's
     * own SIGSEGV for a signal frame it could not write, which nothing
     * repeats; raise it either way (a repeat then finds it pending). */
    bool raised = sent || si->si_code == SI_KERNEL;

    if (!(prev->sa_flags & SA_SIGINFO) &&
        (prev->sa_handler == SIG_DFL || prev->sa_handler == SIG_IGN)) {
        /* An ignored signal that was sent is dropped; an ignored fault
         * kills like an unhandled one.  To die of the signal itself (core
         * dump, exit status), go back to the default action: on return the
         * faulting instruction faults again, or the raised signal, pending
         * while this handler blocks it, is delivered. */
        if (prev->sa_handler == SIG_IGN && sent)
            return;
        set_default(sig);
        if (raised)
            raise(sig);
        return;
    }

    /* The kernel would have run it with the interrupted mask plus its
     * sa_mask, plus sig unless SA_NODEFER, and reset it first if
     * SA_RESETHAND.  We run on our alternate stack whatever its
     * SA_ONSTACK says. */
    sigset_t mask = ((const ucontext_t *)uc)->uc_sigmask, old;
    sigorset(&mask, &mask, &prev->sa_mask);
    if (prev->sa_flags & SA_NODEFER)
        sigdelset(&mask, sig);
    else
        sigaddset(&mask, sig);
    if (prev->sa_flags & SA_RESETHAND)
        set_default(sig);
    pthread_sigmask(SIG_SETMASK, &mask, &old);
    if (prev->sa_flags & SA_SIGINFO)
        prev->sa_sigaction(sig, si, uc);
    else
        prev->sa_handler(sig);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    int saved_errno = errno;
    const struct weft_coro *co = weft__tls.current;
    if (in_guard(co, si))
        weft__coro_overflow(co, NULL);
    if (frame_did_not_fit(co, si, uc))
        weft__coro_overflow(co, "no room for a signal's frame");
    chain(sig, si, uc);
    errno = saved_errno;
}

static bool is_ours(const struct sigaction *sa)
{
    return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == on_fault;
}

/* Thread exit: drop this thread's alternate stack, if it is still ours
 * and not in use (else leak it rather than pull it from under a handler). */
static void altstack_release(void *map)
{
    stack_t cur;
    if (sigaltstack(NULL, &cur) != 0)
        return;
    if (cur.ss_sp == map) {
        if (cur.ss_flags & SS_ONSTACK)
            return;
        stack_t off = {.ss_flags = SS_DISABLE};
        if (sigaltstack(&off, NULL) != 0)
            return;
    }
    munmap(map, altstack_bytes);
}

/* Under lock, once: the environment's word, then the handler. */
static bool install(void)
{
    const char *env = getenv("WEFT_OVERFLOW_HANDLER");
    if (env && strcmp(env, "0") == 0)
        return false;
    if (pthread_key_create(&altstack_key, altstack_release) != 0)
        return false;

    /* The handler needs little, but a handler we chain to may need more;
     * SIGSTKSZ is a run-time value on recent glibc. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t bytes = (size_t)SIGSTKSZ;
    if (bytes < 64 * 1024)
        bytes = 64 * 1024;
    altstack_bytes = (bytes + page - 1) & ~(page - 1);

    /* Twice the kernel's largest signal frame, and at least 16 KiB: a
     * margin for the red zone, alignment and a frame the handler of an
     * earlier signal had already pushed. */
    sigframe_bytes = 2 * (uintptr_t)getauxval(AT_MINSIGSTKSZ);
    if (sigframe_bytes < 16 * 1024)
        sigframe_bytes = 16 * 1024;

    struct sigaction sa = {.sa_sigaction = on_fault,
                           .sa_flags = SA_SIGINFO | SA_ONSTACK};
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 2; i++) {
        if (sigaction(signals[i], &sa, &previous[i]) != 0) {
            if (i == 1)
                sigaction(signals[0], &previous[0], NULL);
            return false;
        }
    }
    return true;
}

/* An alternate stack for this thread, unless it has one (the
 * application's, which we keep). */
static void give_altstack(void)
{
    stack_t cur;
    if (sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE))
        return;
    void *map = mmap(NULL, altstack_bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (map == MAP_FAILED)
        return;
    stack_t ss = {.ss_sp = map, .ss_size = altstack_bytes};
    if (sigaltstack(&ss, NULL) != 0) {
        munmap(map, altstack_bytes);
        return;
    }
    if (pthread_setspecific(altstack_key, map) != 0)
        altstack_release(map);
}

void weft__overflow_thread_init(void)
{
    weft__lock(&lock);
    if (state == UNDECIDED)
        state = install() ? ON : OFF;
    bool on = state == ON;
    pthread_mutex_unlock(&lock);
    if (on)
        give_altstack();
}

void weft__overflow_disable(void)
{
    weft__lock(&lock);
    if (state == ON) {
        /* Put the previous disposition back only where ours is still in
         * place: the application may have installed its own since. */
        for (int i = 0; i < 2; i++) {
            struct sigaction cur;
            if (sigaction(signals[i], NULL, &cur) == 0 && is_ours(&cur))
                sigaction(signals[i], &previous[i], NULL);
        }
    }
    state = OFF;
    pthread_mutex_unlock(&lock);
}
