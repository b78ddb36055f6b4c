#include "request/trace.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/otlp.h"
#include "base/timer.h"
#include "request/cancel.h"
#include "request/request.h"
#include "request/route.h"

/* What came in: the traceparent and tracestate headers, gathered from
 * weft's copy of them (a plugin's request) or h2o's own (an answer weft
 * gives itself) by the same rules. */
typedef struct incoming {
    const char *parent;
    size_t parent_len, n_parent;
    const char *states[WEFT_TRACESTATE_MAX_MEMBERS];
    size_t state_lens[WEFT_TRACESTATE_MAX_MEMBERS];
    size_t n_state, total;
} incoming;

static void incoming_header(incoming *in, const char *name, size_t name_len, const char *value, size_t len)
{
    if (name_len == 11 && strncasecmp(name, "traceparent", 11) == 0) {
        in->parent = value;
        in->parent_len = len;
        in->n_parent++;
    } else if (name_len == 10 && strncasecmp(name, "tracestate", 10) == 0) {
        if (in->n_state == WEFT_TRACESTATE_MAX_MEMBERS) {
            in->total = WEFT_TRACESTATE_MAX_LEN + 1; /* more headers than members allowed: too many */
        } else {
            in->states[in->n_state] = value;
            in->state_lens[in->n_state++] = len;
        }
        in->total += len + 1;
    }
}

/* The spec allows one traceparent: two (a proxy that added its own) make
 * the context ambiguous, so a new trace starts. Several tracestate headers
 * are one list, joined with commas into `joined` (room for in->total). */
static int read_incoming(const incoming *in, weft_traceparent *tp, char *joined, const char **state)
{
    if (in->n_parent != 1 || weft_traceparent_parse(in->parent, in->parent_len, tp) != 0)
        return -1;
    *state = NULL;
    if (in->n_state == 0 || in->total > WEFT_TRACESTATE_MAX_LEN + 1 || joined == NULL)
        return 0; /* over the bound: dropped, the parent still counts */
    size_t at = 0;
    for (size_t i = 0; i < in->n_state; i++) {
        if (i > 0)
            joined[at++] = ',';
        memcpy(joined + at, in->states[i], in->state_lens[i]);
        at += in->state_lens[i];
    }
    joined[at] = '\0';
    if (weft_tracestate_valid(joined, at))
        *state = joined;
    return 0;
}

/* Room to join the tracestate headers in, or 0 when there is nothing to
 * join (none, or past the bound: not worth memory). */
static size_t joined_size(const incoming *in)
{
    return in->n_state > 0 && in->total <= WEFT_TRACESTATE_MAX_LEN + 1 ? in->total : 0;
}

/* The trace continued from `in`, or a new one sampled by the config;
 * `joined` is memory for the tracestate, which the trace then points to. */
