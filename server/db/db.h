/*
 * The host's PostgreSQL services (libpq). Two connection sets, one per
 * execution model:
 *   - db_pool.c: blocking connections shared by pool workers; a worker
 *     borrows one for a statement and gives it back;
 *   - db_loop.c: non-blocking connections owned by each event loop, driven
 *     by socket readiness, in pipeline mode so many coroutine and reactive
 *     requests share few connections.
 * Both prepare statements transparently (by SQL text, per connection),
 * enforce the statement timeout on the client side as well as the server
 * side, and fail fast with WEFT_UNAVAILABLE while the database is down,
 * reconnecting with backoff.
 */
#ifndef WEFT_DB_H
#define WEFT_DB_H

#include "db/pq.h"
#include <stdint.h>
#include <stdio.h>
#include <weft/plugin.h>

#include "config/config.h"
#include "request/route.h"

/* ---- shared helpers (db_common.c) ---- */

/** Per-connection cache of prepared statements, keyed by SQL text. */
typedef struct weft_stmt_cache {
    char **sql;
    size_t n, cap;
} weft_stmt_cache;

/** Index of `sql` in the cache, or -1. */
int weft_stmt_find(const weft_stmt_cache *c, const char *sql);
/** Adds `sql`; returns its index (the statement is named "weft_<index>"), -1 without memory. */
int weft_stmt_add(weft_stmt_cache *c, const char *sql);
void weft_stmt_forget(weft_stmt_cache *c, int index);
void weft_stmt_clear(weft_stmt_cache *c);
/**
 * Queues [Parse] + Bind/Execute of one statement on a connection in
 * pipeline mode: named and prepared once per connection (`stmts`), or
 * unnamed when `prepared` is 0 (PQsendQueryParams: Parse every time).
 * Returns the result groups that come before the statement's own (1 for a
 * Parse), -1 when libpq failed, -2 out of memory before anything was sent.
 */
int weft_db_send_stmt(PGconn *pg, weft_stmt_cache *stmts, int prepared, const char *sql, int n,
                      const char *const *params);

/** libpq connection keywords for the settings (NULL-terminated, static storage per call site). */
typedef struct weft_db_params {
    const char *keys[8];
    const char *values[8];
    char options[64];
    char timeout[16];
} weft_db_params;
/** The keywords for `cfg`, connecting to `conninfo` (NULL: cfg->conninfo). No `options` behind a pooler. */
void weft_db_params_init(weft_db_params *p, const weft_db_cfg *cfg, const char *conninfo);
/**
 * The statement a new session runs first, into buf: `SET statement_timeout`
 * with pooler = "session" (its server connection is the session's); NULL
 * otherwise (direct: a startup option; transaction: weft_db_timeout_sql).
 */
const char *weft_db_session_sql(const weft_db_cfg *cfg, char *buf, size_t size);
/**
 * With pooler = "transaction" the server connection changes with every
 * transaction, so the timeout travels with each one: this statement, with
 * the milliseconds as $1, goes ahead of a statement (or BEGIN) under the
 * same Sync, and holds until that transaction ends (set_config's is_local).
 */
extern const char *const weft_db_timeout_sql;
/** A copy of `src` whose strings `dst` owns (weft_db_cfg_release frees them). */
void weft_db_cfg_copy(weft_db_cfg *dst, const weft_db_cfg *src);
void weft_db_cfg_release(weft_db_cfg *cfg);
/** What to do about a failed connect, appended to its reason (PgBouncer's refusal of `options`), or "". */
const char *weft_db_connect_hint(const char *why);
/**
 * Says once per process, naming database.pooler, when a statement failed
 * because weft's named statements met a transaction pooler that does not
 * keep them (42P05 / 26000 on a "weft_N" name).
 */
void weft_db_statement_hint(const weft_db_cfg *cfg, const PGresult *res);

/** Maps a finished statement's result to a weft_rc (TIMEOUT for SQLSTATE 57014). */
int weft_db_result_rc(const PGresult *res);

