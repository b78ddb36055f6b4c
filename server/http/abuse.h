/*
 * Abuse budgets below HTTP: what one connection may cost before weft closes
 * it. h2o 2.2.5 has no Rapid Reset (CVE-2023-44487) mitigation and never
 * sends GOAWAY on its own; a client that opens streams and resets them at
 * once is never limited by the concurrent-streams setting, because each
 * reset stream leaves the count. weft keeps two budgets per connection:
 *   - streams reset (or otherwise withdrawn) before their response was
 *     written, within a window (limits.max_resets per limits.reset_window_ms);
 *   - handler work in flight, withdrawn or not (limits.max_inflight_per_conn).
 * Past either, the connection is shut down at the socket (h2o then closes it
 * and frees its streams), one line names the peer, a counter counts it, and
 * its requests still buffered are refused without dispatching anything.
 * Loop thread only.
 */
#ifndef WEFT_ABUSE_H
#define WEFT_ABUSE_H

#include <stdint.h>

#include "base/h2o_glue.h"

struct weft_loop;

/** Gives every loop its budget table (control thread, before the loops start). */
void weft_abuse_attach(void);
/**
 * A new request on `req`'s connection: 0 to go on, -1 when the connection is
 * being closed for abuse (the caller refuses the request without work).
 * `now` is weft_now_ns(), read once by the caller for the request.
 */
int weft_abuse_request_start(struct weft_loop *L, h2o_req_t *req, uint64_t now);
/** The request of connection `conn_id` completed (its handler returned). */
void weft_abuse_request_end(uint64_t conn_id);
/** `req` was withdrawn before its response was written (a reset stream). */
void weft_abuse_reset(struct weft_loop *L, h2o_req_t *req);

#endif
