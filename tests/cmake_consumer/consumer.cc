// consumer.cc — the C++ program of the CMake consumer check (check.sh):
// weft/weft.hpp from an installed prefix: a pool, tasks that capture and
// return typed values, an exception carried to get(), a mutex under
// std::lock_guard, and the versions.  Prints one line and exits 0 when
// every answer is right, 1 otherwise.
#include <weft/weft.hpp>

#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

int main()
{
    if (weft_version() != WEFT_VERSION) {
        std::fprintf(stderr, "consumer_cxx: header %s, library %s\n",
                     WEFT_VERSION_STRING, weft_version_string());
        return 1;
    }
    long sum = 0;
    std::string thrown;
    {
        weft::pool pool{2};
        weft::mutex m;
        long locked = 0;
        std::vector<weft::task<long>> tasks;
        for (long i = 0; i < 64; i++)
            tasks.push_back(weft::spawn(pool, [i, &m, &locked] {
                std::lock_guard<weft::mutex> g(m);
                locked++;
                return i * 3;
            }));
        for (auto &t : tasks)
            sum += t.get();
        if (locked != 64) {
            std::fprintf(stderr, "consumer_cxx: %ld under the lock\n", locked);
            return 1;
        }
        auto bad = weft::spawn(pool, [] {
            throw std::runtime_error("from a task");
            return 0;
        });
        try {
            bad.get();
        } catch (const std::runtime_error &e) {
            thrown = e.what();
        }
    } // the pool drains and joins here
    if (sum != 3L * 64 * 63 / 2 || thrown != "from a task") {
        std::fprintf(stderr, "consumer_cxx: sum %ld, caught '%s'\n", sum,
                     thrown.c_str());
        return 1;
    }
    std::printf("consumer_cxx: weft %s ok\n", weft_version_string());
    return 0;
}
