/* W3C trace context and OTLP span export (trace group), against the real
 * binary, the "traced" fixture plugin under every policy, and a small
 * collector that is also the traced upstream (tests/support/otlp_collector.py). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "rawhttp.h"
#include "spans.h"

static const char *const policies[] = {"pool", "coroutine", "reactive"};

#define T_ID "4bf92f3577b34da6a3ce929d0e0e4736"
#define P_ID "00f067aa0ba902b7"
#define GOOD_TP "00-" T_ID "-" P_ID "-01"
#define GOOD_TS "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"

/* ---- the collector ---- */

static pid_t collector;
static int col_port;




/* ---- the server ---- */

#define ROUTES(upstream)                                                                                      \
    "  { path = \"/pool/traced\"; plugin = \"traced\"; dispatch = \"pool\"; options = { upstream = \"" upstream \
    "\"; }; },\n"                                                                                               \
    "  { path = \"/coroutine/traced\"; plugin = \"traced\"; dispatch = \"coroutine\"; options = { upstream = \""  \
    upstream "\"; }; },\n"                                                                                      \
    "  { path = \"/reactive/traced\"; plugin = \"traced\"; dispatch = \"reactive\"; options = { upstream = \""    \
    upstream "\"; }; },\n"                                                                                      \
    "  { path = \"/plain\"; plugin = \"traced\"; dispatch = \"reactive\"; }\n"

static void start_server(wt_server *s, const char *trace_group)
{
    wt_write_conf(s, ""); /* makes the server's directory, where its access log goes */
    char conf[8192];
    snprintf(conf, sizeof(conf),
             "threads = 2;\n"
             "listen = [\"127.0.0.1:0\"];\n"
             "log = { access_log = \"%s/access.log\"; };\n"
             "pools = ( { name = \"default\"; size = 4; queue = 1000; } );\n"
             "%s\n"
             "routes = (\n" ROUTES("http://127.0.0.1:%d") ");\n",
             s->dir, trace_group, col_port, col_port, col_port);
    wt_start(s, conf);
}

static char access_path[400];

static void access_of(const wt_server *s) { snprintf(access_path, sizeof(access_path), "%s/access.log", s->dir); }

/* 1 when `text` has a line whose trace id (its last field but one, before
 * the duration) is `id`. */
static int has_trace_id(const char *text, const char *id)
{
    char want[64];
    snprintf(want, sizeof(want), " %s ", id);
    for (const char *p = text; p != NULL && (p = strstr(p, want)) != NULL; p++) {
        const char *d = p + strlen(want);
        size_t n = strspn(d, "0123456789.");
        if ((n > 0 || *d == '-') && d[n > 0 ? n : 1] == '\n')
            return 1;
    }
    return 0;
}

/* Waits for the access log's line with trace id `id` (h2o writes it once the response is done). */
static void wait_access_trace_id(const char *id)
{
    for (double t0 = wt_now_ms(); wt_now_ms() - t0 < 10000; usleep(20000)) { /* poll with a deadline */
        char *text = wt_read_file(access_path);
        int found = text != NULL && has_trace_id(text, id);
        free(text);
        if (found)
            return;
    }
    char *text = wt_read_file(access_path);
    cr_assert_fail("no access log line with trace id '%s' in %s:\n%s", id, access_path, text ? text : "(none)");
}

/* The access log's line that has `needle`, without its newline (waited for). */
static char *access_line(const char *needle)
{
    for (double t0 = wt_now_ms();; usleep(20000)) { /* poll with a deadline */
        char *text = wt_read_file(access_path);
        const char *line = text != NULL ? strstr(text, needle) : NULL;
        const char *eol = line != NULL ? strchr(line, '\n') : NULL;
        if (eol != NULL) {
            char *copy = strndup(line, (size_t)(eol - line));
            free(text);
            return copy;
        }
        free(text);
        cr_assert(wt_now_ms() - t0 < 10000, "no access log line with %s", needle);
    }
}

