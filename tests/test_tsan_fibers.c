/*
 * test_tsan_fibers.c — under ThreadSanitizer, the contexts made one after
 * another on one stack run as the stack's one TSan fiber, and each starts
 * with the shadow call stack the first had (src/ctx/sanitizer.h).
 *
 * A context's entry function never returns, so the frames it leaves on its
 * fiber's shadow stack must be popped by its last switch; if they were
 * not, each context on a reused stack would start one or two frames deeper
 * than the one before.  The shadow stack shows in a race report: the
 * stack of the access that TSan catches is a copy of it.  So each case
 * runs ROUNDS contexts on one stack in a child process (tests/death.h),
 * one of which reads a word that another thread wrote without any
 * synchronisation, and counts the frames of that read in the report; the
 * read made in the last context must show as many as the one made in the
 * first.  The child also checks that the last context ran as the same
 * fiber as the first, or the case would show nothing.  The cases end
 * contexts in each way weft has: a coroutine's body returns, or it is
 * destroyed while suspended; a task ends to its worker's scheduler, or
 * straight to the task that awaits it.
 *
 * The children are forked before this process has used weft: the cached
 * stacks' fibers count as threads to TSan, and a fork of a process with
 * more than one thread gets no race detection (docs/testing.md).
 *
 * Other builds have no TSan fibers: the program skips (77).
 */
#include <weft/weft.h>

#include "ctx/sanitizer_build.h"
#include "death.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef WEFT_TSAN

void *__tsan_get_current_fiber(void);

#define P(x) ((void *)(intptr_t)(x))
#define I(p) ((intptr_t)(p))

enum { ROUNDS = 100 };

/* The child's exit codes other than TSan's (66) and death.h's. */
enum { CHILD_NO_RACE = 3, CHILD_OTHER_FIBER = 4, CHILD_FAILED = 5 };

/* Which round races: set before the fork. */
static int race_round;

/* The race: a thread writes racy_word, then says so through a relaxed
 * atomic, which orders nothing for TSan; the context then reads it. */
static long racy_word;
static atomic_int racy_written;
static void *first_fiber;

static void *writer(void *arg)
{
    racy_word = 1;
    atomic_store_explicit(&racy_written, 1, memory_order_relaxed);
    return arg;
}

static void start_writer(void)
{
    pthread_t th;
    if (pthread_create(&th, NULL, writer, NULL) != 0)
        _exit(CHILD_FAILED);
    pthread_detach(th);
}

__attribute__((noinline)) static long racy_read(void)
{
    while (!atomic_load_explicit(&racy_written, memory_order_relaxed))
        sched_yield();
    return *(volatile long *)&racy_word;
}

/* What each context does: in round 0 note the fiber; in the racing round
 * check the fiber and race. */
static void in_round(int round)
{
    if (round == 0)
        first_fiber = __tsan_get_current_fiber();
    if (round != race_round)
        return;
    if (__tsan_get_current_fiber() != first_fiber)
        _exit(CHILD_OTHER_FIBER);
    racy_read();
}

/*
 * Run `child` with the race in round `round`; return the number of frames
 * of the racing read in TSan's report (its first stack).  The child dies
 * of the report (halt_on_error) or, if TSan goes on, ends with
 * CHILD_NO_RACE.
 */
static int report_frames(void (*child)(void), int round)
{
    struct death d;
    race_round = round;
    death_run(child, &d);
    bool other_fiber = WIFEXITED(d.status) &&
                       WEXITSTATUS(d.status) == CHILD_OTHER_FIBER;
    if (other_fiber)
        fprintf(stderr, "round %d ran as another fiber than round 1\n",
                round + 1);
    assert_false(other_fiber);
    const char *at = strstr(d.err, "WARNING: ThreadSanitizer: data race");
    const char *head = at ? strstr(at, "Read of size") : NULL;
    const char *line = head ? strchr(head, '\n') : NULL;
    int frames = 0;
    while (line && strncmp(line + 1, "    #", 5) == 0) {
        frames++;
        line = strchr(line + 1, '\n');
    }
    if (!frames)
        fprintf(stderr, "round %d: no race report; child status %#x, "
                "stderr:\n%s\n", round + 1, d.status, d.err);
    assert_true(frames > 0);
    return frames;
}

