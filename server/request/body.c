/*
 * The request body as it streams (request/body.h). h2o's contract
 * (h2o.h, h2o_handler_t.supports_request_streaming): once weft sets
 * req->write_req.cb, h2o calls it with the next part in req->entity, which
 * must be copied before returning, and sends no more until weft calls
 * req->proceed_req. weft calls it only when the plugin asks for the next
 * part: that is the backpressure. While proceed_req is set h2o may call
 * write_req.cb whenever a read weft asked for completes, and HTTP/1 calls
 * it unchecked (lib/http1.c handle_one_body_fragment): the callback is
 * never cleared while the body is unfinished, only handed to the sink of
 * weft_body_abandon, which stops the read the one way h2o provides
 * (proceed_req with an error).
 */
#include "request/body.h"

#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/timer.h"
#include "core/loop.h"
#include "request/respond.h"
#include "request/route.h"

#define STREAM_READ_SIZE (128 * 1024)

struct weft_body {
    h2o_req_t *req; /* NULL once h2o freed it */
    weft_req *r;
    weft_loop *loop;     /* the request's (set before weft_req.loop is) */
    char *part;          /* the part held (malloc'd): handed out, or waiting to be */
    size_t len, cap;
    size_t total, max;
    int ready;           /* `part` has not been handed to the plugin yet */
    int handed;          /* the plugin holds `part`: the next read asks h2o for more */
    int ended;           /* h2o delivered the last part */
    int asked;           /* proceed_req called; h2o's write_req is due */
    int rc;              /* WEFT_OK, or how the body failed */
    int idle_ms;
    weft_timer idle;
    weft_body_wake wake;
    void *waiter;
};

static void idle_fired(weft_timer *t);

static void arm_idle(weft_body *b)
{
    weft_loop *L = b->loop;
    weft_timers_cancel(L->timers, &b->idle);
    if (b->idle_ms > 0 && !b->ended && b->rc == WEFT_OK)
        (void)weft_timers_add(L->timers, &b->idle, (uint64_t)b->idle_ms, idle_fired);
}

static void wake_waiter(weft_body *b, int rc)
{
    weft_body_wake fn = b->wake;
    void *w = b->waiter;
    b->wake = NULL;
    b->waiter = NULL;
    if (fn != NULL)
        fn(w, rc);
}

static void fail(weft_body *b, int rc)
{
    if (b->rc != WEFT_OK)
        return;
    b->rc = rc;
    weft_timers_cancel(b->loop->timers, &b->idle);
    if (rc == WEFT_ERROR) /* past max_body: whatever the handler does next, the answer is 413 */
        weft_request_res_error(b->r, 413, "request body too large (max_body)");
    wake_waiter(b, rc);
}

static void idle_fired(weft_timer *t)
{
    weft_body *b = H2O_STRUCT_FROM_MEMBER(weft_body, idle, t);
    weft_log_warn("%s: the client sent no part of its request body for %d ms; the body read times out",
                  b->r->route->label, b->idle_ms);
    fail(b, WEFT_TIMEOUT);
}

/* Copies req->entity (h2o reuses its buffer once this returns). */
static int take(weft_body *b, h2o_iovec_t in, int is_end)
{
    b->asked = 0;
    b->ended = is_end;
    if (b->total + in.len > b->max) {
        fail(b, WEFT_ERROR);
        return 0;
    }
    b->total += in.len;
    if (in.len > b->cap) {
        char *p = realloc(b->part, in.len);
        if (p == NULL) {
            fail(b, WEFT_UNAVAILABLE);
            return 0;
        }
        b->part = p;
        b->cap = in.len;
    }
    if (in.len > 0)
        memcpy(b->part, in.base, in.len);
    b->len = in.len;
    b->ready = in.len > 0 || is_end;
    b->handed = 0;
    arm_idle(b);
    return 1;
}

static int on_write_req(void *ctx, int is_end_stream)
{
    weft_body *b = ctx;
    if (b->req == NULL || b->rc != WEFT_OK)
        return 0;
    if (!take(b, b->req->entity, is_end_stream))
        return 0;
    if (b->ready)
        wake_waiter(b, WEFT_OK); /* the waiter takes the part with weft_body_next */
    return 0;
}

int weft_body_attach(weft_req *r, h2o_req_t *req, size_t max, int idle_timeout_ms)
{
    weft_body *b = weft_req_alloc(r, sizeof(*b));
    if (b == NULL)
        return -1;
    *b = (weft_body){.req = req, .r = r, .loop = weft_loop_current, .max = max, .idle_ms = idle_timeout_ms,
                     .rc = WEFT_OK};
    r->body_in = b;
    /* h2o reads up to 1 MB per turn; each part is copied twice on its way
     * (h2o's body buffer, this part), so smaller reads keep an upload's
     * footprint small at no cost in throughput worth measuring. */
    h2o_socket_t *sock = weft_h2o_req_socket(req);
    if (sock != NULL && req->version < 0x200)
        h2o_evloop_socket_set_max_read_size(sock, STREAM_READ_SIZE);
    if (!take(b, req->entity, 0))
        return 0; /* failed already: the read says so */
    req->write_req.cb = on_write_req;
    req->write_req.ctx = b;
    return 0;
}

