/*
 * One statement's trip down a connection in pipeline mode (db_stmt.c),
 * shared by the loops' connections (db_loop.c) and the pool's blocking
 * ones behind a transaction pooler (db_pool.c): what is sent under its
 * Sync — [Parse], Bind/Execute, and the statement timeout's statement
 * ahead of it or behind it — and which of the results that come back is
 * the caller's. Not for other folders.
 */
#ifndef WEFT_DB_STMT_H
#define WEFT_DB_STMT_H

#include "db/db.h"

typedef struct weft_dbstmt {
    const char *sql;
    int nparams;
    const char *const *params;
    unsigned flags; /* WEFT_DBQ_TIMED, _TIMED_BEGIN, _UNNAMED */
    /* Its result groups (each some results, then NULL), in the order sent:
     * a Parse, the timeout's statement, its own (`own`), the timeout's. */
    int group, groups, own, synced;
    PGresult *res;        /* its own first result */
    PGresult *prep_error; /* the first failure of another group */
} weft_dbstmt;

/**
 * Queues the statement's groups on `pg` (pipeline mode), not its Sync:
 * named (prepared once per connection in `stmts`) unless `unnamed` or
 * WEFT_DBQ_UNNAMED; `timeout_ms` is the timeout statement's $1. 0; -1 when
 * libpq failed (part of it may be buffered: the connection cannot go on);
 * -2 out of memory before anything was sent.
 */
int weft_dbstmt_send(weft_dbstmt *s, PGconn *pg, weft_stmt_cache *stmts, int unnamed, const char *timeout_ms);
/** Feeds one result (or the NULL that ends a group); 1 once its Sync came. Takes `r`. */
int weft_dbstmt_feed(weft_dbstmt *s, PGresult *r);
/**
 * The caller's result (its own failure first; a statement skipped for
 * another's failure gets that other's) and its rc. A failure of weft's
 * names behind a pooler drops them from `stmts` and is said once.
 */
PGresult *weft_dbstmt_take(weft_dbstmt *s, weft_stmt_cache *stmts, const weft_db_cfg *cfg, int *rc);
/**
 * Drops `sql`'s name (and the timeout statement's, when `timed`) from
 * `stmts` when its Parse failed or `res` says the server does not have
 * weft's name (26000, 42P05: a pooler between), and says the latter once.
 */
void weft_dbstmt_forget(weft_stmt_cache *stmts, const weft_db_cfg *cfg, const char *sql, int timed, int parse_failed,
                        const PGresult *res);
/** Frees what it still holds. */
void weft_dbstmt_clear(weft_dbstmt *s);

#endif
