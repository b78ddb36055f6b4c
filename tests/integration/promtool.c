/* Every answer of /metrics passes `promtool check metrics` (Prometheus'
 * own linter, from Debian's prometheus package): a real server with every
 * kind of route exercised — each policy and dispatch = "auto", a static
 * directory, the database (the persons routes), a WebSocket, a rate
 * limit that refused, a plugin's own series, a request cancelled by its
 * deadline, 404 and 405 — scraped before any request and after them, on
 * the main listener and on the admin one. Any complaint fails the test with
 * promtool's words; so do the standard process_* families or weft_build_info
 * missing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness.h"

#define WS_CLIENT "/usr/bin/python3 " WEFT_SOURCE_DIR "/tests/support/ws_client.py"

static wt_server srv;
static void stop(void) { wt_suite_stop(&srv); }
TestSuite(promtool, .fini = stop, .timeout = 120);

static void start(const char *metrics_on)
{
    const char *pghost = getenv("PGHOST");
    cr_assert(pghost != NULL && pghost[0] != '\0',
              "PGHOST is not set: this test scrapes a server with database routes, e.g.\n"
              "  packaging/pgdev.sh start /tmp/wpg && eval \"$(packaging/pgdev.sh env /tmp/wpg)\"\n"
              "(packaging/test.sh does this itself)");
    wt_write_conf(&srv, ""); /* makes the server's directory, where the static files go */
    char www[400], file[500];
    snprintf(www, sizeof(www), "%s/www", srv.dir);
    cr_assert_eq(mkdir(www, 0755), 0);
    snprintf(file, sizeof(file), "%s/index.html", www);
    wt_write_file_atomic(file, "<p>static</p>\n");
    wt_startf(&srv,
              "threads = 2; " WT_LISTEN " " WT_ADMIN "\n"
              "observability = { metrics = \"%s\"; };\n"
              "pools = ( { name = \"default\"; size = 8; queue = 100; } );\n"
              "database = { conninfo = \"dbname=weft\"; statement_timeout_ms = 3000; };\n"
              "routes = (\n" WT_EACH_POLICY("/hello", "hello", "") ",\n"
              WT_ROUTE("/auto/cpu", "cpu", "auto", "") ",\n"
              WT_ROUTE("/limited", "hello", "reactive", " rate_limit = { per = \"client\"; requests = 1; per_s = 3600; };") ",\n"
              WT_ROUTE("/slow", "delay", "coroutine", " timeout_ms = 50; options = { ms = 2000; };") ",\n"
              WT_ROUTE("/metered", "metered", "coroutine", "") ",\n"
              WT_ROUTE("/coroutine/chat", "chat", "coroutine", "") ",\n"
              "  { path = \"/files\"; static = { dir = \"%s\"; index = [\"index.html\"]; }; },\n"
              WT_PERSON_ROUTES("coroutine", ",") WT_PERSON_ROUTES("pool", "")
              ");\n",
              metrics_on, www);
}

static long get(const char *path)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0, "GET %s", path);
    long st = r.status;
    wt_resp_free(&r);
    return st;
}

static void exercise(void)
{
    static const char *const ok[] = {"/pool/hello", "/coroutine/hello", "/reactive/hello", "/auto/cpu",
                                     "/metered", "/files/", "/files/index.html", "/coroutine/persons/1",
                                     "/pool/persons/1", "/coroutine/persons/name/nobody", "/limited"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        cr_assert_eq(get(ok[i]), 200, "GET %s", ok[i]);
    cr_assert_eq(get("/limited"), 429);
    cr_assert_eq(get("/slow"), 504);
    cr_assert_eq(get("/no/such/route"), 404);
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "DELETE", "/coroutine/persons/name/nobody", NULL, &r), 0);
    cr_assert_eq(r.status, 405);
    wt_resp_free(&r);
    char cmd[512], line[256] = "";
    snprintf(cmd, sizeof(cmd), "timeout 60 " WS_CLIENT " ping ws://127.0.0.1:%d/coroutine/chat 2>&1", srv.port);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    if (fgets(line, sizeof(line), p) == NULL)
        strcpy(line, "(no output)");
    pclose(p);
    cr_assert_str_eq(line, "pong\n", "the WebSocket client: %s", line);
    wt_wait_metric_eq(&srv, "weft_websockets_open", 0, 20000);
}

/* GET /metrics where it is served; the body (malloc'd). */
static char *scrape(const char *metrics_on)
{
    wt_server at = srv;
    if (strcmp(metrics_on, "admin") == 0)
        at.port = srv.admin_port;
    wt_resp r;
    cr_assert_eq(wt_http(&at, "GET", "/metrics", NULL, &r), 0);
    cr_assert_eq(r.status, 200, "/metrics on the %s listener: %ld", metrics_on, r.status);
    char *body = strdup(r.body);
    wt_resp_free(&r);
    return body;
}

/* promtool's verdict on one exposition: it must say nothing and exit 0. */
static void expect_promtool_clean(const char *text, const char *when)
{
    char path[400], cmd[600];
    snprintf(path, sizeof(path), "%s/metrics-%s.txt", srv.dir, when);
    wt_write_file_atomic(path, text);
    snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s' 2>&1", path);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char out[4096];
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    cr_assert_neq(WEXITSTATUS(st), 127,
                  "no promtool on PATH: it comes with Debian's prometheus package (packaging/install-deps.sh test)");
    cr_assert(st == 0 && n == 0, "promtool check metrics on /metrics %s (%s) exited %d:\n%s", when, path,
              WEXITSTATUS(st), out);
}

static void expect_families(const char *text)
{
    static const char *const want[] = {
        "# TYPE process_cpu_seconds_total counter\n",     "# TYPE process_resident_memory_bytes gauge\n",
        "# TYPE process_virtual_memory_bytes gauge\n",    "# TYPE process_open_fds gauge\n",
        "# TYPE process_max_fds gauge\n",                 "# TYPE process_start_time_seconds gauge\n",
        "# TYPE weft_build_info gauge\n",                 "# TYPE plugin_metered_work_seconds histogram\n",
        "weft_rate_limited_total{route=\"/limited\",kind=\"plugin\"} 1\n",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        cr_assert(strstr(text, want[i]) != NULL, "no '%.*s' in /metrics:\n%s", (int)strcspn(want[i], "\n"), want[i],
                  text);
    cr_assert(strstr(text, "weft_build_info{version=\"") != NULL && strstr(text, "\",libpq=\"none\"") == NULL,
              "weft_build_info without the loaded libpq's version:\n%s", strstr(text, "weft_build_info{"));
}

static void scrape_and_check(const char *metrics_on)
{
    start(metrics_on);
    char *before = scrape(metrics_on);
    expect_promtool_clean(before, "at-start");
    exercise();
    char *after = scrape(metrics_on);
    expect_promtool_clean(after, "after-every-kind-of-request");
    expect_families(after);
    free(before);
    free(after);
    wt_finish(&srv);
}

Test(promtool, every_answer_of_metrics_on_the_main_listener_passes) { scrape_and_check("main"); }
Test(promtool, every_answer_of_metrics_on_the_admin_listener_passes) { scrape_and_check("admin"); }
