#include "http/http.h"

#include <stdio.h>
#include <string.h>

#include "dev/dev.h"
#include "dispatch/dispatch.h"
#include "reload/generation.h"
#include "base/log.h"
#include "core/loop.h"
#include "ops/metrics.h"
#include "ops/observe.h"

/* Ties a weft_req to the h2o request that carries it. Allocated in the h2o
 * request's pool with a dispose hook, so when h2o frees the request early
 * (client gone, HTTP/2 reset) the weft_req learns it and answers nobody. */
typedef struct weft_req_link {
    h2o_req_t *req;
    weft_req *wr;
} weft_req_link;

static const char *reason_phrase(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return status < 400 ? "OK" : "Error";
    }
}

void weft_http_send_error(h2o_req_t *req, int status, const char *message)
{
    req->res.status = status;
    req->res.reason = reason_phrase(status);
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                   H2O_STRLIT("text/plain; charset=utf-8"));
    size_t len = strlen(message);
    char *body = h2o_mem_alloc_pool(&req->pool, len + 1);
    memcpy(body, message, len);
    body[len] = '\n';
    req->res.content_length = len + 1;
    h2o_send_inline(req, body, len + 1);
}

static void on_link_dispose(void *p)
{
    weft_req_link *link = p;
    if (link->wr != NULL)
        link->wr->link = NULL; /* the handler runs on; its answer goes nowhere */
}

static void send_response(h2o_req_t *req, weft_req *r)
{
    if (r->res_failed || (r->rc != WEFT_OK && r->status < 400)) {
        if (r->rc != WEFT_OK)
            weft_log_error("%s: handler failed (rc %d) without an error status; answering 500", r->route->label,
                           r->rc);
        weft_res_error(r, 500, "internal error in the request handler");
    }
    req->res.status = r->status;
    req->res.reason = reason_phrase(r->status);
    int has_type = 0;
    for (size_t i = 0; i < r->n_res_headers; i++) {
        const weft_kv *h = &r->res_headers[i];
        size_t nlen = strlen(h->name);
        has_type |= nlen == 12 && strcasecmp(h->name, "content-type") == 0;
        /* Strings live in the weft_req, which dies now: copy into h2o's pool. */
        h2o_iovec_t name = h2o_strdup(&req->pool, h->name, nlen);
        h2o_strtolower(name.base, name.len);
        h2o_iovec_t value = h2o_strdup(&req->pool, h->value, strlen(h->value));
        h2o_add_header_by_str(&req->pool, &req->res.headers, name.base, name.len, 1, NULL, value.base, value.len);
    }
    if (!has_type && r->res_len > 0)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                       H2O_STRLIT("text/plain; charset=utf-8"));
    /* Without a length h2o would send the body chunked. */
    req->res.content_length = r->res_len;
    h2o_send_inline(req, r->res_body != NULL ? r->res_body : "", r->res_len);
}

void weft_http_complete(weft_req *r)
{
    weft_loop *L = r->loop;
    if (r->link != NULL) {
        r->link->wr = NULL;
        send_response(r->link->req, r);
    }
    weft_generation *g = r->route->gen;
    L->inflight--;
    atomic_store_explicit(&L->stats->inflight, (int_fast64_t)L->inflight, memory_order_relaxed);
    weft_metrics_request(L->stats, r->route->stat_slot, r->status, weft_now_ns() - r->start_ns);
    weft_req_free(r);
    weft_generation_release(g);
}

/* Copy what a handler may read out of h2o's request, because the handler may
 * outlive it or run on another thread. */
