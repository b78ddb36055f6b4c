/*
 * Non-blocking PostgreSQL connections owned by one event loop, in pipeline
 * mode: statements from many coroutine and reactive requests are sent back
 * to back on few connections, and their results come back in order.
 *
 * Each statement is sent as [Parse] + Bind/Execute + Sync. The Sync per
 * statement isolates failures: an error aborts only up to its own Sync, so
 * one bad statement never fails its neighbours. Results therefore arrive as
 * [prepare result, NULL,] result, NULL, PIPELINE_SYNC — tracked per
 * statement by `phase`.
 *
 * With libpq 17 the Sync is PQsendPipelineSync, which only buffers: the
 * statements a loop pass queues on a connection leave together, in one
 * write, when the pass ends (flush_pass). libpq 15's PQpipelineSync flushes
 * as it syncs, so there every statement is its own write.
 *
 * Behind a pooler (database.pooler) the statement timeout cannot be a
 * startup option: a session pooler's connection runs `SET statement_timeout`
 * first (it is the session's server connection), and a transaction pooler's
 * statements each carry weft_db_timeout_sql ahead of them under their own
 * Sync (WEFT_DBQ_TIMED), one more result group per statement. Without named
 * statements (database.prepared = false) a statement is Parse + Bind/Execute
 * every time (PQsendQueryParams), still pipelined.
 *
 * A connection may also carry LISTEN (weft_dbloop_watch): notifications
 * are read with the results, and the watcher hears of every (re)connect.
 *
 * The statements themselves — their copies, the wait list, handing the
 * outcome over — are db_loopq.c's.
 *
 * Everything here runs on the owning loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/db_loop.h"
#include "base/log.h"
#include "core/loop.h"

static void conn_io(h2o_socket_t *sock, const char *err);
static void conn_connect(dbconn *c);
static void send_waiting(weft_dbloop *d);
static void session_setup(dbconn *c);

/* Connections of this loop thread holding statements not yet written
 * (libpq 17 only; see flush_pass). */
static _Thread_local dbconn *unflushed;

static void unflushed_add(dbconn *c)
{
    if (c->on_unflushed)
        return;
    c->on_unflushed = 1;
    c->next_unflushed = unflushed;
    unflushed = c;
}

/* Before the connection closes or its memory goes. */
static void unflushed_remove(dbconn *c)
{
    if (!c->on_unflushed)
        return;
    for (dbconn **pp = &unflushed; *pp != NULL; pp = &(*pp)->next_unflushed)
        if (*pp == c) {
            *pp = c->next_unflushed;
            break;
        }
    c->on_unflushed = 0;
}

static void conn_broken(dbconn *c, const char *why, int rc);

static void on_q_timeout(weft_timer *t)
{
    dbq *q = H2O_STRUCT_FROM_MEMBER(dbq, timeout, t);
    if (q->conn != NULL) {
        /* Sent, and even the server's statement_timeout did not answer: the
         * connection is hung or dead. Reset it; everything on it fails. */
        conn_broken(q->conn, "a statement got no answer within the statement timeout", WEFT_TIMEOUT);
        return;
    }
    weft__dbloop_wait_unlink(q);
    weft__dbq_finish(q, WEFT_TIMEOUT, NULL);
}

static void report_down(weft_dbloop *d, const char *why)
{
    if (d->reported_down)
        return;
    d->reported_down = 1;
    weft_log_error("database (loop %d connections): %s%s; failing requests fast with 503 and reconnecting with "
                   "backoff",
                   d->loop->index, why, weft_db_connect_hint(why));
}

static int any_state(weft_dbloop *d, int state)
{
    for (int i = 0; i < d->n; i++)
        if (d->conns[i].state == state)
            return 1;
    return 0;
}

static void on_retry(weft_timer *t)
{
    conn_connect(H2O_STRUCT_FROM_MEMBER(dbconn, retry, t));
}

