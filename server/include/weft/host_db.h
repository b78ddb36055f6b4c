/*
 * weft/host_db.h — the `db` group: PostgreSQL through host-managed
 * connections, parameterised statements only (no input ever becomes SQL
 * text). NULL in weft_host when the server has no database support. The
 * `cb` convention is the one of weft/host_sync.h.
 */
#ifndef WEFT_HOST_DB_H
#define WEFT_HOST_DB_H

#include <weft/types.h>

#define WEFT_HOST_DB_VERSION 2u

/**
 * Completion of query() started with a callback, on the loop thread that
 * owns `req`. On WEFT_OK `res` holds the rows; on WEFT_ERROR it may carry
 * the SQL error (result_sqlstate); otherwise it is NULL. The callback owns
 * `res` and frees it with result_free().
 */
typedef void (*weft_db_callback)(weft_req *req, void *arg, int rc, weft_result *res);

/**
 * A notification on a channel a request listens to (listen(), version 2).
 * Runs on the loop thread of the request that listens, outside its
 * handler: under `pool` and `coroutine` while the handler may be running or
 * waiting elsewhere, so it may call only what any thread may (ws->send,
 * ws->close, metric updates, the plugin's own synchronised state); a
 * reactive request's may also do what its callbacks do (it is on the
 * request's thread). `payload` (`len` bytes, NUL-terminated) and `channel`
 * live during the call. Notifications of one sender on one channel arrive
 * in the order it sent them.
 */
typedef void (*weft_db_notify_fn)(void *arg, const char *channel, const char *payload, size_t len);

typedef struct weft_host_db {
    uint32_t struct_size;
    uint32_t version; /**< WEFT_HOST_DB_VERSION of the running host */
    /**
     * Runs `sql` with text parameters $1..$nparams (a NULL element is SQL
     * NULL) as a prepared statement, inside the request's transaction if
     * one is open (weft/host_tx.h). Outcome: WEFT_OK with the rows;
     * WEFT_UNAVAILABLE when the database is down or no connection frees up
     * in time (answer 503); WEFT_TIMEOUT when the statement timeout passed;
     * WEFT_ERROR for an SQL error (the result, if any, carries it) or misuse;
     * WEFT_CANCELLED when the request was withdrawn.
     * cb NULL (pool, coroutine): *res gets the result (or NULL) and the
     * caller frees it (res NULL: the host frees it, for statements whose
     * rows nobody reads); from a reactive handler WEFT_ERROR.
     * cb set (reactive, loop thread): returns WEFT_AGAIN; res is not written
     * (may be NULL) and `cb` gets the outcome and the result.
     */
    weft_rc (*query)(weft_req *req, const char *sql, int nparams, const char *const *params, weft_result **res,
                     weft_db_callback cb, void *arg);
    /** Rows of a result. */
    int (*result_rows)(const weft_result *res);
    /** Columns of a result. */
    int (*result_cols)(const weft_result *res);
    /** A column's name. */
    const char *(*result_name)(const weft_result *res, int col);
    /** Text form of a value; NULL for SQL NULL. Valid until result_free(). */
    const char *(*result_value)(const weft_result *res, int row, int col);
    /** Rows affected by INSERT/UPDATE/DELETE. */
    long long (*result_affected)(const weft_result *res);
    /** The SQLSTATE of a failed statement ("23505"), or "" — for logic, not for clients. */
    const char *(*result_sqlstate)(const weft_result *res);
    /** The database's error text — for logs only: never send it to a client. */
    const char *(*result_error)(const weft_result *res);
    /** Frees a result (NULL is fine). Any thread. */
    void (*result_free)(weft_result *res);

    /* ---- version 2: LISTEN/NOTIFY, e.g. to fan events out across replicas ---- */

    /**
     * Version 2. Listens on `channel` (1 to 63 letters, digits and _, not
     * starting with a digit; case matters) for the rest of the request, or
     * until unlisten(): `on_notify(notify_arg, ...)` gets every notification
     * sent on it from then on (by any session, this one included), on
     * req's loop thread. The host listens on a session of its own per loop
     * (database.listen_conninfo, else conninfo), and again after it
     * reconnects; notifications sent while it was down are lost.
     * Outcome once PostgreSQL confirmed the LISTEN: WEFT_OK; WEFT_ERROR for
     * a bad channel name, or with database.pooler = "transaction" and no
     * database.listen_conninfo (logged, naming the route); WEFT_UNAVAILABLE
     * when the database is down; WEFT_CANCELLED when the request was
     * withdrawn. `cb` as for query(): NULL blocks (pool, coroutine), set is
     * the reactive form.
     */
    weft_rc (*listen)(weft_req *req, const char *channel, weft_db_notify_fn on_notify, void *notify_arg,
                      weft_callback cb, void *arg);
    /**
     * Version 2. Ends the registration listen() made with the same channel,
     * function and argument: once it returns `on_notify` neither runs nor
     * will for it (so notify_arg may be freed), unless unlisten is called
     * from inside that very call. The thread running req's handler (a
     * reactive request's callbacks included). WEFT_OK, or WEFT_ERROR when
     * there is no such registration. A request's registrations end with it.
     */
    weft_rc (*unlisten)(weft_req *req, const char *channel, weft_db_notify_fn on_notify, void *notify_arg);
    /**
     * Version 2. Sends `payload` (NULL: "") on `channel` to every session
     * listening on it, in every weft process on that database. It waits
     * like query(): inside the request's transaction when one is open (then
     * delivered only if and when it commits), else at once. WEFT_ERROR,
     * logged with the route, for a bad channel name or a payload over 7999
     * bytes (PostgreSQL's limit); otherwise query()'s outcomes. A sender's
     * notifications on one channel are delivered in the order it sent them.
     */
    weft_rc (*notify)(weft_req *req, const char *channel, const char *payload, weft_callback cb, void *arg);
    /**
     * Version 2. Whether listen() and notify() take `channel` as a name: 1
     * to 63 letters, digits and _, not starting with a digit. Any thread,
     * init and load too (check a route option there, with its line).
     */
    int (*channel_ok)(const char *channel);
} weft_host_db;

#endif
