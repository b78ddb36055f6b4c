/*
 * What the operator's config does to every answer on the main listeners,
 * whoever wrote it (a plugin, a stream, weft's own 404/413/503/504): header
 * rules, CORS and compression. One h2o filter on the main path applies the
 * top-level rules; a route, once known, adds a per-request prefilter (h2o's
 * own mechanism) that applies the top-level and then the route's rules.
 * Both run when the answer's head is set up (h2o_start_response), so a
 * streamed answer gets them once, before its first part, and its parts go
 * through the compressor as they are flushed. Loop thread.
 */
#ifndef WEFT_EDGE_H
#define WEFT_EDGE_H

#include <stddef.h>

#include "base/h2o_glue.h"
#include "config/config.h"
#include "config/router.h"

struct weft_route;

/** Start-up: the filter for answers no route claimed, on the main host's path. */
void weft_edge_register(h2o_pathconf_t *path, const weft_config *(*serving)(void));

/**
 * The request was routed to `route` under `cfg`: whatever answer it gets
 * from now on carries the top-level rules and the route's. Calling it again
 * for the same request (a body collected, then routed again) does nothing.
 */
void weft_edge_route(h2o_req_t *req, const weft_route_cfg *route, const weft_config *cfg);

/**
 * A CORS preflight (OPTIONS with Origin and Access-Control-Request-Method)
 * for `route`, which has `cors` (weft_edge_cors_preflight_route found it)
 * and whose rate limit let it through: answered here without the plugin
 * (204, or 403 with no Access-Control-* header for an origin, method or
 * header not allowed; the route's other header rules apply to both).
 */
void weft_edge_preflight(h2o_req_t *req, const weft_route_cfg *route, const weft_config *cfg);

/**
 * A WebSocket handshake from an Origin that the route's `cors` does not
 * allow: browsers apply no CORS to WebSockets, so weft refuses it (403)
 * before the plugin sees it. 1 when refused.
 */
int weft_edge_refuse_origin(h2o_req_t *req, const weft_route_cfg *route);

/* The pieces (edge/headers.c, edge/cors.c, edge/compress.c). */
void weft_edge_headers_apply(h2o_req_t *req, const weft_headers_cfg *h);
/** `refused_preflight`: weft refused the request as a preflight (403): no Access-Control-* at all. */
void weft_edge_cors_apply(h2o_req_t *req, const weft_cors_cfg *c, int refused_preflight);
/** The plugin route with `cors` a preflight request is for, or NULL when it is not one (a static route has no `cors`). */
struct weft_route *weft_edge_cors_preflight_route(h2o_req_t *req, const weft_router *router, const char *path,
                                                  size_t len);
/** Why `c` refuses this preflight (the 403's text), or NULL when it allows it. */
const char *weft_edge_cors_preflight_refusal(h2o_req_t *req, const weft_cors_cfg *c);
/** Answers the allowed preflight for `c` with 204 (the route's prefilter already attached). */
void weft_edge_cors_preflight(h2o_req_t *req, const weft_cors_cfg *c);
/**
 * Sets the answer up for compression when it qualifies and fewer than `max`
 * answers are being compressed (limits.max_compressing_responses); returns
 * the slot the next filter fills.
 */
h2o_ostream_t **weft_edge_compress_setup(h2o_req_t *req, const weft_compress_cfg *c, int max, h2o_ostream_t **slot);

typedef struct weft_compress_stats {
    long active;  /* compressors alive now */
    long skipped; /* answers sent uncompressed because `max` were */
} weft_compress_stats;
/** Any thread (/metrics). */
weft_compress_stats weft_edge_compress_stats(void);
/**
 * The coding of `c->algs` the request's Accept-Encoding headers prefer
 * (highest q, then the configured order), or -1 for identity. Reads at most
 * WEFT_EDGE_AE_MAX_CODINGS codings, however many headers carry them.
 */
int weft_edge_negotiate(const h2o_headers_t *headers, const weft_compress_cfg *c);
#define WEFT_EDGE_AE_MAX_CODINGS 32

#endif