void weft_body_detach(weft_req *r)
{
    weft_body *b = r->body_in;
    if (b == NULL)
        return;
    b->req = NULL;
    weft_timers_cancel(b->loop->timers, &b->idle);
    if (b->rc == WEFT_OK && !b->ended)
        b->rc = WEFT_CANCELLED; /* the waiter, if any, is ended by the cancellation that follows */
}

void weft_body_release(weft_req *r)
{
    weft_body *b = r->body_in;
    if (b == NULL)
        return;
    weft_timers_cancel(b->loop->timers, &b->idle);
    /* h2o must not call into the freed weft_body: an unfinished body goes
     * to the sink (a read weft asked for may still complete); an ended one
     * gets no more calls. */
    if (b->req != NULL && !b->ended)
        weft_body_abandon(b->req);
    else if (b->req != NULL && b->req->write_req.ctx == b)
        b->req->write_req.cb = NULL;
    free(b->part);
    r->body_in = NULL;
}

/* What h2o's request keeps of a body weft abandoned: lives in its pool, so
 * it is there for whatever h2o still calls, and goes with the request. */
typedef struct body_sink {
    h2o_req_t *req;
    h2o_timer_t stop;
} body_sink;

/* A part of a read asked for before the body was abandoned: dropped (h2o
 * then waits for proceed_req, which the stop gives). */
static int sink_write(void *ctx, int is_end_stream)
{
    (void)ctx;
    (void)is_end_stream;
    return 0;
}

/* Run by the loop, outside any h2o callback: h2o's proceed_req with an
 * error may close the connection (HTTP/1) or reset the stream (HTTP/2),
 * freeing the request a caller inside h2o still uses. Nothing may touch
 * `s` after proceed_req: it can free the pool `s` lives in. */
static void sink_stop(h2o_timer_t *t)
{
    body_sink *s = H2O_STRUCT_FROM_MEMBER(body_sink, stop, t);
    h2o_req_t *req = s->req;
    if (req->proceed_req != NULL)
        req->proceed_req(req, h2o_httpclient_error_is_eos);
}

static void sink_dispose(void *p)
{
    body_sink *s = p;
    if (h2o_timer_is_linked(&s->stop))
        h2o_timer_unlink(&s->stop);
}

void weft_body_abandon(h2o_req_t *req)
{
    if (req->proceed_req == NULL || req->is_tunnel_req || req->write_req.cb == sink_write)
        return;
    req->http1_is_persistent = 0; /* before the head is written: it says "close" */
    body_sink *s = h2o_mem_alloc_shared(&req->pool, sizeof(*s), sink_dispose);
    *s = (body_sink){.req = req};
    req->write_req.cb = sink_write;
    req->write_req.ctx = s;
    h2o_timer_init(&s->stop, sink_stop);
    h2o_timer_link(req->conn->ctx->loop, 0, &s->stop);
}

int weft_body_too_large(const weft_req *r) { return r->body_in != NULL && r->body_in->rc == WEFT_ERROR; }

int weft_body_unfinished(const weft_req *r) { return r->body_in != NULL && !r->body_in->ended; }

int weft_body_next(weft_req *r, const void **data, size_t *len, weft_body_wake wake, void *waiter)
{
    weft_body *b = r->body_in;
    *data = "";
    *len = 0;
    if (b == NULL) {
        /* The whole body came with the request (or the route buffers it):
         * one part, then the end. */
        if (r->body_read_once)
            return WEFT_OK;
        r->body_read_once = 1;
        *data = r->body != NULL ? r->body : "";
        *len = r->body_len;
        return WEFT_OK;
    }
    if (b->ready) {
        b->ready = 0;
        b->handed = 1;
        *data = b->part;
        *len = b->len;
        return WEFT_OK;
    }
    if (b->rc != WEFT_OK)
        return b->rc;
    if (b->ended)
        return WEFT_OK; /* the end, told again */
    if (b->req == NULL)
        return WEFT_CANCELLED;
    b->wake = wake;
    b->waiter = waiter;
    if (!b->asked && b->handed) {
        b->asked = 1;
        b->handed = 0;
        b->req->proceed_req(b->req, NULL); /* may call on_write_req before it returns */
    }
    return WEFT_AGAIN; /* even when proceed_req woke the waiter already */
}

void weft_body_unwait(weft_req *r)
{
    if (r->body_in != NULL) {
        r->body_in->wake = NULL;
        r->body_in->waiter = NULL;
    }
}
