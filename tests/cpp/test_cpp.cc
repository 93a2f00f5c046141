/*
 * test_cpp.cc — weft/weft.hpp, the C++17 layer: every call of it.
 *
 * cmocka, as the C suites.  Code on workers and in tasks never calls
 * cmocka's asserts (they longjmp to the main thread's frame): it uses
 * CHECK, which counts failures, and each case ends with CLEAN() on the
 * main thread.  Every case runs under alarm(): a hang aborts with the
 * case's name.  Nothing sleeps in place of a condition: waits are on
 * events, channels, joins; the sleeps that are here are what is tested
 * (a timeout's length, a destructor that must outwait one).
 *
 * Allocation counting: this program replaces the global operator new
 * (every build), and malloc too where no sanitizer owns it, so that
 * "small callables cost no allocation" is measured, not assumed.
 */
#include <weft/weft.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

using namespace std::chrono_literals;

/* ------------------------------------------------------------ checks */

static std::atomic<long> failures{0};

#define CHECK(c)                                                          \
    do {                                                                  \
        if (!(c) && failures.fetch_add(1) < 20)                           \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,   \
                         __LINE__, #c);                                   \
    } while (0)

#define CLEAN() assert_int_equal(failures.exchange(0), 0)

/* ---------------------------------------------------- allocation count */

/* Counted while `counting` is set, on every thread: a spawn's allocation
 * may happen on the spawning thread, a body's on a worker. */
static std::atomic<bool> counting{false};
static std::atomic<long> news{0}, mallocs{0};

/* clang's ThreadSanitizer links its run-time statically, and that
 * archive defines the global operator new and delete itself: a program's
 * own would be a second definition.  There the allocation count is not
 * made (test_no_allocation skips); gcc's TSan and both ASans replace them
 * dynamically and count. */
#if defined(__clang__) && defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NEW_COUNTED 0
#endif
#endif
#ifndef NEW_COUNTED
#define NEW_COUNTED 1
#endif

#if NEW_COUNTED
/* Not inlined: gcc would then pair the caller's new with delete's free()
 * and warn of a mismatch (-Wmismatched-new-delete), which it is not. */
__attribute__((noinline)) void *operator new(std::size_t n)
{
    if (counting.load(std::memory_order_relaxed))
        news.fetch_add(1, std::memory_order_relaxed);
    if (void *p = std::malloc(n ? n : 1))
        return p;
    throw std::bad_alloc();
}
__attribute__((noinline)) void operator delete(void *p) noexcept
{
    std::free(p);
}
__attribute__((noinline)) void operator delete(void *p, std::size_t) noexcept
{
    std::free(p);
}
#endif /* NEW_COUNTED */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

#ifndef SANITIZED
/* glibc's own entry points: a program's malloc replaces the library's
 * (the sanitizers' builds have theirs, so only operator new counts
 * there). */
extern "C" void *__libc_malloc(std::size_t);
extern "C" void *malloc(std::size_t n)
{
    if (counting.load(std::memory_order_relaxed))
        mallocs.fetch_add(1, std::memory_order_relaxed);
    return __libc_malloc(n);
}
#define MALLOC_COUNTED true
#else
#define MALLOC_COUNTED false
#endif

/* --------------------------------------------------- watchdog, helpers */

static const char *volatile current_case = "(none)";

static void on_alarm(int)
{
    static const char pre[] = "\nwatchdog: test case hung: ";
    const char *name = current_case;
    ssize_t r = write(2, pre, sizeof pre - 1);
    r = write(2, name, std::strlen(name));
    r = write(2, "\n", 1);
    (void)r;
    std::abort();
}

static int setup(void **state)
{
    current_case = static_cast<const char *>(*state);
    failures.store(0);
    signal(SIGALRM, on_alarm);
    alarm(120);
    return 0;
}

static int teardown(void **)
{
    alarm(0);
    return 0;
}

#define CASE(fn)                                                          \
    cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown,         \
                                             (void *)#fn)

using clk = std::chrono::steady_clock;

static long long ms_since(clk::time_point t0)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(clk::now() -
                                                                 t0)
        .count();
}

/* A gate a task can wait on and anyone can open (weft_event: parks a
 * task, blocks a thread). */
