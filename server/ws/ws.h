/*
 * WebSockets for plugins. A socket is a request that stays in flight: the
 * handler accepts the upgrade and then receives (blocking style or
 * callbacks) until the socket closes, so reloads drain it like any request
 * and shutdown waits for it. Everything touching the connection runs on its
 * loop; sends and closes from other threads are posted there.
 */
#ifndef WEFT_WS_H
#define WEFT_WS_H

#include <weft/plugin.h>

weft_ws *weft_ws_ws_accept(weft_req *r);
int weft_ws_ws_recv(weft_ws *ws, int timeout_ms, int *type, const void **data, size_t *len);
void weft_ws_ws_on_message(weft_ws *ws, weft_ws_callback cb, void *arg);
int weft_ws_ws_send(weft_ws *ws, int type, const void *data, size_t len);
void weft_ws_ws_close(weft_ws *ws, int code, const char *reason);

/** Gives every loop its list of open sockets (control thread, before the loops start). */
void weft_ws_attach(void);

#endif
