/* Spans of the answers weft gives itself (request/trace.c): a 404, a 429,
 * a 413, a 408, a CORS preflight, a full pool's 503, static files, and the
 * refusals before a route is chosen or run (405, 414, 400, a WebSocket from
 * a disallowed origin: 403), each a span under the caller's traceparent
 * naming who answered, against the real binary and the collector of
 * tests/support/spans.h. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "rawhttp.h"
#include "spans.h"

static const char *const policies[] = {"pool", "coroutine", "reactive"};

#define T_ID "4bf92f3577b34da6a3ce929d0e0e4736"
#define P_ID "00f067aa0ba902b7"

static pid_t collector;
static int col_port;

static void start(void) { col_port = wt_collector_start(&collector); }

static void stop(void) { wt_collector_stop(collector); }

TestSuite(trace_answers, .init = start, .fini = stop, .timeout = 120);

/* One span of an answer: the caller's traceparent its parent, weft's own
 * span id, the status, the method, the path, the route (NULL: none, and
 * the span named by the method), who answered, the client. */
static void assert_span(const char *trace, const char *what, const char *method, const char *path, const char *route,
                        const char *by, const char *status)
{
    json_t *spans;
    json_t *sp = wt_span_wait(col_port, trace, &spans);
    cr_assert_str_eq(json_string_value(json_object_get(sp, "parentSpanId")), P_ID, "%s", what);
    const char *id = json_string_value(json_object_get(sp, "spanId"));
    cr_assert(wt_is_hex(id, 16) && strcmp(id, P_ID) != 0, "%s: span id %s", what, id);
    cr_assert_str_eq(wt_span_attr(sp, "http.response.status_code"), status, "%s", what);
    cr_assert_str_eq(wt_span_attr(sp, "http.request.method"), method, "%s", what);
    cr_assert_str_eq(wt_span_attr(sp, "url.path"), path, "%s", what);
    cr_assert_str_eq(wt_span_attr(sp, "weft.answered_by"), by, "%s", what);
    cr_assert_str_eq(wt_span_attr(sp, "client.address"), "127.0.0.1", "%s", what);
    cr_assert_str_eq(json_string_value(json_object_get(sp, "name")), route != NULL ? route : method, "%s", what);
    if (route != NULL) {
        cr_assert_str_eq(wt_span_attr(sp, "http.route"), route, "%s", what);
        cr_assert_str_eq(wt_span_attr(sp, "weft.route"), route, "%s", what);
    } else {
        cr_assert_null(wt_span_attr(sp, "http.route"), "%s", what);
    }
    if (strcmp(by, "plugin") != 0)
        cr_assert_null(wt_span_attr(sp, "weft.policy"), "%s: no handler ran", what);
    /* An error is a 5xx; weft's refusals (4xx) are the client's. */
    long code = json_integer_value(json_object_get(json_object_get(sp, "status"), "code"));
    cr_assert_eq(code, atoi(status) >= 500 ? 2 : 0, "%s: span status %ld", what, code);
    json_decref(spans);
}

/* A trace id of its own for each request: case `c`, policy `p`. */
static void edge_trace(char *trace, char *hdr, int c, int p)
{
    snprintf(trace, 33, "%.24s%04d%04d", T_ID, c, p);
    snprintf(hdr, 128, "traceparent: 00-%s-" P_ID "-01", trace);
}

static wt_server edge;

static void start_edge(void)
{
    wt_write_conf(&edge, "");
    char dir[512], cmd[1200];
    snprintf(dir, sizeof(dir), "%s/www", edge.dir);
    snprintf(cmd, sizeof(cmd), "mkdir -p %s && printf 'a file\\n' > %s/a.txt", dir, dir);
    cr_assert_eq(system(cmd), 0);
    char conf[8192];
    snprintf(conf, sizeof(conf),
             "threads = 2;\n" WT_LISTEN "\n"
             /* a body that pauses 1.5 s: 408; a target over 256 bytes: 414 */
             "limits = { request_timeout_ms = 2000; max_uri = 256; };\n"
             "pools = ( { name = \"default\"; size = 4; queue = 100; }, { name = \"tiny\"; size = 1; queue = 0; } );\n"
             "trace = { otlp_endpoint = \"http://127.0.0.1:%d/v1/traces\"; batch_interval_ms = 50; };\n"
             "routes = (\n" WT_EACH_POLICY("/limited", "reqinfo",
                                           " rate_limit = { per = \"client\"; requests = 1; per_s = 3600; };") ",\n"
             WT_EACH_POLICY("/small", "reqinfo", " methods = [\"POST\"]; max_body = 16;") ",\n"
             WT_EACH_POLICY("/cors", "reqinfo", " cors = { origins = [\"https://app.example\"]; };") ",\n"
             "  { path = \"/tiny/delay\"; plugin = \"delay\"; dispatch = \"pool\"; pool = \"tiny\"; "
             "options = { ms = 5000; }; },\n"
             "  { path = \"/files\"; static = { dir = \"%s\"; }; }\n);\n",
             col_port, dir);
    wt_start(&edge, conf);
}

