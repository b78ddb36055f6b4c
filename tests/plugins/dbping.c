/* Fixture: one parameterised statement through the host's database API,
 * blocking style and reactive, mapping outcomes to statuses the way a real
 * plugin should (503 when the database is unavailable). Option `sql`. */
#include <stdio.h>
#include <stdlib.h>
#include <weft/plugin.h>

static const weft_host *host;

static int init(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    *state = (void *)host->opt_string(ctx, "sql", "SELECT $1::int + 1");
    return WEFT_OK;
}

static int respond(weft_req *req, int rc, weft_result *res)
{
    if (rc == WEFT_OK)
        host->res_printf(req, "%s\n", host->result_value(res, 0, 0));
    else if (rc == WEFT_UNAVAILABLE || rc == WEFT_TIMEOUT)
        host->res_error(req, 503, rc == WEFT_TIMEOUT ? "database timeout" : "database unavailable");
    else
        host->res_error(req, 500, "database error");
    host->result_free(res);
    return WEFT_OK;
}

static const char *arg(weft_req *req)
{
    const char *n = host->req_query(req, "n");
    return n != NULL ? n : "41";
}

static int handle(weft_req *req, void *state)
{
    weft_result *res = NULL;
    const char *params[] = {arg(req)};
    int rc = host->db_query(req, state, 1, params, &res);
    return respond(req, rc, res);
}

static void on_result(weft_req *req, void *arg_, int rc, weft_result *res)
{
    respond(req, rc, res);
    host->done(req, WEFT_OK);
}

static int handle_async(weft_req *req, void *state)
{
    const char *params[] = {arg(req)};
    host->db_query_async(req, state, 1, params, on_result, NULL);
    return WEFT_AGAIN;
}

static const weft_plugin descriptor = {
    WEFT_PLUGIN_HEADER,
    .name = "dbping",
    .version = "1.0.0",
    .init = init,
    .handle = handle,
    .handle_async = handle_async,
};

WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &descriptor; }
