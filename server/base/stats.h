/*
 * Counters and histograms, the bottom of weft's observability: every layer
 * records into these, and ops/metrics.c renders them. Counters on the
 * request path are per loop thread and written only by that thread (a
 * relaxed load + store, no lock, no shared cache line); a scrape sums the
 * blocks of every loop. Route series are keyed by (path, policy) and survive
 * reloads, so counters stay monotonic across generations.
 */
#ifndef WEFT_STATS_H
#define WEFT_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define WEFT_STAT_SLOTS 512
#define WEFT_HIST_BUCKETS 14

typedef struct weft_slot_stats {
    atomic_uint_fast64_t code[6]; /* by status class: [1]=1xx ... [5]=5xx */
    atomic_uint_fast64_t bucket[WEFT_HIST_BUCKETS];
    atomic_uint_fast64_t sum_ns;
    atomic_uint_fast64_t cancelled; /* the client left before the answer: answered nobody */
    atomic_uint_fast64_t refused[2]; /* 503 before the handler ran: WEFT_REFUSED_* */
} weft_slot_stats;

/** Why a request was refused with 503 before its handler ran (weft_stats_refused). */
enum { WEFT_REFUSED_MAX_CONCURRENT = 0, WEFT_REFUSED_QUEUE_TIMEOUT = 1 };

/** One loop's block; written by that loop only. */
typedef struct weft_loop_stats {
    weft_slot_stats slots[WEFT_STAT_SLOTS];
    atomic_uint_fast64_t unmatched[2]; /* 404, 405 */
    atomic_uint_fast64_t lag_ns;
    atomic_int_fast64_t coros_live;
    atomic_int_fast64_t coro_bytes;
    atomic_int_fast64_t inflight;
    /* ∫ inflight dt in ns, up to inflight_at_ns (weft_stats_inflight): the
     * loop measures it itself, at every change, where a scrape (which a loop
     * answers between two pieces of work) only samples the gauge. */
    atomic_uint_fast64_t inflight_ns;
    uint64_t inflight_at_ns; /* the loop's own: nobody else reads it */
    atomic_int_fast64_t connections;
    atomic_uint_fast64_t conn_refused; /* accepts deferred at max_connections or EMFILE */
    atomic_uint_fast64_t conn_abuse_closed; /* connections shut down past an abuse budget */
    atomic_uint_fast64_t conn_evicted;      /* idle connections closed at max_connections for new ones */
    atomic_uint_fast64_t conn_per_ip_refused; /* closed at accept past limits.max_connections_per_ip */
    atomic_uint_fast64_t conn_proxy_refused;  /* closed on a proxy_protocol listener: no valid PROXY header */
    atomic_uint_fast64_t outbound[12];      /* outbound HTTP calls by weft_http_error */
    atomic_int_fast64_t fd_waits;           /* plugin fd waits parked (workers of this loop's requests too: atomic add) */
    atomic_int_fast64_t ws_open;            /* WebSockets open on this loop */
    atomic_uint_fast64_t ws_accepted;       /* upgrades accepted */
    atomic_uint_fast64_t ws_msgs[2];        /* messages received, sent */
    atomic_uint_fast64_t ws_slow_closed;    /* sockets closed for not reading (1008) */
} weft_loop_stats;

/** Histogram upper bounds in seconds, shared by every weft histogram. */
extern const double weft_hist_bounds[WEFT_HIST_BUCKETS];
/** Index of the first bucket whose bound is >= seconds (WEFT_HIST_BUCKETS if none). */
int weft_hist_index(uint64_t ns);

/** A zeroed block for one more loop, summed by every scrape from now on; NULL without memory. */
weft_loop_stats *weft_stats_loop_new(void);
/** Forgets every block (after the loops have stopped). */
void weft_stats_loops_free(void);
/** How many loop blocks exist, and block i (for per-loop series). */
int weft_stats_loop_count(void);
const weft_loop_stats *weft_stats_loop_at(int i);
/** The sum over loops of the 64-bit counter at `offset` in weft_loop_stats. */
uint64_t weft_stats_sum(size_t offset);

/** The series slot for (path, policy name); -1 when all slots are taken. Control thread. */
int weft_stats_slot(const char *path, const char *policy);
/** How many slots are taken, and a slot's path and policy name. */
int weft_stats_slot_count(void);
void weft_stats_slot_key(int slot, const char **path, const char **policy);

/** Records a finished request on the calling loop's block. */
void weft_stats_request(weft_loop_stats *s, int slot, int status, uint64_t elapsed_ns);
/** Records a request whose client left before it was answered. */
void weft_stats_cancelled(weft_loop_stats *s, int slot);
/**
 * The loop's requests in flight become `n` at `now_ns` (weft_now_ns()), on
 * that loop's thread: the gauge, and its time integral up to now (called
 * with an unchanged `n` too, so that the integral never lags far behind). A
 * time before the last call's counts as that one's.
 */
void weft_stats_inflight(weft_loop_stats *s, int_fast64_t n, uint64_t now_ns);
/** Records a request refused before its handler ran; `why` is WEFT_REFUSED_*. */
void weft_stats_refused(weft_loop_stats *s, int slot, int why);
/** Requests answered by a route series and their total latency, over all loops. */
void weft_stats_slot_totals(int slot, uint64_t *count, double *sum_seconds);

static inline void weft_stat_add(atomic_uint_fast64_t *c, uint64_t v)
{
    /* single writer: no read-modify-write instruction needed */
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v, memory_order_relaxed);
}

/* ---- Prometheus text format 0.0.4, the one writer every layer uses ---- */

/** "# HELP" and "# TYPE" lines. */
void weft_stats_write_header(FILE *f, const char *name, const char *type, const char *help);
/** A label value with \, " and newline escaped. */
void weft_stats_write_escaped(FILE *f, const char *s);
/** A histogram's buckets, _sum and _count; `labels` is "" or `k="v",...` without braces. */
void weft_stats_write_histogram(FILE *f, const char *name, const char *labels, const uint64_t *buckets,
                                uint64_t count, double sum);

#endif
