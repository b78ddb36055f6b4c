/* Header rules (`headers`, top level and per route) on every answer: a
 * plugin's under each policy, a stream's, weft's own 404/405/413/504, over
 * HTTP/1.1 and HTTP/2; validated with FILE:LINE; changed by a reload. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define RULES                                                                                                   \
    " headers = { set = { Cache-Control = \"public, max-age=60\"; X-Frame-Options = \"DENY\"; };"               \
    " add = { Link = [\"</a.css>; rel=preload\", \"</b.js>; rel=preload\"]; X-From-Plugin = \"rule\"; };"        \
    " unset = [\"X-Request-Id\"]; };"

/* Top-level rules on every answer; the /P/typed routes add their own. */
static const char *conf_text =
    "threads = 2; " WT_LISTEN "\n"
    "pools = ( { name = \"default\"; size = 4; queue = 100; } );\n"
    "headers = { set = { Strict-Transport-Security = \"max-age=63072000; includeSubDomains\";"
    " X-Content-Type-Options = \"nosniff\"; Cache-Control = \"no-store\"; }; };\n"
    "routes = (\n" WT_EACH_POLICY("/typed", "typed", RULES " max_body = 16;") ",\n"
    WT_EACH_POLICY("/events", "events", RULES) ",\n"
    WT_EACH_POLICY("/slow", "delay", RULES " timeout_ms = 100; options = { ms = 5000; };") ",\n"
    "  { path = \"/plain\"; plugin = \"typed\"; dispatch = \"reactive\"; methods = [\"GET\"]; }\n"
    ");\n";

static wt_server srv;
static void start(void) { wt_start(&srv, conf_text); }
static void stop(void) { wt_suite_stop(&srv); }
TestSuite(headers, .init = start, .fini = stop, .timeout = 120);

static char *hv(const wt_resp *r, const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    const char *v = wt_header(r, name, buf[k], sizeof(buf[k]));
    return v != NULL ? buf[k] : NULL;
}

static int count_lines(const wt_resp *r, const char *name)
{
    int n = 0;
    size_t len = strlen(name);
    for (const char *p = r->headers; (p = strcasestr(p, name)) != NULL; p += len)
        if ((p == r->headers || p[-1] == '\n') && p[len] == ':')
            n++;
    return n;
}

static void expect_global(const wt_resp *r)
{
    char *hsts = hv(r, "strict-transport-security");
    cr_assert(hsts != NULL && strcmp(hsts, "max-age=63072000; includeSubDomains") == 0, "HSTS: %s", r->headers);
    char *xcto = hv(r, "x-content-type-options");
    cr_assert(xcto != NULL && strcmp(xcto, "nosniff") == 0, "%s", r->headers);
}

/* The route's rules after the top-level ones: its set wins, add sends each
 * value, unset removes weft's own X-Request-Id and the plugin's header stays
 * beside the added one. */
static void expect_route(const wt_resp *r)
{
    expect_global(r);
    char *cc = hv(r, "cache-control");
    cr_assert(cc != NULL && strcmp(cc, "public, max-age=60") == 0, "the route's set wins: %s", r->headers);
    cr_assert_eq(count_lines(r, "cache-control"), 1, "%s", r->headers);
    cr_assert_eq(count_lines(r, "link"), 2, "%s", r->headers);
    cr_assert(strstr(r->headers, "</a.css>; rel=preload") != NULL, "%s", r->headers);
    cr_assert(hv(r, "x-frame-options") != NULL, "%s", r->headers);
    cr_assert(hv(r, "x-request-id") == NULL, "unset: %s", r->headers);
}

typedef struct hp {
    char policy[16];
    int http2;
} hp;

