/*
 * Cancellation inside the database layer, under every policy, against the
 * PostgreSQL in PG*: a request waiting for a connection leaves the queue
 * when it is withdrawn and never takes one; a statement running inside a
 * transaction (sleeping, or blocked on a lock another transaction holds) is
 * cancelled on the server, the transaction rolled back at once, its lock
 * released and its connection back clean. Each test runs its own server
 * and waits on its gauges (weft_db_transactions_open,
 * weft_db_connection_waiters) and log lines, never on sleeps.
 *
 * The fixture "dbslow" takes pg_advisory_xact_lock(key) and then sleeps;
 * keys are per policy so the tests, which run in parallel, never meet.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static int policy_key(const wt_policy *p, int base)
{
    return base + (strcmp(p->name, "pool") == 0 ? 1 : strcmp(p->name, "coroutine") == 0 ? 2 : 3);
}

/* Polls `sql` (a count) until it is `want` or the limit passes; returns the last value. */
static long long await_count(const char *sql, long long want, double limit_ms)
{
    long long n = -1;
    for (double end = wt_now_ms() + limit_ms; (n = wt_sql_value(sql)) != want && wt_now_ms() < end; usleep(20000))
        ;
    return n;
}

/* Sessions waiting for advisory lock `key`. */
static long long await_lock_waiters(int key, long long want, double limit_ms)
{
    char sql[200];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %d AND NOT granted",
             key);
    return await_count(sql, want, limit_ms);
}

static void start(wt_server *s, const wt_policy *p, const char *db, const char *extra_routes)
{
    wt_need_pg();
    char conf[1536];
    snprintf(conf, sizeof(conf),
             "threads = 1; listen = [\"127.0.0.1:0\"];\n"
             "pools = ( { name = \"default\"; size = 8; queue = 100; } );\n"
             "database = { statement_timeout_ms = 60000; %s };\n"
             "routes = (\n"
             "  { path = \"/tx\"; plugin = \"dbslow\"; dispatch = \"%s\"; timeout_ms = 0; },\n"
             "  { path = \"/tx504\"; plugin = \"dbslow\"; dispatch = \"%s\"; timeout_ms = 400; }%s\n"
             ");\n",
             db, p->name, p->name, extra_routes);
    wt_start(s, conf);
}

static void get_ok_soon(wt_server *s, const char *path, double limit_ms)
{
    double t0 = wt_now_ms();
    wt_resp r;
    cr_assert_eq(wt_http(s, "GET", path, NULL, &r), 0);
    double took = wt_now_ms() - t0;
    cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body);
    cr_expect_lt(took, limit_ms, "%s took %.0f ms: a withdrawn transaction still held its lock", path, took);
    wt_resp_free(&r);
}

/* (a) One transaction connection; a second request waits for it and
 * leaves: it is out of the queue at once and never begins. Then the holder
 * leaves mid-statement: its pg_sleep is cancelled and rolled back at once. */
ParameterizedTestParameters(dbcancel, waiting_for_a_transaction_connection_ends_on_cancel) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, dbcancel, waiting_for_a_transaction_connection_ends_on_cancel, .timeout = 120)
{
    wt_server s = {0};
    start(&s, p, "tx_connections = 1; tx_wait_ms = 60000;", "");
    int key = policy_key(p, 7100);
    char hold[96], next[96];
    snprintf(hold, sizeof(hold), "/tx?key=%d&s=60", key);
    snprintf(next, sizeof(next), "/tx?key=%d&s=0", key);
    int holder = wt_send_get(&s, hold);
    free(wt_wait_log(&s, "dbslow: locked key=", 20000));
    wt_await_metric(&s, "weft_db_transactions_open", 1, 1, 20000);
    int waiter = wt_send_get(&s, next);
    wt_await_metric(&s, "weft_db_connection_waiters", 1, 1, 20000);
    close(waiter);
    double t_left = wt_await_metric(&s, "weft_db_connection_waiters", 0, 0, 20000);
    free(wt_wait_log(&s, "dbslow: begin=-5", 20000)); /* WEFT_CANCELLED, not a connection */
    cr_expect_eq(wt_metric(&s, "weft_db_transactions_open"), 1, "the withdrawn waiter took a connection");

    close(holder);
    double t_rolled = wt_await_metric(&s, "weft_db_transactions_open", 0, 0, 20000);
    free(wt_wait_log(&s, "request cancelled (the client went away) with a transaction open; rolled back", 20000));
    printf("dbcancel: %s: a waiter for the transaction connection left in %.0f ms; the holder's 60 s statement "
           "was cancelled and rolled back in %.0f ms\n",
           p->name, t_left, t_rolled);
    /* The lock is free and the connection is clean. */
    get_ok_soon(&s, next, 20000);
    cr_expect_eq(wt_metric(&s, "weft_db_connection_waiters"), 0);
    cr_expect_eq(wt_metric(&s, "weft_db_transactions_open"), 0);
    wt_finish(&s);
}

