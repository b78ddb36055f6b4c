/*
 * Abuse budgets below HTTP: what one connection may cost before weft closes
 * it. A client that opens streams and resets them at once (Rapid Reset,
 * CVE-2023-44487) is never limited by the concurrent-streams setting,
 * because each reset stream leaves the count; h2o's own mitigation only
 * delays such a connection. weft keeps two budgets per connection, in its
 * admission record (core/loop.h weft_conn.ext: nothing shared to exhaust):
 *   - streams reset (or otherwise withdrawn) before their response was
 *     written, within a window (limits.max_resets per limits.reset_window_ms);
 *   - handler work in flight, withdrawn or not (limits.max_inflight_per_conn).
 * Past either, an HTTP/2 connection gets GOAWAY (h2o's graceful shutdown; an
 * HTTP/1 one is shut down at the socket), one line names the peer, a counter
 * counts it, and its requests still coming are refused without dispatching
 * anything. A request whose connection has no record is refused: the
 * accounting fails closed.
 * Loop thread only.
 */
#ifndef WEFT_ABUSE_H
#define WEFT_ABUSE_H

#include <stdint.h>

#include "base/h2o_glue.h"

struct weft_loop;
struct weft_conn;
/**
 * A new request on `req`'s connection: 0 to go on, -1 when the connection is
 * being closed for abuse (the caller refuses the request without work).
 * `now` is weft_now_ns(), read once by the caller for the request.
 */
int weft_abuse_request_start(struct weft_loop *L, h2o_req_t *req, struct weft_conn *c, uint64_t now);
/** A request of connection `c` (may be NULL) completed (its handler returned). */
void weft_abuse_request_end(struct weft_conn *c);
/** `req` was withdrawn before its response was written (a reset stream). */
void weft_abuse_reset(struct weft_loop *L, h2o_req_t *req);

#endif
