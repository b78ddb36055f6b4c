/* Plugins built against the frozen ABI 1 headers (tests/abi/: the 1.0
 * header, and the 1.1-era one that API 2 replaced) load and serve on the
 * current host under every dispatch policy. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define ROUTE(policy)                                                                                              \
    "  { path = \"/" policy "/abi/{id}\"; plugin = \"abi10\"; dispatch = \"" policy                               \
    "\"; options = { greeting = \"g-" policy "\"; sleep_ms = 5; }; }"

#define ROUTE11(policy)                                                                                            \
    "  { path = \"/" policy "/abi11\"; plugin = \"abi11\"; dispatch = \"" policy                                   \
    "\"; options = { greeting = \"g11-" policy "\"; }; }"

static const char *conf = "threads = 2;\n"
                          WT_LISTEN "\n"
                          "routes = (\n" ROUTE("pool") ",\n" ROUTE("coroutine") ",\n" ROUTE("reactive") ",\n"
                          ROUTE11("pool") ",\n" ROUTE11("coroutine") ",\n" ROUTE11("reactive") ");\n";

static wt_server srv;
static void start(void) { wt_start(&srv, conf); }
static void stop(void) { wt_suite_stop(&srv); }
TestSuite(abi, .init = start, .fini = stop, .timeout = 60);

ParameterizedTestParameters(abi, abi10_plugin_serves) { return wt_policy_params(); }

ParameterizedTest(wt_policy *p, abi, abi10_plugin_serves)
{
    char path[96], want[512], v[32];
    snprintf(path, sizeof(path), "/%s/abi/42?q=hello", p->name);
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "POST", path, "payload", &r), 0);
    cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body);
    snprintf(want, sizeof(want),
             "abi=1 host_abi=1 size_ok=1 greeting=g-%s method=POST path=/%s/abi/42 id=42 q=hello x=- body=payload",
             p->name, p->name);
    cr_assert_str_eq(r.body, want);
    cr_assert_not_null(wt_header(&r, "x-abi", v, sizeof(v)));
    cr_assert_str_eq(v, "1.0");
    wt_resp_free(&r);

    snprintf(path, sizeof(path), "/%s/abi/7?fail=1", p->name);
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 418, "%s: %ld %s", path, r.status, r.body);
    cr_assert(strstr(r.body, "teapot") != NULL, "%s", r.body);
    wt_resp_free(&r);
    wt_finish(&srv);
}

ParameterizedTestParameters(abi, abi11_plugin_serves) { return wt_policy_params(); }

/* The 1.1-era header's calls reach the same functions as before API 2, with
 * ABI 1's answers (a second timer_stop is WEFT_CANCELLED there). */
ParameterizedTest(wt_policy *p, abi, abi11_plugin_serves)
{
    char path[96], want[512], v[32];
    snprintf(path, sizeof(path), "/%s/abi11?q=hello", p->name);
    const char *hdrs[] = {"Cookie: a=1; c=yum", NULL};
    wt_resp r;
    cr_assert_eq(wt_request(&srv, &(wt_req){.method = "POST", .path = path, .body = "payload", .headers = hdrs}, &r),
                 0);
    cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body);
    snprintf(want, sizeof(want),
             "abi=1 host_abi=1 size_ok=1 greeting=g11-%s stop=0,-5 id=set cookie=yum q=hello headers=some "
             "body=payload",
             p->name);
    cr_assert_str_eq(r.body, want);
    cr_assert_not_null(wt_header(&r, "x-abi", v, sizeof(v)));
    cr_assert_str_eq(v, "1.1");
    wt_resp_free(&r);

    snprintf(path, sizeof(path), "/%s/abi11?fail=1", p->name);
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 418, "%s: %ld %s", path, r.status, r.body);
    cr_assert(strstr(r.body, "\"error\"") != NULL && strstr(r.body, "teapot") != NULL, "%s", r.body);
    wt_resp_free(&r);
    wt_finish(&srv);
}
