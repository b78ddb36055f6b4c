/*
 * Transactions. A transaction needs one database session to itself from
 * BEGIN to COMMIT, so it can never ride on the pipelined loop connections
 * (db_loop.c), where the statements of many requests are interleaved.
 *
 *   pool workers      hold one of the blocking pool connections (db_pool.c);
 *   coroutine/reactive take a single-connection session from their loop's
 *                     transaction set (db_txset.c).
 *
 * Either way at most database.tx_connections are held at once (per loop,
 * and for the pool workers); db_begin waits up to database.tx_wait_ms for
 * one, in FIFO order, and then fails with WEFT_UNAVAILABLE (503).
 *
 * Cancellation (client gone, deadline passed) ends a transaction at once,
 * never at the handler's leisure: its row locks must not outlive the
 * request. On a loop the transaction's own weft_wait does it the moment the
 * request is cancelled: a statement running in the session is cancelled on
 * the server (PQcancel) and ROLLBACK is queued behind it; the session goes
 * back to the set when the ROLLBACK answers. A pool worker's connection
 * belongs to the worker: its running statement is cancelled with PQcancel
 * (the worker is woken like any blocked worker), and the worker itself rolls
 * back in the host call it is in or enters next. From then on every call on
 * that transaction answers WEFT_CANCELLED.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_txset.h"
#include "dispatch/await.h"
#include "dispatch/coro.h"
#include "dispatch/dispatch.h"
#include "request/request.h"
#include "request/route.h"
#include "base/log.h"
#include "core/loop.h"

int weft_tx_req_slot = -1;
__attribute__((constructor)) static void take_req_slot(void) { weft_tx_req_slot = weft_req_slot_new(sizeof(weft_tx *)); }

static const char *cancel_reason(const weft_req *r)
{
    return weft_req_cancelled(r) == WEFT_CANCEL_DEADLINE ? "its deadline passed" : "the client went away";
}

static void log_cancel_rollback(const weft_req *r)
{
    weft_log_warn("%s: request cancelled (%s) with a transaction open; rolled back", r->route->label,
                  cancel_reason(r));
}

/* ---- cancellation ---- */

static void tx_unwatch(weft_tx *tx)
{
    if (tx->watching && tx->r != NULL)
        weft_req_wait_remove(tx->r, &tx->wait);
    tx->watching = 0;
}

/* The request lets go of tx: freed now, or once the cancellation's ROLLBACK is back. */
static void tx_drop(weft_tx *tx)
{
    tx_unwatch(tx);
    tx->r = NULL;
    if (tx->rolling)
        tx->orphan = 1;
    else
        free(tx);
}

static void on_cancel_rollback(void *arg, int rc, PGresult *res)
{
    weft_tx *tx = arg;
    PQclear(res);
    weft_dbloop *d = tx->d;
    tx->d = NULL;
    tx->rolling = 0;
    tx->phase = TX_DONE;
    weft_tx_release_loop(tx->set, d, rc == WEFT_OK && !tx->broken);
    tx->set = NULL;
    if (tx->orphan)
        free(tx);
}

/* Loop thread: the request was withdrawn while its transaction waits for a
 * session or holds one. */
static void on_tx_cancel(weft_wait *w)
{
    weft_tx *tx = H2O_STRUCT_FROM_MEMBER(weft_tx, wait, w);
    tx->watching = 0;
    if (tx->phase == TX_QUEUED) {
        weft_tx_unqueue(tx, WEFT_CANCELLED);
        return;
    }
    if ((tx->phase != TX_BEGINNING && tx->phase != TX_OPEN) || tx->d == NULL)
        return; /* nothing held, or its COMMIT/ROLLBACK is already on its way */
    weft_req *r = tx->r;
    int was_open = tx->phase == TX_OPEN;
    tx->cancelled = 1;
    tx->rolling = 1;
    tx->phase = TX_ENDING;
    log_cancel_rollback(r);
    if (weft_dbloop_inflight(tx->d) > 0)
        weft_db_cancel_running(weft_dbloop_pg(tx->d), r->route->label);
    if (tx->broken || (was_open && weft_dbloop_epoch(tx->d) != tx->epoch) || !weft_dbloop_ready(tx->d)) {
        tx->broken = 1; /* the session and its transaction are gone already */
        on_cancel_rollback(tx, WEFT_OK, NULL);
        return;
    }
    /* Behind the cancelled statement (or BEGIN) in the session's pipeline. */
    weft_dbloop_query(tx->d, "ROLLBACK", 0, NULL, on_cancel_rollback, tx);
}

