/*
 * Tests for server/request.c: the weft_req accessors a plugin reads through
 * the host table, and the response builders it writes through.
 */
#include "request/request.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static weft_req *req;

static void req_setup(void)
{
    req = weft_req_new();
    cr_assert_not_null(req);
}

static void req_teardown(void)
{
    weft_req_free(req);
    req = NULL;
}

TestSuite(request, .init = req_setup, .fini = req_teardown);

static const char *decode(const char *s, int plus)
{
    const char *d = weft_req_decode(req, s, strlen(s), plus);
    cr_assert_not_null(d);
    return d;
}

/* ---- arena ---- */

Test(request, arena_alloc_aligned_and_large)
{
    for (size_t size = 1; size < 100; size += 7) {
        void *p = weft_req_alloc(req, size);
        cr_assert_not_null(p);
        cr_assert_eq((uintptr_t)p % 16, 0, "allocation of %zu bytes is not 16-byte aligned", size);
        memset(p, 0x5a, size);
    }
    char *big = weft_req_alloc(req, 100000); /* bigger than a chunk */
    cr_assert_not_null(big);
    memset(big, 1, 100000);
    char *small = weft_req_alloc(req, 8);
    cr_assert_not_null(small);
    cr_assert(small + 8 <= big || small >= big + 100000, "allocations overlap");
    char *s = weft_req_strndup(req, "hello world", 5);
    cr_assert_str_eq(s, "hello");
}

/* ---- percent-decoding ---- */

Test(request, decode_percent)
{
    cr_assert_str_eq(decode("a%20b", 0), "a b");
    cr_assert_str_eq(decode("%41%42%43", 0), "ABC");
    cr_assert_str_eq(decode("%6a%6A", 0), "jj", "hex digits of either case");
    cr_assert_str_eq(decode("%2F..%2f", 0), "/../");
    cr_assert_str_eq(decode("%25", 0), "%");
    cr_assert_str_eq(decode("%2541", 0), "%41", "decoding happens once");
    cr_assert_str_eq(decode("%e2%82%ac", 0), "\xe2\x82\xac");
    cr_assert_str_eq(decode("", 0), "");
    cr_assert_str_eq(decode("plain", 0), "plain");
}

Test(request, decode_plus)
{
    cr_assert_str_eq(decode("a+b", 1), "a b", "'+' is a space in a query");
    cr_assert_str_eq(decode("a+b", 0), "a+b", "'+' is itself in a path");
    cr_assert_str_eq(decode("%2B", 1), "+", "an encoded '+' stays '+'");
    cr_assert_str_eq(decode("%2b+%20", 1), "+  ");
}

Test(request, decode_malformed_percent_kept_verbatim)
{
    cr_assert_str_eq(decode("%", 0), "%");
    cr_assert_str_eq(decode("%4", 0), "%4");
    cr_assert_str_eq(decode("ab%2", 0), "ab%2");
    cr_assert_str_eq(decode("%zz", 0), "%zz");
    cr_assert_str_eq(decode("%4g", 0), "%4g");
    cr_assert_str_eq(decode("%g4", 0), "%g4");
    cr_assert_str_eq(decode("%%41", 0), "%A");
    cr_assert_str_eq(decode("100%", 1), "100%");
    cr_assert_str_eq(decode("%+1", 1), "% 1");
}

Test(request, decode_respects_len)
{
    const char *src = "a%20b%41";
    cr_assert_str_eq(weft_req_decode(req, src, 3, 0), "a%2", "an escape cut by len is not decoded");
    cr_assert_str_eq(weft_req_decode(req, src, 4, 0), "a ");
    cr_assert_str_eq(weft_req_decode(req, src, 5, 0), "a b");
    cr_assert_str_eq(weft_req_decode(req, "%41", 3, 0), "A", "an escape ending exactly at len");
}

/* ---- request accessors ---- */

Test(request, method_path_body)
{
    req->method = "POST";
    req->path = "/x/y";
    cr_assert_str_eq(weft_request_req_method(req), "POST");
    cr_assert_str_eq(weft_request_req_path(req), "/x/y");
    size_t len = 99;
    cr_assert_str_eq(weft_request_req_body(req, &len), "", "no body reads as empty, never NULL");
    cr_assert_eq(len, 0);
    static const char body[] = "a\0b";
    req->body = body;
    req->body_len = 3;
    const char *b = weft_request_req_body(req, &len);
    cr_assert_eq(len, 3, "a body may contain NULs");
    cr_assert_eq(memcmp(b, "a\0b", 3), 0);
    cr_assert_not_null(weft_request_req_body(req, NULL), "len may be NULL");
}

