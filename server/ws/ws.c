#include "ws/ws.h"
#include "ws/ws_socket.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/h2o_glue.h"

#include "base/log.h"
#include "core/loop.h"
#include "dispatch/await.h"
#include "dispatch/coro.h"
#include "dispatch/dispatch.h"
#include "request/cancel.h"
#include "request/request.h"
#include "request/route.h"

/* After our close frame, how long the peer has to answer with its own. */
#define CLOSE_GRACE_MS 2000
/* What one queued frame costs besides its payload (wslay's item and ours):
 * a flood of tiny frames (pongs) is counted too. */
#define FRAME_OVERHEAD 64

/* Bytes queued to every socket of the process (any thread reads, loop
 * threads write): one budget, websocket.max_queued_total, shared by all, so
 * a broadcast to many members that never read cannot multiply memory. */
static atomic_size_t queued_total;

typedef struct weft_wsloop {
    h2o_linklist_t open; /* weft_ws.link */
} weft_wsloop;

WEFT_LOOP_SLOT(ws_slot) /* the loop's weft_wsloop */

static weft_wsloop *ws_of(const weft_loop *L) { return weft_loop_get(L, ws_slot); }

static void unref(weft_ws *ws)
{
    if (atomic_fetch_sub(&ws->refs, 1) != 1)
        return;
    while (ws->head != NULL) {
        inmsg *m = ws->head;
        ws->head = m->next;
        free(m);
    }
    free(ws->last);
    pthread_cond_destroy(&ws->cv);
    pthread_mutex_destroy(&ws->mu);
    free(ws);
}

static void stat_open(weft_loop *L, int delta)
{
    atomic_store_explicit(&L->stats->ws_open,
                          atomic_load_explicit(&L->stats->ws_open, memory_order_relaxed) + delta, memory_order_relaxed);
}

/* ---- writing: only the write half, so a send never runs a receive
 * callback (and with it plugin code) under the sender's feet ---- */

static void on_timer(weft_timer *t);

/* What the socket has queued: wslay's queue (payloads and frames) and h2o's
 * write buffers. */
static size_t backlog(const h2o_websocket_conn_t *conn)
{
    size_t n = wslay_event_get_queued_msg_length(conn->ws_ctx) +
               FRAME_OVERHEAD * wslay_event_get_queued_msg_count(conn->ws_ctx);
    for (size_t i = 0; i < conn->_write_buf.cnt; i++)
        n += conn->_write_buf.bufs[i].len;
    return n;
}

static void account(weft_ws *ws, size_t now)
{
    if (now >= ws->accounted)
        atomic_fetch_add_explicit(&queued_total, now - ws->accounted, memory_order_relaxed);
    else
        atomic_fetch_sub_explicit(&queued_total, ws->accounted - now, memory_order_relaxed);
    ws->accounted = now;
}

/* What h2o_websocket_proceed does once a write is done, without its read
 * half: the frames wslay handed to h2o's send callback sit in the
 * connection's write buffers until someone writes them, and h2o writes them
 * only from its own loop (lib/websocket.c). */
static void on_written(h2o_socket_t *sock, const char *err)
{
    h2o_websocket_conn_t *conn = sock->data;
    for (size_t i = 0; i < conn->_write_buf.cnt; i++)
        free(conn->_write_buf.bufs[i].base);
    conn->_write_buf.cnt = 0;
    account(conn->data, backlog(conn));
    if (err != NULL) {
        conn->cb(conn, NULL); /* as h2o reports a failed write: the socket is gone */
        return;
    }
    h2o_websocket_proceed(conn); /* from the loop, on a clean stack: reads may run handlers here */
}

static void write_out(h2o_websocket_conn_t *conn)
{
    if (!h2o_socket_is_writing(conn->sock) && conn->_write_buf.cnt > 0)
        h2o_socket_write(conn->sock, conn->_write_buf.bufs, conn->_write_buf.cnt, on_written);
}