struct gate {
    weft_event ev;
    gate() { weft_event_init(&ev); }
    void open() { weft_event_set(&ev); }
    void wait() { CHECK(weft_event_wait_for(&ev, 60'000'000'000ull) == 0); }
    bool is_open() const { return weft_event_is_set(&ev); }
};

/* Counts its live instances: what a task or a channel fails to destroy,
 * or destroys twice, shows. */
struct tracked {
    static std::atomic<int> live;
    std::string s;
    explicit tracked(std::string v) : s(std::move(v)) { live++; }
    tracked(const tracked &o) : s(o.s) { live++; }
    tracked(tracked &&o) noexcept : s(std::move(o.s)) { live++; }
    tracked &operator=(tracked &&o) noexcept
    {
        s = std::move(o.s);
        return *this;
    }
    tracked &operator=(const tracked &) = default;
    ~tracked() { live--; }
};
std::atomic<int> tracked::live{0};

/* A move-only result and argument. */
struct move_only {
    std::unique_ptr<int> p;
    explicit move_only(int v) : p(std::make_unique<int>(v)) {}
    move_only(move_only &&) = default;
    move_only &operator=(move_only &&) = default;
};

static pthread_t self_thread()
{
    /* Not cached across a wait (the task may have moved): volatile. */
    static pthread_t (*volatile f)() = pthread_self;
    return f();
}

/* ------------------------------------------------------------- errors */

static void test_error_category(void **)
{
    std::error_code ec = weft::make_error_code(-ETIMEDOUT);
    assert_string_equal(ec.category().name(), "weft");
    assert_true(&ec.category() == &weft::category());
    assert_true(ec == std::errc::timed_out);
    assert_true(ec != std::errc::operation_canceled);
    assert_int_equal(ec.value(), ETIMEDOUT);
    assert_string_equal(ec.message().c_str(), weft_strerror(-ETIMEDOUT));
    assert_false(static_cast<bool>(weft::make_error_code(0)));
    assert_false(static_cast<bool>(weft::make_error_code(5)));
    /* A throwing call's code is weft's. */
    try {
        weft::this_task::yield(); /* main: not a task */
        fail_msg("yield on a plain thread did not throw");
    } catch (const std::system_error &e) {
        assert_true(e.code() == std::errc::operation_not_permitted);
        assert_true(&e.code().category() == &weft::category());
    }
    CLEAN();
}

/* -------------------------------------------------------------- pool */

static void test_pool(void **)
{
    std::atomic<int> ran{0};
    {
        weft_pool_opts o{};
        o.threads = 3;
        o.name = "cpp";
        weft::pool p{o};
        assert_int_equal(p.threads(), 3);
        weft::pool q = std::move(p); /* moved: p holds nothing */
        assert_null(p.native_handle());
        assert_non_null(q.native_handle());
        for (int i = 0; i < 100; i++)
            weft::spawn(q, [&ran] {
                weft::this_task::yield();
                ran++;
            }).detach();
        /* The destructor waits for all of them (weft_pool_destroy). */
    }
    assert_int_equal(ran.load(), 100);
    weft::pool p{2};
    weft::spawn(p, [] { return weft::pool::current() != nullptr; })
        .get(); /* in a task, current() names the pool */
    assert_true(weft::spawn(p, [&p] { return weft::pool::current() ==
                                             p.native_handle(); })
                    .get());
    assert_null(weft::pool::current());
    assert_true(p.destroy_for(10s));
    assert_null(p.native_handle());
    p.destroy(); /* nothing left: nothing to do */
    /* Spawning on nothing is an error, and makes nothing. */
    try {
        weft::spawn(static_cast<weft_pool *>(nullptr), [] {});
        fail_msg("spawn on no pool did not throw");
    } catch (const std::system_error &e) {
        assert_true(e.code() == std::errc::invalid_argument);
    }
    CLEAN();
}

/* ----------------------------------------------- spawn, captures, args */

static void test_spawn_captures_args(void **)
{
    weft::pool p{2};
    std::string who = "world";
    int base = 40;
    /* By value and by reference; arguments decay-copied. */
    auto t = weft::spawn(
        p, [who, &base](const std::string &pre, int k) {
            return pre + who + std::to_string(base + k);
        },
        std::string("hello "), 2);
    who = "changed"; /* the task has its own copy */
    assert_string_equal(t.get().c_str(), "hello world42");
    assert_false(t.valid());
    /* Move-only captures and arguments. */
    auto u = std::make_unique<int>(7);
    auto t2 = weft::spawn(
        p, [u = std::move(u)](move_only m, std::unique_ptr<int> v) {
            return *u + *m.p + *v;
        },
        move_only(30), std::make_unique<int>(5));
    assert_int_equal(t2.get(), 42);
    /* A plain function and a pointer argument. */
    struct fn {
        static int twice(int x) { return 2 * x; }
    };
    assert_int_equal(weft::spawn(p, &fn::twice, 21).get(), 42);
    /* With options: its name is the task's. */
    weft_task_opts o{};
    o.name = "named";
    assert_string_equal(
        weft::spawn_with(p.native_handle(), &o,
                         [] { return std::string(weft_task_name(
                                  weft::this_task::current())); })
            .get()
            .c_str(),
        "named");
    CLEAN();
}

/* ------------------------------------------------------ typed results */

static void test_results(void **)
{
    weft::pool p{2};
    assert_int_equal(weft::spawn(p, [] { return 6 * 7; }).get(), 42);
    /* Longer than any small-string buffer: it owns heap memory. */
    std::string big(1000, 'x');
    assert_true(weft::spawn(p, [big] { return big + "y"; }).get() == big + "y");
    move_only m = weft::spawn(p, [] { return move_only(9); }).get();
    assert_int_equal(*m.p, 9);
    std::atomic<int> hit{0};
    weft::spawn(p, [&hit] { hit++; }).get();
    assert_int_equal(hit.load(), 1);
    {
        auto t = weft::spawn(p, [] { return tracked("alive"); });
        tracked r = t.get();
        assert_string_equal(r.s.c_str(), "alive");
        assert_int_equal(tracked::live.load(), 1); /* the room's is gone */
    }
    assert_int_equal(tracked::live.load(), 0);
    /* Over-aligned callable: the frame aligns itself in the room. */
    struct alignas(128) wide {
        int v;
    };
    wide w{5};
    auto t = weft::spawn(p, [w] {
        return reinterpret_cast<std::uintptr_t>(&w) % 128 == 0 ? w.v : -1;
    });
    assert_int_equal(t.get(), 5);
    CLEAN();
}

/* The same kinds of results, got inside tasks (await: parks) at depth. */
static int fib(weft_pool *p, int n)
{
    if (n < 2)
        return n;
    auto a = weft::spawn(p, fib, p, n - 1);
    int b = fib(p, n - 2);
    return a.get() + b;
}

static void test_get_in_task(void **)
{
    weft::pool p{4};
    weft_pool *h = p.native_handle();
    assert_int_equal(weft::spawn(p, fib, h, 18).get(), 2584);
    auto outer = weft::spawn(p, [h] {
        std::vector<weft::task<std::string>> ts;
        for (int i = 0; i < 50; i++)
            ts.push_back(weft::spawn(h, [i] {
                weft::this_task::yield();
                return std::string(100, static_cast<char>('a' + i % 26));
            }));
        std::size_t n = 0;
        for (auto &t : ts)
            n += t.get().size();
        auto mo = weft::spawn(h, [] { return move_only(3); }).get();
        weft::spawn(h, [] {}).get();
        return n + static_cast<std::size_t>(*mo.p);
    });
    assert_int_equal(outer.get(), 5003);
    CLEAN();
}

/* ---------------------------------------------------------- exceptions */

struct my_error : std::runtime_error {
    int where;
    my_error(const char *m, int w) : std::runtime_error(m), where(w) {}
};

static void test_exception_sync_wait(void **)
{
    weft::pool p{2};
    auto t = weft::spawn(p, [] () -> int { throw my_error("boom", 1); });
    try {
        (void)t.get();
        fail_msg("no exception");
    } catch (const my_error &e) {
        assert_string_equal(e.what(), "boom");
        assert_int_equal(e.where, 1);
    }
    assert_false(t.valid());
    /* void and string tasks, and the exception of a copy that throws. */
    auto v = weft::spawn(p, [] { throw std::logic_error("void"); });
    try {
        v.get();
        fail_msg("no exception");
    } catch (const std::logic_error &e) {
        assert_string_equal(e.what(), "void");
    }
    auto s = weft::spawn(p, []() -> std::string { throw 17; });
    try {
        (void)s.get();
        fail_msg("no exception");
    } catch (int e) {
        assert_int_equal(e, 17);
    }
    assert_int_equal(std::uncaught_exceptions(), 0);
    CLEAN();
}

/* An argument whose copy throws: spawn throws that, having made nothing
 * (the copy is made inside weft_spawn_with's fill); the pool goes on. */
struct throws_on_copy {
    static std::atomic<int> live;
    throws_on_copy() { live++; }
    throws_on_copy(const throws_on_copy &) { throw std::runtime_error("copy"); }
    throws_on_copy(throws_on_copy &&) noexcept { live++; }
    ~throws_on_copy() { live--; }
};
std::atomic<int> throws_on_copy::live{0};

/* A result whose move throws once armed: get() throws that, and the task
 * is consumed all the same (weft_task_take's take catches it). */
struct throws_on_move {
    static std::atomic<bool> armed;
    static std::atomic<int> live;
    int v;
    explicit throws_on_move(int x) : v(x) { live++; }
    throws_on_move(throws_on_move &&o) : v(o.v)
    {
        if (armed)
            throw std::runtime_error("move");
        live++;
    }
    ~throws_on_move() { live--; }
};
std::atomic<bool> throws_on_move::armed{false};
std::atomic<int> throws_on_move::live{0};

static void test_exception_copy_move(void **)
{
    weft::pool p{2};
    {
        throws_on_copy c;
        try {
            auto t = weft::spawn(p, [](const throws_on_copy &) { return 1; },
                                 c);
            fail_msg("the copy did not throw");
        } catch (const std::runtime_error &e) {
            assert_string_equal(e.what(), "copy");
        }
        assert_int_equal(throws_on_copy::live.load(), 1); /* c alone */
        /* Moved in, no copy: it runs. */
        assert_int_equal(weft::spawn(p, [](const throws_on_copy &) {
                             return 2;
                         }, throws_on_copy()).get(), 2);
    }
    assert_int_equal(throws_on_copy::live.load(), 0);
    auto t = weft::spawn(p, [] { return throws_on_move(5); });
    t.wait();
    throws_on_move::armed = true;
    try {
        (void)t.get();
        fail_msg("the move did not throw");
    } catch (const std::runtime_error &e) {
        assert_string_equal(e.what(), "move");
    }
    throws_on_move::armed = false;
    assert_false(t.valid());
    assert_int_equal(throws_on_move::live.load(), 0); /* the room's went */
    /* Unread, in the destructor: the room's value is destroyed there. */
    {
        auto u = weft::spawn(p, [] { return throws_on_move(6); });
        u.wait();
        assert_int_equal(throws_on_move::live.load(), 1);
    }
    assert_int_equal(throws_on_move::live.load(), 0);
    CLEAN();
}

/*
 * Throw points on different threads.  The body throws and catches inside
 * itself, moves to the other pool (another thread for sure), throws and
 * catches again, yields on a four-worker pool, then throws out; its
 * awaiter, a task of the first pool, catches it from get(), and so does
 * the main thread for a second such task.  The C++ runtime's per-thread
 * exception state must be clean at each step (std::uncaught_exceptions,
 * and the handler finding the right exception).
 */
static void test_exception_migration(void **)
{
    weft::pool a{4}, b{4};
    weft::pool *bp = &b, *ap = &a;
    auto body = [bp, ap](int tag) -> tracked {
        std::set<pthread_t> threads{self_thread()};
        for (int round = 0; round < 3; round++) {
            try {
                throw my_error("inner", round);
            } catch (const my_error &e) {
                CHECK(e.where == round);
            }
            weft::this_task::schedule(round % 2 ? *ap : *bp);
            threads.insert(self_thread());
            CHECK(std::uncaught_exceptions() == 0);
            for (int y = 0; y < 5; y++)
                weft::this_task::yield();
        }
        CHECK(threads.size() >= 2);
        throw my_error("outer", tag);
    };
    auto awaiter = weft::spawn(a, [&a, body] {
        auto t = weft::spawn(a, body, 7);
        try {
            (void)t.get();
            CHECK(!"no exception");
        } catch (const my_error &e) {
            CHECK(e.where == 7);
            CHECK(std::string(e.what()) == "outer");
        }
        CHECK(std::uncaught_exceptions() == 0);
        return 1;
    });
    assert_int_equal(awaiter.get(), 1);
    auto t = weft::spawn(b, body, 8);
    try {
        (void)t.get();
        fail_msg("no exception");
    } catch (const my_error &e) {
        assert_int_equal(e.where, 8);
    }
    assert_int_equal(tracked::live.load(), 0);
    CLEAN();
}

/* Every worker's count of uncaught exceptions is 0 (64 tasks that yield
 * first: both workers run some). */
static void no_exception_state_left(weft::pool &p)
{
    std::vector<weft::task<int>> probes;
    for (int i = 0; i < 64; i++)
        probes.push_back(weft::spawn(p, [] {
            weft::this_task::yield();
            return std::uncaught_exceptions();
        }));
    for (auto &t : probes)
        CHECK(t.get() == 0);
}

/* A task whose callable throws, and whose captures wait when destroyed
 * (a task<T> still running): the exception still reaches get(), and each
 * thread's exception state is as it was.  Before, the captures were
 * destroyed in the body's catch handler: the wait moved the task to the
 * other worker, current_exception() read that thread's empty state, and
 * get() rethrew a null exception_ptr (a crash). */
static void test_throw_with_waiting_captures(void **)
{
    weft::pool p{2};
    for (int i = 0; i < 200; i++) {
        auto child = weft::spawn(p, [] {
            weft::this_task::sleep_for(100us);
            return 1;
        });
        auto t = weft::spawn(p, [c = std::move(child)]() mutable -> int {
            throw my_error("with a child", 0);
        });
        try {
            (void)t.get();
            fail_msg("no exception");
        } catch (const my_error &e) {
            CHECK(std::string(e.what()) == "with a child");
        }
    }
    no_exception_state_left(p);
    CLEAN();
}

/* A body that throws while it holds a task<T> still running: that
 * task's destructor waits as the exception unwinds, and may continue on
 * the other worker.  The thread's exception state goes with it (the
 * catch in get() sees the exception; no worker's count of uncaught
 * exceptions drifts, which it did, to 1 on one and -1 on the other). */
static void test_unwind_through_waiting_destructor(void **)
{
    weft::pool p{2};
    for (int i = 0; i < 200; i++) {
        auto t = weft::spawn(p, [&p, i]() -> int {
            auto child = weft::spawn(p, [] {
                weft::this_task::sleep_for(100us);
                return 2;
            });
            throw my_error("unwinding", i);
        });
        try {
            (void)t.get();
            fail_msg("no exception");
        } catch (const my_error &e) {
            CHECK(e.where == i);
        }
        CHECK(std::uncaught_exceptions() == 0);
    }
    no_exception_state_left(p);
    CLEAN();
}

/* A task that owns a pool of its own and throws: the pool's destructor
 * (a wait: the task parks while a helper destroys the pool) runs as the
 * exception unwinds, and the task may continue on the other worker; the
 * thread's exception state goes with it (it drifted: uncaught counts of
 * -4 and 4 on the two workers). */
static void test_unwind_through_pool_destructor(void **)
{
    weft::pool a{2};
    std::atomic<int> drifted{0};
    for (int i = 0; i < 100; i++) {
        weft::spawn(a, [&drifted] {
            try {
                weft::pool b{1};
                weft::spawn(b, [] { weft::this_task::sleep_for(200us); })
                    .detach();
                /* Keeps this worker busy meanwhile: the task is likely
                 * to continue on the other. */
                weft::spawn(weft::pool::current(), [] {
                    auto t0 = std::chrono::steady_clock::now();
                    while (std::chrono::steady_clock::now() - t0 < 1ms) {
                    }
                }).detach();
                throw my_error("unwinding", 0);
            } catch (const my_error &) {
            }
            if (std::uncaught_exceptions() != 0)
                drifted++;
        }).get();
    }
    assert_int_equal(drifted.load(), 0);
    no_exception_state_left(a);
    CLEAN();
}

/* ------------------------------------------- wait, get, misuse, cancel */

static void test_wait_get_misuse(void **)
{
    weft::pool p{2};
    auto t = weft::spawn(p, [] { return std::string("once"); });
    t.wait();
    t.wait(); /* again: at once */
    assert_true(t.valid());
    assert_true(static_cast<bool>(t));
    assert_true(t.id() != 0);
    assert_string_equal(t.get().c_str(), "once");
    try {
        (void)t.get();
        fail_msg("get() twice did not throw");
    } catch (const std::system_error &e) {
        assert_true(e.code() == std::errc::invalid_argument);
    }
    weft::task<int> none;
    assert_false(none.valid());
    assert_int_equal(none.id(), 0);
    try {
        none.wait();
        fail_msg("wait() on nothing did not throw");
    } catch (const std::system_error &e) {
        assert_true(e.code() == std::errc::invalid_argument);
    }
    /* get() leaves that check to weft_task_take's -EINVAL. */
    try {
        (void)none.get();
        fail_msg("get() on nothing did not throw");
    } catch (const std::system_error &e) {
        assert_true(e.code() == std::errc::invalid_argument);
    }
    /* cancel(): the task's wait ends with operation_canceled, which its
     * body lets out, and get() rethrows. */
    gate never;
    auto c = weft::spawn(p, [&never] {
        int rc = weft_event_wait(&never.ev);
        if (rc)
            throw std::system_error(weft::make_error_code(rc), "wait");
        return 0;
    });
    c.cancel();
    try {
        (void)c.get();
        fail_msg("no exception");
    } catch (const std::system_error &e) {
        assert_true(e.code() == std::errc::operation_canceled);
    }
    CLEAN();
}

/* ----------------------------------------------------- destructor, detach */

static void test_destructor_waits(void **)
{
    weft::pool p{2};
    std::atomic<bool> done{false};
    {
        auto t = weft::spawn(p, [&done] {
            weft::this_task::sleep_for(30ms);
            done = true;
            return tracked("dropped");
        });
    } /* the destructor waited, and dropped the result */
    assert_true(done.load());
    assert_int_equal(tracked::live.load(), 0);

    /* Move assignment waits for the task it replaces, as std::jthread's. */
    std::atomic<int> first{0};
    auto t = weft::spawn(p, [&first] {
        weft::this_task::sleep_for(20ms);
        first = 1;
    });
    t = weft::spawn(p, [] {});
    assert_int_equal(first.load(), 1);
    t.get();

    /* In a cancelled task, the destructor still waits (yielding), so the
     * reference the inner task captured is alive as long as it runs. */
    gate release;
    std::atomic<bool> in_dtor{false}, inner_done{false};
    auto outer = weft::spawn(p, [&] {
        int local = 5;
        {
            auto inner = weft::spawn(p, [&release, &local, &inner_done] {
                release.wait();
                CHECK(local == 5);
                inner_done = true;
            });
            weft_task_cancel(weft::this_task::current());
            in_dtor = true;
        }
        CHECK(inner_done.load());
        local = 0;
    });
    while (!in_dtor.load())
        std::this_thread::yield();
    release.open();
    outer.get();
    assert_true(inner_done.load());
    CLEAN();
}

static void test_detach(void **)
{
    {
        /* The gates outlive the pool: a detached task may first look at
         * its gate after this block's other locals are gone, while the
         * pool's destructor waits for it. */
        gate g, h;
        weft::pool p{2};
        /* Detached before it ends: the body drops its result itself. */
        auto t = weft::spawn(p, [&g] {
            g.wait();
            return tracked("late");
        });
        t.detach();
        assert_false(t.valid());
        g.open();
        /* Detached after it ended: detach() drops it. */
        auto u = weft::spawn(p, [] { return tracked("early"); });
        u.wait();
        u.detach();
        /* An exception nobody gets, either way round. */
        auto x = weft::spawn(p, [&h] {
            h.wait();
            throw tracked("thrown late");
        });
        x.detach();
        h.open();
        auto y = weft::spawn(p, [] { throw tracked("thrown early"); });
        y.wait();
        y.detach();
        /* Many, racing their ends. */
        for (int i = 0; i < 1000; i++)
            weft::spawn(p, [i] {
                if (i % 3 == 0)
                    throw tracked("x");
                return tracked(std::to_string(i));
            }).detach();
    } /* the pool's destructor waits for them all */
    /* Every result and exception destroyed, none twice. */
    assert_int_equal(tracked::live.load(), 0);
    CLEAN();
}

/* ------------------------------------------------- the room's paths */

/* Each way a call and a result take through the room (weft.hpp, "The
 * room rule"): a call that a byte copy makes (weft_spawn_copy) or one
 * made in the room (weft_spawn_with's fill); a value that comes back as
 * the body's result (in_result) or in the room; and an exception, got or
 * dropped, for each. */
struct pair16 {
    std::uint64_t a, b;
};
struct two_shorts {
    short x, y;
};

template <class F>
static void expect_throw_17(F &&f)
{
    try {
        (void)f();
        fail_msg("no exception");
    } catch (int e) {
        assert_int_equal(e, 17);
    }
}

static void test_result_paths(void **)
{
    using weft::detail::in_result;
    static_assert(in_result<int> && in_result<double> && in_result<void *> &&
                      in_result<two_shorts> && !in_result<pair16> &&
                      !in_result<std::string> && !in_result<void>,
                  "which values ride in the result");
    weft::pool p{2};
    weft_pool *h = p.native_handle();
    std::string word = "word";
    int k = 3;
    for (int round = 0; round < 200; round++) {
        /* Copied calls, each kind of result. */
        CHECK(weft::spawn(h, [k, round] { return k * round; }).get() ==
              3 * round);
        CHECK(weft::spawn(h, [round] { return round / 2.0; }).get() ==
              round / 2.0);
        CHECK(weft::spawn(h, [&k] { return &k; }).get() == &k);
        two_shorts ts = weft::spawn(h, [round] {
                            return two_shorts{static_cast<short>(round), -1};
                        }).get();
        CHECK(ts.x == round && ts.y == -1);
        /* Any bits are a value (an exception is a weft_task_fail
         * failure, not a mark in the result): all ones, and the word that
         * once marked an exception. */
        constexpr std::uint64_t old_mark = 0x9e3779b97f4a7c15u;
        CHECK(weft::spawn(h, [round] {
                  return (round % 2 ? old_mark : ~std::uint64_t(0));
              }).get() == (round % 2 ? old_mark : ~std::uint64_t(0)));
        {
            auto unread = weft::spawn(h, [] { return old_mark; });
        }
        pair16 pr = weft::spawn(h, [round] {
                        return pair16{std::uint64_t(round), ~std::uint64_t(0)};
                    }).get();
        CHECK(pr.a == std::uint64_t(round) && pr.b == ~std::uint64_t(0));
        /* Calls made in the room (a string's copy is no byte copy). */
        CHECK(weft::spawn(h, [word, round] { return int(word.size()) + round; })
                  .get() == 4 + round);
        CHECK(weft::spawn(h, [word] { return word + "s"; }).get() == "words");
        /* Exceptions in place of each kind of result, copied or made. */
        expect_throw_17([&] {
            return weft::spawn(h, [k]() -> int { throw 17 + k - k; }).get();
        });
        expect_throw_17([&] {
            return weft::spawn(h, [word]() -> int {
                       throw 17 + static_cast<int>(word.size()) - 4;
                   }).get();
        });
        expect_throw_17([&] {
            return weft::spawn(h, [k]() -> pair16 { throw 17 + k - k; })
                .get();
        });
        /* Dropped: detached or destroyed unread, thrown or not. */
        weft::spawn(h, [round]() -> int {
            if (round % 2)
                throw tracked("dropped");
            return round;
        }).detach();
        {
            auto t = weft::spawn(h, [round]() -> int {
                if (round % 3 == 0)
                    throw tracked("unread");
                return round;
            });
        }
    }
    /* From inside a task, where a child no worker took runs inline. */
    CHECK(weft::spawn(h, [h] {
              int sum = 0;
              for (int i = 0; i < 100; i++) {
                  sum += weft::spawn(h, [i] { return i; }).get();
                  try {
                      (void)weft::spawn(h, [i]() -> int { throw i; }).get();
                  } catch (int e) {
                      sum -= e;
                  }
              }
              return sum;
          }).get() == 0);
    p.destroy(); /* every detached task has ended */
    assert_int_equal(tracked::live.load(), 0);
    CLEAN();
}

/* ------------------------------------------------------- no allocation */

static void test_no_allocation(void **)
{
    if (!NEW_COUNTED)
        skip(); /* clang's TSan: no operator new of ours (above) */
    weft::pool p{2};
    weft_pool *h = p.native_handle();
    int a = 1;
    long b = 2;
    auto small = [a, b](int k) { return a + b + k; };
    static_assert(weft::fits_room<decltype(small), int>,
                  "a small lambda fits the room");
    /* A std::string result fits: the room's bytes hold the callable, then
     * the result. */
    auto str = [] { return std::string("short"); };
    static_assert(weft::fits_room<decltype(str)>, "a string result fits");
    std::array<char, 200> blob{};
    auto large = [blob] { return static_cast<int>(blob[0]); };
    static_assert(!weft::fits_room<decltype(large)>, "200 bytes do not fit");

    /* Warm up: records, stacks and the pool's caches exist after this. */
    for (int i = 0; i < 2000; i++)
        (void)weft::spawn(h, small, i).get();
    auto measure = [&](auto &&each) {
        news = 0;
        mallocs = 0;
        counting = true;
        for (int i = 0; i < 1000; i++)
            each(i);
        counting = false;
        return news.load() + mallocs.load();
    };
    long n = measure([&](int i) { CHECK(weft::spawn(h, small, i).get() == 3 + i); });
    assert_int_equal(n, 0);
    n = measure([&](int) { CHECK(weft::spawn(h, str).get().size() == 5); });
    assert_int_equal(n, 0);
    /* Inside a task (await, often inline), the same. */
    n = measure([&](int) {
        CHECK(weft::spawn(h, [h, small] {
                  return weft::spawn(h, small, 1).get();
              }).get() == 4);
    });
    assert_int_equal(n, 0);
    /* The counter sees what it should: a room too large is malloc'ed
     * (counted only where malloc is ours), and a new is a new. */
    if (MALLOC_COUNTED) {
        n = measure([&](int) { CHECK(weft::spawn(h, large).get() == 0); });
        assert_true(n >= 1000);
    }
    n = measure([&](int) {
        /* A direct call (a new-expression's pair may be elided). */
        void *volatile q = ::operator new(16);
        ::operator delete(q);
    });
    assert_int_equal(news.load(), 1000); /* (each one's malloc counts too) */
    assert_true(n >= 1000);
    CLEAN();
}

/* ---------------------------------------------------------- this_task */

static void test_this_task(void **)
{
    weft::pool p{2};
    /* sleep_for: at least as long as asked, in a task and on a thread. */
    auto t0 = clk::now();
    weft::spawn(p, [] { weft::this_task::sleep_for(20ms); }).get();
    assert_true(ms_since(t0) >= 20);
    t0 = clk::now();
    weft::this_task::sleep_for(std::chrono::microseconds(15000));
    assert_true(ms_since(t0) >= 15);
    weft::this_task::sleep_for(-5s); /* at once */
    weft::this_task::sleep_until(clk::now() + 1ms);
    /* A cancelled task: operation_canceled, without sleeping. */
    auto c = weft::spawn(p, [] {
        if (weft::this_task::cancelled())
            return false;
        weft_task_cancel(weft::this_task::current());
        if (!weft::this_task::cancelled())
            return false;
        auto s = clk::now();
        try {
            weft::this_task::sleep_for(10s);
            return false;
        } catch (const std::system_error &e) {
            return e.code() == std::errc::operation_canceled &&
                   ms_since(s) < 5000;
        }
    });
    assert_true(c.get());
    /* yield and ids in a task; current() is NULL outside one. */
    auto y = weft::spawn(p, [] {
        std::uint64_t id = weft::this_task::id();
        for (int i = 0; i < 10; i++)
            weft::this_task::yield();
        return id != 0 && id == weft::this_task::id();
    });
    assert_true(y.get());
    assert_null(weft::this_task::current());
    assert_int_equal(weft::this_task::id(), 0);
    assert_false(weft::this_task::cancelled());
    CLEAN();
}

/* ------------------------------------------------------------- mutex */

static void test_mutex(void **)
{
    weft::pool p{4};
    weft::mutex m;
    long counter = 0; /* guarded by m */
    std::vector<weft::task<void>> ts;
    for (int i = 0; i < 16; i++)
        ts.push_back(weft::spawn(p, [&] {
            for (int k = 0; k < 200; k++) {
                std::lock_guard<weft::mutex> g(m);
                long seen = counter;
                if (k % 10 == 0)
                    weft::this_task::yield(); /* hold it across a switch */
                counter = seen + 1;
            }
        }));
    /* The main thread takes its turns too (it blocks). */
    for (int k = 0; k < 200; k++) {
        std::unique_lock<weft::mutex> l(m);
        counter++;
    }
    for (auto &t : ts)
        t.get();
    assert_int_equal(counter, 17 * 200);

    /* try_lock, try_lock_for: false while another holds it, for as long
     * as asked; unique_lock's timed constructor. */
    gate held, done;
    auto holder = weft::spawn(p, [&] {
        std::lock_guard<weft::mutex> g(m);
        held.open();
        done.wait();
    });
    held.wait();
    assert_false(m.try_lock());
    auto t0 = clk::now();
    assert_false(m.try_lock_for(15ms));
    assert_true(ms_since(t0) >= 15);
    {
        std::unique_lock<weft::mutex> l(m, 5ms);
        assert_false(l.owns_lock());
    }
    assert_false(m.try_lock_until(clk::now() + 2ms));
    done.open();
    holder.get();
    assert_true(m.try_lock_for(1s));
    m.unlock();

    /* Owned by the task, not the thread: locked on one pool, unlocked on
     * the other's thread. */
    weft::pool q{1};
    auto mover = weft::spawn(p, [&] {
        std::unique_lock<weft::mutex> l(m);
        pthread_t before = self_thread();
        weft::this_task::schedule(q);
        CHECK(!pthread_equal(before, self_thread()));
        return true; /* l unlocks here, on q's worker */
    });
    assert_true(mover.get());
    assert_true(m.try_lock());
    m.unlock();

    /* std::scoped_lock over two, and relocking throws deadlock. */
    weft::mutex m2;
    {
        std::scoped_lock both(m, m2);
        try {
            m.lock();
            fail_msg("relock did not throw");
        } catch (const std::system_error &e) {
            assert_true(e.code() ==
                        std::errc::resource_deadlock_would_occur);
        }
    }
    assert_true(m.try_lock() && m2.try_lock());
    m.unlock();
    m2.unlock();
    CLEAN();
}

/* ----------------------------------------------------- condition variable */

/* Timeouts past what the clock reaches mean no timeout (to_ns's rule),
 * for the forms that make a deadline too: wait_for with a predicate,
 * wait_until and try_lock_until with a far time point of a coarse
 * duration.  Before, now + seconds::max() overflowed, and wait_for
 * returned false at once. */
static void test_far_deadlines(void **)
{
    weft::pool p{2};
    weft::mutex m;
    weft::condition_variable cv;
    bool ready = false; /* guarded by m */
    std::unique_lock<weft::mutex> lk(m);
    /* It takes m only once wait_for has released it: the predicate is
     * false when the wait starts. */
    auto setter = weft::spawn(p, [&] {
        std::lock_guard<weft::mutex> g(m);
        ready = true;
        cv.notify_all();
    });
    auto t0 = clk::now();
    assert_true(cv.wait_for(lk, std::chrono::seconds::max(),
                            [&] { return ready; }));
    assert_true(ready);
    lk.unlock();
    setter.get();

    using far_point = std::chrono::time_point<clk, std::chrono::hours>;
    lk.lock();
    ready = false;
    auto setter2 = weft::spawn(p, [&] {
        std::lock_guard<weft::mutex> g(m);
        ready = true;
        cv.notify_all();
    });
    assert_true(cv.wait_until(lk, far_point::max(), [&] { return ready; }));
    lk.unlock();
    setter2.get();
    assert_true(m.try_lock_until(far_point::max()));
    m.unlock();
    /* A past time point: no wait. */
    assert_false(cv.wait_until(lk = std::unique_lock<weft::mutex>(m),
                               far_point{}, [] { return false; }));
    lk.unlock();
    CHECK(ms_since(t0) < 60'000);
    CLEAN();
}

static void test_condvar(void **)
{
    weft::pool p{2};
    weft::mutex m;
    weft::condition_variable cv;
    std::vector<int> q; /* guarded by m */
    bool finished = false;
    auto consumer = weft::spawn(p, [&] {
        long sum = 0;
        std::unique_lock<weft::mutex> l(m);
        for (;;) {
            cv.wait(l, [&] { return !q.empty() || finished; });
            if (q.empty())
                break;
            sum += q.back();
            q.pop_back();
        }
        return sum;
    });
    auto producer = weft::spawn(p, [&] {
        for (int i = 1; i <= 500; i++) {
            std::lock_guard<weft::mutex> g(m);
            q.push_back(i);
            cv.notify_one();
        }
    });
    producer.get();
    {
        std::lock_guard<weft::mutex> g(m);
        finished = true;
    }
    cv.notify_all();
    assert_int_equal(consumer.get(), 500 * 501 / 2);

    /* wait_for with a predicate that never holds: false, after the time. */
    std::unique_lock<weft::mutex> l(m);
    auto t0 = clk::now();
    assert_false(cv.wait_for(l, 20ms, [] { return false; }));
    assert_true(ms_since(t0) >= 20);
    assert_true(l.owns_lock());
    assert_true(cv.wait_for(l, 1ms) == std::cv_status::timeout);
    /* ... and true at once when it holds, or once notified in time. */
    assert_true(cv.wait_for(l, 1h, [] { return true; }));
    bool flag = false;
    auto notifier = weft::spawn(p, [&] {
        std::lock_guard<weft::mutex> g(m);
        flag = true;
        cv.notify_all();
    });
    t0 = clk::now();
    assert_true(cv.wait_for(l, 60s, [&] { return flag; }));
    assert_true(ms_since(t0) < 30000);
    l.unlock();
    notifier.get();

    /* A cancelled task's wait throws, holding the lock again. */
    auto c = weft::spawn(p, [&] {
        std::unique_lock<weft::mutex> lk(m);
        weft_task_cancel(weft::this_task::current());
        try {
            cv.wait(lk);
            return false;
        } catch (const std::system_error &e) {
            return e.code() == std::errc::operation_canceled &&
                   lk.owns_lock();
        }
    });
    assert_true(c.get());
    CLEAN();
}

/* ------------------------------------------------------------ channel */

/* A value whose move throws when told to; every one made is destroyed
 * once. */
struct fragile {
    static inline std::atomic<int> made{0}, destroyed{0};
    static inline bool throw_on_move = false, throw_on_assign = false;
    int v;
    explicit fragile(int x) : v(x) { made++; }
    fragile(const fragile &o) : v(o.v) { made++; }
    fragile(fragile &&o) : v(o.v)
    {
        if (throw_on_move)
            throw my_error("move", v);
        made++;
    }
    fragile &operator=(fragile &&o)
    {
        if (throw_on_assign)
            throw my_error("move-assign", o.v);
        v = o.v;
        return *this;
    }
    fragile &operator=(const fragile &) = default;
    ~fragile() { destroyed++; }
};

/* A receive whose move out throws loses the value to the exception and
 * leaks nothing; a send that fails and whose give-back throws frees the
 * box (both leaked the box). */
static void channel_move_throws()
{
    {
        weft::channel<fragile> ch(1);
        CHECK(ch.send(fragile(1)));
        fragile::throw_on_move = true;
        try {
            (void)ch.recv();
            fail_msg("no exception");
        } catch (const my_error &e) {
            CHECK(e.where == 1);
        }
        fragile::throw_on_move = false;
        CHECK(ch.send(fragile(2))); /* the one above left: room again */
        fragile f(3);
        fragile::throw_on_assign = true;
        try {
            (void)ch.try_send(f); /* full: v gets its value back */
            fail_msg("no exception");
        } catch (const my_error &e) {
            CHECK(e.where == 3);
        }
        fragile::throw_on_assign = false;
    }
    CHECK(fragile::made.load() == fragile::destroyed.load());
}

static void test_channel(void **)
{
    channel_move_throws();
    weft::pool p{2};
    {
        /* Strings through a buffered channel, read by range-for. */
        weft::channel<std::string> ch(4);
        auto producer = weft::spawn(p, [&ch] {
            for (int i = 0; i < 1000; i++)
                CHECK(ch.send(std::string(50, 'a') + std::to_string(i)));
            ch.close();
        });
        int n = 0;
        for (std::string &s : ch) {
            CHECK(s == std::string(50, 'a') + std::to_string(n));
            n++;
        }
        assert_int_equal(n, 1000);
        producer.get();
        /* Closed: send says false, receive nullopt. */
        assert_false(ch.send("late"));
        assert_false(ch.recv().has_value());
        std::string v = "kept";
        assert_true(ch.try_send(v) == weft::channel_status::closed);
        assert_string_equal(v.c_str(), "kept"); /* not sent: still ours */
    }
    {
        /* Move-only values, rendezvous, consumer in a task. */
        weft::channel<std::unique_ptr<int>> ch;
        auto consumer = weft::spawn(p, [&ch] {
            long sum = 0;
            while (auto v = ch.recv())
                sum += **v;
            return sum;
        });
        for (int i = 1; i <= 100; i++)
            assert_true(ch.send(std::make_unique<int>(i)));
        ch.close();
        assert_int_equal(consumer.get(), 5050);
    }
    {
        /* Values that fit a pointer travel in it: 0 included. */
        weft::channel<int> ch(3);
        assert_true(ch.send(0));
        assert_true(ch.send(-1));
        int out = 99;
        assert_true(ch.try_recv(out) == weft::channel_status::ok);
        assert_int_equal(out, 0);
        assert_true(ch.recv_for(out, 1s) == weft::channel_status::ok);
        assert_int_equal(out, -1);
        out = 99;
        assert_true(ch.try_recv(out) == weft::channel_status::would_block);
        auto t0 = clk::now();
        assert_true(ch.recv_for(out, 15ms) == weft::channel_status::timeout);
        assert_true(ms_since(t0) >= 15);
        assert_int_equal(out, 99); /* untouched */
        for (int i = 0; i < 3; i++)
            assert_true(ch.send(i));
        int extra = 7;
        assert_true(ch.try_send(extra) == weft::channel_status::would_block);
        assert_true(ch.send_for(extra, 5ms) == weft::channel_status::timeout);
        ch.close();
        assert_true(ch.recv_for(out, 1s) == weft::channel_status::ok);
        assert_int_equal(out, 0);
    }
    {
        /* A full channel's failed sends give the value back; the
         * destructor drops what is left in it. */
        weft::channel<tracked> ch(2);
        assert_true(ch.send(tracked("one")));
        assert_true(ch.send(tracked("two")));
        tracked t("three");
        assert_true(ch.try_send(t) == weft::channel_status::would_block);
        assert_string_equal(t.s.c_str(), "three");
        assert_true(ch.send_for(t, 1ms) == weft::channel_status::timeout);
        assert_string_equal(t.s.c_str(), "three");
        assert_int_equal(tracked::live.load(), 3);
    }
    assert_int_equal(tracked::live.load(), 0);
    {
        /* Types the plain send and recv take that have no default
         * constructor, or no assignment: a trivially copyable pair that
         * travels in the pointer, a reference_wrapper, a struct with a
         * const member. */
        struct point {
            point(int a, int b) : x(a), y(b) {}
            int x, y;
        };
        struct named {
            const std::string name;
        };
        int target = 5;
        weft::channel<point> pts(1);
        weft::channel<std::reference_wrapper<int>> refs(1);
        weft::channel<named> names(1);
        assert_true(pts.send(point(3, -4)));
        assert_true(refs.send(std::ref(target)));
        assert_true(names.send(named{"const"}));
        auto pt = pts.recv();
        assert_true(pt && pt->x == 3 && pt->y == -4);
        auto r = refs.recv();
        assert_true(r && &r->get() == &target);
        auto nm = names.recv();
        assert_true(nm && nm->name == "const");
    }
    {
        /* A task whose function returns a const value gives a plain one. */
        auto t = weft::spawn(p, []() -> const std::string { return "c"; });
        static_assert(std::is_same_v<decltype(t), weft::task<std::string>>);
        assert_string_equal(t.get().c_str(), "c");
    }
    {
        /* A cancelled receiver's wait throws. */
        weft::channel<int> ch;
        auto c = weft::spawn(p, [&ch] {
            weft_task_cancel(weft::this_task::current());
            try {
                (void)ch.recv();
                return false;
            } catch (const std::system_error &e) {
                return e.code() == std::errc::operation_canceled;
            }
        });
        assert_true(c.get());
    }
    CLEAN();
}

/* ---------------------------------------------------------------- io */

static void test_io(void **)
{
    weft::pool p{2};
    /* A listening socket on loopback; a task accepts, another connects. */
    int lfd = weft::io::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof a;
    assert_int_equal(bind(lfd, reinterpret_cast<sockaddr *>(&a), alen), 0);
    assert_int_equal(listen(lfd, 8), 0);
    assert_int_equal(getsockname(lfd, reinterpret_cast<sockaddr *>(&a), &alen),
                     0);

    /* Nobody connects: accept's timeout, thrown and as an error_code. */
    auto t0 = clk::now();
    try {
        (void)weft::io::accept(lfd, nullptr, nullptr, 15ms);
        fail_msg("accept did not time out");
    } catch (const std::system_error &e) {
        assert_true(e.code() == std::errc::timed_out);
    }
    assert_true(ms_since(t0) >= 15);
    std::error_code ec;
    assert_int_equal(weft::io::accept(lfd, nullptr, nullptr, 1ms, ec), -1);
    assert_true(ec == std::errc::timed_out);

    auto server = weft::spawn(p, [lfd] {
        int c = weft::io::accept(lfd, nullptr, nullptr, 10s);
        char buf[64];
        std::string got;
        /* Quiet for a while: read's timeout, as an error_code. */
        std::error_code e;
        std::size_t n = weft::io::read(c, buf, sizeof buf, 10ms, e);
        CHECK(n == 0 && e == std::errc::timed_out);
        while (got.size() < 5) {
            n = weft::io::read(c, buf, sizeof buf, 10s);
            if (n == 0)
                break;
            got.append(buf, n);
        }
        CHECK(weft::io::wait_fd(c, WEFT_OUT, 10s) & WEFT_OUT);
        weft::io::write(c, got.data(), got.size(), 10s);
        weft::io::close(c);
        return got;
    });
    auto client = weft::spawn(p, [a] {
        int fd = weft::io::socket(AF_INET, SOCK_STREAM, 0);
        weft::io::connect(fd, reinterpret_cast<const sockaddr *>(&a),
                          sizeof a, 10s);
        weft::this_task::sleep_for(30ms); /* the server's read times out */
        CHECK(weft::io::write_some(fd, "hel", 3) >= 1);
        weft::io::write(fd, "lo", 2);
        char buf[8];
        std::size_t got = 0;
        while (got < 5) {
            std::size_t n = weft::io::read(fd, buf + got, sizeof buf - got, 10s);
            if (n == 0)
                break;
            got += n;
        }
        weft::io::close(fd);
        return std::string(buf, got);
    });
    /* "hello" arrives in 3 + 2 bytes, or fewer pieces. */
    assert_string_equal(server.get().c_str(), "hello");
    assert_string_equal(client.get().c_str(), "hello");

    /* Bad fds: thrown, or an error_code. */
    try {
        weft::io::close(-1);
        fail_msg("close(-1) did not throw");
    } catch (const std::system_error &e) {
        assert_true(e.code() == std::errc::bad_file_descriptor);
    }
    weft::io::close(-1, ec);
    assert_true(ec == std::errc::bad_file_descriptor);
    char c;
    assert_int_equal(weft::io::read(-1, &c, 1, ec), 0);
    assert_true(ec == std::errc::bad_file_descriptor);

    /* A socketpair handed to weft, then a task that waits on it. */
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    weft::io::adopt(sv[0]);
    weft::io::adopt(sv[1], ec);
    assert_false(static_cast<bool>(ec));
    auto r = weft::spawn(p, [fd = sv[0]] {
        unsigned ev = weft::io::wait_fd(fd, WEFT_IN, 10s);
        char b = 0;
        CHECK(weft::io::read(fd, &b, 1) == 1);
        return ev == WEFT_IN && b == 'z';
    });
    weft::io::write(sv[1], "z", 1);
    assert_true(r.get());
    weft::io::close(sv[0]);
    weft::io::close(sv[1]);
    weft::io::close(lfd);
    CLEAN();
}

int main()
{
    setvbuf(stdout, nullptr, _IOLBF, 0);
    if (const char *f = std::getenv("WT_FILTER"); f && *f)
        cmocka_set_test_filter(f);
    const struct CMUnitTest tests[] = {
        CASE(test_error_category),
        CASE(test_pool),
        CASE(test_spawn_captures_args),
        CASE(test_results),
        CASE(test_get_in_task),
        CASE(test_exception_sync_wait),
        CASE(test_exception_copy_move),
        CASE(test_exception_migration),
        CASE(test_throw_with_waiting_captures),
        CASE(test_unwind_through_waiting_destructor),
        CASE(test_unwind_through_pool_destructor),
        CASE(test_wait_get_misuse),
        CASE(test_destructor_waits),
        CASE(test_detach),
        CASE(test_result_paths),
        CASE(test_no_allocation),
        CASE(test_this_task),
        CASE(test_mutex),
        CASE(test_far_deadlines),
        CASE(test_condvar),
        CASE(test_channel),
        CASE(test_io),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
