/*
 * Blocking connections for pool workers. A worker borrows a connection, runs
 * one prepared statement, and returns it. Statements are sent asynchronously
 * and awaited with poll() against a deadline, so a database that stops
 * answering (not just one that closes the socket) costs a request at most
 * the statement timeout, never a worker forever.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "db/db_stmt.h"
#include "base/log.h"
#include "base/timer.h"
#include "request/cancel.h"

WEFT_ROUTE_SLOT(weft_dbpool_route_slot)

typedef struct pconn {
    PGconn *pg;
    weft_stmt_cache stmts;
    int piped; /* pipeline mode, behind a transaction pooler: a statement and its timeout share one Sync */
} pconn;

struct weft_dbpool {
    weft_db_cfg cfg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_cond_t tx_cv; /* a transaction slot was freed */
    size_t tx_held;
    pconn **idle;
    size_t n_idle;
    size_t open; /* idle + borrowed + being opened */
    uint64_t down_until_ns;
    uint64_t backoff_ms;
    int reported_down;
};

/* With pool_connections = 0 workers send single statements over the loops'
 * connections (db_host.c), and only transactions hold connections of this
 * pool: at most tx_connections of them. */
static size_t capacity(const weft_db_cfg *cfg)
{
    return (size_t)(cfg->pool_connections > 0 ? cfg->pool_connections : cfg->tx_connections);
}

weft_dbpool *weft_dbpool_new(const weft_db_cfg *cfg)
{
    weft_dbpool *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    weft_db_cfg_copy(&p->cfg, cfg);
    p->idle = calloc(capacity(cfg), sizeof(pconn *));
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &ca);
    pthread_cond_init(&p->tx_cv, &ca);
    pthread_condattr_destroy(&ca);
    return p;
}

static void pconn_close(pconn *c)
{
    weft_db_metric_open(-1);
    PQfinish(c->pg);
    weft_stmt_clear(&c->stmts);
    free(c);
}

void weft_dbpool_free(weft_dbpool *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->n_idle; i++)
        pconn_close(p->idle[i]);
    free(p->idle);
    weft_db_cfg_release(&p->cfg);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_cond_destroy(&p->tx_cv);
    free(p);
}

static void mark_down(weft_dbpool *p, const char *why)
{
    pthread_mutex_lock(&p->mu);
    p->backoff_ms = weft_db_backoff_next(p->backoff_ms);
    p->down_until_ns = weft_now_ns() + p->backoff_ms * 1000000u;
    int report = !p->reported_down;
    p->reported_down = 1;
    pthread_mutex_unlock(&p->mu);
    if (report)
        weft_log_error("database (pool connections): %s%s; failing requests fast with 503 and retrying with backoff",
                       why, weft_db_connect_hint(why));
}

static void mark_up(weft_dbpool *p)
{
    pthread_mutex_lock(&p->mu);
    int report = p->reported_down;
    if (report)
        weft_db_metric_reconnect();
    p->reported_down = 0;
    p->backoff_ms = 0;
    p->down_until_ns = 0;
    pthread_mutex_unlock(&p->mu);
    if (report)
        weft_log_info("database (pool connections): reachable again");
}

/* A connection counted as open that did not come to be: free its slot. */
static void unopened(weft_dbpool *p, PGconn *pg)
{
    PQfinish(pg);
    pthread_mutex_lock(&p->mu);
    p->open--;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* ---- waiting for a connection or a transaction slot ---- */

/* A worker waiting in this pool for request `r` (NULL: not cancellable). */
typedef struct pool_waiter {
    weft_dbpool *p;
    weft_req *r;
    int blocked;
} pool_waiter;

/* Loop thread, under the request's cancel mutex: every waiter looks again
 * and the cancelled one leaves. */
static void wake_waiters(void *arg)
{
    weft_dbpool *p = arg;
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv);
    pthread_cond_broadcast(&p->tx_cv);
    pthread_mutex_unlock(&p->mu);
}

