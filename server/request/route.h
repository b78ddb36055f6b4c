/*
 * A served route as the layers below the generation see it: the plugin's
 * handlers and state, the policy and pool that run it, and what its log
 * lines and metrics call it. reload/generation.c fills it in; dispatch, db
 * and the host API only read it, so they never reach up into the
 * generation that owns it.
 */
#ifndef WEFT_ROUTE_H
#define WEFT_ROUTE_H

#include <stdatomic.h>
#include <weft/plugin.h>

#include "config/config.h"

struct weft_module;
struct weft_workpool;
struct weft_generation;
struct weft_dbpool;
struct weft_quarantine;
struct weft_auto;
struct weft_ratelimit;

typedef struct weft_route {
    const weft_route_cfg *cfg;
    const weft_plugin *desc;     /* the module's validated descriptor */
    struct weft_module *module;  /* owner of desc (plugin/module.h) */
    void *state;
    int initialised;
    struct weft_workpool *pool;  /* dispatch == pool, or auto with a blocking-style handle */
    struct weft_auto *adapt;     /* dispatch == auto with handle: where it runs now (dispatch/auto.h) */
    int stat_slot;               /* metrics series (base/stats.h); -1 when none */
    struct weft_generation *gen; /* the generation the route belongs to (reload/) */
    const weft_db_cfg *db_cfg;   /* that generation's database settings */
    const weft_ws_cfg *ws_cfg;   /* and its WebSocket limits */
    struct weft_dbpool *dbpool;  /* its blocking connections for pool workers */
    char label[320]; /* "route /x (plugin p 1.0.0)" for log lines */
    /* set: this build of the plugin crashed the server; the route answers 503 */
    const struct weft_quarantine *quarantine;
    /* blocking detector: last report time, number of slow slices */
    atomic_uint_fast64_t blocked_last_ns;
    atomic_uint_fast64_t blocked_total;
    /* requests of this route in flight, while cfg->max_concurrent caps them
     * and the route has no metrics series to count them by (dispatch/) */
    atomic_int concurrent;
    /* rate_limit's state, found by path at the route's first request (http/ratelimit.c) */
    _Atomic(struct weft_ratelimit *) ratelimit;
} weft_route;

#endif
