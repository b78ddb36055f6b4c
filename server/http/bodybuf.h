/*
 * Whole request bodies for routes that do not stream them. weft's h2o
 * handler accepts streamed bodies (a route with stream_body = true reads
 * them part by part, request/body.h), so h2o no longer buffers any body
 * itself once its first part is in: for every other route weft collects the
 * parts here, bounded by the route's max_body (413 past it) and by the idle
 * timeout between parts (408: the same for HTTP/2 as for HTTP/1), and by
 * limits.max_buffered_body_total for every body being collected or held
 * (503 for a body that would pass it, unless it is the only one), then
 * serves the request as if the body had come whole. Loop thread only, but
 * for the two process-wide figures.
 */
#ifndef WEFT_HTTP_BODYBUF_H
#define WEFT_HTTP_BODYBUF_H

#include <stddef.h>
#include <stdint.h>

#include "base/h2o_glue.h"

typedef struct weft_bodybuf_limits {
    size_t max_body;     /* the route's: past it 413 */
    size_t total;        /* limits.max_buffered_body_total: every body being collected or held */
    int idle_timeout_ms; /* the longest pause between two parts (0: none): past it 408 */
} weft_bodybuf_limits;

/**
 * Collects the rest of `req`'s body (its first part in req->entity, the rest
 * still arriving); then req->entity is the whole body, req->proceed_req
 * NULL, and `serve(self, req)` runs. Answers 413, 408 or 503 itself instead
 * when the body is too large, stops arriving, would take the bodies held
 * past their total, or memory runs out. The body's memory counts until h2o
 * frees the request (or at once when it is refused).
 */
void weft_bodybuf_collect(h2o_handler_t *self, h2o_req_t *req, const weft_bodybuf_limits *lim,
                          int (*serve)(h2o_handler_t *self, h2o_req_t *req));
/** Bytes every collected body holds now (weft_buffered_body_bytes). Any thread. */
size_t weft_bodybuf_bytes(void);
/** Bodies refused with 503 for the total (weft_buffered_body_refused_total). Any thread. */
uint64_t weft_bodybuf_refused_total(void);

#endif
