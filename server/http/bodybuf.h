/*
 * Whole request bodies for routes that do not stream them. weft's h2o
 * handler accepts streamed bodies (a route with stream_body = true reads
 * them part by part, request/body.h), so h2o no longer buffers any body
 * itself once its first part is in: for every other route weft collects the
 * parts here, bounded by the route's max_body (413 past it) and by the idle
 * timeout between parts (408: the same for HTTP/2 as for HTTP/1), then
 * serves the request as if the body had come whole. Loop thread only.
 */
#ifndef WEFT_HTTP_BODYBUF_H
#define WEFT_HTTP_BODYBUF_H

#include <stddef.h>

#include "base/h2o_glue.h"

/**
 * Collects the rest of `req`'s body (its first part in req->entity, the rest
 * still arriving); then req->entity is the whole body, req->proceed_req
 * NULL, and `serve(self, req)` runs. Answers 413, 408 or 503 itself instead
 * when the body is too large, stops arriving or memory runs out.
 */
void weft_bodybuf_collect(h2o_handler_t *self, h2o_req_t *req, size_t max, int idle_timeout_ms,
                          int (*serve)(h2o_handler_t *self, h2o_req_t *req));

#endif