static void flush(weft_ws *ws)
{
    if (ws->in_recv || ws->conn == NULL || ws->conn->sock == NULL)
        return; /* h2o's own loop sends once the receive or the 101 is done */
    if (h2o_socket_is_writing(ws->conn->sock) || !wslay_event_want_write(ws->conn->ws_ctx))
        return; /* the write in flight sends the rest when it completes (on_written) */
    if (wslay_event_send(ws->conn->ws_ctx) == 0) {
        write_out(ws->conn);
    } else {
        /* the socket failed: h2o reports it on its next turn; make sure it ends */
        weft_timers_cancel(ws->loop->timers, &ws->timer);
        ws->closing = 1;
        weft_timers_add(ws->loop->timers, &ws->timer, 0, on_timer);
    }
}

static void start_close(weft_ws *ws, int code, const char *reason)
{
    if (ws->conn == NULL || ws->closing)
        return;
    ws->closing = 1;
    atomic_store(&ws->gone, 1);
    wslay_event_queue_close(ws->conn->ws_ctx, (uint16_t)code, (const uint8_t *)reason, strlen(reason));
    flush(ws);
    weft_timers_cancel(ws->loop->timers, &ws->timer);
    weft_timers_add(ws->loop->timers, &ws->timer, CLOSE_GRACE_MS, on_timer);
}

/* A peer that does not read while the process is short of send budget, or
 * whose own queue is full, is closed: it holds memory for nobody. */
static int over_budget(weft_ws *ws, size_t len)
{
    size_t mine = backlog(ws->conn), total = atomic_load_explicit(&queued_total, memory_order_relaxed);
    return mine + len + FRAME_OVERHEAD > ws->send_limit || (mine > 0 && total + len > ws->queued_limit);
}

static int send_now(weft_ws *ws, int type, const void *data, size_t len)
{
    if (ws->conn == NULL || ws->closing)
        return WEFT_CANCELLED;
    if (over_budget(ws, len)) {
        static _Atomic uint64_t last;
        uint64_t now = weft_now_ns(), prev = atomic_load(&last);
        if (now - prev > 10000000000ull && atomic_compare_exchange_strong(&last, &prev, now))
            weft_log_warn("websocket: a peer does not read and its send queue is full (or every socket's together, "
                          "websocket.max_queued_total); closing it (1008); more are counted, logged at most every 10 s");
        weft_stat_add(&ws->loop->stats->ws_slow_closed, 1);
        start_close(ws, 1008, "send queue full");
        return WEFT_UNAVAILABLE;
    }
    /* Nothing queued here yet but the process is at its budget: this message
     * is not sent to this peer (it keeps up; the next may go through). */
    if (atomic_load_explicit(&queued_total, memory_order_relaxed) + len > ws->queued_limit)
        return WEFT_UNAVAILABLE;
    struct wslay_event_msg m = {.opcode = (uint8_t)type, .msg = data, .msg_length = len};
    if (wslay_event_queue_msg(ws->conn->ws_ctx, &m) != 0)
        return WEFT_UNAVAILABLE;
    weft_stat_add(&ws->loop->stats->ws_msgs[1], 1);
    flush(ws);
    if (ws->conn != NULL)
        account(ws, backlog(ws->conn));
    return WEFT_OK;
}

/* ---- the socket closing ---- */

typedef struct delivery {
    weft_ws *ws;
    int type;
    const void *data;
    size_t len;
} delivery;

static void run_callback(void *ctx)
{
    delivery *d = ctx;
    d->ws->cb(d->ws, d->ws->arg, d->type, d->data, d->len);
}

/* h2o reports the connection gone (after the closing handshake, an error,
 * or our grace timer): free it, tell whoever waits, drop the socket's ref. */
