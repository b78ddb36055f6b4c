/*
 * Fixture "typed": an answer of a chosen type and size, for the tests of
 * what weft does to answers (compression, header rules, CORS):
 *
 *   GET /x?type=image/png&size=1000&encoding=gzip&header=x-from-plugin
 *
 * answers `size` bytes (default 1000) of repetitive JSON-ish text with
 * Content-Type `type` (default application/json); `encoding` sets a
 * Content-Encoding of the plugin's own; `header` names a response header
 * the plugin sets to "plugin" (and Access-Control-Allow-Origin: plugin is
 * always set, which weft's cors must replace or drop). Both entry points
 * answer at once, so every dispatch policy can route to it.
 */
#include <stdlib.h>
#include <string.h>

#include <weft/plugin.h>

static const weft_host *host;

static int ty_init(const weft_host *h, weft_init *ctx, void **state)
{
    (void)ctx;
    host = h;
    *state = NULL;
    return WEFT_OK;
}

static int respond(weft_req *req)
{
    const char *type = host->req_query(req, "type");
    const char *size = host->req_query(req, "size");
    const char *enc = host->req_query(req, "encoding");
    const char *hdr = host->req_query(req, "header");
    long n = size != NULL ? atol(size) : 1000;
    if (n < 0 || n > 10 * 1024 * 1024)
        n = 1000;
    if (host->res_header(req, "content-type", type != NULL ? type : "application/json") != WEFT_OK ||
        host->res_header(req, "access-control-allow-origin", "plugin") != WEFT_OK ||
        (enc != NULL && host->res_header(req, "content-encoding", enc) != WEFT_OK) ||
        (hdr != NULL && host->res_header(req, hdr, "plugin") != WEFT_OK))
        return WEFT_ERROR;
    static const char unit[] = "{\"n\":12345,\"name\":\"weft\"},";
    for (long i = 0; i < n; i += (long)sizeof(unit) - 1) {
        size_t k = (size_t)(n - i) < sizeof(unit) - 1 ? (size_t)(n - i) : sizeof(unit) - 1;
        if (host->res_write(req, unit, k) != WEFT_OK)
            return WEFT_ERROR;
    }
    return WEFT_OK;
}

static int ty_handle(weft_req *req, void *state)
{
    (void)state;
    return respond(req);
}

static int ty_handle_async(weft_req *req, void *state)
{
    (void)state;
    return respond(req);
}

static const weft_plugin typed_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "typed",
    .version = "1.0.0",
    .description = "test fixture: an answer of a chosen type, size and encoding",
    .init = ty_init,
    .handle = ty_handle,
    .handle_async = ty_handle_async,
};

const weft_plugin *weft_plugin_entry(void)
{
    return &typed_plugin;
}
