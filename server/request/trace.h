/*
 * A request's trace context (W3C Trace Context): continued from a valid
 * incoming traceparent, or started here; the server span weft records for
 * it, handed to the OTLP exporter when the request completes. An answer
 * weft gives itself, before or instead of a plugin (404, 405, 413, 429, a
 * CORS preflight, a static file), gets a span too, by the same rules
 * (weft_trace_answer_start), while spans are exported.
 */
#ifndef WEFT_REQUEST_TRACE_H
#define WEFT_REQUEST_TRACE_H

#include <stdint.h>
#include <sys/socket.h>
#include <weft/plugin.h>

#include "base/h2o_glue.h"
#include "base/tracectx.h"
#include "config/config.h"

typedef struct weft_req_trace {
    uint8_t trace_id[16];
    uint8_t span_id[8];   /* weft's server span */
    uint8_t parent_id[8]; /* the caller's span, when has_parent */
    uint8_t flags;        /* WEFT_TRACE_SAMPLED or 0: what weft propagates */
    int has_parent;
    const char *tracestate;                      /* passed on as it came (arena); NULL: none */
    char traceparent[WEFT_TRACEPARENT_LEN + 1];  /* weft's span as a traceparent value */
    char trace_id_hex[33];
} weft_req_trace;

/** The access log's field name (h2o's request environment; ops/accesslog.c appends it). */
#define WEFT_TRACE_ENV "weft.trace_id"

/**
 * Reads traceparent/tracestate from the copied headers (continued when
 * `cfg->accept_incoming` and valid) or starts a trace, sampled by
 * `cfg->sample_ratio`; then gives the trace id to h2o's request `req` for
 * the access log. When `req` has an answer trace (weft_trace_answer_start),
 * continues that one instead. Loop thread, at dispatch.
 */
void weft_req_trace_start(weft_req *r, const weft_trace_cfg *cfg, h2o_req_t *req);
/** Hands the request's server span to the exporter (when sampled and exporting). Loop thread, at completion. */
void weft_req_trace_end(weft_req *r, int status);
/** The span-in-waiting of an answer weft may give itself (in h2o's request pool). */
typedef struct weft_answer_trace weft_answer_trace;
/**
 * While spans are exported (otherwise NULL, after one relaxed load: the
 * request path spends nothing more), starts the trace of h2o's request
 * `req` from its own headers, by the rules of weft_req_trace_start, gives
 * the access log its trace id, and arms its span: when h2o frees the
 * request, the span of whatever answer it got (h2o's res.status; 499 for
 * none) goes to the exporter, unless a plugin took the request over
 * (weft_req_trace_start on the same `req` continues this very trace and
 * disarms it). `client` is the client's address (NULL: none). For a
 * request already started (a collected body brought it back), the same
 * one. Loop thread.
 */
weft_answer_trace *weft_trace_answer_start(h2o_req_t *req, const weft_trace_cfg *cfg, const struct sockaddr *client);
/**
 * Names the route that matched (the span's name and http.route; until then
 * the span is named by the method) and who answers: "weft" (the default)
 * or "static". `a` may be NULL (not exporting): nothing happens.
 */
void weft_trace_answer_route(weft_answer_trace *a, const char *route, const char *answered_by);
/** Points the span exporter at the config's trace group (start-up and each reload; control thread). */
void weft_trace_configure(const weft_config *cfg);
/** The ABI 1.3 accessor: weft's span of this request as a traceparent value. */
const char *weft_access_req_traceparent(const weft_req *r);

#endif
