#include "spans.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

int wt_collector_start(pid_t *pid) { return wt_py_server_start(pid, "otlp_collector.py", NULL); }

void wt_collector_stop(pid_t pid) { wt_mock_stop(pid); }

json_t *wt_collector_get(int port, const char *path)
{
    wt_server c = {.port = port};
    wt_resp r;
    cr_assert_eq(wt_http(&c, "GET", path, NULL, &r), 0, "collector %s", path);
    json_error_t err;
    json_t *j = json_loads(r.body, 0, &err);
    cr_assert_not_null(j, "collector %s: %s: %s", path, err.text, r.body);
    wt_resp_free(&r);
    return j;
}

const char *wt_span_attr(json_t *span, const char *key)
{
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(span, "attributes"), i, a) {
        if (strcmp(json_string_value(json_object_get(a, "key")), key) == 0) {
            json_t *v = json_object_get(a, "value");
            json_t *s = json_object_get(v, "stringValue");
            return json_string_value(s != NULL ? s : json_object_get(v, "intValue"));
        }
    }
    return NULL;
}

int wt_is_hex(const char *s, size_t len)
{
    if (s == NULL || strlen(s) != len)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

static int is_digits(const char *s)
{
    if (s == NULL || *s == '\0')
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

json_t *wt_spans_all(int port)
{
    json_t *got = wt_collector_get(port, "/spans"), *spans = json_array();
    cr_assert_eq(json_integer_value(json_object_get(got, "bad")), 0, "an export was not JSON");
    size_t i, j, k;
    json_t *doc, *rs, *ss, *sp;
    json_array_foreach(json_object_get(got, "docs"), i, doc) {
        json_t *rss = json_object_get(doc, "resourceSpans");
        cr_assert(json_is_array(rss) && json_array_size(rss) > 0, "no resourceSpans");
        json_array_foreach(rss, j, rs) {
            json_t *res = json_object_get(json_object_get(rs, "resource"), "attributes");
            cr_assert(json_is_array(res), "resource without attributes");
            cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_array_get(res, 0), "value"),
                                                               "stringValue")),
                             "weft");
            json_array_foreach(json_object_get(rs, "scopeSpans"), k, ss) {
                cr_assert_str_eq(json_string_value(json_object_get(json_object_get(ss, "scope"), "name")), "weft");
                size_t m;
                json_array_foreach(json_object_get(ss, "spans"), m, sp) {
                    cr_assert(wt_is_hex(json_string_value(json_object_get(sp, "traceId")), 32), "traceId");
                    cr_assert(wt_is_hex(json_string_value(json_object_get(sp, "spanId")), 16), "spanId");
                    const char *st = json_string_value(json_object_get(sp, "startTimeUnixNano"));
                    const char *en = json_string_value(json_object_get(sp, "endTimeUnixNano"));
                    cr_assert(is_digits(st) && is_digits(en), "times as unix nanos strings: %s %s", st, en);
                    cr_assert(strtoull(en, NULL, 10) >= strtoull(st, NULL, 10), "ends before it starts");
                    cr_assert(strtoull(st, NULL, 10) > 1600000000000000000ull, "not unix nanos: %s", st);
                    json_array_append(spans, sp);
                }
            }
        }
    }
    json_decref(got);
    return spans;
}

json_t *wt_span_find(json_t *spans, const char *trace, int kind)
{
    size_t i;
    json_t *sp;
    json_array_foreach(spans, i, sp) {
        if (strcmp(json_string_value(json_object_get(sp, "traceId")), trace) == 0 &&
            json_integer_value(json_object_get(sp, "kind")) == kind)
            return sp;
    }
    return NULL;
}

json_t *wt_span_wait(int port, const char *trace, json_t **spans)
{
    for (double t0 = wt_now_ms();; usleep(50000)) { /* poll with a deadline */
        *spans = wt_spans_all(port);
        json_t *sp = wt_span_find(*spans, trace, 2);
        if (sp != NULL)
            return sp;
        json_decref(*spans);
        cr_assert(wt_now_ms() - t0 < 15000, "no server span for trace %s", trace);
    }
}
