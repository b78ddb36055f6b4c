/*
 * Streamed responses. The stream's state lives in the h2o request's pool,
 * so it survives the weft_req (a reactive handler may finish while its last
 * part is still on the wire) and dies with the connection's request: its
 * dispose hook is how a flush learns that the client left.
 */
#include "request/stream.h"

#include <stdlib.h>
#include <string.h>

#include "base/h2o_glue.h"
#include "base/log.h"
#include "request/backlog.h"
#include "request/respond.h"
#include "request/route.h"

struct weft_stream {
    h2o_generator_t gen; /* first: h2o hands it back to the callbacks */
    h2o_req_t *req;
    weft_req *wr;   /* NULL once the handler finished */
    char *inflight; /* the part h2o is sending (malloc'd) */
    int pending;
    int final_pending; /* the handler finished while a part was on the wire */
    h2o_iovec_t final;
    weft_charge *charge; /* the part (or the end) the client has not taken yet */
};

static void wake(weft_req *r, int rc)
{
    void (*fn)(weft_req *, int) = r->flush_done;
    r->flush_done = NULL;
    if (fn != NULL)
        fn(r, rc);
}

static void on_proceed(h2o_generator_t *g, h2o_req_t *req)
{
    weft_stream *s = (weft_stream *)g;
    free(s->inflight);
    s->inflight = NULL;
    s->pending = 0;
    weft_backlog_set(s->charge, 0);
    if (s->final_pending) {
        s->final_pending = 0;
        weft_backlog_set(s->charge, s->final.len);
        h2o_send(req, &s->final, 1, H2O_SEND_STATE_FINAL);
        return;
    }
    if (s->wr != NULL)
        wake(s->wr, WEFT_OK);
}

static void on_stop(h2o_generator_t *g, h2o_req_t *req)
{
    (void)g;
    (void)req; /* the request's disposal follows; on_dispose does the work */
}

static void on_dispose(void *p)
{
    weft_stream *s = p;
    free(s->inflight);
    s->inflight = NULL;
    weft_req *r = s->wr;
    if (r == NULL)
        return;
    s->wr = NULL;
    r->stream = NULL;
    r->hreq = NULL;
    if (s->pending)
        wake(r, WEFT_CANCELLED);
}

int weft_stream_send(weft_req *r)
{
    int starting = !r->streamed;
    if (starting) {
        h2o_req_t *req = r->hreq;
        if (req == NULL)
            return WEFT_CANCELLED;
        weft_stream *s = h2o_mem_alloc_shared(&req->pool, sizeof(*s), on_dispose);
        memset(s, 0, sizeof(*s));
        s->gen.proceed = on_proceed;
        s->gen.stop = on_stop;
        s->req = req;
        s->wr = r;
        const weft_route_cfg *rc = r->route != NULL ? r->route->cfg : NULL;
        s->charge = weft_backlog_new(req, rc != NULL ? rc->max_buffered_response : 0,
                                     rc != NULL ? rc->max_buffered_response_total : 0);
        r->stream = s;
        r->streamed = 1;
        weft_respond_head(req, r);
        h2o_start_response(req, &s->gen);
    }
    weft_stream *s = r->stream;
    if (s == NULL)
        return WEFT_CANCELLED;
    if (s->pending) {
        weft_log_error("%s: flush while the previous one is still in progress", r->route->label);
        return WEFT_ERROR;
    }
    if (r->res_len == 0 && !starting) {
        /* Nothing written since the last part. h2o takes an empty part only
         * with the head or the end, and asserts on one in between ("h2o_data
         * must only be called when there is progress": live in Debian's
         * build, which aborted). Nothing goes out, so the flush is over now. */
        wake(r, WEFT_OK);
        return WEFT_OK;
    }
    /* The buffer goes to h2o as it is; the handler writes into a new one. */
    s->inflight = r->res_body;
    h2o_iovec_t part = h2o_iovec_init(s->inflight != NULL ? s->inflight : "", r->res_len);
    r->res_body = NULL;
    r->res_len = r->res_cap = 0;
    s->pending = 1;
    /* A client that left earlier parts unread past its bound is closed here:
     * the flush then ends with WEFT_CANCELLED when h2o lets the request go. */
    weft_backlog_set(s->charge, part.len);
    h2o_send(s->req, &part, 1, H2O_SEND_STATE_IN_PROGRESS);
    return WEFT_OK;
}

void weft_stream_finish(weft_req *r)
{
    weft_stream *s = r->stream;
    if (s == NULL)
        return; /* the client left */
    if (r->rc != WEFT_OK)
        weft_log_error("%s [%s]: handler failed (rc %d) after its stream started; ending the stream (trace %s)",
                       r->route->label, r->id, r->rc, r->trace.trace_id_hex);
    s->wr = NULL;
    r->stream = NULL;
    s->final = h2o_strdup(&s->req->pool, r->res_body != NULL ? r->res_body : "", r->res_len);
    if (s->pending) {
        s->final_pending = 1;
        return;
    }
    weft_backlog_set(s->charge, s->final.len);
    h2o_send(s->req, &s->final, 1, H2O_SEND_STATE_FINAL);
}

static int no_newline(const char *s) { return s == NULL || strpbrk(s, "\r\n") == NULL; }

int weft_stream_res_sse(weft_req *r, const char *id, const char *event, const char *data)
{
    if (!no_newline(id) || !no_newline(event) || data == NULL)
        return WEFT_ERROR;
    if (!r->streamed && weft_req_res_header(r, "content-type") == NULL &&
        (weft_request_res_header(r, "content-type", "text/event-stream") != WEFT_OK ||
         weft_request_res_header(r, "cache-control", "no-cache") != WEFT_OK))
        return WEFT_ERROR;
    int rc = WEFT_OK;
    if (id != NULL)
        rc |= weft_request_res_printf(r, "id: %s\n", id);
    if (event != NULL)
        rc |= weft_request_res_printf(r, "event: %s\n", event);
    /* One data: line per line of the payload (CR, LF and CRLF all end a line). */
    for (const char *p = data;;) {
        size_t n = strcspn(p, "\r\n");
        rc |= weft_request_res_write(r, "data: ", 6) | weft_request_res_write(r, p, n) | weft_request_res_write(r, "\n", 1);
        p += n;
        if (*p == '\0')
            break;
        p += (p[0] == '\r' && p[1] == '\n') ? 2 : 1;
    }
    rc |= weft_request_res_write(r, "\n", 1);
    return rc == WEFT_OK ? WEFT_OK : WEFT_ERROR;
}