/* GET `path` (no route: 404) under GOOD_TP; its access log line. */
static char *not_found_line(const wt_server *s, const char *path)
{
    const char *hdrs[] = {"traceparent: " GOOD_TP, NULL};
    wt_resp r;
    cr_assert_eq(wt_http_headers(s, "GET", path, hdrs, NULL, &r), 0);
    cr_assert_eq(r.status, 404);
    wt_resp_free(&r);
    return access_line(path);
}

typedef struct seen {
    char tp[64];        /* what the plugin saw */
    char up_tp[128];    /* what the upstream received */
    char up_ts[700];
    char up[200];       /* the plugin's "up=" line: the upstream's status, or why the call failed */
    long status;
} seen;

static void line_value(const char *body, const char *key, char *out, size_t size)
{
    const char *p = strstr(body, key);
    out[0] = '\0';
    if (p == NULL)
        return;
    p += strlen(key);
    snprintf(out, size, "%.*s", (int)strcspn(p, "\n"), p);
}

static seen call(const wt_server *s, const char *path, const char *const *headers)
{
    wt_resp r;
    cr_assert_eq(wt_http_headers(s, "GET", path, headers, NULL, &r), 0, "%s", path);
    seen v = {.status = r.status};
    line_value(r.body, "tp=", v.tp, sizeof(v.tp));
    line_value(r.body, "traceparent=", v.up_tp, sizeof(v.up_tp));
    line_value(r.body, "tracestate=", v.up_ts, sizeof(v.up_ts));
    line_value(r.body, "up=", v.up, sizeof(v.up));
    cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body);
    cr_assert_eq(strlen(v.tp), 55, "%s: the plugin's traceparent '%s'", path, v.tp);
    wt_resp_free(&r);
    return v;
}

static wt_server srv;

static void start(void)
{
    col_port = wt_collector_start(&collector);
    char group[256];
    snprintf(group, sizeof(group),
             "trace = { otlp_endpoint = \"http://127.0.0.1:%d/v1/traces\"; batch_interval_ms = 50; };", col_port);
    start_server(&srv, group);
    access_of(&srv);
}

static void stop(void)
{
    if (srv.pid > 0)
        wt_stop(&srv);
    wt_collector_stop(collector);
}

TestSuite(trace, .init = start, .fini = stop, .timeout = 120);

Test(trace, a_valid_traceparent_is_continued_under_each_policy)
{
    for (int p = 0; p < 3; p++) {
        char path[64];
        snprintf(path, sizeof(path), "/%s/traced", policies[p]);
        const char *hdrs[] = {"traceparent: " GOOD_TP, "tracestate: " GOOD_TS, NULL};
        seen v = call(&srv, path, hdrs);
        /* The plugin sees the same trace, under a span of weft's own. */
        cr_assert(strncmp(v.tp, "00-" T_ID "-", 36) == 0, "%s: plugin saw %s", path, v.tp);
        cr_assert(strncmp(v.tp + 36, P_ID, 16) != 0, "%s: weft reused the caller's span id: %s", path, v.tp);
        cr_assert_str_eq(v.tp + 52, "-01", "%s: sampled flag lost: %s", path, v.tp);
        /* The outbound call carries it with a span id of its own, and the state as it came. */
        cr_assert_eq(strlen(v.up_tp), 55, "%s: upstream got traceparent '%s' (up=%s)", path, v.up_tp, v.up);
        cr_assert(strncmp(v.up_tp, "00-" T_ID "-", 36) == 0, "%s: upstream got %s", path, v.up_tp);
        cr_assert(strncmp(v.up_tp + 36, P_ID, 16) != 0 && strncmp(v.up_tp + 36, v.tp + 36, 16) != 0,
                  "%s: the call's span id is not its own: call %s, request %s", path, v.up_tp, v.tp);
        cr_assert_str_eq(v.up_ts, GOOD_TS, "%s", path);
    }
    wait_access_trace_id(T_ID);
}

