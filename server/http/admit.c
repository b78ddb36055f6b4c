#include "http/admit.h"

#include "base/timer.h"
#include "http/abuse.h"

/* The request's environment says its token was taken: a body collected
 * (http/bodybuf.h) brings it back here once it is whole. */
#define RATE_TAKEN_ENV "weft-rl"

static int rate_taken(h2o_req_t *req)
{
    return req->env.size != 0 && h2o_req_getenv(req, H2O_STRLIT(RATE_TAKEN_ENV), 0) != NULL;
}

static uint64_t now_of(weft_admit *a)
{
    if (a->now == 0)
        a->now = weft_now_ns(); /* a read of its own: the budget and the request's latency take it too */
    return a->now;
}

int weft_http_admit(h2o_req_t *req, weft_admit *a, unsigned what)
{
    if ((what & WEFT_ADMIT_RATE) && a->limit.cfg->per != WEFT_RL_NONE && !rate_taken(req)) {
        if (weft_ratelimit_refuse(req, &a->limit, a->key, a->table_capacity, now_of(a))) {
            a->why = "too many requests: past this route's rate_limit";
            return 429;
        }
        if (req->proceed_req != NULL && !req->is_tunnel_req)
            *h2o_req_getenv(req, H2O_STRLIT(RATE_TAKEN_ENV), 1) = h2o_iovec_init(H2O_STRLIT("1"));
    }
    /* Before anything is copied: a connection past its budget costs nothing more. */
    if ((what & WEFT_ADMIT_CONN) && weft_abuse_request_start(a->loop, req, a->conn, now_of(a)) != 0) {
        a->why = "connection closed: past its abuse budget";
        return 503;
    }
    return 0;
}
