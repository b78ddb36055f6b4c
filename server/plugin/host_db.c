/* The `db` and `tx` groups: db/'s statements and transactions, one call each with an optional callback. */
#include "db/db.h"
#include "db/db_tx.h"
#include "plugin/host.h"

static weft_rc db_query(weft_req *r, const char *sql, int n, const char *const *params, weft_result **res,
                        weft_db_callback cb, void *arg)
{
    if (cb == NULL) {
        weft_result *out = NULL;
        int rc = weft_db_host_db_query(r, sql, n, params, &out);
        if (res != NULL)
            *res = out;
        else
            weft_db_host_result_free(out);
        return (weft_rc)rc;
    }
    weft_db_host_db_query_async(r, sql, n, params, cb, arg);
    return WEFT_AGAIN;
}

static weft_rc db_listen(weft_req *r, const char *channel, weft_db_notify_fn fn, void *fn_arg, weft_callback cb,
                         void *arg)
{
    if (cb == NULL)
        return (weft_rc)weft_db_listen(r, channel, fn, fn_arg);
    weft_db_listen_async(r, channel, fn, fn_arg, cb, arg);
    return WEFT_AGAIN;
}

static weft_rc db_unlisten(weft_req *r, const char *channel, weft_db_notify_fn fn, void *fn_arg)
{
    return (weft_rc)weft_db_unlisten(r, channel, fn, fn_arg);
}

static weft_rc db_notify(weft_req *r, const char *channel, const char *payload, weft_callback cb, void *arg)
{
    if (cb == NULL)
        return (weft_rc)weft_db_notify(r, channel, payload);
    weft_db_notify_async(r, channel, payload, cb, arg);
    return WEFT_AGAIN;
}

const weft_host_db weft_host_db_group = {
    .struct_size = sizeof(weft_host_db),
    .version = WEFT_HOST_DB_VERSION,
    .query = db_query,
    .result_rows = weft_db_host_result_rows,
    .result_cols = weft_db_host_result_cols,
    .result_name = weft_db_host_result_name,
    .result_value = weft_db_host_result_value,
    .result_affected = weft_db_host_result_affected,
    .result_sqlstate = weft_db_host_result_sqlstate,
    .result_error = weft_db_host_result_error,
    .result_free = weft_db_host_result_free,
    .listen = db_listen,
    .unlisten = db_unlisten,
    .notify = db_notify,
    .channel_ok = weft_db_channel_ok,
};

static weft_rc tx_begin(weft_req *r, int isolation, weft_callback cb, void *arg)
{
    if (cb == NULL)
        return (weft_rc)weft_db_tx_db_begin(r, isolation);
    weft_db_tx_db_begin_async(r, isolation, cb, arg);
    return WEFT_AGAIN;
}

static weft_rc tx_commit(weft_req *r, weft_callback cb, void *arg)
{
    if (cb == NULL)
        return (weft_rc)weft_db_tx_db_commit(r);
    weft_db_tx_db_commit_async(r, cb, arg);
    return WEFT_AGAIN;
}

static weft_rc tx_rollback(weft_req *r, weft_callback cb, void *arg)
{
    if (cb == NULL)
        return (weft_rc)weft_db_tx_db_rollback(r);
    weft_db_tx_db_rollback_async(r, cb, arg);
    return WEFT_AGAIN;
}

const weft_host_tx weft_host_tx_group = {
    .struct_size = sizeof(weft_host_tx),
    .version = WEFT_HOST_TX_VERSION,
    .begin = tx_begin,
    .commit = tx_commit,
    .rollback = tx_rollback,
};
