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

static const weft_host *host;

/* Process-wide so that every route and thread draws distinct numbers. */
static atomic_uint_fast64_t pings;

struct delay_route {
    uint32_t ms;
};

static int delay_init(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    long long ms = host->opt_int(ctx, "ms", 200);
    if (ms < 0 || ms > DELAY_MAX_MS) {
        host->init_error(ctx, "option ms = %lld is out of range 0..%d", ms, DELAY_MAX_MS);
        return WEFT_ERROR;
    }
    struct delay_route *rt = malloc(sizeof *rt);
    if (rt == NULL) {
        host->init_error(ctx, "out of memory");
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
static int respond(weft_req *req)
{
    /* Relaxed: only uniqueness matters, not ordering with other memory. */
    unsigned long long n = atomic_fetch_add_explicit(&pings, 1, memory_order_relaxed) + 1;
    host->res_status(req, 200);
    if (host->res_header(req, "content-type", "text/plain") < 0 || host->res_printf(req, "Ping_%llu", n) < 0)
        return WEFT_ERROR;
    return WEFT_OK;
}

/* A cut-short wait (shutdown, withdrawn request) is not a server fault: 503
 * tells the client it may retry. */
static void answer_wait_failed(weft_req *req, int rc)
{
    /* A withdrawn request is routine (client gone, deadline): no log line,
     * or a flood of resets would become a flood of warnings. */
    if (rc != WEFT_CANCELLED)
        host->log(req, WEFT_LOG_WARN, "wait ended early (rc %d)", rc);
    host->res_error(req, 503, "wait interrupted");
}

static int delay_handle(weft_req *req, void *state)
{
    const struct delay_route *rt = state;
    int rc = host->sleep_ms(req, rt->ms);
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
    if (rc != WEFT_OK) {
        answer_wait_failed(req, rc);
        host->done(req, WEFT_OK);
        return;
    }
    host->done(req, respond(req));
}

static int delay_handle_async(weft_req *req, void *state)
{
    const struct delay_route *rt = state;
    /* No per-request state to carry: the callback needs nothing but req. */
    host->sleep_async(req, rt->ms, on_slept, NULL);
    return WEFT_AGAIN;
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
