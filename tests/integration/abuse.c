/*
 * Abuse budgets: the HTTP/2 Rapid Reset shape (CVE-2023-44487), 20,000
 * HEADERS+RST_STREAM pairs on one TLS connection (tests/support/rapid_reset.py,
 * Debian's python3-h2), against a pool, a reactive and a coroutine route.
 * weft must close the connection, spend little CPU (read from /proc and
 * printed) and do almost none of the requested work (its own counters).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "h2attack.h"
#include "harness.h"

/* Whether the last run_client saw GOAWAY. */
static int last_goaway;

/* Runs the client; returns whether weft closed the connection (or sent GOAWAY). */
static int run_client(int port, const char *path, int n, const char *mode, int *sent, double *ms)
{
    wt_h2_run run;
    wt_h2_streams(port, path, n, mode, &run);
    *sent = run.sent;
    *ms = run.ms;
    last_goaway = run.goaway;
    return run.closed;
}

static void start_tls(wt_server *s, const char *limits)
{
    wt_write_conf(s, "# placeholder\n");
    wt_tls_cert(s->dir);
    char conf[2048];
    snprintf(conf, sizeof(conf),
             "threads = 2; admin = false; %s\n"
             "listen = ( \"127.0.0.1:0\", { address = \"127.0.0.1:0\"; tls = { certificate = \"server.crt\"; "
             "key = \"server.key\"; }; } );\n"
             "pools = ({ name = \"default\"; size = 4; queue = 10000; });\n"
             "routes = ({ path = \"/pool/cpu\"; plugin = \"cpu\"; dispatch = \"pool\"; options = { bits = 1000; }; },\n"
             "          { path = \"/reactive/cpu\"; plugin = \"cpu\"; dispatch = \"reactive\"; options = { bits = 1000; }; },\n"
             "          { path = \"/coroutine/delay\"; plugin = \"delay\"; dispatch = \"coroutine\"; options = { ms = 1000; }; });\n",
             limits);
    wt_start(s, conf);
}

typedef struct route_param {
    char path[32];
    char policy[16];
} route_param;

ParameterizedTestParameters(abuse, rapid_reset_closes_the_connection_and_costs_little)
{
    static route_param p[] = {{"/pool/cpu", "pool"}, {"/reactive/cpu", "reactive"}, {"/coroutine/delay", "coroutine"}};
    return cr_make_param_array(route_param, p, sizeof(p) / sizeof(p[0]));
}

ParameterizedTest(route_param *p, abuse, rapid_reset_closes_the_connection_and_costs_little, .timeout = 180)
{
    wt_server s = {0};
    start_tls(&s, "");
    int port = wt_tls_port(&s);
    double cpu0 = wt_cpu_seconds(s.pid);
    int sent = 0;
    double client_ms = 0;
    /* The client stops as soon as weft closes the connection; the bound only
     * ends a run in which it never does. */
    int closed = run_client(port, p->path, 60000, "", &sent, &client_ms);
    /* Everything the attack started has ended before CPU is read. */
    wt_await_metric(&s, "weft_inflight_requests", 0, 0, 30000);
    double cpu = wt_cpu_seconds(s.pid) - cpu0;
    char key[160];
    snprintf(key, sizeof(key), "weft_requests_total{route=\"%s\",policy=\"%s\",code=\"2xx\"}", p->path, p->policy);
    double answered = wt_metric(&s, key);
    snprintf(key, sizeof(key), "weft_requests_cancelled_total{route=\"%s\",policy=\"%s\"}", p->path, p->policy);
    double cancelled = wt_metric(&s, key);
    double closes = wt_metric(&s, "weft_connections_closed_abuse_total");
    double t0 = wt_now_ms();
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", p->path, NULL, &r), 0);
    double next_ms = wt_now_ms() - t0;
    printf("abuse: %s: %d HEADERS+RST_STREAM pairs written in %.0f ms before weft %s the connection; server CPU "
           "%.2f s; %g answered, %g cancelled; a normal request then answered %ld in %.0f ms\n",
           p->path, sent, client_ms, closed ? "closed" : "did NOT close", cpu, answered, cancelled, r.status, next_ms);
    cr_expect(closed, "weft must close a Rapid Reset connection");
    cr_expect(last_goaway, "with GOAWAY, not a bare close");
    cr_expect_eq(closes, 1, "counted once");
    /* Work withdrawn at the reset costs next to nothing under every policy:
     * a reactive handler on HTTP/2 starts only after h2o has read the
     * resets that came with its HEADERS (dispatch.c, start_later). */
    cr_expect_lt(cpu, 3.0, "server CPU spent on the attack");
    /* Work counters: the reset budget (limits.max_resets, 100) bounds what
     * was ever answered (a few answers are written before their reset is read). */
    cr_expect_leq(answered, 300, "work done for reset streams");
    cr_expect_eq(r.status, 200, "%s", r.body);
    cr_expect_lt(next_ms, strcmp(p->policy, "coroutine") == 0 ? 2000 : 1000, "a normal request right after");
    wt_resp_free(&r);
    char *log = wt_read_log(&s);
    cr_expect(strstr(log, "closing the connection from 127.0.0.1") != NULL, "one line naming the peer:\n%s", log);
    free(log);
    int status = wt_stop(&s);
    cr_expect_eq(status, 0);
    wt_finish(&s);
}

