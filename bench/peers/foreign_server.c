/*
 * foreign_server.c — a server that is not ours (nginx, redis-server) run
 * the way weft-bench runs a server workload's program (bench/server.h):
 *
 *     peer-nginx-http PORT [THREADS]      (built with -DFOREIGN_NGINX)
 *     peer-redis-kv PORT [THREADS]        (built with -DFOREIGN_REDIS)
 *
 * PORT 0 picks a free port (bound, read back, released: the server binds
 * it a moment later).  Everything the server writes (configuration, pid
 * file, logs) goes to a fresh temporary directory, removed at the end, so
 * no root and no system configuration are needed.
 *
 *   nginx: the configuration is bench/http/nginx.conf (NGINX_CONF) with
 *          its @PORT@, @WORKERS@ (THREADS) and @PREFIX@ filled in; runs
 *          `nginx -p DIR -c DIR/nginx.conf -e DIR/error.log` in the
 *          foreground (daemon off).
 *   redis: `redis-server --port PORT --bind 127.0.0.1 --save '' --appendonly
 *          no --dir DIR`: persistence off.  Redis executes commands on one
 *          thread whatever THREADS says (that is its design).
 *
 * Once the server accepts a connection on the port, prints "listening on
 * PORT".  SIGINT or SIGTERM: passes SIGTERM on, waits for the server and
 * exits 0 if it exited 0.  Because this process waits for the server, and
 * nginx's master waits for its workers, the CPU time weft-bench reads from
 * this process's wait4 includes all of theirs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(FOREIGN_NGINX) == defined(FOREIGN_REDIS)
#error "build with exactly one of -DFOREIGN_NGINX and -DFOREIGN_REDIS"
#endif

#define READY_MS 10000

static char dir[64];

static int remove_one(const char *path, const struct stat *st, int flag,
                      struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void cleanup(void)
{
    if (dir[0] != '\0')
        nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void die(const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", PROGRAM, what, strerror(errno));
    cleanup();
    exit(1);
}

static unsigned free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        die("finding a free port");
    close(fd);
    return ntohs(a.sin_port);
}

static int accepts(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

#ifdef FOREIGN_NGINX
/* The template with its placeholders filled in, as DIR/nginx.conf. */
static void write_config(unsigned port, unsigned workers)
{
    FILE *in = fopen(NGINX_CONF, "r");
    char path[128];
    snprintf(path, sizeof path, "%s/nginx.conf", dir);
    FILE *out = fopen(path, "w");
    if (in == NULL || out == NULL)
        die(NGINX_CONF);
    char line[512];
    while (fgets(line, sizeof line, in) != NULL) {
        for (char *p = line; *p != '\0';) {
            if (strncmp(p, "@PORT@", 6) == 0) {
                fprintf(out, "%u", port);
                p += 6;
            } else if (strncmp(p, "@WORKERS@", 9) == 0) {
                fprintf(out, "%u", workers);
                p += 9;
            } else if (strncmp(p, "@PREFIX@", 8) == 0) {
                fputs(dir, out);
                p += 8;
            } else {
                fputc(*p++, out);
            }
        }
    }
    fclose(in);
    if (fclose(out) != 0)
        die(path);
}
#endif

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s PORT [THREADS]\n", PROGRAM);
        return 2;
    }
    unsigned port = (unsigned)strtoul(argv[1], NULL, 10);
    unsigned threads = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 1;
    if (port > 65535 || threads < 1 || threads > 1024) {
        fprintf(stderr, "%s: bad port or thread count\n", PROGRAM);
        return 2;
    }
    if (port == 0)
        port = free_port();
    snprintf(dir, sizeof dir, "/tmp/weft-bench-%s-XXXXXX", PROGRAM);
    if (mkdtemp(dir) == NULL) {
        dir[0] = '\0';
        die("mkdtemp");
    }
    char port_text[16], prefix[80], conf[128], log[128];
    snprintf(port_text, sizeof port_text, "%u", port);
#ifdef FOREIGN_NGINX
    write_config(port, threads);
    snprintf(prefix, sizeof prefix, "%s/", dir);
    snprintf(conf, sizeof conf, "%s/nginx.conf", dir);
    snprintf(log, sizeof log, "%s/error.log", dir);
    char *child_argv[] = { NGINX, "-p", prefix, "-c", conf, "-e", log, NULL };
#else
    (void)prefix, (void)conf;
    snprintf(log, sizeof log, "%s/redis.log", dir);
    char *child_argv[] = { REDIS, "--port", port_text, "--bind", "127.0.0.1",
                           "--save", "", "--appendonly", "no",
                           "--dir", dir, "--logfile", log, NULL };
#endif

    sigset_t stop, old;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigprocmask(SIG_BLOCK, &stop, &old);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        /* Its stdout is not weft-bench's: the first line there is ours. */
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, STDOUT_FILENO);
        sigprocmask(SIG_SETMASK, &old, NULL);
        execv(child_argv[0], child_argv);
        _exit(127);
    }

    /* Ready once it accepts; a server that dies first fails the run. */
    struct timespec tick = { 0, 5 * 1000000 };
    int status;
    for (int waited = 0; !accepts(port); waited += 5) {
        if (waitpid(pid, &status, WNOHANG) == pid || waited > READY_MS) {
            fprintf(stderr, "%s: %s did not start (see %s)\n", PROGRAM,
                    child_argv[0], log);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            cleanup();
            return 1;
        }
        nanosleep(&tick, NULL);
    }
    printf("listening on %u\n", port);
    fflush(stdout);

    int sig;
    sigwait(&stop, &sig);
    kill(pid, SIGTERM);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    cleanup();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s: the server ended with status %#x\n", PROGRAM,
                status);
        return 1;
    }
    return 0;
}
