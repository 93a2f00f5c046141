/*
 * base/direct.c — the counter of base/direct.h.
 */
#include "base/direct.h"

__thread _Atomic unsigned weft__direct_calls
    __attribute__((tls_model("initial-exec")));
