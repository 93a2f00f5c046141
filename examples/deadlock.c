/*
 * deadlock.c — a program that deadlocks on purpose, to look inside it
 * (docs/debugging.md walks through the dump, gdb and the trace with it).
 *
 * Five tasks on a pool "deadlock" of two workers, each parked on its own
 * kind of wait:
 *   "keeper"   takes the mutex, then waits for a message on a channel
 *              that nobody sends, holding the mutex;
 *   "locker"   waits for the mutex, which keeper holds;
 *   "joiner"   awaits locker;
 *   a reader   waits to read a socket nobody writes to (it names itself,
 *              "reader fd N", with weft_task_set_name);
 *   "napper"   sleeps for an hour.
 * main waits until weft_pool_stats counts them all parked, says so, and
 * then, by its argument:
 *   (none)     calls weft_pool_destroy, which waits for the tasks to end:
 *              deadlocked for good (WEFT_DUMP_SIGNAL, gdb -p, kill);
 *   --dump     writes weft_pool_dump to stdout, then resolves it;
 *   --resolve  resolves it: sends the message, writes to the socket,
 *              cancels the nap; every task ends and the program exits 0.
 */
#include <weft/weft.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static weft_pool *pool;
static weft_mutex mutex;
static weft_chan *chan;
static int sock[2];

static void *keeper(void *arg)
{
    (void)arg;
    void *msg;
    weft_mutex_lock(&mutex);
    int rc = weft_chan_recv(chan, &msg); /* holding the mutex */
    weft_mutex_unlock(&mutex);
    return (void *)(long)rc;
}

static void *locker(void *arg)
{
    (void)arg;
    int rc = weft_mutex_lock(&mutex);
    if (rc == 0)
        weft_mutex_unlock(&mutex);
    return (void *)(long)rc;
}

static void *joiner(void *arg)
{
    void *r;
    return (void *)(long)weft_await(arg, &r);
}

static void *reader(void *arg)
{
    (void)arg;
    char name[32], c;
    snprintf(name, sizeof name, "reader fd %d", sock[0]);
    weft_task_set_name(name);
    return (void *)(long)weft_read(sock[0], &c, 1);
}

static void *napper(void *arg)
{
    (void)arg;
    return (void *)(long)weft_sleep(3600ull * 1000000000u);
}

static int spawn(weft_task **out, weft_fn fn, void *arg, const char *name)
{
    weft_task_opts o = {.name = name};
    int err = weft_spawn(out, pool, fn, arg, &o);
    if (err)
        fprintf(stderr, "deadlock: weft_spawn: %s\n", weft_strerror(err));
    return err;
}

/* Whether all five are parked where they should be, within 10 s. */
static int all_parked(void)
{
    for (int i = 0; i < 10000; i++) {
        struct weft_pool_stats s = {.size = sizeof s};
        if (weft_pool_stats(pool, &s) == 0 && s.parked_mutex == 1 &&
            s.parked_chan_recv == 1 && s.parked_await == 1 &&
            s.parked_fd_read == 1 && s.parked_sleep == 1)
            return 1;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    bool help = strcmp(mode, "--help") == 0 || strcmp(mode, "-h") == 0;
    if (help || argc > 2 ||
        (argc == 2 && strcmp(mode, "--dump") != 0 &&
         strcmp(mode, "--resolve") != 0)) {
        fprintf(help ? stdout : stderr,
                "usage: deadlock [--dump | --resolve]\n");
        return help && argc == 2 ? 0 : 2;
    }
    weft_pool_opts po = {.threads = 2, .name = "deadlock"};
    int err = weft_pool_create(&pool, &po);
    if (!err)
        err = weft_chan_create(&chan, 0);
    if (err) {
        fprintf(stderr, "deadlock: %s\n", weft_strerror(err));
        return 1;
    }
    weft_mutex_init(&mutex);
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock) != 0 ||
        weft_fd_adopt(sock[0]) != 0) {
        perror("deadlock: socketpair");
        return 1;
    }

    weft_task *k, *l, *j, *r, *n;
    if (spawn(&k, keeper, NULL, "keeper"))
        return 1;
    /* The locker only once the keeper holds the mutex. */
    while (weft_mutex_trylock(&mutex) == 0) {
        weft_mutex_unlock(&mutex);
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    if (spawn(&l, locker, NULL, "locker") || spawn(&j, joiner, l, "joiner") ||
        spawn(&r, reader, NULL, NULL) || spawn(&n, napper, NULL, "napper"))
        return 1;
    if (!all_parked()) {
        fprintf(stderr, "deadlock: the tasks did not all park\n");
        return 1;
    }
    printf("deadlocked: 5 tasks parked (pid %ld)\n", (long)getpid());
    fflush(stdout);

    if (!*mode) {
        /* Waits for tasks that wait for each other: forever. */
        weft_pool_destroy(pool);
        return 1;
    }
    if (strcmp(mode, "--dump") == 0 && weft_pool_dump(pool, stdout) != 0)
        return 1;

    /* Resolve it, from this plain thread. */
    void *v;
    if (weft_chan_send(chan, "go") != 0 || write(sock[1], "x", 1) != 1 ||
        weft_task_cancel(n) != 0)
        return 1;
    /* What each returns: 0, 0, one byte read, cancelled. */
    weft_task *mine[] = {k, j, r, n};
    long want[] = {0, 0, 1, -ECANCELED};
    int bad = 0;
    for (int i = 0; i < 4; i++)
        bad |= weft_sync_wait(mine[i], &v) != 0 || (long)v != want[i];
    bad |= weft_pool_destroy(pool) != 0;
    bad |= weft_chan_destroy(chan) != 0;
    weft_close(sock[0]);
    close(sock[1]);
    printf(bad ? "resolve failed\n" : "resolved\n");
    return bad;
}
