/*
 * Whether a routed request may go on: the one decision plugin routes and
 * static routes share, so that a public directory is limited and charged
 * exactly like a handler. Two checks, each made once per request:
 *   - the route's rate_limit (http/ratelimit.c), before anything is spent
 *     on the request (no body collected, no copy, no worker); a collected
 *     body brings the request back to routing, and the token it took is not
 *     taken again;
 *   - the connection's abuse budget (http/abuse.c): from here the request
 *     counts in its connection's work in flight until the caller's
 *     weft_abuse_request_end.
 * A plugin route asks for the first at routing and the second once its
 * body is whole; a static route asks for both at once. Loop thread.
 */
#ifndef WEFT_HTTP_ADMIT_H
#define WEFT_HTTP_ADMIT_H

#include <stdint.h>

#include "base/h2o_glue.h"
#include "core/loop.h"
#include "http/ratelimit.h"

enum { WEFT_ADMIT_RATE = 1, WEFT_ADMIT_CONN = 2 };

typedef struct weft_admit {
    weft_ratelimit_route limit;
    weft_loop *loop;
    weft_conn *conn;        /* its admission record (may be NULL: refused by the budget, which fails closed) */
    const uint8_t *key;     /* the client, 16 bytes (http/client_addr.h) */
    size_t table_capacity;  /* limits.rate_limit_clients */
    uint64_t now;           /* weft_now_ns() once read by a check (0 until then): the caller's latency starts there */
    const char *why;        /* with a refusal: the answer's text */
} weft_admit;

/**
 * Makes the checks of `what` (WEFT_ADMIT_*) for `req`: 0 to go on, or the
 * status to answer with `a->why` (429, its Retry-After and RateLimit
 * headers added already; 503 for a connection past its budget).
 */
int weft_http_admit(h2o_req_t *req, weft_admit *a, unsigned what);

#endif
