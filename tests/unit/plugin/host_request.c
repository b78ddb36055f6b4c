/*
 * Tests for server/plugin/host_request.c: API 2's `request` group as a
 * plugin calls it (weft_host_api2.request), on a hand-made request
 * (weft_req_new with its fields set, as http/ sets them). The accessors
 * behind it are request/'s (tests/unit/request.c, access.c); what is
 * checked here is the group's own work: the optional length out-parameters
 * (also for what is absent), the WEFT_OK/WEFT_ERROR mapping of the _at
 * iterators, optional ports, and json_body's content-type and depth checks,
 * including how it clamps max_depth and the answer it leaves.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "plugin/host.h"
#include "request/cancel.h"
#include "request/request.h"

static weft_req *req;
static const weft_host_request *h;

static weft_kv headers[] = {
    {"content-type", "application/json; charset=UTF-8"},
    {"cookie", "a=1; b=\"two\""},
    {"x-dup", "first"},
    {"x-dup", "second"},
};

static void setup(void)
{
    req = weft_req_new();
    cr_assert_not_null(req);
    req->method = "POST";
    req->path = "/persons/42";
    req->query = "q=a+b&n=%31";
    req->headers = headers;
    req->n_headers = sizeof(headers) / sizeof(headers[0]);
    req->params[0] = (weft_kv){"id", "42"};
    req->n_params = 1;
    h = weft_host_api2.request;
}

static void teardown(void)
{
    weft_req_free(req);
    req = NULL;
}

TestSuite(host_request, .init = setup, .fini = teardown, .timeout = 30);

static void set_body(const char *text)
{
    req->body = text;
    req->body_len = strlen(text);
}

Test(host_request, the_group_is_api2s)
{
    cr_assert_eq(h, &weft_host_request_group);
    cr_assert_eq(h->struct_size, sizeof(weft_host_request));
    cr_assert_eq(h->version, WEFT_HOST_REQUEST_VERSION);
    cr_assert_str_eq(h->method(req), "POST");
    cr_assert_str_eq(h->path(req), "/persons/42");
    cr_assert_str_eq(h->query_string(req), "q=a+b&n=%31", "the raw query string is not decoded");
}

/* Each lookup takes an optional length; an absent value is NULL with length 0. */
Test(host_request, lookups_fill_the_optional_length)
{
    const char *(*fns[])(const weft_req *, const char *, size_t *) = {h->param, h->query, h->header, h->cookie};
    static const struct {
        const char *name, *want;
    } cases[] = {
        {"id", "42"},       /* param */
        {"q", "a b"},       /* query, decoded */
        {"X-Dup", "first"}, /* header, the first of two */
        {"b", "two"},       /* cookie, quotes removed */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t len = 999;
        const char *v = fns[i](req, cases[i].name, &len);
        cr_assert_not_null(v, "%s: absent", cases[i].name);
        cr_assert_str_eq(v, cases[i].want);
        cr_assert_eq(len, strlen(cases[i].want), "%s: length %zu", cases[i].name, len);
        cr_assert_str_eq(fns[i](req, cases[i].name, NULL), cases[i].want, "%s without a length", cases[i].name);

        len = 999;
        cr_assert_null(fns[i](req, "missing", &len));
        cr_assert_eq(len, 0, "%s: an absent value's length is %zu", cases[i].name, len);
    }
}

Test(host_request, iterators_say_ok_then_error_past_the_last)
{
    const char *name, *value;
    size_t len;
    for (size_t i = 0; i < req->n_headers; i++) {
        cr_assert_eq(h->header_at(req, i, &name, &value, &len), WEFT_OK, "header %zu", i);
        cr_assert_str_eq(name, headers[i].name);
        cr_assert_str_eq(value, headers[i].value);
        cr_assert_eq(len, strlen(headers[i].value));
    }
    name = value = "untouched";
    cr_assert_eq(h->header_at(req, req->n_headers, &name, &value, &len), WEFT_ERROR);
    cr_assert_str_eq(name, "untouched", "written past the last header");
    cr_assert_eq(h->header_at(req, (size_t)-1, NULL, NULL, NULL), WEFT_ERROR);

    cr_assert_eq(h->query_at(req, 1, &name, &value, &len), WEFT_OK, "the query is parsed on first use");
    cr_assert_str_eq(name, "n");
    cr_assert_str_eq(value, "1");
    cr_assert_eq(len, 1);
    cr_assert_eq(h->query_at(req, 2, NULL, NULL, NULL), WEFT_ERROR);
}

