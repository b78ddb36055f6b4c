/* The real binary on an ephemeral port: routing, errors, limits, PORT, stop. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

static const char *base_conf = "threads = 2;\n"
                               WT_LISTEN "\n"
                               "limits = { max_body = 100; };\n"
                               "routes = (\n"
                               "  { path = \"/hello\"; plugin = \"hello\"; dispatch = \"reactive\"; methods = [\"GET\"]; },\n"
                               "  { path = \"/greet\"; plugin = \"hello\"; dispatch = \"pool\"; options = { greeting = \"bonjour\"; }; },\n"
                               "  { path = \"/echo/{id}\"; plugin = \"echo\"; dispatch = \"coroutine\"; },\n"
                               "  { path = \"/echo/fixed\"; plugin = \"echo\"; dispatch = \"reactive\"; options = { prefix = \"lit\"; }; }\n"
                               ");\n";

static wt_server srv;

static void start(void) { wt_start(&srv, base_conf); }
/* Every suite ends with a clean exit: ASan/LSan findings in the server,
 * including leaks at shutdown, turn into a non-zero status here. */
static void stop(void) { wt_suite_stop(&srv); }

TestSuite(serve, .init = start, .fini = stop, .timeout = 60);

Test(serve, hello_answers_200_hello)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/hello", NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.body, "hello");
    char v[64];
    cr_assert_not_null(wt_header(&r, "content-length", v, sizeof(v)), "a sized, not chunked, response");
    cr_assert_str_eq(v, "5");
    wt_resp_free(&r);
    wt_finish(&srv);
}

Test(serve, options_reach_the_plugin)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/greet", NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.body, "bonjour");
    wt_resp_free(&r);
    wt_finish(&srv);
}

Test(serve, unknown_path_is_404)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/nope", NULL, &r), 0);
    cr_assert_eq(r.status, 404);
    wt_resp_free(&r);
    wt_finish(&srv);
}

Test(serve, wrong_method_is_405_with_allow)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "DELETE", "/hello", NULL, &r), 0);
    cr_assert_eq(r.status, 405);
    char allow[128];
    cr_assert_not_null(wt_header(&r, "allow", allow, sizeof(allow)));
    cr_assert_str_eq(allow, "GET, HEAD");
    wt_resp_free(&r);
    wt_finish(&srv);
}

Test(serve, head_is_allowed_where_get_is)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "HEAD", "/hello", NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    cr_assert_eq(r.len, 0);
    wt_resp_free(&r);
    wt_finish(&srv);
}

Test(serve, body_over_limit_is_413)
{
    char big[1001];
    memset(big, 'x', 1000);
    big[1000] = '\0';
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "POST", "/echo/1", big, &r), 0);
    cr_assert_eq(r.status, 413);
    wt_resp_free(&r);
    /* and the server still serves */
    cr_assert_eq(wt_http(&srv, "POST", "/echo/1", "small", &r), 0);
    cr_assert_eq(r.status, 200);
    cr_assert(strstr(r.body, "body=small") != NULL, "%s", r.body);
    wt_resp_free(&r);
    wt_finish(&srv);
}

Test(serve, path_params_query_headers_reach_the_plugin)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/echo/a%20b?q=x+y&z=1", NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    cr_assert(strstr(r.body, "param.id=a b") != NULL, "%s", r.body);
    cr_assert(strstr(r.body, "query.q=x y") != NULL, "%s", r.body);
    cr_assert(strstr(r.body, "path=/echo/a%20b") != NULL, "%s", r.body);
    wt_resp_free(&r);
    wt_finish(&srv);
}

Test(serve, literal_route_beats_parameter)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/echo/fixed", NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    cr_assert(strstr(r.body, "lit") != NULL, "literal route should win: %s", r.body);
    wt_resp_free(&r);
    wt_finish(&srv);
}

Test(serve, sigterm_exits_zero_and_logs)
{
    cr_assert_eq(wt_stop(&srv), 0);
    char *log = wt_read_log(&srv);
    cr_assert(strstr(log, "serving 4 route(s) from 2 plugin(s)") != NULL, "%s", log);
    cr_assert(strstr(log, "stopped") != NULL, "%s", log);
    free(log);
}

