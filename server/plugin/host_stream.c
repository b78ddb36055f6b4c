/* The `stream` group: dispatch/flush.c's flush and request/stream.c's events. */
#include "dispatch/dispatch.h"
#include "plugin/host.h"
#include "request/stream.h"

static weft_rc stream_flush(weft_req *r, weft_callback cb, void *arg)
{
    if (cb == NULL)
        return (weft_rc)weft_flush_res_flush(r);
    weft_flush_res_flush_async(r, cb, arg);
    return WEFT_AGAIN;
}

static weft_rc stream_sse(weft_req *r, const char *id, const char *event, const char *data)
{
    return weft_stream_res_sse(r, id, event, data) == WEFT_OK ? WEFT_OK : WEFT_ERROR;
}

const weft_host_stream weft_host_stream_group = {
    .struct_size = sizeof(weft_host_stream),
    .version = WEFT_HOST_STREAM_VERSION,
    .flush = stream_flush,
    .sse = stream_sse,
};
