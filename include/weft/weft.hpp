/*
 * weft/weft.hpp — a header-only C++17 layer over weft's C API.
 *
 *   weft::pool p{4};
 *   std::string who = "world";
 *   auto t = weft::spawn(p, [who](int n) { return who + std::to_string(n); }, 7);
 *   std::string s = t.get();            // in a task: awaits; else blocks
 *
 * What is here: weft::pool (RAII over weft_pool), weft::spawn and
 * weft::task<T> (a typed, move-only handle), weft::this_task (yield,
 * sleep_for, schedule), weft::mutex and weft::condition_variable (usable
 * with std::lock_guard, std::unique_lock and std::scoped_lock),
 * weft::channel<T> (movable T, close, range-for), the socket calls of
 * weft/io.h with std::chrono timeouts (weft::io), and weft's
 * std::error_category.  Nothing is compiled: the layer is templates and
 * inline functions over the C calls; a C++17 compiler and libweft suffice.
 *
 * Errors.  A call that fails throws std::system_error whose code() is in
 * weft::category() (its value the positive errno, its message
 * weft_strerror's), and compares equal to the std::errc of the same value
 * (e.g. std::errc::operation_canceled).  As in the C API, a call that
 * throws has changed nothing (weft/weft.h, "Errors").  Outcomes that are
 * not failures are return values instead, as in the standard library:
 * try_lock and the timed lock say bool, wait_for says std::cv_status, a
 * closed channel says false or std::nullopt, a try or timed channel call
 * says weft::channel_status.  The socket calls (weft::io), where errors
 * are routine, have a second overload that takes a std::error_code& and
 * throws nothing; everything else throws only.
 *
 * Ownership.  weft::pool owns its pool: the destructor destroys it, which
 * waits until every task queued on it has ended (weft_pool_destroy); a
 * failure there (a pool destroyed from one of its own tasks, or from a
 * cancelled task) is a bug in the program and calls std::terminate, as a
 * joinable std::thread's destructor does: call destroy() first to handle
 * it.  A weft::task<T> owns its task's handle, moves and never copies;
 * the callable and its arguments are moved (decay-copied) into the task,
 * as std::thread does, so a lambda's captures are the task's own.
 *
 * Destructor.  Like std::jthread, a task<T> that still holds a task waits
 * for it in its destructor (so the references a lambda captured stay valid
 * for as long as it runs), and drops its result or exception.  It does not
 * cancel it (std::jthread asks its thread to stop; here, call cancel()
 * first for that).  In a cancelled task, where every wait returns at once,
 * that wait is a loop that yields the worker until the task ends.  To let
 * a task run on alone, detach() it: its result is then destroyed by
 * whichever of the two sides finishes last (weft itself, for a
 * failure).
 *
 * The room rule.  weft::spawn makes a task with a room, bytes that weft
 * keeps with the task while it runs: the callable with its arguments.  A
 * callable that a byte copy makes (trivially copyable and destructible: a
 * lambda that captures numbers and pointers) is built on the caller's
 * stack and copied in by weft_spawn_copy; any other is built in the room,
 * before the task is queued, by weft_spawn_with's fill.  A result that
 * fits in a pointer and is trivially copyable (a number, a pointer), or
 * void, comes back as the task's C result (weft_task_result), and an
 * exception as a weft_task_fail failure, allocated when it is thrown; any
 * other result is made in the room, which then starts with a state word
 * and the outcome (the result or a std::exception_ptr), and get() moves
 * it out (weft_task_take).  When the room is at most WEFT_TASK_ROOM (64)
 * bytes, weft::spawn allocates nothing beyond what weft_spawn does (a
 * task record from weft's own cache, which has a room slot of that size,
 * and its stack); weft::fits_room<F, Args...> says whether it is.  A
 * larger room is one allocation, freed with the task.
 *
 * Thread affinity.  A task runs on whatever worker its pool gives it, and
 * after anything that can wait (get(), a lock, a condition or channel
 * wait, yield, sleep_for, the socket calls) it may continue on another
 * thread.  So: read a thread_local (errno included) before a wait and not
 * after, and drain a per-thread error queue (OpenSSL's ERR_get_error,
 * GetLastError-style state) before a wait too.  The C++ runtime keeps the
 * exceptions being handled per thread: never wait inside a catch handler
 * (nor in a destructor of yours run while an exception unwinds); take
 * what you need from the exception (or std::current_exception()), leave
 * the handler, then wait.  This layer's own waits keep to that: a task
 * whose callable throws destroys the callable (whose captures may wait)
 * after its handler, and task<T>'s destructor, which may run as an
 * exception unwinds, carries the thread's exception state across its
 * wait (detail::eh_carry).  A weft::mutex belongs to the task that locked it,
 * not to its thread, so it may be unlocked on another thread than the one
 * that locked it; a std::mutex held across a wait may not.
 *
 * Contexts (weft/weft.h, "Contexts").  task<T>::get() and wait() work in
 * a task (they park it) and on a plain thread (they block it).  The
 * mutex, condition variable, channel and socket calls work in both too.
 * this_task::yield needs a task on a pool; this_task::sleep_for works
 * anywhere (it sleeps a plain thread).
 *
 * Compared with Boost.Fiber and marl (facts, for orientation).
 * Boost.Fiber: fibers run on the thread that launched them unless a
 * work-stealing or work-sharing scheduler algorithm is installed per
 * thread; boost::fibers::fiber must be joined or detached before its
 * destructor, like std::thread (a joinable one terminates); results come
 * through boost::fibers::future / async / packaged_task, which allocate a
 * shared state; boost::fibers::mutex is owned by the fiber, and its
 * condition_variable and buffered_channel / unbuffered_channel mirror the
 * std ones, channels reporting close through channel_op_status.  marl:
 * a marl::Scheduler is bound to threads with bind(), tasks are
 * std::function<void()> given to marl::schedule() (no result type; the
 * std::function may allocate), and joining is done with marl::WaitGroup,
 * marl::Event or marl::Ticket; marl::ConditionVariable waits with a
 * marl::lock, marl's own lock type over marl::mutex, and misuse is
 * reported by assertions, not exceptions.  weft::task<T> carries a typed result or an
 * exception to get(), waits in its destructor (std::jthread's choice), and
 * needs no allocation for a callable that fits the room; one pool of
 * worker threads runs all its tasks with work stealing, and sockets park
 * tasks on its netpoller.
 */
#ifndef WEFT_WEFT_HPP
#define WEFT_WEFT_HPP

#if __cplusplus < 201703L
#error "weft/weft.hpp needs C++17"
#endif

#include <weft/weft.h>

#if !defined(__cpp_exceptions) && !defined(__EXCEPTIONS)
#error "weft/weft.hpp reports errors as exceptions (std::system_error): \
build with exceptions, or use the C API (weft/weft.h)"
#endif

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cxxabi.h>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>