/* A case: the child that runs its ROUNDS contexts. */
struct depth_case {
    void (*child)(void);
};

/* The read in the last round shows as many frames as in the first. */
static void test_same_depth(void **state)
{
    void (*child)(void) = ((const struct depth_case *)*state)->child;
    int first = report_frames(child, 0);
    int last = report_frames(child, ROUNDS - 1);
    if (first != last)
        fprintf(stderr, "the read in context 1 shows %d frames, in context "
                "%d %d\n", first, ROUNDS, last);
    assert_int_equal(first, last);
}

/* ------------------------------------------------------------------ */
/* Standalone coroutines, on the child's main thread                    */

/* arg: the round, and bit 16 to yield once before returning. */
static void *co_body(void *arg)
{
    in_round((int)(I(arg) & 0xffff));
    if (I(arg) & 0x10000)
        weft_coro_yield(NULL, NULL);
    return NULL;
}

static void coroutines(intptr_t yield)
{
    start_writer();
    for (int i = 0; i < ROUNDS; i++) {
        weft_coro *co;
        if (weft_coro_create(&co, co_body, NULL) != 0 ||
            weft_coro_resume(co, P(i | yield), NULL) != 0 ||
            weft_coro_destroy(co) != 0)
            _exit(CHILD_FAILED);
    }
    _exit(CHILD_NO_RACE);
}

static void coroutines_that_return(void)
{
    coroutines(0);
}

/* The destroy of a suspended coroutine runs it to its end. */
static void coroutines_destroyed_suspended(void)
{
    coroutines(0x10000);
}

/* ------------------------------------------------------------------ */
/* Tasks, on one worker: every task's stack is the last one freed       */

/* arg: the round, and bit 16 to yield once first, so that the task ends
 * after its awaiter has parked on it and switches straight to it. */
static void *task_body(void *arg)
{
    if (I(arg) & 0x10000)
        weft_yield();
    in_round((int)(I(arg) & 0xffff));
    return arg;
}

static weft_pool *one_worker(void)
{
    weft_pool_opts opts = {.threads = 1};
    weft_pool *p = NULL;
    if (weft_pool_create(&p, &opts) != 0)
        _exit(CHILD_FAILED);
    return p;
}

static void tasks_ending_to_the_scheduler(void)
{
    weft_pool *p = one_worker();
    start_writer();
    for (int i = 0; i < ROUNDS; i++) {
        weft_task *t;
        if (weft_spawn(&t, p, task_body, P(i), NULL) != 0 ||
            weft_sync_wait(t, NULL) != 0)
            _exit(CHILD_FAILED);
    }
    _exit(CHILD_NO_RACE);
}

/* Awaits ROUNDS children one at a time; each starts when the parent
 * yields to it, yields back, and ends once the parent awaits it. */
static void *parent(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        weft_task *child;
        void *r = NULL;
        if (weft_spawn(&child, weft_pool_current(), task_body,
                       P(i | 0x10000), NULL) != 0)
            return P(-1);
        weft_yield();
        if (weft_await(child, &r) != 0 || I(r) != (i | 0x10000))
            return P(-1);
    }
    return NULL;
}

static void tasks_ending_to_their_awaiter(void)
{
    weft_pool *p = one_worker();
    start_writer();
    weft_task *t;
    void *r = P(-1);
    if (weft_spawn(&t, p, parent, NULL, NULL) != 0 ||
        weft_sync_wait(t, &r) != 0 || r != NULL)
        _exit(CHILD_FAILED);
    _exit(CHILD_NO_RACE);
}

#define DEPTH_CASE(child)                                                \
    {                                                                    \
        #child, test_same_depth, NULL, NULL,                             \
            (void *)&(const struct depth_case){child},                   \
    }

int main(void)
{
    const struct CMUnitTest tests[] = {
        DEPTH_CASE(coroutines_that_return),
        DEPTH_CASE(coroutines_destroyed_suspended),
        DEPTH_CASE(tasks_ending_to_the_scheduler),
        DEPTH_CASE(tasks_ending_to_their_awaiter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else

int main(void)
{
    return 77; /* not a ThreadSanitizer build: no fibers */
}

#endif