Test(trace, the_access_log_has_the_trace_id_after_the_request_id)
{
    seen v = call(&srv, "/plain", NULL);
    char trace[33];
    snprintf(trace, sizeof(trace), "%.32s", v.tp + 3);
    wait_access_trace_id(trace);
    /* An answer weft gives itself, before any route ran, has the trace of
     * its span too (spans are exported here). */
    char *line = not_found_line(&srv, "/no/such/route/for/trace");
    char eol[256];
    snprintf(eol, sizeof(eol), "%s\n", line);
    cr_assert(has_trace_id(eol, T_ID), "404 line: %s", line);
    free(line);
}

Test(trace, malformed_traceparents_start_a_new_trace)
{
    static const char *const bad[] = {
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  /* uppercase hex */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  /* all-zero trace id */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  /* all-zero span id */
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",   /* trace id one digit short */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", /* version 00 with more after it */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b70-1",  /* separators misplaced */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  /* the forbidden version */
        "00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01",  /* not hex */
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", /* a later version, but no '-' after */
        "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
        "",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        for (int p = 0; p < 3; p++) {
            char path[64], h[200];
            snprintf(path, sizeof(path), "/%s/traced", policies[p]);
            snprintf(h, sizeof(h), "traceparent: %s", bad[i]);
            const char *hdrs[] = {h, "tracestate: " GOOD_TS, NULL};
            seen v = call(&srv, path, hdrs);
            cr_assert(strncmp(v.tp + 3, T_ID, 32) != 0 && strncmp(v.tp + 3, "4BF92F3577B34DA6", 16) != 0,
                      "'%s' was continued: %s", bad[i], v.tp);
            cr_assert(strncmp(v.tp + 3, "00000000000000000000000000000000", 32) != 0, "%s", v.tp);
            cr_assert(strncmp(v.up_tp, v.tp, 35) == 0, "%s: the call is not in the new trace: %s vs %s (up=%s)",
                      path, v.up_tp, v.tp, v.up);
            /* The state of a context that was refused is not passed on. */
            cr_assert_str_eq(v.up_ts, "(none)", "'%s': %s", bad[i], v.up_ts);
        }
    }
    /* Two traceparent headers make the context ambiguous. */
    const char *two[] = {"traceparent: " GOOD_TP, "traceparent: 00-" T_ID "-1111111111111111-01", NULL};
    seen v = call(&srv, "/pool/traced", two);
    cr_assert(strncmp(v.tp + 3, T_ID, 32) != 0, "two traceparents were continued: %s", v.tp);
}

Test(trace, a_later_version_is_read_by_the_rules_of_00)
{
    const char *hdrs[] = {"traceparent: cc-" T_ID "-" P_ID "-01-what-the-future-holds", NULL};
    seen v = call(&srv, "/coroutine/traced", hdrs);
    cr_assert(strncmp(v.tp, "00-" T_ID "-", 36) == 0, "%s", v.tp);
    cr_assert(strncmp(v.up_tp, "00-" T_ID "-", 36) == 0 && strlen(v.up_tp) == 55, "%s", v.up_tp);
}