/* ---- metrics (any thread) ---- */
void weft_db_metric_open(int delta);
void weft_db_metric_busy(int delta);
void weft_db_metric_reconnect(void);
/** LISTEN (db_listen.c): channels listened on (+1/-1), listeners re-LISTENed after a reconnect, notifications read. */
void weft_db_metric_listen_channels(int delta);
void weft_db_metric_relisten(void);
void weft_db_metric_notification(void);
void weft_db_metric_query(uint64_t elapsed_ns);
/** Connections held by transactions (pool workers' and the loops' sessions). */
void weft_db_metric_tx(int delta);
/** Requests waiting for a pool connection or a transaction slot. */
void weft_db_metric_waiting(int delta);
/**
 * Asks the server to cancel the statement running on `pg`, without the
 * caller (a loop) waiting for the server: on the calling loop with libpq 17
 * (PQcancelStart), else with PQcancel from a short-lived thread
 * (db_cancel.c). Any thread; `pg` must stay open during the call only. Logs
 * a failure naming `label`.
 */
void weft_db_cancel_running(PGconn *pg, const char *label);
/** Ends this loop's cancels still in flight (its teardown). Loop thread. */
void weft_db_cancels_close(void);
/** Appends the database metrics to a Prometheus exposition. */
void weft_db_metrics_render(FILE *f);

/** Backoff after failed connects: 100 ms doubling to 5 s. */
uint64_t weft_db_backoff_next(uint64_t current_ms);

/* ---- blocking pool (db_pool.c) ---- */
typedef struct weft_dbpool weft_dbpool;
/* A route's blocking connections for pool workers (its generation's); NULL without a database. */
extern int weft_dbpool_route_slot;
static inline weft_dbpool *weft_route_dbpool(const weft_route *rt) { return weft_route_get(rt, weft_dbpool_route_slot); }
static inline void weft_route_set_dbpool(weft_route *rt, weft_dbpool *p) { weft_route_set(rt, weft_dbpool_route_slot, p); }
weft_dbpool *weft_dbpool_new(const weft_db_cfg *cfg);
void weft_dbpool_free(weft_dbpool *p);
/**
 * Runs a statement on a borrowed connection. While it waits for one (every
 * connection busy) a cancellation of `r` (NULL: none) ends the wait with
 * WEFT_CANCELLED. When `busy` is given it is called with the connection
 * before the statement is sent (a non-zero return withdraws it:
 * WEFT_CANCELLED) and with NULL once it is over, so that a cancellation can
 * PQcancel it meanwhile.
 */
int weft_dbpool_query(weft_dbpool *p, weft_req *r, const char *sql, int n, const char *const *params, PGresult **res,
                      int (*busy)(void *ctx, PGconn *pg), void *ctx);

/* Transactions of pool workers: a connection held until unhold. */
typedef struct weft_dbpool_tx weft_dbpool_tx;
/**
 * Waits up to tx_wait_ms for a transaction slot and a connection; NULL with
 * *rc on failure (WEFT_UNAVAILABLE; WEFT_CANCELLED once `r` is withdrawn).
 */
weft_dbpool_tx *weft_dbpool_hold(weft_dbpool *p, weft_req *r, int *rc);
/** A statement on the held connection (`busy` as for weft_dbpool_query); fails fast once the connection broke. */
int weft_dbpool_tx_query(weft_dbpool *p, weft_dbpool_tx *t, const char *sql, int n, const char *const *params,
                         PGresult **res, int (*busy)(void *ctx, PGconn *pg), void *ctx);
/** BEGIN (`sql`) on the held connection; behind a transaction pooler the statement timeout follows it, under its Sync. */
int weft_dbpool_tx_begin(weft_dbpool *p, weft_dbpool_tx *t, const char *sql, PGresult **res);
/** Gives the connection back (closed if it broke or is still inside a transaction) and the slot. */
void weft_dbpool_unhold(weft_dbpool *p, weft_dbpool_tx *t);

