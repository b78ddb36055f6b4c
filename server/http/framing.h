/*
 * Strict HTTP/1.x framing, checked on the raw request head before any
 * handler (built-in endpoints included) sees the request. h2o 2.2.5's
 * parser (picohttpparser) accepts what RFC 9112 says a server must reject:
 * Content-Length together with Transfer-Encoding (it decodes chunked and
 * keeps the connection open: request smuggling), two different
 * Content-Length values (the first wins), HTTP/1.1 without Host or with two,
 * header lines of any length up to ~400 KB; and it answers an absolute-form
 * target ("GET http://host/path") as a path that routes nowhere. h2o keeps
 * Content-Length, Transfer-Encoding and Host out of req->headers, so weft
 * reads the head as received, from the connection's input buffer.
 * Loop thread.
 */
#ifndef WEFT_FRAMING_H
#define WEFT_FRAMING_H

#include "base/h2o_glue.h"

/**
 * Registered first on every path: 1 when it answered (400 and close, or
 * 431), 0 to let the next handler have the request. Rewrites an
 * absolute-form target to its path.
 */
int weft_framing_check(h2o_req_t *req);

#endif