/* The connection failed: answer everything on it, schedule a reconnect. */
static void conn_broken(dbconn *c, const char *why, int rc)
{
    weft_dbloop *d = c->owner;
    char msg[512];
    snprintf(msg, sizeof(msg), "%s", why);
    msg[strcspn(msg, "\n")] = '\0';
    unflushed_remove(c);
    if (c->sock != NULL) {
        h2o_socket_close(c->sock);
        c->sock = NULL;
    }
    if (c->pg != NULL) {
        PQfinish(c->pg);
        c->pg = NULL;
    }
    weft_stmt_clear(&c->stmts);
    if (c->state == C_READY)
        weft_db_metric_open(-1);
    if (c->inflight > 0)
        weft_db_metric_busy(-1);
    c->state = C_DOWN;
    while (c->head != NULL) {
        dbq *q = c->head;
        c->head = q->next;
        weft__dbq_finish(q, rc, NULL);
    }
    c->tail = NULL;
    c->inflight = 0;
    report_down(d, msg);
    if (!any_state(d, C_READY) && !any_state(d, C_CONNECTING)) {
        weft__dbloop_fail_waiting(d, WEFT_UNAVAILABLE);
        if (d->on_down != NULL)
            d->on_down(d->watch_ctx);
    }
    c->backoff_ms = weft_db_backoff_next(c->backoff_ms);
    if (weft_timers_add(d->loop->timers, &c->retry, c->backoff_ms, on_retry) != 0)
        weft_log_error("database: out of memory scheduling a reconnect; the next statement retries");
}

/* (Re)wraps libpq's socket for the loop; libpq may switch sockets while connecting. */
static int conn_watch(dbconn *c, int want_write)
{
    int fd = PQsocket(c->pg);
    if (fd < 0)
        return -1;
    if (c->sock == NULL || c->sock_src_fd != fd) {
        if (c->sock != NULL)
            h2o_socket_close(c->sock);
        int dupfd = dup(fd); /* h2o closes what it wraps; libpq keeps its own */
        if (dupfd < 0)
            return -1;
        c->sock = h2o_evloop_socket_create(c->owner->loop->evloop, dupfd, H2O_SOCKET_FLAG_DONT_READ);
        c->sock->data = c;
        c->sock_src_fd = fd;
    }
    if (!h2o_socket_is_reading(c->sock))
        h2o_socket_read_start(c->sock, conn_io);
    if (want_write && !h2o_socket_is_writing(c->sock))
        h2o_socket_notify_write(c->sock, conn_io);
    return 0;
}

static void conn_connect(dbconn *c)
{
    weft_dbloop *d = c->owner;
    c->pg = PQconnectStartParams(d->params.keys, d->params.values, 1);
    if (c->pg == NULL || PQstatus(c->pg) == CONNECTION_BAD) {
        conn_broken(c, c->pg != NULL ? PQerrorMessage(c->pg) : "out of memory", WEFT_UNAVAILABLE);
        return;
    }
    c->state = C_CONNECTING;
    c->poll = PGRES_POLLING_WRITING;
    if (conn_watch(c, 1) != 0)
        conn_broken(c, "no socket", WEFT_UNAVAILABLE);
}

static void conn_ready(dbconn *c)
{
    if (PQsetnonblocking(c->pg, 1) != 0 || PQenterPipelineMode(c->pg) != 1) {
        conn_broken(c, PQerrorMessage(c->pg), WEFT_UNAVAILABLE);
        return;
    }
    c->state = C_READY;
    c->owner->epoch++;
    weft_db_metric_open(1);
    if (c->backoff_ms > 0)
        weft_db_metric_reconnect();
    c->backoff_ms = 0;
    weft_dbloop *d = c->owner;
    if (d->reported_down) {
        d->reported_down = 0;
        weft_log_info("database (loop %d connections): reachable again", d->loop->index);
    }
    /* First in the pipeline, so every statement behind it runs with it. */
    if (d->session_sql != NULL)
        session_setup(c);
    if (c->state == C_READY && d->on_up != NULL)
        d->on_up(d->watch_ctx, d->epoch);
    send_waiting(d);
}

