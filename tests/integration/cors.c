/* CORS (a route's `cors`): preflights answered by weft without the plugin,
 * Access-Control-* on actual answers of allowed origins only (the plugin's
 * own dropped), Vary: Origin, credentials, "*", WebSocket handshakes from
 * other origins refused, under every policy, over HTTP/1.1 and HTTP/2;
 * preflights under the route's rate limit; refusals at config time with
 * FILE:LINE. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "rawhttp.h"

#define APP "https://app.example"
#define CORS_API                                                                                             \
    " methods = [\"GET\", \"POST\", \"DELETE\"];"                                                            \
    " cors = { origins = [\"" APP "\", \"http://127.0.0.1:8000\"]; methods = [\"GET\", \"POST\"];"          \
    " headers = [\"Content-Type\", \"X-Token\"]; expose = [\"X-Request-Id\"]; credentials = true; max_age = 120; };"

static const char *conf_text =
    "threads = 2; " WT_LISTEN "\n"
    "pools = ( { name = \"default\"; size = 4; queue = 100; } );\n"
    "routes = (\n" WT_EACH_POLICY("/api", "typed", CORS_API) ",\n"
    "  { path = \"/open\"; plugin = \"typed\"; dispatch = \"reactive\"; cors = { origins = \"*\"; headers = \"*\"; }; },\n"
    "  { path = \"/chat\"; plugin = \"chat\"; dispatch = \"reactive\"; cors = { origins = [\"" APP "\"]; }; },\n"
    "  { path = \"/nocors\"; plugin = \"typed\"; dispatch = \"reactive\"; },\n"
    "  { path = \"/limited\"; plugin = \"typed\"; dispatch = \"reactive\"; cors = { origins = [\"" APP "\"]; credentials = true; };\n"
    "    rate_limit = { per = \"route\"; requests = 2; per_s = 86400; }; }\n"
    ");\n";

static wt_server srv;
static void start(void) { wt_start(&srv, conf_text); }
static void stop(void) { wt_suite_stop(&srv); }
TestSuite(cors, .init = start, .fini = stop, .timeout = 120);

static char *hv(const wt_resp *r, const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    return wt_header(r, name, buf[k], sizeof(buf[k])) != NULL ? buf[k] : NULL;
}

static void expect_no_cors(const wt_resp *r)
{
    cr_assert(strcasestr(r->headers, "\naccess-control-") == NULL, "no CORS header at all: %s", r->headers);
}

static void expect_vary_origin(const wt_resp *r)
{
    char *vary = hv(r, "vary");
    cr_assert(vary != NULL && strstr(vary, "origin") != NULL, "Vary: Origin: %s", r->headers);
}

static int send_req(const char *method, const char *path, const char *const *hs, int h2, wt_resp *r)
{
    wt_req q = {.method = method, .path = path, .headers = hs, .http2 = h2};
    return wt_request(&srv, &q, r);
}

typedef struct pp {
    char policy[16];
    int http2;
} pp;
static pp pps[] = {{"pool", 0}, {"coroutine", 0}, {"reactive", 0}, {"pool", 1}, {"coroutine", 1}, {"reactive", 1}};

ParameterizedTestParameters(cors, a_preflight_is_answered_without_the_plugin) { return cr_make_param_array(pp, pps, 6); }
ParameterizedTest(pp *p, cors, a_preflight_is_answered_without_the_plugin)
{
    char path[64];
    snprintf(path, sizeof(path), "/%s/api", p->policy);
    const char *hs[] = {"Origin: " APP, "Access-Control-Request-Method: POST",
                        "Access-Control-Request-Headers: Content-Type, x-token", NULL};
    wt_resp r;
    cr_assert_eq(send_req("OPTIONS", path, hs, p->http2, &r), 0);
    /* The plugin would have answered 200 with a body. */
    cr_assert_eq(r.status, 204, "%ld %s", r.status, r.body);
    cr_assert_eq(r.len, 0);
    cr_assert_str_eq(hv(&r, "access-control-allow-origin"), APP);
    cr_assert_str_eq(hv(&r, "access-control-allow-credentials"), "true");
    cr_assert_str_eq(hv(&r, "access-control-allow-methods"), "GET, POST");
    cr_assert_str_eq(hv(&r, "access-control-allow-headers"), "content-type, x-token");
    cr_assert_str_eq(hv(&r, "access-control-max-age"), "120");
    expect_vary_origin(&r);
    wt_resp_free(&r);
}