Test(env, port_overrides_first_listener, .timeout = 60)
{
    int port = wt_free_port();
    char env[32];
    snprintf(env, sizeof(env), "PORT=%d", port);
    const char *extra[] = {env, NULL};
    wt_server s = {0};
    wt_start_env(&s, base_conf, extra);
    cr_assert_eq(s.port, port, "listening on %d, PORT said %d", s.port, port);
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", "/hello", NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    wt_resp_free(&r);
    int status = wt_stop(&s);
    char *log = wt_read_log(&s);
    cr_assert_eq(status, 0, "exit %d:\n%s", status, log);
    free(log);
    wt_finish(&srv);
}

Test(env, ipv4_and_ipv6_listeners, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, "threads = 1; listen = [\"127.0.0.1:0\", \"[::1]:0\"];\n"
                 WT_HELLO_ROUTES "\n");
    char *log = wt_read_log(&s);
    const char *v6 = strstr(log, "listening on http://[::1]:");
    cr_assert_not_null(v6, "%s", log);
    int port6 = atoi(v6 + strlen("listening on http://[::1]:"));
    free(log);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "curl -s -g 'http://[::1]:%d/hello' | grep -qx hello", port6);
    cr_assert_eq(system(cmd), 0, "IPv6 listener should answer hello");
    cr_assert_eq(wt_stop(&s), 0);
    wt_finish(&srv);
}

Test(cli, version_and_help)
{
    char *out;
    const char *v[] = {"--version", NULL};
    cr_assert_eq(wt_run(&out, v, NULL), 0);
    cr_assert(strstr(out, "weft ") != NULL && strstr(out, "plugin ABI 2") != NULL, "%s", out);
    free(out);
    const char *h[] = {"--help", NULL};
    cr_assert_eq(wt_run(&out, h, NULL), 0);
    cr_assert(strstr(out, "-t, --test") != NULL, "%s", out);
    free(out);
    const char *bad[] = {"--bogus", NULL};
    cr_assert_eq(wt_run(&out, bad, NULL), 2);
    free(out);
    wt_finish(&srv);
}

static int uid_of(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    int uid = -1;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "Uid: %d", &uid) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return uid;
}

Test(security, drops_to_the_configured_user_after_binding, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, "threads = 2; " WT_LISTEN " admin = false; user = \"nobody\";\n"
                 "routes = ({ path = \"/hello\"; plugin = \"hello\"; dispatch = \"pool\"; });\n");
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", "/hello", NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    wt_resp_free(&r);
    char *log = wt_read_log(&s);
    if (geteuid() == 0) {
        cr_assert_eq(uid_of(s.pid), 65534, "every thread must run as nobody:\n%s", log);
        cr_assert(strstr(log, "running as user nobody") != NULL, "%s", log);
    } else {
        cr_assert(strstr(log, "was not started as root") != NULL, "%s", log);
    }
    free(log);
    cr_assert_eq(wt_stop(&s), 0);
    wt_finish(&srv);
}

Test(logging, access_log_records_each_request, .timeout = 60)
{
    wt_server s = {0};
    wt_startf(&s,
              "threads = 1; " WT_LISTEN " admin = false;\n"
              "log = { level = \"info\"; access_log = \"%s/access.log\"; };\n"
              WT_HELLO_ROUTES "\n",
              s.dir);
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", "/hello?x=1", NULL, &r), 0);
    wt_resp_free(&r);
    cr_assert_eq(wt_http(&s, "GET", "/missing", NULL, &r), 0);
    wt_resp_free(&r);
    wt_finish(&s); /* the log is complete once the server has stopped */
    char path[400], line[1024], all[4096] = "";
    snprintf(path, sizeof(path), "%s/access.log", s.dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "no access log at %s", path);
    while (fgets(line, sizeof(line), f) != NULL)
        strncat(all, line, sizeof(all) - strlen(all) - 1);
    fclose(f);
    cr_assert(strstr(all, "\"GET /hello?x=1 HTTP/1.1\" 200") != NULL, "%s", all);
    cr_assert(strstr(all, "\"GET /missing HTTP/1.1\" 404") != NULL, "%s", all);
}

