/* The database entries of the host table: choose the connection set that
 * matches the request's execution context. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "dispatch/await.h"
#include "dispatch/coro.h"
#include "db/db.h"
#include "db/db_tx.h"
#include "dispatch/dispatch.h"
#include "request/route.h"
#include "base/log.h"
#include "core/loop.h"
#include "request/cancel.h"
#include "request/request.h"

static weft_dbloop *loop_db(weft_req *r) { return weft_dbloop_for(r->loop, r->route->db_cfg); }

/* A generation without a database (no `database` group, no PG* variable:
 * weft_db_needed) has no pool and never loaded libpq. Its database calls
 * answer 503; the first one says why, once per process. */
static int no_database(weft_req *r)
{
    static atomic_int told;
    if (weft_route_dbpool(r->route) != NULL)
        return 0;
    if (!atomic_exchange(&told, 1))
        weft_log_error("%s: the plugin queries the database, but none is configured: add a `database` group to the "
                       "config or set PGHOST/PGDATABASE (docs/DATABASE.md); answering 503",
                       r->route->label);
    return 1;
}

/* A worker's statement on a blocking connection: cancelled server-side. */
typedef struct pg_busy {
    weft_req *r;
    PGconn *pg; /* while the statement runs */
    int blocked;
} pg_busy;

/* Loop thread, under the request's cancel mutex, so the worker is still in
 * its statement on `pg`. */
static void wake_pg(void *arg)
{
    pg_busy *b = arg;
    weft_db_cancel_running(b->pg, b->r->route->label);
}

static int on_pg_busy(void *ctx, PGconn *pg)
{
    pg_busy *b = ctx;
    if (pg == NULL) {
        if (b->blocked)
            weft_req_worker_unblock(b->r);
        b->blocked = 0;
        b->pg = NULL;
        return 0;
    }
    b->pg = pg;
    b->blocked = weft_req_worker_block(b->r, wake_pg, b) == WEFT_OK;
    return b->blocked ? 0 : -1;
}

/* A statement run on its request's loop while the handler waits there
 * (dispatch/await.h): a coroutine's, and a pool worker's with
 * pool_connections = 0 (the default) over the loop's pipelined connections
 * while the worker sleeps (a cancellation ends the wait at once and the
 * result is discarded). Measured against blocking connections lent to
 * workers (docs/DATABASE.md, "Pool workers and connections",
 * bench/pool_probe.sh): PostgreSQL's CPU per statement halves and weft's
 * drops, with no hand-off of connections between parked threads. `w` lives
 * on the waiter's stack, which stays put until the loop has answered; the
 * loop always answers (result, timeout, cancellation, or WEFT_CANCELLED when
 * its connections close). */
typedef struct loop_stmt {
    weft_await a; /* first: the await's callbacks get it back as a loop_stmt */
    const char *sql;
    int n;
    unsigned flags; /* weft_dbloop_send's */
    const char *const *params;
    PGresult *res;
    weft_dbq *q; /* the statement while it runs (loop thread) */
} loop_stmt;

static void on_stmt_result(void *arg, int rc, PGresult *res)
{
    loop_stmt *w = arg;
    w->q = NULL;
    w->res = res;
    weft_await_done(&w->a, rc);
}

static void start_stmt(weft_await *a)
{
    loop_stmt *w = (loop_stmt *)a;
    weft_dbloop *db = loop_db(a->r);
    if (db == NULL) {
        weft_await_done(a, WEFT_UNAVAILABLE);
        return;
    }
    /* NULL: already answered (database down), and the waiter may have
     * returned with `w` on its stack: not one more write to it. */
    weft_dbq *q = weft_dbloop_send(db, w->sql, w->n, w->params, w->flags, on_stmt_result, w);
    if (q != NULL)
        w->q = q;
}

/* A transaction's statement is not abandoned (its session must stay in
 * step): the transaction's own wait cancels it with PQcancel and rolls back
 * (db_tx.c); its result, an error, comes soon after. So no `cancel`. */
static void start_tx_stmt(weft_await *a)
{
    loop_stmt *w = (loop_stmt *)a;
    weft_tx_query_loop(a->r, w->sql, w->n, w->params, on_stmt_result, w);
}

/* The pipelined statement's result is discarded; the waiter is answered at once. */
static void cancel_stmt(weft_await *a)
{
    loop_stmt *w = (loop_stmt *)a;
    if (w->q == NULL)
        return; /* its result is already on the way to the waiter */
    weft_dbloop_abandon(w->q);
    w->q = NULL;
    weft_await_done(a, WEFT_CANCELLED);
}