/* (b) A request blocked on a lock that another transaction holds reaches
 * its deadline: 504 at ~400 ms, its statement cancelled on the server (no
 * session waits for the lock any more), its transaction rolled back and
 * logged; then the holder's client leaves and the lock is free at once. */
ParameterizedTestParameters(dbcancel, deadline_inside_a_lock_wait_rolls_back) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, dbcancel, deadline_inside_a_lock_wait_rolls_back, .timeout = 120)
{
    wt_server s = {0};
    start(&s, p, "tx_connections = 2; tx_wait_ms = 60000;", "");
    int key = policy_key(p, 7200);
    char hold[96], blocked[96], next[96];
    snprintf(hold, sizeof(hold), "/tx?key=%d&s=60", key);
    snprintf(blocked, sizeof(blocked), "/tx504?key=%d&s=0", key);
    snprintf(next, sizeof(next), "/tx?key=%d&s=0", key);
    int holder = wt_send_get(&s, hold);
    free(wt_wait_log(&s, "dbslow: locked key=", 20000));

    double t0 = wt_now_ms();
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", blocked, NULL, &r), 0);
    double t_504 = wt_now_ms() - t0;
    cr_expect_eq(r.status, 504, "%s: %ld %s", blocked, r.status, r.body);
    wt_resp_free(&r);
    char needle[160];
    snprintf(needle, sizeof(needle), "/tx504 (plugin dbslow 1.0.0): request cancelled (its deadline passed)");
    free(wt_wait_log(&s, needle, 5000));
    double t_free = wt_await_metric(&s, "weft_db_transactions_open", 0, 1, 5000);
    cr_expect_eq(await_lock_waiters(key, 0, 5000), 0, "the cancelled statement still waits for the lock");

    close(holder);
    wt_await_metric(&s, "weft_db_transactions_open", 0, 0, 5000);
    printf("dbcancel: %s: blocked on a lock, deadline 400 ms: 504 in %.0f ms, connection back %.0f ms later\n",
           p->name, t_504, t_free);
    get_ok_soon(&s, next, 5000);
    wt_finish(&s);
}

/* A server with /slow: dbping's pg_sleep($1) under pool, the statement
 * tagged so the test can find it in pg_stat_activity among its neighbours'. */
static void start_slow_pool(wt_server *s, const char *db, const char *tag)
{
    static const wt_policy pool = {"pool"};
    char route[256];
    snprintf(route, sizeof(route),
             ",\n  { path = \"/slow\"; plugin = \"dbping\"; dispatch = \"pool\";"
             " options = { sql = \"SELECT pg_sleep($1::float8)::text AS %s\"; }; }",
             tag);
    start(s, &pool, db, route);
}

/* Until the tagged statement runs on the server (not only borrowed or queued). */
static void await_running(const char *tag)
{
    char sql[200]; /* no $ in it: psql runs through a shell */
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT pg_sleep(%% AS %s'",
             tag);
    cr_assert_eq(await_count(sql, 1, 20000), 1, "the statement never ran");
}

/* (a) for single statements of pool workers on blocking connections
 * (pool_connections = 1): a worker waiting to borrow the connection is
 * woken when its client leaves and its statement never runs. */
