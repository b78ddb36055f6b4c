/*
 * CORS (a route's `cors`): the Fetch standard's server side. A preflight is
 * answered here, never by the plugin; an actual request from an allowed
 * origin gets Access-Control-Allow-Origin (and the rest) on whatever answer
 * it gets, errors included, so the page can read them; a disallowed origin
 * gets no CORS header at all, whatever the plugin set. WebSockets have no
 * CORS in browsers: the handshake's Origin is checked here instead.
 */
#include <stdio.h>
#include <strings.h>

#include "edge/edge.h"
#include "request/respond.h"
#include "request/route.h"

/* Longer request values than these are refused, not scanned. */
#define MAX_ORIGIN 256
#define MAX_REQUEST_HEADERS 2048

static const h2o_iovec_t *find(const h2o_headers_t *hs, const h2o_token_t *t)
{
    ssize_t at = h2o_find_header(hs, t, -1);
    return at != -1 ? &hs->entries[at].value : NULL;
}

static int origin_allowed(const weft_cors_cfg *c, const h2o_iovec_t *o)
{
    if (o->len == 0 || o->len > MAX_ORIGIN)
        return 0;
    if (c->any_origin)
        return 1;
    for (size_t i = 0; i < c->n_origins; i++)
        if (strlen(c->origins[i]) == o->len && strncasecmp(c->origins[i], o->base, o->len) == 0)
            return 1;
    return 0;
}

/* Drops what a plugin or a rule may have set: the config has the last word. */
static void drop_cors_headers(h2o_headers_t *hs)
{
    size_t dst = 0;
    for (size_t i = 0; i < hs->size; i++) {
        const h2o_iovec_t *n = hs->entries[i].name;
        if (n->len > 15 && strncasecmp(n->base, "access-control-", 15) == 0)
            continue;
        hs->entries[dst++] = hs->entries[i];
    }
    hs->size = dst;
}

static void put(h2o_req_t *req, const h2o_token_t *t, const char *value)
{
    h2o_iovec_t v = h2o_strdup(&req->pool, value, SIZE_MAX);
    h2o_add_header(&req->pool, &req->res.headers, t, NULL, v.base, v.len);
}

/* The answer to `origin` varies with it unless every origin gets "*". */
static void allow_origin(h2o_req_t *req, const weft_cors_cfg *c, const h2o_iovec_t *origin)
{
    if (c->any_origin && !c->credentials) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ACCESS_CONTROL_ALLOW_ORIGIN, NULL, H2O_STRLIT("*"));
        return;
    }
    /* The request's own bytes, which live in its pool. */
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ACCESS_CONTROL_ALLOW_ORIGIN, NULL, origin->base,
                   origin->len);
    if (c->credentials)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ACCESS_CONTROL_ALLOW_CREDENTIALS, NULL,
                       H2O_STRLIT("true"));
}

static void vary_origin(h2o_req_t *req, const weft_cors_cfg *c)
{
    if (!c->any_origin || c->credentials)
        h2o_set_header_token(&req->pool, &req->res.headers, H2O_TOKEN_VARY, H2O_STRLIT("origin"));
}

/* The 204 weft_edge_preflight is sending: its Access-Control-* are weft's own. */
static int is_our_preflight(h2o_req_t *req)
{
    return req->res.status == 204 && h2o_memis(req->method.base, req->method.len, H2O_STRLIT("OPTIONS")) &&
           find(&req->headers, H2O_TOKEN_ACCESS_CONTROL_REQUEST_METHOD) != NULL;
}

void weft_edge_cors_apply(h2o_req_t *req, const weft_cors_cfg *c, int refused_preflight)
{
    if (refused_preflight || !is_our_preflight(req))
        drop_cors_headers(&req->res.headers);
    vary_origin(req, c);
    /* A refused preflight says nothing about the origin: a browser that
     * fails it shows the page no more than it would without the headers. */
    if (refused_preflight)
        return;
    const h2o_iovec_t *origin = find(&req->headers, H2O_TOKEN_ORIGIN);
    if (origin == NULL || !origin_allowed(c, origin))
        return;
    allow_origin(req, c, origin);
    if (c->expose_text != NULL)
        put(req, H2O_TOKEN_ACCESS_CONTROL_EXPOSE_HEADERS, c->expose_text);
}