/* ---- per-loop pipelined connections (db_loop.c) ---- */
typedef struct weft_dbloop weft_dbloop;
/** Whether two database settings would open the same connections. */
int weft_db_cfg_equal(const weft_db_cfg *a, const weft_db_cfg *b);

struct weft_loop;
/** Completion of an async statement; runs on the loop. `res` is the caller's to clear. */
typedef void (*weft_dbloop_cb)(void *arg, int rc, PGresult *res);
weft_dbloop *weft_dbloop_new(struct weft_loop *loop, const weft_db_cfg *cfg);
/** The same, connecting to `conninfo` instead of cfg->conninfo (LISTEN's own session). */
weft_dbloop *weft_dbloop_new_to(struct weft_loop *loop, const weft_db_cfg *cfg, const char *conninfo);
/** Closes every connection; pending statements complete with WEFT_CANCELLED. Loop thread. */
void weft_dbloop_free(weft_dbloop *d);
const weft_db_cfg *weft_dbloop_cfg(const weft_dbloop *d);
typedef struct weft_dbq weft_dbq;
/**
 * Queues a statement; `cb` may run before this returns (e.g. database down),
 * and then NULL is returned. Otherwise the statement's handle, valid until
 * `cb` runs.
 */
weft_dbq *weft_dbloop_query(weft_dbloop *d, const char *sql, int n, const char *const *params, weft_dbloop_cb cb,
                            void *arg);
/** weft_dbloop_send flags. */
enum {
    /* A transaction of its own (a statement outside any, or BEGIN): behind a
     * transaction pooler the statement timeout goes with it (weft_db_timeout_sql). */
    WEFT_DBQ_TIMED = 1,
    /* On connection (flags >> 8) % loop_connections while it is up, so that
     * statements with one key run in the order they were sent: WEFT_DBQ_ON(key). */
    WEFT_DBQ_PINNED = 2,
    /* BEGIN ...: the timeout goes behind it (an isolation level must be set
     * before the transaction's first query) and holds until it ends. */
    WEFT_DBQ_TIMED_BEGIN = 4,
    /* Unnamed whatever database.prepared says: a statement a session runs once. */
    WEFT_DBQ_UNNAMED = 8,
};
#define WEFT_DBQ_ON(key) (WEFT_DBQ_PINNED | ((unsigned)(key) << 8))
/** weft_dbloop_query with WEFT_DBQ_* flags. */
weft_dbq *weft_dbloop_send(weft_dbloop *d, const char *sql, int n, const char *const *params, unsigned flags,
                           weft_dbloop_cb cb, void *arg);
/** A (re)connected session: `epoch` counts the sessions opened (1 for the first). Loop thread. */
typedef void (*weft_dbloop_up_fn)(void *ctx, uint64_t epoch);
/** A notification read on one of the set's connections (LISTEN); the strings live during the call. */
typedef void (*weft_dbloop_notify_fn)(void *ctx, const char *channel, const char *payload);
/** Every connection of the set failed (statements waiting for one were failed). Loop thread. */
typedef void (*weft_dbloop_down_fn)(void *ctx);
/** Watches `d`'s sessions and notifications (db_listen.c's LISTEN connection). Loop thread. */
void weft_dbloop_watch(weft_dbloop *d, weft_dbloop_up_fn on_up, weft_dbloop_down_fn on_down,
                       weft_dbloop_notify_fn on_notify, void *ctx);
