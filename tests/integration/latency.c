/* A request's latency is its own: a CPU-bound handler (the blocker fixture
 * with spin = 1, computing for 30 ms and answering how long it held its
 * thread by its own clock) is measured for at least that long under every
 * policy, and dispatch = "auto", in each place an operator reads it: the
 * weft_request_duration_seconds histogram (_sum, and no observation in a
 * bucket below 30 ms), the access log's last field and the request's OTLP
 * span; and a static file, served within one wake-up of its loop, takes
 * more than no time at all. Everything is read after the answer, from the server's own
 * signals: /metrics, the access log line (written once the answer is out)
 * and the collector's spans (waited for with a deadline). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "spans.h"

#define SPIN_MS 30
#define ROUTE(p) WT_ROUTE("/" p "/spin", "blocker", p, " options = { ms = 30; spin = 1; };")

static wt_server srv;
static pid_t collector;
static int col_port;

static void start(void)
{
    col_port = wt_collector_start(&collector);
    wt_write_conf(&srv, ""); /* makes the server's directory, where its access log goes */
    wt_startf(&srv,
              "threads = 1; " WT_LISTEN "\n"
              "log = { access_log = \"%s/access.log\"; };\n"
              "blocking = { threshold_ms = 1000; };\n"
              "trace = { otlp_endpoint = \"http://127.0.0.1:%d/v1/traces\"; batch_interval_ms = 50; };\n"
              "routes = (\n" ROUTE("pool") ",\n" ROUTE("coroutine") ",\n" ROUTE("reactive") ",\n" ROUTE("auto") ",\n"
              "  { path = \"/files\"; static = { dir = \"%s\"; }; }\n);\n",
              srv.dir, col_port, srv.dir);
}

static void stop(void)
{
    wt_suite_stop(&srv);
    wt_collector_stop(collector);
}

TestSuite(latency, .init = start, .fini = stop, .timeout = 90);

/* GET /POLICY/spin under a traceparent of trace `trace`: how long the handler
 * held its thread, in microseconds, by its own account. */
static long long spin_once(const char *policy, const char *trace)
{
    char path[64], tp[128];
    snprintf(path, sizeof(path), "/%s/spin", policy);
    snprintf(tp, sizeof(tp), "traceparent: 00-%s-00f067aa0ba902b7-01", trace);
    const char *hdrs[] = {tp, NULL};
    wt_resp r;
    cr_assert_eq(wt_http_headers(&srv, "GET", path, hdrs, NULL, &r), 0, "%s", path);
    cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body);
    long long us = -1;
    cr_assert_eq(sscanf(r.body, "spun %lld us", &us), 1, "%s: %s", path, r.body);
    cr_assert_geq(us, SPIN_MS * 1000, "%s", r.body);
    wt_resp_free(&r);
    return us;
}

static void expect_histogram(const char *policy, long long spent_us)
{
    char key[256];
    const char *shown = policy; /* an auto route's series are its own, wherever its requests run */
    snprintf(key, sizeof(key), "weft_request_duration_seconds_count{route=\"/%s/spin\",policy=\"%s\"}", policy, shown);
    cr_assert_eq(wt_metric(&srv, key), 1, "%s", key);
    snprintf(key, sizeof(key), "weft_request_duration_seconds_sum{route=\"/%s/spin\",policy=\"%s\"}", policy, shown);
    double sum = wt_metric(&srv, key);
    cr_assert_geq(sum, (double)spent_us / 1e6, "%s is %.9f s; the handler held its thread for %lld us", key, sum,
                  spent_us);
    snprintf(key, sizeof(key), "weft_request_duration_seconds_bucket{route=\"/%s/spin\",policy=\"%s\",le=\"0.025\"}",
             policy, shown);
    cr_assert_eq(wt_metric(&srv, key), 0, "%s: a %lld us request counted at 25 ms or less", key, spent_us);
}

/* The duration at the end of the access log's line for GET `target`. */
static double access_log_seconds_of(const char *target)
{
    char path[400], needle[128];
    snprintf(path, sizeof(path), "%s/access.log", srv.dir);
    snprintf(needle, sizeof(needle), "\"GET %s HTTP/1.1\"", target);
    for (double t0 = wt_now_ms();; usleep(20000)) { /* poll with a deadline: h2o logs once the answer is out */
        char *text = wt_read_file(path);
        const char *line = text != NULL ? strstr(text, needle) : NULL;
        const char *eol = line != NULL ? strchr(line, '\n') : NULL;
        if (eol != NULL) {
            const char *last = eol;
            while (last > line && last[-1] != ' ')
                last--;
            char *end = NULL;
            double s = strtod(last, &end);
            cr_assert(end == eol, "the line's last field is not a duration: %.*s", (int)(eol - line), line);
            free(text);
            return s;
        }
        free(text);
        cr_assert_lt(wt_now_ms() - t0, 10000, "no access log line with %s", needle);
    }
}

static void expect_span(const char *trace, long long spent_us)
{
    json_t *spans = NULL;
    json_t *sp = wt_span_wait(col_port, trace, &spans);
    unsigned long long st = strtoull(json_string_value(json_object_get(sp, "startTimeUnixNano")), NULL, 10);
    unsigned long long en = strtoull(json_string_value(json_object_get(sp, "endTimeUnixNano")), NULL, 10);
    cr_assert_geq(en - st, (unsigned long long)spent_us * 1000, "the span lasts %llu ns; the handler spent %lld us",
                  en - st, spent_us);
    json_decref(spans);
}

static void expect_true_latency(const char *policy, int n)
{
    char trace[33];
    snprintf(trace, sizeof(trace), "4bf92f3577b34da6a3ce929d0e0e47%02x", n);
    long long spent = spin_once(policy, trace);
    expect_histogram(policy, spent);
    char target[64];
    snprintf(target, sizeof(target), "/%s/spin", policy);
    double logged = access_log_seconds_of(target);
    cr_assert_geq(logged, (double)spent / 1e6, "the access log says %.6f s; the handler held its thread for %lld us",
                  logged, spent);
    expect_span(trace, spent);
    wt_finish(&srv);
}

ParameterizedTestParameters(latency, a_cpu_bound_handler_counts_the_time_it_held_its_thread)
{
    return wt_policy_params();
}
ParameterizedTest(wt_policy *p, latency, a_cpu_bound_handler_counts_the_time_it_held_its_thread)
{
    expect_true_latency(p->name, p->name[0]);
}

/* The route of the report: dispatch = "auto" runs a handler on the loop until it proves CPU-bound. */
Test(latency, an_auto_route_on_the_loop_counts_the_time_it_held_it) { expect_true_latency("auto", 0xa0); }

/* A static file is served within one wake-up of its loop: its latency is
 * its own clock reads' difference, small but never nothing. */
Test(latency, a_static_file_counts_the_time_it_took)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/files/weft.conf", NULL, &r), 0);
    cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
    wt_resp_free(&r);
    const char *key = "weft_request_duration_seconds_sum{route=\"/files\",policy=\"static\"}";
    cr_assert_gt(wt_metric(&srv, key), 0, "%s: a file served in no time at all", key);
    cr_assert_gt(access_log_seconds_of("/files/weft.conf"), 0, "the access log says a file took no time at all");
    wt_finish(&srv);
}