static void closed(weft_ws *ws)
{
    weft_loop *L = ws->loop;
    weft_timers_cancel(L->timers, &ws->timer);
    h2o_linklist_unlink(&ws->link);
    stat_open(L, -1);
    atomic_store(&ws->gone, 1);
    account(ws, 0);
    h2o_websocket_close(ws->conn);
    ws->conn = NULL;
    pthread_mutex_lock(&ws->mu);
    ws->closed = 1;
    if (ws->close_code == 0)
        ws->close_code = 1006;
    pthread_cond_signal(&ws->cv);
    pthread_mutex_unlock(&ws->mu);
    weft_req *r = ws->r;
    if (r != NULL && ws->cb != NULL) {
        delivery d = {ws, WEFT_WS_CLOSE, NULL, (size_t)ws->close_code};
        weft_dispatch_run(r, run_callback, &d);
        if (!r->finished)
            weft_dispatch_done(r, WEFT_OK); /* the request ends with its socket */
    } else if (r != NULL && ws->waiting != NULL) {
        weft__ws_wake_waiter(ws);
    }
    unref(ws);
}

static void on_timer(weft_timer *t)
{
    weft_ws *ws = H2O_STRUCT_FROM_MEMBER(weft_ws, timer, t);
    if (ws->conn == NULL)
        return;
    if (ws->conn->sock == NULL) {
        /* the 101 is still being written: h2o owns the connection until then */
        weft_timers_add(ws->loop->timers, &ws->timer, CLOSE_GRACE_MS, on_timer);
        return;
    }
    if (!ws->closing)
        start_close(ws, 1001, "idle timeout");
    else
        closed(ws); /* the peer never answered our close */
}

/* ---- receiving (the blocking-style receive is ws_recv.c's) ---- */

static void deliver(weft_ws *ws, int type, const void *data, size_t len)
{
    weft_stat_add(&ws->loop->stats->ws_msgs[0], 1);
    if (ws->r == NULL)
        return; /* the handler is gone; the socket is closing */
    if (ws->cb != NULL) {
        delivery d = {ws, type, data, len};
        weft_dispatch_run(ws->r, run_callback, &d);
        return;
    }
    if (ws->inbox_bytes + len > ws->inbox_limit) {
        start_close(ws, 1008, "receive queue full");
        return;
    }
    inmsg *m = malloc(sizeof(*m) + len + 1);
    if (m == NULL) {
        start_close(ws, 1011, "out of memory");
        return;
    }
    *m = (inmsg){.type = type, .len = len};
    memcpy(m->data, data, len);
    m->data[len] = '\0';
    pthread_mutex_lock(&ws->mu);
    if (ws->tail != NULL)
        ws->tail->next = m;
    else
        ws->head = m;
    ws->tail = m;
    ws->inbox_bytes += len;
    pthread_cond_signal(&ws->cv);
    pthread_mutex_unlock(&ws->mu);
    if (ws->waiting != NULL && !ws->woken)
        weft__ws_wake_waiter(ws);
}

static void on_ws_msg(h2o_websocket_conn_t *conn, const struct wslay_event_on_msg_recv_arg *arg)
{
    weft_ws *ws = conn->data;
    if (arg == NULL) {
        closed(ws);
        return;
    }
    if (!ws->closing) {
        weft_timers_cancel(ws->loop->timers, &ws->timer);
        weft_timers_add(ws->loop->timers, &ws->timer, ws->idle_ms, on_timer);
    }
    ws->in_recv++;
    switch (arg->opcode) {
    case WSLAY_CONNECTION_CLOSE:
        /* wslay answers it; the connection ends once that is written */
        ws->close_code = arg->status_code != 0 ? arg->status_code : 1005;
        ws->closing = 1;
        atomic_store(&ws->gone, 1);
        break;
    case WSLAY_TEXT_FRAME:
    case WSLAY_BINARY_FRAME:
    case WSLAY_PONG:
        deliver(ws, arg->opcode, arg->msg, arg->msg_length);
        break;
    default: { /* a ping: wslay has queued the pong, which counts like any frame */
        size_t queued = backlog(conn);
        account(ws, queued);
        if (!ws->closing && queued > ws->send_limit) {
            /* Pings from a peer that never reads its pongs: they would pile
             * up without end while weft keeps reading. Our close frame
             * cannot reach it either: close at once (from the timer). */
            weft_log_warn("websocket: a peer sends pings and does not read the pongs; closing it (1008)");
            weft_stat_add(&ws->loop->stats->ws_slow_closed, 1);
            start_close(ws, 1008, "ping flood");
            weft_timers_cancel(ws->loop->timers, &ws->timer);
            weft_timers_add(ws->loop->timers, &ws->timer, 0, on_timer);
        }
        break;
    }
    }
    ws->in_recv--;
}