/* p->mu held. Waits once on `cv`: 0 to look again, or the rc to give up
 * with (WEFT_UNAVAILABLE at the deadline, WEFT_CANCELLED once withdrawn). */
static int wait_turn(pool_waiter *w, pthread_cond_t *cv, uint64_t deadline_ns)
{
    if (w->r != NULL && !w->blocked) {
        /* Registered outside p->mu: the loop takes the cancel mutex first,
         * then p->mu (wake_waiters). */
        pthread_mutex_unlock(&w->p->mu);
        int rc = weft_req_worker_block(w->r, wake_waiters, w->p);
        pthread_mutex_lock(&w->p->mu);
        if (rc != WEFT_OK)
            return WEFT_CANCELLED;
        w->blocked = 1;
        weft_db_metric_waiting(1);
        return 0; /* the pool may have changed meanwhile */
    }
    struct timespec ts = {(time_t)(deadline_ns / 1000000000u), (long)(deadline_ns % 1000000000u)};
    if (pthread_cond_timedwait(cv, &w->p->mu, &ts) == ETIMEDOUT)
        return WEFT_UNAVAILABLE;
    return 0;
}

/* p->mu held: a withdrawn request takes nothing more. It may have been
 * handed a signal meant for the next waiter: pass it on. */
static int withdrawn(pool_waiter *w)
{
    if (w->r == NULL || !weft_req_cancelled(w->r))
        return 0;
    pthread_cond_signal(&w->p->cv);
    pthread_cond_signal(&w->p->tx_cv);
    return 1;
}

/* After the wait, p->mu not held. */
static void wait_over(pool_waiter *w)
{
    if (w->blocked) {
        weft_req_worker_unblock(w->r);
        weft_db_metric_waiting(-1);
        w->blocked = 0;
    }
}

static int collect(PGconn *pg, uint64_t deadline_ns, PGresult **out);

/* A new session, set up for the pooler in front (database.pooler); NULL
 * after marking the pool down. */
static PGconn *open_conn(weft_dbpool *p, uint64_t deadline_ns)
{
    weft_db_params params;
    weft_db_params_init(&params, &p->cfg, NULL);
    PGconn *pg = PQconnectdbParams(params.keys, params.values, 1);
    char why[512] = "";
    char sql_buf[64];
    const char *sql = weft_db_session_sql(&p->cfg, sql_buf, sizeof(sql_buf));
    PGresult *res = NULL;
    if (PQstatus(pg) != CONNECTION_OK)
        snprintf(why, sizeof(why), "cannot connect: %s", PQerrorMessage(pg));
    else if (sql != NULL && (!PQsendQueryParams(pg, sql, 0, NULL, NULL, NULL, NULL, 0) ||
                             collect(pg, deadline_ns, &res) != 0 || PQresultStatus(res) != PGRES_COMMAND_OK))
        snprintf(why, sizeof(why), "%s: %s", sql, res != NULL ? PQresultErrorMessage(res) : PQerrorMessage(pg));
    else if (p->cfg.pooler == WEFT_POOLER_TRANSACTION && PQenterPipelineMode(pg) != 1)
        snprintf(why, sizeof(why), "pipeline mode: %s", PQerrorMessage(pg));
    PQclear(res);
    if (why[0] == '\0')
        return pg;
    why[strcspn(why, "\n")] = '\0';
    PQfinish(pg);
    mark_down(p, why);
    return NULL;
}

/* Returns a connection, or NULL with *rc: WEFT_UNAVAILABLE (database down,
 * none freed before the deadline) or WEFT_CANCELLED (`r` was withdrawn while
 * it waited). */