static int loop_query(weft_req *r, const char *sql, int n, const char *const *params, unsigned flags,
                      weft_result **res)
{
    int in_tx = weft_req_tx(r) != NULL;
    loop_stmt w = {.a = {.r = r, .start = in_tx ? start_tx_stmt : start_stmt, .cancel = in_tx ? NULL : cancel_stmt},
                   .sql = sql,
                   .n = n,
                   .flags = flags,
                   .params = params};
    int rc = weft_await_block(&w.a);
    *res = (weft_result *)w.res;
    return rc;
}

/* A pool worker's statement on a blocking connection it holds (its
 * transaction's, or one of pool_connections): cancelled server-side. */
static int in_place_query(weft_req *r, const char *sql, int n, const char *const *params, weft_result **res)
{
    PGresult *pg = NULL;
    pg_busy busy = {.r = r};
    int rc = weft_req_tx(r) != NULL ? weft_tx_query(r, sql, n, params, &pg, on_pg_busy, &busy)
                                    : weft_dbpool_query(weft_route_dbpool(r->route), r, sql, n, params, &pg, on_pg_busy, &busy);
    *res = (weft_result *)pg;
    return rc;
}

int weft_db_host_db_query(weft_req *r, const char *sql, int n, const char *const *params, weft_result **res)
{
    return weft_db_host_query_flags(r, sql, n, params, WEFT_DBQ_TIMED, res);
}

int weft_db_host_query_flags(weft_req *r, const char *sql, int n, const char *const *params, unsigned flags,
                             weft_result **res)
{
    *res = NULL;
    if (weft_req_cancelled(r)) {
        weft_tx_cancelled(r); /* a worker's open transaction ends now */
        return WEFT_CANCELLED;
    }
    if (no_database(r))
        return WEFT_UNAVAILABLE;
    if (weft_await_refused(r, "db_query()", "db_query_async()"))
        return WEFT_ERROR;
    int in_place = weft_await_in_place(r) && (weft_req_tx(r) != NULL || r->route->db_cfg->pool_connections > 0);
    int rc = in_place ? in_place_query(r, sql, n, params, res) : loop_query(r, sql, n, params, flags, res);
    /* Withdrawn meanwhile: its result, whatever it says, is not the handler's. */
    if (weft_req_cancelled(r) && rc != WEFT_OK) {
        weft_db_host_result_free(*res);
        *res = NULL;
        return WEFT_CANCELLED;
    }
    return rc;
}

typedef struct async_wait {
    weft_wait wait;
    weft_dbq *q;
    weft_req *r;
    weft_db_callback cb;
    void *arg;
    int rc;
    PGresult *res;
    struct async_wait *next; /* the request's statements in flight */
} async_wait;

/* A reactive request's statements in flight outside a transaction. A
 * handler may finish (done(), a WebSocket that closed) with some still on
 * their way: they are abandoned then, so that no callback ever reaches a
 * request that is gone. */
typedef struct async_list {
    async_wait *head;
    int deferred;
} async_list;
WEFT_REQ_SLOT(async_slot, async_list)

static async_list *pending_of(weft_req *r) { return weft_req_ext(r, async_slot); }

static void pending_remove(async_wait *a)
{
    for (async_wait **pp = &pending_of(a->r)->head; *pp != NULL; pp = &(*pp)->next)
        if (*pp == a) {
            *pp = a->next;
            return;
        }
}

static void abandon_pending(weft_req *r, void *arg)
{
    (void)arg;
    async_list *l = pending_of(r);
    while (l->head != NULL) {
        async_wait *a = l->head;
        l->head = a->next;
        weft_req_wait_remove(r, &a->wait);
        weft_dbloop_abandon(a->q);
        free(a);
    }
}

/* `a` is malloc'd, not from the request's arena: a WebSocket's request
 * may run statements for as long as the socket lives. */
static void run_async_cb(void *ctx)
{
    async_wait a = *(async_wait *)ctx;
    free(ctx);
    if (a.rc != WEFT_OK && a.rc != WEFT_CANCELLED && weft_req_cancelled(a.r)) {
        PQclear(a.res); /* e.g. a transaction's statement cancelled on the server */
        a.res = NULL;
        a.rc = WEFT_CANCELLED;
    }
    a.cb(a.r, a.arg, a.rc, (weft_result *)a.res);
}

