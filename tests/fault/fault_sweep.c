/*
 * fault_sweep.c — run the fault program (argv[2], with the arguments that
 * follow) once per allocation call it makes, with that call failing:
 * WEFT_FAULT_AT=k for k = 1, 2, ... until k is past the most calls any run
 * made.  Threads make the count, and which call comes k-th, vary from run
 * to run, so the whole sweep is done argv[1] times.
 *
 * Each run is a fresh process (fork and exec), so a failure's leftovers
 * cannot hide in the next run and a leak is charged to the run that made
 * it.  A run fails the sweep if it does not exit 0: a crash or a hang (the
 * program's alarm), a wrong error code or result (exit 3), or, in a build
 * with AddressSanitizer, a leak or a sanitizer report (their own exit
 * status).  Output: the number of calls failed, and every site reached in
 * any run.  The sweep fails too if the program reaches too few calls or
 * misses a kind of allocation, which would mean the hooks are not wired.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_CALLS 5000    /* far more than the program makes */
#define MAX_FAILED 5      /* stop reporting after this many bad runs */
#define MIN_CALLS 40

/* Every kind of call base/alloc.h wraps that the program must reach. */
static const char *const kinds[] = {
    "malloc", "calloc", "realloc", "mmap", "madvise",
    "mprotect", "pthread_create", "pthread_key_create", "pthread_setspecific",
};

#define MAX_SITES 128
static char *sites[MAX_SITES];
static unsigned nsites;

struct run {
    char *out;          /* stdout and stderr, merged */
    size_t len;
    int status;         /* from waitpid */
};

static void die(const char *what)
{
    perror(what);
    exit(2);
}

static struct run run_once(char **prog, unsigned long k)
{
    struct run r = {0};
    int fd[2];
    if (pipe(fd) != 0)
        die("pipe");
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        char at[32];
        snprintf(at, sizeof at, "%lu", k);
        setenv("WEFT_FAULT_AT", at, 1);
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        execv(prog[0], prog);
        perror("exec");
        _exit(127);
    }
    close(fd[1]);
    size_t cap = 0;
    for (;;) {
        if (r.len + 4096 > cap) {
            cap = cap ? 2 * cap : 65536;
            r.out = realloc(r.out, cap);
            if (!r.out)
                die("realloc");
        }
        ssize_t n = read(fd[0], r.out + r.len, cap - r.len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        r.len += (size_t)n;
    }
    r.out[r.len] = '\0';
    close(fd[0]);
    while (waitpid(pid, &r.status, 0) < 0)
        if (errno != EINTR)
            die("waitpid");
    return r;
}

static void add_site(const char *line, size_t len)
{
    for (unsigned i = 0; i < nsites; i++)
        if (strlen(sites[i]) == len && memcmp(sites[i], line, len) == 0)
            return;
    if (nsites < MAX_SITES)
        sites[nsites++] = strndup(line, len);
}

/* Collect the sites; return the run's "calls N fired F" line's values
 * (false if it has none: the program did not reach its end). */
static bool parse(const struct run *r, unsigned long *calls, int *fired)
{
    bool ended = false;
    for (const char *p = r->out; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (strncmp(p, "site ", 5) == 0)
            add_site(p + 5, len - 5);
        else if (sscanf(p, "calls %lu fired %d", calls, fired) == 2)
            ended = true;
        p += len + (eol != NULL);
    }
    return ended;
}

static void report_bad(unsigned long k, const struct run *r)
{
    if (WIFSIGNALED(r->status))
        fprintf(stderr, "\nfault sweep: run k=%lu killed by signal %d%s\n", k,
                WTERMSIG(r->status),
                WTERMSIG(r->status) == SIGALRM ? " (hang)" : "");
    else
        fprintf(stderr, "\nfault sweep: run k=%lu exited with status %d\n", k,
                WEXITSTATUS(r->status));
    fprintf(stderr, "---- its output ----\n%s---- end ----\n", r->out);
}

/* Print each distinct documented error the runs returned ("made again"
 * lines of the program), with a count. */
