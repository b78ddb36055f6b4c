#include "http/http.h"

#include <stdio.h>
#include <string.h>

#include "dispatch/dispatch.h"
#include "edge/edge.h"
#include "http/abuse.h"
#include "http/admit.h"
#include "http/bodybuf.h"
#include "http/client_addr.h"
#include "http/ratelimit.h"
#include "http/static_route.h"
#include "request/body.h"
#include "reload/generation.h"
#include "base/log.h"
#include "core/loop.h"
#include "base/stats.h"
#include "request/cancel.h"
#include "request/respond.h"
#include "request/stream.h"
#include "request/trace.h"

/* The link (request/request.h) is allocated in the h2o request's pool with a
 * dispose hook, so when h2o frees the request early (client gone, HTTP/2
 * reset) the weft_req learns it and answers nobody. */

/* This loop's watched HTTP/1 sockets (a socket's `data` is h2o's). */
static _Thread_local weft_req_link *h1_watched;

/* Pipelined input read while watching is kept for h2o; past this much the
 * watch ends (and with it early notice of a close) rather than buffer more. */
#define H1_WATCH_MAX_INPUT (64 * 1024)

static void h1_unwatch(weft_req_link *link, int stop_reading)
{
    if (link->h1_sock == NULL)
        return;
    if (stop_reading)
        h2o_socket_read_stop(link->h1_sock);
    if (link->h1_prev != NULL)
        link->h1_prev->h1_next = link->h1_next;
    else
        h1_watched = link->h1_next;
    if (link->h1_next != NULL)
        link->h1_next->h1_prev = link->h1_prev;
    link->h1_sock = NULL;
}

/* A facility taking the connection over (a WebSocket upgrade) reads it from
 * now on: the watch must let go first. */
static void detach_link(weft_req_link *link) { h1_unwatch(link, 1); }

static void on_cancel_timer(weft_timer *t)
{
    weft_dispatch_cancel(H2O_STRUCT_FROM_MEMBER(weft_req, cancel_timer, t), WEFT_CANCEL_CLIENT);
}

/* Cancellation runs from a timer, outside whatever h2o call noticed the
 * client leave: it resumes handler code, which must not run inside h2o.
 * Without memory for the timer the request only finishes its course. */
static void schedule_cancel(weft_req *r)
{
    if (r->cancel_timer.heap_index == 0 && !weft_req_cancelled(r))
        (void)weft_timers_add(r->loop->timers, &r->cancel_timer, 0, on_cancel_timer);
}

static void on_h1_readable(h2o_socket_t *sock, const char *err)
{
    weft_req_link *link = h1_watched;
    while (link != NULL && link->h1_sock != sock)
        link = link->h1_next;
    if (link == NULL)
        return;
    if (err == NULL) {
        if (sock->input->size > H1_WATCH_MAX_INPUT)
            h1_unwatch(link, 1);
        return;
    }
    /* EOF or reset. The link stays: answering is what makes h2o close the
     * connection (weft cannot close h2o's socket under it). */
    h1_unwatch(link, 1);
    if (link->wr != NULL)
        schedule_cancel(link->wr);
}

static void h1_watch(weft_req_link *link)
{
    h2o_req_t *req = link->req;
    if (req->version >= 0x200)
        return;
    h2o_socket_t *sock = weft_h2o_req_socket(req);
    if (sock == NULL)
        return;
    link->h1_sock = sock;
    link->h1_prev = NULL;
    link->h1_next = h1_watched;
    if (h1_watched != NULL)
        h1_watched->h1_prev = link;
    h1_watched = link;
    h2o_socket_read_start(sock, on_h1_readable);
}

static void on_link_dispose(void *p)
{
    weft_req_link *link = p;
    h2o_req_t *req = link->req;
    /* h2o is closing the connection: its socket is not ours to touch. */
    h1_unwatch(link, 0);
    if (link->wr != NULL)
        weft_body_detach(link->wr);
    /* An HTTP/2 stream freed before its answer was written was reset (a
     * reactive answer is written only after h2o has read on, so a reset
     * in the same read still finds its bytes unsent). */
    if (req->version >= 0x200 && (link->wr != NULL || req->bytes_sent < req->res.content_length))
        weft_abuse_reset(weft_loop_current, req);
    if (link->wr != NULL) {
        link->wr->link = NULL; /* its answer goes nowhere now */
        link->wr->hreq = NULL;
        schedule_cancel(link->wr);
    }
}