Test(trace, an_oversized_or_invalid_tracestate_is_dropped_and_the_parent_kept)
{
    char many[2048] = "tracestate: ";
    for (int i = 0; i < 33; i++) /* 33 members: one past the bound */
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%sk%d=v", i ? "," : "", i);
    char big[1024] = "tracestate: a=";
    memset(big + strlen(big), 'x', 520); /* one member, past 512 bytes */
    static const char *const invalid[] = {"tracestate: Upper=1", "tracestate: a=1,a=2", "tracestate: a=b=c",
                                          "tracestate: =v", "tracestate: a=,b=1"};
    const char *states[8] = {many, big};
    size_t n = 2;
    for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++)
        states[n++] = invalid[i];
    for (size_t i = 0; i < n; i++) {
        for (int p = 0; p < 3; p++) {
            char path[64];
            snprintf(path, sizeof(path), "/%s/traced", policies[p]);
            const char *hdrs[] = {"traceparent: " GOOD_TP, states[i], NULL};
            seen v = call(&srv, path, hdrs);
            cr_assert(strncmp(v.tp, "00-" T_ID "-", 36) == 0, "%.60s...: parent lost: %s", states[i], v.tp);
            cr_assert_str_eq(v.up_ts, "(none)", "%.60s... was passed on", states[i]);
        }
    }
    /* 32 members in two headers, with blanks and an empty member, is one valid list. */
    char ok1[1024] = "tracestate: ", ok2[1024] = "tracestate: ";
    for (int i = 0; i < 16; i++) {
        snprintf(ok1 + strlen(ok1), sizeof(ok1) - strlen(ok1), "%sa%d=v", i ? " , " : "", i);
        snprintf(ok2 + strlen(ok2), sizeof(ok2) - strlen(ok2), "%sb%d@sys=v", i ? "," : ",", i);
    }
    const char *hdrs[] = {"traceparent: " GOOD_TP, ok1, ok2, NULL};
    seen v = call(&srv, "/reactive/traced", hdrs);
    cr_assert(strstr(v.up_ts, "a0=v") != NULL && strstr(v.up_ts, "b15@sys=v") != NULL, "%s", v.up_ts);
}

/* ---- export ---- */






Test(trace, spans_reach_the_collector_in_otlp_json)
{
    for (int p = 0; p < 3; p++) {
        char path[64], tp[128], trace[33];
        snprintf(path, sizeof(path), "/%s/traced", policies[p]);
        snprintf(trace, sizeof(trace), "%.24s%08d", T_ID, p + 1);
        snprintf(tp, sizeof(tp), "traceparent: 00-%s-" P_ID "-01", trace);
        const char *hdrs[] = {tp, NULL};
        double before = wt_metric(&srv, "weft_trace_spans_exported_total");
        seen v = call(&srv, path, hdrs);
        /* A server span and a client span. */
        wt_wait_metric(&srv, "weft_trace_spans_exported_total", before + 2, 15000);
        json_t *spans = wt_spans_all(col_port);
        json_t *server = wt_span_find(spans, trace, 2), *client = wt_span_find(spans, trace, 3);
        cr_assert_not_null(server, "%s: no server span for %s", path, trace);
        cr_assert_not_null(client, "%s: no client span for %s", path, trace);
        cr_assert_str_eq(json_string_value(json_object_get(server, "parentSpanId")), P_ID, "%s", path);
        char span[17];
        snprintf(span, sizeof(span), "%.16s", v.tp + 36);
        cr_assert_str_eq(json_string_value(json_object_get(server, "spanId")), span, "%s", path);
        cr_assert_str_eq(json_string_value(json_object_get(server, "name")), path);
        cr_assert_str_eq(wt_span_attr(server, "http.request.method"), "GET");
        cr_assert_str_eq(wt_span_attr(server, "url.path"), path);
        cr_assert_str_eq(wt_span_attr(server, "http.response.status_code"), "200");
        cr_assert_str_eq(wt_span_attr(server, "weft.route"), path);
        cr_assert_str_eq(wt_span_attr(server, "weft.policy"), policies[p]);
        /* The client span is the child the upstream saw. */
        char call_span[17];
        snprintf(call_span, sizeof(call_span), "%.16s", v.up_tp + 36);
        cr_assert_str_eq(json_string_value(json_object_get(client, "spanId")), call_span, "%s", path);
        cr_assert_str_eq(json_string_value(json_object_get(client, "parentSpanId")), span, "%s", path);
        cr_assert_str_eq(wt_span_attr(client, "http.response.status_code"), "200");
        json_decref(spans);
    }
}

