/*
 * An outbound call whose pooled keep-alive connection the upstream closed
 * under it, before any byte of the answer (issue 30, item 10): an idempotent
 * one is sent once more, a POST never. The mock upstream's /stale/ paths
 * answer the first request of a connection and drop every later one
 * (tests/support/mock_upstream.py): the upstream's idle timeout firing just
 * as the next request arrives. One event loop, so that calls share its pool.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confs.h"
#include "harness.h"

static const char *conf = "threads = 1; " WT_LISTEN " admin = false;\n"
                          "pools = ({ name = \"default\"; size = 4; queue = 100; });\n"
                          "routes = (\n" WT_EACH_POLICY("/fetch", "fetcher", "") ",\n" WT_HELLO_ROUTE "\n);\n";

static wt_server srv;
static pid_t mock;
static int mock_port;

static void start(void)
{
    mock_port = wt_mock_start(&mock);
    wt_start(&srv, conf);
}

static void stop(void)
{
    wt_suite_stop(&srv);
    wt_mock_stop(mock);
}
TestSuite(outbound_retry, .init = start, .fini = stop, .timeout = 120);

static long fetch(const char *policy, const char *method, char *body, size_t size)
{
    char path[256];
    snprintf(path, sizeof(path), "/%s/fetch?url=http://127.0.0.1:%d/stale/persons/7&method=%s", policy, mock_port,
             method);
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
    long status = r.status;
    snprintf(body, size, "%s", r.body);
    wt_resp_free(&r);
    return status;
}

static long mock_posts(void)
{
    wt_server up = {.port = mock_port};
    wt_resp r;
    cr_assert_eq(wt_http(&up, "GET", "/stats", NULL, &r), 0);
    const char *p = strstr(r.body, "\"posts\": ");
    cr_assert_not_null(p, "mock /stats: %s", r.body);
    long n = atol(p + strlen("\"posts\": "));
    wt_resp_free(&r);
    return n;
}

ParameterizedTestParameters(outbound_retry, idempotent_calls_are_sent_again) { return wt_policy_params(); }

/* Three GETs in a row: each after the first finds the pooled connection the
 * upstream then drops. Without the retry: 502 "reset". */
ParameterizedTest(wt_policy *p, outbound_retry, idempotent_calls_are_sent_again)
{
    double before = wt_metric(&srv, "weft_outbound_retries_total");
    cr_assert_geq(before, 0, "weft_outbound_retries_total is exported");
    char body[512];
    for (int i = 0; i < 3; i++) {
        long status = fetch(p->name, "GET", body, sizeof(body));
        cr_expect_eq(status, 200, "%s: GET %d: %ld %s", p->name, i, status, body);
        cr_expect(strncmp(body, "200 {\"id\": 7", 12) == 0, "%s: GET %d answered by the upstream: %s", p->name, i,
                  body);
    }
    cr_expect_geq(wt_metric(&srv, "weft_outbound_retries_total") - before, 2, "%s: the stale calls were retried",
                  p->name);
}

/* A POST on the stale connection is not sent again: the upstream may have
 * acted on it. It fails (502) and the upstream saw it exactly once. */
Test(outbound_retry, a_post_is_never_sent_again)
{
    char body[512];
    cr_assert_eq(fetch("coroutine", "GET", body, sizeof(body)), 200, "%s", body); /* leaves a pooled connection */
    double retries = wt_metric(&srv, "weft_outbound_retries_total");
    long posts = mock_posts();
    long status = fetch("coroutine", "POST", body, sizeof(body));
    cr_expect_eq(status, 502, "POST on a stale connection: %ld %s", status, body);
    cr_expect_eq(mock_posts() - posts, 1, "the upstream saw the POST once");
    cr_expect_eq(wt_metric(&srv, "weft_outbound_retries_total"), retries, "no retry for a POST");
    cr_expect_eq(fetch("coroutine", "POST", body, sizeof(body)), 200, "a POST on a new connection: %s", body);
}