static void on_async_result(void *arg, int rc, PGresult *res)
{
    async_wait *a = arg;
    pending_remove(a); /* a transaction's is in no list: not found */
    weft_req_wait_remove(a->r, &a->wait);
    a->rc = rc;
    a->res = res;
    weft_dispatch_run(a->r, run_async_cb, a);
}

static void cancel_async_query(weft_wait *wt)
{
    async_wait *a = H2O_STRUCT_FROM_MEMBER(async_wait, wait, wt);
    pending_remove(a);
    weft_dbloop_abandon(a->q);
    a->rc = WEFT_CANCELLED;
    weft_dispatch_run(a->r, run_async_cb, a);
}

void weft_db_host_db_query_async(weft_req *r, const char *sql, int n, const char *const *params, weft_db_callback cb,
                              void *arg)
{
    weft_db_host_query_async_flags(r, sql, n, params, WEFT_DBQ_TIMED, cb, arg);
}

void weft_db_host_query_async_flags(weft_req *r, const char *sql, int n, const char *const *params, unsigned flags,
                                    weft_db_callback cb, void *arg)
{
    /* A worker would queue on the loop's connection from its own thread. */
    if (!weft_await_reactive(r)) {
        weft_log_error("%s: a statement with a callback outside a reactive handler returns WEFT_ERROR; pass none",
                       r->route->label);
        cb(r, arg, WEFT_ERROR, NULL);
        return;
    }
    if (weft_req_cancelled(r)) {
        cb(r, arg, WEFT_CANCELLED, NULL);
        return;
    }
    async_wait *a = no_database(r) ? NULL : malloc(sizeof(*a));
    weft_dbloop *db = a != NULL && weft_req_tx(r) == NULL ? loop_db(r) : NULL;
    if (a == NULL || (db == NULL && weft_req_tx(r) == NULL)) {
        free(a);
        cb(r, arg, WEFT_UNAVAILABLE, NULL);
        return;
    }
    *a = (async_wait){.r = r, .cb = cb, .arg = arg};
    if (weft_req_tx(r) != NULL) {
        weft_tx_query_loop(r, sql, n, params, on_async_result, a);
        return;
    }
    async_list *l = pending_of(r);
    if (!l->deferred && weft_req_defer(r, abandon_pending, NULL) != 0) {
        free(a);
        cb(r, arg, WEFT_UNAVAILABLE, NULL);
        return;
    }
    l->deferred = 1;
    /* Registered first: the result may arrive before the query call returns
     * (then `a` is gone, and the NULL handle says so). */
    a->next = l->head;
    l->head = a;
    weft_req_wait_add(r, &a->wait, cancel_async_query);
    weft_dbq *q = weft_dbloop_send(db, sql, n, params, flags, on_async_result, a);
    if (q != NULL)
        a->q = q;
}

/* A weft_result is a PGresult: the opaque type keeps libpq out of the ABI. */
int weft_db_host_result_rows(const weft_result *res) { return res ? PQntuples((const PGresult *)res) : 0; }
int weft_db_host_result_cols(const weft_result *res) { return res ? PQnfields((const PGresult *)res) : 0; }
const char *weft_db_host_result_name(const weft_result *res, int col)
{
    return res ? PQfname((const PGresult *)res, col) : NULL;
}

const char *weft_db_host_result_value(const weft_result *res, int row, int col)
{
    const PGresult *pg = (const PGresult *)res;
    if (pg == NULL || row < 0 || col < 0 || row >= PQntuples(pg) || col >= PQnfields(pg) ||
        PQgetisnull(pg, row, col))
        return NULL;
    return PQgetvalue(pg, row, col);
}

long long weft_db_host_result_affected(const weft_result *res)
{
    const char *n = res ? PQcmdTuples((PGresult *)res) : "";
    return *n ? atoll(n) : 0;
}

const char *weft_db_host_result_sqlstate(const weft_result *res)
{
    const char *s = res ? PQresultErrorField((const PGresult *)res, PG_DIAG_SQLSTATE) : NULL;
    return s != NULL ? s : "";
}

const char *weft_db_host_result_error(const weft_result *res)
{
    return res ? PQresultErrorMessage((const PGresult *)res) : "no result (connection failed or timed out)";
}

void weft_db_host_result_free(weft_result *res)
{
    if (res != NULL) /* without a database libpq is not loaded, and a plugin may free its NULL result */
        PQclear((PGresult *)res);
}
