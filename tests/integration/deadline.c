/*
 * Deadlines: a route's timeout_ms (or limits.timeout_ms) answers 504 and
 * cancels the handler under every policy; the gauges show its coroutine,
 * worker and lock freed.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

static const char *conf = "threads = 2; " WT_LISTEN " " WT_ADMIN "\n"
                          "limits = { timeout_ms = 100; };\n"
                          "routes = (\n"
                          WT_EACH_POLICY("/delay", "delay", " timeout_ms = 100; options = { ms = 1000; };") ",\n"
                          WT_EACH_POLICY("/locked", "locked", " options = { workers = 1; hold_ms = 1000; };") ",\n"
                          "  { path = \"/patient\"; plugin = \"delay\"; dispatch = \"coroutine\"; timeout_ms = 0;"
                          " options = { ms = 300; }; }\n"
                          ");\n";

typedef struct route_param {
    char path[32];
    char policy[16];
} route_param;

ParameterizedTestParameters(deadline, answers_504_and_frees_the_handler)
{
    static route_param p[] = {{"/pool/delay", "pool"},           {"/coroutine/delay", "coroutine"},
                              {"/reactive/delay", "reactive"},   {"/pool/locked", "pool"},
                              {"/coroutine/locked", "coroutine"}, {"/reactive/locked", "reactive"}};
    return cr_make_param_array(route_param, p, sizeof(p) / sizeof(p[0]));
}

/* Twice in a row on the one-worker lock routes: the second request only gets
 * the lock (and its own 504 at ~100 ms, not ~1 s) if the first released it. */
ParameterizedTest(route_param *p, deadline, answers_504_and_frees_the_handler, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, conf);
    for (int round = 0; round < 2; round++) {
        double t0 = wt_now_ms();
        wt_resp r;
        cr_assert_eq(wt_http(&s, "GET", p->path, NULL, &r), 0);
        double took = wt_now_ms() - t0;
        printf("deadline: %s round %d: %ld in %.0f ms (timeout_ms 100, handler 1000 ms)\n", p->path, round, r.status,
               took);
        cr_expect_eq(r.status, 504, "%s: %s", p->path, r.body);
        cr_expect_lt(took, 900, "the 504 must not wait for the handler");
        wt_resp_free(&r);
        double freed = wt_await_metric(&s, "weft_inflight_requests", 0, 0, 800);
        cr_expect_lt(freed, 800);
    }
    cr_expect_eq(wt_metric(&s, "weft_coroutines_live"), 0);
    cr_expect_eq(wt_metric(&s, "weft_pool_busy_workers{pool=\"default\"}"), 0);
    char key[160];
    snprintf(key, sizeof(key), "weft_requests_total{route=\"%s\",policy=\"%s\",code=\"5xx\"}", p->path, p->policy);
    cr_expect_eq(wt_metric(&s, key), 2, "each 504 counted once");
    snprintf(key, sizeof(key), "weft_requests_cancelled_total{route=\"%s\",policy=\"%s\"}", p->path, p->policy);
    cr_expect_eq(wt_metric(&s, key), 0, "a deadline is not a client leaving");
    wt_finish(&s);
}

Test(deadline, zero_turns_the_default_off_and_status_shows_it, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, conf);
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", "/patient", NULL, &r), 0);
    cr_expect_eq(r.status, 200, "%s", r.body);
    wt_resp_free(&r);
    wt_server admin = s;
    admin.port = s.admin_port;
    cr_assert_eq(wt_http(&admin, "GET", "/status", NULL, &r), 0);
    cr_expect_eq(r.status, 200);
    cr_expect(strstr(r.body, "\"path\": \"/pool/locked\"") != NULL || strstr(r.body, "\"path\":\"/pool/locked\"") != NULL,
              "%s", r.body);
    int hundreds = 0;
    for (const char *q = r.body; (q = strstr(q, "\"timeout_ms\"")) != NULL; q++)
        hundreds += strncmp(q + strlen("\"timeout_ms\""), ": 100", 5) == 0 ||
                    strncmp(q + strlen("\"timeout_ms\""), ":100", 4) == 0;
    cr_expect_eq(hundreds, 6, "six routes inherit limits.timeout_ms: %s", r.body);
    wt_resp_free(&r);
    wt_finish(&s);
}