/* One request to the edge server under a traceparent of its own (case `c`,
 * policy `p`, its trace id left in `trace`), answered `status`; `extra`
 * headers and `body` may be NULL. Returns the answer (the caller frees it). */
static wt_resp ask(char *trace, int c, int p, const char *method, const char *path, const char *extra,
                   const char *body, long status)
{
    char tp[128];
    edge_trace(trace, tp, c, p);
    const char *hdrs[4] = {tp, NULL, NULL, NULL};
    size_t n = 1;
    char copy[512] = "";
    if (extra != NULL) { /* "A: 1\nB: 2": one header a line */
        snprintf(copy, sizeof(copy), "%s", extra);
        for (char *h = strtok(copy, "\n"); h != NULL && n < 3; h = strtok(NULL, "\n"))
            hdrs[n++] = h;
    }
    wt_resp r;
    cr_assert_eq(wt_http_headers(&edge, method, path, hdrs, body, &r), 0, "%s %s", method, path);
    cr_assert_eq(r.status, status, "%s %s: %ld %s", method, path, r.status, r.body);
    return r;
}

static void ask_done(char *trace, int c, int p, const char *method, const char *path, const char *extra,
                     const char *body, long status)
{
    wt_resp r = ask(trace, c, p, method, path, extra, body, status);
    wt_resp_free(&r);
}

Test(trace_answers, weft_s_own_answers_have_spans_under_the_caller_s_parent_under_each_policy)
{
    start_edge();
    char trace[33], path[64];
    for (int p = 0; p < 3; p++) {
        /* 429: the first request is the plugin's (its span says so), the second weft's refusal. */
        snprintf(path, sizeof(path), "/%s/limited", policies[p]);
        ask_done(trace, 1, p, "GET", path, NULL, NULL, 200);
        assert_span(trace, "answered by its plugin", "GET", path, path, "plugin", "200");
        ask_done(trace, 2, p, "GET", path, NULL, NULL, 429);
        assert_span(trace, "past its rate_limit", "GET", path, path, "weft", "429");
        /* 413: a body over the route's max_body, refused before the plugin. */
        snprintf(path, sizeof(path), "/%s/small", policies[p]);
        ask_done(trace, 3, p, "POST", path, NULL, "a body well over sixteen bytes", 413);
        assert_span(trace, "a body over max_body", "POST", path, path, "weft", "413");
        /* 408: a body that stops half-way while weft collects it. */
        char tp[128], head[256];
        edge_trace(trace, tp, 9, p);
        snprintf(head, sizeof(head), "POST %s HTTP/1.1\r\nHost: t\r\n%s\r\nContent-Length: 16\r\n\r\nhalf", path, tp);
        wt_raw_resp raw;
        wt_raw_send(edge.port, head, strlen(head), &raw, 20000);
        cr_assert_eq(raw.status, 408, "%s: %s", path, raw.head != NULL ? raw.head : "(closed)");
        wt_raw_free(&raw);
        assert_span(trace, "a body that paused", "POST", path, path, "weft", "408");
        /* A CORS preflight, answered without the plugin. */
        snprintf(path, sizeof(path), "/%s/cors", policies[p]);
        ask_done(trace, 4, p, "OPTIONS", path, "Origin: https://app.example\nAccess-Control-Request-Method: GET", NULL,
                 204);
        assert_span(trace, "a preflight", "OPTIONS", path, path, "weft", "204");
    }
    /* 404: no route, so the span is named by the method. */
    ask_done(trace, 5, 0, "GET", "/no/such/route", NULL, NULL, 404);
    assert_span(trace, "a 404", "GET", "/no/such/route", NULL, "weft", "404");
    /* A static file, then the same file again with its ETag: 304. */
    wt_resp r = ask(trace, 6, 0, "GET", "/files/a.txt", NULL, NULL, 200);
    char etag[128], inm[160];
    cr_assert_not_null(wt_header(&r, "etag", etag, sizeof(etag)), "%s", r.headers);
    wt_resp_free(&r);
    assert_span(trace, "a static 200", "GET", "/files/a.txt", "/files", "static", "200");
    snprintf(inm, sizeof(inm), "If-None-Match: %s", etag);
    ask_done(trace, 7, 0, "GET", "/files/a.txt", inm, NULL, 304);
    assert_span(trace, "a static 304", "GET", "/files/a.txt", "/files", "static", "304");

    /* The built-in endpoints (the /metrics read by the waits above) make none. */
    json_t *spans = wt_spans_all(col_port);
    size_t i;
    json_t *sp;
    json_array_foreach(spans, i, sp) {
        const char *url = wt_span_attr(sp, "url.path");
        cr_assert(url == NULL || strcmp(url, "/metrics") != 0, "a span for /metrics");
    }
    json_decref(spans);
    wt_finish(&edge); /* a clean exit: sanitizer reports count */
}


