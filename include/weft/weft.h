/* weft/weft.h — umbrella header: includes every public weft header. */
#ifndef WEFT_WEFT_H
#define WEFT_WEFT_H

#include <weft/error.h>
#include <weft/coro.h>
#include <weft/pool.h>
#include <weft/task.h>
#include <weft/event.h>
#include <weft/timer.h>
#include <weft/blocking.h>
#include <weft/sync.h>
#include <weft/chan.h>
#include <weft/io.h>

#endif /* WEFT_WEFT_H */
