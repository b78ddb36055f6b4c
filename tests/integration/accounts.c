/*
 * Transactions (plugin API 1.1) through the accounts plugin, under all three
 * policies, against the PostgreSQL in PG* (sql/003_accounts.sql applied).
 *
 * Tests in this file run in parallel on one table: the random transfers use
 * accounts 1..90 only, so the accounts the other tests check (91..100) keep
 * their balances; every check of the whole table is of an invariant that
 * concurrent transfers keep (total 100,000, nothing negative).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define ACC_ROUTES(p, last)                                                                                       \
    "  { path = \"/" p "/accounts/transfer\"; methods = [\"POST\"]; plugin = \"accounts\"; dispatch = \"" p "\"; },\n" \
    "  { path = \"/" p "/accounts/{id}\"; methods = [\"GET\"]; plugin = \"accounts\"; dispatch = \"" p "\"; },\n"  \
    "  { path = \"/" p "/leak\"; plugin = \"dbtx\"; dispatch = \"" p "\"; options = { leak = true; }; },\n"        \
    "  { path = \"/" p "/tx\"; plugin = \"dbtx\"; dispatch = \"" p "\"; }" last "\n"

/* A transfer waits for a transaction slot rather than being refused: on a
 * loaded machine (or under ASan) 2,000 at once queue for seconds. */
static const char *conf = "threads = 2;\n"
                          "listen = [\"127.0.0.1:0\"];\n"
                          "pools = ( { name = \"default\"; size = 16; queue = 5000; } );\n"
                          "database = { statement_timeout_ms = 5000; pool_connections = 8; tx_connections = 4;\n"
                          "             tx_wait_ms = 120000; };\n"
                          "routes = (\n" ACC_ROUTES("pool", ",") ACC_ROUTES("coroutine", ",")
                              ACC_ROUTES("reactive", "") ");\n";

static wt_server srv;

static void start(void)
{
    wt_need_pg();
    wt_start(&srv, conf);
}

static void stop(void) { wt_suite_stop(&srv); }
TestSuite(accounts, .init = start, .fini = stop, .timeout = 300);

static void assert_books_balance(void)
{
    cr_assert_eq(wt_sql_value("SELECT sum(balance) FROM account"), 100000, "money was created or destroyed");
    cr_assert_eq(wt_sql_value("SELECT count(*) FROM account WHERE balance < 0"), 0, "a balance went negative");
    cr_assert_eq(wt_sql_value("SELECT count(*) FROM account"), 100);
}

static void post(const char *path, const char *body, wt_resp *r)
{
    cr_assert_eq(wt_http_typed(&srv, "POST", path, "application/json", body, r), 0, "POST %s", path);
}

ParameterizedTestParameters(accounts, get_and_errors) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, accounts, get_and_errors)
{
    char path[96], want[64];
    wt_resp r;
    snprintf(path, sizeof(path), "/%s/accounts/97", p->name);
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body);
    snprintf(want, sizeof(want), "\"balance\" : %lld", wt_sql_value("SELECT balance FROM account WHERE id = 97"));
    cr_assert(strstr(r.body, "\"id\" : 97") && strstr(r.body, want), "%s", r.body);
    wt_resp_free(&r);

    snprintf(path, sizeof(path), "/%s/accounts/1000", p->name);
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 404, "%s: %ld %s", path, r.status, r.body);
    wt_resp_free(&r);
    snprintf(path, sizeof(path), "/%s/accounts/x1", p->name);
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 400, "%s: %ld %s", path, r.status, r.body);
    wt_resp_free(&r);

    snprintf(path, sizeof(path), "/%s/accounts/transfer", p->name);
    static const char *const bad[] = {"{", "[]", "{\"from\":91,\"to\":92}", "{\"from\":91,\"to\":91,\"amount\":1}",
                                      "{\"from\":91,\"to\":92,\"amount\":0}", "{\"from\":\"91\",\"to\":92,\"amount\":1}",
                                      "{\"from\":91,\"to\":92,\"amount\":1,\"x\":1}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        post(path, bad[i], &r);
        cr_assert_eq(r.status, 400, "%s %s: %ld %s", path, bad[i], r.status, r.body);
        cr_assert(strstr(r.body, "\"error\""), "%s", r.body);
        wt_resp_free(&r);
    }
    post(path, "{\"from\":91,\"to\":5000,\"amount\":1}", &r);
    cr_assert_eq(r.status, 404, "unknown account: %ld %s", r.status, r.body);
    wt_resp_free(&r);
    wt_finish(&srv);
}

