/*
 * A request the router matched to a static route (a prefix), once
 * admitted like any route (http/admit.h: its rate_limit and the
 * connection's abuse budget): served by edge/static.c on its generation,
 * which it holds until h2o frees the request (a download outlives a
 * reload), and counted in the route's metrics series like any route.
 */
#ifndef WEFT_HTTP_STATIC_ROUTE_H
#define WEFT_HTTP_STATIC_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "base/h2o_glue.h"
#include "core/loop.h"
#include "edge/static.h"
#include "http/ratelimit.h"
#include "reload/generation.h"

/**
 * Serves `req` from `sr`. The request counts in `conn`'s work in flight
 * (weft_abuse_request_start succeeded) until h2o frees it: that ends it.
 * Its latency is from `start` (weft_now_ns() at admission) to the file
 * handler's answer.
 */
void weft_http_static(h2o_req_t *req, weft_static_route *sr, weft_conn *conn, uint64_t start, weft_static_target t);
/** The static route's rate_limit, as http/admit.h checks it. */
weft_ratelimit_route weft_http_static_limit(weft_static_route *sr);

#endif
