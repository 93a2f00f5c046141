/*
 * sched/probe.c — what a worker's thread does now (sched/probe.h has the
 * two methods and why each).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sched/probe.h"

#include "base/backoff.h"
#include "base/clock.h"
#include "base/compiler.h"
#include "base/direct.h"
#include "ctx/coro.h"
#include "ctx/ctx.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* ------------------------------------------------------ system calls */

static const struct {
    long nr;
    const char *name;
} syscalls[] = {
#define S(n) {SYS_##n, #n}
    S(read), S(write), S(readv), S(writev), S(pread64), S(pwrite64),
    S(openat), S(close), S(fsync), S(fdatasync), S(ioctl), S(fcntl),
    S(ppoll), S(pselect6), S(epoll_pwait), S(futex), S(nanosleep),
    S(clock_nanosleep), S(connect), S(accept4), S(recvfrom), S(sendto),
    S(recvmsg), S(sendmsg), S(wait4), S(waitid), S(sched_yield), S(flock),
    S(getrandom), S(mmap), S(munmap), S(madvise), S(rt_sigtimedwait),
    S(io_getevents), S(splice), S(sendfile), S(copy_file_range),
    S(epoll_ctl), S(semtimedop), S(msgrcv), S(msgsnd), S(msync),
#ifdef SYS_poll
    S(poll),
#endif
#ifdef SYS_select
    S(select),
#endif
#ifdef SYS_epoll_wait
    S(epoll_wait),
#endif
#ifdef SYS_accept
    S(accept),
#endif
#ifdef SYS_open
    S(open),
#endif
#ifdef SYS_pause
    S(pause),
#endif
#ifdef SYS_epoll_pwait2
    S(epoll_pwait2),
#endif
#undef S
};

const char *weft__syscall_name(long nr)
{
    for (size_t i = 0; i < sizeof syscalls / sizeof syscalls[0]; i++)
        if (syscalls[i].nr == nr)
            return syscalls[i].name;
    return NULL;
}

/* /proc/self/task/TID/syscall: "running", or "NR ARG1..ARG6 SP PC" in a
 * call, or "-1 SP PC" blocked outside one.  Fills out's state, nr and
 * arg0, and *sp, *pc (0 if not given). */
static void read_syscall(pid_t tid, struct weft__probe *out, uintptr_t *sp,
                         uintptr_t *pc)
{
    char path[64], buf[256];
    *sp = *pc = 0;
    out->state = WEFT__PROBE_UNKNOWN;
    snprintf(path, sizeof path, "/proc/self/task/%ld/syscall", (long)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    if (strncmp(buf, "running", 7) == 0) {
        out->state = WEFT__PROBE_COMPUTING;
        return;
    }
    unsigned long long v[9];
    char *p = buf, *end;
    long nr = strtol(p, &end, 10);
    if (end == p)
        return;
    p = end;
    int k = 0;
    while (k < 9) {
        v[k] = strtoull(p, &end, 16);
        if (end == p)
            break;
        p = end;
        k++;
    }
    if (nr < 0) {
        /* Blocked, not in a call (a page fault, say): the CPU's. */
        out->state = WEFT__PROBE_COMPUTING;
        if (k >= 2) {
            *sp = (uintptr_t)v[0];
            *pc = (uintptr_t)v[1];
        }
        return;
    }
    out->state = WEFT__PROBE_SYSCALL;
    out->nr = nr;
    out->arg0 = k >= 1 ? v[0] : 0;
    if (k >= 8) {
        *sp = (uintptr_t)v[6];
        *pc = (uintptr_t)v[7];
    }
}

/* ------------------------------------------------- the stack scan */

/* The executable segments of the loaded modules, to tell a return address
 * from other words on a stack. */
struct text_ranges {
    unsigned n;
    uintptr_t lo[64], hi[64];
};

static int add_text(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct text_ranges *r = arg;
    for (int i = 0; i < info->dlpi_phnum && r->n < 64; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            r->lo[r->n] = info->dlpi_addr + ph->p_vaddr;
            r->hi[r->n] = r->lo[r->n] + ph->p_memsz;
            r->n++;
        }
    }
    return 0;
}

static bool is_code(const struct text_ranges *r, uintptr_t a)
{
    for (unsigned i = 0; i < r->n; i++)
        if (a >= r->lo[i] && a < r->hi[i])
            return true;
    return false;
}

#define SCAN_BYTES ((size_t)64 << 10)

/*
 * From a copy of the stack at [sp, sp + len): the first frame record, a
 * word pair (fp, ret) at some address a with a < fp inside the copy and
 * ret a code address, whose own next record checks out the same way (two
 * links, so that a stray pair of words is not taken for one), and the
 * chain from there.  Before it, the first code address above sp: the
 * return address of the function that made the call, when it keeps no
 * frame record (a small function that calls read(2), say).
 */