namespace weft {

/* ------------------------------------------------------------ errors */

namespace detail {
class weft_category final : public std::error_category {
public:
    const char *name() const noexcept override { return "weft"; }
    std::string message(int ev) const override { return weft_strerror(ev); }
    /* weft's codes are errno values: they compare equal to std::errc. */
    std::error_condition default_error_condition(int ev) const noexcept override
    {
        return std::error_condition(ev, std::generic_category());
    }
};
} // namespace detail

/* weft's error category: one object for the whole program (an inline
 * function's static is shared by every translation unit). */
inline const std::error_category &category() noexcept
{
    static const detail::weft_category c;
    return c;
}

/* The std::error_code of a C call's negative return (0 or more: none). */
inline std::error_code make_error_code(long rc) noexcept
{
    return rc < 0 ? std::error_code(static_cast<int>(-rc), category())
                  : std::error_code();
}

namespace detail {
[[noreturn]] inline void throw_error(long rc, const char *what)
{
    throw std::system_error(make_error_code(rc), what);
}

inline void check(long rc, const char *what)
{
    if (rc < 0)
        throw_error(rc, what);
}

/* The C calls that return int: no widening before the test. */
inline void check(int rc, const char *what)
{
    if (rc < 0)
        throw_error(rc, what);
}

/* A duration as the C API's timeout: negative is 0 (do not wait), and
 * anything past what 63 bits of nanoseconds hold (292 years) is
 * UINT64_MAX, no limit.  Rounded up, so that a wait never ends before the
 * duration asked for. */
template <class Rep, class Period>
std::uint64_t to_ns(const std::chrono::duration<Rep, Period> &d) noexcept
{
    if (d <= d.zero())
        return 0;
    if (std::chrono::duration<long double, std::nano>(d).count() >= 9.2e18L)
        return UINT64_MAX;
    return static_cast<std::uint64_t>(
        std::chrono::ceil<std::chrono::nanoseconds>(d).count());
}

/* Time left until t on its clock, as a timeout, as to_ns rounds and
 * bounds it.  In long double nanoseconds (64 bits of mantissa or more):
 * t - Clock::now() would first convert a far t (time_point::max() of a
 * coarse duration) to the clock's units, which overflows. */
template <class Clock, class Duration>
std::uint64_t ns_until(const std::chrono::time_point<Clock, Duration> &t)
{
    using ns = std::chrono::duration<long double, std::nano>;
    long double left = ns(t.time_since_epoch()).count() -
                       ns(Clock::now().time_since_epoch()).count();
    if (!(left > 0))
        return 0;
    if (left >= 9.2e18L)
        return UINT64_MAX;
    auto whole = static_cast<std::uint64_t>(left);
    return whole + (static_cast<long double>(whole) < left);
}

/* Let others run while waiting without a wait (see task's destructor): the
 * worker in a task on a pool, else the thread. */
inline void yield_somehow() noexcept
{
    if (weft_yield() != 0)
        std::this_thread::yield();
}

/*
 * The C++ runtime's exception state is the thread's (Itanium C++ ABI,
 * 2.2.2, __cxa_eh_globals: the exceptions being handled, newest first,
 * then the count of those thrown and not yet caught).  A task that waits
 * while it has some (a destructor run as an exception unwinds, which is
 * what task<T>'s destructor may be) would leave them on the thread it
 * waited on and miss them on the one it continues on: the counts drift
 * there for good (std::uncaught_exceptions() says -1 on one worker and
 * 1 on the other) and the catch that ends the unwinding pops the wrong
 * thread's list.  eh_carry, around such a wait, takes the state off the
 * thread before it and puts it on the thread after it.
 */
struct eh_state {
    void *caught;
    unsigned int uncaught;
};

inline eh_state *thread_eh() noexcept
{
    /* Called through a volatile pointer: __cxa_get_globals is declared
     * const, so a call after the wait could be folded into the one made
     * before it, on the thread the task left. */
    using get_fn = abi::__cxa_eh_globals *(*)();
    static get_fn volatile get = &abi::__cxa_get_globals;
    return reinterpret_cast<eh_state *>(get());
}

class eh_carry {
public:
    eh_carry() noexcept
    {
        eh_state *g = thread_eh();
        saved_ = *g;
        if (saved_.caught || saved_.uncaught)
            *g = eh_state{};
    }
    ~eh_carry()
    {
        if (!saved_.caught && !saved_.uncaught)
            return;
        eh_state *g = thread_eh();
        /* This thread's own is empty unless one of its tasks waited in a
         * handler (see the top: "Thread affinity"). */
        if (!g->caught)
            g->caught = saved_.caught;
        g->uncaught += saved_.uncaught;
    }
    eh_carry(const eh_carry &) = delete;
    eh_carry &operator=(const eh_carry &) = delete;

private:
    eh_state saved_;
};
} // namespace detail

/* -------------------------------------------------------------- pool */

class pool {
public:
    /* A pool of `workers` threads (0: one per CPU, weft_pool_create's
     * default). */
    explicit pool(unsigned workers = 0)
    {
        weft_pool_opts o{};
        o.threads = workers;
        detail::check(weft_pool_create(&p_, &o), "weft::pool");
    }
    /* A pool with every option of the C API. */
    explicit pool(const weft_pool_opts &opts)
    {
        detail::check(weft_pool_create(&p_, &opts), "weft::pool");
    }
    pool(const pool &) = delete;
    pool &operator=(const pool &) = delete;
    pool(pool &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    pool &operator=(pool &&o) noexcept
    {
        if (this != &o) {
            close_or_terminate();
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }
    ~pool() { close_or_terminate(); }

    /* Destroy it now: wait until every task queued on it has ended
     * (weft_pool_destroy).  Throws as weft_pool_destroy fails; after that
     * the pool is still this object's (-ETIMEDOUT and -ECANCELED leave it
     * being destroyed: call destroy() again). */
    void destroy()
    {
        if (p_) {
            detail::check(weft_pool_destroy(p_), "weft::pool::destroy");
            p_ = nullptr;
        }
    }
    /* The same, waiting at most d: false if its tasks ran on past it
     * (the pool is left being destroyed, weft_pool_destroy_for). */
    template <class Rep, class Period>
    bool destroy_for(const std::chrono::duration<Rep, Period> &d)
    {
        if (!p_)
            return true;
        int rc = weft_pool_destroy_for(p_, detail::to_ns(d));
        if (rc == -ETIMEDOUT)
            return false;
        detail::check(rc, "weft::pool::destroy_for");
        p_ = nullptr;
        return true;
    }

    unsigned threads() const noexcept { return weft_pool_threads(p_); }
    weft_pool *native_handle() const noexcept { return p_; }
    /* The pool whose worker runs the caller, or NULL (weft_pool_current). */
    static weft_pool *current() noexcept { return weft_pool_current(); }

private:
    void close_or_terminate() noexcept
    {
        if (!p_)
            return;
        /* A wait (in a task: parked while a helper destroys the pool), and
         * a destructor may run as an exception unwinds. */
        detail::eh_carry carry;
        if (weft_pool_destroy(p_) != 0)
            std::terminate(); /* see the top: "Ownership" */
        p_ = nullptr;
    }
    weft_pool *p_ = nullptr;
};

/* -------------------------------------------------------------- task */

namespace detail {

/* What a task's room says of its outcome.  Only `abandoned` is ever
 * raced for (detach versus the body's end); see header::finish. */
enum : unsigned char {
    st_running = 0,
    st_value = 1,
    st_error = 2,
    st_abandoned = 3,
};

struct no_value {};

/* The outcome a task<R> reads: its value or its exception. */
template <class R>
union outcome {
    outcome() {}
    ~outcome() {}
    std::conditional_t<std::is_void_v<R>, no_value, R> value;
    std::exception_ptr error;
};

template <class R>
void destroy_outcome(outcome<R> *o, unsigned char st) noexcept
{
    if (st == st_error)
        o->error.~exception_ptr();
    else if constexpr (!std::is_void_v<R>)
        if (st == st_value)
            o->value.~R();
}

/* A value that travels as the body's void * result (weft_take_fn's
 * `result`), not in the room: a number, a pointer, a small struct of
 * them. */
template <class R>
inline constexpr bool in_result =
    std::is_trivially_copyable_v<R> && sizeof(R) <= sizeof(void *) &&
    alignof(R) <= alignof(void *);

template <>
inline constexpr bool in_result<void> = false;

/*
 * A result that travels as the task's C result (a value that fits in
 * it, or nothing): such a task's room holds only the call, and an
 * exception goes back as a weft_task_fail failure (below), so that get()
 * is one weft_task_result, which never reads the room.
 */
template <class R>
inline constexpr bool lean = std::is_void_v<R> || in_result<R>;

/*
 * The failure a lean task's body returns for its exception (weft/task.h,
 * weft_task_fail): allocated in the handler (an exception is rare, and
 * its own object is allocated too); get() takes it, and weft drops it
 * for a task nobody will consume (detached).  The C struct first: weft
 * hands back its address, which is the whole's.
 */
struct failure {
    weft_failure base;
    std::exception_ptr error;

    static void drop(weft_failure *f) noexcept
    {
        delete reinterpret_cast<failure *>(f);
    }

    /* get()'s: the exception out, the failure freed, the exception
     * rethrown. */
    [[noreturn]] static void rethrow(void *result)
    {
        auto *f = static_cast<failure *>(result);
        std::exception_ptr e = std::move(f->error);
        delete f;
        std::rethrow_exception(std::move(e));
    }
};
static_assert(std::is_standard_layout_v<failure>,
              "weft::detail::failure: its C struct must be at its start");

/*
 * The start of every room weft::spawn makes: the state word and the
 * outcome, at a place that depends on R alone, so that a task<R> (which
 * does not know the callable) finds them from the room weft hands it.
 * The call follows (frame below).
 */
template <class R>
struct header {
    /* A whole word, though it holds a byte: spawn's image stores it with
     * one store that weft_spawn_copy's word loads can take from the store
     * buffer (see weft_spawn_copy in task.c). */
    std::atomic<std::uint64_t> state{st_running};
    outcome<R> out;

    /* weft aligns a room to max_align_t; a stricter header aligns itself
     * in the slack frame::room_size adds. */
    static constexpr std::size_t slack =
        alignof(header) > alignof(std::max_align_t)
            ? alignof(header) - alignof(std::max_align_t)
            : 0;

    static header *at(void *room) noexcept
    {
        if constexpr (slack == 0)
            return static_cast<header *>(room);
        auto a = reinterpret_cast<std::uintptr_t>(room);
        a = (a + alignof(header) - 1) & ~static_cast<std::uintptr_t>(alignof(header) - 1);
        return reinterpret_cast<header *>(a);
    }

    /*
     * The body's end.  A detached task's outcome is destroyed by whichever
     * side comes second, decided by one exchange on `state` each:
     *   body:     old = exchange(st, kind); if old == abandoned: destroy
     *   detach(): old = exchange(abandoned); if old is a kind: destroy
     * acq_rel on both: the release publishes what one side wrote (the
     * outcome; the detacher writes nothing after its exchange), the
     * acquire makes the side that destroys see it.  A value with nothing
     * to destroy (void, or trivially destructible) needs no mark at all:
     * the word stays `running`, which get() reads as "a value" once
     * weft_task_take's wait has seen the body end, and a detacher has
     * nothing to do either way.  That keeps an RMW, and a store, off the
     * common path of task<int> (fib).
     */
    void finish(unsigned char kind, bool needs_destroy) noexcept
    {
        if (!needs_destroy)
            return;
        if (state.exchange(kind, std::memory_order_acq_rel) == st_abandoned)
            destroy_outcome(&out, kind);
    }
};

/* The whole room of a task made by weft::spawn: its header (none for a
 * lean R), then the call (the callable and its arguments) until the body
 * has made it. */
template <class R, class Call>
struct frame {
    using H = header<R>;
    static constexpr bool is_lean = lean<R>;

    /* The header's bytes and alignment; a lean room starts with the call. */
    static constexpr std::size_t head = is_lean ? 0 : sizeof(H);
    static constexpr std::size_t slack = is_lean ? 0 : H::slack;
    static constexpr std::size_t base =
        !is_lean && alignof(H) > alignof(std::max_align_t)
            ? alignof(H)
            : alignof(std::max_align_t);
    /* The call's alignment usually does not exceed that: then it lies at a
     * fixed offset after the header. */
    static constexpr bool fixed = alignof(Call) <= base;
    static constexpr std::size_t call_offset =
        (head + alignof(Call) - 1) / alignof(Call) * alignof(Call);

    /* Bytes asked of weft: an over-aligned call aligns itself after the
     * header in at most alignof(Call) - base bytes more. */
    static constexpr std::size_t room_size =
        fixed ? slack + call_offset + sizeof(Call)
              : slack + (head + base - 1) / base * base +
                    (alignof(Call) - base) + sizeof(Call);

    static unsigned char *start(void *room) noexcept
    {
        if constexpr (is_lean)
            return static_cast<unsigned char *>(room);
        else
            return reinterpret_cast<unsigned char *>(H::at(room));
    }

    static Call *call_at(void *room) noexcept
    {
        unsigned char *h = start(room);
        if constexpr (fixed)
            return reinterpret_cast<Call *>(h + call_offset);
        auto a = reinterpret_cast<std::uintptr_t>(h) + head;
        a = (a + alignof(Call) - 1) & ~static_cast<std::uintptr_t>(alignof(Call) - 1);
        return reinterpret_cast<Call *>(a);
    }

    /*
     * A call that a byte copy makes (trivially copy-constructible and
     * destructible: a lambda that captures numbers and pointers) is built
     * on the spawner's stack (with the header, as `image`, for a room that
     * has one) and copied into the room by weft_spawn_copy: no callback
     * into this layer, and no frame of one.  Anything else is built in the
     * room by filler's fill, through weft_spawn_with.  The header's bytes
     * go along: its state word (a lock-free atomic) and the outcome's raw
     * storage.
     */
    static constexpr bool by_copy =
        fixed && slack == 0 && std::is_trivially_copy_constructible_v<Call> &&
        std::is_trivially_destructible_v<Call> &&
        std::atomic<std::uint64_t>::is_always_lock_free;

    struct image {
        H h;
        Call call; /* at call_offset: the same layout rule */
    };

    /* The call made: its callable with its arguments, moved. */
    static decltype(auto) invoke_call(Call *c)
    {
        auto invoke = [](auto &&fn, auto &&...args) -> decltype(auto) {
            return std::invoke(std::move(fn), std::move(args)...);
        };
        return std::apply(invoke, std::move(*c));
    }

    /* weft_fn: the task's body, called with the room. */
    static void *body(void *room) noexcept
    {
        Call *c = call_at(room);
        bool call_alive = true;
        if constexpr (is_lean) {
            failure *f = nullptr;
            try {
                if constexpr (std::is_void_v<R>) {
                    invoke_call(c);
                    call_alive = false;
                    c->~Call();
                    return nullptr;
                } else {
                    /* The value goes back as fn's result: on the handle's
                     * cache line, which the awaiter reads anyway. */
                    R r = invoke_call(c);
                    call_alive = false;
                    c->~Call();
                    void *bits = nullptr;
                    std::memcpy(&bits, &r, sizeof r);
                    return bits;
                }
            } catch (...) {
                /* Only this in the handler (see the top: "Thread
                 * affinity"), which waits for nothing.  The plain new,
                 * which a program's own operator new replaces (the
                 * nothrow one it may not). */
                try {
                    f = new failure{{&failure::drop}, std::current_exception()};
                } catch (...) {
                    f = nullptr;
                }
            }
            if (call_alive)
                c->~Call();
            if (!f)
                std::terminate(); /* no memory to carry the exception */
            (void)weft_task_fail(); /* in a task: cannot fail */
            return &f->base;
        } else {
            H *h = H::at(room);
            try {
                /* Made in place: the outcome has bytes of its own. */
                ::new (static_cast<void *>(&h->out.value)) R(invoke_call(c));
                call_alive = false;
                c->~Call();
                h->finish(st_value, !std::is_trivially_destructible_v<R>);
                return nullptr;
            } catch (...) {
                /* Only this in the handler (see the top: "Thread
                 * affinity"): the call's destructor, below, may wait (a
                 * captured task<T>, a lock), and a wait in here could end
                 * on another thread, whose runtime knows nothing of this
                 * exception. */
                ::new (static_cast<void *>(&h->out.error))
                    std::exception_ptr(std::current_exception());
            }
            if (call_alive)
                c->~Call();
            h->finish(st_error, true);
            return nullptr;
        }
    }
};

template <class F, class... Args>
using call_t = std::tuple<std::decay_t<F>, std::decay_t<Args>...>;

/* What a task of f(args...) gives: f's result without const (a function
 * may return a const value; its task's get() gives a value to move). */
template <class F, class... Args>
using result_t = std::remove_cv_t<
    std::invoke_result_t<std::decay_t<F>, std::decay_t<Args>...>>;

/* The header in a room that has one (not lean), before the call. */
template <class Frame>
void make_header(void *room) noexcept
{
    if constexpr (!Frame::is_lean)
        ::new (static_cast<void *>(Frame::H::at(room))) typename Frame::H();
}

/* weft_spawn_with's fill for spawn: makes the header and, with `make`,
 * the call in the room, before the task is queued.  fill runs inside the
 * C call, so an exception stops here and spawn rethrows it; a call whose
 * copies cannot throw needs no such detour (Nothrow). */
template <class Frame, class Make, bool Nothrow>
struct filler {
    Make &make;
    std::exception_ptr error{};

    static int fill(void *room, void *self) noexcept
    {
        auto *f = static_cast<filler *>(self);
        try {
            make_header<Frame>(room);
            f->make(Frame::call_at(room));
        } catch (...) {
            f->error = std::current_exception();
            return -ECANCELED; /* weft_spawn_with's own codes are others */
        }
        return 0;
    }

    void rethrow() const
    {
        if (error)
            std::rethrow_exception(error); /* nothing made */
    }
};

template <class Frame, class Make>
struct filler<Frame, Make, true> {
    Make &make;

    static int fill(void *room, void *self) noexcept
    {
        auto *f = static_cast<filler *>(self);
        make_header<Frame>(room);
        f->make(Frame::call_at(room));
        return 0;
    }

    void rethrow() const noexcept {}
};

/* weft_task_take's take for task<R>::get() of a room outcome (R not
 * lean): moves the outcome out of the room (which weft frees right after)
 * into this object, on the caller's stack.  A move that throws becomes
 * the outcome (the task is freed all the same). */
template <class R>
struct taker {
    unsigned char st = st_running;
    outcome<R> got;

    taker() noexcept = default;
    taker(const taker &) = delete;
    taker &operator=(const taker &) = delete;
    ~taker() { destroy_outcome(&got, st); }

    static void take(void *room, void *, void *self) noexcept
    {
        auto *k = static_cast<taker *>(self);
        header<R> *h = header<R>::at(room);
        /* Relaxed: weft_task_take's wait ordered the body's writes
         * before this call.  Not an error: a value (header::finish leaves
         * the word `running` for one with nothing to destroy). */
        auto st = static_cast<unsigned char>(
            h->state.load(std::memory_order_relaxed));
        if (st == st_error) {
            ::new (static_cast<void *>(&k->got.error))
                std::exception_ptr(std::move(h->out.error));
            h->out.error.~exception_ptr();
        } else {
            st = st_value;
            try {
                ::new (static_cast<void *>(&k->got.value))
                    R(std::move(h->out.value));
            } catch (...) {
                st = st_error;
                ::new (static_cast<void *>(&k->got.error))
                    std::exception_ptr(std::current_exception());
            }
            h->out.value.~R();
        }
        k->st = st;
    }

    /* After take: the value, or the exception thrown. */
    R result()
    {
        if (st == st_error)
            std::rethrow_exception(got.error);
        return std::move(got.value);
    }
};

/* weft_task_take's take for a task<R> (not lean) destroyed unread. */
template <class R>
void drop_outcome(void *room, void *, void *) noexcept
{
    header<R> *h = header<R>::at(room);
    destroy_outcome(&h->out, static_cast<unsigned char>(h->state.load(
                                 std::memory_order_relaxed)));
}

/* A lean task's value from its C result. */
template <class R>
R from_result(void *result) noexcept
{
    if constexpr (!std::is_void_v<R>) {
        outcome<R> o;
        std::memcpy(static_cast<void *>(&o.value), &result, sizeof(R));
        return o.value;
    }
}

} // namespace detail

/* Whether weft::spawn(p, f, args...) allocates nothing for its room (see
 * the top: "The room rule"). */
template <class F, class... Args>
inline constexpr bool fits_room =
    detail::frame<detail::result_t<F, Args...>,
                  detail::call_t<F, Args...>>::room_size <= WEFT_TASK_ROOM;

template <class T>
class task {
    static_assert(!std::is_reference_v<T>,
                  "weft::task<T&>: return a pointer or std::reference_wrapper");

public:
    task() noexcept = default;
    task(const task &) = delete;
    task &operator=(const task &) = delete;
    task(task &&o) noexcept : t_(std::exchange(o.t_, nullptr)) {}
    /* As std::jthread's: first waits for the task this one holds. */
    task &operator=(task &&o) noexcept
    {
        if (this != &o) {
            reap();
            t_ = std::exchange(o.t_, nullptr);
        }
        return *this;
    }
    ~task() { reap(); }

    /* Whether it holds a task (not default-made, moved from, got, or
     * detached). */
    bool valid() const noexcept { return t_ != nullptr; }
    explicit operator bool() const noexcept { return valid(); }

    /* Wait until the task ends (in a task: parks; on a plain thread:
     * blocks), keeping it: get() then returns at once.  Throws
     * std::system_error as weft_task_join fails (operation_canceled in a
     * cancelled task; device_or_resource_busy while another wait() or
     * get() for it waits: one waiter at a time, weft/weft.h, "Handles and
     * ownership"), and invalid_argument for no task. */
    void wait() const
    {
        need_task("weft::task::wait");
        detail::check(weft_task_join(t_), "weft::task::wait");
    }

    /* Wait as wait() does, then give the task's value, or throw the
     * exception it threw; the task is consumed (valid() is false after),
     * unless the wait itself threw.  One call, weft_task_take, waits,
     * moves the outcome out of the room and frees the task. */
    T get()
    {
        /* No task: the C call's -EINVAL (no look of our own). */
        if constexpr (detail::lean<T>) {
            /* The value is the C result; an exception, a failure. */
            void *r;
            int rc = weft_task_result(t_, &r);
            detail::check(rc, "weft::task::get");
            t_ = nullptr;
            if (rc == WEFT_TASK_FAILED)
                detail::failure::rethrow(r);
            return detail::from_result<T>(r);
        } else {
            detail::taker<T> k;
            detail::check(weft_task_take(t_, &detail::taker<T>::take, &k),
                          "weft::task::get");
            t_ = nullptr;
            return k.result();
        }
    }

    /* Let it run on alone; its outcome is dropped when it ends. */
    void detach()
    {
        need_task("weft::task::detach");
        abandon();
    }

    /* weft_task_cancel: its waits end with operation_canceled from now on
     * (weft/weft.h, "Cancellation").  It is still this handle's. */
    void cancel() const
    {
        need_task("weft::task::cancel");
        (void)weft_task_cancel(t_);
    }

    std::uint64_t id() const noexcept { return weft_task_id(t_); }
    weft_task *native_handle() const noexcept { return t_; }

private:
    template <class F, class... Args>
    friend task<detail::result_t<F, Args...>>
    spawn_with(weft_pool *, const weft_task_opts *, F &&, Args &&...);

    explicit task(weft_task *t) noexcept : t_(t) {}

    void need_task(const char *what) const
    {
        if (!t_)
            detail::throw_error(-EINVAL, what);
    }

    /* The detach side of frame::finish's exchange (acq_rel: see there);
     * the task may still run, and is freed by weft when it ends. */
    void abandon() noexcept
    {
        /* A lean task's failure: weft drops it (weft_task_detach). */
        if constexpr (!detail::lean<T>) {
            auto *h = detail::header<T>::at(weft_task_room(t_));
            auto old = static_cast<unsigned char>(h->state.exchange(
                detail::st_abandoned, std::memory_order_acq_rel));
            detail::destroy_outcome(&h->out, old);
        }
        (void)weft_task_detach(std::exchange(t_, nullptr));
    }

    /* The destructor's wait (see the top: "Destructor"): the outcome is
     * dropped (a failure freed, a room's outcome destroyed in it by
     * weft_task_take) and the task freed. */
    void reap() noexcept
    {
        if (t_)
            reap_held();
    }

    /* Apart from reap's test, so that the test stays inline in every
     * destructor (a got task's, the common one) and this does not. */
    void reap_held() noexcept
    {
        detail::eh_carry carry;
        int rc;
        void *r = nullptr;
        while ((rc = take_dropping(&r)) == -ECANCELED)
            detail::yield_somehow();
        if (rc == WEFT_TASK_FAILED)
            detail::failure::drop(static_cast<weft_failure *>(r));
        else if (rc != 0) {
            /* -EDEADLK: inside a standalone coroutine on a plain thread,
             * where nothing can wait: it runs on alone. */
            abandon();
            return;
        }
        t_ = nullptr;
    }

    /* reap_held's wait: consumes the task and drops a room's outcome. */
    int take_dropping(void **r) noexcept
    {
        if constexpr (detail::lean<T>)
            return weft_task_result(t_, r);
        else
            return weft_task_take(t_, &detail::drop_outcome<T>, nullptr);
    }

    weft_task *t_ = nullptr;
};

/*
 * spawn_with - run f(args...) in a new task on pool p, with the C API's
 * task options (stack size, name; opts may be NULL): f and args are
 * decay-copied (moved from rvalues) into the task's room.  Any context.
 * Throws std::system_error: invalid_argument (p NULL, bad options),
 * not_enough_memory, and weft's ESHUTDOWN (p is being destroyed), with
 * nothing made; whatever constructing the room's copies throws, likewise.
 */
template <class F, class... Args>
task<detail::result_t<F, Args...>>
spawn_with(weft_pool *p, const weft_task_opts *opts, F &&f, Args &&...args)
{
    using R = detail::result_t<F, Args...>;
    using Call = detail::call_t<F, Args...>;
    using Frame = detail::frame<R, Call>;
    weft_task *t;
    if constexpr (Frame::by_copy && Frame::is_lean) {
        /* The call is made here, before weft is asked for anything: what
         * it throws leaves nothing to undo.  The room is the call alone. */
        Call c(std::forward<F>(f), std::forward<Args>(args)...);
        int rc = weft_spawn_copy(&t, p, &Frame::body, &c, sizeof c, opts);
        if (rc != 0)
            detail::throw_error(rc, "weft::spawn");
    } else if constexpr (Frame::by_copy) {
        /* As above, with the header before the call. */
        typename Frame::image img{
            {}, Call(std::forward<F>(f), std::forward<Args>(args)...)};
        int rc = weft_spawn_copy(&t, p, &Frame::body, &img, sizeof img, opts);
        if (rc != 0)
            detail::throw_error(rc, "weft::spawn");
    } else {
        auto make = [&](Call *c) {
            ::new (static_cast<void *>(c))
                Call(std::forward<F>(f), std::forward<Args>(args)...);
        };
        detail::filler<Frame, decltype(make),
                       std::is_nothrow_constructible_v<Call, F &&, Args &&...>>
            fl{make};
        int rc = weft_spawn_with(&t, p, &Frame::body, Frame::room_size,
                                 &decltype(fl)::fill, &fl, opts);
        if (rc != 0) {
            fl.rethrow();
            detail::throw_error(rc, "weft::spawn");
        }
    }
    return task<R>(t);
}

/* spawn - spawn_with, default options. */
template <class F, class... Args>
task<detail::result_t<F, Args...>> spawn(weft_pool *p, F &&f, Args &&...args)
{
    return spawn_with(p, nullptr, std::forward<F>(f),
                      std::forward<Args>(args)...);
}

template <class F, class... Args>
task<detail::result_t<F, Args...>> spawn(pool &p, F &&f, Args &&...args)
{
    return spawn_with(p.native_handle(), nullptr, std::forward<F>(f),
                      std::forward<Args>(args)...);
}

/* --------------------------------------------------------- this_task */

namespace this_task {

/* Let the tasks already queued on this worker run first (weft_yield).
 * Throws std::system_error (operation_not_permitted) outside a task on a
 * pool. */
inline void yield()
{
    detail::check(weft_yield(), "weft::this_task::yield");
}

/* Wait d: a task parks on its pool's timer, a plain thread sleeps.
 * Throws std::system_error: operation_canceled (a cancelled task: it did
 * not sleep, unless d is 0 or less), not_enough_memory. */
template <class Rep, class Period>
void sleep_for(const std::chrono::duration<Rep, Period> &d)
{
    detail::check(weft_sleep(detail::to_ns(d)), "weft::this_task::sleep_for");
}

template <class Clock, class Duration>
void sleep_until(const std::chrono::time_point<Clock, Duration> &t)
{
    detail::check(weft_sleep(detail::ns_until(t)),
                  "weft::this_task::sleep_until");
}

/* Move the calling task to a worker of p (weft_schedule). */
inline void schedule(pool &p)
{
    detail::check(weft_schedule(p.native_handle()), "weft::this_task::schedule");
}

/* The running task (borrowed: no handle), or NULL on a plain thread. */
inline weft_task *current() noexcept { return weft_task_current(); }

/* Its id (weft_task_id), 0 on a plain thread. */
inline std::uint64_t id() noexcept { return weft_task_id(weft_task_current()); }

/* Whether it has been cancelled (weft_task_cancelled): a long computation
 * that makes no call that can wait asks this to stop early. */
inline bool cancelled() noexcept { return weft_task_cancelled() != 0; }

} // namespace this_task

/* ----------------------------------------------------- mutex, condvar */

/* A mutex whose lock parks a task (blocks a plain thread).  Lockable and
 * TimedLockable: std::lock_guard, std::unique_lock, std::scoped_lock. */
class mutex {
public:
    mutex() noexcept { weft_mutex_init(&m_); }
    mutex(const mutex &) = delete;
    mutex &operator=(const mutex &) = delete;

    /* Throws std::system_error: operation_canceled (a cancelled task and
     * the mutex held by another), resource_deadlock_would_occur (held by
     * the caller). */
    void lock() { detail::check(weft_mutex_lock(&m_), "weft::mutex::lock"); }
    bool try_lock() noexcept { return weft_mutex_trylock(&m_) == 0; }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d)
    {
        return timed(weft_mutex_lock_for(&m_, detail::to_ns(d)));
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t)
    {
        return timed(weft_mutex_lock_for(&m_, detail::ns_until(t)));
    }
    /* Unlocking a mutex the caller does not hold is undefined, as for
     * std::mutex (weft says -EPERM, which this cannot throw from a
     * lock_guard's destructor). */
    void unlock() noexcept { (void)weft_mutex_unlock(&m_); }

    weft_mutex *native_handle() noexcept { return &m_; }

private:
    static bool timed(int rc)
    {
        if (rc == -ETIMEDOUT)
            return false;
        detail::check(rc, "weft::mutex::try_lock_for");
        return true;
    }
    weft_mutex m_;
};

/* A condition variable over weft::mutex, waited on with a
 * std::unique_lock<weft::mutex>.  Every wait returns holding the lock,
 * also when it throws (operation_canceled: weft_cond_wait's re-lock). */
class condition_variable {
public:
    condition_variable() noexcept { weft_cond_init(&c_); }
    condition_variable(const condition_variable &) = delete;
    condition_variable &operator=(const condition_variable &) = delete;

