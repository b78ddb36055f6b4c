/*
 * weft/host_request.h — the `request` group: reading the request. Every
 * policy, any thread that currently holds the request (the handler's, or a
 * callback's). Strings are NUL-terminated, owned by the host and live until
 * the response is complete; never free them.
 */
#ifndef WEFT_HOST_REQUEST_H
#define WEFT_HOST_REQUEST_H

#include <weft/types.h>

#define WEFT_HOST_REQUEST_VERSION 3u /* 2: traceparent; 3: json_body */

/**
 * Completion of body_read() started with a callback, on the loop thread that
 * owns `req`: `rc` and the part as the blocking form returns them.
 */
typedef void (*weft_body_callback)(weft_req *req, void *arg, int rc, const void *data, size_t len);

typedef struct weft_host_request {
    uint32_t struct_size;
    uint32_t version; /**< WEFT_HOST_REQUEST_VERSION of the running host */
    /** The method: "GET", "POST", ... */
    const char *(*method)(const weft_req *req);
    /** The path without the query string, as received. */
    const char *(*path)(const weft_req *req);
    /**
     * A named parameter of the route pattern ("/persons/{id}"),
     * percent-decoded; NULL if absent. `len` (may be NULL) gets its length.
     */
    const char *(*param)(const weft_req *req, const char *name, size_t *len);
    /** A query-string parameter, percent-decoded ('+' is a space); NULL if absent; `len` as for param. */
    const char *(*query)(const weft_req *req, const char *name, size_t *len);
    /** A request header, name case-insensitive; NULL if absent; `len` as for param. */
    const char *(*header)(const weft_req *req, const char *name, size_t *len);
    /** The value of cookie `name` (every Cookie header, quotes removed); NULL if absent; `len` as for param. */
    const char *(*cookie)(const weft_req *req, const char *name, size_t *len);
    /** The raw query string after '?', not decoded; NULL when the target has no '?'. */
    const char *(*query_string)(const weft_req *req);
    /**
     * The i-th request header (0-based, arrival order, names lowercase):
     * WEFT_OK with *name, *value and *value_len set, WEFT_ERROR past the
     * last. A header sent twice appears twice.
     */
    weft_rc (*header_at)(const weft_req *req, size_t i, const char **name, const char **value, size_t *value_len);
    /** The i-th query parameter, percent-decoded, as header_at. */
    weft_rc (*query_at)(const weft_req *req, size_t i, const char **name, const char **value, size_t *value_len);
    /** The client's address as text ("203.0.113.7", "2001:db8::1"); *port (may be NULL) its port. "" and 0 if unknown. */
    const char *(*peer_addr)(const weft_req *req, int *port);
    /** The local address and port of the listener the request arrived on, as peer_addr. */
    const char *(*local_addr)(const weft_req *req, int *port);
    /**
     * The request id: the client's X-Request-Id when it is 1..64 characters
     * of [A-Za-z0-9._:-], else one weft made up. Sent back as X-Request-Id,
     * written to the access log and put in log lines.
     */
    const char *(*id)(const weft_req *req);
    /**
     * The body collected whole (may contain NULs; always followed by a NUL);
     * *len gets its size. On a `stream_body = true` route only what came
     * with the head: use body_read there.
     */
    const char *(*body)(const weft_req *req, size_t *len);
    /**
     * The next part of the request body. On a `stream_body = true` route the
     * body streams with backpressure (one part of memory per upload); on
     * other routes the whole body is one part. WEFT_OK with *data and *len
     * set, valid until the next call, *len == 0 once the body is over;
     * WEFT_ERROR past the route's max_body (the answer is then 413) or on
     * misuse; WEFT_TIMEOUT when the client sent nothing for
     * limits.request_timeout_ms; WEFT_CANCELLED once the client left or the
     * route's timeout_ms passed.
     * cb NULL (pool, coroutine): waits (the worker blocks, the coroutine
     * suspends) and returns the outcome; from a reactive handler WEFT_ERROR.
     * cb set (reactive; loop thread only): returns WEFT_AGAIN and `cb` gets
     * the outcome exactly once; data and len are not written. No other read
     * until it ran.
     */
    weft_rc (*body_read)(weft_req *req, const void **data, size_t *len, weft_body_callback cb, void *arg);
    /**
     * Non-zero once the request is withdrawn: its client went away or its
     * route's timeout_ms passed. A long computation should stop and return.
     * Cheap (one atomic load); any thread. The host's own waits already end
     * with WEFT_CANCELLED by themselves.
     */
    int (*cancelled)(const weft_req *req);

    /* ---- version 2 ---- */
    /**
     * The request's span as a W3C traceparent value,
     * "00-<32 hex trace id>-<16 hex span id>-<2 hex flags>" (55 characters,
     * lowercase): the trace id is the one in the access log (characters 3 to
     * 34), continued from the client's traceparent when it sent a valid one;
     * the span id is weft's span for this request, the parent of what the
     * plugin calls. http->fetch already sends a child of it; a plugin talking
     * to other services over its own sockets sends this value as their
     * traceparent. Never NULL; lives as long as the request. Every policy.
     */
    const char *(*traceparent)(const weft_req *req);

    /* ---- version 3 ---- */
    /**
     * The body as JSON text that is safe to hand to a recursive parser
     * (jansson's json_loadb): WEFT_OK with *text and *len set (either may be
     * NULL) when the request says `Content-Type: application/json`
     * (parameters such as charset allowed, any case) and its arrays and
     * objects nest at most `max_depth` deep (1 – 1000; 0 takes 32), counted
     * outside strings. Otherwise it has set the answer — 415 "content-type
     * must be application/json" (which also keeps a browser on another site
     * from posting it as a preflight-free text/plain request) or 400
     * "invalid JSON: nested more than N levels deep", JSON errors as
     * response->error_json writes them — and returns WEFT_ERROR: the handler
     * returns WEFT_OK and that answer goes out. Judges nothing else: the
     * parser checks the syntax. Why the bound: jansson recurses once per
     * level, up to 2048, and a coroutine's stack (64 KiB by default) holds
     * far fewer. The body as body() gives it; every policy.
     */
    weft_rc (*json_body)(weft_req *req, int max_depth, const char **text, size_t *len);
} weft_host_request;

#endif
