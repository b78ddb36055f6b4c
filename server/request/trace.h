/*
 * A request's trace context (W3C Trace Context): continued from a valid
 * incoming traceparent, or started here; the server span weft records for
 * it, handed to the OTLP exporter when the request completes.
 */
#ifndef WEFT_REQUEST_TRACE_H
#define WEFT_REQUEST_TRACE_H

#include <stdint.h>
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
 * the access log. Loop thread, at dispatch.
 */
void weft_req_trace_start(weft_req *r, const weft_trace_cfg *cfg, h2o_req_t *req);
/** Hands the request's server span to the exporter (when sampled and exporting). Loop thread, at completion. */
void weft_req_trace_end(weft_req *r, int status);
/** Points the span exporter at the config's trace group (start-up and each reload; control thread). */
void weft_trace_configure(const weft_config *cfg);
/** The ABI 1.3 accessor: weft's span of this request as a traceparent value. */
const char *weft_access_req_traceparent(const weft_req *r);

#endif
