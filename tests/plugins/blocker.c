/* Fixture: a handler that blocks its thread with a raw usleep(), the mistake
 * the blocked-loop detector exists to catch. Option ms (default 60). */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <weft/plugin.h>

static const weft_host *host;

static int init(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    *state = (void *)(intptr_t)host->opt_int(ctx, "ms", 60);
    return WEFT_OK;
}

static int handle(weft_req *req, void *state)
{
    usleep((useconds_t)((intptr_t)state * 1000));
    host->res_printf(req, "blocked\n");
    return WEFT_OK;
}

static const weft_plugin descriptor = {
    WEFT_PLUGIN_HEADER,
    .name = "blocker",
    .version = "1.0.0",
    .init = init,
    .handle = handle,
    .handle_async = handle,
};

WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &descriptor; }
