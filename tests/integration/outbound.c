/* Outbound HTTP calls (http_fetch*, with the aggregate plugin) against the
 * mock upstream in tests/support/mock_upstream.py. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

static wt_server srv;
static pid_t mock;
static int mock_port;

#define AGG(prefix, policy, path, extra)                                                                         \
    "  { path = \"" prefix "/" policy "/aggregate\"; plugin = \"aggregate\"; dispatch = \"" policy              \
    "\"; options = { upstream = \"http://127.0.0.1:%1$d\"; path = \"" path "\"; " extra " }; },\n"
#define AGG3(prefix, path, extra) AGG(prefix, "pool", path, extra) AGG(prefix, "coroutine", path, extra) AGG(prefix, "reactive", path, extra)

static const char *conf_fmt =
    "threads = 2;\n"
    "listen = [\"127.0.0.1:0\"];\n"
    "pools = ( { name = \"default\"; size = 32; queue = 2000; } );\n"
    "routes = (\n" AGG3("", "/persons/", "") AGG3("/slow", "/delay/100/persons/", "")
        AGG3("/hang", "/hang/", "timeout_ms = 300;") AGG3("/reset", "/reset/", "")
            AGG3("/bad", "/status/500/persons/", "") AGG3("/big", "/big/2000000/", "")
                "  { path = \"/refused/aggregate\"; plugin = \"aggregate\"; dispatch = \"coroutine\"; options = { upstream = "
                "\"http://127.0.0.1:1\"; }; },\n"
                "  { path = \"/dns/aggregate\"; plugin = \"aggregate\"; dispatch = \"reactive\"; options = { upstream = "
                "\"http://no-such-host.invalid\"; }; },\n"
                "  { path = \"/hello\"; plugin = \"hello\"; dispatch = \"reactive\"; }\n"
                ");\n";

static void start(void)
{
    mock_port = wt_mock_start(&mock);
    char conf[16384];
    snprintf(conf, sizeof(conf), conf_fmt, mock_port);
    wt_start(&srv, conf);
}

static void stop(void)
{
    if (srv.pid > 0)
        wt_stop(&srv);
    wt_mock_stop(mock);
}
TestSuite(outbound, .init = start, .fini = stop, .timeout = 180);

static const char *const policies[] = {"pool", "coroutine", "reactive"};

static long get(const char *path, char **body)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0, "%s", path);
    long st = r.status;
    if (body != NULL)
        *body = strdup(r.body);
    wt_resp_free(&r);
    return st;
}

Test(outbound, aggregate_answers_the_array_under_each_policy)
{
    for (int p = 0; p < 3; p++) {
        char path[128], *body;
        snprintf(path, sizeof(path), "/%s/aggregate?ids=1,2,404,3", policies[p]);
        cr_assert_eq(get(path, &body), 200, "%s: %s", path, body);
        cr_assert_str_eq(body,
                         "[{\"id\": 1, \"name\": \"p1\"},{\"id\": 2, \"name\": \"p2\"},null,{\"id\": 3, \"name\": \"p3\"}]\n",
                         "%s: %s", path, body);
        free(body);
        snprintf(path, sizeof(path), "/%s/aggregate?ids=1,x", policies[p]);
        cr_assert_eq(get(path, NULL), 400);
    }
    wt_finish(&srv);
}

/* Ten calls of 100 ms each, all in flight at once: about one delay, not ten. */
Test(outbound, ten_calls_take_about_one_upstream_delay)
{
    for (int p = 0; p < 3; p++) {
        char path[128], *body;
        snprintf(path, sizeof(path), "/slow/%s/aggregate?ids=1,2,3,4,5,6,7,8,9,10", policies[p]);
        get(path, NULL); /* warm: connections made and pooled */
        double t0 = wt_now_ms();
        long st = get(path, &body);
        double ms = wt_now_ms() - t0;
        printf("aggregate of 10 ids with a 100 ms upstream under %s: %.0f ms\n", policies[p], ms);
        cr_assert_eq(st, 200, "%s: %s", path, body);
        cr_assert(strstr(body, "\"id\": 10") != NULL, "%s", body);
        cr_assert_lt(ms, 500.0, "%s took %.0f ms: the calls did not run concurrently", path, ms);
        free(body);
    }
    wt_finish(&srv);
}

Test(outbound, failures_map_to_504_and_502)
{
    for (int p = 0; p < 3; p++) {
        char path[128];
        snprintf(path, sizeof(path), "/hang/%s/aggregate?ids=1,2", policies[p]);
        double t0 = wt_now_ms();
        cr_assert_eq(get(path, NULL), 504, "%s", path);
        double ms = wt_now_ms() - t0;
        cr_assert(ms >= 290 && ms < 3000, "%s: 504 after %.0f ms, timeout 300", path, ms);
        snprintf(path, sizeof(path), "/reset/%s/aggregate?ids=1", policies[p]);
        cr_assert_eq(get(path, NULL), 502, "%s", path);
        snprintf(path, sizeof(path), "/bad/%s/aggregate?ids=1", policies[p]);
        cr_assert_eq(get(path, NULL), 502, "%s", path);
        snprintf(path, sizeof(path), "/big/%s/aggregate?ids=1", policies[p]);
        cr_assert_eq(get(path, NULL), 502, "%s (body over max_body)", path);
    }
    cr_assert_eq(get("/refused/aggregate?ids=1", NULL), 502);
    cr_assert_eq(get("/dns/aggregate?ids=1", NULL), 502);
    char *log = wt_read_log(&srv);
    cr_assert(strstr(log, "error 3 (") != NULL, "refused is WEFT_HTTP_REFUSED:\n%s", log);
    cr_assert(strstr(log, "error 2 (") != NULL, "DNS failure is WEFT_HTTP_DNS:\n%s", log);
    cr_assert(strstr(log, "error 7 (") != NULL, "reset is WEFT_HTTP_RESET:\n%s", log);
    cr_assert(strstr(log, "error 8 (") != NULL, "too large is WEFT_HTTP_TOO_LARGE:\n%s", log);
    free(log);
    cr_assert_eq(get("/hello", NULL), 200);
    wt_finish(&srv);
}

/* Many aggregate requests at once, each with three calls: no errors, and
 * keep-alive means far fewer upstream connections than calls. */
Test(outbound, many_concurrent_aggregates_without_errors)
{
    enum { N = 300 };
    for (int p = 0; p < 3; p++) {
        char path[128];
        snprintf(path, sizeof(path), "/%s/aggregate?ids=1,2,3", policies[p]);
        long st[N];
        char *bodies[N];
        wt_http_many(&srv, path, N, st, bodies);
        for (int i = 0; i < N; i++) {
            cr_assert_eq(st[i], 200, "%s #%d: %ld %s", path, i, st[i], bodies[i]);
            free(bodies[i]);
        }
    }
    wt_finish(&srv);
}
