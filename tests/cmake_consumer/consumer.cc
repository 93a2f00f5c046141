// consumer.cc — the C++ program of the CMake consumer check (check.sh):
// the C API from C++ (weft's headers declare it extern "C"), a pool whose
// tasks each fill their own slot of a std::vector, and the versions.
// Prints one line and exits 0 when every answer is right, 1 otherwise.
#include <weft/weft.h>

#include <cstdint>
#include <cstdio>
#include <numeric>
#include <vector>

namespace {

struct Slot {
    std::vector<long> *out;
    std::size_t index;
};

void *fill(void *arg)
{
    auto *s = static_cast<Slot *>(arg);
    (*s->out)[s->index] = static_cast<long>(s->index) * 3;
    return nullptr;
}

} // namespace

int main()
{
    if (weft_version() != WEFT_VERSION) {
        std::fprintf(stderr, "consumer_cxx: header %s, library %s\n",
                     WEFT_VERSION_STRING, weft_version_string());
        return 1;
    }
    weft_pool *pool;
    weft_pool_opts opts{};
    opts.threads = 2;
    if (int rc = weft_pool_create(&pool, &opts); rc != 0) {
        std::fprintf(stderr, "consumer_cxx: %s\n", weft_strerror(rc));
        return 1;
    }
    constexpr std::size_t n = 64;
    std::vector<long> out(n, -1);
    std::vector<Slot> slots(n);
    for (std::size_t i = 0; i < n; i++) {
        slots[i] = Slot{&out, i};
        if (int rc = weft_spawn(nullptr, pool, fill, &slots[i], nullptr);
            rc != 0) {
            std::fprintf(stderr, "consumer_cxx: %s\n", weft_strerror(rc));
            return 1;
        }
    }
    // Destroying the pool waits for every task on it, detached ones too.
    weft_pool_destroy(pool);
    long sum = std::accumulate(out.begin(), out.end(), 0L);
    if (sum != 3L * n * (n - 1) / 2) {
        std::fprintf(stderr, "consumer_cxx: sum %ld\n", sum);
        return 1;
    }
    std::printf("consumer_cxx: weft %s ok\n", weft_version_string());
    return 0;
}
