/*
 * The socket, shared by the connection on its loop (ws.c) and the
 * blocking-style receive (ws_recv.c). Not for other folders.
 */
#ifndef WEFT_WS_SOCKET_H
#define WEFT_WS_SOCKET_H

#include <pthread.h>
#include <stdatomic.h>

#include "ws/ws.h"
#include "core/loop.h"
#include "request/request.h"

typedef struct inmsg {
    struct inmsg *next;
    int type;
    size_t len;
    char data[];
} inmsg;

struct weft_ws {
    weft_req *r;                /* NULL once the request completed */
    weft_loop *loop;
    h2o_websocket_conn_t *conn; /* NULL before the upgrade and once closed (loop thread) */
    atomic_int refs;            /* the request, the open socket, each posted operation */
    atomic_int gone;            /* closing or closed: sends are refused (read by any thread) */
    int closing, in_recv, accepted, accept_done;
    size_t max_message, send_limit, inbox_limit, queued_limit;
    size_t accounted; /* this socket's share of queued_total (loop thread) */
    uint64_t idle_ms;
    weft_timer timer; /* idle; once closing, the grace for the peer's answer */
    h2o_linklist_t link;
    /* inbox of the blocking-style receiver; `mu` because a worker reads it */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    inmsg *head, *tail;
    size_t inbox_bytes;
    int closed, close_code;
    inmsg *last; /* handed to the plugin by ws_recv, freed by the next */
    struct recv_op *waiting; /* the blocking-style receive in progress (loop thread) */
    int woken, recv_cancelled;
    weft_timer recv_timer;   /* its timeout, then the clean-stack end of its wait */
    /* reactive */
    weft_ws_callback cb;
    void *arg;
    weft_msg accept_msg;
};

/* ws_recv.c: ends the blocking-style receive's wait from a clean stack (loop thread). */
void weft__ws_wake_waiter(weft_ws *ws);

#endif
