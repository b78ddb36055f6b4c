/*
 * Memory handed back after bursts. glibc keeps what a burst freed (an
 * attack's buffers, a flood of WebSocket queues) in its arenas: the RSS
 * stays at the peak, and the next burst adds to it. Every 5 s loop 0 looks
 * at how much the arenas hold free and, past 4 MiB, gives it back to the
 * system with malloc_trim; the bytes returned are counted
 * (weft_memory_trimmed_bytes_total).
 */
#ifndef WEFT_OPS_TRIM_H
#define WEFT_OPS_TRIM_H

#include <stdint.h>

/** Registers the trim on loop 0's tick (control thread, before the loops start). */
void weft_trim_attach(void);
/** Bytes given back so far, and how many times. Any thread. */
uint64_t weft_trim_bytes(void);
uint64_t weft_trim_count(void);

#endif
