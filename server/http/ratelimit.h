/*
 * Routes' rate_limit: a token bucket per client (in http/ratelimit_table.c)
 * or one for the whole route, consulted after routing and before anything
 * else is done for the request: a refused request costs no body buffering,
 * no copy, no worker and no coroutine. The state of a route's limit is kept
 * by path and kind (a plugin route and a static prefix may share a path:
 * each has its own) for the life of the process: a reload that leaves a
 * route's rate_limit as it was keeps its buckets; one that changes it
 * starts afresh.
 */
#ifndef WEFT_RATELIMIT_H
#define WEFT_RATELIMIT_H

#include <stdint.h>
#include <stdio.h>

#include "base/h2o_glue.h"
#include "request/route.h"

/** A route's limit as this file needs it, whichever kind the route is (plugin or static). */
typedef struct weft_ratelimit_route {
    const char *path;             /* its state is kept by path and kind */
    const char *kind;             /* WEFT_RL_KIND_PLUGIN or WEFT_RL_KIND_STATIC: the metric's kind label */
    const weft_ratelimit_cfg *cfg;
    void **limiter; /* where the generation's route keeps its state: NULL until its first request */
} weft_ratelimit_route;

#define WEFT_RL_KIND_PLUGIN "plugin"
#define WEFT_RL_KIND_STATIC "static"

/** Where a plugin route keeps its limiter (a route slot). */
void **weft_ratelimit_slot(weft_route *route);

/**
 * Takes one token of `route`'s limit for the client `key` (16 bytes, from
 * http/client_addr.h). Returns 0 to go on, or 1 after adding Retry-After,
 * RateLimit and RateLimit-Policy to req's response headers: the caller
 * answers 429. A route without rate_limit returns 0 at once. Loop thread.
 */
int weft_ratelimit_refuse(h2o_req_t *req, const weft_ratelimit_route *route, const uint8_t key[16],
                          size_t table_capacity, uint64_t now_ns);

/** weft_rate_limited_total{route,kind} and the client table's gauges, in Prometheus text. */
void weft_ratelimit_metrics(FILE *f);

#endif