ParameterizedTestParameters(headers, plugin_answers_get_the_rules)
{
    static hp p[] = {{"pool", 0}, {"coroutine", 0}, {"reactive", 0}, {"pool", 1}, {"coroutine", 1}, {"reactive", 1}};
    return cr_make_param_array(hp, p, 6);
}
ParameterizedTest(hp *p, headers, plugin_answers_get_the_rules)
{
    char path[64];
    snprintf(path, sizeof(path), "/%s/typed?header=x-from-plugin", p->policy);
    wt_resp r;
    wt_req q = {.path = path, .http2 = p->http2};
    cr_assert_eq(wt_request(&srv, &q, &r), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    expect_route(&r);
    /* add keeps what the plugin set and adds the rule's value */
    cr_assert_eq(count_lines(&r, "x-from-plugin"), 2, "%s", r.headers);
    wt_resp_free(&r);
}

ParameterizedTestParameters(headers, streamed_answers_get_the_rules) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, headers, streamed_answers_get_the_rules)
{
    char path[64];
    snprintf(path, sizeof(path), "/%s/events?count=2&interval_ms=1", p->name);
    for (int h2 = 0; h2 <= 1; h2++) {
        wt_resp r;
        wt_req q = {.path = path, .http2 = h2};
        cr_assert_eq(wt_request(&srv, &q, &r), 0);
        cr_assert_eq(r.status, 200);
        cr_assert(strstr(r.body, "data: {\"n\":2,\"of\":2}") != NULL, "%s", r.body);
        expect_route(&r);
        wt_resp_free(&r);
    }
}

ParameterizedTestParameters(headers, weft_timeouts_and_body_limits_get_the_route_rules) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, headers, weft_timeouts_and_body_limits_get_the_route_rules)
{
    char path[64];
    snprintf(path, sizeof(path), "/%s/slow", p->name);
    for (int h2 = 0; h2 <= 1; h2++) {
        wt_resp r;
        wt_req q = {.path = path, .http2 = h2};
        cr_assert_eq(wt_request(&srv, &q, &r), 0);
        cr_assert_eq(r.status, 504, "%ld %s", r.status, r.body);
        expect_route(&r);
        wt_resp_free(&r);
        snprintf(path, sizeof(path), "/%s/typed", p->name);
        wt_req big = {.method = "POST", .path = path, .body = "a body longer than sixteen bytes", .http2 = h2};
        cr_assert_eq(wt_request(&srv, &big, &r), 0);
        cr_assert_eq(r.status, 413, "%ld %s", r.status, r.body);
        expect_route(&r);
        wt_resp_free(&r);
        snprintf(path, sizeof(path), "/%s/slow", p->name);
    }
}

Test(headers, weft_own_answers_get_the_top_level_rules)
{
    const char *paths[] = {"/nowhere", "/plain"};
    const char *methods[] = {"GET", "DELETE"};
    const long want[] = {404, 405};
    for (int h2 = 0; h2 <= 1; h2++)
        for (int i = 0; i < 2; i++) {
            wt_resp r;
            wt_req q = {.method = methods[i], .path = paths[i], .http2 = h2};
            cr_assert_eq(wt_request(&srv, &q, &r), 0);
            cr_assert_eq(r.status, want[i]);
            expect_global(&r);
            char *cc = hv(&r, "cache-control");
            cr_assert(cc != NULL && strcmp(cc, "no-store") == 0, "%s", r.headers);
            cr_assert(hv(&r, "link") == NULL, "no route, no route rules: %s", r.headers);
            wt_resp_free(&r);
        }
    /* A route without rules of its own gets the top-level ones. */
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/plain", NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    expect_global(&r);
    cr_assert(hv(&r, "x-request-id") != NULL, "%s", r.headers);
    wt_resp_free(&r);
}

static int check(wt_server *s, const char *conf, char **out)
{
    wt_write_conf(s, conf);
    const char *args[] = {"-t", "-c", s->conf, NULL};
    return wt_run(out, args, NULL);
}

static void expect_refused(const char *conf, int line, const char *reason)
{
    wt_server s = {0};
    char *out;
    int rc = check(&s, conf, &out);
    cr_assert_eq(rc, 1, "%s", out);
    char want[400];
    snprintf(want, sizeof(want), "%s:%d:", s.conf, line);
    cr_assert(strstr(out, want) != NULL, "want '%s' in: %s", want, out);
    cr_assert(strstr(out, reason) != NULL, "want '%s' in: %s", reason, out);
    free(out);
    wt_rm_rf(s.dir);
}

