/*
 * Tests for server/http/framing.c on a real loop's h2o: raw HTTP/1 bytes
 * over loopback TCP (support/unitloop.h wt_h1_listen, support/rawhttp.h)
 * reach an h2o handler that runs weft_framing_check() first, as every path
 * of the server does, and otherwise answers with the path it would route.
 * The loop serves a hand-made generation whose limits are
 * max_header_line = 100 and max_headers = 300. Checked: HTTP/1.1 without
 * Host or with two is 400 (HTTP/1.0 without Host is served); a header line
 * past max_header_line and a head past max_headers are 431; Content-Length
 * with Transfer-Encoding is 400; an absolute-form target routes by its
 * path (and query); and a refused request ends its connection, so a
 * request pipelined behind it is never served.
 */
#include "http/framing.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "rawhttp.h"
#include "reload/generation.h"
#include "request/respond.h"
#include "unitloop.h"

static weft_config cfg;
static weft_generation gen;

static void teardown(void)
{
    wt_loops_stop();
}

TestSuite(http_framing, .fini = teardown, .timeout = 60);

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    if (weft_framing_check(req))
        return 0;
    char text[256];
    snprintf(text, sizeof(text), "path=%.*s", (int)req->path.len, req->path.base);
    weft_respond_text(req, 200, text);
    return 0;
}

static void start(void)
{
    cfg.limits.max_header_line = 100;
    cfg.limits.max_headers = 300;
    gen.cfg = &cfg;
    wt_loops_handler(on_req);
    wt_loops_start(1);
    wt_loops_generation(&gen);
}

/* Sends `raw` as it is and reads until the server closes. */
static void send_raw(const char *raw, wt_raw_resp *r) { wt_raw_send(wt_h1_listen(0), raw, strlen(raw), r, 5000); }

static void expect_status(const char *raw, long status, const char *body_part)
{
    wt_raw_resp r;
    send_raw(raw, &r);
    cr_assert_eq(r.status, status, "%s\n-> %s", raw, r.head != NULL ? r.head : "(nothing)");
    if (body_part != NULL)
        cr_assert_not_null(strstr(r.body, body_part), "%s\n-> %s", raw, r.body);
    wt_raw_free(&r);
}

Test(http_framing, http11_without_host_is_400_and_http10_is_served)
{
    start();
    expect_status("GET /a HTTP/1.1\r\nConnection: close\r\n\r\n", 400, "without Host");
    expect_status("GET /a HTTP/1.0\r\n\r\n", 200, "path=/a");
}

Test(http_framing, two_host_headers_are_400)
{
    start();
    expect_status("GET /a HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n", 400, "more than one Host");
}

Test(http_framing, a_header_line_past_max_header_line_is_431)
{
    start();
    char raw[512], value[128];
    memset(value, 'v', 120);
    value[120] = '\0';
    snprintf(raw, sizeof(raw), "GET /a HTTP/1.1\r\nHost: unit\r\nX-Long: %s\r\nConnection: close\r\n\r\n", value);
    expect_status(raw, 431, "max_header_line");
    value[80] = '\0'; /* a line of 88 bytes: within the limit */
    snprintf(raw, sizeof(raw), "GET /a HTTP/1.1\r\nHost: unit\r\nX-Long: %s\r\nConnection: close\r\n\r\n", value);
    expect_status(raw, 200, "path=/a");
}

Test(http_framing, a_head_past_max_headers_is_431)
{
    start();
    char raw[1024] = "GET /a HTTP/1.1\r\nHost: unit\r\nConnection: close\r\n";
    for (int i = 0; i < 6; i++) /* 6 lines of 60 bytes: each within the line limit, 360 in all */
        snprintf(raw + strlen(raw), sizeof(raw) - strlen(raw), "X-H%d: %052d\r\n", i, 0);
    strcat(raw, "\r\n");
    expect_status(raw, 431, "max_headers");
}

Test(http_framing, content_length_with_transfer_encoding_is_400)
{
    start();
    expect_status("POST /a HTTP/1.1\r\nHost: unit\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n"
                  "Connection: close\r\n\r\n0\r\n\r\n",
                  400, NULL);
}

Test(http_framing, an_absolute_form_target_routes_by_its_path)
{
    start();
    expect_status("GET http://unit:8080/x/y?q=1 HTTP/1.1\r\nHost: unit\r\nConnection: close\r\n\r\n", 200,
                  "path=/x/y?q=1");
    expect_status("GET https://unit?q HTTP/1.1\r\nHost: unit\r\nConnection: close\r\n\r\n", 200, "path=/?q");
}

Test(http_framing, a_refused_request_ends_its_connection_and_what_follows_is_never_served)
{
    start();
    wt_raw_resp r;
    /* No Connection: close: only the refusal may end this connection. */
    send_raw("GET /a HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: unit\r\n\r\n", &r);
    cr_assert_eq(r.status, 400, "%s", r.head != NULL ? r.head : "(nothing)");
    cr_assert_null(strstr(r.body, "smuggled"), "the request behind it was served: %s", r.body);
    cr_assert_null(strstr(r.body, "HTTP/1.1 200"), "a second answer: %s", r.body);
    wt_raw_free(&r);
}