Test(host_request, addresses_ports_id_body_and_cancelled)
{
    int port = -1;
    cr_assert_str_eq(h->peer_addr(req, &port), "", "no address known");
    cr_assert_eq(port, 0);
    cr_assert_str_eq(h->local_addr(req, NULL), "", "the port is optional");

    weft_req_set_id(req, "abc-1", 5);
    cr_assert_str_eq(h->id(req), "abc-1");

    set_body("hello\0world");
    req->body_len = 11; /* a body may hold NULs */
    size_t len = 0;
    const char *b = h->body(req, &len);
    cr_assert_eq(b, req->body);
    cr_assert_eq(len, 11);
    cr_assert_eq(h->body(req, NULL), req->body);

    cr_assert_eq(h->cancelled(req), 0);
    atomic_store(&req->cancelled, WEFT_CANCEL_CLIENT);
    cr_assert_neq(h->cancelled(req), 0);
}

/* ---- json_body ---- */

/* `depth` arrays nested, as text in the request's arena. */
static const char *nested(int depth)
{
    char *s = weft_req_alloc(req, (size_t)depth * 2 + 2);
    cr_assert_not_null(s);
    memset(s, '[', (size_t)depth);
    s[depth] = '1';
    memset(s + depth + 1, ']', (size_t)depth);
    s[2 * depth + 1] = '\0';
    return s;
}

static void expect_json_answer(int status, const char *message)
{
    cr_assert_eq(req->status, status);
    char want[200];
    snprintf(want, sizeof(want), "{\"error\":\"%s\",\"status\":%d}", message, status);
    cr_assert(req->res_len == strlen(want) && memcmp(req->res_body, want, strlen(want)) == 0,
              "body '%.*s', want '%s'", (int)req->res_len, req->res_body, want);
    cr_assert_str_eq(weft_req_res_header(req, "content-type"), "application/json");
}

Test(host_request, json_body_hands_out_a_body_within_depth)
{
    set_body("{\"a\": [1, {\"b\": 2}]}");
    const char *text = NULL;
    size_t len = 0;
    cr_assert_eq(h->json_body(req, 3, &text, &len), WEFT_OK);
    cr_assert_eq(text, req->body);
    cr_assert_eq(len, req->body_len);
    cr_assert_eq(h->json_body(req, 3, NULL, NULL), WEFT_OK, "text and len are optional");
    cr_assert_eq(req->status, 200, "an accepted body set an answer");
    cr_assert_eq(req->res_len, 0);
    cr_assert_eq(req->n_res_headers, 0);
}

Test(host_request, json_body_refuses_another_content_type_with_415)
{
    headers[0].value = "text/plain";
    set_body("[1]");
    const char *text = "untouched";
    cr_assert_eq(h->json_body(req, 0, &text, NULL), WEFT_ERROR);
    cr_assert_str_eq(text, "untouched");
    expect_json_answer(415, "content-type must be application/json");
    headers[0].value = "application/json; charset=UTF-8";
}

Test(host_request, json_body_depth_is_inclusive_and_clamped)
{
    static const struct {
        int asked, bound;
    } cases[] = {{3, 3}, {1, 1}, {0, 32}, {-5, 32}, {1000, 1000}, {1001, 1000}, {5000, 1000}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int bound = cases[i].bound;
        req->body = nested(bound);
        req->body_len = strlen(req->body);
        cr_assert_eq(h->json_body(req, cases[i].asked, NULL, NULL), WEFT_OK, "max_depth %d: %d levels refused",
                     cases[i].asked, bound);
        req->body = nested(bound + 1);
        req->body_len = strlen(req->body);
        cr_assert_eq(h->json_body(req, cases[i].asked, NULL, NULL), WEFT_ERROR, "max_depth %d: %d levels taken",
                     cases[i].asked, bound + 1);
        char msg[80];
        snprintf(msg, sizeof(msg), "invalid JSON: nested more than %d levels deep", bound);
        expect_json_answer(400, msg);
        req->status = 200;
        req->res_len = 0;
        req->n_res_headers = 0;
    }
}
