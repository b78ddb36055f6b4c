/* The `request` group: the accessors of request/ and the body reader of dispatch/. */
#include <stdio.h>
#include <string.h>

#include "base/json_guard.h"
#include "dispatch/dispatch.h"
#include "plugin/host.h"
#include "request/cancel.h"
#include "request/request.h"

/* API 2 folds X and X_len into one call with an optional length. */
static const char *req_param(const weft_req *r, const char *name, size_t *len)
{
    return len != NULL ? weft_access_req_param_len(r, name, len) : weft_request_req_param(r, name);
}

static const char *req_query(const weft_req *r, const char *name, size_t *len)
{
    return len != NULL ? weft_access_req_query_len(r, name, len) : weft_request_req_query(r, name);
}

static const char *req_header(const weft_req *r, const char *name, size_t *len)
{
    return len != NULL ? weft_access_req_header_len(r, name, len) : weft_request_req_header(r, name);
}

static const char *req_cookie(const weft_req *r, const char *name, size_t *len)
{
    size_t n = 0;
    const char *v = weft_access_req_cookie(r, name, &n);
    if (len != NULL)
        *len = v != NULL ? n : 0;
    return v;
}

static weft_rc req_header_at(const weft_req *r, size_t i, const char **name, const char **value, size_t *len)
{
    return weft_access_req_header_at(r, i, name, value, len) == WEFT_OK ? WEFT_OK : WEFT_ERROR;
}

static weft_rc req_query_at(const weft_req *r, size_t i, const char **name, const char **value, size_t *len)
{
    return weft_access_req_query_at(r, i, name, value, len) == WEFT_OK ? WEFT_OK : WEFT_ERROR;
}

static const char *req_peer_addr(const weft_req *r, int *port)
{
    int p = 0;
    const char *a = weft_access_req_peer_addr(r, &p);
    if (port != NULL)
        *port = p;
    return a;
}

static const char *req_local_addr(const weft_req *r, int *port)
{
    int p = 0;
    const char *a = weft_access_req_local_addr(r, &p);
    if (port != NULL)
        *port = p;
    return a;
}

static const char *req_body(const weft_req *r, size_t *len)
{
    size_t n = 0;
    const char *b = weft_request_req_body(r, &n);
    if (len != NULL)
        *len = n;
    return b;
}

static weft_rc req_body_read(weft_req *r, const void **data, size_t *len, weft_body_callback cb, void *arg)
{
    if (cb == NULL) {
        const void *d = NULL;
        size_t n = 0;
        int rc = weft_bodyread_req_body_read(r, &d, &n);
        if (data != NULL)
            *data = d;
        if (len != NULL)
            *len = n;
        return (weft_rc)rc;
    }
    weft_bodyread_req_body_read_async(r, cb, arg);
    return WEFT_AGAIN;
}

static weft_rc req_json_body(weft_req *r, int max_depth, const char **text, size_t *len)
{
    if (max_depth <= 0)
        max_depth = 32;
    if (max_depth > 1000)
        max_depth = 1000;
    if (!weft_media_type_is(weft_request_req_header(r, "content-type"), "application/json")) {
        weft_access_res_error_json(r, 415, "content-type must be application/json");
        return WEFT_ERROR;
    }
    size_t n = 0;
    const char *b = weft_request_req_body(r, &n);
    if (weft_json_too_deep(b, n, max_depth)) {
        char msg[64];
        snprintf(msg, sizeof(msg), "invalid JSON: nested more than %d levels deep", max_depth);
        weft_access_res_error_json(r, 400, msg);
        return WEFT_ERROR;
    }
    if (text != NULL)
        *text = b;
    if (len != NULL)
        *len = n;
    return WEFT_OK;
}

const weft_host_request weft_host_request_group = {
    .struct_size = sizeof(weft_host_request),
    .version = WEFT_HOST_REQUEST_VERSION,
    .method = weft_request_req_method,
    .path = weft_request_req_path,
    .param = req_param,
    .query = req_query,
    .header = req_header,
    .cookie = req_cookie,
    .query_string = weft_access_req_query_string,
    .header_at = req_header_at,
    .query_at = req_query_at,
    .peer_addr = req_peer_addr,
    .local_addr = req_local_addr,
    .id = weft_access_req_id,
    .body = req_body,
    .body_read = req_body_read,
    .cancelled = weft_cancel_req_cancelled,
    .traceparent = weft_access_req_traceparent,
    .json_body = req_json_body,
};