    void notify_one() noexcept { weft_cond_signal(&c_); }
    void notify_all() noexcept { weft_cond_broadcast(&c_); }

    void wait(std::unique_lock<mutex> &lk)
    {
        detail::check(weft_cond_wait(&c_, lk.mutex()->native_handle()),
                      "weft::condition_variable::wait");
    }
    template <class Pred>
    void wait(std::unique_lock<mutex> &lk, Pred pred)
    {
        while (!pred())
            wait(lk);
    }

    template <class Rep, class Period>
    std::cv_status wait_for(std::unique_lock<mutex> &lk,
                            const std::chrono::duration<Rep, Period> &d)
    {
        return wait_ns(lk, detail::to_ns(d));
    }
    /* The predicate's value when it returns: false only at the deadline. */
    template <class Rep, class Period, class Pred>
    bool wait_for(std::unique_lock<mutex> &lk,
                  const std::chrono::duration<Rep, Period> &d, Pred pred)
    {
        /* One deadline for the whole wait, however many wake-ups: the
         * monotonic clock, as weft's own.  A duration past what the clock
         * can reach from now is no deadline (to_ns's rule). */
        using clock = std::chrono::steady_clock;
        auto now = clock::now();
        std::uint64_t ns = detail::to_ns(d);
        auto reach = std::chrono::duration_cast<std::chrono::nanoseconds>(
            clock::time_point::max() - now);
        if (ns >= static_cast<std::uint64_t>(reach.count())) {
            wait(lk, std::move(pred));
            return true;
        }
        return wait_until(lk, now + std::chrono::nanoseconds(ns),
                          std::move(pred));
    }

