/*
 * death.h — death tests: run a case in a child process that is meant to
 * die, and look at how it died and what it wrote to stderr.
 *
 * The child is forked from a parent that has not touched weft, so each
 * case starts from a fresh process state (no handler installed, the
 * environment not read yet, default signal dispositions).  It runs with core dumps off and under an
 * alarm, so a case that hangs dies of SIGALRM instead of blocking the run.
 */
#ifndef WEFT_TEST_DEATH_H
#define WEFT_TEST_DEATH_H

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

/* How a child ended, and its stderr (truncated). */
struct death {
    int status;      /* from waitpid */
    char err[8192];  /* NUL-terminated */
};

/* Exit status of a child whose case returned instead of dying. */
#define DEATH_SURVIVED 99

/* Run fn in a child with stderr captured; fn should not return. */
static inline void death_run(void (*fn)(void), struct death *d)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* cmocka catches fatal signals in the test process: give the
         * child the dispositions of a fresh program. */
        static const int fatal[] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE};
        for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
            signal(fatal[i], SIG_DFL);
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
        alarm(20);
        close(fds[0]);
        dup2(fds[1], STDERR_FILENO);
        close(fds[1]);
        fn();
        _exit(DEATH_SURVIVED);
    }
    close(fds[1]);
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fds[0], d->err + n, sizeof d->err - 1 - n);
        if (r > 0 && (n += (size_t)r) < sizeof d->err - 1)
            continue;
        if (r < 0 && errno == EINTR)
            continue;
        break;
    }
    d->err[n] = '\0';
    close(fds[0]);
    while (waitpid(pid, &d->status, 0) < 0)
        assert_int_equal(errno, EINTR);
}

/* stderr holds `line` as a whole line. */
static inline bool death_has_line(const struct death *d, const char *line)
{
    size_t len = strlen(line);
    for (const char *p = d->err; (p = strstr(p, line)); p++)
        if ((p == d->err || p[-1] == '\n') && p[len] == '\n')
            return true;
    return false;
}

/* The child died of signal sig; print its stderr if not. */
static inline void death_assert_signal(const struct death *d, int sig)
{
    if (!WIFSIGNALED(d->status) || WTERMSIG(d->status) != sig)
        fprintf(stderr, "child status %#x, stderr:\n%s\n", d->status, d->err);
    assert_true(WIFSIGNALED(d->status));
    assert_int_equal(WTERMSIG(d->status), sig);
}

/* The child exited with status code; print its stderr if not. */
static inline void death_assert_exit(const struct death *d, int code)
{
    if (!WIFEXITED(d->status) || WEXITSTATUS(d->status) != code)
        fprintf(stderr, "child status %#x, stderr:\n%s\n", d->status, d->err);
    assert_true(WIFEXITED(d->status));
    assert_int_equal(WEXITSTATUS(d->status), code);
}

/* Make the stack grow until something stops it: a frame with a buffer
 * that is written, and a call that is not a tail call. */
static volatile long death_depth_limit = 1L << 40;

__attribute__((noinline, unused)) static long death_dive(long depth)
{
    volatile char frame[512];
    frame[0] = (char)depth;
    frame[sizeof frame - 1] = (char)depth;
    if (depth >= death_depth_limit)
        return 0;
    return death_dive(depth + 1) + frame[0];
}

/* A fault that is no stack overflow: a write to a page with no access
 * (not NULL, which UBSan would catch first). */
static void *volatile death_fault_addr;

__attribute__((unused)) static void death_bad_write(void)
{
    void *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
    if (page == MAP_FAILED)
        _exit(2);
    death_fault_addr = page;
    *(volatile int *)page = 1;
}

#endif /* WEFT_TEST_DEATH_H */