static void tx_watch(weft_tx *tx)
{
    weft_req_wait_add(tx->r, &tx->wait, on_tx_cancel);
    tx->watching = 1;
}

/* Worker thread: r was withdrawn with its transaction on a pool connection. */
static void rollback_worker(weft_req *r, weft_tx *tx)
{
    if (tx->ptx == NULL)
        return;
    log_cancel_rollback(r);
    PGresult *res = NULL;
    weft_dbpool_tx_query(tx->pool, tx->ptx, "ROLLBACK", 0, NULL, &res, NULL, NULL);
    PQclear(res);
    weft_dbpool_unhold(tx->pool, tx->ptx);
    tx->ptx = NULL;
    tx->cancelled = 1;
}

void weft_tx_cancelled(weft_req *r)
{
    if (weft_req_tx(r) != NULL && weft_await_in_place(r))
        rollback_worker(r, weft_req_tx(r));
}

/* ---- statements inside a transaction ---- */

int weft_tx_query(weft_req *r, const char *sql, int n, const char *const *params, PGresult **res,
                  int (*busy)(void *ctx, PGconn *pg), void *ctx)
{
    weft_tx *tx = weft_req_tx(r);
    *res = NULL;
    if (tx->cancelled)
        return WEFT_CANCELLED;
    int rc = weft_dbpool_tx_query(tx->pool, tx->ptx, sql, n, params, res, busy, ctx);
    if (weft_req_cancelled(r)) {
        PQclear(*res);
        *res = NULL;
        rollback_worker(r, tx);
        return WEFT_CANCELLED;
    }
    if (rc == WEFT_UNAVAILABLE || rc == WEFT_TIMEOUT)
        tx->broken = 1;
    return rc;
}

void weft_tx_query_loop(weft_req *r, const char *sql, int n, const char *const *params, weft_dbloop_cb cb, void *arg)
{
    weft_tx *tx = weft_req_tx(r);
    if (tx->cancelled) {
        cb(arg, WEFT_CANCELLED, NULL);
        return;
    }
    if (tx->broken || tx->d == NULL || weft_dbloop_epoch(tx->d) != tx->epoch || !weft_dbloop_ready(tx->d)) {
        tx->broken = 1;
        cb(arg, WEFT_UNAVAILABLE, NULL);
        return;
    }
    weft_dbloop_query(tx->d, sql, n, params, cb, arg);
}

/* ---- begin / end for every context ---- */

/* A blocking-style handler's BEGIN or COMMIT/ROLLBACK on its loop session,
 * waited for through dispatch/await.h. No `cancel`: the transaction's own
 * wait (tx_watch) ends it on cancellation, and its answer comes soon after. */
typedef struct tx_op {
    weft_await a; /* first: the await's callbacks get it back as a tx_op */
    weft_tx *tx;
    int begin, commit;
} tx_op;

static void on_tx_op(void *arg, int rc) { weft_await_done(&((tx_op *)arg)->a, rc); }

static void start_tx_op(weft_await *a)
{
    tx_op *o = (tx_op *)a;
    if (o->begin)
        weft_tx_begin_loop(a->r, o->tx, on_tx_op, o);
    else
        weft_tx_end_loop(o->tx, o->commit, on_tx_op, o);
}

static int tx_op_wait(weft_req *r, weft_tx *tx, int begin, int commit)
{
    tx_op o = {.a = {.r = r, .start = start_tx_op}, .tx = tx, .begin = begin, .commit = commit};
    return weft_await_block(&o.a);
}

static void abandon(weft_req *r, void *arg);

static weft_tx *tx_new(weft_req *r, int isolation)
{
    if (isolation < WEFT_READ_COMMITTED || isolation > WEFT_SERIALIZABLE) {
        weft_log_error("%s: db_begin: unknown isolation level %d", r->route->label, isolation);
        return NULL;
    }
    if (weft_req_tx(r) != NULL) {
        weft_log_error("%s: db_begin: a transaction is already open for this request", r->route->label);
        return NULL;
    }
    weft_tx *tx = calloc(1, sizeof(*tx));
    if (tx == NULL)
        return NULL;
    if (weft_req_defer(r, abandon, NULL) != 0) {
        free(tx);
        return NULL;
    }
    tx->r = r;
    tx->isolation = isolation;
    return tx;
}

