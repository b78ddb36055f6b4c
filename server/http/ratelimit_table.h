/*
 * The token buckets of per-client rate limits, for every route and every
 * loop at once: a fixed number of entries (limits.rate_limit_clients),
 * allocated once, so a flood of distinct client addresses costs no memory
 * beyond it. Entries sit in sets of 8 chosen by a keyed hash of (limit,
 * client); each set has its own spin lock, held for a few dozen
 * instructions. A new client takes a free entry of its set, else one whose
 * bucket has refilled to full (it carries nothing), else the set's least
 * recently used (an eviction: that client starts again with a full bucket).
 */
#ifndef WEFT_RATELIMIT_TABLE_H
#define WEFT_RATELIMIT_TABLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct weft_rl_verdict {
    int allowed;
    double remaining;  /* tokens left after this request */
    uint64_t wait_ns;  /* refused: until one token is back */
    uint64_t full_ns;  /* until the bucket is full again */
} weft_rl_verdict;

/** A token bucket's arithmetic, shared by the table and the per-route buckets. */
void weft_rl_bucket_take(double *tokens, uint64_t *stamp_ns, double rate_per_ns, double burst, uint64_t now_ns,
                         weft_rl_verdict *v);

/** Allocates the table with room for `capacity` clients (rounded up to a multiple of 8) once; 0 or -1. Any thread. */
int weft_rl_table_init(size_t capacity);
/** Takes one token of limit `id` (non-zero) for client `key`. Any thread; the table must exist. */
void weft_rl_table_take(uint32_t id, const uint8_t key[16], double rate_per_ns, double burst, uint64_t now_ns,
                        weft_rl_verdict *v);

/** Entries in use, room, and clients evicted with a bucket not yet full (for /metrics). */
void weft_rl_table_stats(size_t *used, size_t *capacity, uint64_t *evicted);

#endif
