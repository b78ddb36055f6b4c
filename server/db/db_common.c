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

void weft_stmt_clear(weft_stmt_cache *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->sql[i]);
    free(c->sql);
    memset(c, 0, sizeof(*c));
}

void weft_db_params_init(weft_db_params *p, const weft_db_cfg *cfg)
{
    /* The conninfo is expanded first; later keywords override it, so the
     * server enforces our statement timeout and libpq our connect timeout. */
    snprintf(p->options, sizeof(p->options), "-c statement_timeout=%d", cfg->statement_timeout_ms);
    snprintf(p->timeout, sizeof(p->timeout), "%d", cfg->connect_timeout_s);
    int i = 0;
    p->keys[i] = "dbname", p->values[i++] = cfg->conninfo;
    p->keys[i] = "options", p->values[i++] = p->options;
    p->keys[i] = "connect_timeout", p->values[i++] = p->timeout;
    p->keys[i] = "application_name", p->values[i++] = "weft";
    if (cfg->password != NULL) /* database.password_file: a keyword, so no conninfo quoting */
        p->keys[i] = "password", p->values[i++] = cfg->password;
    p->keys[i] = NULL, p->values[i] = NULL;
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
    atomic_int_fast64_t open, busy, tx, waiting;
    atomic_uint_fast64_t reconnects, count, sum_ns;
    atomic_uint_fast64_t bucket[WEFT_HIST_BUCKETS];
} m;

void weft_db_metric_open(int delta) { atomic_fetch_add_explicit(&m.open, delta, memory_order_relaxed); }
void weft_db_metric_busy(int delta) { atomic_fetch_add_explicit(&m.busy, delta, memory_order_relaxed); }
void weft_db_metric_tx(int delta) { atomic_fetch_add_explicit(&m.tx, delta, memory_order_relaxed); }
void weft_db_metric_waiting(int delta) { atomic_fetch_add_explicit(&m.waiting, delta, memory_order_relaxed); }
void weft_db_metric_reconnect(void) { atomic_fetch_add_explicit(&m.reconnects, 1, memory_order_relaxed); }

void weft_db_metric_query(uint64_t elapsed_ns)
{
    int b = weft_hist_index(elapsed_ns);
    if (b < WEFT_HIST_BUCKETS)
        atomic_fetch_add_explicit(&m.bucket[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m.count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m.sum_ns, elapsed_ns, memory_order_relaxed);
}

void weft_db_metrics_render(FILE *f)
{
    weft_stats_write_header(f, "weft_db_connections_open", "gauge", "Database connections open.");
    fprintf(f, "weft_db_connections_open %lld\n", (long long)atomic_load(&m.open));
    weft_stats_write_header(f, "weft_db_connections_busy", "gauge", "Database connections running statements.");
    fprintf(f, "weft_db_connections_busy %lld\n", (long long)atomic_load(&m.busy));
    weft_stats_write_header(f, "weft_db_transactions_open", "gauge",
                            "Connections held by open transactions (including their rollback after a cancellation).");
    fprintf(f, "weft_db_transactions_open %lld\n", (long long)atomic_load(&m.tx));
    weft_stats_write_header(f, "weft_db_connection_waiters", "gauge",
                            "Requests waiting for a pool connection or a transaction connection.");
    fprintf(f, "weft_db_connection_waiters %lld\n", (long long)atomic_load(&m.waiting));
    weft_stats_write_header(f, "weft_db_reconnects_total", "counter", "Connections re-established after a failure.");
    fprintf(f, "weft_db_reconnects_total %llu\n", (unsigned long long)atomic_load(&m.reconnects));
    weft_stats_write_header(f, "weft_db_query_duration_seconds", "histogram", "Statement latency as seen by weft.");
    uint64_t buckets[WEFT_HIST_BUCKETS];
    for (int b = 0; b < WEFT_HIST_BUCKETS; b++)
        buckets[b] = atomic_load(&m.bucket[b]);
    weft_stats_write_histogram(f, "weft_db_query_duration_seconds", "", buckets, atomic_load(&m.count),
                               (double)atomic_load(&m.sum_ns) / 1e9);
}

int weft_db_cfg_equal(const weft_db_cfg *a, const weft_db_cfg *b)
{
    /* A rotated password (a reload re-reads database.password_file) is a new configuration. */
    int same_password = (a->password == NULL) == (b->password == NULL) &&
                        (a->password == NULL || strcmp(a->password, b->password) == 0);
    return same_password && strcmp(a->conninfo, b->conninfo) == 0 && a->pool_connections == b->pool_connections &&
           a->loop_connections == b->loop_connections && a->statement_timeout_ms == b->statement_timeout_ms &&
           a->connect_timeout_s == b->connect_timeout_s && a->tx_connections == b->tx_connections &&
           a->tx_wait_ms == b->tx_wait_ms;
}