static void flush(dbconn *c)
{
    int f = PQflush(c->pg);
    if (f < 0)
        conn_broken(c, PQerrorMessage(c->pg), WEFT_UNAVAILABLE);
    else if (f == 1)
        conn_watch(c, 1);
}

/* Feeds one result (or the NULL that ends a group) to the oldest statement. */
static void advance(dbconn *c, PGresult *r)
{
    dbq *q = c->head;
    if (!weft_dbstmt_feed(&q->st, r))
        return;
    c->head = q->next;
    if (c->head == NULL)
        c->tail = NULL;
    if (--c->inflight == 0)
        weft_db_metric_busy(-1);
    weft_db_metric_query(weft_now_ns() - q->start_ns);
    int rc;
    PGresult *res = weft_dbstmt_take(&q->st, &c->stmts, &c->owner->cfg, &rc);
    weft__dbq_finish(q, rc, res);
}

static void conn_read(dbconn *c)
{
    /* Level-triggered epoll: always consume, or the loop spins. */
    if (!PQconsumeInput(c->pg)) {
        conn_broken(c, PQerrorMessage(c->pg), WEFT_UNAVAILABLE);
        return;
    }
    while (c->head != NULL && !PQisBusy(c->pg)) {
        PGresult *r = PQgetResult(c->pg);
        advance(c, r);
        if (c->state != C_READY)
            return;
    }
    if (c->owner->on_notify != NULL) {
        PGnotify *n;
        while ((n = PQnotifies(c->pg)) != NULL) {
            c->owner->on_notify(c->owner->watch_ctx, n->relname, n->extra);
            PQfreemem(n);
        }
    }
    if (PQstatus(c->pg) != CONNECTION_OK)
        conn_broken(c, PQerrorMessage(c->pg), WEFT_UNAVAILABLE);
}

static void conn_io(h2o_socket_t *sock, const char *err)
{
    dbconn *c = sock->data;
    if (c->state == C_CONNECTING) {
        c->poll = PQconnectPoll(c->pg);
        if (c->poll == PGRES_POLLING_OK)
            conn_ready(c);
        else if (c->poll == PGRES_POLLING_FAILED)
            conn_broken(c, PQerrorMessage(c->pg), WEFT_UNAVAILABLE);
        else if (conn_watch(c, c->poll == PGRES_POLLING_WRITING) != 0)
            conn_broken(c, "no socket", WEFT_UNAVAILABLE);
        return;
    }
    if (c->state != C_READY)
        return;
    conn_read(c);
    if (c->state == C_READY)
        flush(c);
}

static void conn_send(dbconn *c, dbq *q)
{
    int sent = weft_dbstmt_send(&q->st, c->pg, &c->stmts, c->owner->cfg.unnamed, c->owner->timeout_ms);
    if (sent == -2) {
        weft__dbq_finish(q, WEFT_UNAVAILABLE, NULL); /* out of memory: 503, the connection is fine */
        return;
    }
    int batched = weft_pq_has_send_pipeline_sync();
    if (sent < 0 || !(batched ? PQsendPipelineSync(c->pg) : PQpipelineSync(c->pg))) {
        conn_broken(c, PQerrorMessage(c->pg), WEFT_UNAVAILABLE);
        weft__dbq_finish(q, WEFT_UNAVAILABLE, NULL);
        return;
    }
    q->conn = c;
    q->next = NULL;
    if (c->tail != NULL)
        c->tail->next = q;
    else
        c->head = q;
    c->tail = q;
    if (c->inflight++ == 0)
        weft_db_metric_busy(1);
    if (batched)
        unflushed_add(c); /* written with the pass's other statements */
    else
        flush(c);
}

/* The end of a loop pass: what its handlers queued leaves, one write per
 * connection (a full socket buffer is finished by conn_io as usual). */
