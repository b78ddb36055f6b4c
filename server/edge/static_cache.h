/*
 * Each loop remembers, until its next 100 ms tick, which paths of which
 * static route passed the symlink check: the check is a path walk in the
 * kernel per file h2o may open, as costly as the rest of serving a small
 * file. The tick that empties this cache is the one that empties h2o's file
 * cache (core/loop.c), so a checked path is trusted exactly as long as h2o
 * may keep the descriptor it opened for it. Loop thread only, no lock.
 */
#ifndef WEFT_EDGE_STATIC_CACHE_H
#define WEFT_EDGE_STATIC_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "core/loop.h"

/** Register before the loops start (process/): empties each loop's cache on its tick, frees it at teardown. */
extern const weft_loop_hook weft_static_cache_hook;

/** 1 when (route id, rel, variants) passed the check since this loop's last tick. */
int weft_static_cache_hit(uint64_t route_id, const char *rel, size_t len, int variants);
/** Remembers that it passed (a path too long for the cache is not remembered). */
void weft_static_cache_put(uint64_t route_id, const char *rel, size_t len, int variants);

#endif