static unsigned scan_frames(const uintptr_t *copy, uintptr_t sp, size_t len,
                            const struct text_ranges *text, uintptr_t *pcs,
                            unsigned max)
{
    size_t words = len / sizeof(uintptr_t);
#define WORD_AT(a) copy[((a) - sp) / sizeof(uintptr_t)]
/* Written so that no sum can wrap: a word read from the stack may be
 * anything, up to UINTPTR_MAX (UBSan saw fp + 16 wrap past the copy). */
#define IN_COPY(a)                                                          \
    ((a) >= sp && len >= 2 * sizeof(uintptr_t) &&                           \
     (a) - sp <= len - 2 * sizeof(uintptr_t) &&                             \
     ((a) & (sizeof(uintptr_t) - 1)) == 0)
    for (size_t i = 0; i + 1 < words; i++) {
        uintptr_t a = sp + i * sizeof(uintptr_t);
        uintptr_t fp = copy[i], ret = copy[i + 1];
        if (fp <= a || !IN_COPY(fp) || !is_code(text, ret))
            continue;
        uintptr_t next = WORD_AT(fp), ret2 = WORD_AT(fp + sizeof(uintptr_t));
        if (!(next > fp && IN_COPY(next) && is_code(text, ret2)) &&
            !(next == 0 && is_code(text, ret2)))
            continue;
        unsigned n = 0;
        for (size_t j = 0; j < i && n < max; j++)
            if (is_code(text, copy[j])) {
                pcs[n++] = copy[j];
                break;
            }
        if (n < max)
            pcs[n++] = ret;
        while (n < max && IN_COPY(fp)) {
            uintptr_t up = WORD_AT(fp), r = WORD_AT(fp + sizeof(uintptr_t));
            if (!is_code(text, r))
                break;
            pcs[n++] = r;
            if (up <= fp)
                break;
            fp = up;
        }
        return n;
    }
    return 0;
#undef WORD_AT
#undef IN_COPY
}

/* A thread in a system call: its pc, then the scanned frames. */
static void stack_in_syscall(uintptr_t sp, uintptr_t pc, uintptr_t low,
                             uintptr_t high, struct weft__probe *out)
{
    out->npcs = 0;
    if (pc)
        out->pcs[out->npcs++] = pc;
    if (sp < low || sp >= high) {
        out->no_stack = "its stack pointer is not on the task's stack";
        return;
    }
    size_t len = high - sp < SCAN_BYTES ? high - sp : SCAN_BYTES;
    len &= ~(sizeof(uintptr_t) - 1);
    uintptr_t *copy = malloc(len);
    if (!copy) {
        out->no_stack = "no memory";
        return;
    }
    struct iovec local = {copy, len}, remote = {(void *)sp, len};
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) !=
        (ssize_t)len) {
        out->no_stack = "its stack could not be read";
        free(copy);
        return;
    }
    struct text_ranges text = {0};
    dl_iterate_phdr(add_text, &text);
    out->npcs += scan_frames(copy, sp, len, &text, out->pcs + out->npcs,
                             WEFT__PROBE_FRAMES - out->npcs);
    free(copy);
}

/* ------------------------------------------------------ the signal */

enum { IDLE, ASKED, WRITING, DONE };

/* The one probe in flight: its number (sent with the signal), its state,
 * and the handler's answer.  Static, so a handler that comes late (after
 * its prober gave up) writes into memory that exists, and only if its
 * number is still the current one and the state still ASKED. */
static struct {
    pthread_mutex_t lock;          /* one probe at a time                */
    _Atomic uint64_t seq;
    _Atomic uint32_t state;
    unsigned npcs;
    uintptr_t pcs[WEFT__PROBE_FRAMES];
} probe = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static bool installed;

#if defined(__x86_64__)
#define UC_PC(uc) ((uintptr_t)(uc)->uc_mcontext.gregs[REG_RIP])
#define UC_FP(uc) ((uintptr_t)(uc)->uc_mcontext.gregs[REG_RBP])
#define UC_SP(uc) ((uintptr_t)(uc)->uc_mcontext.gregs[REG_RSP])
#elif defined(__aarch64__)
#define UC_PC(uc) ((uintptr_t)(uc)->uc_mcontext.pc)
#define UC_FP(uc) ((uintptr_t)(uc)->uc_mcontext.regs[29])
#define UC_SP(uc) ((uintptr_t)(uc)->uc_mcontext.sp)
#endif

/*
 * The handler, on the probed thread: the interrupted pc, then the frame
 * records from the interrupted frame pointer, read only inside the stack
 * of the context running on this thread (weft__tls.current: its own
 * mapping, which cannot go away while this handler runs on the thread)
 * and only while the stack pointer is inside it too (a signal in the
 * middle of a switch, where the two disagree, gives the pc alone).
 * Async-signal-safe: loads, stores and atomics only.  Not instrumented
 * for AddressSanitizer: a frame record lies among a frame's redzones.
 */
