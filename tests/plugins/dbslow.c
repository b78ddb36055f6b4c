/*
 * Fixture "dbslow": a transaction that takes a lock and then runs slowly,
 * for the cancellation tests (tests/integration/dbcancel.c).
 *
 *   GET ?key=K&s=S   BEGIN; pg_advisory_xact_lock(K) (blocks while another
 *                    transaction holds K; released by COMMIT or ROLLBACK
 *                    only); pg_sleep(S); COMMIT. Answers "ok".
 *
 * Each step's outcome is logged ("dbslow: begin=RC", "dbslow: locked key=K",
 * "dbslow: statement=RC") so a test can tell what a cancelled request got.
 * An advisory lock rather than a row lock keeps the accounts table, which
 * other suites check, out of it; both are transaction locks alike.
 */
#include <stdio.h>
#include <stdlib.h>

#include <weft/plugin.h>

static const weft_host *host;

#define SQL_LOCK "SELECT pg_advisory_xact_lock($1::bigint)::text"
#define SQL_SLEEP "SELECT pg_sleep($1::float8)::text"

static int slow_init(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    *state = NULL;
    if (!WEFT_HOST_HAS(h, db_rollback_async)) {
        h->init_error(ctx, "needs plugin API 1.1");
        return WEFT_ERROR;
    }
    return WEFT_OK;
}

static const char *arg(weft_req *req, const char *name, const char *dflt)
{
    const char *v = host->req_query(req, name);
    return v != NULL ? v : dflt;
}

static int fail(weft_req *req, int rc)
{
    if (rc == WEFT_UNAVAILABLE) {
        int sent = host->res_error(req, 503, "no transaction connection");
        host->res_header(req, "retry-after", "1"); /* after res_error, which replaces the headers too */
        return sent;
    }
    return host->res_error(req, 500, rc == WEFT_CANCELLED ? "cancelled" : "database error");
}

static int slow_handle(weft_req *req, void *state)
{
    (void)state;
    const char *key[] = {arg(req, "key", "1")}, *secs[] = {arg(req, "s", "0")};
    int rc = host->db_begin(req, WEFT_READ_COMMITTED);
    host->log(req, WEFT_LOG_INFO, "dbslow: begin=%d", rc);
    if (rc != WEFT_OK)
        return fail(req, rc);
    weft_result *res = NULL;
    rc = host->db_query(req, SQL_LOCK, 1, key, &res);
    host->result_free(res);
    if (rc == WEFT_OK) {
        host->log(req, WEFT_LOG_INFO, "dbslow: locked key=%s", key[0]);
        rc = host->db_query(req, SQL_SLEEP, 1, secs, &res);
        host->result_free(res);
    }
    if (rc != WEFT_OK) {
        host->log(req, WEFT_LOG_INFO, "dbslow: statement=%d", rc);
        host->db_rollback(req);
        return fail(req, rc);
    }
    rc = host->db_commit(req);
    return rc == WEFT_OK ? host->res_printf(req, "ok") : fail(req, rc);
}

/* ---- reactive: the same steps as callbacks ---- */

typedef struct slow {
    char key[24], secs[24];
    int rc;
} slow;

static void finish(weft_req *req, slow *s)
{
    int rc = s->rc == WEFT_OK ? host->res_printf(req, "ok") : fail(req, s->rc);
    free(s);
    host->done(req, rc);
}

static void on_end(weft_req *req, void *arg_, int rc)
{
    slow *s = arg_;
    if (s->rc == WEFT_OK)
        s->rc = rc;
    finish(req, s);
}

static void on_step(weft_req *req, void *arg_, int rc, weft_result *res);

static void on_slept(weft_req *req, void *arg_, int rc, weft_result *res)
{
    slow *s = arg_;
    host->result_free(res);
    if (rc != WEFT_OK) {
        host->log(req, WEFT_LOG_INFO, "dbslow: statement=%d", rc);
        s->rc = rc;
        host->db_rollback_async(req, on_end, s);
        return;
    }
    host->db_commit_async(req, on_end, s);
}

static void on_step(weft_req *req, void *arg_, int rc, weft_result *res)
{
    slow *s = arg_;
    host->result_free(res);
    if (rc != WEFT_OK) {
        on_slept(req, s, rc, NULL);
        return;
    }
    host->log(req, WEFT_LOG_INFO, "dbslow: locked key=%s", s->key);
    const char *secs[] = {s->secs};
    host->db_query_async(req, SQL_SLEEP, 1, secs, on_slept, s);
}

static void on_begun(weft_req *req, void *arg_, int rc)
{
    slow *s = arg_;
    host->log(req, WEFT_LOG_INFO, "dbslow: begin=%d", rc);
    if (rc != WEFT_OK) {
        s->rc = rc;
        finish(req, s);
        return;
    }
    const char *key[] = {s->key};
    host->db_query_async(req, SQL_LOCK, 1, key, on_step, s);
}

static int slow_handle_async(weft_req *req, void *state)
{
    (void)state;
    slow *s = calloc(1, sizeof *s);
    if (s == NULL)
        return WEFT_ERROR;
    snprintf(s->key, sizeof s->key, "%s", arg(req, "key", "1"));
    snprintf(s->secs, sizeof s->secs, "%s", arg(req, "s", "0"));
    host->db_begin_async(req, WEFT_READ_COMMITTED, on_begun, s);
    return WEFT_AGAIN;
}

static const weft_plugin dbslow_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "dbslow",
    .version = "1.0.0",
    .description = "test fixture: a slow statement holding a lock inside a transaction",
    .init = slow_init,
    .handle = slow_handle,
    .handle_async = slow_handle_async,
};

WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &dbslow_plugin; }
