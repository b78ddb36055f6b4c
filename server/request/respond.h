/*
 * The one responder: every answer weft writes itself (errors, built-in
 * endpoints, and a finished weft_req) goes out through here, with one
 * reason-phrase table. weft_respond and weft_respond_text answer instead of
 * reading on: a request body still arriving is abandoned (request/body.h).
 * Loop thread.
 */
#ifndef WEFT_RESPOND_H
#define WEFT_RESPOND_H

#include <stddef.h>

#include "base/h2o_glue.h"
#include "request/request.h"

enum { WEFT_RESPOND_NO_STORE = 1 };

const char *weft_reason_phrase(int status);

/** Sends `body` (copied into the request's pool) with a content type; flags: WEFT_RESPOND_NO_STORE. */
void weft_respond(h2o_req_t *req, int status, const char *content_type, const char *body, size_t len, int flags);
/** A text/plain answer: `message` and a newline. */
void weft_respond_text(h2o_req_t *req, int status, const char *message);
/**
 * 1 if the request's method is one of `allow` ("GET, HEAD", "POST");
 * otherwise answers 405 with that Allow header and returns 0.
 */
int weft_respond_method_ok(h2o_req_t *req, const char *allow);
/**
 * Start-up: which answers carry X-Request-Id (log.request_id_header), and
 * whether an access log is written (when not every answer carries the
 * header, the log reads the id from the request's X-Request-Id, which is
 * then set to the id the plugin saw).
 */
void weft_respond_request_ids(int header_mode, int access_log);
/** The access log's field for the request id, for the mode given above. */
const char *weft_respond_request_id_logfield(void);
/** Status and headers of `r` into h2o's response (500 if it failed without saying how). */
void weft_respond_head(h2o_req_t *req, weft_req *r);
/** Sends the response a handler built in `r` (500 if it failed without saying how); ends a stream. */
void weft_respond_req(h2o_req_t *req, weft_req *r);

/**
 * Registers `answer` as an h2o handler on `path`: it returns 1 when it
 * answered the request and 0 to let the next handler have it. Answerers
 * registered one after another share one h2o handler (one hop per request,
 * not one each), asked in registration order.
 */
void weft_respond_register(h2o_pathconf_t *path, int (*answer)(h2o_req_t *req));

#endif
