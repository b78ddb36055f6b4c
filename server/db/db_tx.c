/*
 * Transactions. A transaction needs one database session to itself from
 * BEGIN to COMMIT, so it can never ride on the pipelined loop connections
 * (db_loop.c), where the statements of many requests are interleaved.
 *
 *   pool workers      hold one of the blocking pool connections (db_pool.c);
 *   coroutine/reactive take a single-connection weft_dbloop from this loop's
 *                     transaction set, created on demand, kept idle after
 *                     COMMIT/ROLLBACK for the next transaction.
 *
 * Either way at most database.tx_connections are held at once (per loop,
 * and for the pool workers); db_begin waits up to database.tx_wait_ms for
 * one, in FIFO order, and then fails with WEFT_UNAVAILABLE (503). Nothing on
 * the loop ever blocks: loop waiters are queued with a timer.
 *
 * A session that broke inside a transaction reconnects by itself (db_loop),
 * and a statement sent on the new session would run outside the
 * transaction: each transaction remembers its session's epoch and fails
 * every later statement once it changed.
 */
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "db/db_tx.h"
#include "dispatch/coro.h"
#include "dispatch/dispatch.h"
#include "request/route.h"
#include "base/log.h"
#include "core/loop.h"

typedef void (*tx_done_fn)(void *arg, int rc);
typedef struct weft_tx weft_tx;

struct weft_tx {
    weft_req *r; /* NULL once the request let go of it (abandoned) */
    int isolation;
    int broken;
    /* pool workers */
    weft_dbpool *pool;
    weft_dbpool_tx *ptx;
    /* loops */
    weft_txset *set;
    weft_dbloop *d;
    uint64_t epoch;
    weft_tx *next; /* in the set's held or wait list */
    weft_timer wait_timer;
    tx_done_fn fn; /* the pending begin/end */
    void *fn_arg;
    int ending_commit;
};

struct weft_txset {
    weft_loop *loop;
    weft_db_cfg cfg; /* one connection per weft_dbloop */
    weft_dbloop **idle;
    size_t n_idle;
    size_t held;
    weft_tx *wait_head, *wait_tail;
    weft_dbloop **trash; /* sessions of unknown state, closed from a timer */
    size_t n_trash, cap_trash;
    weft_timer reap;
};

static const char *const begin_sql[] = {"BEGIN ISOLATION LEVEL READ COMMITTED",
                                        "BEGIN ISOLATION LEVEL REPEATABLE READ",
                                        "BEGIN ISOLATION LEVEL SERIALIZABLE"};

/* COMMIT of a transaction that had failed answers "ROLLBACK" without error. */
static int end_rc(int rc, PGresult *res, int commit)
{
    if (rc == WEFT_OK && commit && strcmp(PQcmdStatus(res), "COMMIT") != 0)
        return WEFT_ERROR;
    return rc;
}

/* ---- the loop's transaction set ---- */

static void txset_free(weft_txset *s);

static void empty_trash(weft_txset *s)
{
    while (s->n_trash > 0)
        weft_dbloop_free(s->trash[--s->n_trash]);
}

/* Sessions (and a retired set) are freed from a timer, never inside one of
 * a session's own callbacks, which is where they are given up. */
static void on_reap(weft_timer *t)
{
    weft_txset *s = H2O_STRUCT_FROM_MEMBER(weft_txset, reap, t);
    empty_trash(s);
    if (s->loop->txset != s && s->held == 0 && s->wait_head == NULL)
        txset_free(s);
}

static void schedule_reap(weft_txset *s)
{
    weft_timers_cancel(s->loop->timers, &s->reap);
    weft_timers_add(s->loop->timers, &s->reap, 0, on_reap);
}

static void trash(weft_txset *s, weft_dbloop *d)
{
    /* Never freed here: we may be inside one of d's own callbacks. */
    if (s->n_trash == s->cap_trash) {
        size_t cap = s->cap_trash ? s->cap_trash * 2 : 8;
        weft_dbloop **t = realloc(s->trash, cap * sizeof(*t));
        if (t == NULL) {
            weft_log_error("database: out of memory retiring a transaction connection; it stays open");
            return;
        }
        s->trash = t;
        s->cap_trash = cap;
    }
    s->trash[s->n_trash++] = d;
    schedule_reap(s);
}

static weft_txset *txset_new(weft_loop *L, const weft_db_cfg *cfg)
{
    weft_txset *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->idle = calloc((size_t)cfg->tx_connections, sizeof(*s->idle));
    s->cfg = *cfg;
    s->cfg.conninfo = strdup(cfg->conninfo);
    if (s->idle == NULL || s->cfg.conninfo == NULL) {
        free(s->idle);
        free(s->cfg.conninfo);
        free(s);
        return NULL;
    }
    s->cfg.loop_connections = 1;
    s->loop = L;
    return s;
}