Test(trace, an_unsampled_parent_is_honoured)
{
    const char *off[] = {"traceparent: 00-" T_ID "-" P_ID "-00", NULL};
    seen v = call(&srv, "/plain", off);
    cr_assert_str_eq(v.tp + 52, "-00", "%s", v.tp);
    double before = wt_metric(&srv, "weft_trace_spans_exported_total");
    const char *on[] = {"traceparent: 00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-" P_ID "-01", NULL};
    call(&srv, "/plain", on);
    /* One queue, in order: once the sampled span is there, the other would be too. */
    wt_wait_metric(&srv, "weft_trace_spans_exported_total", before + 1, 15000);
    json_t *spans = wt_spans_all(col_port);
    cr_assert_not_null(wt_span_find(spans, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 2));
    size_t i;
    json_t *sp;
    json_array_foreach(spans, i, sp) {
        const char *parent = json_string_value(json_object_get(sp, "parentSpanId"));
        cr_assert(!(strcmp(json_string_value(json_object_get(sp, "traceId")), T_ID) == 0 && parent != NULL &&
                    strcmp(parent, P_ID) == 0 && strcmp(json_string_value(json_object_get(sp, "name")), "/plain") == 0),
                  "a span of an unsampled parent was exported");
    }
    json_decref(spans);
}

/* ---- a collector that is down, or slow ---- */

Test(trace, a_collector_that_is_down_costs_requests_nothing)
{
    wt_server s = {0};
    /* Port 1 on loopback: nobody listens (connection refused at once). */
    start_server(&s, "trace = { otlp_endpoint = \"http://127.0.0.1:1/v1/traces\"; batch_size = 10; "
                     "queue_size = 20; batch_interval_ms = 50; };");
    const char *paths[] = {"/plain"};
    long statuses[60];
    wt_http_many(&s, paths[0], 60, statuses, NULL);
    for (int i = 0; i < 60; i++)
        cr_assert_eq(statuses[i], 200, "request %d: %ld", i, statuses[i]);
    /* One batch of 10 out for its retries, 20 waiting, the rest dropped;
     * then the first batch, after its third attempt. */
    wt_wait_metric(&s, "weft_trace_spans_dropped_total", 40, 15000);
    cr_assert_eq(wt_metric(&s, "weft_trace_spans_exported_total"), 0);
    free(wt_wait_log(&s, "export failed", 10000));
    wt_stop(&s);
}

Test(trace, a_slow_collector_meets_a_bounded_queue)
{
    wt_server s = {0};
    char group[256];
    snprintf(group, sizeof(group),
             "trace = { otlp_endpoint = \"http://127.0.0.1:%d/slow/v1/traces\"; batch_size = 5; queue_size = 10; "
             "batch_interval_ms = 50; export_timeout_ms = 60000; };",
             col_port);
    start_server(&s, group);
    long statuses[100];
    wt_http_many(&s, "/plain", 100, statuses, NULL);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(statuses[i], 200, "request %d: %ld", i, statuses[i]);
    /* One batch (at most 5) hangs in the collector, at most 10 wait: the rest is dropped. */
    wt_wait_metric(&s, "weft_trace_spans_dropped_total", 85, 15000);
    cr_assert_leq(wt_metric(&s, "weft_trace_spans_queued"), 10);
    cr_assert_eq(wt_metric(&s, "weft_trace_spans_exported_total"), 0);
    /* The collector holds one export (it may still be on its way there). */
    long hanging = 0;
    for (double t0 = wt_now_ms(); hanging == 0 && wt_now_ms() - t0 < 10000; usleep(20000)) { /* poll with a deadline */
        json_t *st = wt_collector_get(col_port, "/stats");
        hanging = (long)json_integer_value(json_object_get(st, "hanging"));
        json_decref(st);
    }
    cr_assert_eq(hanging, 1, "one export in flight at a time");
    wt_stop(&s);
}

/* A server of its own whose spans go to the collector's `path`. */
static void start_exporting_to(wt_server *s, const char *path)
{
    char group[256];
    snprintf(group, sizeof(group), "trace = { otlp_endpoint = \"http://127.0.0.1:%d%s\"; batch_interval_ms = 50; };",
             col_port, path);
    start_server(s, group);
}

