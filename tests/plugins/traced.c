/*
 * Fixture "traced": the trace context a plugin sees (ABI 1.3
 * req_traceparent) and what an outbound call carries. It answers text/plain:
 *
 *     tp=TRACEPARENT                    (host->req_traceparent)
 *     up=STATUS BODY                    (with option `upstream`: the answer
 *                                        of GET UPSTREAM/echo, http_fetch)
 *
 * ?fail=1 (pool, coroutine) fails without a status: weft's 500 and its log line.
 *
 * The same under every policy: pool and coroutine call http_fetch,
 * reactive http_fetch_async.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/plugin.h>

static const weft_host *host;

typedef struct traced_state {
    char url[256];
} traced_state;

static int tr_init(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    if (!WEFT_HOST_HAS(h, req_traceparent)) {
        h->init_error(ctx, "needs plugin API 1.3 (req_traceparent)");
        return WEFT_ERROR;
    }
    const char *up = h->opt_string(ctx, "upstream", "");
    traced_state *s = malloc(sizeof(*s));
    if (s == NULL) {
        h->init_error(ctx, "out of memory");
        return WEFT_ERROR;
    }
    snprintf(s->url, sizeof(s->url), "%s%s", up, up[0] != '\0' ? "/echo" : "");
    *state = s;
    return WEFT_OK;
}

static void tr_fini(void *state) { free(state); }

static void head(weft_req *req)
{
    host->res_header(req, "content-type", "text/plain");
    host->res_printf(req, "tp=%s\n", host->req_traceparent(req));
}

static void tail(weft_req *req, int rc, weft_http_response *res)
{
    if (rc == WEFT_OK && res != NULL)
        host->res_printf(req, "up=%d %s", res->status, res->body);
    else
        host->res_printf(req, "up=failed %d %s\n", rc, res != NULL ? res->error_text : "");
    if (res != NULL)
        host->http_free(res);
}

static int tr_handle(weft_req *req, void *state)
{
    traced_state *s = state;
    if (host->req_query(req, "fail") != NULL)
        return WEFT_ERROR; /* without a status: weft answers 500 and logs it */
    head(req);
    if (s->url[0] == '\0')
        return WEFT_OK;
    weft_http_request rq = WEFT_HTTP_REQUEST_INIT;
    rq.url = s->url;
    weft_http_response *res = NULL;
    int rc = host->http_fetch(req, &rq, &res);
    tail(req, rc, res);
    return WEFT_OK;
}

static void on_fetched(weft_req *req, void *arg, int rc, weft_http_response *res)
{
    (void)arg;
    tail(req, rc, res);
    host->done(req, WEFT_OK);
}

static int tr_handle_async(weft_req *req, void *state)
{
    traced_state *s = state;
    head(req);
    if (s->url[0] == '\0')
        return WEFT_OK;
    weft_http_request rq = WEFT_HTTP_REQUEST_INIT;
    rq.url = s->url;
    host->http_fetch_async(req, &rq, on_fetched, NULL);
    return WEFT_AGAIN;
}

static const weft_plugin traced_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "traced",
    .version = "1.0.0",
    .description = "test fixture: trace context seen by a plugin and carried by http_fetch",
    .init = tr_init,
    .fini = tr_fini,
    .handle = tr_handle,
    .handle_async = tr_handle_async,
};

const weft_plugin *weft_plugin_entry(void) { return &traced_plugin; }
