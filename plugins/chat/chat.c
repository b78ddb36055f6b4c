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
 *
 * Route options: `fanout = "postgres"` makes the room span every weft
 * process on the same database: a message is sent with db->notify on the
 * room's channel (`channel`, default derived from the route's path, the
 * same on every replica), and each member listens on it (db->listen), so a
 * member on one replica receives what was posted on another, in the
 * sender's order; "/who" then counts this process's members only. A
 * payload is "t" + the text, or "b" + the binary message in base64; what
 * does not fit PostgreSQL's 7999 bytes is refused to its sender with a
 * text message "error: ...". The default, `fanout = "local"`, broadcasts
 * in this process.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/plugin.h>

/* NOTIFY's payload limit, and what is left of it for a message. */
#define MAX_PAYLOAD 7999
#define MAX_TEXT (MAX_PAYLOAD - 1)
#define MAX_BINARY (MAX_TEXT / 4 * 3)

typedef struct room {
    const weft_host_ws *ws; /* message callbacks get the room, not a request */
    pthread_mutex_t mu; /* held only around sends, which never block */
    weft_ws **members;
    size_t n, cap;
    int fanout;       /* through PostgreSQL's NOTIFY */
    char channel[64]; /* its channel */
} room;

/* A member of a fanned-out room: what its notifications need. */
typedef struct member {
    const weft_host *h;
    weft_req *req;
    weft_ws *ws;
    room *rm;
    int reactive;    /* notify with a callback */
    int listening;   /* 1 once it listens (0 on its way, reactive), -1 when it could not */
    int who_pending; /* reactive: "/who" is answered once it listens */
} member;

/* "/pool/chat" -> "chat_pool_chat": the same on every replica of the route. */
static void channel_of(const char *path, char *out, size_t size)
{
    size_t n = (size_t)snprintf(out, size, "chat");
    for (const char *c = path; *c != '\0' && n + 1 < size; c++) {
        int alnum = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9');
        out[n++] = alnum ? *c : '_';
    }
    out[n] = '\0';
}

static int read_fanout(const weft_host *h, weft_init *ctx, room *rm)
{
    const char *fanout = h->init->opt_string(ctx, "fanout", "local");
    if (strcmp(fanout, "local") != 0 && strcmp(fanout, "postgres") != 0) {
        h->init->error(ctx, "fanout: '%s' is not one of local, postgres", fanout);
        return -1;
    }
    rm->fanout = strcmp(fanout, "postgres") == 0;
    if (!rm->fanout)
        return 0;
    if (!WEFT_GROUP_AT_LEAST(h->db, 2)) {
        h->init->error(ctx, "fanout = \"postgres\" needs the database group's LISTEN/NOTIFY (version 2)");
        return -1;
    }
    char dflt[64];
    channel_of(h->init->route(ctx), dflt, sizeof(dflt));
    snprintf(rm->channel, sizeof(rm->channel), "%s", h->init->opt_string(ctx, "channel", dflt));
    if (!h->db->channel_ok(rm->channel)) {
        h->init->error(ctx, "channel: '%s' is not a channel name (1 to 63 letters, digits and _, not first a digit)",
                       rm->channel);
        return -1;
    }
    return 0;
}

