/*
 * stress_runq.c — the local run queue (sched/runq.h) alone, attacked: one
 * owner pushes, pops and drops at the bottom while thieves steal from the
 * top, and every entry must be taken exactly once.
 *
 * The entries are addresses of this test's items (the deque stores
 * pointers and never follows them).  The owner pushes items in order;
 * when the ring is full it takes the older half with take_oldest (as the
 * pool spills to its global queue); between pushes it pops, or peeks at the k
 * newest and drops them with drop_bottom, at random, each mix in its own
 * phase: mostly pushes (the ring full, push's cached top read again and
 * again), as many pops as pushes (the ring near empty, where pop and a
 * thief race for the last entry), and drops (drop_bottom against steals
 * reaching down to its entries).  Every taker, owner or thief, counts the
 * item it took; an item taken twice, or never, or a NULL taken, fails.
 * Three thieves on a 2-core machine: preempted thieves hold stale tops.
 */
#include "stress.h"

#include "sched/runq.h"

enum { ITEMS = 2000000, THIEVES = 3 };

struct item {
    atomic_uint taken;
};

static struct item *items;
static struct weft__runq q;
static atomic_bool owner_done;
static atomic_ulong stolen;

static struct weft__task *entry(size_t i)
{
    return (struct weft__task *)(void *)&items[i];
}

static void take(struct weft__task *t)
{
    CHECK(t != NULL);
    if (!t)
        return;
    struct item *it = (struct item *)(void *)t;
    CHECK(it >= items && it < items + st_scaled(ITEMS));
    unsigned before = atomic_fetch_add_explicit(&it->taken, 1,
                                                memory_order_relaxed);
    CHECK_EQ(before, 0u);
}

static void *thief(void *arg)
{
    (void)arg;
    unsigned long n = 0;
    for (;;) {
        bool done = atomic_load_explicit(&owner_done, memory_order_acquire);
        struct weft__task *t = weft__runq_steal(&q);
        if (t) {
            take(t);
            n++;
        } else if (done && weft__runq_len(&q) == 0) {
            break;
        }
    }
    atomic_fetch_add(&stolen, n);
    return NULL;
}

static uint64_t rng = 0x243F6A8885A308D3ull;

static unsigned rand_below(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

enum mix { PUSHES, POPS, DROPS };

/* The owner's side of one phase: items [from, to). */
static void own(size_t from, size_t to, enum mix mix)
{
    for (size_t i = from; i < to; i++) {
        while (!weft__runq_push(&q, entry(i))) {
            /* Full: move the older half out with one CAS, as the pool's
             * spill does (sched/pool.c, overflow). */
            uint32_t from;
            uint32_t n = weft__runq_take_oldest(&q, WEFT__RUNQ_SIZE / 2, &from);
            for (uint32_t k = 0; k < n; k++)
                take(weft__runq_at(&q, from + k));
        }
        unsigned r = rand_below(16);
        if (mix == POPS && r < 15) {
            struct weft__task *t = weft__runq_pop(&q);
            if (t)
                take(t);
        } else if (mix == DROPS && r < 8) {
            uint32_t k = 1 + rand_below(3);
            struct weft__task *seen[3];
            uint32_t have = 0;
            while (have < k && (seen[have] = weft__runq_peek_below(&q, have)))
                have++;
            if (have == k && weft__runq_drop_bottom(&q, k))
                for (uint32_t j = 0; j < k; j++)
                    take(seen[j]);
        }
        if ((i & 4095) == 0)
            st_tick();
    }
}

int main(void)
{
    st_start("stress_runq", 300);
    size_t n = (size_t)st_scaled(ITEMS);
    items = calloc(n, sizeof *items);
    REQUIRE(items != NULL);
    weft__runq_init(&q);
    pthread_t th[THIEVES];
    for (int i = 0; i < THIEVES; i++)
        REQUIRE_EQ(pthread_create(&th[i], NULL, thief, NULL), 0);

    static const char *const names[] = {"mostly pushes", "pops",
                                        "drop_bottom"};
    uint64_t t0 = st_now_ns();
    size_t third = n / 3;
    for (int m = 0; m < 3; m++) {
        st_phase = names[m];
        own((size_t)m * third, m == 2 ? n : (size_t)(m + 1) * third,
            (enum mix)m);
    }
    st_phase = "owner pops the rest";
    struct weft__task *t;
    while ((t = weft__runq_pop(&q)))
        take(t);
    atomic_store_explicit(&owner_done, true, memory_order_release);
    st_phase = "thieves finish";
    for (int i = 0; i < THIEVES; i++)
        pthread_join(th[i], NULL);
    st_report("entries", (long)n, t0);

    size_t never = 0;
    for (size_t i = 0; i < n; i++)
        never += atomic_load(&items[i].taken) == 0;
    printf("stress_runq: %lu of %zu stolen by the thieves; %zu never taken\n",
           (unsigned long)atomic_load(&stolen), n, never);
    CHECK_EQ(never, (size_t)0);
    CHECK_EQ(weft__runq_len(&q), 0u);
    free(items);
    return st_finish();
}
