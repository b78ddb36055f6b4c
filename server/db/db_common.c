#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "base/log.h"
#include "ops/metrics.h"

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
            weft_fatal("out of memory");
        c->sql = grown;
        c->cap = cap;
    }
    c->sql[c->n] = strdup(sql);
    if (c->sql[c->n] == NULL)
        weft_fatal("out of memory");
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
    atomic_int_fast64_t open, busy;
    atomic_uint_fast64_t reconnects, count, sum_ns;
    atomic_uint_fast64_t bucket[WEFT_HIST_BUCKETS];
} m;

void weft_db_metric_open(int delta) { atomic_fetch_add_explicit(&m.open, delta, memory_order_relaxed); }
void weft_db_metric_busy(int delta) { atomic_fetch_add_explicit(&m.busy, delta, memory_order_relaxed); }
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
    fprintf(f, "# HELP weft_db_connections_open Database connections open.\n# TYPE weft_db_connections_open gauge\n"
               "weft_db_connections_open %lld\n",
            (long long)atomic_load(&m.open));
    fprintf(f, "# HELP weft_db_connections_busy Database connections running statements.\n"
               "# TYPE weft_db_connections_busy gauge\nweft_db_connections_busy %lld\n",
            (long long)atomic_load(&m.busy));
    fprintf(f, "# HELP weft_db_reconnects_total Connections re-established after a failure.\n"
               "# TYPE weft_db_reconnects_total counter\nweft_db_reconnects_total %llu\n",
            (unsigned long long)atomic_load(&m.reconnects));
    fprintf(f, "# HELP weft_db_query_duration_seconds Statement latency as seen by weft.\n"
               "# TYPE weft_db_query_duration_seconds histogram\n");
    uint64_t cum = 0;
    for (int b = 0; b < WEFT_HIST_BUCKETS; b++) {
        cum += atomic_load(&m.bucket[b]);
        fprintf(f, "weft_db_query_duration_seconds_bucket{le=\"%g\"} %llu\n", weft_hist_bounds[b],
                (unsigned long long)cum);
    }
    uint64_t count = atomic_load(&m.count);
    fprintf(f, "weft_db_query_duration_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)count);
    fprintf(f, "weft_db_query_duration_seconds_sum %.9f\nweft_db_query_duration_seconds_count %llu\n",
            (double)atomic_load(&m.sum_ns) / 1e9, (unsigned long long)count);
}