ParameterizedTestParameters(cors, a_preflight_outside_the_rules_is_refused) { return cr_make_param_array(pp, pps, 6); }
ParameterizedTest(pp *p, cors, a_preflight_outside_the_rules_is_refused)
{
    char path[64];
    snprintf(path, sizeof(path), "/%s/api", p->policy);
    const char *other[] = {"Origin: https://evil.example", "Access-Control-Request-Method: GET", NULL};
    const char *method[] = {"Origin: " APP, "Access-Control-Request-Method: DELETE", NULL};
    const char *header[] = {"Origin: " APP, "Access-Control-Request-Method: GET",
                            "Access-Control-Request-Headers: content-type, x-secret", NULL};
    const char *suffix[] = {"Origin: " APP ".evil.example", "Access-Control-Request-Method: GET", NULL};
    const char *const *cases[] = {other, method, header, suffix};
    const char *why[] = {"origin", "method", "header", "origin"};
    for (int i = 0; i < 4; i++) {
        wt_resp r;
        cr_assert_eq(send_req("OPTIONS", path, cases[i], p->http2, &r), 0);
        cr_assert_eq(r.status, 403, "case %d: %ld %s", i, r.status, r.body);
        cr_assert(strstr(r.body, why[i]) != NULL, "%s", r.body);
        /* An allowed origin asking for the wrong method or header too. */
        expect_no_cors(&r);
        wt_resp_free(&r);
    }
}

ParameterizedTestParameters(cors, actual_answers_carry_cors_for_allowed_origins_only)
{
    return cr_make_param_array(pp, pps, 6);
}
ParameterizedTest(pp *p, cors, actual_answers_carry_cors_for_allowed_origins_only)
{
    char path[64];
    snprintf(path, sizeof(path), "/%s/api", p->policy);
    const char *ok[] = {"Origin: http://127.0.0.1:8000", NULL};
    wt_resp r;
    cr_assert_eq(send_req("GET", path, ok, p->http2, &r), 0);
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(hv(&r, "access-control-allow-origin"), "http://127.0.0.1:8000", "the plugin's value replaced");
    cr_assert_str_eq(hv(&r, "access-control-allow-credentials"), "true");
    cr_assert_str_eq(hv(&r, "access-control-expose-headers"), "x-request-id");
    expect_vary_origin(&r);
    wt_resp_free(&r);

    const char *bad[] = {"Origin: https://evil.example", NULL};
    cr_assert_eq(send_req("POST", path, bad, p->http2, &r), 0);
    cr_assert_eq(r.status, 200, "the request is served; the browser keeps the answer from the page");
    expect_no_cors(&r);
    expect_vary_origin(&r);
    wt_resp_free(&r);

    cr_assert_eq(send_req("GET", path, NULL, p->http2, &r), 0);
    expect_no_cors(&r);
    expect_vary_origin(&r);
    wt_resp_free(&r);
}

Test(cors, any_origin_and_routes_without_cors)
{
    const char *any[] = {"Origin: https://whoever.example", NULL};
    wt_resp r;
    cr_assert_eq(send_req("GET", "/open", any, 0, &r), 0);
    cr_assert_str_eq(hv(&r, "access-control-allow-origin"), "*");
    cr_assert(hv(&r, "access-control-allow-credentials") == NULL);
    wt_resp_free(&r);
    const char *pre[] = {"Origin: https://whoever.example", "Access-Control-Request-Method: PUT",
                         "Access-Control-Request-Headers: x-anything, x-else", NULL};
    cr_assert_eq(send_req("OPTIONS", "/open", pre, 0, &r), 0);
    cr_assert_eq(r.status, 204);
    cr_assert_str_eq(hv(&r, "access-control-allow-origin"), "*");
    cr_assert_str_eq(hv(&r, "access-control-allow-headers"), "x-anything, x-else");
    wt_resp_free(&r);
    /* No cors: OPTIONS is the plugin's, and so is its header. */
    cr_assert_eq(send_req("OPTIONS", "/nocors", pre, 0, &r), 0);
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(hv(&r, "access-control-allow-origin"), "plugin");
    wt_resp_free(&r);
}

/* Two tokens a day: a preflight, a refused preflight, then the 429 for
 * preflights and actual requests alike. */
