/* The route and loop of db/'s unit tests (see dbunit.h). */
#include "dbunit.h"

#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/db.h"
#include "db/db_tx.h"
#include "dispatch/dispatch.h"
#include "fakepq.h"
#include "harness.h"
#include "unitloop.h"

static wt_route rt;
static weft_db_cfg cfg;
static int in_tx; /* the statement runs between db_begin and db_commit */
static int statement_timeout_ms = 60000;
static int pooler = WEFT_POOLER_NONE, unnamed;

static const char *param_of(const weft_req *r) { return strrchr(r->path, '/') + 1; }

static void answer(weft_req *r, int rc, weft_result *res)
{
    char body[96];
    wt_db_format(body, sizeof(body), rc, rc == WEFT_OK ? weft_db_host_result_value(res, 0, 0) : NULL);
    weft_request_res_printf(r, "%s", body);
    weft_db_host_result_free(res);
}

/* "begin=B " + the statement's body + " commit=C" (the statement and the commit only after a BEGIN that worked). */
static void answer_tx(weft_req *r, int begin, int rc, weft_result *res, int commit)
{
    weft_request_res_printf(r, "begin=%d ", begin);
    answer(r, rc, res);
    weft_request_res_printf(r, " commit=%d", commit);
}

static int query_blocking(weft_req *r, void *state)
{
    (void)state;
    const char *params[] = {param_of(r)};
    weft_result *res = NULL;
    if (!in_tx) {
        int rc = weft_db_host_db_query(r, "SELECT $1", 1, params, &res);
        answer(r, rc, res);
        return WEFT_OK;
    }
    int begin = weft_db_tx_db_begin(r, WEFT_READ_COMMITTED);
    int rc = begin == WEFT_OK ? weft_db_host_db_query(r, "SELECT $1", 1, params, &res) : begin;
    int commit = begin == WEFT_OK ? weft_db_tx_db_commit(r) : begin;
    answer_tx(r, begin, rc, res, commit);
    return WEFT_OK;
}

/* The reactive transaction: begin, statement and commit, each from the last one's callback. */
typedef struct tx_steps {
    int begin, rc;
    weft_result *res;
} tx_steps;

static void on_tx_commit(weft_req *r, void *arg, int rc)
{
    tx_steps *t = arg;
    answer_tx(r, t->begin, t->rc, t->res, rc);
    weft_dispatch_done(r, WEFT_OK);
}

static void on_tx_result(weft_req *r, void *arg, int rc, weft_result *res)
{
    tx_steps *t = arg;
    t->rc = rc;
    t->res = res;
    weft_db_tx_db_commit_async(r, on_tx_commit, t);
}

static void on_tx_begin(weft_req *r, void *arg, int rc)
{
    tx_steps *t = arg;
    t->begin = rc;
    if (rc != WEFT_OK) {
        answer_tx(r, rc, rc, NULL, rc);
        weft_dispatch_done(r, WEFT_OK);
        return;
    }
    const char *params[] = {param_of(r)};
    weft_db_host_db_query_async(r, "SELECT $1", 1, params, on_tx_result, t);
}

static void on_result(weft_req *r, void *arg, int rc, weft_result *res)
{
    (void)arg;
    answer(r, rc, res);
    weft_dispatch_done(r, WEFT_OK);
}

static int query_reactive(weft_req *r, void *state)
{
    (void)state;
    if (in_tx) {
        tx_steps *t = weft_req_alloc(r, sizeof(*t));
        cr_assert_not_null(t);
        weft_db_tx_db_begin_async(r, WEFT_READ_COMMITTED, on_tx_begin, t);
        return WEFT_AGAIN;
    }
    const char *params[] = {param_of(r)};
    weft_db_host_db_query_async(r, "SELECT $1", 1, params, on_result, NULL);
    return WEFT_AGAIN;
}

static const weft_plugin querier = {WEFT_PLUGIN_HEADER, .name = "querier", .handle = query_blocking,
                                    .handle_async = query_reactive};

