/*
 * Internals shared by a loop's pipelined connections (db_loop.c) and the
 * statements queued on them (db_loopq.c). Not for other folders.
 */
#ifndef WEFT_DB_LOOP_H
#define WEFT_DB_LOOP_H

#include "db/db.h"
#include "db/db_stmt.h"
#include "core/loop.h"

enum { C_DOWN, C_CONNECTING, C_READY };

struct weft_dbq {
    struct weft_dbq *next;
    struct dbconn *conn;
    weft_dbloop_cb cb;
    void *arg;
    weft_dbstmt st; /* what is sent, and the results that came (db_stmt.c) */
    int abandoned;  /* its caller already got WEFT_TIMEOUT, or was cancelled */
    uint64_t start_ns;
    weft_timer timeout;
    weft_dbloop *owner;
    /* copies, so the statement survives its request: st's text and parameters */
};
typedef struct weft_dbq dbq;

typedef struct dbconn {
    weft_dbloop *owner;
    int state;
    PGconn *pg;
    h2o_socket_t *sock;
    int sock_src_fd; /* the libpq fd `sock` wraps a dup of */
    PostgresPollingStatusType poll;
    dbq *head, *tail; /* sent, awaiting results, in order */
    size_t inflight;
    weft_stmt_cache stmts;
    uint64_t backoff_ms;
    weft_timer retry;
    struct dbconn *next_unflushed; /* on this thread's `unflushed` list */
    int on_unflushed;
} dbconn;

struct weft_dbloop {
    weft_loop *loop;
    weft_db_cfg cfg;
    weft_db_params params;
    dbconn *conns;
    int n;
    dbq *wait_head, *wait_tail; /* waiting for a connection to come up */
    int reported_down;
    uint64_t epoch; /* sessions opened so far: a transaction notices a reconnect */
    weft_dbloop *next_retired;
    const char *session_sql; /* run first on every new connection (pooler = "session"), or NULL */
    char session_buf[64];
    char timeout_ms[16]; /* weft_db_timeout_sql's $1 */
    /* weft_dbloop_watch */
    weft_dbloop_up_fn on_up;
    weft_dbloop_down_fn on_down;
    weft_dbloop_notify_fn on_notify;
    void *watch_ctx;
};

/* db_loopq.c */
dbq *weft__dbq_new(weft_dbloop *d, const char *sql, int n, const char *const *params, weft_dbloop_cb cb, void *arg);
/* Frees q without telling its caller (who gets the outcome directly). */
void weft__dbq_free(dbq *q);
void weft__dbq_finish(dbq *q, int rc, PGresult *res);
void weft__dbloop_wait_unlink(dbq *q);
void weft__dbloop_fail_waiting(weft_dbloop *d, int rc);

#endif
