/* Outbound HTTP calls (http_fetch*, with the aggregate plugin) against the
 * mock upstream in tests/support/mock_upstream.py. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static wt_server srv;
static pid_t mock;
static int mock_port;

#define AGG(prefix, policy, path, extra)                                                                         \
    "  { path = \"" prefix "/" policy "/aggregate\"; plugin = \"aggregate\"; dispatch = \"" policy              \
    "\"; options = { upstream = \"http://127.0.0.1:%1$d\"; path = \"" path "\"; " extra " }; },\n"
/* With a route-level setting (the route's deadline) besides the plugin options. */
#define AGGR(prefix, policy, path, extra, route)                                                                  \
    "  { path = \"" prefix "/" policy "/aggregate\"; plugin = \"aggregate\"; dispatch = \"" policy "\"; " route \
    " options = { upstream = \"http://127.0.0.1:%1$d\"; path = \"" path "\"; " extra " }; },\n"
#define AGGR3(prefix, path, extra, route)                                                                         \
    AGGR(prefix, "pool", path, extra, route) AGGR(prefix, "coroutine", path, extra, route)                       \
        AGGR(prefix, "reactive", path, extra, route)
#define AGG3(prefix, path, extra) AGG(prefix, "pool", path, extra) AGG(prefix, "coroutine", path, extra) AGG(prefix, "reactive", path, extra)

static const char *conf_fmt =
    "threads = 2;\n"
    "listen = [\"127.0.0.1:0\"];\n"
    "pools = ( { name = \"default\"; size = 32; queue = 2000; } );\n"
    "routes = (\n" AGG3("", "/persons/", "") AGG3("/slow", "/delay/100/persons/", "")
        AGG3("/hang", "/hang/", "timeout_ms = 300;") AGG3("/reset", "/reset/", "")
            AGG3("/bad", "/status/500/persons/", "") AGG3("/load", "/persons/", "timeout_ms = 60000;") AGG3("/big", "/big/2000000/", "")
                AGGR3("/stuck", "/hang/", "timeout_ms = 60000;", "")
                    AGGR3("/deadline", "/hang/", "timeout_ms = 60000;", "timeout_ms = 400;")
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
    cr_assert_geq(wt_metric(&srv, "weft_outbound_requests_total{outcome=\"reset\"}"), 3);
    cr_assert_geq(wt_metric(&srv, "weft_outbound_requests_total{outcome=\"timeout\"}"), 3);
    cr_assert_geq(wt_metric(&srv, "weft_outbound_requests_total{outcome=\"dns\"}"), 1);
    cr_assert_geq(wt_metric(&srv, "weft_outbound_requests_total{outcome=\"refused\"}"), 1);
    cr_assert_geq(wt_metric(&srv, "weft_outbound_requests_total{outcome=\"too_large\"}"), 3);
    cr_assert_eq(get("/hello", NULL), 200);
    wt_finish(&srv);
}

/* Many aggregate requests at once (1,000 under coroutine), each with three
 * calls: no errors, and keep-alive keeps the upstream connections far fewer
 * than the calls. */
Test(outbound, many_concurrent_aggregates_without_errors)
{
    enum { N = 1000 };
    static long st[N];
    static char *bodies[N];
    for (int p = 0; p < 3; p++) {
        char path[128];
        int n = p == 1 ? N : 300;
        snprintf(path, sizeof(path), "/load/%s/aggregate?ids=1,2,3", policies[p]);
        wt_http_many(&srv, path, n, st, bodies);
        for (int i = 0; i < n; i++) {
            cr_assert_eq(st[i], 200, "%s #%d: %ld %s", path, i, st[i], bodies[i]);
            free(bodies[i]);
        }
    }
    wt_server up = {.port = mock_port};
    wt_resp r;
    cr_assert_eq(wt_http(&up, "GET", "/stats", NULL, &r), 0);
    long conns = 0, reqs = 0;
    cr_assert_eq(sscanf(r.body, "{\"connections\": %ld, \"requests\": %ld", &conns, &reqs), 2, "%s", r.body);
    wt_resp_free(&r);
    printf("upstream saw %ld requests on %ld connections\n", reqs, conns);
    cr_assert_lt(conns * 5, reqs, "keep-alive: %ld connections for %ld requests", conns, reqs);
    wt_finish(&srv);
}

/* https: the certificate chain and name are verified; a route that pins
 * the mock's self-signed certificate as its CA file gets through, one that
 * trusts the system store does not. */
