/*
 * Request bodies that stream to the handler (a route with stream_body = true):
 * h2o hands weft the body part by part as it arrives (h2o's
 * write_req/proceed_req), and weft hands each part to the plugin's next
 * read. One part at most is held here: h2o reads on only when the plugin
 * asks for the next one, so a 100 MB upload costs one part of memory, and a
 * plugin that reads slowly slows the client down (TCP or HTTP/2 flow
 * control), never the server's memory. Loop thread only.
 */
#ifndef WEFT_REQUEST_BODY_H
#define WEFT_REQUEST_BODY_H

#include <stddef.h>

#include "base/h2o_glue.h"
#include "request/request.h"

typedef struct weft_body weft_body;

/** How a read that had to wait ends: the waiter's own callback (dispatch/). */
typedef void (*weft_body_wake)(void *waiter, int rc);

/**
 * `req`'s body still arrives (req->proceed_req set): weft takes its parts
 * over for `r`, its first part being req->entity. `max` bounds the whole
 * body. -1 without memory.
 */
int weft_body_attach(weft_req *r, h2o_req_t *req, size_t max, int idle_timeout_ms);
/** h2o is freeing the request (client gone or stream reset), or weft answered it (504): no more parts. */
void weft_body_detach(weft_req *r);
/** Frees what the body holds (the request completes); an unfinished body is abandoned. */
void weft_body_release(weft_req *r);
/**
 * weft reads no more of `req`'s body (answered before its end, or its
 * reader is done): a no-op once the body ended, for a tunnel, or called
 * again. Else the HTTP/1 connection is marked not to carry another request
 * (call it before the answer's head goes out, or the head says keep-alive
 * and the connection closes anyway), a part h2o still delivers is dropped,
 * and on the loop's next turn h2o is told to stop reading
 * (proceed_req(req, h2o_httpclient_error_is_eos)): HTTP/1 closes the
 * connection once the answer is written, HTTP/2 ends the stream with
 * RST_STREAM(NO_ERROR) after the answer (RFC 9113 8.1). The answer must be
 * started by then: over HTTP/1 h2o answers 502 to a request that has none.
 */
void weft_body_abandon(h2o_req_t *req);
/** 1 when the body went past max_body: the answer is 413 whatever the handler set. */
int weft_body_too_large(const weft_req *r);
/** The body stopped before its end (HTTP/1: the connection cannot be reused). */
int weft_body_unfinished(const weft_req *r);

/**
 * The next part for the handler: WEFT_OK with *data and *len (len 0: the body is
 * over), WEFT_AGAIN when it is not there yet (`wake(waiter, rc)` runs once it
 * is, or once the body failed), WEFT_ERROR past max_body (the answer is 413)
 * or when the route does not stream, WEFT_TIMEOUT when the client sent
 * nothing for the idle timeout, WEFT_CANCELLED once the client left.
 */
int weft_body_next(weft_req *r, const void **data, size_t *len, weft_body_wake wake, void *waiter);
/** A waiting read gave up (its request was cancelled): forget the waiter. */
void weft_body_unwait(weft_req *r);

#endif
