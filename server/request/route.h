/*
 * A served route as the layers below the generation see it: the plugin's
 * handlers and state, and what its log lines and metrics call it.
 * reload/generation.c fills it in; dispatch, db and the host API only read
 * it, so they never reach up into the generation that owns it. What a
 * higher layer keeps per route (its worker pool, its auto state, its
 * database pool, its generation, its module) sits in a slot that layer
 * takes (weft_route_slot_new) and reads through its own accessor, so this
 * header names none of their types.
 */
#ifndef WEFT_ROUTE_H
#define WEFT_ROUTE_H

#include <stdatomic.h>
#include <weft/plugin.h>

#include "config/config.h"

/** Per-route slots a process can hand out (the layers above take five). */
#define WEFT_ROUTE_SLOTS 8

typedef struct weft_route {
    const weft_route_cfg *cfg;
    const weft_plugin *desc;     /* the module's validated descriptor */
    void *state;
    int initialised;
    int stat_slot;               /* metrics series (base/stats.h); -1 when none */
    const weft_db_cfg *db_cfg;   /* its generation's database settings */
    const weft_ws_cfg *ws_cfg;   /* and its WebSocket limits */
    char label[320]; /* "route /x (plugin p 1.0.0)" for log lines */
    /* set: this build of the plugin crashed the server; the route answers 503 */
    int quarantined;
    /* blocking detector: last report time, number of slow slices */
    atomic_uint_fast64_t blocked_last_ns;
    atomic_uint_fast64_t blocked_total;
    /* a blocking-style host call from its reactive handler: last report time (dispatch/await.c) */
    atomic_uint_fast64_t misuse_last_ns;
    /* requests of this route in flight, while cfg->max_concurrent caps them
     * and the route has no metrics series to count them by (dispatch/) */
    atomic_int concurrent;
    /* the higher layers' per-route state, one slot per weft_route_slot_new() */
    void *slots[WEFT_ROUTE_SLOTS];
} weft_route;

/**
 * A new per-route slot, NULL in every route until its owner sets it. Before
 * the first generation is built (WEFT_ROUTE_SLOT takes it in a constructor);
 * the process aborts past WEFT_ROUTE_SLOTS.
 */
int weft_route_slot_new(void);
static inline void *weft_route_get(const weft_route *rt, int slot) { return rt->slots[slot]; }
static inline void weft_route_set(weft_route *rt, int slot, void *value) { rt->slots[slot] = value; }
/** Defines `int NAME` (extern, for an inline accessor in the owner's header), taken before main() runs. */
#define WEFT_ROUTE_SLOT(name)                                                                                       \
    int name = -1;                                                                                                  \
    __attribute__((constructor)) static void name##_take(void) { name = weft_route_slot_new(); }

#endif