Test(outbound_tls, verification_on_by_default_and_ca_file_pins, .timeout = 120)
{
    wt_server s = {0};
    wt_write_conf(&s, "");
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "cd %s && openssl req -x509 -newkey rsa:2048 -nodes -keyout up.key -out up.crt -days 2 -subj /CN=localhost "
             "-addext subjectAltName=DNS:localhost >/dev/null 2>&1",
             s.dir);
    cr_assert_eq(system(cmd), 0, "openssl req failed");
    char cert[400], key[400];
    snprintf(cert, sizeof(cert), "%s/up.crt", s.dir);
    snprintf(key, sizeof(key), "%s/up.key", s.dir);
    pid_t tls_mock;
    int port = wt_mock_start_tls(&tls_mock, cert, key);
    char conf[4096];
    snprintf(conf, sizeof(conf),
             "threads = 1; listen = [\"127.0.0.1:0\"]; admin = false;\n"
             "routes = (\n"
             "  { path = \"/pinned/aggregate\"; plugin = \"aggregate\"; dispatch = \"coroutine\"; options = { upstream = "
             "\"https://localhost:%d\"; path = \"/persons/\"; ca_file = \"%s\"; }; },\n"
             "  { path = \"/system/aggregate\"; plugin = \"aggregate\"; dispatch = \"reactive\"; options = { upstream = "
             "\"https://localhost:%d\"; path = \"/persons/\"; }; },\n"
             "  { path = \"/wrongname/aggregate\"; plugin = \"aggregate\"; dispatch = \"pool\"; options = { upstream = "
             "\"https://127.0.0.1:%d\"; path = \"/persons/\"; ca_file = \"%s\"; }; }\n"
             ");\n",
             port, cert, port, port, cert);
    wt_start(&s, conf);
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", "/pinned/aggregate?ids=7", NULL, &r), 0);
    cr_expect_eq(r.status, 200, "%ld %s", r.status, r.body);
    cr_expect(strstr(r.body, "\"id\": 7") != NULL, "%s", r.body);
    wt_resp_free(&r);
    cr_assert_eq(wt_http(&s, "GET", "/system/aggregate?ids=7", NULL, &r), 0);
    cr_expect_eq(r.status, 502, "an unknown CA must fail verification: %ld %s", r.status, r.body);
    wt_resp_free(&r);
    cr_assert_eq(wt_http(&s, "GET", "/wrongname/aggregate?ids=7", NULL, &r), 0);
    cr_expect_eq(r.status, 502, "a certificate for another name must fail: %ld %s", r.status, r.body);
    wt_resp_free(&r);
    char *log = wt_read_log(&s);
    cr_expect(strstr(log, "error 6 (") != NULL, "TLS failures are WEFT_HTTP_TLS:\n%s", log);
    free(log);
    wt_mock_stop(tls_mock);
    wt_finish(&s);
}

/* ---- cancellation: the upstream sees weft give up on a call ---- */

typedef struct mock_stats {
    long hanging, hang_closed;
} mock_stats;

static mock_stats upstream_stats(void)
{
    wt_server up = {.port = mock_port};
    wt_resp r;
    cr_assert_eq(wt_http(&up, "GET", "/stats", NULL, &r), 0);
    mock_stats st = {-1, -1};
    const char *h = strstr(r.body, "\"hanging\": "), *c = strstr(r.body, "\"hang_closed\": ");
    cr_assert(h != NULL && c != NULL, "mock /stats: %s", r.body);
    st.hanging = atol(h + strlen("\"hanging\": "));
    st.hang_closed = atol(c + strlen("\"hang_closed\": "));
    wt_resp_free(&r);
    return st;
}

/* Polls the mock until `hanging` is at least / at most `want`; the mock's
 * own count is the signal (it sees each connection come and go). */
static mock_stats await_upstream(long hanging_min, long hanging_max, long closed_min, double limit_ms)
{
    double t0 = wt_now_ms();
    for (;;) {
        mock_stats st = upstream_stats();
        if (st.hanging >= hanging_min && st.hanging <= hanging_max && st.hang_closed >= closed_min)
            return st;
        cr_assert_lt(wt_now_ms() - t0, limit_ms, "upstream: %ld hanging, %ld closed; wanted %ld..%ld and >= %ld",
                     st.hanging, st.hang_closed, hanging_min, hanging_max, closed_min);
        usleep(10000);
    }
}

static double cancelled_total(const char *route, const char *policy)
{
    char key[256];
    snprintf(key, sizeof(key), "weft_requests_cancelled_total{route=\"%s\",policy=\"%s\"}", route, policy);
    double v = wt_metric(&srv, key);
    return v < 0 ? 0 : v;
}

/* A client that leaves while its aggregate waits on a hanging upstream: the
 * calls are cancelled, their connections closed (the upstream sees both go)
 * and the request counts as cancelled — under each policy. */
