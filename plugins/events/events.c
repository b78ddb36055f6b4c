/*
 * events: Server-Sent Events, streamed as they are produced (plugin API 1.1).
 *
 *   GET /{policy}/events?count=N&interval_ms=M   (defaults 5 and 1000)
 *   → text/event-stream, one event every M ms:
 *
 *       id: 1
 *       data: {"n":1,"of":5}
 *
 * Each event is flushed on its own; the stream stops after N events or as
 * soon as a flush says the client left (WEFT_CANCELLED), which frees the
 * worker or coroutine within one interval. Blocking style (pool, coroutine)
 * is a loop; reactive chains stream->flush and sync->sleep with callbacks.
 *
 * With the route option `fanout = "postgres"` the route is a channel
 * instead, shared by every weft process on the database: GET subscribes,
 * POST publishes (events_fanout.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"

typedef struct stream {
    long n, count, interval_ms;
} stream;

static int parse(weft_req *req, const char *name, long def, long min, long max, long *out)
{
    const weft_host *h = weft_req_host(req);
    const char *v = h->request->query(req, name, NULL);
    char *end = NULL;
    long x = v != NULL ? strtol(v, &end, 10) : def;
    if ((v != NULL && (*v == '\0' || *end != '\0')) || x < min || x > max) {
        char msg[96];
        snprintf(msg, sizeof msg, "%s must be an integer between %ld and %ld", name, min, max);
        h->response->error_json(req, 400, msg);
        return -1;
    }
    *out = x;
    return 0;
}

static int setup(weft_req *req, stream *s)
{
    return parse(req, "count", 5, 1, 100000, &s->count) == 0 &&
                   parse(req, "interval_ms", 1000, 0, 60000, &s->interval_ms) == 0
               ? 0
               : -1;
}

static int append_event(weft_req *req, stream *s)
{
    const weft_host *h = weft_req_host(req);
    char id[24], data[64];
    s->n++;
    snprintf(id, sizeof id, "%ld", s->n);
    snprintf(data, sizeof data, "{\"n\":%ld,\"of\":%ld}", s->n, s->count);
    return h->stream->sse(req, id, NULL, data);
}

static int is_post(weft_req *req) { return strcmp(weft_req_host(req)->request->method(req), "POST") == 0; }

static weft_rc ev_handle(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    const ev_cfg *cfg = state;
    if (cfg->fanout)
        return is_post(req) ? ev_publish(req, cfg) : ev_subscribe(req, cfg);
    stream s = {0};
    if (setup(req, &s) != 0)
        return WEFT_OK;
    while (s.n < s.count) {
        if (append_event(req, &s) != WEFT_OK)
            return WEFT_ERROR;
        int rc = h->stream->flush(req, NULL, NULL);
        if (rc == WEFT_CANCELLED)
            return WEFT_OK; /* the client left: nobody to answer */
        if (rc != WEFT_OK)
            return WEFT_ERROR;
        if (s.n < s.count && h->sync->sleep(req, (uint32_t)s.interval_ms, NULL, NULL) != WEFT_OK)
            return WEFT_ERROR;
    }
    return WEFT_OK;
}

static void next_event(weft_req *req, void *arg, int rc);

static void on_flushed(weft_req *req, void *arg, int rc)
{
    const weft_host *h = weft_req_host(req);
    stream *s = arg;
    if (rc != WEFT_OK || s->n >= s->count) {
        free(s);
        h->response->done(req, rc == WEFT_CANCELLED ? WEFT_OK : rc);
        return;
    }
    h->sync->sleep(req, (uint32_t)s->interval_ms, next_event, s);
}

static void next_event(weft_req *req, void *arg, int rc)
{
    const weft_host *h = weft_req_host(req);
    stream *s = arg;
    if (rc != WEFT_OK || append_event(req, s) != WEFT_OK) {
        free(s);
        h->response->done(req, WEFT_ERROR);
        return;
    }
    h->stream->flush(req, on_flushed, s);
}

static weft_rc ev_handle_async(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    const ev_cfg *cfg = state;
    if (cfg->fanout)
        return is_post(req) ? ev_publish_async(req, cfg) : ev_subscribe_async(req, cfg);
    stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return h->response->error_json(req, 503, "out of memory");
    if (setup(req, s) != 0) {
        free(s);
        return WEFT_OK;
    }
    next_event(req, s, WEFT_OK);
    return WEFT_AGAIN;
}

static weft_rc ev_init(const weft_host *h, weft_init *ctx, void **state)
{
    *state = NULL;
    if (h->stream == NULL) {
        h->init->error(ctx, "this weft cannot stream responses (no stream group)");
        return WEFT_ERROR;
    }
    ev_cfg *cfg = calloc(1, sizeof(*cfg));
    if (cfg == NULL)
        return WEFT_ERROR;
    if (ev_fanout_init(h, ctx, cfg) != 0) {
        free(cfg);
        return WEFT_ERROR;
    }
    *state = cfg;
    return WEFT_OK;
}

static void ev_fini(void *state) { free(state); }

static const weft_plugin events_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "events",
    .version = "1.1.0",
    .description = "Server-Sent Events, one every interval_ms, streamed; or a channel across replicas (fanout)",
    .init = ev_init,
    .fini = ev_fini,
    .handle = ev_handle,
    .handle_async = ev_handle_async,
};

const weft_plugin *weft_plugin_entry(void) { return &events_plugin; }