static void txset_free(weft_txset *s)
{
    empty_trash(s);
    weft_timers_cancel(s->loop->timers, &s->reap);
    for (size_t i = 0; i < s->n_idle; i++)
        weft_dbloop_free(s->idle[i]);
    free(s->idle);
    free(s->trash);
    free(s->cfg.conninfo);
    free(s);
}

/* The set for the route's settings. A reload with new settings retires the
 * old set: its idle sessions close, and it goes once nothing is held. */
static weft_txset *txset_for(weft_req *r)
{
    weft_loop *L = r->loop;
    weft_db_cfg want = *r->route->db_cfg;
    want.loop_connections = 1; /* as the set keeps it */
    const weft_db_cfg *cfg = &want;
    weft_txset *s = L->txset;
    if (s != NULL && !weft_db_cfg_equal(&s->cfg, cfg)) {
        L->txset = NULL;
        /* Its idle sessions close now; the set goes once nothing is held. */
        for (size_t i = 0; i < s->n_idle; i++)
            trash(s, s->idle[i]);
        s->n_idle = 0;
        schedule_reap(s);
        s = NULL;
    }
    if (s == NULL)
        s = L->txset = txset_new(L, cfg);
    return s;
}

static void txset_teardown(weft_loop *L) { weft_txset_close(L); }

static const weft_loop_hook txset_hook = {.teardown = txset_teardown};

void weft_db_tx_attach(void) { weft_loop_add_hook(&txset_hook); }

void weft_txset_close(weft_loop *L)
{
    weft_txset *s = L->txset;
    if (s == NULL)
        return;
    /* Rollbacks of abandoned transactions may still be on their way back. */
    for (int i = 0; i < 300 && s->held > 0; i++)
        h2o_evloop_run(L->evloop, 10);
    if (s->held > 0)
        weft_log_warn("database: %zu transaction connection(s) still busy at shutdown", s->held);
    else
        txset_free(s);
    L->txset = NULL;
}

static void finish_fn(weft_tx *tx, int rc)
{
    tx_done_fn fn = tx->fn;
    tx->fn = NULL;
    if (fn != NULL)
        fn(tx->fn_arg, rc);
}

static void on_begin_result(void *arg, int rc, PGresult *res)
{
    weft_tx *tx = arg;
    PQclear(res);
    if (rc == WEFT_OK)
        tx->epoch = weft_dbloop_epoch(tx->d);
    else
        tx->broken = 1;
    finish_fn(tx, rc);
}

static void send_begin(weft_tx *tx)
{
    weft_dbloop_query(tx->d, begin_sql[tx->isolation], 0, NULL, on_begin_result, tx);
}

static void on_wait_timeout(weft_timer *t)
{
    weft_tx *tx = H2O_STRUCT_FROM_MEMBER(weft_tx, wait_timer, t);
    weft_txset *s = tx->set;
    weft_tx **pp = &s->wait_head, *prev = NULL;
    while (*pp != tx) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    *pp = tx->next;
    if (s->wait_tail == tx)
        s->wait_tail = prev;
    tx->set = NULL;
    if (s->loop->txset != s)
        schedule_reap(s);
    finish_fn(tx, WEFT_UNAVAILABLE);
}

/* Gives a session back: to the next waiter, the idle list, or the trash. */
static void release_loop(weft_txset *s, weft_dbloop *d, int reusable)
{
    s->held--;
    if (!reusable) {
        trash(s, d);
        d = NULL;
    }
    if (s->wait_head != NULL) {
        weft_tx *w = s->wait_head;
        s->wait_head = w->next;
        if (s->wait_head == NULL)
            s->wait_tail = NULL;
        weft_timers_cancel(s->loop->timers, &w->wait_timer);
        s->held++;
        w->d = d != NULL ? d : weft_dbloop_new(s->loop, &s->cfg);
        if (w->d == NULL) {
            s->held--;
            finish_fn(w, WEFT_UNAVAILABLE);
            return;
        }
        send_begin(w);
        return;
    }
    if (d != NULL && s->loop->txset == s && s->n_idle < (size_t)s->cfg.tx_connections)
        s->idle[s->n_idle++] = d;
    else if (d != NULL)
        trash(s, d);
    if (s->loop->txset != s)
        schedule_reap(s); /* a retired set goes once nothing is held */
}

