/*
 * weft through a real PgBouncer (Debian 12's 1.18, which keeps no prepared
 * statements) in transaction mode: tests/pgbouncer.sh starts it in front
 * of the suite's PostgreSQL and runs this binary with PGHOST/PGPORT on it
 * (ctest: integration/pooler@pgbouncer-transaction).
 *
 *   - the statement timeout still holds, under every policy, for a single
 *     statement, a pool worker's blocking connection and a statement
 *     inside a transaction: PostgreSQL cancels it (57014, 503 / the
 *     plugin's error), weft's client-side backstop never has to;
 *   - a config that sends the `options` startup parameter (pooler =
 *     "none") is refused by PgBouncer, and the log names the setting;
 *   - named statements through a transaction pool collide (42P05) and the
 *     log names database.prepared; unnamed ones (the default there) do
 *     not, with two processes sharing one server connection (weft_one).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static void need_pgbouncer(void)
{
    const char *mode = getenv("WT_DB_POOLER");
    cr_assert(mode != NULL && strcmp(mode, "transaction") == 0,
              "run through tests/pgbouncer.sh transaction (ctest -R integration/pooler@pgbouncer-transaction)");
}

TestSuite(pooler, .init = need_pgbouncer, .timeout = 120);

#define SLEEP_SQL "SELECT pg_sleep($1::float8)::text"

static void get(wt_server *s, const char *path, wt_resp *r)
{
    cr_assert_eq(wt_http(s, "GET", path, NULL, r), 0, "GET %s", path);
}

/* The client-side backstop resets the connection and logs this: it must never be what answered. */
static void assert_server_timed_out(wt_server *s)
{
    char *log = wt_read_log(s);
    cr_assert_null(strstr(log, "no answer within the statement timeout"), "weft's backstop fired:\n%s", log);
    free(log);
    cr_assert_eq(wt_metric(s, "weft_db_reconnects_total"), 0);
}

ParameterizedTestParameters(pooler, the_statement_timeout_holds) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, pooler, the_statement_timeout_holds)
{
    wt_server s = {0};
    wt_startf(&s,
              "threads = 1; listen = [\"127.0.0.1:0\"];\n"
              "database = { pooler = \"transaction\"; statement_timeout_ms = 300; pool_connections = %d; };\n"
              "routes = ( { path = \"/sleep\"; plugin = \"dbping\"; dispatch = \"%s\"; options = { sql = \"" SLEEP_SQL
              "\"; }; },\n"
              "           { path = \"/slow\"; plugin = \"dbslow\"; dispatch = \"%s\"; } );\n",
              strcmp(p->name, "pool") == 0 ? 2 : 0, p->name, p->name);
    wt_resp r;
    get(&s, "/sleep?n=0", &r);
    cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
    wt_resp_free(&r);
    get(&s, "/sleep?n=30", &r);
    cr_assert_eq(r.status, 503, "%ld %s", r.status, r.body);
    cr_assert(strstr(r.body, "database timeout") != NULL, "%s", r.body);
    wt_resp_free(&r);
    /* Inside a transaction: the timeout came with its BEGIN. */
    get(&s, "/slow?key=9101&s=30", &r);
    cr_assert_eq(r.status, 500, "%ld %s", r.status, r.body);
    wt_resp_free(&r);
    free(wt_wait_log(&s, "dbslow: statement=-3", 10000)); /* WEFT_TIMEOUT */
    get(&s, "/slow?key=9101&s=0", &r);
    cr_assert_eq(r.status, 200, "the session serves the next transaction: %ld %s", r.status, r.body);
    wt_resp_free(&r);
    assert_server_timed_out(&s);
    wt_finish(&s);
}

Test(pooler, a_refused_startup_parameter_names_the_setting)
{
    wt_server s = {0};
    wt_start(&s, "threads = 1; listen = [\"127.0.0.1:0\"];\n"
                 "database = { pooler = \"none\"; };\n"
                 "routes = ( { path = \"/q\"; plugin = \"dbping\"; dispatch = \"coroutine\"; } );\n");
    wt_resp r;
    get(&s, "/q", &r);
    cr_assert_eq(r.status, 503, "%ld %s", r.status, r.body);
    wt_resp_free(&r);
    free(wt_wait_log(&s, "unsupported startup parameter: options (a connection pooler such as PgBouncer refuses "
                         "that startup parameter: set database.pooler = \"session\" or \"transaction\"",
                     10000));
    wt_finish(&s);
}

/* Two processes, one server connection: the second's "weft_0" meets the first's. */
static void two_on_one_server(const char *prepared, long second_status)
{
    char conf[512];
    snprintf(conf, sizeof(conf),
             "threads = 1; listen = [\"127.0.0.1:0\"];\n"
             "database = { conninfo = \"dbname=weft_one\"; pooler = \"transaction\"; %s };\n"
             "routes = ( { path = \"/q\"; plugin = \"dbping\"; dispatch = \"coroutine\"; } );\n",
             prepared);
    wt_server a = {0}, b = {0};
    wt_start(&a, conf);
    wt_start(&b, conf);
    wt_resp r;
    get(&a, "/q?n=1", &r);
    cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
    cr_assert_str_eq(r.body, "2\n");
    wt_resp_free(&r);
    get(&b, "/q?n=2", &r);
    cr_assert_eq(r.status, second_status, "%ld %s", r.status, r.body);
    wt_resp_free(&r);
    if (second_status != 200)
        free(wt_wait_log(&b, "set database.prepared = false", 10000));
    get(&a, "/q?n=3", &r);
    cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
    wt_resp_free(&r);
    wt_finish(&a);
    wt_finish(&b);
}

Test(pooler, named_statements_collide_and_the_log_says_what_to_set)
{
    two_on_one_server("prepared = true;", 500);
}

Test(pooler, unnamed_statements_share_a_server_connection)
{
    two_on_one_server("", 200);
}
