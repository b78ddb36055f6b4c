/* Signal policy of weft's threads. */
#ifndef WEFT_SIGNALS_H
#define WEFT_SIGNALS_H

/**
 * Blocks the asynchronous signals (SIGTERM, SIGHUP, ...) in the calling
 * thread so only the main thread receives them, and turns them into orderly
 * actions. Faults (SIGSEGV, SIGBUS, ...) stay deliverable: a blocked SIGSEGV
 * kills the process without running the handler that names an overflowing
 * coroutine's route.
 */
void weft_signals_block_async(void);

#endif