static void decide(weft_req_trace *t, const weft_trace_cfg *cfg, const incoming *in, char *joined)
{
    weft_traceparent tp;
    const char *state = NULL;
    if (cfg->accept_incoming && read_incoming(in, &tp, joined, &state) == 0) {
        memcpy(t->trace_id, tp.trace_id, 16);
        memcpy(t->parent_id, tp.span_id, 8);
        t->has_parent = 1;
        /* The caller decided (parent-based sampling); only the sampled bit
         * is known to this version of the spec, the others go out as 0. */
        t->flags = tp.flags & WEFT_TRACE_SAMPLED;
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
}

/* h2o's request environment: the access log's trace id field, and the
 * answer trace of a request weft may still answer itself (a pointer in an
 * iovec's base, found again when a collected body brings it back). */
#define ANSWER_ENV "weft.answer-trace"

static void give_access_log(h2o_req_t *req, const weft_req_trace *t)
{
    h2o_iovec_t *field = h2o_req_getenv(req, H2O_STRLIT(WEFT_TRACE_ENV), 1);
    if (field->base == NULL)
        *field = h2o_strdup(&req->pool, t->trace_id_hex, 32);
}

/* What an answer weft gives itself needs for its span at the end, copied
 * now: h2o's view of the request may be gone by the time it is freed. */
struct weft_answer_trace {
    weft_req_trace t;
    h2o_req_t *req;
    uint64_t start_ns;
    int armed; /* 0 once a plugin took the request over: its span is the plugin's */
    const char *answered_by;
    char method[24], target[512], route[160], client[46];
};

static weft_answer_trace *answer_of(h2o_req_t *req)
{
    if (req->env.size == 0)
        return NULL;
    h2o_iovec_t *v = h2o_req_getenv(req, H2O_STRLIT(ANSWER_ENV), 0);
    return v != NULL ? (weft_answer_trace *)(void *)v->base : NULL;
}

/* The server span of a request, whoever answered it. */
static void submit(const weft_req_trace *t, uint64_t took_ns, int status, const char *method, const char *target,
                   const char *route, const char *policy, const char *answered_by, const char *client)
{
    weft_span *s = weft_otlp_span_new();
    if (s == NULL)
        return;
    memcpy(s->trace_id, t->trace_id, 16);
    memcpy(s->span_id, t->span_id, 8);
    memcpy(s->parent_id, t->parent_id, 8);
    s->has_parent = t->has_parent;
    s->kind = WEFT_SPAN_SERVER;
    /* Times on the wall clock, as OTLP wants; the duration on the monotonic one. */
    s->end_unix_ns = weft_otlp_unix_ns();
    s->start_unix_ns = s->end_unix_ns - took_ns;
    s->status = status;
    s->error = status >= 500;
    if (s->error)
        snprintf(s->error_text, sizeof(s->error_text), "HTTP %d", status);
    /* OpenTelemetry's server span name: the route, or the method alone when none matched. */
    snprintf(s->name, sizeof(s->name), "%s", route[0] != '\0' ? route : method);
    snprintf(s->method, sizeof(s->method), "%s", method);
    snprintf(s->target, sizeof(s->target), "%s", target);
    snprintf(s->route, sizeof(s->route), "%s", route);
    snprintf(s->policy, sizeof(s->policy), "%s", policy);
    snprintf(s->answered_by, sizeof(s->answered_by), "%s", answered_by);
    snprintf(s->client, sizeof(s->client), "%s", client);
    if (t->tracestate != NULL)
        snprintf(s->tracestate, sizeof(s->tracestate), "%s", t->tracestate);
    weft_otlp_submit(s);
}

void weft_req_trace_start(weft_req *r, const weft_trace_cfg *cfg, h2o_req_t *req)
{
    weft_req_trace *t = &r->trace;
    weft_answer_trace *a = req != NULL ? answer_of(req) : NULL;
    if (a != NULL) {
        /* weft would have answered it: the plugin's span takes that trace
         * over (the access log has its id already). The state moves to the
         * arena: the request may outlive h2o's. */
        a->armed = 0;
        *t = a->t;
        if (a->t.tracestate != NULL)
            t->tracestate = weft_req_strndup(r, a->t.tracestate, strlen(a->t.tracestate));
        return;
    }
    incoming in = {0};
    for (size_t i = 0; i < r->n_headers; i++)
        incoming_header(&in, r->headers[i].name, strlen(r->headers[i].name), r->headers[i].value,
                        strlen(r->headers[i].value));
    decide(t, cfg, &in, joined_size(&in) > 0 ? weft_req_alloc(r, joined_size(&in)) : NULL);
    if (req != NULL)
        give_access_log(req, t);
}

void weft_req_trace_end(weft_req *r, int status)
{
    const weft_req_trace *t = &r->trace;
    if (!(t->flags & WEFT_TRACE_SAMPLED) || !weft_otlp_enabled())
        return;
    submit(t, weft_req_elapsed_ns(r), status, r->method, r->path, r->route->cfg->path,
           r->ran_as != NULL ? r->ran_as : "reactive", "plugin", weft_access_req_peer_addr(r, NULL));
}

/* h2o frees the request: its answer is out (or its client gone, 499 as
 * the access log says). */
static void on_answer_freed(void *p)
{
    weft_answer_trace *a = p;
    if (!a->armed || !(a->t.flags & WEFT_TRACE_SAMPLED) || !weft_otlp_enabled())
        return;
    int status = a->req->res.status > 0 ? a->req->res.status : 499;
    submit(&a->t, weft_now_ns() - a->start_ns, status, a->method, a->target, a->route, "", a->answered_by,
           a->client);
}

weft_answer_trace *weft_trace_answer_start(h2o_req_t *req, const weft_trace_cfg *cfg, const struct sockaddr *client)
{
    if (!weft_otlp_enabled())
        return NULL;
    weft_answer_trace *a = answer_of(req);
    if (a != NULL)
        return a;
    a = h2o_mem_alloc_shared(&req->pool, sizeof(*a), on_answer_freed);
    *a = (weft_answer_trace){.req = req, .start_ns = weft_now_ns(), .armed = 1, .answered_by = "weft"};
    incoming in = {0};
    for (size_t i = 0; i < req->headers.size; i++) {
        const h2o_header_t *h = &req->headers.entries[i];
        incoming_header(&in, h->name->base, h->name->len, h->value.base, h->value.len);
    }
    decide(&a->t, cfg, &in, joined_size(&in) > 0 ? h2o_mem_alloc_pool(&req->pool, char, joined_size(&in)) : NULL);
    size_t plen = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
    snprintf(a->method, sizeof(a->method), "%.*s", (int)req->method.len, req->method.base);
    snprintf(a->target, sizeof(a->target), "%.*s", (int)plen, req->path.base);
    (void)weft_sockaddr_format(client, a->client, sizeof(a->client));
    give_access_log(req, &a->t);
    *h2o_req_getenv(req, H2O_STRLIT(ANSWER_ENV), 1) = h2o_iovec_init(a, 0);
    return a;
}

void weft_trace_answer_route(weft_answer_trace *a, const char *route, const char *answered_by)
{
    if (a == NULL)
        return;
    snprintf(a->route, sizeof(a->route), "%s", route);
    a->answered_by = answered_by;
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