Test(outbound, an_abandoned_client_cancels_its_calls)
{
    for (int p = 0; p < 3; p++) {
        char path[128], route[64], key[256];
        snprintf(route, sizeof(route), "/stuck/%s/aggregate", policies[p]);
        snprintf(path, sizeof(path), "%s?ids=1,2", route);
        mock_stats before = await_upstream(0, 0, 0, 10000);
        double cancelled = cancelled_total(route, policies[p]);
        int fd = wt_send_get(&srv, path);
        await_upstream(2, 2, 0, 10000);
        close(fd);
        mock_stats after = await_upstream(0, 0, before.hang_closed + 2, 10000);
        snprintf(key, sizeof(key), "weft_requests_cancelled_total{route=\"%s\",policy=\"%s\"}", route, policies[p]);
        wt_await_metric(&srv, key, 1, cancelled + 1, 10000);
        printf("%s: the upstream saw %ld calls closed after the client left\n", route,
               after.hang_closed - before.hang_closed);
    }
    cr_assert_geq(wt_metric(&srv, "weft_outbound_requests_total{outcome=\"cancelled\"}"), 6);
    cr_assert_eq(get("/hello", NULL), 200);
    wt_finish(&srv);
}

/* The route's own deadline (timeout_ms = 400) ends the wait on a hanging
 * upstream with 504 at the deadline, and cancels the calls. */
Test(outbound, the_route_deadline_gives_504_and_cancels_the_calls)
{
    for (int p = 0; p < 3; p++) {
        char path[128];
        snprintf(path, sizeof(path), "/deadline/%s/aggregate?ids=1,2,3", policies[p]);
        mock_stats before = await_upstream(0, 0, 0, 10000);
        double t0 = wt_now_ms();
        char *body;
        long st = get(path, &body);
        double ms = wt_now_ms() - t0;
        printf("%s: %ld after %.0f ms (deadline 400)\n", path, st, ms);
        cr_assert_eq(st, 504, "%s: %ld %s", path, st, body);
        cr_assert(strstr(body, "timeout_ms") != NULL, "%s: %s", path, body);
        free(body);
        cr_assert(ms >= 390 && ms < 3000, "%s: 504 after %.0f ms, deadline 400", path, ms);
        await_upstream(0, 0, before.hang_closed + 3, 10000);
    }
    wt_finish(&srv);
}

/* An upstream that speaks HTTP/2 (another weft over TLS, which offers h2 by
 * ALPN) is called over HTTP/2: its access log shows the protocol. By IP
 * (its certificate names 127.0.0.1): "localhost" is ::1 first on a stock
 * Debian, where the upstream does not listen. */
Test(outbound_h2, a_tls_upstream_is_called_over_http2, .timeout = 120)
{
    wt_server up = {0}, front = {0};
    wt_write_conf(&up, "# placeholder\n");
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "cd %s && openssl req -x509 -newkey rsa:2048 -nodes -keyout server.key -out server.crt -days 2 "
             "-subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1",
             up.dir);
    cr_assert_eq(system(cmd), 0, "openssl");
    wt_startf(&up,
              "threads = 1; admin = false; log = { access_log = \"%s/access.log\"; };\n"
              "listen = ( \"127.0.0.1:0\", { address = \"127.0.0.1:0\"; tls = { certificate = \"server.crt\"; "
              "key = \"server.key\"; }; } );\n"
              "routes = ( { path = \"/persons/{id}\"; plugin = \"echo\"; dispatch = \"reactive\"; } );\n",
              up.dir);
    char *log = wt_read_log(&up);
    const char *p = strstr(log, "listening on https://127.0.0.1:");
    cr_assert_not_null(p, "%s", log);
    int port = atoi(p + strlen("listening on https://127.0.0.1:"));
    free(log);
    wt_startf(&front,
              "threads = 1; admin = false; listen = [\"127.0.0.1:0\"];\n"
              "routes = ( { path = \"/aggregate\"; plugin = \"aggregate\"; dispatch = \"coroutine\"; options = { "
              "upstream = \"https://127.0.0.1:%d\"; path = \"/persons/\"; ca_file = \"%s/server.crt\"; }; } );\n",
              port, up.dir);
    wt_resp r;
    cr_assert_eq(wt_http(&front, "GET", "/aggregate?ids=1,2", NULL, &r), 0);
    cr_expect_eq(r.status, 200, "%s", r.body);
    wt_resp_free(&r);
    char path[512];
    snprintf(path, sizeof(path), "%s/access.log", up.dir);
    /* The upstream logs a request when h2o frees it, just after its answer
     * went out: poll the log (kind (a), tests/README.md). */
    char *access = NULL;
    for (double deadline = wt_now_ms() + 10000; wt_now_ms() < deadline; usleep(20000)) {
        free(access);
        access = wt_read_file(path);
        /* Both calls, which run at once: either may be logged first. */
        if (access != NULL && strstr(access, "/persons/1 ") != NULL && strstr(access, "/persons/2 ") != NULL)
            break;
    }
    cr_assert_not_null(access);
    cr_expect(strstr(access, "\"GET /persons/1 HTTP/2\"") != NULL && strstr(access, "\"GET /persons/2 HTTP/2\"") != NULL,
              "the upstream saw HTTP/2:\n%s", access);
    free(access);
    wt_finish(&front);
    wt_finish(&up);
}