static pconn *borrow(weft_dbpool *p, weft_req *r, uint64_t deadline_ns, int *rc)
{
    pool_waiter w = {p, r, 0};
    pconn *c = NULL;
    int fail = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (withdrawn(&w)) {
            fail = WEFT_CANCELLED;
            break;
        }
        if (p->n_idle > 0) {
            c = p->idle[--p->n_idle];
            break;
        }
        if (p->down_until_ns > weft_now_ns()) {
            fail = WEFT_UNAVAILABLE; /* fail fast while the database is known to be down */
            break;
        }
        if (p->open < capacity(&p->cfg)) {
            p->open++;
            break;
        }
        if ((fail = wait_turn(&w, &p->cv, deadline_ns)) != 0)
            break;
    }
    pthread_mutex_unlock(&p->mu);
    wait_over(&w);
    if (fail != 0) {
        *rc = fail;
        return NULL;
    }
    if (c != NULL) {
        weft_db_metric_busy(1);
        return c;
    }

    PGconn *pg = open_conn(p, deadline_ns);
    if (pg == NULL) {
        unopened(p, NULL);
        *rc = WEFT_UNAVAILABLE;
        return NULL;
    }
    mark_up(p);
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        unopened(p, pg);
        *rc = WEFT_UNAVAILABLE; /* out of memory: 503 */
        return NULL;
    }
    c->pg = pg;
    c->piped = p->cfg.pooler == WEFT_POOLER_TRANSACTION;
    weft_db_metric_open(1);
    weft_db_metric_busy(1);
    return c;
}

static void give_back(weft_dbpool *p, pconn *c, int broken)
{
    weft_db_metric_busy(-1);
    pthread_mutex_lock(&p->mu);
    if (broken) {
        p->open--;
    } else {
        p->idle[p->n_idle++] = c;
    }
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    if (broken)
        pconn_close(c);
}

/* Waits for `events` on the connection's socket until the deadline. */
static int wait_socket(PGconn *pg, short events, uint64_t deadline_ns)
{
    uint64_t now = weft_now_ns();
    if (now >= deadline_ns)
        return 0;
    struct pollfd pfd = {PQsocket(pg), events, 0};
    int ms = (int)((deadline_ns - now) / 1000000u) + 1;
    int n;
    while ((n = poll(&pfd, 1, ms)) < 0 && errno == EINTR)
        ;
    return n > 0;
}

/* Writes what libpq buffered, until the deadline: 0, or -1. */
static int flush_all(PGconn *pg, uint64_t deadline_ns)
{
    int f;
    while ((f = PQflush(pg)) == 1)
        if (!wait_socket(pg, POLLOUT, deadline_ns))
            return -1;
    return f < 0 ? -1 : 0;
}

/* Collects the results of one sent command; the first is kept. Returns 0, or
 * -1 when the deadline passed or the connection failed. */
static int collect(PGconn *pg, uint64_t deadline_ns, PGresult **out)
{
    if (flush_all(pg, deadline_ns) != 0)
        return -1;
    *out = NULL;
    for (;;) {
        while (PQisBusy(pg)) {
            if (!wait_socket(pg, POLLIN, deadline_ns) || !PQconsumeInput(pg))
                return -1;
        }
        PGresult *r = PQgetResult(pg);
        if (r == NULL)
            return 0;
        if (*out == NULL)
            *out = r;
        else
            PQclear(r);
    }
}

/* Behind a transaction pooler: the statement and the timeout's under one
 * Sync, pipelined (db_stmt.c). 0 with *res, -1 when the connection failed
 * or the deadline passed. */
static int run_piped(weft_dbpool *p, pconn *c, weft_dbstmt *st, uint64_t deadline_ns, PGresult **res)
{
    char ms[16];
    snprintf(ms, sizeof(ms), "%d", p->cfg.statement_timeout_ms);
    if (weft_dbstmt_send(st, c->pg, &c->stmts, p->cfg.unnamed, ms) != 0 || PQpipelineSync(c->pg) != 1 ||
        flush_all(c->pg, deadline_ns) != 0)
        return -1;
    int synced = 0;
    while (!synced) {
        while (PQisBusy(c->pg))
            if (!wait_socket(c->pg, POLLIN, deadline_ns) || !PQconsumeInput(c->pg)) {
                weft_dbstmt_clear(st);
                return -1;
            }
        synced = weft_dbstmt_feed(st, PQgetResult(c->pg));
    }
    int rc;
    *res = weft_dbstmt_take(st, &c->stmts, &p->cfg, &rc);
    weft_dbstmt_clear(st);
    return 0;
}

