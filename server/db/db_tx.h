/*
 * Transactions on a connection held for one request (db_tx.c); the
 * statements of a request with an open transaction go there instead of the
 * shared connections. docs/DATABASE.md draws how the two coexist.
 */
#ifndef WEFT_DB_TX_H
#define WEFT_DB_TX_H

#include "db/db.h"
#include "request/request.h"

struct weft_loop;
typedef struct weft_txset weft_txset;
typedef struct weft_tx weft_tx;

/* A request slot of db/'s: the transaction the request holds open, or NULL,
 * and whether the check that rolls back one its handler left open is
 * registered (once per request, however many transactions it runs). */
typedef struct weft_tx_slot {
    weft_tx *tx;
    int abandon_deferred;
} weft_tx_slot;
extern int weft_tx_req_slot;
static inline weft_tx_slot *weft_req_tx_slot(const weft_req *r) { return weft_req_ext(r, weft_tx_req_slot); }
static inline weft_tx *weft_req_tx(const weft_req *r) { return weft_req_tx_slot(r)->tx; }
static inline void weft_req_set_tx(weft_req *r, weft_tx *tx) { weft_req_tx_slot(r)->tx = tx; }

/* The host table entries. */
int weft_db_tx_db_begin(weft_req *r, int isolation);
int weft_db_tx_db_commit(weft_req *r);
int weft_db_tx_db_rollback(weft_req *r);
void weft_db_tx_db_begin_async(weft_req *r, int isolation, weft_callback cb, void *arg);
void weft_db_tx_db_commit_async(weft_req *r, weft_callback cb, void *arg);
void weft_db_tx_db_rollback_async(weft_req *r, weft_callback cb, void *arg);

/**
 * A statement inside r->tx on a pool worker (blocking); `busy` as for
 * weft_dbpool_query, so that a cancellation can PQcancel it. Once the
 * request is withdrawn the transaction is rolled back here and every later
 * call answers WEFT_CANCELLED.
 */
int weft_tx_query(weft_req *r, const char *sql, int n, const char *const *params, PGresult **res,
                  int (*busy)(void *ctx, PGconn *pg), void *ctx);
/** A pool worker's request was withdrawn with r->tx open: rolls it back now (worker thread). */
void weft_tx_cancelled(weft_req *r);
/** A statement inside r->tx on its loop session; `cb` may run before this returns. */
void weft_tx_query_loop(weft_req *r, const char *sql, int n, const char *const *params, weft_dbloop_cb cb,
                        void *arg);
/** Registers the per-loop teardown of the transaction sessions (before weft_loops_start). */
void weft_db_tx_attach(void);
/** Closes the loop's idle transaction sessions (teardown, loop thread). */
void weft_txset_close(struct weft_loop *L);

#endif