/** True while a connection of the set is being opened. */
int weft_dbloop_connecting(const weft_dbloop *d);
/** The end of a loop pass: statements queued during it are written (libpq 17). The loop hook's `pass`. */
void weft_dbloop_pass(struct weft_loop *L);
/* The retired list's link (db_loopset.c). */
weft_dbloop *weft__dbloop_next(const weft_dbloop *d);
void weft__dbloop_set_next(weft_dbloop *d, weft_dbloop *next);
/** The caller no longer wants the result: `cb` will not run, the result is discarded. */
void weft_dbloop_abandon(weft_dbq *q);
size_t weft_dbloop_inflight(const weft_dbloop *d);
/** The first connection while it is up (a transaction session has one), else NULL. */
PGconn *weft_dbloop_pg(const weft_dbloop *d);
/** Counts sessions opened: a change means a connection was re-established. */
uint64_t weft_dbloop_epoch(const weft_dbloop *d);
/** True when at least one connection is up. */
int weft_dbloop_ready(const weft_dbloop *d);
/** The loop's connection set for `cfg` (created, or replaced when settings changed). Loop thread. */
weft_dbloop *weft_dbloop_for(struct weft_loop *loop, const weft_db_cfg *cfg);
/** Stops using `d` for new statements; it is freed once its statements are done. */
void weft_dbloop_retire(struct weft_loop *loop, weft_dbloop *d);
/** Frees retired sets that are idle (all of them with `all`). Loop thread. */
void weft_dbloop_reap(struct weft_loop *loop, int all);
/** Closes each loop's connections when it stops (registers a loop hook; before the loops start). */
void weft_db_attach(void);

/* ---- the host table entries (db_host.c) ---- */
int weft_db_host_db_query(weft_req *r, const char *sql, int n, const char *const *params, weft_result **res);
void weft_db_host_db_query_async(weft_req *r, const char *sql, int n, const char *const *params, weft_db_callback cb,
                              void *arg);
int weft_db_host_result_rows(const weft_result *res);
int weft_db_host_result_cols(const weft_result *res);
const char *weft_db_host_result_name(const weft_result *res, int col);
const char *weft_db_host_result_value(const weft_result *res, int row, int col);
long long weft_db_host_result_affected(const weft_result *res);
const char *weft_db_host_result_sqlstate(const weft_result *res);
const char *weft_db_host_result_error(const weft_result *res);
void weft_db_host_result_free(weft_result *res);
/** db_query with weft_dbloop_send flags for a statement outside a transaction (WEFT_DBQ_TIMED by default). */
int weft_db_host_query_flags(weft_req *r, const char *sql, int n, const char *const *params, unsigned flags,
                             weft_result **res);
void weft_db_host_query_async_flags(weft_req *r, const char *sql, int n, const char *const *params, unsigned flags,
                                    weft_db_callback cb, void *arg);

/* ---- LISTEN/NOTIFY (db_listen.c, db_notify.c): the db group's version 2 ---- */
/** Whether `channel` is a name weft listens on: 1 to 63 of [A-Za-z0-9_], not starting with a digit. */
int weft_db_channel_ok(const char *channel);
/** 0 for a good channel name; 1 after logging, naming the route and `call`. */
int weft_db_channel_refused(weft_req *r, const char *call, const char *channel);
/** host->db->listen without a callback (pool, coroutine): waits until PostgreSQL confirmed the LISTEN. */
int weft_db_listen(weft_req *r, const char *channel, weft_db_notify_fn fn, void *arg);
/** The reactive form: `cb` gets the outcome on the loop. */
void weft_db_listen_async(weft_req *r, const char *channel, weft_db_notify_fn fn, void *arg, weft_callback cb,
                          void *cb_arg);
/** Removes r's registration (channel, fn, arg); WEFT_ERROR when there is none. fn never runs after it. */
int weft_db_unlisten(weft_req *r, const char *channel, weft_db_notify_fn fn, void *arg);
/** host->db->notify: pg_notify on the request's connections (inside its transaction, if open). */
int weft_db_notify(weft_req *r, const char *channel, const char *payload);
void weft_db_notify_async(weft_req *r, const char *channel, const char *payload, weft_callback cb, void *arg);
/** The loop's listener connections close (its teardown). */
void weft_db_listen_close(struct weft_loop *L);
/** Closes listeners a reload left without registrations (the loop's tick). */
void weft_db_listen_tick(struct weft_loop *L);

#endif
