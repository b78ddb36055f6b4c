/*
 * A flush with nothing new since the last one (issue 44, item 3). h2o takes
 * an empty part only with the head or the end and asserts on one in
 * between ("h2o_data must only be called when there is progress"): in the
 * build Debian ships, where asserts are live, the process aborted, and the
 * crash record quarantined the plugin although the fault was weft's
 * (request/stream.c handed h2o the empty part). Now such a flush completes
 * at once and hands h2o nothing, under every policy, over HTTP/1.1 and
 * HTTP/2; the server keeps serving and nothing is quarantined.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "confs.h"
#include "harness.h"

static wt_server srv;

static void start(void)
{
    wt_startf(&srv,
              "threads = 2; " WT_LISTEN " admin = false;\n"
              "state_dir = \"%s/state\";\n"
              "pools = ({ name = \"default\"; size = 4; queue = 100; });\n"
              "routes = (\n" WT_EACH_POLICY("/stream", "bigstream", "") ",\n" WT_HELLO_ROUTE "\n);\n",
              srv.dir);
}

static void stop(void)
{
    wt_suite_stop(&srv);
    wt_rm_rf(srv.dir);
}
TestSuite(stream_flush, .init = start, .fini = stop, .timeout = 120);

ParameterizedTestParameters(stream_flush, a_flush_with_nothing_new_completes_and_sends_nothing)
{
    return wt_policy_params();
}

ParameterizedTest(wt_policy *p, stream_flush, a_flush_with_nothing_new_completes_and_sends_nothing)
{
    char path[128];
    /* Three empty flushes before the first part (the first of them sends
     * the head), and three after each of the two one-byte parts. */
    snprintf(path, sizeof(path), "/%s/stream?parts=2&size=1&empty=3", p->name);
    for (int h2 = 0; h2 <= 1; h2++) {
        wt_req q = {.path = path, .http2 = h2};
        wt_resp r;
        cr_assert_eq(wt_request(&srv, &q, &r), 0, "%s over %s: no answer", path, h2 ? "HTTP/2" : "HTTP/1.1");
        cr_assert_eq(r.status, 200, "%s: %ld", path, r.status);
        cr_assert_str_eq(r.body, "xx", "%s over %s", path, h2 ? "HTTP/2" : "HTTP/1.1");
        wt_resp_free(&r);
    }
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/hello", NULL, &r), 0, "the server stopped serving");
    cr_assert_eq(r.status, 200);
    wt_resp_free(&r);
    char rec[400];
    snprintf(rec, sizeof(rec), "%s/state/crash-bigstream.rec", srv.dir);
    cr_assert_neq(access(rec, F_OK), 0, "a crash record was written: %s", rec);
    char *log = wt_read_log(&srv);
    cr_assert_null(strstr(log, "FATAL"), "%s", log);
    free(log);
    wt_finish(&srv);
}