ParameterizedTestParameters(accounts, overdraw_is_409_and_changes_nothing) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, accounts, overdraw_is_409_and_changes_nothing)
{
    /* Each policy its own pair, so the parallel tests do not interfere. */
    int from = strcmp(p->name, "pool") == 0 ? 93 : strcmp(p->name, "coroutine") == 0 ? 95 : 98;
    char path[96], body[128], q[128];
    snprintf(q, sizeof(q), "SELECT balance FROM account WHERE id = %d", from);
    long long before_from = wt_sql_value(q);
    snprintf(q, sizeof(q), "SELECT balance FROM account WHERE id = %d", from + 1);
    long long before_to = wt_sql_value(q);

    snprintf(path, sizeof(path), "/%s/accounts/transfer", p->name);
    snprintf(body, sizeof(body), "{\"from\":%d,\"to\":%d,\"amount\":%lld}", from, from + 1, before_from + 1);
    wt_resp r;
    post(path, body, &r);
    cr_assert_eq(r.status, 409, "%s %s: %ld %s", path, body, r.status, r.body);
    wt_resp_free(&r);
    snprintf(q, sizeof(q), "SELECT balance FROM account WHERE id = %d", from);
    cr_assert_eq(wt_sql_value(q), before_from);
    snprintf(q, sizeof(q), "SELECT balance FROM account WHERE id = %d", from + 1);
    cr_assert_eq(wt_sql_value(q), before_to);

    /* And the exact balance moves, there and back. */
    snprintf(body, sizeof(body), "{\"from\":%d,\"to\":%d,\"amount\":%lld}", from, from + 1, before_from);
    post(path, body, &r);
    cr_assert_eq(r.status, 200, "%s %s: %ld %s", path, body, r.status, r.body);
    char want[128];
    snprintf(want, sizeof(want), "{\"from\":{\"id\":%d,\"balance\":0},\"to\":{\"id\":%d,\"balance\":%lld}}", from,
             from + 1, before_to + before_from);
    cr_assert_str_eq(r.body, want);
    wt_resp_free(&r);
    snprintf(body, sizeof(body), "{\"from\":%d,\"to\":%d,\"amount\":%lld}", from + 1, from, before_from);
    post(path, body, &r);
    cr_assert_eq(r.status, 200, "%s %s: %ld %s", path, body, r.status, r.body);
    wt_resp_free(&r);
    assert_books_balance();
    wt_finish(&srv);
}

Test(accounts, concurrent_random_transfers_keep_the_books)
{
    enum { N = 2000 };
    const char *policy[] = {"pool", "coroutine", "reactive"};
    char **paths = calloc(N, sizeof(char *)), **bodies = calloc(N, sizeof(char *)), **out = calloc(N, sizeof(char *));
    long *st = calloc(N, sizeof(long));
    srand((unsigned)getpid());
    for (int i = 0; i < N; i++) {
        int from = 1 + rand() % 90, to = 1 + rand() % 89;
        to += to >= from; /* never the same account */
        paths[i] = malloc(64);
        bodies[i] = malloc(96);
        snprintf(paths[i], 64, "/%s/accounts/transfer", policy[i % 3]);
        /* Large amounts too, so overdraws (409) happen under contention. */
        snprintf(bodies[i], 96, "{\"from\":%d,\"to\":%d,\"amount\":%d}", from, to, 1 + rand() % 700);
    }
    wt_http_batch(&srv, N, "POST", (const char *const *)paths, "application/json", (const char *const *)bodies, st,
                  out);
    int ok = 0, refused = 0;
    for (int i = 0; i < N; i++) {
        cr_assert(st[i] == 200 || st[i] == 409, "transfer %d (%s %s): %ld %s", i, paths[i], bodies[i], st[i], out[i]);
        ok += st[i] == 200;
        refused += st[i] == 409;
        free(paths[i]);
        free(bodies[i]);
        free(out[i]);
    }
    free(paths);
    free(bodies);
    free(out);
    free(st);
    cr_assert_gt(ok, N / 2, "only %d of %d transfers went through", ok, N);
    cr_log_info("%d transfers, %d refused as overdraws", ok, refused);
    assert_books_balance();
    wt_finish(&srv);
}

