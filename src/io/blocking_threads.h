/*
 * blocking_threads.h — a look into weft_blocking's thread pool, for the
 * tests (internal).
 */
#ifndef WEFT_BLOCKING_THREADS_H
#define WEFT_BLOCKING_THREADS_H

/* Blocking threads alive now (busy or idle). */
unsigned weft__blocking_threads(void);

#endif /* WEFT_BLOCKING_THREADS_H */
