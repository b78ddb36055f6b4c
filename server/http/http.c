#include "http/http.h"

#include <stdio.h>
#include <string.h>

#include "dispatch/dispatch.h"
#include "reload/generation.h"
#include "base/log.h"
#include "core/loop.h"
#include "base/stats.h"
#include "request/respond.h"
#include "request/stream.h"

/* The link (request/request.h) is allocated in the h2o request's pool with a
 * dispose hook, so when h2o frees the request early (client gone, HTTP/2
 * reset) the weft_req learns it and answers nobody. */

static void on_link_dispose(void *p)
{
    weft_req_link *link = p;
    if (link->wr != NULL) {
        link->wr->link = NULL; /* the handler runs on; its answer goes nowhere */
        link->wr->hreq = NULL;
    }
}

static void complete(weft_req *r)
{
    weft_loop *L = r->loop;
    if (r->link != NULL) {
        r->link->wr = NULL;
        if (r->streamed)
            weft_stream_finish(r); /* the head is out already */
        else
            weft_respond_req(r->link->req, r);
    }
    weft_generation *g = r->route->gen;
    L->inflight--;
    atomic_store_explicit(&L->stats->inflight, (int_fast64_t)L->inflight, memory_order_relaxed);
    weft_stats_request(L->stats, r->route->stat_slot, r->status, weft_now_ns() - r->start_ns);
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
    struct sockaddr_storage peer, local;
    int has_peer = req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&peer) > 0;
    int has_local = req->conn->callbacks->get_sockname(req->conn, (struct sockaddr *)&local) > 0;
    weft_req_set_addrs(r, has_peer ? &peer : NULL, has_local ? &local : NULL);
    ssize_t id = h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-request-id"), -1);
    if (id >= 0)
        weft_req_set_id(r, req->headers.entries[id].value.base, req->headers.entries[id].value.len);
    else
        weft_req_set_id(r, NULL, 0);
    return r;
oom:
    weft_req_free(r);
    return NULL;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    weft_loop *L = weft_loop_current;
    weft_generation *g = L->gen;
    /* A long target is refused before anything copies or decodes it. */
    if (req->path.len > g->cfg->limits.max_uri) {
        weft_respond_text(req, 414, "request target too long (limits.max_uri)");
        return 0;
    }
    unsigned method_bit = weft_method_bit(req->method.base, req->method.len);
    /* Route on the raw path, not h2o's decoded one: "%2F" must not become a
     * separator and a parameter must be decoded once, not twice. */
    size_t raw_len = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
    char *norm = h2o_mem_alloc_pool(&req->pool, raw_len + 2);
    long norm_len = weft_path_normalize(req->path.base, raw_len, norm);
    if (norm_len < 0 || (req->query_at != SIZE_MAX && memmem(req->path.base + req->query_at, req->path.len - req->query_at, "%00", 3) != NULL)) {
        weft_respond_text(req, 400, "bad request target: an encoded NUL (%00) or a path above the root");
        return 0;
    }
    weft_match m;
    weft_router_match(g->router, norm, (size_t)norm_len, method_bit, &m);
    if (m.status == 404) {
        weft_stat_add(&L->stats->unmatched[0], 1);
        weft_respond_text(req, 404, "not found: no route matches this path");
        return 0;
    }
    if (m.status == 405) {
        weft_stat_add(&L->stats->unmatched[1], 1);
        char allow[128];
        weft_methods_format(m.allow, allow, sizeof(allow));
        h2o_iovec_t v = h2o_strdup(&req->pool, allow, strlen(allow));
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, v.base, v.len);
        weft_respond_text(req, 405, "method not allowed for this path");
        return 0;
    }
    weft_route *route = m.route;
    weft_req *r = copy_request(req, &m, route, method_bit);
    if (r == NULL) {
        weft_respond_text(req, 503, "server out of memory");
        return 0;
    }
    weft_req_link *link = h2o_mem_alloc_shared(&req->pool, sizeof(*link), on_link_dispose);
    link->req = req;
    link->wr = r;
    r->link = link;
    r->hreq = req;
    r->loop = L;
    r->on_complete = complete;
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
