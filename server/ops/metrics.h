/*
 * Prometheus metrics. Counters on the request path are per loop thread and
 * written only by that thread (a relaxed load + store, no lock, no shared
 * cache line); a scrape sums them. Route series are keyed by (path, policy)
 * and survive reloads, so counters stay monotonic across generations.
 */
#ifndef WEFT_METRICS_H
#define WEFT_METRICS_H

#include <stdatomic.h>
#include <stdint.h>

#include "config/config.h"

#define WEFT_STAT_SLOTS 512
#define WEFT_HIST_BUCKETS 14

typedef struct weft_slot_stats {
    atomic_uint_fast64_t code[6]; /* by status class: [1]=1xx ... [5]=5xx */
    atomic_uint_fast64_t bucket[WEFT_HIST_BUCKETS];
    atomic_uint_fast64_t sum_ns;
} weft_slot_stats;

typedef struct weft_loop_stats {
    weft_slot_stats slots[WEFT_STAT_SLOTS];
    atomic_uint_fast64_t unmatched[2]; /* 404, 405 */
    atomic_uint_fast64_t lag_ns;
    atomic_int_fast64_t coros_live;
    atomic_int_fast64_t coro_bytes;
    atomic_int_fast64_t inflight;
    atomic_int_fast64_t connections;
    atomic_uint_fast64_t conn_refused; /* accepts deferred at max_connections or EMFILE */
} weft_loop_stats;

/** Histogram upper bounds in seconds, shared by every weft histogram. */
extern const double weft_hist_bounds[WEFT_HIST_BUCKETS];
/** Index of the first bucket whose bound is >= seconds (WEFT_HIST_BUCKETS if none). */
int weft_hist_index(uint64_t ns);

/** The series slot for a route; -1 when all slots are taken. Control thread. */
int weft_metrics_slot(const char *path, weft_dispatch dispatch);

/** Records a finished request on the calling loop's stats. */
void weft_metrics_request(weft_loop_stats *s, int slot, int status, uint64_t elapsed_ns);

static inline void weft_stat_add(atomic_uint_fast64_t *c, uint64_t v)
{
    /* single writer: no read-modify-write instruction needed */
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v, memory_order_relaxed);
}

/** Requests answered by a route series and their total latency, over all loops. */
void weft_metrics_slot_totals(int slot, uint64_t *count, double *sum_seconds);

struct weft_generation;
/** Writes the whole exposition (text format 0.0.4) into a malloc'd buffer. */
char *weft_metrics_render(const struct weft_generation *gen, size_t *len);

#endif
