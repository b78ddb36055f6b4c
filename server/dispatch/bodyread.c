/*
 * req_body_read in each execution context, on the one wait of
 * dispatch/await.h: the next part of the request body is taken on the loop
 * thread (request/body.c) and copied out of the loop's hands only as a
 * pointer that stays valid until the handler's next read. A client that
 * leaves, or the route's deadline, ends a waiting read with WEFT_CANCELLED.
 */
#include "base/log.h"
#include "dispatch/await.h"
#include "dispatch/dispatch.h"
#include "request/body.h"
#include "request/route.h"

typedef struct body_wait {
    weft_await aw;
    const void *data;
    size_t len;
    weft_body_callback cb; /* reactive */
    void *arg;
} body_wait;

static void woken(void *waiter, int rc)
{
    body_wait *w = waiter;
    if (rc == WEFT_OK)
        rc = weft_body_next(w->aw.r, &w->data, &w->len, NULL, NULL);
    weft_await_done(&w->aw, rc);
}

static void start(weft_await *a)
{
    body_wait *w = H2O_STRUCT_FROM_MEMBER(body_wait, aw, a);
    int rc = weft_body_next(a->r, &w->data, &w->len, woken, w);
    if (rc != WEFT_AGAIN)
        weft_await_done(a, rc);
}

static void cancel(weft_await *a)
{
    weft_body_unwait(a->r);
    weft_await_done(a, WEFT_CANCELLED);
}

int weft_bodyread_req_body_read(weft_req *r, const void **data, size_t *len)
{
    *data = "";
    *len = 0;
    if (weft_await_refused(r, "req_body_read()", "req_body_read_async()"))
        return WEFT_ERROR;
    body_wait w = {.aw = {.r = r, .start = start, .cancel = cancel}};
    int rc = weft_await_block(&w.aw);
    if (rc == WEFT_OK) {
        *data = w.data;
        *len = w.len;
    }
    return rc;
}

static void run_callback(void *ctx)
{
    body_wait *w = ctx;
    w->cb(w->aw.r, w->arg, w->aw.rc, w->data, w->len);
}

/* The record goes back first: the callback's next read takes it again (the
 * part itself is request/body.c's, valid until that read). */
static void complete(weft_await *a)
{
    body_wait w = *H2O_STRUCT_FROM_MEMBER(body_wait, aw, a);
    weft_await_rec_free(w.aw.r, H2O_STRUCT_FROM_MEMBER(body_wait, aw, a));
    if (w.aw.rc != WEFT_OK) {
        w.data = "";
        w.len = 0;
    }
    weft_dispatch_run(w.aw.r, run_callback, &w);
}

void weft_bodyread_req_body_read_async(weft_req *r, weft_body_callback cb, void *arg)
{
    body_wait *w = weft_await_reactive(r) ? weft_await_rec_new(r, sizeof(*w)) : NULL;
    if (w == NULL) {
        if (!weft_await_reactive(r))
            weft_log_error("%s: req_body_read_async() outside a reactive handler; use req_body_read()",
                           r->route->label);
        cb(r, arg, WEFT_ERROR, "", 0);
        return;
    }
    *w = (body_wait){.aw = {.r = r, .start = start, .cancel = cancel, .complete = complete}, .cb = cb, .arg = arg};
    weft_await_async(&w->aw);
}
