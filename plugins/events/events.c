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
 * is a loop; reactive chains res_flush_async and sleep_async.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/plugin.h>

static const weft_host *host;

typedef struct stream {
    long n, count, interval_ms;
} stream;

static int parse(weft_req *req, const char *name, long def, long min, long max, long *out)
{
    const char *v = host->req_query(req, name);
    char *end = NULL;
    long x = v != NULL ? strtol(v, &end, 10) : def;
    if ((v != NULL && (*v == '\0' || *end != '\0')) || x < min || x > max) {
        char msg[96];
        snprintf(msg, sizeof msg, "%s must be an integer between %ld and %ld", name, min, max);
        host->res_error_json(req, 400, msg);
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
    char id[24], data[64];
    s->n++;
    snprintf(id, sizeof id, "%ld", s->n);
    snprintf(data, sizeof data, "{\"n\":%ld,\"of\":%ld}", s->n, s->count);
    return host->res_sse(req, id, NULL, data);
}

static int ev_handle(weft_req *req, void *state)
{
    (void)state;
    stream s = {0};
    if (setup(req, &s) != 0)
        return WEFT_OK;
    while (s.n < s.count) {
        if (append_event(req, &s) != WEFT_OK)
            return WEFT_ERROR;
        int rc = host->res_flush(req);
        if (rc == WEFT_CANCELLED)
            return WEFT_OK; /* the client left: nobody to answer */
        if (rc != WEFT_OK)
            return WEFT_ERROR;
        if (s.n < s.count && host->sleep_ms(req, (uint32_t)s.interval_ms) != WEFT_OK)
            return WEFT_ERROR;
    }
    return WEFT_OK;
}

static void next_event(weft_req *req, void *arg, int rc);

static void on_flushed(weft_req *req, void *arg, int rc)
{
    stream *s = arg;
    if (rc != WEFT_OK || s->n >= s->count) {
        free(s);
        host->done(req, rc == WEFT_CANCELLED ? WEFT_OK : rc);
        return;
    }
    host->sleep_async(req, (uint32_t)s->interval_ms, next_event, s);
}

static void next_event(weft_req *req, void *arg, int rc)
{
    stream *s = arg;
    if (rc != WEFT_OK || append_event(req, s) != WEFT_OK) {
        free(s);
        host->done(req, WEFT_ERROR);
        return;
    }
    host->res_flush_async(req, on_flushed, s);
}

static int ev_handle_async(weft_req *req, void *state)
{
    (void)state;
    stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return host->res_error_json(req, 503, "out of memory");
    if (setup(req, s) != 0) {
        free(s);
        return WEFT_OK;
    }
    next_event(req, s, WEFT_OK);
    return WEFT_AGAIN;
}

static int ev_init(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    *state = NULL;
    if (!WEFT_HOST_HAS(h, res_sse)) {
        h->init_error(ctx, "this weft cannot stream responses (plugin API 1.1 needed)");
        return WEFT_ERROR;
    }
    return WEFT_OK;
}

static void ev_fini(void *state) { (void)state; }

static const weft_plugin events_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "events",
    .version = "1.0.0",
    .description = "Server-Sent Events, one every interval_ms, streamed",
    .init = ev_init,
    .fini = ev_fini,
    .handle = ev_handle,
    .handle_async = ev_handle_async,
};

const weft_plugin *weft_plugin_entry(void) { return &events_plugin; }