/* ---- accepting ---- */

static void do_accept(weft_ws *ws)
{
    weft_req *r = ws->r;
    const char *key = NULL;
    if (r->link == NULL)
        return; /* the client is gone */
    h2o_req_t *req = r->link->req;
    if (req->version >= 0x200 || h2o_is_websocket_handshake(req, &key) != 0 || key == NULL)
        return;
    if (r->link->detach != NULL)
        r->link->detach(r->link); /* h2o's WebSocket code reads the socket from now on */
    ws->conn = h2o_upgrade_to_websocket(req, key, ws, on_ws_msg);
    wslay_event_config_set_max_recv_msg_length(ws->conn->ws_ctx, ws->max_message);
    /* h2o answers the handshake itself: nothing for the responder to send */
    r->link->wr = NULL;
    r->link = NULL;
    r->hreq = NULL;
    r->status = 101;
    ws->accepted = 1;
    atomic_fetch_add(&ws->refs, 1); /* the socket's */
    h2o_linklist_insert(&ws_of(ws->loop)->open, &ws->link);
    stat_open(ws->loop, 1);
    weft_stat_add(&ws->loop->stats->ws_accepted, 1);
    weft_timers_add(ws->loop->timers, &ws->timer, ws->idle_ms, on_timer);
}

static void on_req_finish(weft_req *r, void *data)
{
    (void)r;
    weft_ws *ws = data;
    ws->r = NULL;
    free(ws->last);
    ws->last = NULL;
    start_close(ws, 1000, ""); /* a handler that returned without closing */
    unref(ws);
}

static void on_accept_msg(weft_msg *m)
{
    weft_ws *ws = H2O_STRUCT_FROM_MEMBER(weft_ws, accept_msg, m);
    do_accept(ws);
    pthread_mutex_lock(&ws->mu);
    ws->accept_done = 1;
    pthread_cond_signal(&ws->cv);
    pthread_mutex_unlock(&ws->mu);
}

weft_ws *weft_ws_ws_accept(weft_req *r)
{
    weft_ws *ws = calloc(1, sizeof(*ws));
    if (ws == NULL)
        return NULL;
    const weft_ws_cfg *c = r->route->ws_cfg;
    ws->r = r;
    ws->loop = r->loop;
    ws->max_message = c != NULL ? c->max_message : 1024 * 1024;
    ws->idle_ms = (uint64_t)(c != NULL ? c->idle_timeout_s : 300) * 1000u;
    /* per-connection memory: queued out and waiting in, a few messages each */
    ws->send_limit = 4 * ws->max_message + 65536;
    ws->inbox_limit = 4 * ws->max_message + 65536;
    ws->queued_limit = c != NULL ? c->max_queued_total : 64 * 1024 * 1024;
    atomic_init(&ws->refs, 1); /* the request's */
    pthread_mutex_init(&ws->mu, NULL);
    weft_cond_init_monotonic(&ws->cv);
    if (weft_await_in_place(r)) { /* a pool worker: the loop accepts, the worker waits for it */
        weft_loop_post(r->loop, &ws->accept_msg, on_accept_msg);
        pthread_mutex_lock(&ws->mu);
        while (!ws->accept_done)
            pthread_cond_wait(&ws->cv, &ws->mu);
        pthread_mutex_unlock(&ws->mu);
    } else {
        do_accept(ws);
    }
    if (!ws->accepted) {
        unref(ws);
        return NULL;
    }
    /* set by the worker too: the loop reads it only when the request
     * completes, which the worker's return happens-before */
    r->on_finish = on_req_finish;
    r->on_finish_data = ws;
    return ws;
}

