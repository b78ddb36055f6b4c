#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "base/log.h"
#include "base/stats.h"

int weft_stmt_find(const weft_stmt_cache *c, const char *sql)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->sql[i] != NULL && strcmp(c->sql[i], sql) == 0)
            return (int)i;
    return -1;
}

int weft_stmt_add(weft_stmt_cache *c, const char *sql)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        char **grown = realloc(c->sql, cap * sizeof(char *));
        if (grown == NULL)
            return -1;
        c->sql = grown;
        c->cap = cap;
    }
    c->sql[c->n] = strdup(sql);
    if (c->sql[c->n] == NULL)
        return -1;
    return (int)c->n++;
}

void weft_stmt_forget(weft_stmt_cache *c, int index)
{
    /* The slot stays (its name must not be reused for other SQL on this connection). */
    free(c->sql[index]);
    c->sql[index] = NULL;
}

int weft_db_send_stmt(PGconn *pg, weft_stmt_cache *stmts, int prepared, const char *sql, int n,
                      const char *const *params)
{
    if (!prepared)
        return PQsendQueryParams(pg, sql, n, NULL, params, NULL, NULL, 0) ? 0 : -1;
    char name[32];
    int pre = 0, idx = weft_stmt_find(stmts, sql);
    if (idx < 0) {
        if ((idx = weft_stmt_add(stmts, sql)) < 0)
            return -2;
        snprintf(name, sizeof(name), "weft_%d", idx);
        if (!PQsendPrepare(pg, name, sql, n, NULL))
            return -1;
        pre = 1;
    }
    snprintf(name, sizeof(name), "weft_%d", idx);
    return PQsendQueryPrepared(pg, name, n, params, NULL, NULL, 0) ? pre : -1;
}

void weft_stmt_clear(weft_stmt_cache *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->sql[i]);
    free(c->sql);
    memset(c, 0, sizeof(*c));
}

void weft_db_params_init(weft_db_params *p, const weft_db_cfg *cfg, const char *conninfo)
{
    /* The conninfo is expanded first; later keywords override it, so libpq
     * enforces our connect timeout. A direct connection gets the statement
     * timeout as a startup option, free of charge; a pooler refuses that
     * parameter (PgBouncer: "unsupported startup parameter: options"), so
     * behind one it is set by SQL instead (weft_db_timeout_sql). */
    snprintf(p->options, sizeof(p->options), "-c statement_timeout=%d", cfg->statement_timeout_ms);
    snprintf(p->timeout, sizeof(p->timeout), "%d", cfg->connect_timeout_s);
    int i = 0;
    p->keys[i] = "dbname", p->values[i++] = conninfo != NULL ? conninfo : cfg->conninfo;
    if (cfg->pooler == WEFT_POOLER_NONE)
        p->keys[i] = "options", p->values[i++] = p->options;
    p->keys[i] = "connect_timeout", p->values[i++] = p->timeout;
    p->keys[i] = "application_name", p->values[i++] = "weft";
    if (cfg->password != NULL) /* database.password_file: a keyword, so no conninfo quoting */
        p->keys[i] = "password", p->values[i++] = cfg->password;
    p->keys[i] = NULL, p->values[i] = NULL;
}

const char *weft_db_session_sql(const weft_db_cfg *cfg, char *buf, size_t size)
{
    if (cfg->pooler != WEFT_POOLER_SESSION)
        return NULL;
    snprintf(buf, size, "SET statement_timeout = %d", cfg->statement_timeout_ms);
    return buf;
}

const char *const weft_db_timeout_sql = "SELECT set_config('statement_timeout', $1, true)";

void weft_db_cfg_copy(weft_db_cfg *dst, const weft_db_cfg *src)
{
    *dst = *src;
    dst->conninfo = strdup(src->conninfo);
    dst->listen_conninfo = src->listen_conninfo != NULL ? strdup(src->listen_conninfo) : NULL;
    dst->password = src->password != NULL ? strdup(src->password) : NULL; /* outlives the config */
}

void weft_db_cfg_release(weft_db_cfg *cfg)
{
    free(cfg->conninfo);
    free(cfg->listen_conninfo);
    free(cfg->password);
    cfg->conninfo = cfg->listen_conninfo = cfg->password = NULL;
}

/* What an operator can do about a connection that failed, appended to its
 * reason; "" when weft has nothing to add. */
const char *weft_db_connect_hint(const char *why)
{
    if (why != NULL && strstr(why, "unsupported startup parameter") != NULL)
        return " (a connection pooler such as PgBouncer refuses that startup parameter: set database.pooler = "
               "\"session\" or \"transaction\", so that weft sends none, and take `options` out of "
               "database.conninfo and PGOPTIONS)";
    return "";
}

void weft_db_statement_hint(const weft_db_cfg *cfg, const PGresult *res)
{
    static atomic_int told;
    const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    /* 42P05 duplicate_prepared_statement, 26000 invalid_sql_statement_name:
     * weft's own names, made on one server connection, met on another. */
    if (state == NULL || (strcmp(state, "42P05") != 0 && strcmp(state, "26000") != 0) || cfg->unnamed)
        return;
    const char *msg = PQresultErrorMessage(res);
    if (msg == NULL || strstr(msg, "\"weft_") == NULL || atomic_exchange(&told, 1))
        return;
    char line[256];
    snprintf(line, sizeof(line), "%s", msg);
    line[strcspn(line, "\n")] = '\0';
    weft_log_error("database: %s: the connection goes through a pooler in transaction mode that does not keep "
                   "prepared statements (PgBouncer before 1.21, or max_prepared_statements = 0): set %s "
                   "(unnamed statements; docs/DATABASE.md)",
                   line, cfg->pooler == WEFT_POOLER_TRANSACTION ? "database.prepared = false"
                                                                : "database.pooler = \"transaction\"");
}

