/*
 * Tests for server/plugin/host_response.c: API 2's `response` group as a
 * plugin calls it (weft_host_api2.response) on a hand-made request. The
 * group turns request/'s results into weft_rc and adds API 2's own check
 * (a status outside 100..599 is an error, where ABI 1 ignored it), so each
 * call is checked for what it returns and for what it leaves in the
 * response, refused calls leaving nothing. `done` needs a loop
 * (dispatch/), so it is left to the dispatch tests.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "plugin/host.h"
#include "request/request.h"

static weft_req *req;
static const weft_host_response *h;

static void setup(void)
{
    req = weft_req_new();
    cr_assert_not_null(req);
    h = weft_host_api2.response;
}

static void teardown(void)
{
    weft_req_free(req);
    req = NULL;
}

TestSuite(host_response, .init = setup, .fini = teardown, .timeout = 30);

static void expect_body(const char *want)
{
    cr_assert(req->res_len == strlen(want) && memcmp(req->res_body, want, req->res_len) == 0,
              "body '%.*s', want '%s'", (int)req->res_len, req->res_body != NULL ? req->res_body : "", want);
}

Test(host_response, the_group_is_api2s)
{
    cr_assert_eq(h, &weft_host_response_group);
    cr_assert_eq(h->struct_size, sizeof(weft_host_response));
    cr_assert_eq(h->version, WEFT_HOST_RESPONSE_VERSION);
    cr_assert_not_null(h->done);
}

Test(host_response, a_status_outside_the_range_is_an_error_and_changes_nothing)
{
    cr_assert_eq(h->status(req, 100), WEFT_OK);
    cr_assert_eq(req->status, 100);
    cr_assert_eq(h->status(req, 599), WEFT_OK);
    cr_assert_eq(req->status, 599);
    static const int bad[] = {99, 600, 0, -200, 1000};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(h->status(req, bad[i]), WEFT_ERROR, "status %d taken", bad[i]);
        cr_assert_eq(req->status, 599, "status %d changed it", bad[i]);
    }
    /* ABI 1's call ignores the same mistake silently (its contract): the difference is API 2's */
    weft_host_api1.res_status(req, 600);
    cr_assert_eq(req->status, 599);
}

Test(host_response, headers_refuse_injection)
{
    cr_assert_eq(h->header(req, "x-one", "1"), WEFT_OK);
    cr_assert_str_eq(weft_req_res_header(req, "x-one"), "1");
    static const char *const names[] = {"", "x two", "x:two", "x\r\ntwo", NULL};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        cr_assert_eq(h->header(req, names[i], "v"), WEFT_ERROR, "name '%s' taken", names[i] ? names[i] : "(null)");
    cr_assert_eq(h->header(req, "x-three", "a\r\nset-cookie: s=1"), WEFT_ERROR);
    cr_assert_eq(h->header(req, "x-three", NULL), WEFT_ERROR);
    cr_assert_eq(req->n_res_headers, 1, "a refused header was added");
}

