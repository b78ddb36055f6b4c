#include "request/trace.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/otlp.h"
#include "base/timer.h"
#include "request/cancel.h"
#include "request/request.h"
#include "request/route.h"

/* The spec allows one traceparent: two (a proxy that added its own) make
 * the context ambiguous, so a new trace starts. Several tracestate headers
 * are one list, joined with commas. */
static int read_incoming(weft_req *r, weft_traceparent *tp, const char **state, size_t *state_len)
{
    const char *parent = NULL;
    size_t n_parent = 0, n_state = 0, total = 0;
    const char *states[WEFT_TRACESTATE_MAX_MEMBERS];
    for (size_t i = 0; i < r->n_headers; i++) {
        const weft_kv *h = &r->headers[i];
        if (strcasecmp(h->name, "traceparent") == 0) {
            parent = h->value;
            n_parent++;
        } else if (strcasecmp(h->name, "tracestate") == 0) {
            if (n_state == WEFT_TRACESTATE_MAX_MEMBERS)
                total = WEFT_TRACESTATE_MAX_LEN + 1; /* more headers than members allowed: too many */
            else
                states[n_state++] = h->value;
            total += strlen(h->value) + 1;
        }
    }
    if (n_parent != 1 || weft_traceparent_parse(parent, strlen(parent), tp) != 0)
        return -1;
    *state = NULL;
    *state_len = 0;
    if (n_state == 0 || total > WEFT_TRACESTATE_MAX_LEN + 1)
        return 0; /* over the bound: dropped, the parent still counts */
    char *joined = weft_req_alloc(r, total);
    if (joined == NULL)
        return 0;
    size_t at = 0;
    for (size_t i = 0; i < n_state; i++) {
        size_t len = strlen(states[i]);
        if (i > 0)
            joined[at++] = ',';
        memcpy(joined + at, states[i], len);
        at += len;
    }
    joined[at] = '\0';
    if (weft_tracestate_valid(joined, at)) {
        *state = joined;
        *state_len = at;
    }
    return 0;
}

void weft_req_trace_start(weft_req *r, const weft_trace_cfg *cfg, h2o_req_t *req)
{
    weft_req_trace *t = &r->trace;
    weft_traceparent in;
    const char *state = NULL;
    size_t state_len = 0;
    if (cfg->accept_incoming && read_incoming(r, &in, &state, &state_len) == 0) {
        memcpy(t->trace_id, in.trace_id, 16);
        memcpy(t->parent_id, in.span_id, 8);
        t->has_parent = 1;
        /* The caller decided (parent-based sampling); only the sampled bit
         * is known to this version of the spec, the others go out as 0. */
        t->flags = in.flags & WEFT_TRACE_SAMPLED;
        t->tracestate = state;
    } else {
        weft_trace_random(t->trace_id, 16);
        t->has_parent = 0;
        t->flags = cfg->sample_ratio >= 1.0 || (cfg->sample_ratio > 0.0 && weft_trace_uniform() < cfg->sample_ratio)
                       ? WEFT_TRACE_SAMPLED
                       : 0;
        t->tracestate = NULL;
    }
    weft_trace_random(t->span_id, 8);
    weft_traceparent_format(t->traceparent, t->trace_id, t->span_id, t->flags);
    weft_trace_hex(t->trace_id_hex, t->trace_id, 16);
    if (req != NULL) {
        h2o_iovec_t *field = h2o_req_getenv(req, H2O_STRLIT(WEFT_TRACE_ENV), 1);
        *field = h2o_strdup(&req->pool, t->trace_id_hex, 32);
    }
}

void weft_req_trace_end(weft_req *r, int status)
{
    const weft_req_trace *t = &r->trace;
    if (!(t->flags & WEFT_TRACE_SAMPLED) || !weft_otlp_enabled())
        return;
    weft_span *s = weft_otlp_span_new();
    if (s == NULL)
        return;
    memcpy(s->trace_id, t->trace_id, 16);
    memcpy(s->span_id, t->span_id, 8);
    memcpy(s->parent_id, t->parent_id, 8);
    s->has_parent = t->has_parent;
    s->kind = WEFT_SPAN_SERVER;
    /* Times on the wall clock, as OTLP wants; the duration on the monotonic one. */
    uint64_t took = weft_now_ns() - r->start_ns;
    s->end_unix_ns = weft_otlp_unix_ns();
    s->start_unix_ns = s->end_unix_ns - took;
    s->status = status;
    s->error = status >= 500;
    if (s->error)
        snprintf(s->error_text, sizeof(s->error_text), "HTTP %d", status);
    snprintf(s->name, sizeof(s->name), "%s", r->route->cfg->path);
    snprintf(s->method, sizeof(s->method), "%s", r->method);
    snprintf(s->target, sizeof(s->target), "%s", r->path);
    snprintf(s->route, sizeof(s->route), "%s", r->route->cfg->path);
    snprintf(s->policy, sizeof(s->policy), "%s", r->ran_as != NULL ? r->ran_as : "reactive");
    if (t->tracestate != NULL)
        snprintf(s->tracestate, sizeof(s->tracestate), "%s", t->tracestate);
    weft_otlp_submit(s);
}

const char *weft_access_req_traceparent(const weft_req *r) { return r->trace.traceparent; }

void weft_trace_configure(const weft_config *cfg)
{
    const weft_trace_cfg *t = &cfg->trace;
    weft_otlp_settings s = {.endpoint = t->otlp_endpoint,
                            .service_name = t->service_name != NULL ? t->service_name : "weft",
                            .batch_size = t->batch_size,
                            .batch_interval_ms = t->batch_interval_ms,
                            .queue_size = t->queue_size,
                            .timeout_ms = t->export_timeout_ms};
    weft_otlp_configure(&s);
}
