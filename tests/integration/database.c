/* The host's database layer against a real PostgreSQL that this test starts,
 * stops and restarts itself (a private cluster, so other tests are unaffected). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static char pgdir[64];
static wt_server srv;

static int pg(const char *cmd)
{
    char line[512];
    snprintf(line, sizeof(line), "%s/packaging/pgdev.sh %s %s >/dev/null 2>&1", WEFT_SOURCE_DIR, cmd, pgdir);
    return system(line);
}

static void setup(void)
{
    snprintf(pgdir, sizeof(pgdir), "/tmp/wdb%d", (int)getpid());
    cr_assert_eq(pg("start"), 0, "cannot start a private PostgreSQL in %s", pgdir);
    char host[96];
    snprintf(host, sizeof(host), "PGHOST=%s", pgdir);
    const char *env[] = {host, "PGPORT=5432", "PGUSER=postgres", "PGDATABASE=weft", NULL};
    wt_start_env(&srv,
                 "threads = 2; " WT_LISTEN " " WT_ADMIN "\n"
                 "database = { statement_timeout_ms = 2000; pool_connections = 4; loop_connections = 1; };\n"
                 "routes = (\n"
                 " { path = \"/pool/db\"; plugin = \"dbping\"; dispatch = \"pool\"; },\n"
                 " { path = \"/coroutine/db\"; plugin = \"dbping\"; dispatch = \"coroutine\"; },\n"
                 " { path = \"/reactive/db\"; plugin = \"dbping\"; dispatch = \"reactive\"; },\n"
                 " { path = \"/pool/slow\"; plugin = \"dbping\"; dispatch = \"pool\"; options = { sql = \"SELECT pg_sleep($1::float8)::text AS pooled\"; }; },\n"
                 " { path = \"/coroutine/slow\"; plugin = \"dbping\"; dispatch = \"coroutine\"; options = { sql = \"SELECT pg_sleep($1::float8)::text\"; }; },\n"
                 " { path = \"/reactive/slow\"; plugin = \"dbping\"; dispatch = \"reactive\"; options = { sql = \"SELECT pg_sleep($1::float8)::text\"; }; },\n"
                 " { path = \"/pool/transfer\"; plugin = \"accounts\"; dispatch = \"pool\"; },\n"
                 " { path = \"/coroutine/transfer\"; plugin = \"accounts\"; dispatch = \"coroutine\"; },\n"
                 " { path = \"/reactive/transfer\"; plugin = \"accounts\"; dispatch = \"reactive\"; }\n"
                 ");\n",
                 env);
}

static void teardown(void)
{
    wt_suite_stop(&srv);
    pg("stop");
    char rm[128];
    snprintf(rm, sizeof(rm), "rm -rf %s", pgdir);
    cr_expect_eq(system(rm), 0);
}

TestSuite(database, .init = setup, .fini = teardown, .timeout = 180);

static long get(const char *path, char *body, size_t size)
{
    wt_resp r;
    if (wt_http(&srv, "GET", path, NULL, &r) != 0)
        return -1;
    if (body != NULL)
        snprintf(body, size, "%s", r.body);
    long st = r.status;
    wt_resp_free(&r);
    return st;
}

Test(database, every_policy_queries)
{
    const char *paths[] = {"/pool/db?n=1", "/coroutine/db?n=2", "/reactive/db?n=3"};
    const char *want[] = {"2\n", "3\n", "4\n"};
    for (int i = 0; i < 3; i++) {
        char body[64];
        cr_assert_eq(get(paths[i], body, sizeof(body)), 200, "%s: %s", paths[i], body);
        cr_assert_str_eq(body, want[i]);
    }
    wt_finish(&srv);
}

/* Which libpq the server loaded and which of libpq 17's paths it takes
 * (one write per loop pass, cancels on the loop) follow from what this
 * machine's libpq.so.5 has, looked up here the same way; the log line and
 * /status say so. On Debian 12 (libpq 15) both are off, on 13 (17) on. */
