/*
 * Fixture "metered": custom metrics (plugin API 1.1). load() declares
 *     counter   plugin_metered_requests_total   every request
 *     histogram plugin_metered_work_seconds     0.002 per request
 *     gauge     plugin_metered_last_len         the last path's length
 * and, with plugins.metered.bad_name = "...", also a counter of that name
 * (which the host refuses unless it is valid). Routes answer "ok".
 */
#include <string.h>

#include <weft/plugin.h>

static const weft_host *host;

typedef struct meters {
    weft_metric *requests, *work, *last_len;
} meters;

static meters m;

static int mt_load(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    if (!WEFT_HOST_HAS(h, metric_observe)) {
        h->init_error(ctx, "this server has no plugin metrics");
        return WEFT_ERROR;
    }
    const char *bad = h->opt_string(ctx, "bad_name", NULL);
    if (bad != NULL && h->metric_counter(ctx, bad, "refused") == NULL)
        return WEFT_ERROR;
    m.requests = h->metric_counter(ctx, "metered_requests_total", "Requests the metered fixture answered.");
    m.work = h->metric_histogram(ctx, "metered_work_seconds", "Work per request.");
    m.last_len = h->metric_gauge(ctx, "metered_last_len", "Length of the last path.");
    if (m.requests == NULL || m.work == NULL || m.last_len == NULL)
        return WEFT_ERROR;
    *state = &m;
    return WEFT_OK;
}

static int answer(weft_req *req, void *state)
{
    (void)state;
    host->metric_add(m.requests, 1);
    host->metric_observe(m.work, 0.002);
    host->metric_set(m.last_len, (double)strlen(host->req_path(req)));
    return host->res_printf(req, "ok");
}

static int mt_handle(weft_req *req, void *state) { return answer(req, state); }
static int mt_handle_async(weft_req *req, void *state) { return answer(req, state); }

static const weft_plugin metered_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "metered",
    .version = "1.0.0",
    .description = "test fixture: plugin metrics",
    .handle = mt_handle,
    .handle_async = mt_handle_async,
    .load = mt_load,
};

const weft_plugin *weft_plugin_entry(void) { return &metered_plugin; }