/* Sends the statement: pipelined (a transaction pooler), unnamed, or
 * prepared first in a round trip of its own. 0 when the connection failed;
 * a failed Parse or an early cancel sets *early (the rc to return). */
static int send_on(weft_dbpool *p, pconn *c, const char *sql, int n, const char *const *params, uint64_t deadline,
                   PGresult **res, int *early, int (*busy)(void *ctx, PGconn *pg), void *ctx)
{
    *early = 0;
    if (busy != NULL && busy(ctx, c->pg) != 0) {
        *early = WEFT_CANCELLED; /* withdrawn before it was sent */
        return 1;
    }
    if (p->cfg.unnamed)
        return PQsendQueryParams(c->pg, sql, n, NULL, params, NULL, NULL, 0);
    char name[32];
    int idx = weft_stmt_find(&c->stmts, sql);
    if (idx < 0) {
        if ((idx = weft_stmt_add(&c->stmts, sql)) < 0) {
            *early = WEFT_UNAVAILABLE; /* out of memory: 503; the caller gives the connection back */
            return 1;
        }
        snprintf(name, sizeof(name), "weft_%d", idx);
        PGresult *prep = NULL;
        if (!PQsendPrepare(c->pg, name, sql, n, NULL) || collect(c->pg, deadline, &prep) != 0)
            return 0;
        if (PQresultStatus(prep) != PGRES_COMMAND_OK) {
            weft_stmt_forget(&c->stmts, idx);
            *res = prep;
            *early = weft_db_result_rc(prep);
            return PQstatus(c->pg) == CONNECTION_OK;
        }
        PQclear(prep);
    }
    snprintf(name, sizeof(name), "weft_%d", idx);
    return PQsendQueryPrepared(c->pg, name, n, params, NULL, NULL, 0);
}

/* Runs one statement on a borrowed connection. Returns the rc; *broken is set
 * when the connection must not be reused. `timed` (WEFT_DBQ_TIMED, or
 * _TIMED_BEGIN for BEGIN): a transaction of its own, which carries the
 * timeout behind a transaction pooler. */
static int run_on(weft_dbpool *p, pconn *c, const char *sql, int n, const char *const *params, unsigned timed,
                  PGresult **res, int *broken, int (*busy)(void *ctx, PGconn *pg), void *ctx)
{
    *res = NULL;
    *broken = 0;
    /* A little past the server's own statement_timeout, which normally fires first. */
    uint64_t start = weft_now_ns();
    uint64_t deadline = start + ((uint64_t)p->cfg.statement_timeout_ms + 1000) * 1000000u;
    int ok, early = 0;
    weft_dbstmt st = {.sql = sql, .nparams = n, .params = params, .flags = timed};
    if (c->piped && busy != NULL && busy(ctx, c->pg) != 0)
        return WEFT_CANCELLED; /* withdrawn before it was sent */
    if (c->piped) {
        ok = run_piped(p, c, &st, deadline, res) == 0;
    } else if ((ok = send_on(p, c, sql, n, params, deadline, res, &early, busy, ctx)) && early != 0) {
        if (early != WEFT_CANCELLED && busy != NULL)
            busy(ctx, NULL);
        *broken = PQstatus(c->pg) != CONNECTION_OK;
        return early;
    } else if (ok) {
        ok = collect(c->pg, deadline, res) == 0;
        if (ok)
            weft_dbstmt_forget(&c->stmts, &p->cfg, sql, 0, 0, *res);
    }
    if (busy != NULL)
        busy(ctx, NULL);
    if (!ok || PQstatus(c->pg) != CONNECTION_OK) {
        int timed_out = weft_now_ns() >= deadline;
        char why[512];
        snprintf(why, sizeof(why), "%s", timed_out ? "statement timed out on the client side" : PQerrorMessage(c->pg));
        why[strcspn(why, "\n")] = '\0';
        PQclear(*res);
        *res = NULL;
        /* The connection is in an unknown state: close it, never reuse it. */
        *broken = 1;
        if (!timed_out)
            mark_down(p, why);
        return timed_out ? WEFT_TIMEOUT : WEFT_UNAVAILABLE;
    }
    int rc = weft_db_result_rc(*res);
    weft_db_metric_query(weft_now_ns() - start);
    if (rc == WEFT_UNAVAILABLE) {
        *broken = 1;
        mark_down(p, "the database is shutting down or restarting");
    }
    return rc;
}