#if defined(__clang__) || __GNUC__ >= 8
__attribute__((no_sanitize("address")))
#endif
static void on_signal(int signo, siginfo_t *si, void *ucv)
{
    (void)signo;
    if (si->si_code != SI_QUEUE)
        return;
    uint64_t seq = (uint64_t)(uintptr_t)si->si_value.sival_ptr;
    uint32_t asked = ASKED;
    if (atomic_load_explicit(&probe.seq, memory_order_acquire) != seq ||
        !atomic_compare_exchange_strong_explicit(&probe.state, &asked, WRITING,
                                                 memory_order_acquire,
                                                 memory_order_relaxed))
        return;
    const ucontext_t *uc = ucv;
    unsigned n = 0;
    probe.pcs[n++] = UC_PC(uc);
    const struct weft_coro *cur = weft__tls.current;
    uintptr_t low = 0, high = 0;
    if (cur && !(cur->flags & WEFT__CORO_ROOT) && cur->stack.map) {
        low = (uintptr_t)weft__stack_low(&cur->stack);
        high = (uintptr_t)weft__stack_top(&cur->stack);
    }
    uintptr_t sp = UC_SP(uc), fp = UC_FP(uc);
    if (sp >= low && sp < high) {
        while (n < WEFT__PROBE_FRAMES && fp >= sp &&
               fp + 2 * sizeof(uintptr_t) <= high &&
               !(fp & (sizeof(uintptr_t) - 1))) {
            const volatile uintptr_t *rec = (const volatile uintptr_t *)fp;
            uintptr_t up = rec[0], ret = rec[1];
            if (!ret)
                break;
            probe.pcs[n++] = ret;
            if (up <= fp)
                break;
            fp = up;
        }
    }
    probe.npcs = n;
    atomic_store_explicit(&probe.state, DONE, memory_order_release);
}

static void install(void)
{
    struct sigaction old;
    if (sigaction(WEFT__PROBE_SIGNAL, NULL, &old) != 0 ||
        (!(old.sa_flags & SA_SIGINFO) && old.sa_handler != SIG_DFL))
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    installed = sigaction(WEFT__PROBE_SIGNAL, &sa, NULL) == 0;
}

#define ANSWER_WAIT_NS ((uint64_t)100 * 1000000u)

/* A computing thread's stack, by the signal. */
static void stack_by_signal(pthread_t thread, struct weft__probe *out)
{
    pthread_once(&install_once, install);
    if (!installed) {
        out->no_stack = "its signal is taken by the program";
        return;
    }
    weft__lock(&probe.lock);
    uint64_t seq = atomic_load_explicit(&probe.seq, memory_order_relaxed) + 1;
    atomic_store_explicit(&probe.state, ASKED, memory_order_relaxed);
    /* Release: the handler that reads this number sees ASKED. */
    atomic_store_explicit(&probe.seq, seq, memory_order_release);
    union sigval v = {.sival_ptr = (void *)(uintptr_t)seq};
    if (pthread_sigqueue(thread, WEFT__PROBE_SIGNAL, v) != 0) {
        atomic_store_explicit(&probe.state, IDLE, memory_order_relaxed);
        pthread_mutex_unlock(&probe.lock);
        out->no_stack = "the signal could not be sent";
        return;
    }
    uint64_t until = weft__now_ns() + ANSWER_WAIT_NS;
    for (;;) {
        uint32_t st = atomic_load_explicit(&probe.state, memory_order_acquire);
        if (st == DONE)
            break;
        uint32_t asked = ASKED;
        if (weft__now_ns() > until &&
            atomic_compare_exchange_strong_explicit(
                &probe.state, &asked, IDLE, memory_order_relaxed,
                memory_order_relaxed)) {
            /* Its thread never took the signal (blocked, or held back by
             * a sanitizer until its next library call). */
            pthread_mutex_unlock(&probe.lock);
            out->no_stack = "its thread did not answer the signal";
            return;
        }
        struct timespec ts = {0, 50 * 1000};
        nanosleep(&ts, NULL);
    }
    out->npcs = probe.npcs;
    memcpy(out->pcs, probe.pcs, probe.npcs * sizeof probe.pcs[0]);
    atomic_store_explicit(&probe.state, IDLE, memory_order_relaxed);
    pthread_mutex_unlock(&probe.lock);
}

void weft__probe_thread(pid_t tid, pthread_t thread, uintptr_t low,
                        uintptr_t high, int frames, struct weft__probe *out)
{
    memset(out, 0, sizeof *out);
    uintptr_t sp, pc;
    read_syscall(tid, out, &sp, &pc);
    if (!frames)
        return;
    if (out->state == WEFT__PROBE_SYSCALL)
        stack_in_syscall(sp, pc, low, high, out);
    else
        stack_by_signal(thread, out);
}
