/* servers.c — starting and stopping redis-server and PostgreSQL
 * (servers.h). */
#include "servers.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#ifdef HB_HAVE_PQ
#include <libpq-fe.h>
#endif

#ifndef HB_REDIS_SERVER
#define HB_REDIS_SERVER ""
#endif
#ifndef HB_PG_BINDIR
#define HB_PG_BINDIR ""
#endif

enum {
    START_MS = 30000, /* until the server answers                */
    INITDB_MS = 120000,
    STOP_MS = 10000,  /* after the polite signal, before SIGKILL */
};

volatile sig_atomic_t hb_interrupted;

static void pause_ms(unsigned ms)
{
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
}

static int remove_one(const char *path, const struct stat *st, int flag,
                      struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void remove_dir(hb_server *s)
{
    if (s->dir[0] != '\0')
        nftw(s->dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    s->dir[0] = '\0';
}

static unsigned free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    unsigned port = 0;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static char pg_path[256];

static const char *pg_bin(const char *name)
{
    snprintf(pg_path, sizeof pg_path, "%s/%s", HB_PG_BINDIR, name);
    return pg_path;
}

const char *hb_server_missing(hb_db db)
{
    if (db == HB_REDIS)
        return HB_REDIS_SERVER[0] != '\0' && access(HB_REDIS_SERVER, X_OK) == 0
                   ? NULL
                   : "redis-server not installed (package redis-server)";
#ifndef HB_HAVE_PQ
    return "not built: libpq not found (package libpq-dev)";
#else
    if (HB_PG_BINDIR[0] == '\0' || access(pg_bin("postgres"), X_OK) != 0 ||
        access(pg_bin("initdb"), X_OK) != 0)
        return "PostgreSQL server not installed (package postgresql-15)";
    if (geteuid() == 0 && getpwnam("postgres") == NULL)
        return "running as root and there is no user postgres to run it as";
    return NULL;
#endif
}

/* Runs argv (argv[0] a path) in a process group of its own, stdin from
 * /dev/null, stdout and stderr to `log`, as `as` if not NULL.  The child
 * dies with us (PR_SET_PDEATHSIG).  The pid, or -1. */
static pid_t spawn(char *const argv[], const char *log, const struct passwd *as)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;

    setpgid(0, 0);
    int in = open("/dev/null", O_RDONLY);
    int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (in < 0 || out < 0)
        _exit(126);
    dup2(in, STDIN_FILENO);
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
    if (as != NULL) {
        if (setgroups(0, NULL) != 0 || setgid(as->pw_gid) != 0 ||
            setuid(as->pw_uid) != 0)
            _exit(126);
    }
    /* After setuid, which clears it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    execv(argv[0], argv);
    _exit(127);
}

/* Waits for pid for at most ms: its wait status, or -1 (still running;
 * or interrupted). */
static int wait_ms(pid_t pid, unsigned ms)
{
    for (unsigned waited = 0;; waited += 10) {
        int status;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        if (r < 0 && errno != EINTR)
            return 0; /* not our child any more */
        if (waited >= ms || hb_interrupted)
            return -1;
        pause_ms(10);
    }
}

void hb_server_stop(hb_server *s)
{
    if (s->pid > 0) {
        kill(s->pid, s->db == HB_PQ ? SIGINT : SIGTERM);
        if (wait_ms(s->pid, STOP_MS) < 0) {
            kill(-s->pid, SIGKILL);
            kill(s->pid, SIGKILL);
            waitpid(s->pid, NULL, 0);
        }
        /* Anything left of its group (postgres' backends, normally gone
         * with it). */
        kill(-s->pid, SIGKILL);
        s->pid = 0;
    }
    remove_dir(s);
}

/* Ready: a PING answered; the version from INFO. */
static int redis_ready(hb_server *s)
{
    struct timeval tv = { 1, 0 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", (int)s->port, tv);
    int ok = 0;
    if (c != NULL && c->err == 0) {
        redisReply *r = redisCommand(c, "INFO server");
        if (r != NULL && r->type == REDIS_REPLY_STRING) {
            const char *v = strstr(r->str, "redis_version:");
            unsigned n = 0;
            if (v != NULL) {
                v += strlen("redis_version:");
                while (v[n] != '\0' && v[n] != '\r' && v[n] != '\n' && n < 32)
                    n++;
            }
            snprintf(s->version, sizeof s->version, "redis %.*s", (int)n,
                     v != NULL ? v : "?");
            ok = 1;
        }
        if (r != NULL)
            freeReplyObject(r);
    }
    if (c != NULL)
        redisFree(c);
    return ok;
}

#ifdef HB_HAVE_PQ
static int pq_ready(hb_server *s)
{
    char conninfo[160];
    snprintf(conninfo, sizeof conninfo,
             "host=127.0.0.1 port=%u user=postgres dbname=postgres "
             "sslmode=disable gssencmode=disable connect_timeout=2",
             s->port);
    if (PQping(conninfo) != PQPING_OK)
        return 0;
    PGconn *c = PQconnectdb(conninfo);
    int ok = c != NULL && PQstatus(c) == CONNECTION_OK;
    if (ok) {
        const char *v = PQparameterStatus(c, "server_version");
        snprintf(s->version, sizeof s->version, "PostgreSQL %s",
                 v != NULL ? v : "?");
    }
    PQfinish(c);
    return ok;
}
#endif

/* Waits until the server answers: 0, or -1 with why[] set (stopped). */
static int await_ready(hb_server *s, const char *log, char *why,
                       size_t whylen)
{
    for (unsigned waited = 0;; waited += 20) {
        int ready = 0;
        if (s->db == HB_REDIS)
            ready = redis_ready(s);
#ifdef HB_HAVE_PQ
        else
            ready = pq_ready(s);
#endif
        if (ready)
            return 0;
        int status;
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            snprintf(why, whylen, "the server exited (status %#x) at start",
                     status);
            s->pid = 0;
            break;
        }
        if (hb_interrupted) {
            snprintf(why, whylen, "interrupted");
            break;
        }
        if (waited >= START_MS) {
            snprintf(why, whylen, "the server did not answer within %d s",
                     START_MS / 1000);
            break;
        }
        pause_ms(20);
    }
    /* Its log says why: show its end before it goes with the directory. */
    FILE *f = fopen(log, "r");
    if (f != NULL) {
        char line[512];
        fprintf(stderr, "weft-hook-bench: %s:\n", log);
        while (fgets(line, sizeof line, f) != NULL)
            fprintf(stderr, "  %s", line);
        fclose(f);
    }
    hb_server_stop(s);
    return -1;
}

int hb_server_start(hb_server *s, hb_db db, unsigned clients, char *why,
                    size_t whylen)
{
    memset(s, 0, sizeof *s);
    s->db = db;
    const char *missing = hb_server_missing(db);
    if (missing != NULL) {
        snprintf(why, whylen, "%s", missing);
        return -1;
    }
    snprintf(s->dir, sizeof s->dir, "/tmp/weft-hook-bench-%s-XXXXXX",
             hb_db_names[db]);
    if (mkdtemp(s->dir) == NULL) {
        snprintf(why, whylen, "mkdtemp: %s", strerror(errno));
        s->dir[0] = '\0';
        return -1;
    }
    s->port = free_port();
    if (s->port == 0) {
        snprintf(why, whylen, "no free port: %s", strerror(errno));
        remove_dir(s);
        return -1;
    }
    char port[16], log[128];
    snprintf(port, sizeof port, "%u", s->port);

    if (db == HB_REDIS) {
        char maxclients[16];
        snprintf(maxclients, sizeof maxclients, "%u", clients + 32);
        snprintf(log, sizeof log, "%s/redis.log", s->dir);
        char *argv[] = { HB_REDIS_SERVER, "--port", port, "--bind",
                         "127.0.0.1", "--save", "", "--appendonly", "no",
                         "--dir", s->dir, "--maxclients", maxclients,
                         "--daemonize", "no", NULL };
        s->pid = spawn(argv, log, NULL);
        if (s->pid < 0) {
            snprintf(why, whylen, "fork: %s", strerror(errno));
            s->pid = 0;
            remove_dir(s);
            return -1;
        }
        return await_ready(s, log, why, whylen);
    }

    /* PostgreSQL: initdb, then the server, as postgres when root. */
    const struct passwd *as = NULL;
    if (geteuid() == 0) {
        as = getpwnam("postgres");
        if (as == NULL || chown(s->dir, as->pw_uid, as->pw_gid) != 0) {
            snprintf(why, whylen, "cannot hand %s to user postgres", s->dir);
            remove_dir(s);
            return -1;
        }
    }
    char data[128], initdb[256], postgres[256], maxconn[48], sockdir[96];
    snprintf(data, sizeof data, "%s/data", s->dir);
    snprintf(log, sizeof log, "%s/initdb.log", s->dir);
    snprintf(initdb, sizeof initdb, "%s", pg_bin("initdb"));
    snprintf(postgres, sizeof postgres, "%s", pg_bin("postgres"));
    char *init_argv[] = { initdb, "-D", data, "-U", "postgres",
                          "--auth=trust", "--no-sync", "-E", "UTF8",
                          "--locale=C", NULL };
    pid_t ipid = spawn(init_argv, log, as);
    int status = ipid > 0 ? wait_ms(ipid, INITDB_MS) : -1;
    if (ipid > 0 && status < 0) {
        kill(ipid, SIGKILL);
        waitpid(ipid, NULL, 0);
    }
    if (status != 0) {
        snprintf(why, whylen, "initdb failed (status %#x); its log:", status);
        FILE *f = fopen(log, "r");
        if (f != NULL) {
            char line[512];
            while (fgets(line, sizeof line, f) != NULL)
                fprintf(stderr, "  %s", line);
            fclose(f);
        }
        remove_dir(s);
        return -1;
    }
    snprintf(log, sizeof log, "%s/postgres.log", s->dir);
    snprintf(maxconn, sizeof maxconn, "max_connections=%u", clients + 20);
    snprintf(sockdir, sizeof sockdir, "unix_socket_directories=%s", s->dir);
    char *argv[] = { postgres, "-D", data, "-p", port,
                     "-c", "listen_addresses=127.0.0.1",
                     "-c", sockdir,
                     "-c", maxconn,
                     "-c", "fsync=off",
                     "-c", "synchronous_commit=off",
                     "-c", "full_page_writes=off",
                     "-c", "shared_buffers=64MB",
                     NULL };
    s->pid = spawn(argv, log, as);
    if (s->pid < 0) {
        snprintf(why, whylen, "fork: %s", strerror(errno));
        s->pid = 0;
        remove_dir(s);
        return -1;
    }
    return await_ready(s, log, why, whylen);
}
