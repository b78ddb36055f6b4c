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

/** libpq connection keywords for the settings (NULL-terminated, static storage per call site). */
typedef struct weft_db_params {
    const char *keys[8];
    const char *values[8];
    char options[64];
    char timeout[16];
} weft_db_params;
void weft_db_params_init(weft_db_params *p, const weft_db_cfg *cfg);

/** Maps a finished statement's result to a weft_rc (TIMEOUT for SQLSTATE 57014). */
int weft_db_result_rc(const PGresult *res);

/* ---- metrics (any thread) ---- */
void weft_db_metric_open(int delta);
void weft_db_metric_busy(int delta);
void weft_db_metric_reconnect(void);
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

#endif
