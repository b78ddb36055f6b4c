/*
 * NOTIFY for plugins (the db group's version 2): a statement like any
 * other, SELECT pg_notify($1, $2), inside the request's transaction when
 * one is open (then delivered at its COMMIT), else a transaction of its own
 * (with the statement timeout behind a transaction pooler), on the loop
 * connection its channel hashes to: one sender's notifications on a
 * channel are committed, hence delivered to every listener, in the order
 * it sent them. Listening is db_listen.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "base/log.h"
#include "request/cancel.h"
#include "request/request.h"
#include "request/route.h"

/* PostgreSQL's own limit on a payload (with the default block size): "payload string too long" past it. */
#define MAX_PAYLOAD 7999

static const char notify_sql[] = "SELECT pg_notify($1, $2)";

static unsigned channel_key(const char *channel)
{
    unsigned h = 2166136261u; /* FNV-1a */
    for (const char *c = channel; *c; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    return h & 0xffffffu;
}

static int notify_refused(weft_req *r, const char *channel, const char *payload)
{
    if (weft_req_cancelled(r))
        return WEFT_CANCELLED;
    if (weft_db_channel_refused(r, "db->notify()", channel))
        return WEFT_ERROR;
    size_t len = payload != NULL ? strlen(payload) : 0;
    if (len > MAX_PAYLOAD) {
        weft_log_error("%s: db->notify(): a payload of %zu bytes on channel %s is over PostgreSQL's limit of %d "
                       "bytes; refused (WEFT_ERROR)",
                       r->route->label, len, channel, MAX_PAYLOAD);
        return WEFT_ERROR;
    }
    return 0;
}

int weft_db_notify(weft_req *r, const char *channel, const char *payload)
{
    int rc = notify_refused(r, channel, payload);
    if (rc != 0)
        return rc;
    const char *params[2] = {channel, payload != NULL ? payload : ""};
    weft_result *res = NULL;
    rc = weft_db_host_query_flags(r, notify_sql, 2, params, WEFT_DBQ_TIMED | WEFT_DBQ_ON(channel_key(channel)),
                                  &res);
    weft_db_host_result_free(res);
    return rc;
}

typedef struct notify_cb {
    weft_callback cb;
    void *arg;
} notify_cb;

static void on_notified(weft_req *r, void *arg, int rc, weft_result *res)
{
    notify_cb n = *(notify_cb *)arg;
    free(arg);
    weft_db_host_result_free(res);
    n.cb(r, n.arg, rc);
}

void weft_db_notify_async(weft_req *r, const char *channel, const char *payload, weft_callback cb, void *arg)
{
    int rc = notify_refused(r, channel, payload);
    notify_cb *n = rc == 0 ? malloc(sizeof(*n)) : NULL;
    if (n == NULL) {
        cb(r, arg, rc != 0 ? rc : WEFT_UNAVAILABLE);
        return;
    }
    *n = (notify_cb){cb, arg};
    const char *params[2] = {channel, payload != NULL ? payload : ""};
    weft_db_host_query_async_flags(r, notify_sql, 2, params, WEFT_DBQ_TIMED | WEFT_DBQ_ON(channel_key(channel)),
                                   on_notified, n);
}

