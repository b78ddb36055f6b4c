#include <stdlib.h>

#include "base/log.h"
#include "dispatch/await.h"
#include "dispatch/dispatch.h"
#include "outbound/outbound.h"
#include "request/request.h"
#include "request/route.h"

/*
 * A batch of calls made by one blocking-style handler, on the one wait of
 * dispatch/await.h: the calls start on the request's loop whatever the
 * context, and cancelling the request cancels every call still running
 * (its connection closed, so the upstream sees it go). `left` counts the
 * calls still running plus one for whoever is walking the list (the starter,
 * or the canceller), so a call that finishes meanwhile can never end the
 * batch under its feet.
 */
typedef struct batch {
    weft_await aw;
    size_t n, left;
    weft_fetch **fetches;
    int cancelled;
} batch;

static void batch_step(batch *b)
{
    if (--b->left == 0)
        weft_await_done(&b->aw, b->cancelled ? WEFT_CANCELLED : WEFT_OK);
}

static void on_batch_fetch_done(weft_fetch *f) { batch_step(f->data); }

static void start_all(weft_await *a)
{
    batch *b = H2O_STRUCT_FROM_MEMBER(batch, aw, a);
    b->left = b->n + 1;
    for (size_t i = 0; i < b->n; i++)
        weft_fetch_start(b->fetches[i], a->r->loop);
    batch_step(b);
}

static void cancel_all(weft_await *a)
{
    batch *b = H2O_STRUCT_FROM_MEMBER(batch, aw, a);
    b->cancelled = 1;
    b->left++;
    for (size_t i = 0; i < b->n; i++)
        weft_fetch_cancel(b->fetches[i]);
    batch_step(b);
}

static const weft_http_request *nth(const weft_http_request *rqs, size_t i)
{
    return (const weft_http_request *)((const char *)rqs + i * rqs->struct_size);
}

/* Fills res[i] for every call; returns WEFT_OK, or an error when nothing ran. */
static int run_batch(weft_req *r, size_t n, const weft_http_request *rqs, weft_http_response **res)
{
    for (size_t i = 0; i < n; i++)
        res[i] = NULL;
    if (weft_await_refused(r, "http_fetch()", "http_fetch_async()")) {
        /* Blocking the loop would deadlock: the loop is what runs the call. */
        for (size_t i = 0; i < n; i++)
            res[i] = weft_http_response_error(WEFT_HTTP_BAD_REQUEST, "http_fetch() in a reactive handler");
        return WEFT_ERROR;
    }
    if (rqs == NULL || rqs->struct_size < sizeof(uint32_t) + sizeof(void *)) {
        weft_log_error("%s: http_fetch_all(): requests missing or not initialised with WEFT_HTTP_REQUEST_INIT",
                       r->route->label);
        return WEFT_ERROR;
    }
    batch b = {.aw = {.r = r, .start = start_all, .cancel = cancel_all}, .n = n};
    b.fetches = calloc(n, sizeof(*b.fetches));
    int rc = WEFT_OK;
    for (size_t i = 0; b.fetches != NULL && i < n; i++) {
        if ((b.fetches[i] = weft_fetch_new(nth(rqs, i), r->route->label)) == NULL) {
            rc = WEFT_UNAVAILABLE;
            break;
        }
        weft_fetch_trace(b.fetches[i], r);
        b.fetches[i]->on_done = on_batch_fetch_done;
        b.fetches[i]->data = &b;
    }
    if (b.fetches == NULL || rc != WEFT_OK) {
        for (size_t i = 0; b.fetches != NULL && i < n; i++)
            weft_fetch_free(b.fetches[i]);
        free(b.fetches);
        return WEFT_UNAVAILABLE; /* out of memory: 503 */
    }
    /* WEFT_CANCELLED without a start leaves the calls without an outcome. */
    weft_await_block(&b.aw);
    for (size_t i = 0; i < n; i++) {
        if (weft_fetch_take(b.fetches[i], &res[i]) == WEFT_UNAVAILABLE && res[i] == NULL && b.aw.rc == WEFT_CANCELLED)
            res[i] = weft_http_response_error(WEFT_HTTP_CANCELLED, "the request was cancelled");
        weft_fetch_free(b.fetches[i]);
    }
    free(b.fetches);
    return WEFT_OK;
}

int weft_http_host_http_fetch_all(weft_req *r, size_t n, const weft_http_request *rqs, weft_http_response **res)
{
    if (n == 0)
        return WEFT_OK;
    return run_batch(r, n, rqs, res);
}

int weft_http_host_http_fetch(weft_req *r, const weft_http_request *rq, weft_http_response **res)
{
    int rc = run_batch(r, 1, rq, res);
    if (rc != WEFT_OK)
        return rc;
    return *res == NULL ? WEFT_UNAVAILABLE : weft_http_rc((*res)->error);
}

/* ---- reactive ---- */

typedef struct async_call {
    weft_await aw;
    weft_fetch *f;
    weft_http_callback cb;
    void *arg;
} async_call;

static void on_async_fetch_done(weft_fetch *f)
{
    async_call *c = f->data;
    weft_await_done(&c->aw, f->rc);
}

static void start_call(weft_await *a) { weft_fetch_start(H2O_STRUCT_FROM_MEMBER(async_call, aw, a)->f, a->r->loop); }
static void cancel_call(weft_await *a) { weft_fetch_cancel(H2O_STRUCT_FROM_MEMBER(async_call, aw, a)->f); }

static void deliver(void *ctx)
{
    async_call call = *(async_call *)ctx;
    free(ctx);
    weft_http_response *res;
    int rc = weft_fetch_take(call.f, &res);
    if (res == NULL && call.aw.rc == WEFT_CANCELLED) { /* withdrawn before it started */
        res = weft_http_response_error(WEFT_HTTP_CANCELLED, "the request was cancelled");
        rc = WEFT_CANCELLED;
    }
    weft_fetch_free(call.f);
    call.cb(call.aw.r, call.arg, rc, res);
}

static void complete_call(weft_await *a) { weft_dispatch_run(a->r, deliver, H2O_STRUCT_FROM_MEMBER(async_call, aw, a)); }

/* The handler finished first: the call was cancelled, nobody takes its answer. */
static void abandon_call(weft_await *a)
{
    async_call *c = H2O_STRUCT_FROM_MEMBER(async_call, aw, a);
    weft_fetch_free(c->f);
    free(c);
}

void weft_http_host_http_fetch_async(weft_req *r, const weft_http_request *rq, weft_http_callback cb, void *arg)
{
    if (weft_loop_current != r->loop) {
        weft_log_error("%s: http_fetch_async() called off the request's loop thread; use http_fetch()", r->route->label);
        cb(r, arg, WEFT_ERROR, weft_http_response_error(WEFT_HTTP_BAD_REQUEST, "http_fetch_async() off its loop"));
        return;
    }
    async_call *c = malloc(sizeof(*c));
    weft_fetch *f = c != NULL ? weft_fetch_new(rq, r->route->label) : NULL;
    if (f == NULL) {
        free(c);
        cb(r, arg, WEFT_UNAVAILABLE, weft_http_response_error(WEFT_HTTP_NO_RESOURCES, "out of memory"));
        return;
    }
    weft_fetch_trace(f, r);
    *c = (async_call){.aw = {.r = r, .start = start_call, .cancel = cancel_call, .complete = complete_call, .abandon = abandon_call},
                      .f = f,
                      .cb = cb,
                      .arg = arg};
    f->data = c;
    f->on_done = on_async_fetch_done;
    weft_await_async(&c->aw);
}
