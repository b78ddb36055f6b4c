/* A statement's groups under one Sync, and its results (see db_stmt.h). */
#include <string.h>

#include "db/db_stmt.h"

/* The timeout's statement (weft_db_timeout_sql): its groups, or -1. */
static int send_timeout(PGconn *pg, weft_stmt_cache *stmts, int named, const char *ms)
{
    const char *v[1] = {ms};
    int pre = weft_db_send_stmt(pg, stmts, named, weft_db_timeout_sql, 1, v);
    return pre < 0 ? -1 : pre + 1;
}

int weft_dbstmt_send(weft_dbstmt *s, PGconn *pg, weft_stmt_cache *stmts, int unnamed, const char *timeout_ms)
{
    int named = !unnamed, before = 0, after = 0;
    /* The timeout goes ahead of a statement, behind a BEGIN: an isolation
     * level must come first in its transaction. */
    if ((s->flags & WEFT_DBQ_TIMED) && (before = send_timeout(pg, stmts, named, timeout_ms)) < 0)
        return -1;
    int own = weft_db_send_stmt(pg, stmts, named && !(s->flags & WEFT_DBQ_UNNAMED), s->sql, s->nparams, s->params);
    if (own == -2 && before == 0)
        return -2;
    if (own < 0)
        return -1;
    if ((s->flags & WEFT_DBQ_TIMED_BEGIN) && (after = send_timeout(pg, stmts, named, timeout_ms)) < 0)
        return -1;
    s->own = before + own;
    s->groups = s->own + 1 + after;
    s->group = s->synced = 0;
    return 0;
}

/* Not a success (NULL: nothing came, as good as a failure). */
static int failed(const PGresult *r)
{
    if (r == NULL)
        return 1;
    ExecStatusType st = PQresultStatus(r);
    return st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK;
}

int weft_dbstmt_feed(weft_dbstmt *s, PGresult *r)
{
    if (s->group == s->groups) {
        /* Its groups are in: a Sync ends it; anything else is a stray. */
        int sync = r != NULL && PQresultStatus(r) == PGRES_PIPELINE_SYNC;
        PQclear(r);
        return sync;
    }
    if (r == NULL)
        s->group++;
    else if (s->group == s->own && s->res == NULL)
        s->res = r;
    else if (s->prep_error == NULL && failed(r))
        s->prep_error = r; /* a Parse, or the timeout's: what the caller hears of */
    else
        PQclear(r);
    return 0;
}

/* A statement whose Parse failed, or whose name the server did not know (a
 * pooler that moved it to another server connection), is prepared afresh
 * next time; the second case is also said once, naming the setting. */
void weft_dbstmt_forget(weft_stmt_cache *stmts, const weft_db_cfg *cfg, const char *sql, int timed, int parse_failed,
                        const PGresult *res)
{
    const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (!parse_failed && (state == NULL || (strcmp(state, "26000") != 0 && strcmp(state, "42P05") != 0)))
        return;
    weft_db_statement_hint(cfg, res);
    const char *mine[2] = {sql, timed ? weft_db_timeout_sql : NULL};
    for (int i = 0; i < 2 && mine[i] != NULL; i++) {
        int idx = weft_stmt_find(stmts, mine[i]);
        if (idx >= 0)
            weft_stmt_forget(stmts, idx);
    }
}

PGresult *weft_dbstmt_take(weft_dbstmt *s, weft_stmt_cache *stmts, const weft_db_cfg *cfg, int *rc)
{
    int own_failure = s->res != NULL && failed(s->res) && PQresultStatus(s->res) != PGRES_PIPELINE_ABORTED;
    PGresult *res = s->prep_error != NULL && !own_failure ? s->prep_error : s->res;
    weft_dbstmt_forget(stmts, cfg, s->sql, (s->flags & (WEFT_DBQ_TIMED | WEFT_DBQ_TIMED_BEGIN)) != 0,
                       s->prep_error != NULL, res);
    *rc = weft_db_result_rc(res);
    if (res == s->res)
        s->res = NULL;
    else
        s->prep_error = NULL;
    return res;
}

void weft_dbstmt_clear(weft_dbstmt *s)
{
    PQclear(s->res);
    PQclear(s->prep_error);
    s->res = s->prep_error = NULL;
}
