/*
 * A request the router matched to a static route (a prefix): served by
 * edge/static.c on its generation, which it holds until h2o frees the
 * request (a download outlives a reload), and counted in the route's
 * metrics series like any route.
 */
#ifndef WEFT_HTTP_STATIC_ROUTE_H
#define WEFT_HTTP_STATIC_ROUTE_H

#include <stddef.h>

#include "base/h2o_glue.h"
#include "reload/generation.h"

void weft_http_static(h2o_req_t *req, weft_static_route *sr, const char *norm, size_t norm_len, size_t prefix_len);

#endif