/* The client left: nobody reads this answer, but sending it is what ends
 * h2o's HTTP/1 request (and, with "close", its connection). */
static void send_gone(h2o_req_t *req)
{
    req->http1_is_persistent = 0;
    weft_respond(req, 499, "text/plain", "", 0, 0);
}

/* The route's timeout_ms passed: the client gets 504 now, whatever the
 * handler is doing, and the handler is cancelled like a withdrawn request. */
static void on_deadline(weft_timer *t)
{
    weft_req *r = H2O_STRUCT_FROM_MEMBER(weft_req, deadline, t);
    if (weft_req_cancelled(r))
        return; /* already withdrawn by its client */
    /* A streamed answer has its head out already: it ends when the handler
     * returns (cancelled below); nothing else can be said to the client. */
    if (r->link != NULL && !r->streamed) {
        weft_req_link *link = r->link;
        link->wr = NULL;
        r->link = NULL;
        r->hreq = NULL;
        h1_unwatch(link, 1);
        weft_respond_text(link->req, 504, "gateway timeout: the handler did not answer within the route's timeout_ms");
        /* The answer was given (a body still arriving is abandoned with
         * it): h2o may free its request before the handler returns, so
         * the body lets go of it now. */
        weft_body_detach(r);
    }
    weft_stats_request(r->loop->stats, r->route->stat_slot, 504, weft_now_ns() - r->start_ns);
    weft_dispatch_cancel(r, WEFT_CANCEL_DEADLINE);
}

/* The last of a completed request: its memory, then its generation (whose
 * plugin may be unloaded then). */
static void release(weft_req *r)
{
    weft_gen_ref g = {.gen = weft_route_gen(r->route), .epoch = r->gen_epoch};
    weft_req_free(r);
    weft_generation_release_on_loop(g);
}

static void complete(weft_req *r)
{
    weft_loop *L = r->loop;
    weft_timers_cancel(L->timers, &r->cancel_timer);
    weft_timers_cancel(L->timers, &r->deadline);
    int cancelled = weft_req_cancelled(r);
    if (r->link != NULL) {
        weft_req_link *link = r->link;
        link->wr = NULL;
        h1_unwatch(link, 1);
        if (weft_body_unfinished(r))
            link->req->http1_is_persistent = 0; /* the rest of the body was never read */
        if (weft_body_too_large(r))
            weft_request_res_error(r, 413, "request body too large (max_body)");
        if (r->streamed)
            weft_stream_finish(r); /* the head is out already */
        else if (cancelled == WEFT_CANCEL_CLIENT)
            send_gone(link->req);
        else
            weft_respond_req(link->req, r);
    }
    weft_req_trace_end(r, cancelled == WEFT_CANCEL_CLIENT ? 499 : cancelled == WEFT_CANCEL_DEADLINE ? 504 : r->status);
    weft_abuse_request_end(r->conn);
    if (r->conn != NULL)
        weft_conn_busy(r->conn, -1, r->end_ns);
    weft_loop_inflight(L, -1, r->end_ns);
    if (cancelled == WEFT_CANCEL_CLIENT)
        weft_stats_cancelled(L->stats, r->route->stat_slot);
    else if (cancelled != WEFT_CANCEL_DEADLINE) /* a 504 is counted when it is sent */
        weft_stats_request(L->stats, r->route->stat_slot, r->status, weft_req_elapsed_ns(r));
    weft_body_release(r);
    if (!weft_req_free_later(r, release)) /* a lock's grant on its way (dispatch/hostsync.c) */
        release(r);
}

/* Copy what a handler may read out of h2o's request, because the handler may
 * outlive it or run on another thread. */