Test(database, libpq_version_and_its_paths_are_reported)
{
    void *h = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    int (*lib_version)(void) = (int (*)(void))dlsym(h, "PQlibVersion");
    cr_assert_not_null(lib_version);
    int v = lib_version();
    int sync = dlsym(h, "PQsendPipelineSync") != NULL, cancel = dlsym(h, "PQcancelStart") != NULL;
    dlclose(h);
    printf("database: this machine's libpq is %d.%d: PQsendPipelineSync %s, PQcancelStart %s\n", v / 10000, v % 10000,
           sync ? "yes" : "no", cancel ? "yes" : "no");

    char want[512];
    snprintf(want, sizeof(want), "database: libpq %d.%d loaded; pipelined statements: %s; cancelling a running statement: %s",
             v / 10000, v % 10000,
             sync ? "one write per loop pass (PQsendPipelineSync)" : "one write each (PQsendPipelineSync needs libpq 17)",
             cancel ? "on the loop (PQcancelStart)" : "a thread per cancel (PQcancelStart needs libpq 17)");
    free(wt_wait_log(&srv, want, 5000));

    cr_assert_gt(srv.admin_port, 0);
    wt_server admin = srv;
    admin.port = srv.admin_port;
    wt_resp r;
    cr_assert_eq(wt_http(&admin, "GET", "/status", NULL, &r), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    snprintf(want, sizeof(want),
             "\"libpq\": {\n    \"async_cancel\": %s,\n    \"send_pipeline_sync\": %s,\n    \"version\": \"%d.%d\"\n  }",
             cancel ? "true" : "false", sync ? "true" : "false", v / 10000, v % 10000);
    cr_expect_not_null(strstr(r.body, want), "/status lacks\n%s\nin\n%s", want, r.body);
    wt_resp_free(&r);
}

Test(database, many_requests_share_pipelined_connections)
{
    long st[80];
    char *bodies[80];
    wt_http_many(&srv, "/reactive/db?n=5", 80, st, bodies);
    for (int i = 0; i < 80; i++) {
        cr_assert_eq(st[i], 200, "#%d: %ld %s", i, st[i], bodies[i]);
        cr_assert_str_eq(bodies[i], "6\n");
        free(bodies[i]);
    }
    wt_http_many(&srv, "/coroutine/db?n=6", 80, st, bodies);
    for (int i = 0; i < 80; i++) {
        cr_assert_eq(st[i], 200, "#%d: %ld %s", i, st[i], bodies[i]);
        free(bodies[i]);
    }
    wt_finish(&srv);
}

Test(database, statement_timeout_gives_503_not_a_hang)
{
    /* pg_sleep(10) would succeed (200) after 10 s: a 503 can only be the
     * 2 s statement timeout cutting it, so no clock is needed to tell. */
    double t0 = wt_now_ms();
    cr_assert_eq(get("/coroutine/slow?n=10", NULL, 0), 503);
    cr_log_info("answered after %.0f ms", wt_now_ms() - t0);
    /* the connection is still usable afterwards */
    cr_assert_eq(get("/coroutine/db?n=1", NULL, 0), 200);
    wt_finish(&srv);
}

typedef struct slow {
    const char *path;
    long status;
} slow;

static void *slow_client(void *arg)
{
    slow *s = arg;
    s->status = get(s->path, NULL, 0);
    return NULL;
}

Test(database, down_gives_503_fast_then_recovers)
{
    /* statements in the pipeline when the server goes away are all answered */
    enum { N = 10 };
    slow s[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        s[i] = (slow){i % 2 ? "/coroutine/slow?n=1.5" : "/reactive/slow?n=1.5", 0};
        pthread_create(&t[i], NULL, slow_client, &s[i]);
    }
    wt_wait_metric(&srv, "weft_inflight_requests", N, 20000);
    double t0 = wt_now_ms();
    cr_assert_eq(pg("stop"), 0);
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(s[i].status, 503, "in-flight statement #%d answered %ld", i, s[i].status);
    }
    cr_assert_lt(wt_now_ms() - t0, 4000.0);

    const char *paths[] = {"/pool/db", "/coroutine/db", "/reactive/db"};
    for (int i = 0; i < 3; i++) {
        double t1 = wt_now_ms();
        cr_assert_eq(get(paths[i], NULL, 0), 503, "%s while the database is down", paths[i]);
        cr_assert_lt(wt_now_ms() - t1, 4000.0, "%s must fail within the statement timeout", paths[i]);
    }

    cr_assert_eq(pg("start"), 0);
    /* reconnects with backoff (at most 5 s apart): poll until every policy answers */
    for (int i = 0; i < 3; i++) {
        long st = 0;
        for (double deadline = wt_now_ms() + 20000; wt_now_ms() < deadline; usleep(200000))
            if ((st = get(paths[i], NULL, 0)) == 200)
                break;
        cr_assert_eq(st, 200, "%s did not recover after the database came back", paths[i]);
    }
    char *log = wt_read_log(&srv);
    cr_assert(strstr(log, "reachable again") != NULL, "%s", log);
    free(log);
    wt_finish(&srv);
}

/* One value from this test's own cluster, through psql. */
static long long sql_value(const char *sql)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "PGHOST=%s PGPORT=5432 PGUSER=postgres PGDATABASE=weft psql -XAtqc \"%s\"", pgdir, sql);
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    long long v = -1;
    int n = fscanf(f, "%lld", &v);
    pclose(f);
    return n == 1 ? v : -1;
}

typedef struct batch {
    int n;
    char **paths, **bodies;
    long *st;
} batch;

static void *run_batch(void *arg)
{
    batch *b = arg;
    wt_http_batch(&srv, b->n, "POST", (const char *const *)b->paths, "application/json",
                  (const char *const *)b->bodies, b->st, NULL);
    return NULL;
}

/* The database dies (immediate shutdown: no checkpoint, like a crash) while
 * transfers are in flight: each is all or nothing, so the books balance. */