static void begin_loop(weft_req *r, weft_tx *tx, tx_done_fn fn, void *arg)
{
    tx->fn = fn;
    tx->fn_arg = arg;
    weft_txset *s = txset_for(r);
    if (s == NULL) {
        finish_fn(tx, WEFT_UNAVAILABLE);
        return;
    }
    tx->set = s;
    /* An idle session that is up first; a down one fails BEGIN fast below. */
    for (size_t i = s->n_idle; i-- > 0;) {
        if (weft_dbloop_ready(s->idle[i]) || i == 0) {
            tx->d = s->idle[i];
            s->idle[i] = s->idle[--s->n_idle];
            break;
        }
    }
    if (tx->d == NULL && s->held + s->n_idle < (size_t)s->cfg.tx_connections &&
        (tx->d = weft_dbloop_new(s->loop, &s->cfg)) == NULL) {
        finish_fn(tx, WEFT_UNAVAILABLE);
        return;
    }
    if (tx->d != NULL) {
        s->held++;
        send_begin(tx);
        return;
    }
    if (s->cfg.tx_wait_ms == 0) {
        tx->set = NULL;
        finish_fn(tx, WEFT_UNAVAILABLE);
        return;
    }
    tx->next = NULL;
    if (s->wait_tail != NULL)
        s->wait_tail->next = tx;
    else
        s->wait_head = tx;
    s->wait_tail = tx;
    weft_timers_add(s->loop->timers, &tx->wait_timer, (uint64_t)s->cfg.tx_wait_ms, on_wait_timeout);
}

static void on_end_result(void *arg, int rc, PGresult *res)
{
    weft_tx *tx = arg;
    rc = end_rc(rc, res, tx->ending_commit);
    PQclear(res);
    weft_dbloop *d = tx->d;
    tx->d = NULL;
    release_loop(tx->set, d, rc == WEFT_OK && !tx->broken);
    tx->set = NULL;
    finish_fn(tx, tx->broken && rc == WEFT_OK ? WEFT_UNAVAILABLE : rc);
}

static void end_loop(weft_tx *tx, int commit, tx_done_fn fn, void *arg)
{
    tx->fn = fn;
    tx->fn_arg = arg;
    tx->ending_commit = commit;
    if (tx->d == NULL) {
        finish_fn(tx, WEFT_UNAVAILABLE);
        return;
    }
    if (tx->broken || weft_dbloop_epoch(tx->d) != tx->epoch || !weft_dbloop_ready(tx->d)) {
        /* The session (and with it the transaction) is gone: nothing to end. */
        tx->broken = 1;
        on_end_result(tx, commit ? WEFT_UNAVAILABLE : WEFT_OK, NULL);
        return;
    }
    weft_dbloop_query(tx->d, commit ? "COMMIT" : "ROLLBACK", 0, NULL, on_end_result, tx);
}

/* ---- statements inside a transaction ---- */

int weft_tx_query(weft_req *r, const char *sql, int n, const char *const *params, PGresult **res)
{
    weft_tx *tx = r->tx;
    *res = NULL;
    int rc = weft_dbpool_tx_query(tx->pool, tx->ptx, sql, n, params, res);
    if (rc == WEFT_UNAVAILABLE || rc == WEFT_TIMEOUT)
        tx->broken = 1;
    return rc;
}

void weft_tx_query_loop(weft_req *r, const char *sql, int n, const char *const *params, weft_dbloop_cb cb, void *arg)
{
    weft_tx *tx = r->tx;
    if (tx->broken || tx->d == NULL || weft_dbloop_epoch(tx->d) != tx->epoch || !weft_dbloop_ready(tx->d)) {
        tx->broken = 1;
        cb(arg, WEFT_UNAVAILABLE, NULL);
        return;
    }
    weft_dbloop_query(tx->d, sql, n, params, cb, arg);
}

int weft_tx_on_loop(const weft_req *r) { return r->tx != NULL && r->tx->d != NULL; }

/* ---- begin / end for every context ---- */

typedef struct co_wait {
    weft_req *r;
    int rc, done, suspended;
} co_wait;

static void co_done(void *arg, int rc)
{
    co_wait *w = arg;
    w->rc = rc;
    w->done = 1;
    if (w->suspended)
        weft_dispatch_resume(w->r);
}

static int co_wait_for(co_wait *w)
{
    if (!w->done) {
        w->suspended = 1;
        weft_coro_yield();
    }
    return w->rc;
}

static void abandon(weft_req *r, void *arg);