    template <class Clock, class Duration>
    std::cv_status wait_until(std::unique_lock<mutex> &lk,
                              const std::chrono::time_point<Clock, Duration> &t)
    {
        return wait_ns(lk, detail::ns_until(t));
    }
    template <class Clock, class Duration, class Pred>
    bool wait_until(std::unique_lock<mutex> &lk,
                    const std::chrono::time_point<Clock, Duration> &t,
                    Pred pred)
    {
        while (!pred())
            if (wait_until(lk, t) == std::cv_status::timeout)
                return pred();
        return true;
    }

    weft_cond *native_handle() noexcept { return &c_; }

private:
    std::cv_status wait_ns(std::unique_lock<mutex> &lk, std::uint64_t ns)
    {
        int rc = weft_cond_wait_for(&c_, lk.mutex()->native_handle(), ns);
        if (rc == -ETIMEDOUT)
            return std::cv_status::timeout;
        detail::check(rc, "weft::condition_variable::wait_for");
        return std::cv_status::no_timeout;
    }

    weft_cond c_;
};

/* ------------------------------------------------------------ channel */

/* The outcome of a channel call that may give up. */
enum class channel_status {
    ok,
    closed,      /* closed (for a receive: and drained)                 */
    timeout,     /* the _for form's time ran out                        */
    would_block, /* a try that would have had to wait                   */
};

/*
 * channel<T> - weft_chan of T, for any move-constructible T that is not
 * const or volatile (the calls that take a T&, try_send, send_for,
 * try_recv and recv_for, need it move-assignable as well: they assign to
 * it).  A receive whose move of the value out throws has taken it from
 * the channel: the value is destroyed and the exception goes on (as
 * with any container's pop that returns by value).  A T that is
 * trivially copyable and fits a pointer travels in the C channel's void *
 * itself; any other is moved into one allocation per value (new T), which
 * the receive moves out of and frees.  Capacity 0 is a rendezvous.
 * The calls that take a T& (try_send, send_for) move from it only when
 * the value went; receives that fail leave their T& as it was.  Throws
 * std::system_error for what is not a channel_status (operation_canceled,
 * not_enough_memory).  Any context.  The destructor closes the channel,
 * drops what is left in it, and frees it: no call may be in progress on
 * it or start then (as with weft_chan_destroy).
 */
template <class T>
class channel {
    static_assert(std::is_move_constructible_v<T>,
                  "weft::channel<T> needs a move-constructible T");
    static_assert(!std::is_const_v<T> && !std::is_volatile_v<T>,
                  "weft::channel<const T>: use channel<T> (values are moved "
                  "in and out)");
    static constexpr bool inline_value =
        std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(void *) &&
        alignof(T) <= alignof(void *);

public:
    explicit channel(std::size_t capacity = 0)
    {
        detail::check(weft_chan_create(&ch_, capacity), "weft::channel");
    }
    channel(const channel &) = delete;
    channel &operator=(const channel &) = delete;
    ~channel()
    {
        weft_chan_close(ch_);
        void *v;
        while (weft_chan_try_recv(ch_, &v) == 0)
            drop(v);
        /* -EBUSY: a waiter woken by the close (or a sender whose value
         * was taken) has not returned yet.  A yield is a wait, and this
         * may run as an exception unwinds. */
        if (weft_chan_destroy(ch_) == -EBUSY) {
            detail::eh_carry carry;
            while (weft_chan_destroy(ch_) == -EBUSY)
                detail::yield_somehow();
        }
    }

