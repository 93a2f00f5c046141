/*
 * base/membarrier.c — registration and the call (base/membarrier.h).
 */
#include "base/membarrier.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool ok;

static void setup(void)
{
    ok = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0,
                 0) == 0;
}

bool weft__membarrier_ok(void)
{
    pthread_once(&once, setup);
    return ok;
}

bool weft__membarrier(void)
{
    return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) ==
           0;
}