void weft_dbloop_pass(weft_loop *L)
{
    (void)L;
    while (unflushed != NULL) {
        dbconn *c = unflushed;
        unflushed = c->next_unflushed;
        c->on_unflushed = 0;
        if (c->state == C_READY)
            flush(c);
    }
}

static dbconn *least_loaded(weft_dbloop *d)
{
    dbconn *best = NULL;
    for (int i = 0; i < d->n; i++)
        if (d->conns[i].state == C_READY && (best == NULL || d->conns[i].inflight < best->inflight))
            best = &d->conns[i];
    return best;
}

static void send_waiting(weft_dbloop *d)
{
    dbconn *c;
    while (d->wait_head != NULL && (c = least_loaded(d)) != NULL) {
        dbq *q = d->wait_head;
        d->wait_head = q->next;
        if (d->wait_head == NULL)
            d->wait_tail = NULL;
        conn_send(c, q);
    }
}

weft_dbloop *weft_dbloop_new(weft_loop *loop, const weft_db_cfg *cfg)
{
    return weft_dbloop_new_to(loop, cfg, NULL);
}

weft_dbloop *weft_dbloop_new_to(weft_loop *loop, const weft_db_cfg *cfg, const char *conninfo)
{
    weft_dbloop *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return NULL;
    d->loop = loop;
    weft_db_cfg_copy(&d->cfg, cfg);
    if (conninfo != NULL) {
        free(d->cfg.conninfo);
        d->cfg.conninfo = strdup(conninfo);
    }
    weft_db_params_init(&d->params, &d->cfg, NULL);
    d->session_sql = weft_db_session_sql(&d->cfg, d->session_buf, sizeof(d->session_buf));
    snprintf(d->timeout_ms, sizeof(d->timeout_ms), "%d", d->cfg.statement_timeout_ms);
    d->n = cfg->loop_connections;
    d->conns = calloc((size_t)d->n, sizeof(dbconn));
    for (int i = 0; i < d->n; i++) {
        d->conns[i].owner = d;
        conn_connect(&d->conns[i]);
    }
    return d;
}

void weft_dbloop_watch(weft_dbloop *d, weft_dbloop_up_fn on_up, weft_dbloop_down_fn on_down,
                       weft_dbloop_notify_fn on_notify, void *ctx)
{
    d->on_up = on_up;
    d->on_down = on_down;
    d->on_notify = on_notify;
    d->watch_ctx = ctx;
}

void weft_dbloop_free(weft_dbloop *d)
{
    if (d == NULL)
        return;
    weft__dbloop_fail_waiting(d, WEFT_CANCELLED);
    for (int i = 0; i < d->n; i++) {
        dbconn *c = &d->conns[i];
        weft_timers_cancel(d->loop->timers, &c->retry);
        unflushed_remove(c);
        while (c->head != NULL) {
            dbq *q = c->head;
            c->head = q->next;
            weft__dbq_finish(q, WEFT_CANCELLED, NULL);
        }
        if (c->sock != NULL)
            h2o_socket_close(c->sock);
        if (c->state == C_READY)
            weft_db_metric_open(-1);
        if (c->inflight > 0)
            weft_db_metric_busy(-1);
        PQfinish(c->pg);
        weft_stmt_clear(&c->stmts);
    }
    free(d->conns);
    weft_db_cfg_release(&d->cfg);
    free(d);
}

const weft_db_cfg *weft_dbloop_cfg(const weft_dbloop *d) { return &d->cfg; }

uint64_t weft_dbloop_epoch(const weft_dbloop *d) { return d->epoch; }

int weft_dbloop_ready(const weft_dbloop *d)
{
    for (int i = 0; i < d->n; i++)
        if (d->conns[i].state == C_READY)
            return 1;
    return 0;
}

int weft_dbloop_connecting(const weft_dbloop *d) { return any_state((weft_dbloop *)d, C_CONNECTING); }

size_t weft_dbloop_inflight(const weft_dbloop *d)
{
    size_t n = 0;
    for (int i = 0; i < d->n; i++)
        n += d->conns[i].inflight;
    for (const dbq *q = d->wait_head; q != NULL; q = q->next)
        n++;
    return n;
}

