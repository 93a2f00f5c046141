/*
 * sched/probe.h — what a worker's thread is doing now, for the dump and
 * the stall warning (internal): in which system call, or computing, and
 * with which stack.
 *
 * A parked task's stack is read from its saved context (dump.c).  A
 * running task has no saved context: its registers are in its thread.
 *   - In a system call: /proc/self/task/TID/syscall gives the call, its
 *     arguments, and the user stack pointer and program counter at entry;
 *     the frames above come from a scan of the stack from that pointer
 *     for the first frame record (a saved frame pointer above it and a
 *     return address into code) and the frame-pointer chain from there.
 *     The stack is copied with process_vm_readv(2), which fails instead of
 *     faulting if the task ends and its stack goes meanwhile.  No signal:
 *     a signal would end some system calls with EINTR (poll, nanosleep,
 *     a socket with a timeout) in the program's code.
 *   - Computing: a signal (WEFT__PROBE_SIGNAL, queued to that thread with
 *     pthread_sigqueue) whose handler walks the thread's own frames from
 *     the interrupted registers, within the stack of the context that
 *     runs there (weft__tls.current), and hands them back through one
 *     static record (probe.c: one probe at a time; a handler that comes
 *     after its prober gave up writes nothing).  The handler is installed
 *     on the first probe, and only if the signal's disposition is the
 *     default: a program that uses the signal keeps it, and running tasks
 *     are then shown without a stack.
 */
#ifndef WEFT_SCHED_PROBE_H
#define WEFT_SCHED_PROBE_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

/* SIGRTMIN + 6: glibc keeps the first real-time signals for itself (it
 * moves SIGRTMIN past them), programs that use real-time signals tend to
 * take the first ones they get, and Valgrind takes the last. */
#define WEFT__PROBE_SIGNAL (SIGRTMIN + 6)

#define WEFT__PROBE_FRAMES 32

enum {
    WEFT__PROBE_UNKNOWN,    /* /proc could not be read                   */
    WEFT__PROBE_COMPUTING,  /* running on a CPU or waiting for one       */
    WEFT__PROBE_SYSCALL,    /* in system call `nr`                       */
};

struct weft__probe {
    int state;
    long nr;                 /* WEFT__PROBE_SYSCALL: the call            */
    uint64_t arg0;           /* and its first argument                   */
    const char *no_stack;    /* why there is no stack, or NULL           */
    unsigned npcs;           /* code addresses, innermost first: the     */
    uintptr_t pcs[WEFT__PROBE_FRAMES]; /* interrupted pc, then returns   */
};

/*
 * weft__probe_thread - fill *out with what thread `thread` (kernel id
 * tid) does now.  With `frames`, its stack too: [low, high) is the stack
 * of the task the caller believes runs there (the scan of a thread in a
 * system call reads only there; the caller checks afterwards that the
 * task still runs, since the answer may be another's).  Waits up to
 * 100 ms for a signal's answer.  Not from a signal handler.
 */
void weft__probe_thread(pid_t tid, pthread_t thread, uintptr_t low,
                        uintptr_t high, int frames, struct weft__probe *out);

/* The name of system call nr ("read"), or NULL if the table has none. */
const char *weft__syscall_name(long nr);

#endif /* WEFT_SCHED_PROBE_H */
