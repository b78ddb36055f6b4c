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
 * always set, which weft's cors must replace or drop); `records` answers a
 * JSON array of varied records instead (the compression benchmark's). Both entry points
 * answer at once, so every dispatch policy can route to it.
 */
#include <stdio.h>
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

/* ?records: a JSON array of varied records (a deterministic sequence) of
 * about n bytes, which compresses like real API answers do, not like a
 * repeated unit. */
static int records(weft_req *req, long n)
{
    static const char *const names[] = {"ada", "grace", "linus", "barbara", "ken", "margaret", "dennis", "frances"};
    unsigned long x = 12345;
    long written = 1;
    if (host->res_write(req, "[", 1) != WEFT_OK)
        return WEFT_ERROR;
    for (long id = 1; written < n; id++) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
        char rec[256];
        int k = snprintf(rec, sizeof(rec),
                         "%s{\"id\":%ld,\"name\":\"%s-%lu\",\"score\":%lu,\"ratio\":0.%04lu,\"active\":%s,"
                         "\"tags\":[\"t%lu\",\"t%lu\"]}",
                         id > 1 ? "," : "", id, names[(x >> 13) % 8], (x >> 20) % 100000, (x >> 7) % 1000000,
                         (x >> 30) % 10000, (x >> 40) & 1 ? "true" : "false", (x >> 44) % 50, (x >> 50) % 50);
        if (host->res_write(req, rec, (size_t)k) != WEFT_OK)
            return WEFT_ERROR;
        written += k;
    }
    return host->res_write(req, "]", 1);
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
    if (host->req_query(req, "records") != NULL)
        return records(req, n);
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
