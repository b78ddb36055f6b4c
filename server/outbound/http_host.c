#include <pthread.h>
#include <stdlib.h>

#include "base/log.h"
#include "dispatch/coro.h"
#include "dispatch/dispatch.h"
#include "outbound/outbound.h"
#include "request/request.h"
#include "request/route.h"

/*
 * A batch of calls made by one blocking-style handler. Calls run on the
 * request's loop whatever the context: a coroutine starts them itself and
 * suspends; a worker posts the batch to the loop and sleeps on a condition
 * variable. `left` counts the calls still running plus one for the starter,
 * so a call that finishes while the others are still being started can
 * never end the batch under the starter's feet.
 */
typedef struct batch {
    weft_msg msg;
    weft_req *r;
    size_t n, left;
    weft_fetch **fetches;
    int suspended;                    /* coroutine */
    pthread_mutex_t mu;               /* worker */
    pthread_cond_t cv;
    int done;
} batch;

static void batch_step(batch *b)
{
    if (--b->left > 0)
        return;
    if (b->r->exec == WEFT_EXEC_WORKER) {
        pthread_mutex_lock(&b->mu);
        b->done = 1;
        pthread_cond_signal(&b->cv);
        pthread_mutex_unlock(&b->mu); /* the worker may free `b` from here on */
    } else if (b->suspended) {
        b->suspended = 0;
        weft_dispatch_resume(b->r);
    }
}

static void on_batch_fetch_done(weft_fetch *f) { batch_step(f->data); }

static void start_all(batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        weft_fetch_start(b->fetches[i], b->r->loop);
    batch_step(b);
}

static void on_batch_msg(weft_msg *m) { start_all(H2O_STRUCT_FROM_MEMBER(batch, msg, m)); }

static const weft_http_request *nth(const weft_http_request *rqs, size_t i)
{
    return (const weft_http_request *)((const char *)rqs + i * rqs->struct_size);
}

/* Fills res[i] for every call; returns WEFT_OK, or an error when nothing ran. */
static int run_batch(weft_req *r, size_t n, const weft_http_request *rqs, weft_http_response **res)
{
    for (size_t i = 0; i < n; i++)
        res[i] = NULL;
    if (r->exec == WEFT_EXEC_LOOP) {
        /* Blocking the loop would deadlock: the loop is what runs the call. */
        weft_log_error("%s: http_fetch() called from a reactive handler; use http_fetch_async()", r->route->label);
        for (size_t i = 0; i < n; i++)
            res[i] = weft_http_response_error(WEFT_HTTP_BAD_REQUEST, "http_fetch() in a reactive handler");
        return WEFT_ERROR;
    }
    if (rqs == NULL || rqs->struct_size < sizeof(uint32_t) + sizeof(void *)) {
        weft_log_error("%s: http_fetch_all(): requests missing or not initialised with WEFT_HTTP_REQUEST_INIT",
                       r->route->label);
        return WEFT_ERROR;
    }
    batch b = {.r = r, .n = n, .left = n + 1};
    b.fetches = calloc(n, sizeof(*b.fetches));
    int rc = WEFT_OK;
    for (size_t i = 0; b.fetches != NULL && i < n; i++) {
        if ((b.fetches[i] = weft_fetch_new(nth(rqs, i), r->route->label)) == NULL) {
            rc = WEFT_UNAVAILABLE;
            break;
        }
        b.fetches[i]->on_done = on_batch_fetch_done;
        b.fetches[i]->data = &b;
    }
    if (b.fetches == NULL || rc != WEFT_OK) {
        for (size_t i = 0; b.fetches != NULL && i < n; i++)
            weft_fetch_free(b.fetches[i]);
        free(b.fetches);
        return WEFT_UNAVAILABLE; /* out of memory: 503 */
    }
    if (r->exec == WEFT_EXEC_WORKER) {
        pthread_mutex_init(&b.mu, NULL);
        pthread_cond_init(&b.cv, NULL);
        weft_loop_post(r->loop, &b.msg, on_batch_msg);
        pthread_mutex_lock(&b.mu);
        while (!b.done)
            pthread_cond_wait(&b.cv, &b.mu);
        pthread_mutex_unlock(&b.mu);
        pthread_cond_destroy(&b.cv);
        pthread_mutex_destroy(&b.mu);
    } else {
        /* `b` lives on the coroutine's stack, which stays put while it sleeps. */
        start_all(&b);
        if (b.left > 0) {
            b.suspended = 1;
            weft_coro_yield();
        }
    }
    for (size_t i = 0; i < n; i++) {
        weft_fetch_take(b.fetches[i], &res[i]);
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
    weft_req *r;
    weft_http_callback cb;
    void *arg;
} async_call;

static void deliver(void *ctx)
{
    weft_fetch *f = ctx;
    async_call *c = f->data;
    weft_http_response *res;
    int rc = weft_fetch_take(f, &res);
    async_call call = *c;
    free(c);
    weft_fetch_free(f);
    call.cb(call.r, call.arg, rc, res);
}

static void on_async_done(weft_fetch *f)
{
    async_call *c = f->data;
    weft_dispatch_run(c->r, deliver, f);
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
    *c = (async_call){.r = r, .cb = cb, .arg = arg};
    f->data = c;
    f->on_done = on_async_done;
    weft_fetch_start(f, r->loop);
}