Test(host_response, write_and_writef_append)
{
    cr_assert_eq(h->write(req, "ab\0c", 4), WEFT_OK);
    cr_assert_eq(h->writef(req, "[%d|%s|%5.2f]", 42, "x", 3.14159), WEFT_OK);
    cr_assert_eq(h->write(req, "", 0), WEFT_OK);
    cr_assert_eq(req->res_len, 4 + strlen("[42|x| 3.14]"));
    cr_assert_eq(memcmp(req->res_body, "ab\0c[42|x| 3.14]", req->res_len), 0);

    /* longer than any fixed buffer a printf helper might use */
    char big[5000];
    memset(big, 'y', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    size_t before = req->res_len;
    cr_assert_eq(h->writef(req, "%s!", big), WEFT_OK);
    cr_assert_eq(req->res_len, before + sizeof(big));
    cr_assert_eq(req->res_body[req->res_len - 1], '!');
}

Test(host_response, error_replaces_the_response)
{
    h->header(req, "x-before", "1");
    h->write(req, "partial", 7);
    cr_assert_eq(h->error(req, 404, "no such person"), WEFT_OK);
    cr_assert_eq(req->status, 404);
    expect_body("no such person\n");
    cr_assert_null(weft_req_res_header(req, "x-before"), "headers set before are dropped");
    cr_assert_str_eq(weft_req_res_header(req, "content-type"), "text/plain; charset=utf-8");

    cr_assert_eq(h->error(req, 42, "odd"), WEFT_OK);
    cr_assert_eq(req->status, 500, "a status outside 100..599 becomes 500");

    cr_assert_eq(h->error(req, 503, NULL), WEFT_OK, "a NULL message is an empty one, as error_json takes it");
    cr_assert_eq(req->status, 503);
    expect_body("\n");
}

Test(host_response, error_json_escapes_the_message)
{
    h->header(req, "x-before", "1");
    cr_assert_eq(h->error_json(req, 409, "\"taken\"\n"), WEFT_OK);
    cr_assert_eq(req->status, 409);
    expect_body("{\"error\":\"\\\"taken\\\"\\n\",\"status\":409}");
    cr_assert_null(weft_req_res_header(req, "x-before"));
    cr_assert_str_eq(weft_req_res_header(req, "content-type"), "application/json");

    cr_assert_eq(h->error_json(req, 700, NULL), WEFT_OK);
    expect_body("{\"error\":\"\",\"status\":500}");
    /* not UTF-8: what is valid is kept, the rest replaced, never invalid JSON out */
    cr_assert_eq(h->error_json(req, 400, "caf\xc3\xa9 \xff!"), WEFT_OK);
    cr_assert(req->res_len > 0 && memmem(req->res_body, req->res_len, "caf\xc3\xa9 ", 6) != NULL, "%.*s",
              (int)req->res_len, req->res_body);
    cr_assert_null(memmem(req->res_body, req->res_len, "\xff", 1), "an invalid byte went out");
}

Test(host_response, cookies_are_built_or_refused_whole)
{
    cr_assert_eq(h->cookie(req, "sid", "abc123", 3600, "/", "example.org",
                           WEFT_COOKIE_SECURE | WEFT_COOKIE_HTTPONLY | WEFT_COOKIE_SAMESITE_LAX),
                 WEFT_OK);
    cr_assert_str_eq(weft_req_res_header(req, "set-cookie"),
                     "sid=abc123; Max-Age=3600; Path=/; Domain=example.org; Secure; HttpOnly; SameSite=Lax");

    static const struct {
        const char *name, *value, *path;
        unsigned flags;
        const char *why;
    } bad[] = {
        {"", "v", NULL, 0, "an empty name"},
        {"a=b", "v", NULL, 0, "'=' in the name"},
        {"a", "x;y", NULL, 0, "';' in the value"},
        {"a", "x y", NULL, 0, "a space in the value"},
        {"a", NULL, NULL, 0, "no value"},
        {"a", "v", "/x;Domain=evil", 0, "';' in the path"},
        {"a", "v", NULL, WEFT_COOKIE_SAMESITE_NONE, "SameSite=None without Secure"},
        {"a", "v", NULL, WEFT_COOKIE_SAMESITE_LAX | WEFT_COOKIE_SAMESITE_STRICT, "two SameSite values"},
        {"a", "v", NULL, 32, "an unknown flag"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(h->cookie(req, bad[i].name, bad[i].value, -1, bad[i].path, NULL, bad[i].flags), WEFT_ERROR,
                     "%s: taken", bad[i].why);
    cr_assert_eq(req->n_res_headers, 1, "a refused cookie added a header");

    cr_assert_eq(h->cookie(req, "gone", "", 0, NULL, NULL, 0), WEFT_OK, "max_age 0 deletes");
    cr_assert_str_eq(req->res_headers[1].value, "gone=; Max-Age=0");
    cr_assert_eq(h->cookie(req, "s", "1", -1, NULL, NULL, WEFT_COOKIE_SECURE | WEFT_COOKIE_SAMESITE_NONE), WEFT_OK);
    cr_assert_str_eq(req->res_headers[2].value, "s=1; Secure; SameSite=None", "a session cookie has no Max-Age");
}

Test(host_response, redirects_take_only_redirect_statuses)
{
    static const int ok[] = {301, 302, 303, 307, 308};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        weft_req *r = weft_req_new();
        cr_assert_eq(h->redirect(r, ok[i], "/next"), WEFT_OK, "%d", ok[i]);
        cr_assert_eq(r->status, ok[i]);
        cr_assert_str_eq(weft_req_res_header(r, "location"), "/next");
        weft_req_free(r);
    }
    static const int no[] = {200, 300, 304, 305, 306, 404};
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        cr_assert_eq(h->redirect(req, no[i], "/next"), WEFT_ERROR, "%d taken", no[i]);
    cr_assert_eq(h->redirect(req, 302, ""), WEFT_ERROR);
    cr_assert_eq(h->redirect(req, 302, NULL), WEFT_ERROR);
    cr_assert_eq(h->redirect(req, 302, "/a\r\nset-cookie: s=1"), WEFT_ERROR);
    cr_assert_eq(req->status, 200, "a refused redirect set the status");
    cr_assert_eq(req->n_res_headers, 0, "a refused redirect added a header");
}