Test(limits, request_target_over_max_uri_is_414, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, "threads = 1; " WT_LISTEN " admin = false; limits = { max_uri = 1024; };\n"
                 WT_HELLO_ROUTES "\n");
    char path[2048] = "/hello?q=";
    memset(path + 9, 'x', 1500);
    path[1509] = '\0';
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 414, "%ld %s", r.status, r.body);
    wt_resp_free(&r);
    path[900] = '\0';
    cr_assert_eq(wt_http(&s, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 200, "a target within the limit is served");
    wt_resp_free(&r);
    wt_finish(&s);
}

/* libpq is loaded only by a server that has a database (docs/DATABASE.md). */
static int maps_libpq(pid_t pid)
{
    char cmd[96];
    snprintf(cmd, sizeof(cmd), "grep -q 'libpq\\.so' /proc/%d/maps", (int)pid);
    return system(cmd) == 0;
}

/* The test runs in its own process: clearing PG* here touches no other test. */
static void clear_pg_env(void)
{
    extern char **environ;
    for (size_t i = 0; environ[i] != NULL;) {
        if (strncmp(environ[i], "PG", 2) == 0) {
            char name[128];
            snprintf(name, sizeof(name), "%.*s", (int)strcspn(environ[i], "="), environ[i]);
            unsetenv(name);
        } else {
            i++;
        }
    }
}

static const char *db_routes = "routes = (\n"
                               WT_HELLO_ROUTE ",\n"
                               "  { path = \"/pool/db\"; plugin = \"dbping\"; dispatch = \"pool\"; },\n"
                               "  { path = \"/coroutine/db\"; plugin = \"dbping\"; dispatch = \"coroutine\"; },\n"
                               "  { path = \"/reactive/db\"; plugin = \"dbping\"; dispatch = \"reactive\"; }\n"
                               ");\n";

Test(libpq, not_loaded_without_a_database_and_queries_answer_503, .timeout = 60)
{
    clear_pg_env();
    char conf[1024];
    snprintf(conf, sizeof(conf), "threads = 2; " WT_LISTEN "\n%s", db_routes);
    wt_server s = {0};
    wt_start(&s, conf);
    cr_expect(!maps_libpq(s.pid), "a server without a database must not map libpq");
    const char *paths[] = {"/pool/db", "/coroutine/db", "/reactive/db"};
    for (size_t i = 0; i < 3; i++) {
        wt_resp r;
        cr_assert_eq(wt_http(&s, "GET", paths[i], NULL, &r), 0);
        cr_expect_eq(r.status, 503, "%s: %ld %s", paths[i], r.status, r.body);
        wt_resp_free(&r);
    }
    free(wt_wait_log(&s, "none is configured: add a `database` group", 10000));
    cr_expect(!maps_libpq(s.pid), "a query without a database must not load libpq either");
    cr_assert_eq(wt_stop(&s), 0);
    wt_finish(&srv);
}

Test(libpq, loaded_by_a_database_group_or_a_pg_variable, .timeout = 60)
{
    clear_pg_env();
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 1; " WT_LISTEN "\n"
             "database = { conninfo = \"host=/nonexistent dbname=weft\"; connect_timeout_s = 1; };\n%s",
             db_routes);
    wt_server s = {0};
    wt_start(&s, conf);
    cr_expect(maps_libpq(s.pid), "a database group loads libpq");
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", "/pool/db", NULL, &r), 0);
    cr_expect_eq(r.status, 503, "unreachable database: %ld %s", r.status, r.body);
    wt_resp_free(&r);
    cr_assert_eq(wt_stop(&s), 0);

    const char *env[] = {"PGHOST=/nonexistent", NULL};
    snprintf(conf, sizeof(conf), "threads = 1; " WT_LISTEN "\n%s", db_routes);
    wt_server e = {0};
    wt_start_env(&e, conf, env);
    cr_expect(maps_libpq(e.pid), "a PG* variable loads libpq");
    cr_assert_eq(wt_stop(&e), 0);
    wt_finish(&srv);
}
