/*
 * weft/host_db.h — the `db` group: PostgreSQL through host-managed
 * connections, parameterised statements only (no input ever becomes SQL
 * text). NULL in weft_host when the server has no database support. The
 * `cb` convention is the one of weft/host_sync.h.
 */
#ifndef WEFT_HOST_DB_H
#define WEFT_HOST_DB_H

#include <weft/types.h>

#define WEFT_HOST_DB_VERSION 1u

/**
 * Completion of query() started with a callback, on the loop thread that
 * owns `req`. On WEFT_OK `res` holds the rows; on WEFT_ERROR it may carry
 * the SQL error (result_sqlstate); otherwise it is NULL. The callback owns
 * `res` and frees it with result_free().
 */
typedef void (*weft_db_callback)(weft_req *req, void *arg, int rc, weft_result *res);

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
} weft_host_db;

#endif