static weft_tx *tx_new(weft_req *r, int isolation)
{
    if (isolation < WEFT_READ_COMMITTED || isolation > WEFT_SERIALIZABLE) {
        weft_log_error("%s: db_begin: unknown isolation level %d", r->route->label, isolation);
        return NULL;
    }
    if (r->tx != NULL) {
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

int weft_db_tx_db_begin(weft_req *r, int isolation)
{
    if (r->exec == WEFT_EXEC_LOOP) {
        weft_log_error("%s: db_begin() called from a reactive handler; use db_begin_async()", r->route->label);
        return WEFT_ERROR;
    }
    weft_tx *tx = tx_new(r, isolation);
    if (tx == NULL)
        return WEFT_ERROR;
    int rc;
    if (r->exec == WEFT_EXEC_WORKER) {
        tx->pool = r->route->dbpool;
        tx->ptx = weft_dbpool_hold(tx->pool, &rc);
        if (tx->ptx != NULL) {
            PGresult *res = NULL;
            rc = weft_dbpool_tx_query(tx->pool, tx->ptx, begin_sql[isolation], 0, NULL, &res);
            PQclear(res);
            if (rc != WEFT_OK) {
                weft_dbpool_unhold(tx->pool, tx->ptx);
                tx->ptx = NULL;
            }
        }
    } else {
        co_wait w = {.r = r};
        begin_loop(r, tx, co_done, &w);
        rc = co_wait_for(&w);
        if (rc != WEFT_OK && tx->d != NULL) {
            release_loop(tx->set, tx->d, 0);
            tx->d = NULL;
        }
    }
    if (rc != WEFT_OK) {
        free(tx);
        return rc == WEFT_TIMEOUT ? WEFT_UNAVAILABLE : rc;
    }
    r->tx = tx;
    return WEFT_OK;
}

static int end_blocking(weft_req *r, int commit)
{
    weft_tx *tx = r->tx;
    if (tx == NULL) {
        weft_log_error("%s: %s without db_begin", r->route->label, commit ? "db_commit" : "db_rollback");
        return WEFT_ERROR;
    }
    if (r->exec == WEFT_EXEC_LOOP) {
        weft_log_error("%s: blocking %s from a reactive handler; use the _async form", r->route->label,
                       commit ? "db_commit" : "db_rollback");
        return WEFT_ERROR;
    }
    r->tx = NULL;
    int rc;
    if (tx->ptx != NULL) {
        PGresult *res = NULL;
        rc = weft_dbpool_tx_query(tx->pool, tx->ptx, commit ? "COMMIT" : "ROLLBACK", 0, NULL, &res);
        rc = end_rc(rc, res, commit);
        PQclear(res);
        weft_dbpool_unhold(tx->pool, tx->ptx);
    } else {
        co_wait w = {.r = r};
        end_loop(tx, commit, co_done, &w);
        rc = co_wait_for(&w);
    }
    free(tx);
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
    if (a->begin) {
        if (rc == WEFT_OK) {
            r->tx = a->tx;
        } else {
            if (a->tx->d != NULL)
                release_loop(a->tx->set, a->tx->d, 0);
            free(a->tx);
        }
    } else {
        free(a->tx);
    }
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
    async_tx *a = async_new(r, cb, arg);
    if (r->exec != WEFT_EXEC_LOOP || a == NULL || (a->tx = tx_new(r, isolation)) == NULL) {
        if (r->exec != WEFT_EXEC_LOOP)
            weft_log_error("%s: db_begin_async() outside a reactive handler; use db_begin()", r->route->label);
        cb(r, arg, WEFT_ERROR);
        return;
    }
    a->begin = 1;
    begin_loop(r, a->tx, async_done, a);
}

static void end_async(weft_req *r, int commit, weft_callback cb, void *arg)
{
    async_tx *a = async_new(r, cb, arg);
    if (r->tx == NULL || r->exec != WEFT_EXEC_LOOP || a == NULL) {
        weft_log_error("%s: %s_async without an open transaction in a reactive handler", r->route->label,
                       commit ? "db_commit" : "db_rollback");
        cb(r, arg, WEFT_ERROR);
        return;
    }
    a->tx = r->tx;
    r->tx = NULL;
    end_loop(a->tx, commit, async_done, a);
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
    weft_tx *tx = r->tx;
    if (tx == NULL)
        return;
    r->tx = NULL;
    tx->r = NULL;
    weft_log_error("%s: plugin bug: the handler finished with a transaction open; rolled back", r->route->label);
    if (tx->ptx != NULL) {
        /* On the worker that ran the handler: blocking is fine here. */
        PGresult *res = NULL;
        weft_dbpool_tx_query(tx->pool, tx->ptx, "ROLLBACK", 0, NULL, &res);
        PQclear(res);
        weft_dbpool_unhold(tx->pool, tx->ptx);
        free(tx);
        return;
    }
    /* On the loop: the rollback finishes after the response; the session
     * goes back to the set only then. */
    end_loop(tx, 0, free_tx, tx);
}
