/*
 * Fixture "upload": reads its request body with req_body_read (ABI 1.2), part
 * by part, and answers "bytes=N parts=P hash=H" (H: FNV-1a of every byte),
 * so tests can check that a streamed body arrives whole, in order, under
 * every policy. Option `delay_ms` sleeps before each read (a slow reader:
 * backpressure). A read that fails answers "read rc=RC after N bytes" with
 * the status the host set (413 past max_body) or 400.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>

#include <weft/plugin.h>

typedef struct upload {
    const weft_host *host;
    int delay_ms;
} upload;

typedef struct tally {
    const weft_host *host;
    uint64_t bytes, parts, hash;
} tally;

static weft_rc up_init(const weft_host *h, weft_init *ctx, void **state)
{
    upload *u = calloc(1, sizeof(*u));
    if (u == NULL || !WEFT_GROUP_AT_LEAST(h->request, 1)) {
        free(u);
        h->init->error(ctx, "needs a host with request->body_read");
        return WEFT_ERROR;
    }
    u->host = h;
    u->delay_ms = (int)h->init->opt_int(ctx, "delay_ms", 0);
    *state = u;
    return WEFT_OK;
}

static void up_fini(void *state) { free(state); }

static void add(tally *t, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        t->hash = (t->hash ^ p[i]) * 1099511628211u;
    t->bytes += len;
    t->parts++;
}

static int answer(weft_req *req, tally *t, int rc)
{
    const weft_host *h = weft_req_host(req);
    if (rc != WEFT_OK) {
        h->response->status(req, 400); /* past max_body the host answers 413 whatever is set here */
        return h->response->writef(req, "read rc=%d after %" PRIu64 " bytes\n", rc, t->bytes);
    }
    return h->response->writef(req, "bytes=%" PRIu64 " parts=%" PRIu64 " hash=%016" PRIx64 "\n", t->bytes, t->parts,
                               t->hash);
}

static weft_rc up_handle(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    upload *u = state;
    tally t = {.host = u->host, .hash = 1469598103934665603u};
    for (;;) {
        if (u->delay_ms > 0 && h->sync->sleep(req, u->delay_ms, NULL, NULL) != WEFT_OK)
            return WEFT_CANCELLED;
        const void *data;
        size_t len;
        int rc = h->request->body_read(req, &data, &len, NULL, NULL);
        if (rc != WEFT_OK) {
            answer(req, &t, rc);
            return rc == WEFT_CANCELLED ? WEFT_CANCELLED : WEFT_OK;
        }
        if (len == 0)
            return answer(req, &t, WEFT_OK);
        add(&t, data, len);
    }
}

static void on_part(weft_req *req, void *arg, int rc, const void *data, size_t len)
{
    const weft_host *h = weft_req_host(req);
    tally *t = arg;
    if (rc == WEFT_OK && len > 0) {
        add(t, data, len);
        h->request->body_read(req, NULL, NULL, on_part, t);
        return;
    }
    answer(req, t, rc);
    h->response->done(req, rc == WEFT_OK || rc == WEFT_ERROR ? WEFT_OK : rc);
    free(t);
}

static weft_rc up_handle_async(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    upload *u = state;
    tally *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return WEFT_ERROR;
    *t = (tally){.host = u->host, .hash = 1469598103934665603u};
    h->request->body_read(req, NULL, NULL, on_part, t);
    return WEFT_AGAIN;
}

static const weft_plugin upload_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "upload",
    .version = "1.0.0",
    .description = "test fixture: reads a streamed request body part by part and tallies it",
    .init = up_init,
    .fini = up_fini,
    .handle = up_handle,
    .handle_async = up_handle_async,
};

const weft_plugin *weft_plugin_entry(void) { return &upload_plugin; }