/* Handler work in flight on one connection is capped too (HTTP/2 streams
 * left open here; the cap matters once reset streams' work runs on). */
Test(abuse, inflight_cap_closes_the_connection, .timeout = 60)
{
    wt_server s = {0};
    start_tls(&s, "limits = { max_inflight_per_conn = 5; };");
    int sent = 0;
    double ms = 0;
    int closed = run_client(wt_tls_port(&s), "/coroutine/delay", 10, "keep", &sent, &ms);
    cr_expect(closed, "10 concurrent requests on a connection capped at 5");
    cr_expect(last_goaway, "with GOAWAY");
    cr_expect_eq(wt_metric(&s, "weft_connections_closed_abuse_total"), 1);
    char *log = wt_read_log(&s);
    cr_expect(strstr(log, "limits.max_inflight_per_conn") != NULL, "%s", log);
    free(log);
    wt_await_metric(&s, "weft_inflight_requests", 0, 0, 5000);
    cr_expect_eq(wt_stop(&s), 0);
    wt_finish(&s);
}

/* A draining server tells HTTP/2 clients with GOAWAY (h2o's graceful
 * shutdown) and still finishes the stream in flight: the client sees GOAWAY,
 * then its 200. */
Test(abuse, drain_sends_goaway_and_finishes_the_stream, .timeout = 60)
{
    wt_server s = {0};
    start_tls(&s, "");
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/support/h2_drain.py %d /coroutine/delay", WEFT_SOURCE_DIR,
             wt_tls_port(&s));
    FILE *c = popen(cmd, "r");
    cr_assert_not_null(c);
    char line[256] = "";
    cr_assert_not_null(fgets(line, sizeof(line), c), "the client's first line");
    cr_assert_str_eq(line, "sent\n");
    /* The request is in flight (the delay handler holds it 1 s): drain now. */
    wt_await_metric(&s, "weft_inflight_requests", 1, 1, 10000);
    cr_expect_eq(wt_stop(&s), 0, "a clean exit once the stream is answered");
    if (fgets(line, sizeof(line), c) == NULL)
        line[0] = '\0';
    cr_assert_eq(pclose(c), 0, "h2_drain.py: %s", line);
    int goaway = 0, status = 0;
    cr_assert_eq(sscanf(line, "goaway=%d status=%d", &goaway, &status), 2, "%s", line);
    cr_expect(goaway, "GOAWAY on drain: %s", line);
    cr_expect_eq(status, 200, "the stream in flight is answered: %s", line);
    wt_finish(&s);
}

/* HPACK bomb: one 4,000-byte header entered in the dynamic table and then
 * referenced by one byte per copy, on 30 streams at once. 16,000 copies (a
 * 20 KB request decoding to 64 MB): h2o ends the connection with GOAWAY
 * (COMPRESSION_ERROR past its hard limit of decoded headers). 90 copies
 * (360 KB decoded each): every stream gets 431 from weft, which checks the
 * decoded list against limits.max_headers before anything copies it. The
 * server's memory stays put either way. */
static void bomb(wt_server *s, int copies, const char *want, int goaway)
{
    long rss0 = wt_rss_kib(s->pid);
    char cmd[512], line[256] = "";
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/support/hpack_bomb.py %d /pool/cpu 30 %d", WEFT_SOURCE_DIR,
             wt_tls_port(s), copies);
    FILE *c = popen(cmd, "r");
    cr_assert_not_null(c);
    if (fgets(line, sizeof(line), c) == NULL)
        line[0] = '\0';
    cr_assert_eq(pclose(c), 0, "hpack_bomb.py: %s", line);
    long rss1 = wt_rss_kib(s->pid);
    printf("abuse: HPACK bomb, 30 streams x %d references to a 4,000-byte header: %s; RSS %ld -> %ld KiB\n", copies,
           line, rss0, rss1);
    cr_expect(strncmp(line, want, strlen(want)) == 0, "%d copies: want '%s', got '%s'", copies, want, line);
    if (goaway)
        cr_expect(strstr(line, "goaway=1") != NULL, "%d copies: the connection ends with GOAWAY: %s", copies, line);
    if (wt_rss_checked())
        cr_expect_lt(rss1 - rss0, 64 * 1024, "RSS grew by %ld KiB", rss1 - rss0);
}

Test(abuse, hpack_bomb_is_refused_and_costs_no_memory, .timeout = 120)
{
    wt_server s = {0};
    start_tls(&s, "");
    bomb(&s, 90, "statuses=431 streams=30", 0);
    bomb(&s, 16000, "statuses=0 streams=0", 1);
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", "/pool/cpu", NULL, &r), 0);
    cr_expect_eq(r.status, 200, "still serving: %s", r.body);
    wt_resp_free(&r);
    wt_finish(&s);
}
