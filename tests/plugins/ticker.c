/*
 * Fixture "ticker": plugin timers (plugin API 1.1). load() starts a periodic
 * timer (plugins.ticker.period_ms, default 5) that counts ticks into the
 * load's state and logs "ticker #N ticked 3" on its third tick, and a
 * one-shot timer that logs "ticker #N one-shot". unload() stops the periodic
 * timer itself and logs whether the host had already stopped it:
 *     ticker unload #N stopped_by_host=1 late=L
 * where L counts callbacks that ran after an unload began (always 0).
 * Routes answer "load=N ticks=T late=L". With plugins.ticker.block_ms, the
 * first tick blocks its loop that long (for the blocked-loop detector).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <weft/plugin.h>

static const weft_host *host;
static atomic_int loads, late;

typedef struct ticker {
    int n, block_ms;
    atomic_int ticks, unloading;
    weft_plugin_timer *periodic;
} ticker;

static void on_tick(void *arg)
{
    ticker *t = arg;
    if (atomic_load(&t->unloading))
        atomic_fetch_add(&late, 1);
    int n = atomic_fetch_add(&t->ticks, 1) + 1;
    if (n == 1 && t->block_ms > 0) {
        struct timespec ts = {t->block_ms / 1000, (long)(t->block_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL); /* deliberately wrong: a raw blocking call on the loop */
    }
    if (n == 3)
        host->log(NULL, WEFT_LOG_INFO, "ticker #%d ticked 3", t->n);
}

static void on_once(void *arg) { host->log(NULL, WEFT_LOG_INFO, "ticker #%d one-shot", ((ticker *)arg)->n); }

static int tk_load(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    if (!WEFT_HOST_HAS(h, timer_stop)) {
        h->init_error(ctx, "this server has no plugin timers");
        return WEFT_ERROR;
    }
    ticker *t = calloc(1, sizeof *t);
    if (t == NULL)
        return WEFT_ERROR;
    t->n = atomic_fetch_add(&loads, 1) + 1;
    long long period = h->opt_int(ctx, "period_ms", 5);
    t->block_ms = (int)h->opt_int(ctx, "block_ms", 0);
    if ((t->periodic = h->timer_start(ctx, 1, (uint32_t)period, on_tick, t)) == NULL ||
        h->timer_start(ctx, 1, 0, on_once, t) == NULL) {
        free(t);
        return WEFT_ERROR;
    }
    *state = t;
    return WEFT_OK;
}

static void tk_unload(void *state)
{
    ticker *t = state;
    atomic_store(&t->unloading, 1);
    int rc = host->timer_stop(t->periodic);
    host->log(NULL, WEFT_LOG_INFO, "ticker unload #%d stopped_by_host=%d late=%d", t->n, rc == WEFT_CANCELLED,
              atomic_load(&late));
    free(t);
}

static int tk_init(const weft_host *h, weft_init *ctx, void **state)
{
    *state = h->init_plugin_state(ctx);
    return WEFT_OK;
}

static int answer(weft_req *req, void *state)
{
    ticker *t = state;
    return host->res_printf(req, "load=%d ticks=%d late=%d", t->n, atomic_load(&t->ticks), atomic_load(&late));
}

static int tk_handle(weft_req *req, void *state) { return answer(req, state); }
static int tk_handle_async(weft_req *req, void *state) { return answer(req, state); }

static const weft_plugin ticker_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "ticker",
    .version = "1.0.0",
    .description = "test fixture: plugin timers",
    .init = tk_init,
    .handle = tk_handle,
    .handle_async = tk_handle_async,
    .load = tk_load,
    .unload = tk_unload,
};

const weft_plugin *weft_plugin_entry(void) { return &ticker_plugin; }