/* A loop begin that did not give the request a transaction. */
static void begin_failed(weft_tx *tx)
{
    if (!tx->rolling && tx->d != NULL) {
        weft_tx_release_loop(tx->set, tx->d, 0);
        tx->d = NULL;
    }
    tx_drop(tx);
}

static int begin_worker(weft_req *r, weft_tx *tx)
{
    int rc;
    tx->pool = weft_route_dbpool(r->route);
    tx->ptx = weft_dbpool_hold(tx->pool, r, &rc);
    if (tx->ptx == NULL)
        return rc;
    PGresult *res = NULL;
    rc = weft_dbpool_tx_begin(tx->pool, tx->ptx, weft_tx_begin_sql(tx->isolation), &res);
    PQclear(res);
    if (rc == WEFT_OK && weft_req_cancelled(r)) {
        rollback_worker(r, tx);
        return WEFT_CANCELLED;
    }
    if (rc != WEFT_OK) {
        weft_dbpool_unhold(tx->pool, tx->ptx);
        tx->ptx = NULL;
    }
    return rc;
}

/* No `database` group: no pool to hold a connection of (a NULL one crashed
 * the server on the first transfer). 503, as db_query answers; said once. */
static int no_database(weft_req *r)
{
    static atomic_int told;
    if (weft_route_dbpool(r->route) != NULL)
        return 0;
    if (!atomic_exchange(&told, 1))
        weft_log_error("%s: db_begin() but no database is configured (docs/DATABASE.md); answering 503",
                       r->route->label);
    return 1;
}

int weft_db_tx_db_begin(weft_req *r, int isolation)
{
    if (weft_await_refused(r, "db_begin()", "db_begin_async()"))
        return WEFT_ERROR;
    if (weft_req_cancelled(r))
        return WEFT_CANCELLED;
    if (no_database(r))
        return WEFT_UNAVAILABLE;
    weft_tx *tx = tx_new(r, isolation);
    if (tx == NULL)
        return WEFT_ERROR;
    int rc;
    if (weft_await_in_place(r)) {
        rc = begin_worker(r, tx);
        if (rc != WEFT_OK)
            free(tx);
    } else {
        tx_watch(tx);
        rc = tx_op_wait(r, tx, 1, 0);
        if (rc == WEFT_OK && tx->cancelled)
            rc = WEFT_CANCELLED; /* withdrawn during BEGIN: its ROLLBACK is on the way */
        if (rc != WEFT_OK)
            begin_failed(tx);
    }
    if (rc != WEFT_OK)
        return rc == WEFT_TIMEOUT ? WEFT_UNAVAILABLE : rc;
    weft_req_set_tx(r, tx);
    return WEFT_OK;
}

static int end_blocking(weft_req *r, int commit)
{
    weft_tx *tx = weft_req_tx(r);
    if (tx == NULL) {
        weft_log_error("%s: %s without db_begin", r->route->label, commit ? "db_commit" : "db_rollback");
        return WEFT_ERROR;
    }
    if (weft_await_refused(r, commit ? "db_commit()" : "db_rollback()",
                           commit ? "db_commit_async()" : "db_rollback_async()"))
        return WEFT_ERROR;
    weft_req_set_tx(r, NULL);
    int rc;
    if (tx->ptx != NULL && weft_req_cancelled(r)) {
        rollback_worker(r, tx); /* a withdrawn request commits nothing */
        rc = WEFT_CANCELLED;
    } else if (tx->ptx != NULL) {
        PGresult *res = NULL;
        rc = weft_dbpool_tx_query(tx->pool, tx->ptx, commit ? "COMMIT" : "ROLLBACK", 0, NULL, &res, NULL, NULL);
        rc = weft_tx_end_rc(rc, res, commit);
        PQclear(res);
        weft_dbpool_unhold(tx->pool, tx->ptx);
    } else if (tx->cancelled) {
        rc = WEFT_CANCELLED;
    } else {
        rc = tx_op_wait(r, tx, 0, commit);
    }
    tx_drop(tx);
    return rc;
}

int weft_db_tx_db_commit(weft_req *r) { return end_blocking(r, 1); }
int weft_db_tx_db_rollback(weft_req *r) { return end_blocking(r, 0); }

