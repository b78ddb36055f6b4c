/*
 * Fixture: init() explains why it cannot run and fails. It has only the
 * blocking-style entry point, so a route with dispatch = "reactive" to it is
 * refused before init is ever called.
 */
#include <weft/plugin.h>

static int init_fails_init(const weft_host *host, weft_init *ctx, void **state)
{
    *state = NULL;
    host->init_error(ctx, "database password missing");
    return WEFT_ERROR;
}

static void init_fails_fini(void *state)
{
    (void)state; /* never initialised, so never called */
}

static int init_fails_handle(weft_req *req, void *state)
{
    (void)req;
    (void)state;
    return WEFT_ERROR;
}

static const weft_plugin init_fails_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "init_fails",
    .version = "0.0.1",
    .description = "test fixture: init always fails; no handle_async",
    .init = init_fails_init,
    .fini = init_fails_fini,
    .handle = init_fails_handle,
};

const weft_plugin *weft_plugin_entry(void)
{
    return &init_fails_plugin;
}
