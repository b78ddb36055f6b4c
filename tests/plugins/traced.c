/*
 * Fixture "traced": the trace context a plugin sees (API 2:
 * request->traceparent, request group version 2) and what an outbound call
 * carries. It answers text/plain:
 *
 *     tp=TRACEPARENT                    (request->traceparent)
 *     up=STATUS BODY                    (with option `upstream`: the answer
 *                                        of GET UPSTREAM/echo, http->fetch)
 *
 * ?fail=1 (pool, coroutine) fails without a status: weft's 500 and its log line.
 *
 * The same under every policy: pool and coroutine call http->fetch without a
 * callback, reactive with one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/plugin.h>

typedef struct traced_state {
    char url[256];
} traced_state;

static weft_rc tr_init(const weft_host *h, weft_init *ctx, void **state)
{
    if (!WEFT_GROUP_AT_LEAST(h->request, 2) || h->http == NULL) {
        h->init->error(ctx, "needs the request group version 2 (traceparent) and the http group");
        return WEFT_ERROR;
    }
    const char *up = h->init->opt_string(ctx, "upstream", "");
    traced_state *s = malloc(sizeof(*s));
    if (s == NULL) {
        h->init->error(ctx, "out of memory");
        return WEFT_ERROR;
    }
    snprintf(s->url, sizeof(s->url), "%s%s", up, up[0] != '\0' ? "/echo" : "");
    *state = s;
    return WEFT_OK;
}

static void tr_fini(void *state) { free(state); }

static void head(weft_req *req)
{
    const weft_host *h = weft_req_host(req);
    h->response->header(req, "content-type", "text/plain");
    h->response->writef(req, "tp=%s\n", h->request->traceparent(req));
}

static void tail(weft_req *req, int rc, weft_http_response *res)
{
    const weft_host *h = weft_req_host(req);
    if (rc == WEFT_OK && res != NULL)
        h->response->writef(req, "up=%d %s", res->status, res->body);
    else
        h->response->writef(req, "up=failed %d %s\n", rc, res != NULL ? res->error_text : "");
    if (res != NULL)
        h->http->response_free(res);
}

static weft_rc tr_handle(weft_req *req, void *state)
{
    traced_state *s = state;
    const weft_host *h = weft_req_host(req);
    if (h->request->query(req, "fail", NULL) != NULL)
        return WEFT_ERROR; /* without a status: weft answers 500 and logs it */
    head(req);
    if (s->url[0] == '\0')
        return WEFT_OK;
    weft_http_request rq = WEFT_HTTP_REQUEST_INIT;
    rq.url = s->url;
    weft_http_response *res = NULL;
    weft_rc rc = h->http->fetch(req, &rq, &res, NULL, NULL);
    tail(req, rc, res);
    return WEFT_OK;
}

static void on_fetched(weft_req *req, void *arg, int rc, weft_http_response *res)
{
    (void)arg;
    tail(req, rc, res);
    weft_req_host(req)->response->done(req, WEFT_OK);
}

static weft_rc tr_handle_async(weft_req *req, void *state)
{
    traced_state *s = state;
    head(req);
    if (s->url[0] == '\0')
        return WEFT_OK;
    weft_http_request rq = WEFT_HTTP_REQUEST_INIT;
    rq.url = s->url;
    return weft_req_host(req)->http->fetch(req, &rq, NULL, on_fetched, NULL);
}

static const weft_plugin traced_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "traced",
    .version = "2.0.0",
    .description = "test fixture: trace context seen by a plugin and carried by http->fetch",
    .init = tr_init,
    .fini = tr_fini,
    .handle = tr_handle,
    .handle_async = tr_handle_async,
};

const weft_plugin *weft_plugin_entry(void) { return &traced_plugin; }