Test(trace_answers, a_full_pool_s_503_is_a_span_of_the_plugin_route)
{
    start_edge();
    /* The tiny pool's only worker held by a request left unread (5 s, a
     * margin a loaded machine cannot eat; closing it cancels the wait). */
    int held = wt_send_get(&edge, "/tiny/delay");
    wt_wait_metric(&edge, "weft_inflight_requests", 1, 10000);
    char trace[33];
    ask_done(trace, 8, 0, "GET", "/tiny/delay", NULL, NULL, 503);
    close(held);
    assert_span(trace, "a full pool", "GET", "/tiny/delay", "/tiny/delay", "plugin", "503");
    json_t *spans;
    cr_assert_str_eq(wt_span_attr(wt_span_wait(col_port, trace, &spans), "weft.policy"), "pool");
    json_decref(spans);
    wt_finish(&edge);
}

/* Refused before any plugin code runs: a method the route does not take
 * (405, before a route is chosen: the span is named by the method), a
 * WebSocket from an origin the route's cors does not list (403, the
 * route's), a target over limits.max_uri (414) and an encoded NUL (400). */
Test(trace_answers, refusals_before_the_plugin_have_spans_under_each_policy)
{
    start_edge();
    char trace[33], path[64], tp[128], head[512];
    for (int p = 0; p < 3; p++) {
        snprintf(path, sizeof(path), "/%s/small", policies[p]); /* POST only */
        wt_resp r = ask(trace, 10, p, "GET", path, NULL, NULL, 405);
        char allow[64];
        cr_assert_str_eq(wt_header(&r, "allow", allow, sizeof(allow)), "POST", "%s", r.headers);
        wt_resp_free(&r);
        assert_span(trace, "a method the route does not take", "GET", path, NULL, "weft", "405");

        snprintf(path, sizeof(path), "/%s/cors", policies[p]);
        edge_trace(trace, tp, 11, p);
        snprintf(head, sizeof(head),
                 "GET %s HTTP/1.1\r\nHost: t\r\n%s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                 "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                 "Origin: https://evil.example\r\n\r\n",
                 path, tp);
        wt_raw_resp raw;
        wt_raw_send(edge.port, head, strlen(head), &raw, 20000);
        cr_assert_eq(raw.status, 403, "%s: %s", path, raw.head != NULL ? raw.head : "(closed)");
        wt_raw_free(&raw);
        assert_span(trace, "a WebSocket from a disallowed origin", "GET", path, path, "weft", "403");
    }
    char longpath[301] = "/pool/";
    memset(longpath + 6, 'x', sizeof(longpath) - 7);
    longpath[sizeof(longpath) - 1] = '\0';
    ask_done(trace, 12, 0, "GET", longpath, NULL, NULL, 414);
    assert_span(trace, "a target over max_uri", "GET", longpath, NULL, "weft", "414");
    ask_done(trace, 13, 0, "GET", "/files/a%00.txt", NULL, NULL, 400);
    assert_span(trace, "an encoded NUL", "GET", "/files/a%00.txt", NULL, "weft", "400");
    wt_finish(&edge);
}
