/*
 * Tests for server/base/tracectx.c (W3C Trace Context: traceparent and
 * tracestate read by the spec's rules, ids made up) and the OTLP/JSON
 * encoding of server/base/otlp_json.c.
 */
#include "base/otlp.h"
#include "base/tracectx.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static int parse(const char *s, weft_traceparent *p) { return weft_traceparent_parse(s, strlen(s), p); }
static int state_ok(const char *s) { return weft_tracestate_valid(s, strlen(s)); }

Test(tracectx, a_version_00_traceparent_is_read_and_formatted_back)
{
    weft_traceparent p;
    cr_assert_eq(parse(TP, &p), 0);
    cr_assert_eq(p.trace_id[0], 0x4b);
    cr_assert_eq(p.trace_id[15], 0x36);
    cr_assert_eq(p.span_id[7], 0xb7);
    cr_assert_eq(p.flags, 1);
    char out[WEFT_TRACEPARENT_LEN + 1];
    weft_traceparent_format(out, p.trace_id, p.span_id, p.flags);
    cr_assert_str_eq(out, TP);
    cr_assert_eq(parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff", &p), 0, "unknown flags are kept");
    cr_assert_eq(p.flags, 0xff);
}

Test(tracectx, what_the_spec_refuses_is_refused)
{
    static const char *const bad[] = {
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-011",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-00",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736+00f067aa0ba902b7-01",
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.",
        " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "",
    };
    weft_traceparent p;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(parse(bad[i], &p), -1, "accepted: '%s'", bad[i]);
}

Test(tracectx, a_later_version_is_read_on_its_first_55_characters)
{
    weft_traceparent p;
    cr_assert_eq(parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", &p), 0);
    cr_assert_eq(parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more-fields", &p), 0);
    cr_assert_eq(p.span_id[0], 0x00);
    cr_assert_eq(p.span_id[1], 0xf0);
}

Test(tracectx, tracestate_members_keys_values_and_bounds)
{
    cr_assert(state_ok("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"));
    cr_assert(state_ok("a=1 ,\t, b=2,"), "blanks and empty members are allowed");
    cr_assert(state_ok("tenant@system=v"));
    cr_assert(state_ok("a=with space inside"));
    cr_assert(state_ok(""));
    cr_assert(!state_ok("A=1"), "uppercase key");
    cr_assert(!state_ok("1a=1"), "a simple key starts with a letter");
    cr_assert(state_ok("1a@sys=1"), "a tenant id may start with a digit");
    cr_assert(!state_ok("t@1sys=1"), "a system id starts with a letter");
    cr_assert(!state_ok("t@systemnamelonger=1"), "system id over 14 characters");
    cr_assert(!state_ok("a=1,a=2"), "duplicate key");
    cr_assert(!state_ok("a"), "no '='");
    cr_assert(!state_ok("a="), "empty value");
    cr_assert(!state_ok("a=b=c"), "'=' in a value");
    cr_assert(state_ok("a=trailing "), "blanks after a member are separators");
    cr_assert(!state_ok("a=tab\tinside"), "a tab inside a value");
    cr_assert(!state_ok("a=\x01"), "control character");
    char s[2048] = "";
    for (int i = 0; i < 32; i++)
        snprintf(s + strlen(s), sizeof(s) - strlen(s), "%sk%d=v", i ? "," : "", i);
    cr_assert(state_ok(s), "32 members");
    strcat(s, ",k32=v");
    cr_assert(!state_ok(s), "33 members");
    char big[600] = "a=";
    memset(big + 2, 'x', 257);
    cr_assert(!state_ok(big), "a value over 256 characters");
    char many[600] = "";
    for (int i = 0; i < 52; i++) /* 52 x "kNN=vvvvvv," is over 512 bytes */
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%sk%02d=vvvvvv", i ? "," : "", i);
    cr_assert_gt(strlen(many), 512);
    cr_assert(!state_ok(many), "over 512 bytes");
}

Test(tracectx, random_ids_are_never_zero_and_differ)
{
    uint8_t a[16], b[16], z[16] = {0};
    weft_trace_random(a, 16);
    weft_trace_random(b, 16);
    cr_assert(memcmp(a, z, 16) != 0 && memcmp(a, b, 16) != 0);
    uint8_t s[8];
    weft_trace_random(s, 8);
    cr_assert(memcmp(s, z, 8) != 0);
    double u = weft_trace_uniform();
    cr_assert(u >= 0.0 && u < 1.0);
}

Test(tracectx, spans_encode_as_otlp_json)
{
    weft_span s = {.kind = WEFT_SPAN_SERVER, .has_parent = 1, .start_unix_ns = 1700000000000000001ull,
                   .end_unix_ns = 1700000000000000002ull, .status = 503, .error = 1};
    memset(s.trace_id, 0xab, 16);
    memset(s.span_id, 0x01, 8);
    memset(s.parent_id, 0x02, 8);
    snprintf(s.name, sizeof(s.name), "/x/{id}");
    snprintf(s.method, sizeof(s.method), "GET");
    snprintf(s.target, sizeof(s.target), "/x/\xff"); /* not UTF-8: the attribute is left out, not the span */
    snprintf(s.route, sizeof(s.route), "/x/{id}");
    snprintf(s.policy, sizeof(s.policy), "pool");
    snprintf(s.error_text, sizeof(s.error_text), "HTTP 503");
    weft_span *list[] = {&s};
    size_t len = 0;
    char *text = weft_otlp_encode(list, 1, "svc", &len);
    cr_assert_not_null(text);
    cr_assert_eq(len, strlen(text));
    json_t *doc = json_loads(text, 0, NULL);
    cr_assert_not_null(doc, "%s", text);
    json_t *rs = json_array_get(json_object_get(doc, "resourceSpans"), 0);
    json_t *svc = json_array_get(json_object_get(json_object_get(rs, "resource"), "attributes"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(svc, "value"), "stringValue")), "svc");
    json_t *sp = json_array_get(json_object_get(json_array_get(json_object_get(rs, "scopeSpans"), 0), "spans"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(sp, "traceId")), "abababababababababababababababab");
    cr_assert_str_eq(json_string_value(json_object_get(sp, "spanId")), "0101010101010101");
    cr_assert_str_eq(json_string_value(json_object_get(sp, "parentSpanId")), "0202020202020202");
    cr_assert_str_eq(json_string_value(json_object_get(sp, "startTimeUnixNano")), "1700000000000000001");
    cr_assert_eq(json_integer_value(json_object_get(sp, "kind")), 2);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(sp, "status"), "code")), 2);
    cr_assert_null(strstr(text, "url.path"), "%s", text);
    cr_assert_not_null(strstr(text, "\"weft.policy\""), "%s", text);
    json_decref(doc);
    free(text);
}

Test(tracectx, an_answer_weft_gave_itself_encodes_who_answered_and_no_route_or_policy)
{
    weft_span s = {.kind = WEFT_SPAN_SERVER, .status = 404, .name = "GET", .method = "GET", .target = "/nowhere",
                   .answered_by = "weft", .client = "2001:db8::1"};
    weft_span *list[] = {&s};
    size_t len = 0;
    char *text = weft_otlp_encode(list, 1, "svc", &len);
    cr_assert_not_null(text);
    const char *by = "{\"key\":\"weft.answered_by\",\"value\":{\"stringValue\":\"weft\"}}";
    const char *client = "{\"key\":\"client.address\",\"value\":{\"stringValue\":\"2001:db8::1\"}}";
    cr_assert_not_null(strstr(text, by), "%s", text);
    cr_assert_not_null(strstr(text, client), "%s", text);
    /* No route matched and no handler ran: neither is claimed. */
    cr_assert_null(strstr(text, "http.route"), "%s", text);
    cr_assert_null(strstr(text, "weft.route"), "%s", text);
    cr_assert_null(strstr(text, "weft.policy"), "%s", text);
    free(text);
}
