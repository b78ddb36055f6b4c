#include "http/static_route.h"

#include "base/stats.h"
#include "base/timer.h"
#include "core/loop.h"
#include "edge/static.h"
#include "http/abuse.h"
#include "request/body.h"
#include "request/end_hook.h"

/* What a static request holds until h2o frees it (request/end_hook.h): its generation, its
 * place in the loop's in-flight count (weft_inflight_requests, the drain)
 * and in its connection's work in flight (the abuse budget; busy, so that
 * admission never evicts a connection mid-download and its record outlives
 * the socket). */
typedef struct static_hold {
    weft_gen_ref gen;
    weft_loop *loop;
    weft_conn *conn;
    int status;
} static_hold;

/* An HTTP/2 stream freed with its file not all sent was reset (a 304, a
 * HEAD or an error has no body to send). */
static int cut_short(const static_hold *h, const h2o_req_t *req)
{
    return req->version >= 0x200 && (h->status == 200 || h->status == 206) &&
           !h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD")) &&
           req->res.content_length != SIZE_MAX && req->bytes_sent < req->res.content_length;
}

static void release_hold(void *p, h2o_req_t *req)
{
    static_hold *h = p;
    if (cut_short(h, req))
        weft_abuse_reset(h->loop, req);
    weft_abuse_request_end(h->conn);
    if (h->conn != NULL)
        weft_conn_busy(h->conn, -1, weft_loop_now_ns(h->loop));
    weft_generation_release_on_loop(h->gen);
    weft_loop_inflight(h->loop, -1, weft_now_ns());
}

void weft_http_static(h2o_req_t *req, weft_static_route *sr, weft_conn *conn, uint64_t start, weft_static_target t)
{
    /* The file handler's answer points into the generation (its MIME
     * table) until the last byte is out: held by the request's own pool. */
    static_hold *hold = weft_end_hook_alloc(req, sizeof(*hold), release_hold);
    weft_loop *L = weft_loop_current;
    *hold = (static_hold){.gen = weft_generation_retain_on_loop(sr->gen), .loop = L, .conn = conn};
    if (conn != NULL)
        weft_conn_busy(conn, +1, start);
    weft_loop_inflight(L, +1, start);
    weft_body_abandon(req); /* a body nobody reads */
    hold->status = weft_static_serve(sr->serve, req, t);
    /* A clock read of its own at each end (vDSO, ~20-30 ns): the loop's,
     * read once per wake-up, put every file served within one at 0 s. */
    weft_stats_request(L->stats, sr->stat_slot, hold->status, weft_now_ns() - start);
}

weft_ratelimit_route weft_http_static_limit(weft_static_route *sr)
{
    const weft_static_cfg *c = weft_static_cfg_of(sr->serve);
    return (weft_ratelimit_route){.path = c->path, .kind = WEFT_RL_KIND_STATIC, .cfg = &c->rate_limit, .limiter = &sr->limiter};
}