void weft_ws_ws_on_message(weft_ws *ws, weft_ws_callback cb, void *arg)
{
    ws->cb = cb;
    ws->arg = arg;
}

/* ---- sending and closing from any thread ---- */

typedef struct op {
    weft_msg msg;
    weft_ws *ws;
    int type; /* 0: close with `code` and the reason in data */
    int code;
    size_t len;
    char data[];
} op;

static void on_op(weft_msg *m)
{
    op *o = H2O_STRUCT_FROM_MEMBER(op, msg, m);
    if (o->type == 0)
        start_close(o->ws, o->code, o->data);
    else
        send_now(o->ws, o->type, o->data, o->len);
    unref(o->ws);
    free(o);
}

static int post_op(weft_ws *ws, int type, int code, const void *data, size_t len)
{
    op *o = malloc(sizeof(*o) + len + 1);
    if (o == NULL)
        return WEFT_UNAVAILABLE;
    *o = (op){.ws = ws, .type = type, .code = code, .len = len};
    memcpy(o->data, data, len);
    o->data[len] = '\0';
    atomic_fetch_add(&ws->refs, 1);
    weft_loop_post(ws->loop, &o->msg, on_op);
    return WEFT_OK;
}

int weft_ws_ws_send(weft_ws *ws, int type, const void *data, size_t len)
{
    if ((type != WEFT_WS_TEXT && type != WEFT_WS_BINARY && type != WEFT_WS_PING) || (data == NULL && len > 0) ||
        (type == WEFT_WS_PING && len > 125)) {
        weft_log_error("websocket: ws_send(type %d, %zu bytes): only TEXT, BINARY or PING (at most 125 bytes)", type,
                       len);
        return WEFT_ERROR;
    }
    if (atomic_load(&ws->gone))
        return WEFT_CANCELLED;
    if (weft_loop_current == ws->loop)
        return send_now(ws, type, data, len);
    return post_op(ws, type, 0, data, len);
}

void weft_ws_ws_close(weft_ws *ws, int code, const char *reason)
{
    /* codes a peer may not receive (RFC 6455 7.4): reserved, or for local use */
    if (code < 1000 || code > 4999 || (code >= 1004 && code <= 1006) || code == 1015 || (code >= 1016 && code < 3000)) {
        weft_log_error("websocket: ws_close(%d): not a code to send; closing with 1000", code);
        code = 1000;
    }
    reason = reason != NULL ? reason : "";
    size_t rl = strnlen(reason, 123); /* a close frame's payload is at most 125 bytes */
    if (weft_loop_current == ws->loop) {
        char buf[124];
        memcpy(buf, reason, rl);
        buf[rl] = '\0';
        start_close(ws, code, buf);
        return;
    }
    post_op(ws, 0, code, reason, rl);
}

/* ---- per loop ---- */

static int ws_setup(weft_loop *L)
{
    weft_wsloop *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return -1;
    h2o_linklist_init_anchor(&w->open);
    weft_loop_set(L, ws_slot, w);
    return 0;
}

/* SIGTERM: every socket is told the server is going away. */
static void ws_stop(weft_loop *L)
{
    weft_wsloop *w = ws_of(L);
    for (h2o_linklist_t *n = w->open.next; n != &w->open; n = n->next)
        start_close(H2O_STRUCT_FROM_MEMBER(weft_ws, link, n), 1001, "server shutting down");
}

/* After the drain only sockets whose handler already returned can be left. */
static void ws_teardown(weft_loop *L)
{
    weft_wsloop *w = ws_of(L);
    while (!h2o_linklist_is_empty(&w->open))
        closed(H2O_STRUCT_FROM_MEMBER(weft_ws, link, w->open.next));
    free(w);
    weft_loop_set(L, ws_slot, NULL);
}

static const weft_loop_hook ws_hook = {.setup = ws_setup, .teardown = ws_teardown, .stop = ws_stop};

void weft_ws_attach(void) { weft_loop_add_hook(&ws_hook); }
