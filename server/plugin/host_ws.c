/* The `ws` group: ws/'s WebSockets, with a pool worker lent for a socket's life. */
#include "dispatch/dispatch.h"
#include "plugin/host.h"
#include "ws/ws.h"

/* A WebSocket under `pool` holds its worker for the socket's life: the
 * worker is lent (dispatch/workpool.h), or the upgrade refused with 503. */
weft_ws *weft_host_ws_accept(weft_req *r)
{
    if (weft_dispatch_long_lived(r) != 0)
        return NULL;
    return weft_ws_ws_accept(r);
}

static weft_rc ws_recv(weft_ws *ws, int timeout_ms, int *type, const void **data, size_t *len)
{
    return (weft_rc)weft_ws_ws_recv(ws, timeout_ms, type, data, len);
}

static weft_rc ws_on_message(weft_ws *ws, weft_ws_callback cb, void *arg)
{
    if (cb == NULL)
        return WEFT_ERROR;
    weft_ws_ws_on_message(ws, cb, arg);
    return WEFT_OK;
}

static weft_rc ws_send(weft_ws *ws, int type, const void *data, size_t len)
{
    return (weft_rc)weft_ws_ws_send(ws, type, data, len);
}

const weft_host_ws weft_host_ws_group = {
    .struct_size = sizeof(weft_host_ws),
    .version = WEFT_HOST_WS_VERSION,
    .accept = weft_host_ws_accept,
    .recv = ws_recv,
    .on_message = ws_on_message,
    .send = ws_send,
    .close = weft_ws_ws_close,
};
