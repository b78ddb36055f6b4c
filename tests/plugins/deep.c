/* Fixture: recursion deep enough to overflow a small coroutine stack, to
 * check that the guard page turns into a report naming the route. */
#include <stdlib.h>
#include <string.h>
#include <weft/plugin.h>

static const weft_host *host;

static int init(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    *state = NULL;
    return WEFT_OK;
}

static int recurse(volatile char *prev, int depth)
{
    volatile char frame[1024];
    memset((char *)frame, depth & 0xff, sizeof(frame));
    frame[0] = prev != NULL ? prev[0] : 0;
    if (depth == 0)
        return frame[1];
    return recurse(frame, depth - 1) + frame[2];
}

static int handle(weft_req *req, void *state)
{
    const char *d = host->req_query(req, "depth");
    host->res_printf(req, "%d\n", recurse(NULL, d != NULL ? (int)strtol(d, NULL, 10) : 10));
    return WEFT_OK;
}

static const weft_plugin descriptor = {
    WEFT_PLUGIN_HEADER,
    .name = "deep",
    .version = "1.0.0",
    .init = init,
    .handle = handle,
};

WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &descriptor; }
