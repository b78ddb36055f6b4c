/* Fixture: answers "ver=<VER_TAG> tag=<option tag>" after an optional
 * ?sleep_ms=N (blocking style: a suspended coroutine), so a test can tell
 * which build of the plugin and which config answered, and hold a request
 * open across a swap. Built twice, with VER_TAG "A" and "B". */
#include <stdlib.h>
#include <string.h>
#include <weft/plugin.h>

#ifndef VER_TAG
#define VER_TAG "?"
#endif

static const weft_host *host;

static int init(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    *state = strdup(host->opt_string(ctx, "tag", "-"));
    return *state != NULL ? WEFT_OK : WEFT_ERROR;
}

static void fini(void *state) { free(state); }

static int handle(weft_req *req, void *state)
{
    const char *ms = host->req_query(req, "sleep_ms");
    if (ms != NULL)
        host->sleep_ms(req, (uint32_t)strtoul(ms, NULL, 10));
    host->res_printf(req, "ver=%s tag=%s\n", VER_TAG, (const char *)state);
    return WEFT_OK;
}

static const weft_plugin descriptor = {
    WEFT_PLUGIN_HEADER,
    .name = "ver",
    .version = "1.0." VER_TAG,
    .init = init,
    .fini = fini,
    .handle = handle,
};

WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &descriptor; }