Test(database, killed_mid_transfers_leaves_no_half_transfer)
{
    enum { N = 600 };
    const char *policy[] = {"pool", "coroutine", "reactive"};
    batch b = {N, calloc(N, sizeof(char *)), calloc(N, sizeof(char *)), calloc(N, sizeof(long))};
    for (int i = 0; i < N; i++) {
        int from = 1 + rand() % 100, to = 1 + rand() % 99;
        to += to >= from;
        b.paths[i] = malloc(32);
        b.bodies[i] = malloc(96);
        snprintf(b.paths[i], 32, "/%s/transfer", policy[i % 3]);
        snprintf(b.bodies[i], 96, "{\"from\":%d,\"to\":%d,\"amount\":%d}", from, to, 1 + rand() % 300);
    }
    pthread_t t;
    pthread_create(&t, NULL, run_batch, &b);
    /* Kill once transfers are committing. */
    for (double deadline = wt_now_ms() + 30000; wt_now_ms() < deadline; usleep(20000))
        if (sql_value("SELECT count(*) FROM account WHERE balance <> 1000") > 0)
            break;
    char pidfile[128];
    snprintf(pidfile, sizeof(pidfile), "%s/data/postmaster.pid", pgdir);
    FILE *f = fopen(pidfile, "r");
    cr_assert_not_null(f, "no %s", pidfile);
    int pm = 0;
    cr_assert_eq(fscanf(f, "%d", &pm), 1);
    fclose(f);
    cr_assert_eq(kill(pm, SIGQUIT), 0, "cannot kill the postmaster %d", pm);
    pthread_join(t, NULL);
    int ok = 0;
    for (int i = 0; i < N; i++) {
        cr_assert(b.st[i] == 200 || b.st[i] == 409 || b.st[i] == 503, "transfer %d: %ld", i, b.st[i]);
        ok += b.st[i] == 200;
        free(b.paths[i]);
        free(b.bodies[i]);
    }
    free(b.paths);
    free(b.bodies);
    free(b.st);
    for (double deadline = wt_now_ms() + 20000; wt_now_ms() < deadline && pg("status") == 0; usleep(100000))
        ;
    cr_assert_eq(pg("start"), 0);
    cr_log_info("%d transfers committed before the kill", ok);
    cr_assert_gt(ok, 0);
    cr_assert_eq(sql_value("SELECT sum(balance) FROM account"), 100000, "a transfer was half applied");
    cr_assert_eq(sql_value("SELECT count(*) FROM account WHERE balance < 0"), 0);
    wt_finish(&srv);
}

/* Clients that leave while their statement runs: a pool worker's statement
 * is cancelled on the server (PQcancel), a pipelined one's result is
 * discarded; either way the request and the connection are free well before
 * the 1.8 s statement would have ended. */
Test(database, withdrawn_requests_stop_waiting_for_their_statements)
{
    const char *paths[] = {"/pool/slow?n=1.8", "/coroutine/slow?n=1.8", "/reactive/slow?n=1.8"};
    int fds[9];
    for (int i = 0; i < 9; i++)
        fds[i] = wt_send_get(&srv, paths[i % 3]);
    wt_await_metric(&srv, "weft_inflight_requests", 1, 9, 10000);
    wt_await_metric(&srv, "weft_db_connections_busy", 1, 4, 10000); /* 3 pool + the loops' pipelines */
    /* A pool connection is busy before its statement reaches PostgreSQL, and
     * a cancel that arrives first is lost (the statement then runs its 1.8 s:
     * 1 run in ~10 under load). What is tested is a statement that runs, so
     * wait until PostgreSQL says the three pool statements (told apart by
     * their text) do. */
    for (double t0 = wt_now_ms();; usleep(20000)) {
        long long running = sql_value("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE "
                                      "'%AS pooled'");
        if (running == 3)
            break;
        cr_assert_lt(wt_now_ms() - t0, 10000.0, "%lld of the 3 pool statements running in PostgreSQL", running);
    }
    for (int i = 0; i < 9; i++)
        close(fds[i]);
    double t_req = wt_await_metric(&srv, "weft_inflight_requests", 0, 0, 1500);
    /* The pipelined statements run on (their results will be dropped); the
     * pool's blocking connections are cancelled and free. */
    double t_conn = wt_await_metric(&srv, "weft_db_connections_busy", 0, 2, 1500);
    printf("database: 9 withdrawn statements: requests freed in %.0f ms, pool connections in %.0f ms (statement 1800 ms)\n",
           t_req, t_conn);
    char body[64];
    double t0 = wt_now_ms();
    cr_assert_eq(get("/pool/db?n=1", body, sizeof(body)), 200, "%s", body);
    cr_expect_lt(wt_now_ms() - t0, 1500, "a pool connection was still held by a withdrawn statement");
    for (int i = 0; i < 3; i++) {
        char key[160];
        snprintf(key, sizeof(key), "weft_requests_cancelled_total{route=\"/%s/slow\",policy=\"%s\"}",
                 i == 0 ? "pool" : i == 1 ? "coroutine" : "reactive", i == 0 ? "pool" : i == 1 ? "coroutine" : "reactive");
        cr_expect_eq(wt_metric(&srv, key), 3, "%s", key);
    }
}
