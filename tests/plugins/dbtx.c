/*
 * Fixture "dbtx": transactions from the host's side (plugin API 1.1).
 *
 *   default       BEGIN at ?iso=0|1|2, reads the isolation level and the
 *                 backend pid twice (one session for the whole transaction),
 *                 sleeps ?hold_ms in the database, COMMITs; answers
 *                 "iso=<level> same_session=<0|1> commit=<rc>", or 503 with
 *                 Retry-After when db_begin gave WEFT_UNAVAILABLE.
 *   leak = true   BEGIN, then an UPDATE nobody may ever see (account 100
 *                 gets a million), and returns with the transaction open: the
 *                 host must roll it back and log a plugin bug.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/plugin.h>

static const weft_host *host;

#define SQL_INFO "SELECT current_setting('transaction_isolation'), pg_backend_pid()::text"
#define SQL_PID "SELECT pg_backend_pid()::text, pg_sleep($1::float8 / 1000)::text"
#define SQL_LEAK "UPDATE account SET balance = balance + 1000000 WHERE id = 100"

static int tx_init(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    if (!WEFT_HOST_HAS(h, db_rollback_async)) {
        h->init_error(ctx, "needs plugin API 1.1");
        return WEFT_ERROR;
    }
    *state = (void *)(intptr_t)h->opt_bool(ctx, "leak", 0);
    return WEFT_OK;
}

static void tx_fini(void *state) { (void)state; }

static int iso_of(weft_req *req)
{
    const char *q = host->req_query(req, "iso");
    return q != NULL ? atoi(q) : WEFT_REPEATABLE_READ;
}

static int unavailable(weft_req *req, int rc)
{
    if (rc == WEFT_UNAVAILABLE) {
        int sent = host->res_error(req, 503, "no transaction connection");
        host->res_header(req, "retry-after", "1"); /* after res_error, which replaces the headers too */
        return sent;
    }
    return host->res_error(req, 500, "begin failed");
}

static int tx_handle(weft_req *req, void *state)
{
    int rc = host->db_begin(req, iso_of(req));
    if (rc != WEFT_OK)
        return unavailable(req, rc);
    weft_result *res = NULL;
    if (state != NULL) {
        rc = host->db_query(req, SQL_LEAK, 0, NULL, &res);
        host->result_free(res);
        return host->res_printf(req, "leaked update=%d", rc);
    }
    const char *hold = host->req_query(req, "hold_ms");
    const char *params[] = {hold != NULL ? hold : "0"};
    weft_result *r2 = NULL;
    if (host->db_query(req, SQL_INFO, 0, NULL, &res) != WEFT_OK ||
        host->db_query(req, SQL_PID, 1, params, &r2) != WEFT_OK) {
        host->result_free(res);
        host->result_free(r2);
        host->db_rollback(req);
        return WEFT_ERROR;
    }
    int same = strcmp(host->result_value(res, 0, 1), host->result_value(r2, 0, 0)) == 0;
    host->res_printf(req, "iso=%s same_session=%d", host->result_value(res, 0, 0), same);
    host->result_free(res);
    host->result_free(r2);
    return host->res_printf(req, " commit=%d", host->db_commit(req));
}

/* ---- reactive ---- */

typedef struct step {
    weft_result *info;
    char hold[16];
} step;

static void finish(weft_req *req, step *s, int rc)
{
    host->result_free(s->info);
    free(s);
    host->done(req, rc);
}

static void on_commit(weft_req *req, void *arg, int rc)
{
    host->res_printf(req, " commit=%d", rc);
    finish(req, arg, WEFT_OK);
}

static void on_pid(weft_req *req, void *arg, int rc, weft_result *res)
{
    step *s = arg;
    if (rc != WEFT_OK) {
        host->result_free(res);
        host->db_rollback_async(req, on_commit, s);
        return;
    }
    int same = strcmp(host->result_value(s->info, 0, 1), host->result_value(res, 0, 0)) == 0;
    host->res_printf(req, "iso=%s same_session=%d", host->result_value(s->info, 0, 0), same);
    host->result_free(res);
    host->db_commit_async(req, on_commit, s);
}

static void on_info(weft_req *req, void *arg, int rc, weft_result *res)
{
    step *s = arg;
    s->info = res;
    if (rc != WEFT_OK) {
        host->db_rollback_async(req, on_commit, s);
        return;
    }
    const char *params[] = {s->hold};
    host->db_query_async(req, SQL_PID, 1, params, on_pid, s);
}

static void on_leaked(weft_req *req, void *arg, int rc, weft_result *res)
{
    host->result_free(res);
    host->res_printf(req, "leaked update=%d", rc);
    finish(req, arg, WEFT_OK); /* with the transaction still open */
}

static void on_begun(weft_req *req, void *arg, int rc)
{
    step *s = arg;
    if (rc != WEFT_OK) {
        finish(req, s, unavailable(req, rc));
        return;
    }
    if (s->hold[0] == '\0')
        host->db_query_async(req, SQL_LEAK, 0, NULL, on_leaked, s);
    else
        host->db_query_async(req, SQL_INFO, 0, NULL, on_info, s);
}

static int tx_handle_async(weft_req *req, void *state)
{
    step *s = calloc(1, sizeof *s);
    if (s == NULL)
        return WEFT_ERROR;
    const char *hold = host->req_query(req, "hold_ms");
    if (state == NULL)
        snprintf(s->hold, sizeof s->hold, "%s", hold != NULL ? hold : "0");
    host->db_begin_async(req, iso_of(req), on_begun, s);
    return WEFT_AGAIN;
}

static const weft_plugin dbtx_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "dbtx",
    .version = "1.0.0",
    .description = "test fixture: transactions, isolation, one session, auto-rollback",
    .init = tx_init,
    .fini = tx_fini,
    .handle = tx_handle,
    .handle_async = tx_handle_async,
};

const weft_plugin *weft_plugin_entry(void) { return &dbtx_plugin; }