/* Reactive forms: the plugin's callback runs as a timed slice. */
typedef struct async_tx {
    weft_req *r;
    weft_tx *tx;
    weft_callback cb;
    void *arg;
    int begin;
} async_tx;

static void async_done(void *arg, int rc)
{
    async_tx *a = arg;
    weft_req *r = a->r;
    if (a->begin && rc == WEFT_OK && a->tx->cancelled)
        rc = WEFT_CANCELLED;
    if (a->begin && rc == WEFT_OK)
        weft_req_set_tx(r, a->tx);
    else if (a->begin)
        begin_failed(a->tx);
    else
        tx_drop(a->tx);
    if (rc == WEFT_TIMEOUT)
        rc = WEFT_UNAVAILABLE;
    weft_dispatch_callback(r, a->cb, a->arg, rc);
}

static async_tx *async_new(weft_req *r, weft_callback cb, void *arg)
{
    async_tx *a = weft_req_alloc(r, sizeof(*a));
    if (a != NULL)
        *a = (async_tx){.r = r, .cb = cb, .arg = arg};
    return a;
}

void weft_db_tx_db_begin_async(weft_req *r, int isolation, weft_callback cb, void *arg)
{
    if (weft_req_cancelled(r) || (weft_await_reactive(r) && no_database(r))) {
        cb(r, arg, weft_req_cancelled(r) ? WEFT_CANCELLED : WEFT_UNAVAILABLE);
        return;
    }
    async_tx *a = async_new(r, cb, arg);
    if (!weft_await_reactive(r) || a == NULL || (a->tx = tx_new(r, isolation)) == NULL) {
        if (!weft_await_reactive(r))
            weft_log_error("%s: db_begin_async() outside a reactive handler; use db_begin()", r->route->label);
        cb(r, arg, WEFT_ERROR);
        return;
    }
    a->begin = 1;
    tx_watch(a->tx);
    weft_tx_begin_loop(r, a->tx, async_done, a);
}

static void end_async(weft_req *r, int commit, weft_callback cb, void *arg)
{
    async_tx *a = async_new(r, cb, arg);
    if (weft_req_tx(r) == NULL || !weft_await_reactive(r) || a == NULL) {
        weft_log_error("%s: %s_async without an open transaction in a reactive handler", r->route->label,
                       commit ? "db_commit" : "db_rollback");
        cb(r, arg, WEFT_ERROR);
        return;
    }
    a->tx = weft_req_tx(r);
    weft_req_set_tx(r, NULL);
    if (a->tx->cancelled) {
        tx_drop(a->tx);
        cb(r, arg, WEFT_CANCELLED);
        return;
    }
    weft_tx_end_loop(a->tx, commit, async_done, a);
}

void weft_db_tx_db_commit_async(weft_req *r, weft_callback cb, void *arg) { end_async(r, 1, cb, arg); }
void weft_db_tx_db_rollback_async(weft_req *r, weft_callback cb, void *arg) { end_async(r, 0, cb, arg); }

/* ---- a handler that finished with its transaction still open ---- */

static void free_tx(void *arg, int rc)
{
    (void)rc;
    free(arg);
}

static void abandon(weft_req *r, void *arg)
{
    (void)arg;
    weft_tx *tx = weft_req_tx(r);
    if (tx == NULL)
        return;
    weft_req_set_tx(r, NULL);
    if (tx->cancelled) {
        tx_drop(tx); /* rolled back (and logged) when it was cancelled */
        return;
    }
    if (tx->ptx != NULL && weft_req_cancelled(r)) {
        rollback_worker(r, tx); /* on the worker that ran the handler */
        free(tx);
        return;
    }
    weft_log_error("%s: plugin bug: the handler finished with a transaction open; rolled back", r->route->label);
    if (tx->ptx != NULL) {
        /* On the worker that ran the handler: blocking is fine here. */
        PGresult *res = NULL;
        weft_dbpool_tx_query(tx->pool, tx->ptx, "ROLLBACK", 0, NULL, &res, NULL, NULL);
        PQclear(res);
        weft_dbpool_unhold(tx->pool, tx->ptx);
        free(tx);
        return;
    }
    /* On the loop: the rollback finishes after the response; the session
     * goes back to the set only then. */
    tx_unwatch(tx);
    tx->r = NULL;
    weft_tx_end_loop(tx, 0, free_tx, tx);
}
