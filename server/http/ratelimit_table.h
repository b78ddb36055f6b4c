/*
 * The token buckets of per-client rate limits, for every route and every
 * loop at once: a fixed number of entries (limits.rate_limit_clients),
 * allocated once, so a flood of distinct client addresses costs no memory
 * beyond it. Entries sit in sets of 8 chosen by a keyed hash of (limit,
 * client); each set has its own mutex, held for a few dozen instructions
 * (a mutex, not a spin lock: on a busy machine a preempted holder must not
 * cost the other loops their time slice). A new client takes a free entry of its set, else one whose
 * bucket has refilled to full (it carries nothing), else the set's least
 * recently used (an eviction: that client starts again with a full bucket).
 */
#ifndef WEFT_RATELIMIT_TABLE_H
#define WEFT_RATELIMIT_TABLE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct weft_rl_verdict {
    int allowed;
    uint64_t remaining; /* requests that would pass now, after this one */
    uint64_t wait_ns;   /* refused: until one would pass */
} weft_rl_verdict;

/** A limit as the arithmetic sees it: one request every interval_ns, burst of them at once. */
typedef struct weft_rl_rate {
    uint64_t interval_ns; /* per_s / requests */
    uint64_t tolerance_ns; /* interval_ns x (burst - 1): how far ahead of time a client may run */
} weft_rl_rate;

/**
 * The token bucket as GCRA (the generic cell rate algorithm): the bucket is
 * one number, the time at which it would be full again (`tat`, the
 * theoretical arrival time), so taking a token is one compare-and-swap and
 * no lock. Any thread.
 */
void weft_rl_take(_Atomic uint64_t *tat, const weft_rl_rate *r, uint64_t now_ns, weft_rl_verdict *v);

/** Allocates the table with room for `capacity` clients (rounded up to a multiple of 8) once; 0 or -1. Any thread. */
int weft_rl_table_init(size_t capacity);
/** Takes one token of limit `id` (non-zero) for client `key`. Any thread; the table must exist. */
void weft_rl_table_take(uint32_t id, const uint8_t key[16], const weft_rl_rate *r, uint64_t now_ns,
                        weft_rl_verdict *v);

/** Entries in use, room, and clients evicted with a bucket not yet full (for /metrics). */
void weft_rl_table_stats(size_t *used, size_t *capacity, uint64_t *evicted);

#endif
