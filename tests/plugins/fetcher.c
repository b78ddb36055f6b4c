/*
 * fetcher: GET ?url=U&method=M makes one outbound call (http_fetch under
 * pool and coroutine, http_fetch_async under reactive; POST and PUT carry a
 * one-byte body) and answers "STATUS BODY", or 502 with the call's error
 * text. The retry of an idempotent call on a stale pooled connection, and
 * none for POST, are read through it (tests/integration/outbound_retry.c).
 */
#include <stdio.h>
#include <string.h>

#include <weft/plugin.h>

static const weft_host *host;

static int init(const weft_host *h, weft_init *ctx, void **state)
{
    (void)ctx;
    host = h;
    *state = NULL;
    return WEFT_OK;
}

static weft_http_request request(weft_req *req)
{
    weft_http_request rq = WEFT_HTTP_REQUEST_INIT;
    rq.url = host->req_query(req, "url");
    rq.method = host->req_query(req, "method");
    if (rq.method != NULL && (strcmp(rq.method, "POST") == 0 || strcmp(rq.method, "PUT") == 0)) {
        rq.body = "x";
        rq.body_len = 1;
    }
    rq.timeout_ms = 5000;
    return rq;
}

static void answer(weft_req *req, const weft_http_response *res)
{
    if (res == NULL || res->error != WEFT_HTTP_OK) {
        host->res_error(req, 502, res != NULL ? res->error_text : "out of memory");
        return;
    }
    host->res_printf(req, "%d %.*s", res->status, (int)res->body_len, res->body);
}

static int handle(weft_req *req, void *state)
{
    (void)state;
    weft_http_request rq = request(req);
    weft_http_response *res = NULL;
    host->http_fetch(req, &rq, &res);
    answer(req, res);
    host->http_free(res);
    return WEFT_OK;
}

static void on_answer(weft_req *req, void *arg, int rc, weft_http_response *res)
{
    (void)arg, (void)rc;
    answer(req, res);
    host->http_free(res);
    host->done(req, WEFT_OK);
}

static int handle_async(weft_req *req, void *state)
{
    (void)state;
    weft_http_request rq = request(req);
    host->http_fetch_async(req, &rq, on_answer, NULL);
    return WEFT_AGAIN;
}

static const weft_plugin descriptor = {
    WEFT_PLUGIN_HEADER,
    .name = "fetcher",
    .version = "1.0.0",
    .description = "one outbound call per request (test fixture)",
    .init = init,
    .handle = handle,
    .handle_async = handle_async,
};

WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &descriptor; }