int weft_dbpool_query(weft_dbpool *p, weft_req *r, const char *sql, int n, const char *const *params, PGresult **res,
                      int (*busy)(void *ctx, PGconn *pg), void *ctx)
{
    *res = NULL;
    uint64_t deadline = weft_now_ns() + ((uint64_t)p->cfg.statement_timeout_ms + 1000) * 1000000u;
    int rc = WEFT_UNAVAILABLE, broken;
    pconn *c = borrow(p, r, deadline, &rc);
    if (c == NULL)
        return rc;
    rc = run_on(p, c, sql, n, params, WEFT_DBQ_TIMED, res, &broken, busy, ctx);
    give_back(p, c, broken);
    return rc;
}

/* ---- connections held by transactions ---- */

struct weft_dbpool_tx {
    pconn *c;
    int broken;
};

weft_dbpool_tx *weft_dbpool_hold(weft_dbpool *p, weft_req *r, int *rc)
{
    uint64_t deadline = weft_now_ns() + (uint64_t)p->cfg.tx_wait_ms * 1000000u;
    weft_dbpool_tx *t = malloc(sizeof(*t));
    *rc = WEFT_UNAVAILABLE;
    if (t == NULL)
        return NULL;
    /* The bound on held connections is checked first, so transactions can
     * never take every connection from single statements. */
    pool_waiter w = {p, r, 0};
    int why = 0;
    pthread_mutex_lock(&p->mu);
    while (why == 0 && p->tx_held >= (size_t)p->cfg.tx_connections)
        why = withdrawn(&w) ? WEFT_CANCELLED : wait_turn(&w, &p->tx_cv, deadline);
    if (why == 0 && withdrawn(&w))
        why = WEFT_CANCELLED;
    if (why == 0)
        p->tx_held++;
    pthread_mutex_unlock(&p->mu);
    wait_over(&w);
    if (why != 0) {
        *rc = why;
        free(t);
        return NULL;
    }
    if ((t->c = borrow(p, r, deadline, rc)) == NULL) {
        weft_dbpool_unhold(p, t);
        return NULL;
    }
    weft_db_metric_tx(1);
    t->broken = 0;
    return t;
}

int weft_dbpool_tx_query(weft_dbpool *p, weft_dbpool_tx *t, const char *sql, int n, const char *const *params,
                         PGresult **res, int (*busy)(void *ctx, PGconn *pg), void *ctx)
{
    *res = NULL;
    /* A transaction lives and dies with its session: never reconnect inside it. */
    if (t->broken)
        return WEFT_UNAVAILABLE;
    return run_on(p, t->c, sql, n, params, 0, res, &t->broken, busy, ctx);
}

int weft_dbpool_tx_begin(weft_dbpool *p, weft_dbpool_tx *t, const char *sql, PGresult **res)
{
    *res = NULL;
    if (t->broken)
        return WEFT_UNAVAILABLE;
    return run_on(p, t->c, sql, 0, NULL, WEFT_DBQ_TIMED_BEGIN, res, &t->broken, NULL, NULL);
}

void weft_dbpool_unhold(weft_dbpool *p, weft_dbpool_tx *t)
{
    if (t->c != NULL) {
        /* A connection still inside a transaction (nothing ended it) is not reusable. */
        int broken = t->broken || PQtransactionStatus(t->c->pg) != PQTRANS_IDLE;
        give_back(p, t->c, broken);
        weft_db_metric_tx(-1);
    }
    pthread_mutex_lock(&p->mu);
    p->tx_held--;
    pthread_cond_signal(&p->tx_cv);
    pthread_mutex_unlock(&p->mu);
    free(t);
}