static weft_req *copy_request(h2o_req_t *req, const weft_match *m, weft_route *route, unsigned method_bit,
                              weft_conn *conn, const weft_client *client)
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
    if (req->entity.base != NULL && req->proceed_req == NULL) { /* a streamed body's parts go to body.c */
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
    /* The peer is the client's (http/client_addr.h); the local address is cached per connection. */
    struct sockaddr_storage local;
    const struct sockaddr *local_sa = conn != NULL ? weft_conn_local_addr(conn) : NULL;
    if (conn == NULL && req->conn->callbacks->get_sockname(req->conn, (struct sockaddr *)&local) > 0)
        local_sa = (struct sockaddr *)&local;
    weft_req_set_addrs(r, client->sa.sa.sa_family != AF_UNSPEC ? &client->sa : NULL, local_sa);
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

/* How long a body may pause between parts: limits.request_timeout_ms for
 * HTTP/2 too (h2o has no such timeout there). Three quarters of it, so that
 * over HTTP/1 weft's clean answer (408, or WEFT_TIMEOUT to a streaming
 * handler) always comes before h2o's own timeouts (both of them
 * request_timeout_ms: process/server.c), which close the connection
 * without one. */
static int body_pause_ms(const weft_config *cfg) { return cfg->limits.request_timeout_ms * 3 / 4; }

/* An answer before the request was served. With its body still arriving,
 * the rest is never read (weft_respond_text abandons it). */
static void early(h2o_req_t *req, int status, const char *message) { weft_respond_text(req, status, message); }

static weft_ratelimit_route plugin_limit(weft_route *route)
{
    return (weft_ratelimit_route){.path = route->cfg->path, .kind = WEFT_RL_KIND_PLUGIN,
                                  .cfg = &route->cfg->rate_limit, .limiter = weft_ratelimit_slot(route)};
}

static int on_req(h2o_handler_t *self, h2o_req_t *req);

/* Its listener's trusted_proxies say whether a proxy's headers name the
 * client; none (NULL) for a connection on no listener this generation lists. */
static const weft_listen_cfg *listener_of(const weft_config *cfg, const weft_conn *conn)
{
    return conn != NULL && conn->listener >= 0 && (size_t)conn->listener < cfg->n_listen ? &cfg->listen[conn->listener]
                                                                                         : NULL;
}

/* Route on the raw path, not h2o's decoded one: "%2F" must not become a
 * separator and a parameter must be decoded once, not twice. -1 for a target
 * no route may see; `t->prefix_len` is left for the router to say. */
static int routing_target(h2o_req_t *req, weft_static_target *t)
{
    size_t raw_len = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
    int plain = weft_path_is_plain(req->path.base, raw_len);
    const char *norm = req->path.base;
    long norm_len = (long)raw_len;
    if (!plain) {
        char *buf = h2o_mem_alloc_pool(&req->pool, char, raw_len + 2);
        norm_len = weft_path_normalize(req->path.base, raw_len, buf);
        norm = buf;
    }
    if (norm_len < 0 || (req->query_at != SIZE_MAX && memmem(req->path.base + req->query_at, req->path.len - req->query_at, "%00", 3) != NULL))
        return -1;
    *t = (weft_static_target){.norm = norm, .len = (size_t)norm_len, .plain = plain};
    return 0;
}

static void answer_preflight(h2o_req_t *req, weft_route *preflight, weft_admit *ad, const weft_config *cfg,
                             weft_answer_trace *at)
{
    weft_trace_answer_route(at, preflight->cfg->path, "weft");
    weft_body_abandon(req); /* a preflight's body, if it has one, is not read */
    /* A preflight takes a token of the route it asks about: answering
     * them unmetered would leave an endpoint open to a flood of them. */
    ad->limit = plugin_limit(preflight);
    int refused = weft_http_admit(req, ad, WEFT_ADMIT_RATE);
    if (refused != 0)
        early(req, refused, ad->why);
    else
        weft_edge_preflight(req, preflight->cfg, cfg);
}

/* 404, or 405 with the methods the path does take; 0 when a route matched. */
static int answer_unmatched(h2o_req_t *req, weft_loop *L, const weft_match *m)
{
    if (m->status == 404) {
        weft_stat_add(&L->stats->unmatched[0], 1);
        early(req, 404, "not found: no route matches this path");
        return 1;
    }
    if (m->status == 405) {
        weft_stat_add(&L->stats->unmatched[1], 1);
        char allow[128];
        weft_methods_format(m->allow, allow, sizeof(allow));
        h2o_iovec_t v = h2o_strdup(&req->pool, allow, strlen(allow));
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, v.base, v.len);
        early(req, 405, "method not allowed for this path");
        return 1;
    }
    return 0;
}

