/* weft/weft.h — umbrella header: includes every public weft header. */
#ifndef WEFT_WEFT_H
#define WEFT_WEFT_H

#include <weft/error.h>
#include <weft/coro.h>

#endif /* WEFT_WEFT_H */
