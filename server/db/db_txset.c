/*
 * The loops' transaction sessions. Coroutine and reactive requests take a
 * single-connection weft_dbloop from their loop's set, created on demand and
 * kept idle after COMMIT/ROLLBACK for the next transaction; at most
 * database.tx_connections are held per loop, and a begin waits for one up to
 * database.tx_wait_ms in FIFO order (a queue with a timer: the loop never
 * blocks), then fails with WEFT_UNAVAILABLE (503).
 *
 * A session that broke inside a transaction reconnects by itself (db_loop),
 * and a statement sent on the new session would run outside the
 * transaction: each transaction remembers its session's epoch and fails
 * every later statement once it changed.
 */
#include <stdlib.h>
#include <string.h>

#include "db/db_txset.h"
#include "request/request.h"
#include "request/route.h"
#include "base/log.h"
#include "core/loop.h"

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

static const char *const begin_sql[3] = {"BEGIN ISOLATION LEVEL READ COMMITTED",
                                        "BEGIN ISOLATION LEVEL REPEATABLE READ",
                                        "BEGIN ISOLATION LEVEL SERIALIZABLE"};

const char *weft_tx_begin_sql(int isolation) { return begin_sql[isolation]; }

/* COMMIT of a transaction that had failed answers "ROLLBACK" without error. */
int weft_tx_end_rc(int rc, PGresult *res, int commit)
{
    if (rc == WEFT_OK && commit && strcmp(PQcmdStatus(res), "COMMIT") != 0)
        return WEFT_ERROR;
    return rc;
}

/* ---- the loop's transaction set ---- */

static void txset_free(weft_txset *s);

WEFT_LOOP_SLOT(txset_slot) /* the loop's set for the serving settings */

static weft_txset *txset_of(const weft_loop *L) { return weft_loop_get(L, txset_slot); }

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
    if (txset_of(s->loop) != s && s->held == 0 && s->wait_head == NULL)
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
    weft_db_cfg_copy(&s->cfg, cfg);
    if (s->idle == NULL || s->cfg.conninfo == NULL) {
        free(s->idle);
        weft_db_cfg_release(&s->cfg);
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
    weft_db_cfg_release(&s->cfg);
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
    weft_txset *s = txset_of(L);
    if (s != NULL && !weft_db_cfg_equal(&s->cfg, cfg)) {
        weft_loop_set(L, txset_slot, NULL);
        /* Its idle sessions close now; the set goes once nothing is held. */
        for (size_t i = 0; i < s->n_idle; i++)
            trash(s, s->idle[i]);
        s->n_idle = 0;
        schedule_reap(s);
        s = NULL;
    }
    if (s == NULL)
        weft_loop_set(L, txset_slot, s = txset_new(L, cfg));
    return s;
}

static void txset_teardown(weft_loop *L) { weft_txset_close(L); }

static const weft_loop_hook txset_hook = {.teardown = txset_teardown};

void weft_db_tx_attach(void) { weft_loop_add_hook(&txset_hook); }

void weft_txset_close(weft_loop *L)
{
    weft_txset *s = txset_of(L);
    if (s == NULL)
        return;
    /* Rollbacks of abandoned transactions may still be on their way back. */
    for (int i = 0; i < 300 && s->held > 0; i++)
        h2o_evloop_run(L->evloop, 10);
    if (s->held > 0)
        weft_log_warn("database: %zu transaction connection(s) still busy at shutdown", s->held);
    else
        txset_free(s);
    weft_loop_set(L, txset_slot, NULL);
}

static void finish_fn(weft_tx *tx, int rc)
{
    weft_tx_done_fn fn = tx->fn;
    tx->fn = NULL;
    if (fn != NULL)
        fn(tx->fn_arg, rc);
}

/* A session taken for a transaction (counted while held). */
static void hold(weft_txset *s)
{
    s->held++;
    weft_db_metric_tx(1);
}

static void on_begin_result(void *arg, int rc, PGresult *res)
{
    weft_tx *tx = arg;
    PQclear(res);
    if (rc == WEFT_OK && !tx->rolling) { /* rolling: cancelled meanwhile, ROLLBACK queued */
        tx->epoch = weft_dbloop_epoch(tx->d);
        tx->phase = TX_OPEN;
    } else if (rc != WEFT_OK) {
        tx->broken = 1;
    }
    finish_fn(tx, rc);
}