    /* Send v, waiting for room; false if the channel is closed (v is then
     * dropped). */
    bool send(T v)
    {
        void *p = box(std::move(v));
        int rc = weft_chan_send(ch_, p);
        if (rc == 0)
            return true;
        drop(p);
        if (rc == -EPIPE)
            return false;
        detail::throw_error(rc, "weft::channel::send");
    }
    channel_status try_send(T &v)
    {
        need_assignable();
        return send_status(v, 0, true);
    }
    template <class Rep, class Period>
    channel_status send_for(T &v, const std::chrono::duration<Rep, Period> &d)
    {
        need_assignable();
        return send_status(v, detail::to_ns(d), false);
    }

    /* The next value, waiting for one; nullopt once closed and drained. */
    std::optional<T> recv()
    {
        void *p;
        int rc = weft_chan_recv(ch_, &p);
        if (rc == -EPIPE)
            return std::nullopt;
        detail::check(rc, "weft::channel::recv");
        return std::optional<T>(unbox(p));
    }
    channel_status try_recv(T &out)
    {
        need_assignable();
        return recv_status(out, 0, true);
    }
    template <class Rep, class Period>
    channel_status recv_for(T &out, const std::chrono::duration<Rep, Period> &d)
    {
        need_assignable();
        return recv_status(out, detail::to_ns(d), false);
    }

