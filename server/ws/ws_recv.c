/*
 * The blocking-style receive (ws_recv) from the socket's inbox, which ws.c
 * fills on the loop; the handler's other way to receive, ws_on_message's
 * callbacks, is ws.c's.
 */
#include <pthread.h>
#include <stdlib.h>

#include "ws/ws.h"
#include "ws/ws_socket.h"
#include "base/log.h"
#include "dispatch/await.h"
#include "request/cancel.h"

/* A blocking-style receive is an operation of dispatch/await.c: it waits
 * for a message, the close, its timeout or the request's cancellation, on
 * the socket's loop, under either policy. */
typedef struct recv_op {
    weft_await a; /* first: the await's callbacks get it back as a recv_op */
    weft_ws *ws;
    int timeout_ms;
} recv_op;

static int inbox_ready(weft_ws *ws)
{
    pthread_mutex_lock(&ws->mu);
    int ready = ws->head != NULL || ws->closed;
    pthread_mutex_unlock(&ws->mu);
    return ready;
}

static void on_recv_timer(weft_timer *t)
{
    weft_ws *ws = H2O_STRUCT_FROM_MEMBER(weft_ws, recv_timer, t);
    recv_op *o = ws->waiting;
    if (o == NULL)
        return;
    ws->waiting = NULL;
    weft_await_done(&o->a, ws->recv_cancelled ? WEFT_CANCELLED : inbox_ready(ws) ? WEFT_OK : WEFT_TIMEOUT);
}

/* Ends the wait from a clean stack, never from inside wslay (a coroutine
 * resumes there). */
void weft__ws_wake_waiter(weft_ws *ws)
{
    ws->woken = 1;
    weft_timers_cancel(ws->loop->timers, &ws->recv_timer);
    if (weft_timers_add(ws->loop->timers, &ws->recv_timer, 0, on_recv_timer) != 0)
        on_recv_timer(&ws->recv_timer);
}

/* Pops the next message, or reports the close; mu held. */
static int take(weft_ws *ws, int *type, const void **data, size_t *len)
{
    inmsg *m = ws->head;
    if (m != NULL) {
        ws->head = m->next;
        if (ws->head == NULL)
            ws->tail = NULL;
        ws->inbox_bytes -= m->len;
        ws->last = m;
        *type = m->type;
        *data = m->data;
        *len = m->len;
        return WEFT_OK;
    }
    *type = WEFT_WS_CLOSE;
    *data = NULL;
    *len = (size_t)ws->close_code;
    return WEFT_CANCELLED;
}

/* The request was withdrawn (its route's timeout_ms passed): the receive
 * ends, the socket closes once the handler returns. */
static int withdrawn(int *type, size_t *len)
{
    *type = WEFT_WS_CLOSE;
    *len = 0;
    return WEFT_CANCELLED;
}

static void start_recv(weft_await *a)
{
    recv_op *o = (recv_op *)a;
    weft_ws *ws = o->ws;
    if (inbox_ready(ws)) {
        weft_await_done(a, WEFT_OK);
        return;
    }
    ws->waiting = o;
    ws->woken = ws->recv_cancelled = 0;
    if (o->timeout_ms >= 0 &&
        weft_timers_add(ws->loop->timers, &ws->recv_timer, (uint64_t)o->timeout_ms, on_recv_timer) != 0) {
        ws->waiting = NULL;
        weft_await_done(a, WEFT_TIMEOUT); /* out of memory for the timer: as if it ran out */
    }
}

static void cancel_recv(weft_await *a)
{
    weft_ws *ws = ((recv_op *)a)->ws;
    ws->recv_cancelled = 1;
    weft__ws_wake_waiter(ws);
}

int weft_ws_ws_recv(weft_ws *ws, int timeout_ms, int *type, const void **data, size_t *len)
{
    weft_req *r = ws->r;
    free(ws->last);
    ws->last = NULL;
    *type = 0;
    *data = NULL;
    *len = 0;
    if (r == NULL) {
        weft_log_error("websocket: ws_recv() after its handler finished; use ws_on_message()");
        return WEFT_ERROR;
    }
    if (weft_await_refused(r, "ws_recv()", "ws_on_message()"))
        return WEFT_ERROR;
    if (weft_req_cancelled(r))
        return withdrawn(type, len);
    /* `o` lives on the waiter's stack, which stays put until the loop ended the wait. */
    recv_op o = {.a = {.r = r, .start = start_recv, .cancel = cancel_recv}, .ws = ws, .timeout_ms = timeout_ms};
    /* A message already in: no round trip through the loop. */
    int rc = inbox_ready(ws) ? WEFT_OK : weft_await_block(&o.a);
    if (rc == WEFT_CANCELLED || weft_req_cancelled(r))
        return withdrawn(type, len);
    if (rc != WEFT_OK)
        return rc;
    pthread_mutex_lock(&ws->mu);
    rc = take(ws, type, data, len);
    pthread_mutex_unlock(&ws->mu);
    return rc;
}