Test(headers, bad_rules_are_refused_with_file_and_line)
{
    expect_refused(WT_LISTEN "\n" WT_HELLO_ROUTES "\nheaders = {\n set = { X-Bad = \"a\\r\\nSet-Cookie: x=1\"; };\n};\n", 4,
                   "headers.set: the value of 'X-Bad' contains a control character");
    expect_refused(WT_LISTEN "\n" WT_HELLO_ROUTES "\nheaders = {\n add = { X-Bad = \"a\\nb\"; };\n};\n", 4,
                   "control character");
    expect_refused(WT_LISTEN "\nroutes = ( { path = \"/h\"; plugin = \"hello\"; dispatch = \"reactive\";\n"
                   " headers = { unset = [\"bad name\"]; }; } );\n",
                   3, "routes[0].headers.unset: 'bad name' is not a header name");
    expect_refused(WT_LISTEN "\n" WT_HELLO_ROUTES "\nheaders = { set = {\n Content-Length = \"5\"; }; };\n", 4,
                   "header 'Content-Length' is part of the message framing");
    expect_refused(WT_LISTEN "\n" WT_HELLO_ROUTES "\nheaders = { set = {\n Server = \"x\"; }; };\n", 4,
                   "is written by the protocol layer");
    expect_refused(WT_LISTEN "\n" WT_HELLO_ROUTES "\nheaders = { sett = {\n}; };\n", 3,
                   "unknown setting 'sett'");
    expect_refused(WT_LISTEN "\n" WT_HELLO_ROUTES "\nheaders = { set = {\n X-A = 5; }; };\n", 4,
                   "'X-A' must be a string");
}

Test(headers, a_reload_changes_the_rules_compression_and_cors)
{
    wt_server s = {0};
    wt_start(&s, WT_LISTEN "\n" WT_HELLO_ROUTES "\nheaders = { set = { X-Version = \"one\"; }; };\n");
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", "/hello", NULL, &r), 0);
    cr_assert(hv(&r, "x-version") != NULL && strcmp(hv(&r, "x-version"), "one") == 0, "%s", r.headers);
    wt_resp_free(&r);
    const char *hs[] = {"Accept-Encoding: gzip", "Origin: https://app.example", NULL};
    cr_assert_eq(wt_http_headers(&s, "GET", "/hello", hs, NULL, &r), 0);
    cr_assert(hv(&r, "content-encoding") == NULL && hv(&r, "access-control-allow-origin") == NULL, "%s", r.headers);
    wt_resp_free(&r);
    /* Compression and CORS come with the same reload. */
    wt_write_file_atomic(s.conf, WT_LISTEN "\nroutes = (" WT_ROUTE("/hello", "hello", "reactive",
                                                                  " headers = { set = { X-Route = \"r\"; }; };"
                                                                  " cors = { origins = [\"https://app.example\"]; };")
                                            ");\nheaders = { set = { X-Version = \"two\"; }; };\n"
                                            "compress = { min_size = 0; };\n");
    cr_assert_eq(kill(s.pid, SIGHUP), 0);
    /* Each loop swaps when it reads its message; the last one to swap says so. */
    free(wt_wait_log(&s, "generation 2 serves on every loop", 10000));
    cr_assert_eq(wt_http(&s, "GET", "/hello", NULL, &r), 0);
    cr_assert(hv(&r, "x-version") != NULL && strcmp(hv(&r, "x-version"), "two") == 0, "%s", r.headers);
    cr_assert(hv(&r, "x-route") != NULL, "%s", r.headers);
    wt_resp_free(&r);
    cr_assert_eq(wt_http_headers(&s, "GET", "/hello", hs, NULL, &r), 0);
    cr_assert(hv(&r, "content-encoding") != NULL && strcmp(hv(&r, "content-encoding"), "gzip") == 0, "%s", r.headers);
    cr_assert(hv(&r, "access-control-allow-origin") != NULL, "%s", r.headers);
    wt_resp_free(&r);
    cr_assert_eq(wt_http(&s, "GET", "/nowhere", NULL, &r), 0);
    cr_assert(hv(&r, "x-version") != NULL && strcmp(hv(&r, "x-version"), "two") == 0, "%s", r.headers);
    wt_resp_free(&r);
    wt_finish(&s);
}