Test(request, params_by_name)
{
    req->params[0] = (weft_kv){"id", "42"};
    req->params[1] = (weft_kv){"name", "a b"};
    req->n_params = 2;
    cr_assert_str_eq(weft_request_req_param(req, "id"), "42");
    cr_assert_str_eq(weft_request_req_param(req, "name"), "a b");
    cr_assert_null(weft_request_req_param(req, "ID"), "parameter names are case-sensitive");
    cr_assert_null(weft_request_req_param(req, "other"));
}

Test(request, query_lazy_parsing)
{
    req->query = "a=1&b=&c&a=2&=x&d=hello+world&e=%26%3D%2B&k%41y=v&&";
    cr_assert_eq(req->query_parsed, 0, "nothing parsed before the first lookup");
    cr_assert_str_eq(weft_request_req_query(req, "a"), "1", "a repeated key yields its first value");
    cr_assert_eq(req->query_parsed, 1);
    cr_assert_str_eq(weft_request_req_query(req, "b"), "", "empty value");
    cr_assert_str_eq(weft_request_req_query(req, "c"), "", "a key without '=' has an empty value");
    cr_assert_str_eq(weft_request_req_query(req, "d"), "hello world");
    cr_assert_str_eq(weft_request_req_query(req, "e"), "&=+");
    cr_assert_str_eq(weft_request_req_query(req, "kAy"), "v", "keys are decoded too");
    cr_assert_null(weft_request_req_query(req, "missing"));
    cr_assert_null(weft_request_req_query(req, ""), "an empty key is dropped");
    cr_assert_null(weft_request_req_query(req, "A"), "keys are case-sensitive");
    /* Parsed once: the result is kept. */
    req->query = "a=changed";
    cr_assert_str_eq(weft_request_req_query(req, "a"), "1");
}

Test(request, query_absent_or_empty)
{
    cr_assert_null(weft_request_req_query(req, "a"), "no query string at all");
    weft_req *r2 = weft_req_new();
    r2->query = "";
    cr_assert_null(weft_request_req_query(r2, "a"));
    cr_assert_eq(r2->n_query, 0);
    weft_req_free(r2);
}

Test(request, query_many_pairs)
{
    char q[8192] = "";
    for (int i = 0; i < 500; i++)
        snprintf(q + strlen(q), sizeof(q) - strlen(q), "%sk%d=v%d", i ? "&" : "", i, i);
    req->query = q;
    cr_assert_str_eq(weft_request_req_query(req, "k0"), "v0");
    cr_assert_str_eq(weft_request_req_query(req, "k499"), "v499");
    cr_assert_eq(req->n_query, 500);
}

Test(request, headers_case_insensitive)
{
    weft_kv headers[] = {{"content-type", "text/plain"}, {"x-test", "one"}, {"X-Test", "two"}};
    req->headers = headers;
    req->n_headers = 3;
    cr_assert_str_eq(weft_request_req_header(req, "Content-Type"), "text/plain");
    cr_assert_str_eq(weft_request_req_header(req, "CONTENT-TYPE"), "text/plain");
    cr_assert_str_eq(weft_request_req_header(req, "x-TEST"), "one", "the first of repeated headers");
    cr_assert_null(weft_request_req_header(req, "content"));
    cr_assert_null(weft_request_req_header(req, "accept"));
}

/* ---- response builders ---- */

static const char *res_header_value(const char *name)
{
    for (size_t i = 0; i < req->n_res_headers; i++)
        if (strcmp(req->res_headers[i].name, name) == 0)
            return req->res_headers[i].value;
    return NULL;
}

Test(request, status_range)
{
    cr_assert_eq(req->status, 200, "the default status is 200");
    weft_request_res_status(req, 404);
    cr_assert_eq(req->status, 404);
    weft_request_res_status(req, 99);
    cr_assert_eq(req->status, 404, "below 100 is ignored");
    weft_request_res_status(req, 600);
    cr_assert_eq(req->status, 404, "above 599 is ignored");
    weft_request_res_status(req, -200);
    cr_assert_eq(req->status, 404);
    weft_request_res_status(req, 100);
    cr_assert_eq(req->status, 100);
    weft_request_res_status(req, 599);
    cr_assert_eq(req->status, 599);
}

Test(request, header_set_and_copied)
{
    char name[] = "x-id", value[] = "abc";
    cr_assert_eq(weft_request_res_header(req, name, value), WEFT_OK);
    name[0] = 'y';
    value[0] = 'z';
    cr_assert_eq(req->n_res_headers, 1);
    cr_assert_str_eq(req->res_headers[0].name, "x-id", "the name must be copied");
    cr_assert_str_eq(req->res_headers[0].value, "abc", "the value must be copied");
    cr_assert_eq(weft_request_res_header(req, "x-empty", ""), WEFT_OK, "an empty value is legal");
    cr_assert_eq(weft_request_res_header(req, "x-tab", "a\tb"), WEFT_OK, "a tab inside a value is legal");
    /* Many headers: the array grows. */
    for (int i = 0; i < 40; i++) {
        char n[32];
        snprintf(n, sizeof(n), "x-h%d", i);
        cr_assert_eq(weft_request_res_header(req, n, n), WEFT_OK);
    }
    cr_assert_eq(req->n_res_headers, 43);
    cr_assert_str_eq(res_header_value("x-id"), "abc");
    cr_assert_str_eq(res_header_value("x-h39"), "x-h39");
}

