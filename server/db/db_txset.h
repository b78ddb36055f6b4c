/*
 * Internals shared by the transaction entries (db_tx.c) and the loops'
 * transaction sessions (db_txset.c). Not for other folders.
 */
#ifndef WEFT_DB_TXSET_H
#define WEFT_DB_TXSET_H

#include "db/db.h"
#include "db/db_tx.h"
#include "base/timer.h"
#include "request/cancel.h"

typedef void (*weft_tx_done_fn)(void *arg, int rc);
typedef struct weft_tx weft_tx;

/* Where a loop transaction stands (pool workers' need no state: the worker
 * itself is the state). */
enum { TX_NEW, TX_QUEUED, TX_BEGINNING, TX_OPEN, TX_ENDING, TX_DONE };

struct weft_tx {
    weft_req *r; /* NULL once the request let go of it */
    int isolation;
    int broken;
    /* Ended by the request's cancellation: rolled back (or rolling back);
     * every later call on it answers WEFT_CANCELLED. */
    int cancelled;
    /* pool workers */
    weft_dbpool *pool;
    weft_dbpool_tx *ptx;
    /* loops */
    int phase; /* TX_* */
    int rolling; /* the cancellation's ROLLBACK is on its way; it owns `d` */
    int orphan;  /* the request let go meanwhile: freed when the ROLLBACK is back */
    weft_wait wait; /* cancellation, from db_begin until the session is given back */
    int watching;
    weft_txset *set;
    weft_dbloop *d;
    uint64_t epoch;
    weft_tx *next; /* in the set's wait list */
    weft_timer wait_timer;
    weft_tx_done_fn fn; /* the pending begin/end */
    void *fn_arg;
    int ending_commit;
};

/** "BEGIN ISOLATION LEVEL ..." for a weft_isolation level. */
const char *weft_tx_begin_sql(int isolation);
/** The COMMIT/ROLLBACK outcome: COMMIT of a failed transaction answers "ROLLBACK". */
int weft_tx_end_rc(int rc, PGresult *res, int commit);
/** Takes a session for `tx` (or queues it) and sends BEGIN; `fn` gets the rc. Loop thread. */
void weft_tx_begin_loop(weft_req *r, weft_tx *tx, weft_tx_done_fn fn, void *arg);
/** Sends COMMIT or ROLLBACK and gives the session back; `fn` gets the rc. */
void weft_tx_end_loop(weft_tx *tx, int commit, weft_tx_done_fn fn, void *arg);
/** Gives a session back: to the next waiter, the idle list (when `reusable`), or closed. */
void weft_tx_release_loop(weft_txset *s, weft_dbloop *d, int reusable);
/** Ends a queued wait for a session: out of the queue, `fn` gets `rc`. */
void weft_tx_unqueue(weft_tx *tx, int rc);

#endif