weft_dbloop *weft__dbloop_next(const weft_dbloop *d) { return d->next_retired; }
void weft__dbloop_set_next(weft_dbloop *d, weft_dbloop *next) { d->next_retired = next; }

PGconn *weft_dbloop_pg(const weft_dbloop *d) { return d->n > 0 && d->conns[0].state == C_READY ? d->conns[0].pg : NULL; }

static void on_session_setup(void *arg, int rc, PGresult *res)
{
    weft_dbloop *d = arg;
    if (rc != WEFT_OK && rc != WEFT_UNAVAILABLE && rc != WEFT_CANCELLED)
        weft_log_error("database (loop %d connections): %s failed: %s", d->loop->index, d->session_sql,
                       res != NULL ? PQresultErrorMessage(res) : "no answer");
    PQclear(res);
}

/* A new session's SET, ahead of anything else on the connection. */
static void session_setup(dbconn *c)
{
    weft_dbloop *d = c->owner;
    dbq *q = weft__dbq_new(d, d->session_sql, 0, NULL, on_session_setup, d);
    if (q == NULL || weft_timers_add(d->loop->timers, &q->timeout, (uint64_t)d->cfg.statement_timeout_ms + 1000,
                                     on_q_timeout) != 0) {
        free(q);
        conn_broken(c, "out of memory setting up a new connection", WEFT_UNAVAILABLE);
        return;
    }
    q->st.flags = WEFT_DBQ_UNNAMED;
    conn_send(c, q);
}

/* The connection a pinned statement asks for, while it is up. */
static dbconn *pinned(weft_dbloop *d, unsigned flags)
{
    if (!(flags & WEFT_DBQ_PINNED))
        return NULL;
    dbconn *c = &d->conns[(flags >> 8) % (unsigned)d->n];
    return c->state == C_READY ? c : NULL;
}

weft_dbq *weft_dbloop_query(weft_dbloop *d, const char *sql, int n, const char *const *params, weft_dbloop_cb cb,
                            void *arg)
{
    return weft_dbloop_send(d, sql, n, params, 0, cb, arg);
}

weft_dbq *weft_dbloop_send(weft_dbloop *d, const char *sql, int n, const char *const *params, unsigned flags,
                           weft_dbloop_cb cb, void *arg)
{
    dbq *q = weft__dbq_new(d, sql, n, params, cb, arg);
    if (q == NULL) {
        cb(arg, WEFT_UNAVAILABLE, NULL);
        return NULL;
    }
    /* The timeout only travels with statements behind a transaction pooler. */
    q->st.flags = d->cfg.pooler == WEFT_POOLER_TRANSACTION
                      ? flags
                      : flags & ~(unsigned)(WEFT_DBQ_TIMED | WEFT_DBQ_TIMED_BEGIN);
    dbconn *c = pinned(d, flags);
    if (c == NULL)
        c = least_loaded(d);
    if (c == NULL && !any_state(d, C_CONNECTING)) {
        /* Down, and between reconnect attempts: don't make the client wait. */
        q->abandoned = 1;
        weft__dbq_free(q);
        cb(arg, WEFT_UNAVAILABLE, NULL);
        return NULL;
    }
    if (weft_timers_add(d->loop->timers, &q->timeout, (uint64_t)d->cfg.statement_timeout_ms + 1000,
                        on_q_timeout) != 0) {
        /* Out of memory: 503 rather than a statement without its backstop. */
        q->abandoned = 1;
        weft__dbq_free(q);
        cb(arg, WEFT_UNAVAILABLE, NULL);
        return NULL;
    }
    if (c != NULL) {
        conn_send(c, q);
        return q;
    }
    q->next = NULL;
    if (d->wait_tail != NULL)
        d->wait_tail->next = q;
    else
        d->wait_head = q;
    d->wait_tail = q;
    return q;
}