    /* Close it: sends fail from now on, receives drain what is left. */
    void close() noexcept { weft_chan_close(ch_); }

    /* Range-for over what is received until the channel is closed and
     * drained (an input range: each step receives, and may wait). */
    class iterator {
    public:
        using iterator_category = std::input_iterator_tag;
        using value_type = T;
        using difference_type = std::ptrdiff_t;
        using pointer = T *;
        using reference = T &;

        iterator() = default;
        T &operator*() { return *v_; }
        T *operator->() { return &*v_; }
        iterator &operator++()
        {
            v_ = c_->recv();
            if (!v_)
                c_ = nullptr;
            return *this;
        }
        void operator++(int) { ++*this; }
        bool operator==(const iterator &o) const { return c_ == o.c_; }
        bool operator!=(const iterator &o) const { return c_ != o.c_; }

    private:
        friend class channel;
        explicit iterator(channel *c) : c_(c) { ++*this; }
        channel *c_ = nullptr;
        std::optional<T> v_;
    };
    iterator begin() { return iterator(this); }
    iterator end() { return iterator(); }

    weft_chan *native_handle() noexcept { return ch_; }

private:
    static constexpr void need_assignable()
    {
        static_assert(std::is_move_assignable_v<T>,
                      "weft::channel<T>: try_send, send_for, try_recv and "
                      "recv_for assign to their T&: use send and recv");
    }
    static void *box(T &&v)
    {
        if constexpr (inline_value) {
            void *p = nullptr;
            std::memcpy(&p, &v, sizeof(T));
            return p;
        } else {
            return new T(std::move(v));
        }
    }
    static T unbox(void *p)
    {
        if constexpr (inline_value) {
            /* Trivially copyable: its bytes make it, no constructor
             * needed (T may have no default one). */
            union bytes {
                bytes() {}
                T v;
            } b;
            std::memcpy(static_cast<void *>(&b.v), &p, sizeof(T));
            return b.v;
        } else {
            /* Freed however the move ends: a move that throws loses the
             * value (it has left the channel), never leaks it. */
            std::unique_ptr<T> b(static_cast<T *>(p));
            return T(std::move(*b));
        }
    }
    static void drop(void *p) noexcept
    {
        if constexpr (!inline_value)
            delete static_cast<T *>(p);
    }
    static channel_status status_of(int rc, const char *what)
    {
        switch (rc) {
        case 0: return channel_status::ok;
        case -EPIPE: return channel_status::closed;
        case -ETIMEDOUT: return channel_status::timeout;
        case -EAGAIN: return channel_status::would_block;
        default: detail::throw_error(rc, what);
        }
    }
    channel_status send_status(T &v, std::uint64_t ns, bool try_only)
    {
        void *p = box(std::move(v));
        int rc = try_only ? weft_chan_try_send(ch_, p)
                          : weft_chan_send_for(ch_, p, ns);
        if (rc != 0) {
            /* Not sent: v gets its value back (the box freed even if
             * that assignment throws; then v keeps what it was left). */
            if constexpr (!inline_value) {
                std::unique_ptr<T> b(static_cast<T *>(p));
                v = std::move(*b);
            }
        }
        return status_of(rc, "weft::channel::send");
    }
    channel_status recv_status(T &out, std::uint64_t ns, bool try_only)
    {
        void *p;
        int rc = try_only ? weft_chan_try_recv(ch_, &p)
                          : weft_chan_recv_for(ch_, &p, ns);
        channel_status s = status_of(rc, "weft::channel::recv");
        if (s == channel_status::ok)
            out = unbox(p);
        return s;
    }

