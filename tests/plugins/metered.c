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

typedef struct meters {
    weft_metric *requests, *work, *last_len;
} meters;

static meters m;

static weft_rc mt_load(const weft_host *h, weft_init *ctx, void **state)
{
    if (h->metric == NULL) {
        h->init->error(ctx, "this server has no plugin metrics");
        return WEFT_ERROR;
    }
    const char *bad = h->init->opt_string(ctx, "bad_name", NULL);
    if (bad != NULL && h->metric->counter(ctx, bad, "refused") == NULL)
        return WEFT_ERROR;
    m.requests = h->metric->counter(ctx, "metered_requests_total", "Requests the metered fixture answered.");
    m.work = h->metric->histogram(ctx, "metered_work_seconds", "Work per request.");
    m.last_len = h->metric->gauge(ctx, "metered_last_len", "Length of the last path.");
    if (m.requests == NULL || m.work == NULL || m.last_len == NULL)
        return WEFT_ERROR;
    *state = &m;
    return WEFT_OK;
}

static int answer(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    (void)state;
    h->metric->add(m.requests, 1);
    h->metric->observe(m.work, 0.002);
    h->metric->set(m.last_len, (double)strlen(h->request->path(req)));
    return h->response->writef(req, "ok");
}

static weft_rc mt_handle(weft_req *req, void *state) { return answer(req, state); }
static weft_rc mt_handle_async(weft_req *req, void *state) { return answer(req, state); }

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