ParameterizedTestParameters(accounts, open_transaction_is_rolled_back_and_logged) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, accounts, open_transaction_is_rolled_back_and_logged)
{
    char path[96], needle[128];
    wt_resp r;
    snprintf(path, sizeof(path), "/%s/leak", p->name);
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body);
    wt_resp_free(&r);
    snprintf(needle, sizeof(needle), "/%s/leak (plugin dbtx 1.0.0): plugin bug: the handler finished with a transaction open", p->name);
    free(wt_wait_log(&srv, needle, 10000));
    /* The update it made never became visible, and the connection is fine. */
    cr_assert_eq(wt_sql_value("SELECT count(*) FROM account WHERE balance < 0"), 0);
    snprintf(path, sizeof(path), "/%s/tx", p->name);
    for (int i = 0; i < 10; i++) {
        cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
        cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body);
        wt_resp_free(&r);
    }
    wt_finish(&srv);
}

ParameterizedTestParameters(accounts, isolation_level_and_one_session) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, accounts, isolation_level_and_one_session)
{
    static const char *const want[] = {"iso=read committed same_session=1 commit=0",
                                       "iso=repeatable read same_session=1 commit=0",
                                       "iso=serializable same_session=1 commit=0"};
    for (int iso = 0; iso < 3; iso++) {
        char path[96];
        snprintf(path, sizeof(path), "/%s/tx?iso=%d", p->name, iso);
        wt_resp r;
        cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
        cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body);
        cr_assert_str_eq(r.body, want[iso], "%s", path);
        wt_resp_free(&r);
    }
    wt_finish(&srv);
}

/* One transaction connection per loop and for the workers, held 600 ms, and
 * a 100 ms wait: of six at once, some wait too long and get 503. */
ParameterizedTestParameters(accounts, held_connections_are_bounded) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, accounts, held_connections_are_bounded)
{
    wt_server own = {0};
    char conf2[1024], path[96];
    snprintf(conf2, sizeof(conf2),
             "threads = 1; listen = [\"127.0.0.1:0\"];\n"
             "database = { tx_connections = 1; tx_wait_ms = 100; };\n"
             "routes = ( { path = \"/t\"; plugin = \"dbtx\"; dispatch = \"%s\"; } );\n",
             p->name);
    wt_start(&own, conf2);
    snprintf(path, sizeof(path), "/t?hold_ms=600");
    long st[6];
    char *bodies[6];
    wt_http_many(&own, path, 6, st, bodies);
    int ok = 0, busy = 0;
    for (int i = 0; i < 6; i++) {
        ok += st[i] == 200;
        busy += st[i] == 503 && strstr(bodies[i], "no transaction connection") != NULL;
        free(bodies[i]);
    }
    cr_assert_geq(ok, 1, "%s: none got a transaction", p->name);
    cr_assert_geq(busy, 1, "%s: the bound of 1 was not enforced (%d ok)", p->name, ok);
    cr_assert_eq(ok + busy, 6);
    /* Free again afterwards. */
    wt_resp r;
    cr_assert_eq(wt_http(&own, "GET", "/t", NULL, &r), 0);
    cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
    wt_resp_free(&r);
    wt_finish(&own);
    wt_finish(&srv);
}
