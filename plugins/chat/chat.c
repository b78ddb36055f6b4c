/*
 * chat — a WebSocket room per route at /{policy}/chat: every text or binary
 * message from one client goes to every client of the room (the sender
 * too), whichever loop or worker serves each of them.
 *
 * Two commands, as text messages: "/who" answers "who N" (the room's size)
 * to the sender only; "/close CODE" makes the server close that socket with
 * CODE (e.g. 4001).
 *
 * The WebSocket example: under `pool` each client holds a worker while it
 * waits in ws->recv; under `coroutine` it is a suspended coroutine; under
 * `reactive` messages arrive in a callback.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/plugin.h>

typedef struct room {
    const weft_host_ws *ws; /* message callbacks get the room, not a request */
    pthread_mutex_t mu; /* held only around sends, which never block */
    weft_ws **members;
    size_t n, cap;
} room;

static weft_rc init(const weft_host *h, weft_init *ctx, void **state)
{
    if (h->ws == NULL) {
        h->init->error(ctx, "this weft has no WebSockets");
        return WEFT_ERROR;
    }
    room *rm = calloc(1, sizeof(*rm));
    if (rm == NULL)
        return WEFT_ERROR;
    rm->ws = h->ws;
    pthread_mutex_init(&rm->mu, NULL);
    *state = rm;
    return WEFT_OK;
}

static void fini(void *state)
{
    room *rm = state;
    pthread_mutex_destroy(&rm->mu);
    free(rm->members);
    free(rm);
}

static int join(room *rm, weft_ws *ws)
{
    pthread_mutex_lock(&rm->mu);
    if (rm->n == rm->cap) {
        size_t cap = rm->cap ? 2 * rm->cap : 64;
        weft_ws **m = realloc(rm->members, cap * sizeof(*m));
        if (m == NULL) {
            pthread_mutex_unlock(&rm->mu);
            return -1;
        }
        rm->members = m;
        rm->cap = cap;
    }
    rm->members[rm->n++] = ws;
    pthread_mutex_unlock(&rm->mu);
    return 0;
}

/* A socket leaves before its request completes: after that it is invalid. */
static void leave(room *rm, weft_ws *ws)
{
    pthread_mutex_lock(&rm->mu);
    for (size_t i = 0; i < rm->n; i++)
        if (rm->members[i] == ws) {
            rm->members[i] = rm->members[--rm->n];
            break;
        }
    pthread_mutex_unlock(&rm->mu);
}

static void on_message(room *rm, weft_ws *ws, int type, const char *data, size_t len)
{
    if (type == WEFT_WS_TEXT && len >= 4 && memcmp(data, "/who", 4) == 0) {
        char buf[32];
        pthread_mutex_lock(&rm->mu);
        int n = snprintf(buf, sizeof(buf), "who %zu", rm->n);
        pthread_mutex_unlock(&rm->mu);
        rm->ws->send(ws, WEFT_WS_TEXT, buf, (size_t)n);
        return;
    }
    if (type == WEFT_WS_TEXT && len > 7 && len < 16 && memcmp(data, "/close ", 7) == 0) {
        char code[16]; /* a payload is not NUL-terminated */
        memcpy(code, data + 7, len - 7);
        code[len - 7] = '\0';
        rm->ws->close(ws, atoi(code), "closed on request");
        return;
    }
    if (type != WEFT_WS_TEXT && type != WEFT_WS_BINARY)
        return;
    pthread_mutex_lock(&rm->mu);
    for (size_t i = 0; i < rm->n; i++)
        rm->ws->send(rm->members[i], type, data, len); /* a slow reader is closed, the rest go on */
    pthread_mutex_unlock(&rm->mu);
}

static weft_ws *accept_or_400(weft_req *req, room *rm)
{
    const weft_host *h = weft_req_host(req);
    weft_ws *ws = h->ws->accept(req);
    if (ws == NULL) {
        h->response->error(req, 400, "expected a WebSocket handshake (HTTP/1.1 GET with Upgrade: websocket)");
        return NULL;
    }
    if (join(rm, ws) != 0) {
        h->ws->close(ws, 1011, "out of memory");
        return NULL;
    }
    return ws;
}

static weft_rc handle(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    room *rm = state;
    weft_ws *ws = accept_or_400(req, rm);
    if (ws == NULL)
        return WEFT_OK;
    int type;
    const void *data;
    size_t len;
    while (h->ws->recv(ws, -1, &type, &data, &len) == WEFT_OK)
        on_message(rm, ws, type, data, len);
    leave(rm, ws);
    return WEFT_OK;
}

static void on_async_message(weft_ws *ws, void *arg, int type, const void *data, size_t len)
{
    room *rm = arg;
    if (type == WEFT_WS_CLOSE)
        leave(rm, ws);
    else
        on_message(rm, ws, type, data, len);
}

static weft_rc handle_async(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    room *rm = state;
    weft_ws *ws = accept_or_400(req, rm);
    if (ws == NULL)
        return WEFT_OK;
    return h->ws->on_message(ws, on_async_message, rm) == WEFT_OK ? WEFT_AGAIN : WEFT_ERROR;
}

static const weft_plugin descriptor = {
    WEFT_PLUGIN_HEADER,
    .name = "chat",
    .version = "1.0.0",
    .description = "a WebSocket echo/broadcast room",
    .init = init,
    .fini = fini,
    .handle = handle,
    .handle_async = handle_async,
};

WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &descriptor; }