Test(request, header_injection_refused)
{
    static const struct {
        const char *name, *value;
    } bad[] = {
        {"x-a", "ok\r\nSet-Cookie: evil=1"},
        {"x-a", "ok\nSet-Cookie: evil=1"},
        {"x-a", "ok\r"},
        {"x-a\r\nSet-Cookie", "evil"},
        {"x-a\n", "v"},
        {"x-a:", "v"},
        {"x a", "v"},
        {"", "v"},
        {NULL, "v"},
        {"x-a", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(weft_request_res_header(req, bad[i].name, bad[i].value), WEFT_ERROR, "case %zu accepted", i);
    cr_assert_eq(req->n_res_headers, 0, "a refused header leaves nothing behind");
    cr_assert_eq(req->res_failed, 0, "a refused header is the plugin's error, not an out-of-memory 500");
}

Test(request, write_appends_binary)
{
    cr_assert_eq(weft_request_res_write(req, "ab", 2), WEFT_OK);
    cr_assert_eq(weft_request_res_write(req, "\0c", 2), WEFT_OK);
    cr_assert_eq(weft_request_res_write(req, "", 0), WEFT_OK);
    cr_assert_eq(req->res_len, 4);
    cr_assert_eq(memcmp(req->res_body, "ab\0c", 4), 0);
    /* Growth across many writes. */
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(weft_request_res_write(req, "0123456789", 10), WEFT_OK);
    cr_assert_eq(req->res_len, 10004);
    cr_assert_eq(memcmp(req->res_body + 10004 - 10, "0123456789", 10), 0);
}

Test(request, empty_write_on_fresh_response)
{
    cr_assert_eq(weft_request_res_write(req, "", 0), WEFT_OK);
    cr_assert_eq(req->res_len, 0);
}

Test(request, printf_short_and_long)
{
    cr_assert_eq(weft_request_res_printf(req, "n=%d;", 42), WEFT_OK);
    char big[1000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    cr_assert_eq(weft_request_res_printf(req, "[%s]%d", big, 7), WEFT_OK, "output over 256 bytes");
    size_t want = 5 + 1 + 999 + 1 + 1;
    cr_assert_eq(req->res_len, want, "len %zu, want %zu", req->res_len, want);
    cr_assert_eq(memcmp(req->res_body, "n=42;[x", 7), 0);
    cr_assert_eq(memcmp(req->res_body + want - 3, "x]7", 3), 0);
}

Test(request, printf_boundary_sizes)
{
    /* 255, 256 and 257 characters: both sides of the stack buffer. */
    for (int n = 255; n <= 257; n++) {
        weft_req *r = weft_req_new();
        char s[300];
        memset(s, 'a' + (n - 255), (size_t)n);
        s[n] = '\0';
        cr_assert_eq(weft_request_res_printf(r, "%s", s), WEFT_OK);
        cr_assert_eq(r->res_len, (size_t)n);
        cr_assert_eq(memcmp(r->res_body, s, (size_t)n), 0, "%d bytes garbled", n);
        weft_req_free(r);
    }
}

Test(request, error_resets_body_and_headers)
{
    weft_request_res_status(req, 201);
    cr_assert_eq(weft_request_res_header(req, "x-secret", "1"), WEFT_OK);
    cr_assert_eq(weft_request_res_header(req, "content-type", "application/json"), WEFT_OK);
    cr_assert_eq(weft_request_res_printf(req, "{\"half\": "), WEFT_OK);
    cr_assert_eq(weft_request_res_error(req, 503, "try later"), WEFT_OK);
    cr_assert_eq(req->status, 503);
    cr_assert_eq(req->res_len, strlen("try later\n"));
    cr_assert_eq(memcmp(req->res_body, "try later\n", req->res_len), 0);
    cr_assert_eq(req->n_res_headers, 1, "only the error's own content-type is left");
    cr_assert_null(res_header_value("x-secret"));
    cr_assert_not_null(strstr(res_header_value("content-type"), "text/plain"));
}

Test(request, error_with_invalid_status_is_500)
{
    cr_assert_eq(weft_request_res_error(req, 42, "odd"), WEFT_OK);
    cr_assert_eq(req->status, 500);
    cr_assert_eq(weft_request_res_error(req, 1000, "odd"), WEFT_OK);
    cr_assert_eq(req->status, 500);
    cr_assert_eq(req->res_len, 4, "a second error replaces the first");
}
