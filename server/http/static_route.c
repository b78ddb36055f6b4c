#include "http/static_route.h"

#include "base/stats.h"
#include "base/timer.h"
#include "core/loop.h"
#include "edge/static.h"

/* What a static request holds until h2o frees it: its generation, and its
 * place in the loop's in-flight count (weft_inflight_requests, the drain). */
typedef struct static_hold {
    weft_generation *gen;
    weft_loop *loop;
} static_hold;

static void release_hold(void *p)
{
    static_hold *h = p;
    weft_generation_release(h->gen);
    h->loop->inflight--;
    atomic_store_explicit(&h->loop->stats->inflight, (int_fast64_t)h->loop->inflight, memory_order_relaxed);
}

void weft_http_static(h2o_req_t *req, weft_static_route *sr, const char *norm, size_t norm_len, size_t prefix_len)
{
    uint64_t start = weft_now_ns();
    /* The file handler's answer points into the generation (its MIME
     * table) until the last byte is out: held by the request's own pool. */
    static_hold *hold = h2o_mem_alloc_shared(&req->pool, sizeof(*hold), release_hold);
    weft_generation_retain(sr->gen);
    weft_loop *L = weft_loop_current;
    *hold = (static_hold){.gen = sr->gen, .loop = L};
    L->inflight++;
    atomic_store_explicit(&L->stats->inflight, (int_fast64_t)L->inflight, memory_order_relaxed);
    /* A body nobody reads: this HTTP/1 connection cannot carry another request. */
    if (req->proceed_req != NULL && !req->is_tunnel_req)
        req->http1_is_persistent = 0;
    int status = weft_static_serve(sr->serve, req, norm, norm_len, prefix_len);
    weft_stats_request(L->stats, sr->stat_slot, status, weft_now_ns() - start);
}