static void serve_static(h2o_req_t *req, const weft_match *m, weft_admit *ad, weft_answer_trace *at, weft_conn *conn,
                         weft_static_target t)
{
    weft_static_route *sr = m->route;
    ad->limit = weft_http_static_limit(sr);
    weft_trace_answer_route(at, ad->limit.path, "weft"); /* a refusal is weft's, */
    int refused = weft_http_admit(req, ad, WEFT_ADMIT_RATE | WEFT_ADMIT_CONN);
    if (refused != 0) {
        early(req, refused, ad->why);
        return;
    }
    weft_trace_answer_route(at, ad->limit.path, "static"); /* whatever the directory says is its own */
    t.prefix_len = m->prefix_len;
    weft_http_static(req, sr, conn, ad->now, t);
}

/* 1 when the request is answered (413) or left to wait for its whole body,
 * which comes back to on_req. */
static int refuse_or_collect_body(h2o_handler_t *self, h2o_req_t *req, weft_route *route, const weft_config *cfg,
                                  int body_pending)
{
    size_t max_body = route->cfg->max_body;
    if ((body_pending && req->content_length != SIZE_MAX && req->content_length > max_body) ||
        (!body_pending && req->entity.len > max_body)) {
        weft_edge_route(req, route->cfg, cfg);
        early(req, 413, "request body too large (max_body)");
        return 1;
    }
    if (body_pending && !route->cfg->stream_body) {
        weft_bodybuf_limits lim = {.max_body = max_body, .total = cfg->limits.max_buffered_body_total,
                                   .idle_timeout_ms = body_pause_ms(cfg)};
        weft_bodybuf_collect(self, req, &lim, on_req);
        return 1;
    }
    return 0;
}

/* The handler's copy, bound to h2o's request through the link (either may
 * go first), then handed to the route's dispatch policy. */