int weft_db_result_rc(const PGresult *res)
{
    if (res == NULL)
        return WEFT_UNAVAILABLE;
    switch (PQresultStatus(res)) {
    case PGRES_TUPLES_OK:
    case PGRES_COMMAND_OK:
        return WEFT_OK;
    default: {
        const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        /* 57014 query_canceled: the server's statement_timeout fired. */
        if (state != NULL && strcmp(state, "57014") == 0)
            return WEFT_TIMEOUT;
        /* Class 08 (connection exception) and 57P (operator intervention:
         * shutdown, crash) mean the database, not the statement, failed. */
        if (state != NULL && (strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0))
            return WEFT_UNAVAILABLE;
        return WEFT_ERROR;
    }
    }
}

uint64_t weft_db_backoff_next(uint64_t current_ms)
{
    if (current_ms == 0)
        return 100;
    return current_ms >= 2500 ? 5000 : current_ms * 2;
}

static struct {
    atomic_int_fast64_t open, busy, tx, waiting, channels;
    atomic_uint_fast64_t reconnects, count, sum_ns, relistens, notifications;
    atomic_uint_fast64_t bucket[WEFT_HIST_BUCKETS];
} m;

void weft_db_metric_open(int delta) { atomic_fetch_add_explicit(&m.open, delta, memory_order_relaxed); }
void weft_db_metric_busy(int delta) { atomic_fetch_add_explicit(&m.busy, delta, memory_order_relaxed); }
void weft_db_metric_tx(int delta) { atomic_fetch_add_explicit(&m.tx, delta, memory_order_relaxed); }
void weft_db_metric_waiting(int delta) { atomic_fetch_add_explicit(&m.waiting, delta, memory_order_relaxed); }
void weft_db_metric_reconnect(void) { atomic_fetch_add_explicit(&m.reconnects, 1, memory_order_relaxed); }
void weft_db_metric_listen_channels(int delta) { atomic_fetch_add_explicit(&m.channels, delta, memory_order_relaxed); }
void weft_db_metric_relisten(void) { atomic_fetch_add_explicit(&m.relistens, 1, memory_order_relaxed); }
void weft_db_metric_notification(void) { atomic_fetch_add_explicit(&m.notifications, 1, memory_order_relaxed); }

void weft_db_metric_query(uint64_t elapsed_ns)
{
    int b = weft_hist_index(elapsed_ns);
    if (b < WEFT_HIST_BUCKETS)
        atomic_fetch_add_explicit(&m.bucket[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m.count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m.sum_ns, elapsed_ns, memory_order_relaxed);
}

/* One sample of a series without labels, with its HELP and TYPE. */
static void put(FILE *f, const char *name, const char *type, const char *help, long long value)
{
    weft_stats_write_header(f, name, type, help);
    fprintf(f, "%s %lld\n", name, value);
}

void weft_db_metrics_render(FILE *f)
{
    put(f, "weft_db_connections_open", "gauge", "Database connections open.", (long long)atomic_load(&m.open));
    put(f, "weft_db_connections_busy", "gauge", "Database connections running statements.",
        (long long)atomic_load(&m.busy));
    put(f, "weft_db_transactions_open", "gauge",
        "Connections held by open transactions (including their rollback after a cancellation).",
        (long long)atomic_load(&m.tx));
    put(f, "weft_db_connection_waiters", "gauge", "Requests waiting for a pool connection or a transaction connection.",
        (long long)atomic_load(&m.waiting));
    put(f, "weft_db_reconnects_total", "counter", "Connections re-established after a failure.",
        (long long)atomic_load(&m.reconnects));
    put(f, "weft_db_listen_channels", "gauge",
        "Channels the loops' listener connections LISTEN on (per loop: a channel twice on two loops).",
        (long long)atomic_load(&m.channels));
    put(f, "weft_db_listen_reconnects_total", "counter",
        "Listener connections re-established and their channels LISTENed again.", (long long)atomic_load(&m.relistens));
    put(f, "weft_db_notifications_received_total", "counter", "Notifications read on the listener connections.",
        (long long)atomic_load(&m.notifications));
    weft_stats_write_header(f, "weft_db_query_duration_seconds", "histogram", "Statement latency as seen by weft.");
    uint64_t buckets[WEFT_HIST_BUCKETS];
    for (int b = 0; b < WEFT_HIST_BUCKETS; b++)
        buckets[b] = atomic_load(&m.bucket[b]);
    weft_stats_write_histogram(f, "weft_db_query_duration_seconds", "", buckets, atomic_load(&m.count),
                               (double)atomic_load(&m.sum_ns) / 1e9);
}

static int same_string(const char *a, const char *b) { return (a == NULL) == (b == NULL) && (a == NULL || strcmp(a, b) == 0); }

int weft_db_cfg_equal(const weft_db_cfg *a, const weft_db_cfg *b)
{
    /* A rotated password (a reload re-reads database.password_file) is a new configuration. */
    return same_string(a->password, b->password) && strcmp(a->conninfo, b->conninfo) == 0 &&
           same_string(a->listen_conninfo, b->listen_conninfo) && a->pooler == b->pooler &&
           a->unnamed == b->unnamed && a->pool_connections == b->pool_connections &&
           a->loop_connections == b->loop_connections && a->statement_timeout_ms == b->statement_timeout_ms &&
           a->connect_timeout_s == b->connect_timeout_s && a->tx_connections == b->tx_connections &&
           a->tx_wait_ms == b->tx_wait_ms;
}