    weft_chan *ch_ = nullptr;
};

/* ---------------------------------------------------------------- io */

/*
 * The socket calls of weft/io.h (read there what each does, for owned and
 * borrowed fds).  Each comes in four forms: plain; with a std::chrono
 * timeout (the _for call: errc::timed_out once it passed); and both again
 * with a trailing std::error_code& that gets the error instead of a throw
 * (then the call returns -1 for an fd, 0 for a count).  A count of 0 from
 * read is the end of the stream.
 */
namespace io {

namespace detail {
template <class R>
R give(R rc, const char *what)
{
    weft::detail::check(static_cast<long>(rc), what);
    return rc;
}
template <class R>
R give(R rc, std::error_code &ec) noexcept
{
    ec = make_error_code(static_cast<long>(rc));
    return rc;
}
inline std::size_t count(ssize_t rc, const char *what)
{
    return static_cast<std::size_t>(give(rc, what));
}
inline std::size_t count(ssize_t rc, std::error_code &ec) noexcept
{
    give(rc, ec);
    return rc < 0 ? 0 : static_cast<std::size_t>(rc);
}
inline int fd(int rc, std::error_code &ec) noexcept
{
    return give(rc, ec) < 0 ? -1 : rc;
}
using weft::detail::to_ns;
} // namespace detail

inline int socket(int domain, int type, int protocol)
{
    return detail::give(weft_socket(domain, type, protocol), "weft::io::socket");
}
inline int socket(int domain, int type, int protocol,
                  std::error_code &ec) noexcept
{
    return detail::fd(weft_socket(domain, type, protocol), ec);
}

inline void adopt(int fd)
{
    detail::give(weft_fd_adopt(fd), "weft::io::adopt");
}
inline void adopt(int fd, std::error_code &ec) noexcept
{
    detail::give(weft_fd_adopt(fd), ec);
}

inline void close(int fd) { detail::give(weft_close(fd), "weft::io::close"); }
inline void close(int fd, std::error_code &ec) noexcept
{
    detail::give(weft_close(fd), ec);
}

/* Wait until fd is ready for `events` (WEFT_IN, WEFT_OUT); the ready
 * subset (weft_wait_fd; 0 with an error_code set). */
inline unsigned wait_fd(int fd, unsigned events)
{
    return static_cast<unsigned>(
        detail::give(weft_wait_fd(fd, events), "weft::io::wait_fd"));
}
inline unsigned wait_fd(int fd, unsigned events, std::error_code &ec) noexcept
{
    int rc = detail::give(weft_wait_fd(fd, events), ec);
    return rc < 0 ? 0u : static_cast<unsigned>(rc);
}
template <class Rep, class Period>
unsigned wait_fd(int fd, unsigned events,
                 const std::chrono::duration<Rep, Period> &d)
{
    return static_cast<unsigned>(
        detail::give(weft_wait_fd_for(fd, events, detail::to_ns(d)),
                     "weft::io::wait_fd"));
}
template <class Rep, class Period>
unsigned wait_fd(int fd, unsigned events,
                 const std::chrono::duration<Rep, Period> &d,
                 std::error_code &ec) noexcept
{
    int rc = detail::give(weft_wait_fd_for(fd, events, detail::to_ns(d)), ec);
    return rc < 0 ? 0u : static_cast<unsigned>(rc);
}

inline std::size_t read(int fd, void *buf, std::size_t len)
{
    return detail::count(weft_read(fd, buf, len), "weft::io::read");
}
inline std::size_t read(int fd, void *buf, std::size_t len,
                        std::error_code &ec) noexcept
{
    return detail::count(weft_read(fd, buf, len), ec);
}
template <class Rep, class Period>
std::size_t read(int fd, void *buf, std::size_t len,
                 const std::chrono::duration<Rep, Period> &d)
{
    return detail::count(weft_read_for(fd, buf, len, detail::to_ns(d)),
                         "weft::io::read");
}
template <class Rep, class Period>
std::size_t read(int fd, void *buf, std::size_t len,
                 const std::chrono::duration<Rep, Period> &d,
                 std::error_code &ec) noexcept
{
    return detail::count(weft_read_for(fd, buf, len, detail::to_ns(d)), ec);
}

/* All of buf (weft_write: an error after part went says not how much). */
inline std::size_t write(int fd, const void *buf, std::size_t len)
{
    return detail::count(weft_write(fd, buf, len), "weft::io::write");
}
inline std::size_t write(int fd, const void *buf, std::size_t len,
                         std::error_code &ec) noexcept
{
    return detail::count(weft_write(fd, buf, len), ec);
}
template <class Rep, class Period>
std::size_t write(int fd, const void *buf, std::size_t len,
                  const std::chrono::duration<Rep, Period> &d)
{
    return detail::count(weft_write_for(fd, buf, len, detail::to_ns(d)),
                         "weft::io::write");
}
template <class Rep, class Period>
std::size_t write(int fd, const void *buf, std::size_t len,
                  const std::chrono::duration<Rep, Period> &d,
                  std::error_code &ec) noexcept
{
    return detail::count(weft_write_for(fd, buf, len, detail::to_ns(d)), ec);
}

/* Some of buf, at least one byte (weft_write_some). */
inline std::size_t write_some(int fd, const void *buf, std::size_t len)
{
    return detail::count(weft_write_some(fd, buf, len), "weft::io::write_some");
}
inline std::size_t write_some(int fd, const void *buf, std::size_t len,
                              std::error_code &ec) noexcept
{
    return detail::count(weft_write_some(fd, buf, len), ec);
}
template <class Rep, class Period>
std::size_t write_some(int fd, const void *buf, std::size_t len,
                       const std::chrono::duration<Rep, Period> &d)
{
    return detail::count(weft_write_some_for(fd, buf, len, detail::to_ns(d)),
                         "weft::io::write_some");
}
template <class Rep, class Period>
std::size_t write_some(int fd, const void *buf, std::size_t len,
                       const std::chrono::duration<Rep, Period> &d,
                       std::error_code &ec) noexcept
{
    return detail::count(weft_write_some_for(fd, buf, len, detail::to_ns(d)),
                         ec);
}

/* A connection (an owned fd); addr and len may be NULL. */
inline int accept(int lfd, struct sockaddr *addr = nullptr,
                  socklen_t *len = nullptr)
{
    return detail::give(weft_accept(lfd, addr, len), "weft::io::accept");
}
inline int accept(int lfd, struct sockaddr *addr, socklen_t *len,
                  std::error_code &ec) noexcept
{
    return detail::fd(weft_accept(lfd, addr, len), ec);
}
template <class Rep, class Period>
int accept(int lfd, struct sockaddr *addr, socklen_t *len,
           const std::chrono::duration<Rep, Period> &d)
{
    return detail::give(weft_accept_for(lfd, addr, len, detail::to_ns(d)),
                        "weft::io::accept");
}
template <class Rep, class Period>
int accept(int lfd, struct sockaddr *addr, socklen_t *len,
           const std::chrono::duration<Rep, Period> &d,
           std::error_code &ec) noexcept
{
    return detail::fd(weft_accept_for(lfd, addr, len, detail::to_ns(d)), ec);
}

inline void connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    detail::give(weft_connect(fd, addr, len), "weft::io::connect");
}
inline void connect(int fd, const struct sockaddr *addr, socklen_t len,
                    std::error_code &ec) noexcept
{
    detail::give(weft_connect(fd, addr, len), ec);
}
template <class Rep, class Period>
void connect(int fd, const struct sockaddr *addr, socklen_t len,
             const std::chrono::duration<Rep, Period> &d)
{
    detail::give(weft_connect_for(fd, addr, len, detail::to_ns(d)),
                 "weft::io::connect");
}
template <class Rep, class Period>
void connect(int fd, const struct sockaddr *addr, socklen_t len,
             const std::chrono::duration<Rep, Period> &d,
             std::error_code &ec) noexcept
{
    detail::give(weft_connect_for(fd, addr, len, detail::to_ns(d)), ec);
}

} // namespace io

} // namespace weft

#endif /* WEFT_WEFT_HPP */