static void start_request(weft_req *r, h2o_req_t *req, weft_loop *L, weft_generation *g, weft_conn *conn,
                          uint64_t start, int body_pending)
{
    r->conn_id = req->conn->id;
    r->start_ns = start;
    weft_req_trace_start(r, &g->cfg->trace, req);
    /* Busy while handled: admission never evicts a connection with a request in flight. */
    r->conn = conn;
    if (r->conn != NULL)
        weft_conn_busy(r->conn, +1, start);
    weft_req_link *link = h2o_mem_alloc_shared(&req->pool, sizeof(*link), on_link_dispose);
    *link = (weft_req_link){.req = req, .wr = r, .detach = detach_link};
    r->link = link;
    r->hreq = req;
    r->loop = L;
    r->on_complete = complete;
    /* h2o's access log runs when it frees a request; one freed before weft
     * answered (client gone) is logged as nginx does: 499. */
    req->res.status = 499;
    r->gen_epoch = weft_generation_retain_on_loop(g).epoch;
    weft_loop_inflight(L, +1, start);
    /* Without memory for the timer the route serves without its deadline. */
    if (r->route->cfg->timeout_ms > 0)
        (void)weft_timers_add(L->timers, &r->deadline, (uint64_t)r->route->cfg->timeout_ms, on_deadline);
    if (req->version >= 0x200)
        weft_dispatch_start_multiplexed(r);
    else
        weft_dispatch_start(r);
    if (link->wr != NULL && !body_pending) /* still being handled; h2o itself reads a body that streams */
        h1_watch(link);
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    weft_loop *L = weft_loop_current;
    weft_generation *g = weft_generation_of_loop(L);
    /* Who the client is, first: every answer's access log line names it. */
    weft_conn *conn = weft_conn_of(weft_h2o_req_socket(req));
    weft_client client;
    weft_client_addr(req, conn, listener_of(g->cfg, conn), &client);
    /* While spans are exported, every answer gets one, weft's own included
     * (request/trace.h); otherwise this is one relaxed load. */
    weft_answer_trace *at =
        weft_trace_answer_start(req, &g->cfg->trace, client.sa.sa.sa_family != AF_UNSPEC ? &client.sa.sa : NULL);
    /* A long target is refused before anything copies or decodes it. */
    if (req->path.len > g->cfg->limits.max_uri) {
        early(req, 414, "request target too long (limits.max_uri)");
        return 0;
    }
    unsigned method_bit = weft_method_bit(req->method.base, req->method.len);
    weft_static_target t;
    if (routing_target(req, &t) != 0) {
        early(req, 400, "bad request target: an encoded NUL (%00) or a path above the root");
        return 0;
    }
    weft_admit ad = {.loop = L, .conn = conn, .key = client.key,
                     .table_capacity = (size_t)g->cfg->limits.rate_limit_clients};
    weft_route *preflight =
        method_bit == WEFT_M_OPTIONS ? weft_edge_cors_preflight_route(req, g->router, t.norm, t.len) : NULL;
    if (preflight != NULL) {
        answer_preflight(req, preflight, &ad, g->cfg, at);
        return 0;
    }
    weft_match m;
    weft_router_match(g->router, t.norm, t.len, method_bit, &m);
    if (answer_unmatched(req, L, &m))
        return 0;
    if (m.prefix) { /* only static routes are prefixes */
        serve_static(req, &m, &ad, at, conn, t);
        return 0;
    }
    weft_route *route = m.route;
    ad.limit = plugin_limit(route);
    weft_trace_answer_route(at, route->cfg->path, "weft");
    /* Rate limits before anything else is spent on the request. */
    int refused = weft_http_admit(req, &ad, WEFT_ADMIT_RATE);
    if (refused != 0) {
        early(req, refused, ad.why);
        return 0;
    }
    if (weft_edge_refuse_origin(req, route->cfg))
        return 0;
    /* The body still arrives (weft's handler takes bodies as they stream):
     * a route that does not stream it gets it whole, collected here. */
    int body_pending = req->proceed_req != NULL && !req->is_tunnel_req;
    if (refuse_or_collect_body(self, req, route, g->cfg, body_pending))
        return 0;
    /* From here the request holds its generation until it is answered: the
     * route's rules stay valid for whatever answer it gets (edge/edge.h). */
    weft_edge_route(req, route->cfg, g->cfg);
    if ((refused = weft_http_admit(req, &ad, WEFT_ADMIT_CONN)) != 0) {
        early(req, refused, ad.why);
        return 0;
    }
    /* The admission's clock read, its own (never the loop's once-per-wake-up
     * one, older by whatever the loop ran before this request): where its
     * latency starts. */
    uint64_t start = ad.now;
    weft_req *r = copy_request(req, &m, route, method_bit, conn, &client);
    if (r == NULL || (body_pending && weft_body_attach(r, req, route->cfg->max_body, body_pause_ms(g->cfg)) != 0)) {
        weft_abuse_request_end(conn);
        if (r != NULL)
            weft_req_free(r);
        early(req, 503, "server out of memory");
        return 0;
    }
    start_request(r, req, L, g, conn, start, body_pending);
    return 0;
}

void weft_http_register(h2o_pathconf_t *pathconf)
{
    h2o_handler_t *h = h2o_create_handler(pathconf, sizeof(*h));
    h->on_req = on_req;
    /* Bodies reach on_req as they arrive: a route that streams them reads
     * them part by part (request/body.h), the others get them collected
     * (http/bodybuf.h) under their own max_body. */
    h->supports_request_streaming = 1;
}