void wt_db_transactions(int on) { in_tx = on; }

void wt_db_statement_timeout(int ms) { statement_timeout_ms = ms; }

void wt_db_pooler(int mode, int unnamed_statements)
{
    pooler = mode;
    unnamed = unnamed_statements;
}

void wt_db_start(int policy, int pool_connections, int libpq17)
{
    wt_db_start_with(&querier, policy, pool_connections, libpq17);
}

void wt_db_start_with(const weft_plugin *desc, int policy, int pool_connections, int libpq17)
{
    wt_pq_install(libpq17);
    cfg = (weft_db_cfg){.conninfo = "weft_unit", .pool_connections = pool_connections, .loop_connections = 1,
                        .statement_timeout_ms = statement_timeout_ms, .connect_timeout_s = 5, .tx_connections = 1,
                        .tx_wait_ms = 30000, .configured = 1, .pooler = pooler, .unnamed = unnamed};
    wt_route_init(&rt, desc, policy, 4, 16);
    rt.route.db_cfg = &cfg;
    weft_dbpool *pool = weft_dbpool_new(&cfg);
    cr_assert_not_null(pool);
    weft_route_set_dbpool(&rt.route, pool);
    weft_db_attach();
    weft_db_tx_attach();
    wt_loops_start(1);
}

weft_req *wt_db_req(int id, const char *param, int start)
{
    weft_req *r = wt_req_new(&rt, 0, id);
    char *path = weft_req_alloc(r, 128);
    cr_assert_not_null(path);
    snprintf(path, 128, "/t/%s", param);
    r->path = path;
    if (start)
        wt_req_start(r);
    return r;
}

typedef struct together {
    weft_req **rs;
    int n;
} together;

static void start_each(void *arg)
{
    together *t = arg;
    for (int i = 0; i < t->n; i++)
        weft_dispatch_start(t->rs[i]);
}

void wt_db_start_together(weft_req **rs, int n)
{
    together t = {rs, n};
    wt_on_loop(0, start_each, &t);
}

typedef struct cancel_arg {
    weft_req *r;
    int reason;
} cancel_arg;

static void cancel_on_loop(void *arg)
{
    cancel_arg *c = arg;
    weft_dispatch_cancel(c->r, c->reason);
}

void wt_db_cancel(weft_req *r, int reason)
{
    cancel_arg c = {r, reason};
    wt_on_loop(0, cancel_on_loop, &c);
}

void wt_db_stop(void)
{
    wt_loops_stop();
    weft_dbpool_free(weft_route_dbpool(&rt.route));
    weft_route_set_dbpool(&rt.route, NULL);
    wt_route_fini(&rt);
}

void wt_db_format(char *buf, size_t size, int rc, const char *value)
{
    snprintf(buf, size, "rc=%d value=%s", rc, value != NULL ? value : "-");
}

void wt_db_expect(const wt_done *d, int rc, const char *value)
{
    char want[96];
    wt_db_format(want, sizeof(want), rc, value);
    cr_assert_str_eq(d->body, want, "request %d answered \"%s\", not \"%s\"", d->id, d->body, want);
}

long wt_db_gauge(const char *name)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    cr_assert_not_null(f);
    weft_db_metrics_render(f);
    fclose(f);
    char key[96];
    snprintf(key, sizeof(key), "\n%s ", name);
    const char *at = strstr(text, key);
    cr_assert_not_null(at, "no %s in:\n%s", name, text);
    long v = strtol(at + strlen(key), NULL, 10);
    free(text);
    return v;
}

void wt_db_wait_gauge(const char *name, long value, double limit_ms)
{
    double deadline = wt_now_ms() + limit_ms;
    while (wt_db_gauge(name) != value && wt_now_ms() < deadline)
        usleep(1000);
    cr_assert_eq(wt_db_gauge(name), value, "%s stayed at %ld, not %ld, for %.0f ms", name, wt_db_gauge(name), value,
                 limit_ms);
}