Test(trace, a_collector_in_trouble_for_a_moment_loses_nothing)
{
    wt_server s = {0};
    start_exporting_to(&s, "/flaky/v1/traces");
    for (int i = 0; i < 3; i++) {
        (void)call(&s, "/plain", NULL);
        /* Each batch is refused with 503 once, then taken. */
        wt_wait_metric(&s, "weft_trace_spans_exported_total", i + 1, 15000);
    }
    cr_assert_eq(wt_metric(&s, "weft_trace_spans_dropped_total"), 0);
    json_t *st = wt_collector_get(col_port, "/stats");
    cr_assert_eq(json_integer_value(json_object_get(st, "unavailable")), 3, "%s", json_dumps(st, 0));
    json_decref(st);
    wt_stop(&s);
}

Test(trace, a_batch_the_collector_refuses_is_not_sent_again)
{
    wt_server s = {0};
    start_exporting_to(&s, "/refuse/v1/traces");
    (void)call(&s, "/plain", NULL);
    wt_wait_metric(&s, "weft_trace_spans_dropped_total", 1, 15000);
    /* A later batch that goes to a working collector shows the exporter
     * has moved on: by then the refused one was not posted again. */
    char *old = wt_read_file(s.conf), conf[8192];
    const char *at = strstr(old, "/refuse/v1/traces");
    snprintf(conf, sizeof(conf), "%.*s%s", (int)(at - old), old, at + strlen("/refuse"));
    free(old);
    wt_write_conf(&s, conf);
    cr_assert_eq(kill(s.pid, SIGHUP), 0);
    free(wt_wait_log(&s, "generation 2 serving", 10000));
    (void)call(&s, "/plain", NULL);
    wt_wait_metric(&s, "weft_trace_spans_exported_total", 1, 15000);
    json_t *st = wt_collector_get(col_port, "/stats");
    cr_assert_eq(json_integer_value(json_object_get(st, "refused")), 1, "%s", json_dumps(st, 0));
    json_decref(st);
    cr_assert_eq(wt_metric(&s, "weft_trace_spans_dropped_total"), 1);
    wt_stop(&s);
}

/* ---- configuration ---- */

Test(trace, the_trace_group_is_reloadable)
{
    wt_server s = {0};
    start_server(&s, "trace = { accept_incoming = false; };");
    /* accept_incoming = false: even a valid parent starts a new trace. */
    const char *hdrs[] = {"traceparent: " GOOD_TP, NULL};
    seen v = call(&s, "/plain", hdrs);
    cr_assert(strncmp(v.tp + 3, T_ID, 32) != 0, "continued although accept_incoming = false: %s", v.tp);
    cr_assert_str_eq(v.tp + 52, "-00", "no endpoint: new traces are not sampled by default: %s", v.tp);
    /* An endpoint added by a reload: spans go out from then on. */
    char conf[8192], group[256];
    snprintf(group, sizeof(group), "trace = { otlp_endpoint = \"http://127.0.0.1:%d/v1/traces\"; batch_interval_ms = 50; };",
             col_port);
    char *old = wt_read_file(s.conf);
    const char *at = strstr(old, "trace = {"), *end = strchr(at, '\n');
    snprintf(conf, sizeof(conf), "%.*s%s%s", (int)(at - old), old, group, end);
    free(old);
    wt_write_conf(&s, conf);
    cr_assert_eq(kill(s.pid, SIGHUP), 0);
    free(wt_wait_log(&s, "generation 2 serving", 10000));
    /* Each loop swaps when it reads its message: poll the answer until it changes. */
    for (double t0 = wt_now_ms(); wt_now_ms() - t0 < 10000; usleep(20000)) { /* poll with a deadline */
        v = call(&s, "/plain", hdrs);
        if (strncmp(v.tp, "00-" T_ID "-", 36) == 0)
            break;
    }
    cr_assert(strncmp(v.tp, "00-" T_ID "-", 36) == 0, "not continued after the reload: %s", v.tp);
    wt_wait_metric(&s, "weft_trace_spans_exported_total", 1, 15000);
    json_t *spans = wt_spans_all(col_port);
    cr_assert_not_null(wt_span_find(spans, T_ID, 2));
    json_decref(spans);
    wt_stop(&s);
}