static void send_begin(weft_tx *tx)
{
    tx->phase = TX_BEGINNING;
    /* Behind a transaction pooler the statement timeout rides with BEGIN and
     * holds until the transaction ends: its statements need none of their own. */
    weft_dbloop_send(tx->d, begin_sql[tx->isolation], 0, NULL, WEFT_DBQ_TIMED_BEGIN, on_begin_result, tx);
}

void weft_tx_unqueue(weft_tx *tx, int rc)
{
    weft_txset *s = tx->set;
    weft_tx **pp = &s->wait_head, *prev = NULL;
    while (*pp != tx) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    *pp = tx->next;
    if (s->wait_tail == tx)
        s->wait_tail = prev;
    weft_timers_cancel(s->loop->timers, &tx->wait_timer);
    weft_db_metric_waiting(-1);
    tx->set = NULL;
    tx->phase = TX_DONE;
    if (txset_of(s->loop) != s)
        schedule_reap(s);
    finish_fn(tx, rc);
}

static void on_wait_timeout(weft_timer *t) { weft_tx_unqueue(H2O_STRUCT_FROM_MEMBER(weft_tx, wait_timer, t), WEFT_UNAVAILABLE); }

void weft_tx_release_loop(weft_txset *s, weft_dbloop *d, int reusable)
{
    s->held--;
    weft_db_metric_tx(-1);
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
        weft_db_metric_waiting(-1);
        w->d = d != NULL ? d : weft_dbloop_new(s->loop, &s->cfg);
        if (w->d == NULL) {
            w->set = NULL;
            w->phase = TX_DONE;
            finish_fn(w, WEFT_UNAVAILABLE);
            return;
        }
        hold(s);
        send_begin(w);
        return;
    }
    if (d != NULL && txset_of(s->loop) == s && s->n_idle < (size_t)s->cfg.tx_connections)
        s->idle[s->n_idle++] = d;
    else if (d != NULL)
        trash(s, d);
    if (txset_of(s->loop) != s)
        schedule_reap(s); /* a retired set goes once nothing is held */
}

void weft_tx_begin_loop(weft_req *r, weft_tx *tx, weft_tx_done_fn fn, void *arg)
{
    tx->fn = fn;
    tx->fn_arg = arg;
    weft_txset *s = txset_for(r);
    if (s == NULL) {
        tx->phase = TX_DONE;
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
        tx->set = NULL;
        tx->phase = TX_DONE;
        finish_fn(tx, WEFT_UNAVAILABLE);
        return;
    }
    if (tx->d != NULL) {
        hold(s);
        send_begin(tx);
        return;
    }
    if (s->cfg.tx_wait_ms == 0) {
        tx->set = NULL;
        tx->phase = TX_DONE;
        finish_fn(tx, WEFT_UNAVAILABLE);
        return;
    }
    tx->next = NULL;
    if (s->wait_tail != NULL)
        s->wait_tail->next = tx;
    else
        s->wait_head = tx;
    s->wait_tail = tx;
    tx->phase = TX_QUEUED;
    weft_db_metric_waiting(1);
    weft_timers_add(s->loop->timers, &tx->wait_timer, (uint64_t)s->cfg.tx_wait_ms, on_wait_timeout);
}

static void on_end_result(void *arg, int rc, PGresult *res)
{
    weft_tx *tx = arg;
    rc = weft_tx_end_rc(rc, res, tx->ending_commit);
    PQclear(res);
    weft_dbloop *d = tx->d;
    tx->d = NULL;
    weft_tx_release_loop(tx->set, d, rc == WEFT_OK && !tx->broken);
    tx->set = NULL;
    tx->phase = TX_DONE;
    finish_fn(tx, tx->broken && rc == WEFT_OK ? WEFT_UNAVAILABLE : rc);
}

void weft_tx_end_loop(weft_tx *tx, int commit, weft_tx_done_fn fn, void *arg)
{
    tx->fn = fn;
    tx->fn_arg = arg;
    tx->ending_commit = commit;
    if (tx->d == NULL) {
        tx->phase = TX_DONE;
        finish_fn(tx, WEFT_UNAVAILABLE);
        return;
    }
    tx->phase = TX_ENDING;
    if (tx->broken || weft_dbloop_epoch(tx->d) != tx->epoch || !weft_dbloop_ready(tx->d)) {
        /* The session (and with it the transaction) is gone: nothing to end. */
        tx->broken = 1;
        on_end_result(tx, commit ? WEFT_UNAVAILABLE : WEFT_OK, NULL);
        return;
    }
    weft_dbloop_query(tx->d, commit ? "COMMIT" : "ROLLBACK", 0, NULL, on_end_result, tx);
}
