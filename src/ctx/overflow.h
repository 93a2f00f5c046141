/*
 * overflow.h — naming the coroutine whose stack overflowed (internal).
 *
 * A coroutine that runs into the guard page below its stack gets SIGSEGV.
 * The kernel can deliver it only on another stack, so every thread that
 * runs coroutines gets an alternate signal stack (unless the application
 * gave it one already), and one process-wide SIGSEGV/SIGBUS handler checks
 * whether the fault address lies in the guard of the coroutine running on
 * the faulting thread.  If so it writes
 *     weft: stack overflow in coroutine 'NAME' (stack N KiB)
 * to stderr and aborts; any other fault goes to the handler that was
 * installed before ours, with that handler's flags honoured.
 *
 * Off for the whole process when the environment has
 * WEFT_OVERFLOW_HANDLER=0 (read once) or once weft_overflow_handler_disable
 * was called: signal dispositions are per process, so a program that owns
 * SIGSEGV/SIGBUS opts out of all of it.
 */
#ifndef WEFT_OVERFLOW_H
#define WEFT_OVERFLOW_H

/*
 * weft__overflow_thread_init - called once per thread, before the thread
 * first runs a coroutine (weft__thread_setup): installs the handler on the
 * first call in the process and gives this thread its alternate stack.
 * Failures leave the thread without the diagnostic, nothing worse.
 */
void weft__overflow_thread_init(void);

/*
 * weft__overflow_disable - turn the handler off for good
 * (weft_overflow_handler_disable):
 * removes it if it is installed and still the one in place, and keeps it
 * from being installed later.  Alternate stacks already given stay.
 */
void weft__overflow_disable(void);

#endif /* WEFT_OVERFLOW_H */
