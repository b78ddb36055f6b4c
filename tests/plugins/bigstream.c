/*
 * bigstream: GET ?parts=N&size=B streams N parts of B bytes, each flushed
 * on its own (blocking style under pool and coroutine, res_flush_async under
 * reactive), as fast as its client takes them. A client that never reads
 * must hold the handler at its flush (issue 30, item 7: tests/integration/
 * slowreader.c), not let it produce N × B bytes into memory. &empty=K: K
 * more flushes with nothing new before the first part and after each one
 * (issue 44, item 3: tests/integration/stream_flush.c).
 */
#include <stdlib.h>
#include <string.h>

#include <weft/plugin.h>

static const weft_host *host;

typedef struct job {
    long left, size;
    long empty, empty_left; /* flushes with nothing new: per part, still to do before the next */
    char *part;
} job;

static int init(const weft_host *h, weft_init *ctx, void **state)
{
    (void)ctx;
    host = h;
    *state = NULL;
    return WEFT_OK;
}

static long arg(weft_req *req, const char *name, long def)
{
    const char *v = host->req_query(req, name);
    long x = v != NULL ? strtol(v, NULL, 10) : def;
    return x >= 0 && x <= 64L * 1024 * 1024 ? x : def;
}

static job *setup(weft_req *req)
{
    job *j = malloc(sizeof(*j));
    if (j == NULL)
        return NULL;
    j->left = arg(req, "parts", 1000);
    j->size = arg(req, "size", 1024 * 1024);
    j->empty = j->empty_left = arg(req, "empty", 0);
    if (j->size == 0)
        j->size = 1;
    if ((j->part = malloc((size_t)j->size)) == NULL) {
        free(j);
        return NULL;
    }
    memset(j->part, 'x', (size_t)j->size);
    host->res_header(req, "content-type", "application/octet-stream");
    return j;
}

static void job_free(job *j)
{
    free(j->part);
    free(j);
}

static int handle(weft_req *req, void *state)
{
    (void)state;
    job *j = setup(req);
    if (j == NULL)
        return host->res_error(req, 503, "out of memory");
    int rc = WEFT_OK;
    for (long k = 0; k < j->empty && rc == WEFT_OK; k++)
        rc = host->res_flush(req);
    while (j->left-- > 0 && rc == WEFT_OK) {
        if ((rc = host->res_write(req, j->part, (size_t)j->size)) == WEFT_OK)
            rc = host->res_flush(req);
        for (long k = 0; k < j->empty && rc == WEFT_OK; k++)
            rc = host->res_flush(req);
    }
    job_free(j);
    return rc == WEFT_CANCELLED ? WEFT_OK : rc;
}

static void on_flushed(weft_req *req, void *arg_, int rc)
{
    job *j = arg_;
    if (rc == WEFT_OK && j->empty_left > 0) {
        j->empty_left--;
        host->res_flush_async(req, on_flushed, j);
        return;
    }
    if (rc == WEFT_OK && j->left-- > 0 && (rc = host->res_write(req, j->part, (size_t)j->size)) == WEFT_OK) {
        j->empty_left = j->empty;
        host->res_flush_async(req, on_flushed, j);
        return;
    }
    job_free(j);
    host->done(req, rc == WEFT_CANCELLED ? WEFT_OK : rc);
}

static int handle_async(weft_req *req, void *state)
{
    (void)state;
    job *j = setup(req);
    if (j == NULL)
        return host->res_error(req, 503, "out of memory");
    on_flushed(req, j, WEFT_OK);
    return WEFT_AGAIN;
}

static const weft_plugin descriptor = {
    WEFT_PLUGIN_HEADER,
    .name = "bigstream",
    .version = "1.0.0",
    .description = "streams large parts as fast as the client takes them (test fixture)",
    .init = init,
    .handle = handle,
    .handle_async = handle_async,
};

WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &descriptor; }
