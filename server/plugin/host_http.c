/*
 * The `http` group: outbound/'s calls with one error channel — when there
 * is a response record, the weft_rc is always weft_http_rc() of its error.
 */
#include "outbound/outbound.h"
#include "plugin/host.h"

static weft_rc http_fetch(weft_req *r, const weft_http_request *rq, weft_http_response **res, weft_http_callback cb,
                          void *arg)
{
    if (cb != NULL) {
        weft_http_host_http_fetch_async(r, rq, cb, arg);
        return WEFT_AGAIN;
    }
    weft_http_response *out = NULL;
    int rc = weft_http_host_http_fetch(r, rq, &out);
    if (out != NULL)
        rc = weft_http_rc(out->error);
    else if (rc == WEFT_OK)
        rc = WEFT_UNAVAILABLE; /* no record: out of memory */
    if (res != NULL)
        *res = out;
    else
        weft_fetch_http_free(out);
    return (weft_rc)rc;
}

static weft_rc http_fetch_all(weft_req *r, size_t n, const weft_http_request *rqs, weft_http_response **res)
{
    return (weft_rc)weft_http_host_http_fetch_all(r, n, rqs, res);
}

const weft_host_http weft_host_http_group = {
    .struct_size = sizeof(weft_host_http),
    .version = WEFT_HOST_HTTP_VERSION,
    .fetch = http_fetch,
    .fetch_all = http_fetch_all,
    .response_header = weft_fetch_http_header,
    .response_free = weft_fetch_http_free,
};