Test(dbcancel, pool_borrow_wait_ends_on_cancel, .timeout = 120)
{
    wt_server s = {0};
    start_slow_pool(&s, "pool_connections = 1;", "borrowed");
    int holder = wt_send_get(&s, "/slow?n=60");
    await_running("borrowed"); /* the one statement that may run */
    int waiter = wt_send_get(&s, "/slow?n=0");
    wt_await_metric(&s, "weft_db_connection_waiters", 1, 1, 20000);
    close(waiter);
    double t_left = wt_await_metric(&s, "weft_db_connection_waiters", 0, 0, 5000);
    close(holder);
    double t_free = wt_await_metric(&s, "weft_db_connections_busy", 0, 0, 5000);
    wt_await_metric(&s, "weft_inflight_requests", 0, 0, 5000);
    printf("dbcancel: pool borrow: the waiter left in %.0f ms, the 60 s statement was cancelled in %.0f ms\n", t_left,
           t_free);
    /* Only the holder's statement ever ran. */
    double ran = wt_metric(&s, "weft_db_query_duration_seconds_count");
    cr_expect_eq(ran, 1, "%.0f statements ran, not only the holder's", ran);
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", "/slow?n=0", NULL, &r), 0);
    cr_expect_eq(r.status, 200, "%ld %s", r.status, r.body);
    wt_resp_free(&r);
    wt_finish(&s);
}

/* (c) Connections held by transactions are bounded: with the only one held,
 * a begin waits tx_wait_ms and then answers 503 with Retry-After (the
 * fixture maps WEFT_UNAVAILABLE as docs/PLUGIN-API.md says to), and the
 * loop keeps serving meanwhile. */
ParameterizedTestParameters(dbcancel, a_full_transaction_set_answers_503_after_the_wait) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, dbcancel, a_full_transaction_set_answers_503_after_the_wait, .timeout = 120)
{
    wt_server s = {0};
    start(&s, p, "tx_connections = 1; tx_wait_ms = 300;", "");
    char hold[96], next[96];
    snprintf(hold, sizeof(hold), "/tx?key=%d&s=60", policy_key(p, 7300));
    snprintf(next, sizeof(next), "/tx?key=%d&s=0", policy_key(p, 7310));
    int holder = wt_send_get(&s, hold);
    free(wt_wait_log(&s, "dbslow: locked key=", 20000));
    double t0 = wt_now_ms();
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", next, NULL, &r), 0);
    double took = wt_now_ms() - t0;
    char ra[16];
    cr_expect_eq(r.status, 503, "%s: %ld %s", next, r.status, r.body);
    cr_expect_not_null(wt_header(&r, "retry-after", ra, sizeof(ra)), "503 without Retry-After");
    cr_expect_geq(took, 290, "answered before tx_wait_ms (%.0f ms)", took);
    wt_resp_free(&r);
    printf("dbcancel: %s: the second transaction got 503 + Retry-After after %.0f ms (tx_wait_ms 300)\n", p->name,
           took);
    cr_expect_eq(wt_metric(&s, "weft_db_connection_waiters"), 0);
    close(holder);
    wt_await_metric(&s, "weft_db_transactions_open", 0, 0, 5000);
    get_ok_soon(&s, next, 5000);
    wt_finish(&s);
}

/* A pool worker's single statement over the loop's pipelined connections
 * (pool_connections = 0, the default): when its client leaves, the worker
 * is answered WEFT_CANCELLED at once and the statement's result discarded,
 * instead of the worker waiting for the statement to end. */
Test(dbcancel, pool_worker_on_the_pipeline_is_freed_on_cancel, .timeout = 120)
{
    wt_server s = {0};
    start_slow_pool(&s, "pool_connections = 0;", "pipelined");
    int fd = wt_send_get(&s, "/slow?n=5");
    await_running("pipelined");
    close(fd);
    double t_free = wt_await_metric(&s, "weft_inflight_requests", 0, 0, 2500);
    wt_await_metric(&s, "weft_pool_busy_workers{pool=\"default\"}", 0, 0, 2500);
    printf("dbcancel: pool worker on the pipeline: freed %.0f ms after its client left (statement 5 s)\n", t_free);
    wt_finish(&s);
}