Test(trace, bad_settings_are_refused_with_file_and_line)
{
    wt_server s = {0};
    wt_write_conf(&s, "threads = 1;\nlisten = [\"127.0.0.1:0\"];\n"
                      "trace = {\n"
                      "  otlp_endpoint = \"collector:4318\";\n"
                      "  sample_ratio = 1.5;\n"
                      "  queue_size = 0;\n"
                      "  sampling = 1;\n"
                      "};\n"
                      "routes = ( { path = \"/plain\"; plugin = \"traced\"; dispatch = \"reactive\"; } );\n");
    const char *args[] = {"-t", "-c", s.conf, NULL};
    char *out = NULL;
    cr_assert_eq(wt_run(&out, args, NULL), 1, "%s", out);
    char want[400];
    snprintf(want, sizeof(want), "%s:4: trace.otlp_endpoint: 'collector:4318' is not an http:// or https:// URL", s.conf);
    cr_assert(strstr(out, want) != NULL, "%s", out);
    snprintf(want, sizeof(want), "%s:5: trace.sample_ratio: must be between 0 and 1", s.conf);
    cr_assert(strstr(out, want) != NULL, "%s", out);
    snprintf(want, sizeof(want), "%s:6: trace.queue_size: must be between 1", s.conf);
    cr_assert(strstr(out, want) != NULL, "%s", out);
    snprintf(want, sizeof(want), "%s:7: trace: unknown setting 'sampling'", s.conf);
    cr_assert(strstr(out, want) != NULL, "%s", out);
    free(out);
    wt_rm_rf(s.dir);
}

Test(trace, json_log_lines_of_a_request_carry_its_trace_id)
{
    wt_server s = {0};
    wt_startf(&s, "threads = 1;\nlisten = [\"127.0.0.1:0\"];\nlog = { format = \"json\"; };\n"
                  "routes = ( { path = \"/x\"; plugin = \"reqinfo\"; dispatch = \"pool\"; } );\n"
                  "pools = ( { name = \"default\"; size = 2; queue = 10; } );\n");
    const char *hdrs[] = {"traceparent: " GOOD_TP, NULL};
    wt_resp r;
    cr_assert_eq(wt_http_headers(&s, "GET", "/x?do=log", hdrs, NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    wt_resp_free(&r);
    char *log = wt_wait_log(&s, "reqinfo says hello", 10000);
    cr_assert(strstr(log, "\"trace_id\":\"" T_ID "\"") != NULL, "%s", log);
    free(log);
    wt_stop(&s);
}

Test(trace, weft_s_own_error_line_about_a_request_names_its_trace)
{
    const char *hdrs[] = {"traceparent: " GOOD_TP, NULL};
    wt_resp r;
    cr_assert_eq(wt_http_headers(&srv, "GET", "/pool/traced?fail=1", hdrs, NULL, &r), 0);
    cr_assert_eq(r.status, 500);
    wt_resp_free(&r);
    free(wt_wait_log(&srv, "answering 500 (trace " T_ID ")", 10000));
    /* Its span is an error, with the status. */
    wt_wait_metric(&srv, "weft_trace_spans_exported_total", 1, 15000);
    json_t *spans = wt_spans_all(col_port);
    json_t *sp = wt_span_find(spans, T_ID, 2);
    cr_assert_not_null(sp);
    cr_assert_str_eq(wt_span_attr(sp, "http.response.status_code"), "500");
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(sp, "status"), "code")), 2);
    json_decref(spans);
}

