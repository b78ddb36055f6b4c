/*
 * weft/host_ws.h — the `ws` group: WebSockets a handler accepts.
 */
#ifndef WEFT_HOST_WS_H
#define WEFT_HOST_WS_H

#include <weft/types.h>

#define WEFT_HOST_WS_VERSION 1u

/** WebSocket message types (the RFC 6455 opcodes). */
#define WEFT_WS_TEXT 1
#define WEFT_WS_BINARY 2
#define WEFT_WS_CLOSE 8
#define WEFT_WS_PING 9
#define WEFT_WS_PONG 10

/**
 * A message for a reactive WebSocket, on the loop thread that owns it: type
 * WEFT_WS_TEXT, WEFT_WS_BINARY or WEFT_WS_PONG with the payload (valid
 * during the call), or WEFT_WS_CLOSE once it closed, with data NULL and
 * `len` the close code (1006: the connection just went). After the
 * WEFT_WS_CLOSE call returns the host completes the request; the handler
 * never calls done().
 */
typedef void (*weft_ws_callback)(weft_ws *ws, void *arg, int type, const void *data, size_t len);

typedef struct weft_host_ws {
    uint32_t struct_size;
    uint32_t version; /**< WEFT_HOST_WS_VERSION of the running host */
    /**
     * Accepts a WebSocket handshake (HTTP/1.1 GET with Upgrade: websocket):
     * the host answers 101 and the request stays open as long as the socket.
     * NULL when the request is not a handshake (answer 400 yourself), the
     * client is gone, or (pool) the pool lent max_long_lived workers already
     * (the client gets 503). Pool: waits until the loop upgraded, and the
     * worker is lent for the socket's life; coroutine and reactive: immediate.
     */
    weft_ws *(*accept)(weft_req *req);
    /**
     * Blocking-style receive (pool, coroutine; reactive: WEFT_ERROR, use
     * on_message). WEFT_OK with *type (WEFT_WS_TEXT, _BINARY, _PONG), *data
     * and *len (valid until the next recv); WEFT_TIMEOUT after timeout_ms
     * (< 0: none); WEFT_CANCELLED once the socket closed, with *type
     * WEFT_WS_CLOSE and *len the close code, or once the request was
     * withdrawn, with *len 0. Return from the handler then.
     */
    weft_rc (*recv)(weft_ws *ws, int timeout_ms, int *type, const void **data, size_t *len);
    /**
     * Reactive handlers (loop thread): `cb` gets every message; return
     * WEFT_AGAIN from handle_async. WEFT_OK, or WEFT_ERROR for a NULL cb.
     */
    weft_rc (*on_message)(weft_ws *ws, weft_ws_callback cb, void *arg);
    /**
     * Queues a WEFT_WS_TEXT, _BINARY or _PING message (the data is copied).
     * Any thread, for any open socket whose request is not complete.
     * WEFT_OK; WEFT_CANCELLED when the socket is closing; WEFT_UNAVAILABLE
     * when its send queue is full (a slow reader; it is then closed, 1008).
     */
    weft_rc (*send)(weft_ws *ws, int type, const void *data, size_t len);
    /** Starts the closing handshake with `code` (1000 normal, 4000-4999 yours) and a short reason. Any thread. */
    void (*close)(weft_ws *ws, int code, const char *reason);
} weft_host_ws;

#endif
