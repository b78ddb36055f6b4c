/* The database entries of the host table: choose the connection set that
 * matches the request's execution context. */
#include <stdlib.h>

#include "dispatch/coro.h"
#include "db/db.h"
#include "db/db_tx.h"
#include "dispatch/dispatch.h"
#include "request/route.h"
#include "base/log.h"
#include "core/loop.h"
#include "request/request.h"

static weft_dbloop *loop_db(weft_req *r) { return weft_dbloop_for(r->loop, r->route->db_cfg); }

typedef struct co_wait {
    weft_req *r;
    int rc;
    PGresult *res;
    int done, suspended;
} co_wait;

static void on_co_result(void *arg, int rc, PGresult *res)
{
    co_wait *w = arg;
    w->rc = rc;
    w->res = res;
    w->done = 1;
    if (w->suspended)
        weft_dispatch_resume(w->r);
}

int weft_db_host_db_query(weft_req *r, const char *sql, int n, const char *const *params, weft_result **res)
{
    *res = NULL;
    switch (r->exec) {
    case WEFT_EXEC_WORKER: {
        PGresult *pg = NULL;
        int rc = r->tx != NULL ? weft_tx_query(r, sql, n, params, &pg)
                               : weft_dbpool_query(r->route->dbpool, sql, n, params, &pg);
        *res = (weft_result *)pg;
        return rc;
    }
    case WEFT_EXEC_COROUTINE: {
        weft_dbloop *db = r->tx != NULL ? NULL : loop_db(r);
        if (db == NULL && r->tx == NULL)
            return WEFT_UNAVAILABLE;
        /* `w` lives on the coroutine's stack, which stays put while it waits. */
        co_wait w = {.r = r};
        if (r->tx != NULL)
            weft_tx_query_loop(r, sql, n, params, on_co_result, &w);
        else
            weft_dbloop_query(db, sql, n, params, on_co_result, &w);
        if (!w.done) {
            w.suspended = 1;
            weft_coro_yield();
        }
        *res = (weft_result *)w.res;
        return w.rc;
    }
    case WEFT_EXEC_LOOP:
        break;
    }
    weft_log_error("%s: db_query() called from a reactive handler; use db_query_async()", r->route->label);
    return WEFT_ERROR;
}

typedef struct async_wait {
    weft_req *r;
    weft_db_callback cb;
    void *arg;
    int rc;
    PGresult *res;
} async_wait;

static void run_async_cb(void *ctx)
{
    async_wait *a = ctx;
    a->cb(a->r, a->arg, a->rc, (weft_result *)a->res);
}

static void on_async_result(void *arg, int rc, PGresult *res)
{
    async_wait *a = arg;
    a->rc = rc;
    a->res = res;
    weft_dispatch_run(a->r, run_async_cb, a);
}

void weft_db_host_db_query_async(weft_req *r, const char *sql, int n, const char *const *params, weft_db_callback cb,
                              void *arg)
{
    async_wait *a = weft_req_alloc(r, sizeof(*a));
    weft_dbloop *db = a != NULL && r->tx == NULL ? loop_db(r) : NULL;
    if (a == NULL || (db == NULL && r->tx == NULL)) {
        cb(r, arg, WEFT_UNAVAILABLE, NULL);
        return;
    }
    *a = (async_wait){.r = r, .cb = cb, .arg = arg};
    if (r->tx != NULL)
        weft_tx_query_loop(r, sql, n, params, on_async_result, a);
    else
        weft_dbloop_query(db, sql, n, params, on_async_result, a);
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

void weft_db_host_result_free(weft_result *res) { PQclear((PGresult *)res); }