#define MAX_ERRORS 64
static char *errors[MAX_ERRORS];
static unsigned error_count[MAX_ERRORS];
static unsigned nerrors;

static void note_errors(const struct run *r)
{
    for (const char *p = strstr(r->out, "fault_program: "); p;
         p = strstr(p + 1, "fault_program: ")) {
        p += strlen("fault_program: ");
        size_t len = strcspn(p, "\n");
        unsigned i = 0;
        while (i < nerrors && !(strlen(errors[i]) == len &&
                                memcmp(errors[i], p, len) == 0))
            i++;
        if (i == nerrors && nerrors < MAX_ERRORS)
            errors[nerrors++] = strndup(p, len);
        if (i < nerrors)
            error_count[i]++;
    }
}

int main(int argc, char **argv)
{
    if (argc < 3 || atoi(argv[1]) < 1) {
        fprintf(stderr, "usage: %s ROUNDS FAULT_PROGRAM [ARGS...]\n", argv[0]);
        return 2;
    }
    int rounds = atoi(argv[1]);
    char **prog = argv + 2;
    /* UBSan reports fail a run; LeakSanitizer is on by default. */
    setenv("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1", 0);

    unsigned long max_calls = 0, min_calls = (unsigned long)-1, runs = 0;
    unsigned bad = 0;
    for (int round = 0; round < rounds && bad < MAX_FAILED; round++) {
        /* Until k is past every count seen: the run at k made fewer. */
        for (unsigned long k = 1; k <= max_calls + 1 && k <= MAX_CALLS &&
                                  bad < MAX_FAILED;
             k++) {
            struct run r = run_once(prog, k);
            unsigned long calls = 0;
            int fired = 0;
            runs++;
            if (!parse(&r, &calls, &fired) || !WIFEXITED(r.status) ||
                WEXITSTATUS(r.status) != 0) {
                report_bad(k, &r);
                bad++;
            } else {
                note_errors(&r);
                if (calls > max_calls)
                    max_calls = calls;
                if (calls < min_calls)
                    min_calls = calls;
                if (fired != (k <= calls)) {
                    fprintf(stderr, "fault sweep: k=%lu of %lu calls, but "
                            "fired=%d\n", k, calls, fired);
                    bad++;
                }
            }
            free(r.out);
        }
    }

    printf("fault sweep (%s", prog[0]);
    for (char **a = prog + 1; *a; a++)
        printf(" %s", *a);
    printf("): %d rounds, %lu runs; a run made %lu to %lu allocation calls, "
           "each call k = 1..%lu failed once per round\n",
           rounds, runs, min_calls, max_calls, max_calls);
    printf("fault sweep: %u sites reached:\n", nsites);
    for (unsigned i = 0; i < nsites; i++)
        printf("  %s\n", sites[i]);
    printf("fault sweep: documented errors returned (then the call was made "
           "again and succeeded):\n");
    for (unsigned i = 0; i < nerrors; i++)
        printf("  %4u x %s\n", error_count[i], errors[i]);
#if defined(__SANITIZE_ADDRESS__)
    printf("fault sweep: leaks checked by LeakSanitizer in every run\n");
#else
    printf("fault sweep: no leak check (build without AddressSanitizer)\n");
#endif
    printf("fault sweep: %u bad runs\n", bad);

    int status = bad ? 1 : 0;
    if (max_calls < MIN_CALLS) {
        fprintf(stderr, "fault sweep: only %lu calls; are the hooks wired?\n",
                max_calls);
        status = 1;
    }
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        bool seen = false;
        for (unsigned j = 0; j < nsites && !seen; j++) {
            const char *w = strrchr(sites[j], ' ');
            seen = w && strcmp(w + 1, kinds[i]) == 0;
        }
        if (!seen) {
            fprintf(stderr, "fault sweep: no %s call was reached\n", kinds[i]);
            status = 1;
        }
    }
    for (unsigned i = 0; i < nsites; i++)
        free(sites[i]);
    for (unsigned i = 0; i < nerrors; i++)
        free(errors[i]);
    return status;
}
