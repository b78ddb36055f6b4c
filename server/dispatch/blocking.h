/*
 * The blocked-loop detector. Plugin code that runs on an event-loop thread
 * (reactive handlers, callbacks, coroutine slices) is timed; a slice longer
 * than blocking.threshold_ms means a raw blocking call (sleep, PQexec,
 * pthread_mutex_lock...) pinned the loop and every connection on it waited.
 * It is logged with route, policy and duration at most once per interval per
 * route, and counted — the JDK's jdk.VirtualThreadPinned event, for C.
 */
#ifndef WEFT_BLOCKING_H
#define WEFT_BLOCKING_H

#include <stdatomic.h>
#include <stdint.h>

struct weft_route;

/** Sets the threshold (0 disables) and the per-route reporting interval. */
void weft_blocking_configure(int threshold_ms, int interval_s);
/** Called after each loop-thread slice of `route` with its duration. */
void weft_blocking_check(struct weft_route *route, uint64_t elapsed_ns);
/**
 * The same for a slice that belongs to no route (a plugin timer): `what`
 * names it in the log line, `last_ns` rate-limits that line.
 */
void weft_blocking_check_slice(const char *what, atomic_uint_fast64_t *last_ns, uint64_t elapsed_ns);
/** The threshold in ns (0: the detector is off). */
uint64_t weft_blocking_threshold_ns(void);
/** The per-route reporting interval in ns (blocking.interval_s), shared by other once-per-interval lines. */
uint64_t weft_blocking_interval_ns(void);
/** Slow slices seen since start, all routes. */
uint64_t weft_blocking_total(void);

#endif