Test(trace, http2_requests_are_traced_the_same)
{
    const char *hdrs[] = {"traceparent: " GOOD_TP, "tracestate: " GOOD_TS, NULL};
    for (int p = 0; p < 3; p++) {
        char path[64];
        snprintf(path, sizeof(path), "/%s/traced", policies[p]);
        wt_req q = {.path = path, .headers = hdrs, .http2 = 1};
        wt_resp r;
        cr_assert_eq(wt_request(&srv, &q, &r), 0, "%s", path);
        cr_assert_eq(r.status, 200, "%s: %s", path, r.body);
        char tp[64], up[128], ts[700];
        line_value(r.body, "tp=", tp, sizeof(tp));
        line_value(r.body, "traceparent=", up, sizeof(up));
        line_value(r.body, "tracestate=", ts, sizeof(ts));
        wt_resp_free(&r);
        cr_assert(strncmp(tp, "00-" T_ID "-", 36) == 0, "%s over h2: %s", path, tp);
        cr_assert(strncmp(up, "00-" T_ID "-", 36) == 0 && strncmp(up + 36, tp + 36, 16) != 0, "%s: %s", path, up);
        cr_assert_str_eq(ts, GOOD_TS);
    }
}

Test(trace, sample_ratio_decides_for_the_traces_weft_starts)
{
    wt_server s = {0};
    char group[256];
    snprintf(group, sizeof(group),
             "trace = { otlp_endpoint = \"http://127.0.0.1:%d/v1/traces\"; sample_ratio = 0; batch_interval_ms = 50; };",
             col_port);
    start_server(&s, group);
    seen fresh = call(&s, "/plain", NULL);
    cr_assert_str_eq(fresh.tp + 52, "-00", "sample_ratio = 0 sampled a new trace: %s", fresh.tp);
    /* A caller's sampled flag still wins; the one queue keeps the order. */
    const char *hdrs[] = {"traceparent: " GOOD_TP, NULL};
    seen cont = call(&s, "/plain", hdrs);
    cr_assert_str_eq(cont.tp + 52, "-01", "%s", cont.tp);
    wt_wait_metric(&s, "weft_trace_spans_exported_total", 1, 15000);
    char trace[33];
    snprintf(trace, sizeof(trace), "%.32s", fresh.tp + 3);
    json_t *spans = wt_spans_all(col_port);
    cr_assert_not_null(wt_span_find(spans, T_ID, 2));
    cr_assert_null(wt_span_find(spans, trace, 2), "an unsampled trace was exported");
    json_decref(spans);
    cr_assert_eq(wt_metric(&s, "weft_trace_spans_exported_total"), 1);
    wt_stop(&s);
}

Test(trace, an_idle_exporter_costs_no_cpu)
{
    /* The suite's server has an endpoint and nothing to export: its
     * exporter thread must sleep, not poll. */
    seen v = call(&srv, "/plain", NULL);
    (void)v;
    wt_wait_metric(&srv, "weft_trace_spans_exported_total", 1, 15000);
    double t0 = wt_cpu_seconds(srv.pid);
    usleep(1000000); /* (c) scenario: the window in which the idle server's CPU time is measured */
    double used = wt_cpu_seconds(srv.pid) - t0;
    /* An idle server uses almost none (loop ticks); a spinning thread a
     * whole core, or on a loaded 2-core machine still a fair share of one. */
    cr_assert_lt(used, 0.1, "%.2f s of CPU in 1 s while idle: the exporter spins", used);
}

Test(trace, without_an_endpoint_weft_s_own_answers_cost_no_trace)
{
    /* No exporter: an answer weft gives itself starts no trace (the access
     * log says "-"): nothing is spent on it. */
    wt_server s = {0};
    start_server(&s, "");
    access_of(&s);
    char *line = not_found_line(&s, "/no/such/route/untraced");
    char eol[1024];
    snprintf(eol, sizeof(eol), "%s\n", line);
    cr_assert(has_trace_id(eol, "-"), "404 line: %s", line);
    free(line);
    wt_finish(&s);
}
