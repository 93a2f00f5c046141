// test_headers_cxx.cc — the public headers compile as C++ and link
// (extern "C" linkage is right, no C-only syntax).
#include <weft/weft.h>

#include <cstdio>
#include <cstring>

int main()
{
    const char *s = weft_strerror(-EINVAL);
    if (s == nullptr || std::strcmp(s, "unknown error") == 0) {
        std::fprintf(stderr, "weft_strerror(-EINVAL) gave %s\n", s ? s : "NULL");
        return 1;
    }
    if (weft_coro_status(nullptr) != WEFT_CORO_DEAD) {
        std::fprintf(stderr, "weft_coro_status(NULL) is not DEAD\n");
        return 1;
    }
    // The embedded structs (sync.h) are usable from C++.
    weft_mutex m;
    weft_mutex_init(&m);
    if (weft_mutex_trylock(&m) != 0 || weft_mutex_unlock(&m) != 0) {
        std::fprintf(stderr, "weft_mutex trylock/unlock failed\n");
        return 1;
    }
    weft_sem sem;
    weft_sem_init(&sem, 1);
    if (weft_sem_trywait(&sem) != 0 || weft_sem_trywait(&sem) != -EAGAIN) {
        std::fprintf(stderr, "weft_sem_trywait gave the wrong answers\n");
        return 1;
    }
    if (weft_wait_fd_for(-1, WEFT_IN | WEFT_OUT, 0) != -EBADF) {
        std::fprintf(stderr, "weft_wait_fd(-1) is not -EBADF\n");
        return 1;
    }
    return 0;
}
