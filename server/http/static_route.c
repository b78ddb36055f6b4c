#include "http/static_route.h"

#include "base/stats.h"
#include "base/timer.h"
#include "core/loop.h"
#include "edge/static.h"

static void release_generation(void *p) { weft_generation_release(*(weft_generation **)p); }

void weft_http_static(h2o_req_t *req, weft_static_route *sr, const char *norm, size_t norm_len, size_t prefix_len)
{
    uint64_t start = weft_now_ns();
    /* The file handler's answer points into the generation (its MIME
     * table) until the last byte is out: held by the request's own pool. */
    weft_generation **hold = h2o_mem_alloc_shared(&req->pool, sizeof(*hold), release_generation);
    weft_generation_retain(sr->gen);
    *hold = sr->gen;
    /* A body nobody reads: this HTTP/1 connection cannot carry another request. */
    if (req->proceed_req != NULL && !req->is_tunnel_req)
        req->http1_is_persistent = 0;
    int status = weft_static_serve(sr->serve, req, norm, norm_len, prefix_len);
    weft_stats_request(weft_loop_current->stats, sr->stat_slot, status, weft_now_ns() - start);
}
