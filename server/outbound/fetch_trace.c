/* The trace context of a plugin's outbound call: the request's trace id
 * with a span id of the call's own (the callee's parent), tracestate
 * passed on as it came, and a client span for the exporter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/otlp.h"
#include "outbound/outbound.h"
#include "request/request.h"

void weft_fetch_trace(weft_fetch *f, const weft_req *r)
{
    const weft_req_trace *t = &r->trace;
    if (t->traceparent[0] == '\0')
        return; /* a request that never had one (not dispatched by http/) */
    f->traced = 1;
    memcpy(f->trace_id, t->trace_id, 16);
    memcpy(f->parent_id, t->span_id, 8);
    f->trace_flags = t->flags;
    weft_trace_random(f->span_id, 8);
    /* Without memory the state is left out; the traceparent still goes. */
    f->tracestate = t->tracestate != NULL ? strdup(t->tracestate) : NULL;
}

static int plugin_set(const weft_fetch *f, const char *name)
{
    for (size_t i = 0; i < f->n_hdrs; i++)
        if (strcmp(f->hdr_names[i], name) == 0)
            return 1;
    return 0;
}

void weft_fetch_trace_headers(weft_fetch *f)
{
    /* A plugin that sets its own traceparent propagates something else on
     * purpose: weft adds neither header then. */
    if (!f->traced || plugin_set(f, "traceparent"))
        return;
    char *tp = h2o_mem_alloc_pool(&f->pool, char, WEFT_TRACEPARENT_LEN + 1);
    weft_traceparent_format(tp, f->trace_id, f->span_id, f->trace_flags);
    h2o_add_header_by_str(&f->pool, &f->headers, H2O_STRLIT("traceparent"), 0, NULL, tp, WEFT_TRACEPARENT_LEN);
    if (f->tracestate != NULL && !plugin_set(f, "tracestate"))
        h2o_add_header_by_str(&f->pool, &f->headers, H2O_STRLIT("tracestate"), 0, NULL, f->tracestate,
                              strlen(f->tracestate));
}

void weft_fetch_trace_end(weft_fetch *f, int error, const char *text)
{
    if (!f->traced || !(f->trace_flags & WEFT_TRACE_SAMPLED) || !weft_otlp_enabled())
        return;
    weft_span *s = weft_otlp_span_new();
    if (s == NULL)
        return;
    memcpy(s->trace_id, f->trace_id, 16);
    memcpy(s->span_id, f->span_id, 8);
    memcpy(s->parent_id, f->parent_id, 8);
    s->has_parent = 1;
    s->kind = WEFT_SPAN_CLIENT;
    uint64_t took = f->start_ns > 0 ? weft_now_ns() - f->start_ns : 0;
    s->end_unix_ns = weft_otlp_unix_ns();
    s->start_unix_ns = s->end_unix_ns - took;
    s->status = error == WEFT_HTTP_OK && f->res != NULL ? f->res->status : 0;
    s->error = error != WEFT_HTTP_OK || s->status >= 400;
    if (error != WEFT_HTTP_OK)
        snprintf(s->error_text, sizeof(s->error_text), "%s", text != NULL ? text : "failed");
    else if (s->error)
        snprintf(s->error_text, sizeof(s->error_text), "HTTP %d", s->status);
    snprintf(s->name, sizeof(s->name), "%s", f->method);
    snprintf(s->method, sizeof(s->method), "%s", f->method);
    snprintf(s->target, sizeof(s->target), "%s", f->url);
    snprintf(s->peer, sizeof(s->peer), "%s", f->host);
    s->peer_port = f->port;
    if (f->tracestate != NULL)
        snprintf(s->tracestate, sizeof(s->tracestate), "%s", f->tracestate);
    weft_otlp_submit(s);
}
