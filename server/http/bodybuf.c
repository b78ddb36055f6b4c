#include "http/bodybuf.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/timer.h"
#include "core/loop.h"
#include "request/respond.h"

typedef struct bodybuf {
    h2o_handler_t *self;
    h2o_req_t *req;
    int (*serve)(h2o_handler_t *self, h2o_req_t *req);
    char *data;
    size_t len, cap, max;
    size_t total; /* limits.max_buffered_body_total when the body began */
    int idle_ms, over;
    weft_loop *loop;
    weft_timer idle;
} bodybuf;

/* Every loop's collected bodies together: what their buffers hold (their
 * capacity: that is the memory), from their first part until h2o frees
 * their request. */
static atomic_size_t held_bytes;
static atomic_uint_fast64_t refused_count;

size_t weft_bodybuf_bytes(void) { return atomic_load_explicit(&held_bytes, memory_order_relaxed); }

uint64_t weft_bodybuf_refused_total(void)
{
    return (uint64_t)atomic_load_explicit(&refused_count, memory_order_relaxed);
}

/* `more` bytes for `b`, within the process-wide total. A body alone may
 * pass it (else a route's max_body above the total could never be met),
 * so the bytes held stay within the larger of the total and one body. */
static int charge(bodybuf *b, size_t more)
{
    size_t before = atomic_fetch_add_explicit(&held_bytes, more, memory_order_relaxed);
    if (before + more > b->total && before > b->cap) {
        atomic_fetch_sub_explicit(&held_bytes, more, memory_order_relaxed);
        return 0;
    }
    return 1;
}

static void free_data(bodybuf *b)
{
    atomic_fetch_sub_explicit(&held_bytes, b->cap, memory_order_relaxed);
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* Answered before the body ended: the rest of it is never read
 * (weft_respond_text abandons it; a read asked for may still complete),
 * and what was collected goes at once. */
static void refuse(bodybuf *b, int status, const char *why)
{
    b->over = 1;
    weft_timers_cancel(b->loop->timers, &b->idle);
    free_data(b);
    weft_respond_text(b->req, status, why);
}

static void refuse_full(bodybuf *b)
{
    atomic_fetch_add_explicit(&refused_count, 1, memory_order_relaxed);
    static _Atomic uint64_t last;
    uint64_t now = weft_now_ns(), prev = atomic_load(&last);
    if (now - prev > 10000000000ull && atomic_compare_exchange_strong(&last, &prev, now))
        weft_log_warn("refusing request bodies with 503: the bodies being collected hold %zu bytes, "
                      "limits.max_buffered_body_total is %zu; more are counted "
                      "(weft_buffered_body_refused_total), logged at most every 10 s",
                      weft_bodybuf_bytes(), b->total);
    h2o_add_header(&b->req->pool, &b->req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("1"));
    refuse(b, 503, "server busy: too many request bodies being received (limits.max_buffered_body_total)");
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
        if (!charge(b, cap - b->cap)) {
            refuse_full(b);
            return -1;
        }
        char *p = realloc(b->data, cap);
        if (p == NULL) {
            atomic_fetch_sub_explicit(&held_bytes, cap - b->cap, memory_order_relaxed);
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
    free_data(b);
}

void weft_bodybuf_collect(h2o_handler_t *self, h2o_req_t *req, const weft_bodybuf_limits *lim,
                          int (*serve)(h2o_handler_t *self, h2o_req_t *req))
{
    bodybuf *b = h2o_mem_alloc_shared(&req->pool, sizeof(*b), on_dispose);
    *b = (bodybuf){.self = self, .req = req, .serve = serve, .max = lim->max_body, .total = lim->total,
                   .idle_ms = lim->idle_timeout_ms, .loop = weft_loop_current};
    if (append(b, req->entity) != 0)
        return;
    req->write_req.cb = on_write_req;
    req->write_req.ctx = b;
    if (b->idle_ms > 0)
        (void)weft_timers_add(b->loop->timers, &b->idle, (uint64_t)b->idle_ms, on_idle);
    req->proceed_req(req, NULL);
}