static weft_req *copy_request(h2o_req_t *req, const weft_match *m, weft_route *route, unsigned method_bit)
{
    weft_req *r = weft_req_new();
    if (r == NULL)
        return NULL;
    r->route = route;
    r->method_bit = method_bit;
    r->method = weft_req_strndup(r, req->method.base, req->method.len);
    size_t plen = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
    r->path = weft_req_strndup(r, req->path.base, plen);
    if (req->query_at != SIZE_MAX)
        r->query = weft_req_strndup(r, req->path.base + req->query_at + 1, req->path.len - req->query_at - 1);
    r->headers = weft_req_alloc(r, (req->headers.size + 1) * sizeof(weft_kv));
    if (r->method == NULL || r->path == NULL || r->headers == NULL)
        goto oom;
    for (size_t i = 0; i < req->headers.size; i++) {
        const h2o_header_t *h = &req->headers.entries[i];
        const char *n = weft_req_strndup(r, h->name->base, h->name->len);
        const char *v = weft_req_strndup(r, h->value.base, h->value.len);
        if (n == NULL || v == NULL)
            goto oom;
        r->headers[r->n_headers++] = (weft_kv){n, v};
    }
    if (req->entity.base != NULL) {
        r->body = weft_req_strndup(r, req->entity.base, req->entity.len);
        r->body_len = req->entity.len;
        if (r->body == NULL)
            goto oom;
    }
    for (size_t i = 0; i < m->n_params; i++) {
        const char *v = weft_req_decode(r, m->params[i].value, m->params[i].value_len, 0);
        if (v == NULL)
            goto oom;
        r->params[r->n_params++] = (weft_kv){m->params[i].name, v};
    }
    return r;
oom:
    weft_req_free(r);
    return NULL;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    weft_loop *L = weft_loop_current;
    weft_generation *g = L->gen;
    if (weft_observe_handle(req, WEFT_ON_MAIN) || weft_dev_intercept(req))
        return 0;
    /* A long target is refused before anything copies or decodes it. */
    if (req->path.len > g->cfg->limits.max_uri) {
        weft_http_send_error(req, 414, "request target too long (limits.max_uri)");
        return 0;
    }
    unsigned method_bit = weft_method_bit(req->method.base, req->method.len);
    /* Route on the raw path, not h2o's decoded one: "%2F" must not become a
     * separator and a parameter must be decoded once, not twice. */
    size_t raw_len = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
    char *norm = h2o_mem_alloc_pool(&req->pool, raw_len + 2);
    long norm_len = weft_path_normalize(req->path.base, raw_len, norm);
    if (norm_len < 0 || (req->query_at != SIZE_MAX && memmem(req->path.base + req->query_at, req->path.len - req->query_at, "%00", 3) != NULL)) {
        weft_http_send_error(req, 400, "bad request target: an encoded NUL (%00) or a path above the root");
        return 0;
    }
    weft_match m;
    weft_router_match(g->router, norm, (size_t)norm_len, method_bit, &m);
    if (m.status == 404) {
        weft_stat_add(&L->stats->unmatched[0], 1);
        weft_http_send_error(req, 404, "not found: no route matches this path");
        return 0;
    }
    if (m.status == 405) {
        weft_stat_add(&L->stats->unmatched[1], 1);
        char allow[128];
        weft_methods_format(m.allow, allow, sizeof(allow));
        h2o_iovec_t v = h2o_strdup(&req->pool, allow, strlen(allow));
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, v.base, v.len);
        weft_http_send_error(req, 405, "method not allowed for this path");
        return 0;
    }
    weft_route *route = m.route;
    weft_req *r = copy_request(req, &m, route, method_bit);
    if (r == NULL) {
        weft_http_send_error(req, 503, "server out of memory");
        return 0;
    }
    weft_req_link *link = h2o_mem_alloc_shared(&req->pool, sizeof(*link), on_link_dispose);
    link->req = req;
    link->wr = r;
    r->link = link;
    r->loop = L;
    weft_generation_retain(g);
    L->inflight++;
    atomic_store_explicit(&L->stats->inflight, (int_fast64_t)L->inflight, memory_order_relaxed);
    weft_dispatch_start(r);
    return 0;
}

void weft_http_register(h2o_pathconf_t *pathconf)
{
    h2o_handler_t *h = h2o_create_handler(pathconf, sizeof(*h));
    h->on_req = on_req;
}
