/*
 * res_flush in each execution context, on the one wait of dispatch/await.h:
 * the part is handed to h2o on the loop thread (request/stream.c) and the
 * flush ends once the connection took it or the client left. Not
 * cancellable by itself: a client that leaves ends it with WEFT_CANCELLED,
 * and a part on the wire cannot be taken back.
 */
#include "base/log.h"
#include "dispatch/await.h"
#include "dispatch/dispatch.h"
#include "request/route.h"
#include "request/stream.h"

typedef struct flush_wait {
    weft_await aw;
    weft_callback cb; /* reactive */
    void *arg;
} flush_wait;

static void flushed(weft_req *r, int rc) { weft_await_done(r->flush_arg, rc); }

static void start(weft_await *a)
{
    weft_req *r = a->r;
    r->flush_done = flushed;
    r->flush_arg = a;
    int rc = weft_stream_send(r);
    if (rc != WEFT_OK) {
        r->flush_done = NULL;
        weft_await_done(a, rc);
    }
}

int weft_flush_res_flush(weft_req *r)
{
    if (weft_await_refused(r, "res_flush()", "res_flush_async()"))
        return WEFT_ERROR;
    /* A stream under `pool` holds its worker as long as its client reads:
     * the worker is lent, or the stream refused. */
    if (weft_dispatch_long_lived(r) != 0)
        return WEFT_UNAVAILABLE;
    flush_wait w = {.aw = {.r = r, .start = start}};
    return weft_await_block(&w.aw);
}

/* The record goes back first: the callback's next flush takes it again. */
static void complete(weft_await *a)
{
    flush_wait w = *H2O_STRUCT_FROM_MEMBER(flush_wait, aw, a);
    weft_await_rec_free(w.aw.r, H2O_STRUCT_FROM_MEMBER(flush_wait, aw, a));
    weft_dispatch_callback(w.aw.r, w.cb, w.arg, w.aw.rc);
}

void weft_flush_res_flush_async(weft_req *r, weft_callback cb, void *arg)
{
    flush_wait *w = weft_await_reactive(r) ? weft_await_rec_new(r, sizeof(*w)) : NULL;
    if (w == NULL) {
        if (!weft_await_reactive(r))
            weft_log_error("%s: res_flush_async() outside a reactive handler; use res_flush()", r->route->label);
        cb(r, arg, WEFT_ERROR);
        return;
    }
    *w = (flush_wait){.aw = {.r = r, .start = start, .complete = complete}, .cb = cb, .arg = arg};
    weft_await_async(&w->aw);
}