Test(cors, preflights_take_tokens_of_the_routes_rate_limit)
{
    const char *ok[] = {"Origin: " APP, "Access-Control-Request-Method: GET", NULL};
    const char *no[] = {"Origin: " APP, "Access-Control-Request-Method: GET",
                        "Access-Control-Request-Headers: x-secret", NULL};
    wt_resp r;
    cr_assert_eq(send_req("OPTIONS", "/limited", ok, 0, &r), 0);
    cr_assert_eq(r.status, 204, "%ld %s", r.status, r.body);
    wt_resp_free(&r);
    cr_assert_eq(send_req("OPTIONS", "/limited", no, 1, &r), 0);
    cr_assert_eq(r.status, 403, "%ld %s", r.status, r.body);
    expect_no_cors(&r);
    wt_resp_free(&r);
    for (int h2 = 0; h2 < 2; h2++) {
        cr_assert_eq(send_req("OPTIONS", "/limited", ok, h2, &r), 0);
        cr_assert_eq(r.status, 429, "h2=%d: %ld %s", h2, r.status, r.body);
        cr_assert(hv(&r, "retry-after") != NULL, "%s", r.headers);
        expect_no_cors(&r);
        wt_resp_free(&r);
    }
    const char *actual[] = {"Origin: " APP, NULL};
    cr_assert_eq(send_req("GET", "/limited", actual, 0, &r), 0);
    cr_assert_eq(r.status, 429, "the preflights took the route's tokens: %ld %s", r.status, r.body);
    wt_resp_free(&r);
    cr_assert_eq(wt_metric(&srv, "weft_rate_limited_total{route=\"/limited\",kind=\"plugin\"}"), 3);
}

/* The status line of a WebSocket handshake (101 keeps the socket open). */
static long ws_handshake(const char *origin_line)
{
    int fd = wt_raw_connect(srv.port);
    char req[512];
    int n = snprintf(req, sizeof(req),
                     "GET /chat HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n%s\r\n",
                     origin_line);
    cr_assert_eq(write(fd, req, (size_t)n), n);
    char buf[2048];
    size_t len = 0;
    while (len < sizeof(buf) - 1 && memmem(buf, len, "\r\n\r\n", 4) == NULL) {
        struct pollfd pfd = {fd, POLLIN, 0};
        cr_assert(poll(&pfd, 1, 20000) == 1, "no answer to the handshake");
        ssize_t k = read(fd, buf + len, sizeof(buf) - 1 - len);
        if (k <= 0)
            break;
        len += (size_t)k;
    }
    buf[len] = '\0';
    close(fd);
    long status = 0;
    sscanf(buf, "HTTP/1.1 %ld", &status);
    return status;
}

Test(cors, websocket_handshakes_from_other_origins_are_refused)
{
    cr_assert_eq(ws_handshake("Origin: https://evil.example\r\n"), 403);
    cr_assert_eq(ws_handshake("Origin: " APP "\r\n"), 101);
    cr_assert_eq(ws_handshake(""), 101, "no Origin: not a browser");
}

static void expect_refused(const char *conf, int line, const char *reason)
{
    wt_server s = {0};
    char *out;
    wt_write_conf(&s, conf);
    const char *args[] = {"-t", "-c", s.conf, NULL};
    cr_assert_eq(wt_run(&out, args, NULL), 1, "%s", out);
    char want[400];
    snprintf(want, sizeof(want), "%s:%d:", s.conf, line);
    cr_assert(strstr(out, want) != NULL, "want '%s' in: %s", want, out);
    cr_assert(strstr(out, reason) != NULL, "want '%s' in: %s", reason, out);
    free(out);
}

#define R(x) WT_LISTEN "\nroutes = ( { path = \"/h\"; plugin = \"hello\"; dispatch = \"reactive\";\n cors = {\n" x " }; } );\n"

Test(cors, bad_settings_are_refused_with_file_and_line)
{
    expect_refused(R(" origins = \"*\";\n credentials = true;"), 5,
                   "routes[0].cors: credentials = true needs a list of origins");
    expect_refused(R(" origins = [\"https://app.example/\"];"), 4, "'https://app.example/' is not an origin");
    expect_refused(R(" origins = [\"app.example\"];"), 4, "is not an origin");
    expect_refused(R(" methods = [\"GET\"];"), 3, "routes[0].cors.origins: is required");
    expect_refused(R(" origins = [\"https://a.example\"];\n methods = [\"OPTIONS\"];"), 5,
                   "'OPTIONS' is not a method this route serves");
    expect_refused(R(" origins = [\"https://a.example\"];\n headers = [\"bad header\"];"), 5,
                   "'bad header' is not a header name");
    expect_refused(R(" origins = [\"https://a.example\"];\n max_age = 100000;"), 5, "cors.max_age: must be between");
}
