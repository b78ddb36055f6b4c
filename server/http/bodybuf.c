#include "http/bodybuf.h"

#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "core/loop.h"
#include "request/respond.h"

typedef struct bodybuf {
    h2o_handler_t *self;
    h2o_req_t *req;
    int (*serve)(h2o_handler_t *self, h2o_req_t *req);
    char *data;
    size_t len, cap, max;
    int idle_ms, over;
    weft_loop *loop;
    weft_timer idle;
} bodybuf;

/* Answered before the body ended: the rest of it is never read, so an
 * HTTP/1 connection cannot carry another request. */
static void refuse(bodybuf *b, int status, const char *why)
{
    b->over = 1;
    weft_timers_cancel(b->loop->timers, &b->idle);
    b->req->write_req.cb = NULL;
    b->req->http1_is_persistent = 0;
    weft_respond_text(b->req, status, why);
}

static void on_idle(weft_timer *t)
{
    bodybuf *b = H2O_STRUCT_FROM_MEMBER(bodybuf, idle, t);
    refuse(b, 408, "request body timed out: nothing arrived for limits.request_timeout_ms");
}

static int append(bodybuf *b, h2o_iovec_t in)
{
    if (b->len + in.len > b->max) {
        refuse(b, 413, "request body too large (max_body)");
        return -1;
    }
    if (b->len + in.len > b->cap) {
        size_t cap = b->cap > 0 ? b->cap : 16384;
        while (cap < b->len + in.len)
            cap *= 2;
        if (cap > b->max)
            cap = b->max;
        char *p = realloc(b->data, cap);
        if (p == NULL) {
            refuse(b, 503, "server out of memory for the request body");
            return -1;
        }
        b->data = p;
        b->cap = cap;
    }
    if (in.len > 0)
        memcpy(b->data + b->len, in.base, in.len);
    b->len += in.len;
    return 0;
}

static int on_write_req(void *ctx, int is_end_stream)
{
    bodybuf *b = ctx;
    if (b->over || append(b, b->req->entity) != 0)
        return 0;
    weft_timers_cancel(b->loop->timers, &b->idle);
    if (!is_end_stream) {
        if (b->idle_ms > 0)
            (void)weft_timers_add(b->loop->timers, &b->idle, (uint64_t)b->idle_ms, on_idle);
        b->req->proceed_req(b->req, NULL);
        return 0;
    }
    b->over = 1;
    b->req->write_req.cb = NULL;
    b->req->proceed_req = NULL; /* the body is whole: the request reads as one that came so */
    b->req->entity = h2o_iovec_init(b->data != NULL ? b->data : "", b->len);
    b->serve(b->self, b->req);
    return 0;
}

/* h2o frees the request (client gone, stream reset, or answered). */
static void on_dispose(void *p)
{
    bodybuf *b = p;
    weft_timers_cancel(b->loop->timers, &b->idle);
    free(b->data);
}

void weft_bodybuf_collect(h2o_handler_t *self, h2o_req_t *req, size_t max, int idle_timeout_ms,
                          int (*serve)(h2o_handler_t *self, h2o_req_t *req))
{
    bodybuf *b = h2o_mem_alloc_shared(&req->pool, sizeof(*b), on_dispose);
    *b = (bodybuf){.self = self, .req = req, .serve = serve, .max = max, .idle_ms = idle_timeout_ms,
                   .loop = weft_loop_current};
    if (append(b, req->entity) != 0)
        return;
    req->write_req.cb = on_write_req;
    req->write_req.ctx = b;
    if (b->idle_ms > 0)
        (void)weft_timers_add(b->loop->timers, &b->idle, (uint64_t)b->idle_ms, on_idle);
    req->proceed_req(req, NULL);
}