static weft_rc init(const weft_host *h, weft_init *ctx, void **state)
{
    if (h->ws == NULL) {
        h->init->error(ctx, "this weft has no WebSockets");
        return WEFT_ERROR;
    }
    room *rm = calloc(1, sizeof(*rm));
    if (rm == NULL)
        return WEFT_ERROR;
    if (read_fanout(h, ctx, rm) != 0) {
        free(rm);
        return WEFT_ERROR;
    }
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

static void send_who(room *rm, weft_ws *ws)
{
    char buf[32];
    pthread_mutex_lock(&rm->mu);
    int n = snprintf(buf, sizeof(buf), "who %zu", rm->n);
    pthread_mutex_unlock(&rm->mu);
    rm->ws->send(ws, WEFT_WS_TEXT, buf, (size_t)n);
}

/* ---- fan-out through PostgreSQL ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static size_t b64_encode(const unsigned char *in, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < len ? (unsigned)in[i + 1] << 8 : 0) |
                     (i + 2 < len ? in[i + 2] : 0);
        out[o++] = b64[v >> 18 & 63];
        out[o++] = b64[v >> 12 & 63];
        out[o++] = i + 1 < len ? b64[v >> 6 & 63] : '=';
        out[o++] = i + 2 < len ? b64[v & 63] : '=';
    }
    out[o] = '\0';
    return o;
}

static size_t b64_decode(const char *in, size_t len, unsigned char *out)
{
    size_t o = 0;
    unsigned v = 0;
    int bits = 0;
    for (size_t i = 0; i < len && in[i] != '='; i++) {
        const char *at = strchr(b64, in[i]);
        if (at == NULL || in[i] == '\0')
            continue;
        v = v << 6 | (unsigned)(at - b64);
        if ((bits += 6) >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(v >> bits);
        }
    }
    return o;
}

/* A notification of the room's channel, on this member's loop: to its socket. */
static void on_note(void *arg, const char *channel, const char *payload, size_t len)
{
    member *m = arg;
    (void)channel;
    if (len == 0)
        return;
    if (payload[0] == 't') {
        m->rm->ws->send(m->ws, WEFT_WS_TEXT, payload + 1, len - 1);
    } else if (payload[0] == 'b') {
        unsigned char bin[MAX_BINARY + 3];
        size_t n = b64_decode(payload + 1, len - 1 < MAX_TEXT ? len - 1 : MAX_TEXT, bin);
        m->rm->ws->send(m->ws, WEFT_WS_BINARY, bin, n);
    }
}

/* The payload for a message into `out` (MAX_PAYLOAD + 1 bytes); 0 when it cannot fan out. */
static size_t encode(int type, const char *data, size_t len, char *out)
{
    if (type == WEFT_WS_TEXT && len <= MAX_TEXT && memchr(data, '\0', len) == NULL) {
        out[0] = 't';
        memcpy(out + 1, data, len);
        out[len + 1] = '\0';
        return len + 1;
    }
    if (len > MAX_BINARY)
        return 0;
    out[0] = 'b';
    return 1 + b64_encode((const unsigned char *)data, len, out + 1);
}

static void on_posted(weft_req *req, void *arg, int rc)
{
    (void)req, (void)arg, (void)rc; /* the host logs what it refused; a database down loses the message */
}

/* Sends a message to the whole room, wherever its members are. */
static void post(member *m, int type, const char *data, size_t len)
{
    char *payload = malloc(MAX_PAYLOAD + 1);
    if (payload == NULL || encode(type, data, len, payload) == 0) {
        static const char too_long[] = "error: message too long for fanout = \"postgres\" (7998 bytes of text, 5997 "
                                       "of binary)";
        m->rm->ws->send(m->ws, WEFT_WS_TEXT, too_long, sizeof(too_long) - 1);
        free(payload);
        return;
    }
    if (m->h->request->cancelled(m->req) == 0 && m->listening >= 0)
        m->h->db->notify(m->req, m->rm->channel, payload, m->reactive ? on_posted : NULL, NULL);
    free(payload);
}

static void on_message(room *rm, member *m, weft_ws *ws, int type, const char *data, size_t len)
{
    if (type == WEFT_WS_TEXT && len >= 4 && memcmp(data, "/who", 4) == 0) {
        if (m != NULL && m->listening == 0)
            m->who_pending = 1; /* answered once it listens: then it hears the room */
        else
            send_who(rm, ws);
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
    if (m != NULL) {
        post(m, type, data, len);
        return;
    }
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
    /* On this stack: unlistened before the handler returns. Listening
     * before the first message is read, so "/who" answered means it hears. */
    member m = {.h = h, .req = req, .ws = ws, .rm = rm, .listening = 1};
    if (rm->fanout && h->db->listen(req, rm->channel, on_note, &m, NULL, NULL) != WEFT_OK) {
        h->ws->close(ws, 1011, "cannot listen to the room");
        m.listening = -1;
    }
    int type;
    const void *data;
    size_t len;
    while (m.listening >= 0 && h->ws->recv(ws, -1, &type, &data, &len) == WEFT_OK)
        on_message(rm, rm->fanout ? &m : NULL, ws, type, data, len);
    if (rm->fanout && m.listening >= 0)
        h->db->unlisten(req, rm->channel, on_note, &m);
    leave(rm, ws);
    return WEFT_OK;
}

static void on_async_message(weft_ws *ws, void *arg, int type, const void *data, size_t len)
{
    member *m = arg;
    room *rm = m->rm;
    if (type != WEFT_WS_CLOSE) {
        on_message(rm, rm->fanout ? m : NULL, ws, type, data, len);
        return;
    }
    /* Unlisten first: a listen still on its way is called back (cancelled) now, while m is there. */
    if (rm->fanout && m->listening >= 0)
        m->h->db->unlisten(m->req, rm->channel, on_note, m);
    leave(rm, ws);
    free(m);
}

static void on_listened(weft_req *req, void *arg, int rc)
{
    (void)req;
    member *m = arg;
    if (rc != WEFT_OK) {
        if (rc != WEFT_CANCELLED)
            m->rm->ws->close(m->ws, 1011, "cannot listen to the room");
        m->listening = -1;
        return;
    }
    m->listening = 1;
    if (m->who_pending)
        send_who(m->rm, m->ws);
    m->who_pending = 0;
}

static weft_rc handle_async(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    room *rm = state;
    member *m = calloc(1, sizeof(*m));
    weft_ws *ws = m != NULL ? accept_or_400(req, rm) : NULL;
    if (ws == NULL) {
        free(m);
        return m != NULL ? WEFT_OK : h->response->error(req, 503, "out of memory");
    }
    *m = (member){.h = h, .req = req, .ws = ws, .rm = rm, .reactive = 1, .listening = rm->fanout ? 0 : 1};
    if (h->ws->on_message(ws, on_async_message, m) != WEFT_OK) {
        leave(rm, ws);
        free(m);
        return WEFT_ERROR;
    }
    if (rm->fanout)
        h->db->listen(req, rm->channel, on_note, m, on_listened, m);
    return WEFT_AGAIN;
}

static const weft_plugin descriptor = {
    WEFT_PLUGIN_HEADER,
    .name = "chat",
    .version = "1.1.0",
    .description = "a WebSocket broadcast room, in one process or across replicas (fanout = \"postgres\")",
    .init = init,
    .fini = fini,
    .handle = handle,
    .handle_async = handle_async,
};

WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &descriptor; }
