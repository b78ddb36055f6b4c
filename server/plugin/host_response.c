/* The `response` group: request/'s response builders, each with a weft_rc. */
#include <stdarg.h>

#include "dispatch/dispatch.h"
#include "plugin/host.h"
#include "request/request.h"

static weft_rc ok_or_error(int rc) { return rc == WEFT_OK ? WEFT_OK : WEFT_ERROR; }

/* ABI 1 ignored a bad status silently; API 2 says so. */
static weft_rc res_status(weft_req *r, int status)
{
    if (status < 100 || status > 599)
        return WEFT_ERROR;
    weft_request_res_status(r, status);
    return WEFT_OK;
}

static weft_rc res_header(weft_req *r, const char *name, const char *value)
{
    return ok_or_error(weft_request_res_header(r, name, value));
}

static weft_rc res_write(weft_req *r, const void *data, size_t len)
{
    return ok_or_error(weft_request_res_write(r, data, len));
}

static weft_rc res_writef(weft_req *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = weft_request_res_vprintf(r, fmt, ap);
    va_end(ap);
    return ok_or_error(rc);
}

static weft_rc res_error(weft_req *r, int status, const char *message)
{
    return ok_or_error(weft_request_res_error(r, status, message));
}

static weft_rc res_error_json(weft_req *r, int status, const char *message)
{
    return ok_or_error(weft_access_res_error_json(r, status, message));
}

static weft_rc res_cookie(weft_req *r, const char *name, const char *value, long long max_age, const char *path,
                          const char *domain, unsigned flags)
{
    return ok_or_error(weft_access_res_cookie(r, name, value, max_age, path, domain, flags));
}

static weft_rc res_redirect(weft_req *r, int status, const char *location)
{
    return ok_or_error(weft_access_res_redirect(r, status, location));
}

const weft_host_response weft_host_response_group = {
    .struct_size = sizeof(weft_host_response),
    .version = WEFT_HOST_RESPONSE_VERSION,
    .status = res_status,
    .header = res_header,
    .write = res_write,
    .writef = res_writef,
    .error = res_error,
    .error_json = res_error_json,
    .cookie = res_cookie,
    .redirect = res_redirect,
    .done = weft_dispatch_done,
};
