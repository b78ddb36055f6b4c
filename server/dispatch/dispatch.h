/*
 * The three dispatch policies. Every request starts and ends on the loop
 * thread that accepted it; what happens in between depends on the route:
 *
 *   reactive   handle_async() on the loop; callbacks later, on the loop.
 *   coroutine  handle() in a coroutine on the loop; blocking primitives
 *              suspend it and a timer/message resumes it.
 *   pool       handle() on a worker thread; the result comes back to the
 *              loop through its multithread queue.
 *   auto       coroutine or pool, chosen per request from what the route's
 *              slices did (auto.h); reactive for a plugin with handle_async only.
 *
 * Work done on the loop thread runs in "slices" that are timed: a slice
 * longer than blocking.threshold_ms is reported as a blocked loop.
 */
#ifndef WEFT_DISPATCH_H
#define WEFT_DISPATCH_H

#include <stddef.h>

#include "request/request.h"

/**
 * The request whose plugin code this thread is running (a slice on a loop,
 * a pool handler on a worker), or NULL: what a crash report names.
 */
extern __thread weft_req *weft_dispatch_running;

/** Starts the route's handler for `r` (loop thread). */
void weft_dispatch_start(weft_req *r);
/**
 * The same for a request on a multiplexed (HTTP/2) connection: a reactive
 * handler starts once h2o has handled everything it read, so a stream the
 * client reset in the same packets (Rapid Reset) is cancelled before any of
 * its work runs. Other policies start as weft_dispatch_start does: their
 * handlers already start later than the reset can be read.
 */
void weft_dispatch_start_multiplexed(weft_req *r);
/** Resumes `r`'s suspended coroutine (loop thread). */
void weft_dispatch_resume(weft_req *r);
/** Runs fn(ctx) for `r` as a timed slice of loop-thread plugin code (loop thread). */
void weft_dispatch_run(weft_req *r, void (*fn)(void *ctx), void *ctx);
/** Runs a reactive completion callback for `r` as a timed slice (loop thread). */
void weft_dispatch_callback(weft_req *r, weft_callback cb, void *arg, int rc);
/** host->res_flush / res_flush_async (flush.c). */
int weft_flush_res_flush(weft_req *r);
void weft_flush_res_flush_async(weft_req *r, weft_callback cb, void *arg);
/** host->req_body_read / req_body_read_async (bodyread.c). */
int weft_bodyread_req_body_read(weft_req *r, const void **data, size_t *len);
void weft_bodyread_req_body_read_async(weft_req *r, weft_body_callback cb, void *arg);
/** host->done(): the reactive handler's response is complete. Any thread. */
void weft_dispatch_done(weft_req *r, int rc);
/**
 * Withdraws `r` (request/cancel.h, `reason` a WEFT_CANCEL_*): drops its
 * queued pool job, ends its waits with WEFT_CANCELLED. The request still
 * completes through weft_http_complete, now or when its handler returns.
 * Loop thread, never from inside a coroutine.
 */
void weft_dispatch_cancel(weft_req *r, int reason);
/**
 * The handler's request becomes long-lived (a WebSocket accepted, a stream
 * started): under `pool` its worker is lent (dispatch/workpool.h) so that
 * it stops counting against the pool. Returns 0, or -1 when the pool has
 * lent max_long_lived workers already: the caller refuses, and the request
 * is answered 503 + Retry-After when the handler returns. Other policies: 0.
 */
int weft_dispatch_long_lived(weft_req *r);

/** Gives every loop a coroutine stack pool of `stack_size` stacks (before the loops start). */
void weft_dispatch_attach(size_t stack_size);

#endif