/* Every name of the comma-separated Access-Control-Request-Headers is allowed. */
static int headers_allowed(const weft_cors_cfg *c, const h2o_iovec_t *v)
{
    if (v->len > MAX_REQUEST_HEADERS)
        return 0;
    if (c->any_header)
        return 1;
    h2o_iovec_t iter = *v;
    const char *tok;
    size_t len;
    while ((tok = h2o_next_token(&iter, ',', ',', &len, NULL)) != NULL) {
        int ok = 0;
        for (size_t i = 0; i < c->n_headers && !ok; i++)
            ok = strlen(c->headers[i]) == len && strncasecmp(c->headers[i], tok, len) == 0;
        if (!ok)
            return 0;
    }
    return 1;
}

struct weft_route *weft_edge_cors_preflight_route(h2o_req_t *req, const weft_router *router, const char *path,
                                                    size_t len)
{
    const h2o_iovec_t *method = find(&req->headers, H2O_TOKEN_ACCESS_CONTROL_REQUEST_METHOD);
    if (find(&req->headers, H2O_TOKEN_ORIGIN) == NULL || method == NULL)
        return NULL;
    weft_match m;
    /* The route the actual request would reach; an unknown method may still
     * be one a route of the path serves (WEFT_M_OTHER). */
    weft_router_match(router, path, len, weft_method_bit(method->base, method->len), &m);
    if (m.status != 200 || m.prefix) /* a prefix is a static route: no weft_route, no cors */
        return NULL;
    weft_route *route = m.route;
    return route->cfg->cors != NULL ? route : NULL;
}

const char *weft_edge_cors_preflight_refusal(h2o_req_t *req, const weft_cors_cfg *c)
{
    const h2o_iovec_t *origin = find(&req->headers, H2O_TOKEN_ORIGIN);
    const h2o_iovec_t *method = find(&req->headers, H2O_TOKEN_ACCESS_CONTROL_REQUEST_METHOD);
    const h2o_iovec_t *asked = find(&req->headers, H2O_TOKEN_ACCESS_CONTROL_REQUEST_HEADERS);
    if (!origin_allowed(c, origin))
        return "CORS preflight refused: this origin is not in the route's cors.origins";
    if (!(weft_method_bit(method->base, method->len) & c->methods))
        return "CORS preflight refused: the method is not in the route's cors.methods";
    if (asked != NULL && !headers_allowed(c, asked))
        return "CORS preflight refused: a requested header is not in the route's cors.headers";
    return NULL;
}

void weft_edge_cors_preflight(h2o_req_t *req, const weft_cors_cfg *c)
{
    const h2o_iovec_t *asked = find(&req->headers, H2O_TOKEN_ACCESS_CONTROL_REQUEST_HEADERS);
    req->res.status = 204;
    req->res.reason = weft_reason_phrase(204);
    /* The route's prefilter runs weft_edge_cors_apply at set-up: it adds the
     * origin (and credentials); the preflight's own headers go here. */
    put(req, H2O_TOKEN_ACCESS_CONTROL_ALLOW_METHODS, c->methods_text);
    if (asked != NULL && asked->len > 0) {
        if (c->any_header)
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ACCESS_CONTROL_ALLOW_HEADERS, NULL, asked->base,
                           asked->len);
        else
            put(req, H2O_TOKEN_ACCESS_CONTROL_ALLOW_HEADERS, c->headers_text);
    }
    if (c->max_age > 0) {
        char age[16];
        snprintf(age, sizeof(age), "%d", c->max_age);
        h2o_iovec_t v = h2o_strdup(&req->pool, age, SIZE_MAX);
        h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("access-control-max-age"), 0, NULL, v.base,
                              v.len);
    }
    h2o_set_header_token(&req->pool, &req->res.headers, H2O_TOKEN_VARY,
                         H2O_STRLIT("access-control-request-method"));
    h2o_set_header_token(&req->pool, &req->res.headers, H2O_TOKEN_VARY,
                         H2O_STRLIT("access-control-request-headers"));
    req->res.content_length = 0;
    h2o_send_inline(req, "", 0);
}

int weft_edge_refuse_origin(h2o_req_t *req, const weft_route_cfg *route)
{
    const weft_cors_cfg *c = route->cors;
    if (c == NULL || req->version >= 0x200 || req->upgrade.base == NULL ||
        !h2o_lcstris(req->upgrade.base, req->upgrade.len, H2O_STRLIT("websocket")))
        return 0;
    const h2o_iovec_t *origin = find(&req->headers, H2O_TOKEN_ORIGIN);
    if (origin == NULL || origin_allowed(c, origin))
        return 0; /* no Origin: not a browser, which always sends one */
    weft_respond_text(req, 403, "WebSocket refused: this origin is not in the route's cors.origins");
    return 1;
}
