/*
 * delay — waits `ms` milliseconds (default 200), then answers "Ping_<n>".
 *
 * The I/O-bound benchmark case: nothing to compute, only a wait that the
 * `pool` policy spends blocked in a worker thread, `coroutine` spends
 * suspended, and `reactive` spends as a timer on the event loop.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include <weft/plugin.h>

#define DELAY_MAX_MS 600000 /* ten minutes: longer is a config mistake */

/* Process-wide so that every route and thread draws distinct numbers. */
static atomic_uint_fast64_t pings;

struct delay_route {
    uint32_t ms;
};

static weft_rc delay_init(const weft_host *h, weft_init *ctx, void **state)
{
    long long ms = h->init->opt_int(ctx, "ms", 200);
    if (ms < 0 || ms > DELAY_MAX_MS) {
        h->init->error(ctx, "option ms = %lld is out of range 0..%d", ms, DELAY_MAX_MS);
        return WEFT_ERROR;
    }
    struct delay_route *rt = malloc(sizeof *rt);
    if (rt == NULL) {
        h->init->error(ctx, "out of memory");
        return WEFT_ERROR;
    }
    rt->ms = (uint32_t)ms;
    *state = rt;
    return WEFT_OK;
}

static void delay_fini(void *state)
{
    free(state);
}

/* The number is drawn when the answer is written, so it counts answers. */
static weft_rc respond(weft_req *req)
{
    const weft_host_response *res = weft_req_host(req)->response;
    /* Relaxed: only uniqueness matters, not ordering with other memory. */
    unsigned long long n = atomic_fetch_add_explicit(&pings, 1, memory_order_relaxed) + 1;
    if (res->status(req, 200) != WEFT_OK || res->header(req, "content-type", "text/plain") != WEFT_OK ||
        res->writef(req, "Ping_%llu", n) != WEFT_OK)
        return WEFT_ERROR;
    return WEFT_OK;
}

/* A cut-short wait (shutdown, withdrawn request) is not a server fault: 503
 * tells the client it may retry. */
static void answer_wait_failed(weft_req *req, int rc)
{
    const weft_host *h = weft_req_host(req);
    /* A withdrawn request is routine (client gone, deadline): no log line,
     * or a flood of resets would become a flood of warnings. */
    if (rc != WEFT_CANCELLED)
        h->log->msg(req, WEFT_LOG_WARN, "wait ended early (rc %d)", rc);
    h->response->error(req, 503, "wait interrupted");
}

static weft_rc delay_handle(weft_req *req, void *state)
{
    const struct delay_route *rt = state;
    /* No callback: the worker blocks, or the coroutine suspends. */
    weft_rc rc = weft_req_host(req)->sync->sleep(req, rt->ms, NULL, NULL);
    if (rc != WEFT_OK) {
        answer_wait_failed(req, rc);
        return WEFT_OK;
    }
    return respond(req);
}

/* Runs on the loop thread when the timer fires: the response is finished
 * here, so this is where done() goes. */
static void on_slept(weft_req *req, void *arg, int rc)
{
    (void)arg;
    const weft_host_response *res = weft_req_host(req)->response;
    if (rc != WEFT_OK) {
        answer_wait_failed(req, rc);
        res->done(req, WEFT_OK);
        return;
    }
    res->done(req, respond(req));
}

static weft_rc delay_handle_async(weft_req *req, void *state)
{
    const struct delay_route *rt = state;
    /* No per-request state to carry: the callback needs nothing but req.
     * With a callback the call returns WEFT_AGAIN, the handler's answer. */
    return weft_req_host(req)->sync->sleep(req, rt->ms, on_slept, NULL);
}

static const weft_plugin delay_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "delay",
    .version = "1.0.0",
    .description = "waits `ms` milliseconds, then answers Ping_<n>",
    .init = delay_init,
    .fini = delay_fini,
    .handle = delay_handle,
    .handle_async = delay_handle_async,
};

const weft_plugin *weft_plugin_entry(void)
{
    return &delay_plugin;
}
