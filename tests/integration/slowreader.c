/*
 * Answers queued for clients that never read them (issue 30, item 7;
 * tests/support/slow_reader.py): every body handed to h2o is charged to its
 * connection and to the process until h2o has written it. Past
 * limits.max_buffered_response_total the oldest unread answers are closed
 * first, a connection that leaves more than limits.max_buffered_response
 * unread gets no more, and a streaming handler's flush waits for its client
 * (back-pressure). What the process holds stays near the bound, over
 * HTTP/1.1 and HTTP/2, under each policy, and it keeps serving.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confs.h"
#include "harness.h"
#include "rawhttp.h"

#define TOTAL (16 * 1024 * 1024)
/* Upstream bodies of 1,000,000 bytes: an 8 MB, a 16 MB and a 3 MB answer. */
#define IDS8 "ids=1000000,1000000,1000000,1000000,1000000,1000000,1000000,1000000"
#define IDS16 IDS8 ",1000000,1000000,1000000,1000000,1000000,1000000,1000000,1000000"
#define IDS3 "ids=1000000,1000000,1000000"

#define AGG(policy)                                                                                              \
    "  { path = \"/" policy "/aggregate\"; plugin = \"aggregate\"; dispatch = \"" policy "\"; options = { "    \
    "upstream = \"http://127.0.0.1:%1$d\"; path = \"/big/\"; max_response = 16777216; timeout_ms = 30000; }; },\n"

static const char *conf_fmt = "threads = 2; " WT_LISTEN " admin = false;\n"
                              /* h2o closes an HTTP/1 connection whose writes make no
                               * progress for request_timeout_ms (10 s), an HTTP/2 one
                               * after idle_timeout_ms: long here, so that only weft's
                               * bound can end them */
                              "limits = { max_buffered_response_total = 16777216; idle_timeout_ms = 120000; };\n"
                              "pools = ({ name = \"default\"; size = 32; queue = 100; });\n"
                              "routes = (\n" AGG("pool") AGG("coroutine") AGG("reactive")
                              WT_EACH_POLICY("/stream", "bigstream", "") ",\n" WT_HELLO_ROUTE "\n);\n";

static wt_server srv;
static pid_t mock;

static void start(void)
{
    int port = wt_mock_start(&mock);
    char conf[4096];
    snprintf(conf, sizeof(conf), conf_fmt, port);
    wt_start(&srv, conf);
}

static void stop(void)
{
    wt_suite_stop(&srv);
    wt_mock_stop(mock);
}
TestSuite(slowreader, .init = start, .fini = stop, .timeout = 240);

typedef struct readers {
    FILE *out;
    pid_t pid;
} readers;

/* Starts the clients and returns once every request is out. */
static readers open_readers(const char *args)
{
    char cmd[512], line[128];
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/support/slow_reader.py %s", WEFT_SOURCE_DIR, args);
    readers r = {.out = popen(cmd, "r")};
    cr_assert_not_null(r.out);
    int pid = 0;
    cr_assert(fgets(line, sizeof(line), r.out) != NULL && sscanf(line, "ready %d", &pid) == 1,
              "slow_reader.py %s did not start", args);
    r.pid = pid;
    return r;
}

static void close_readers(readers *r)
{
    char line[128] = "";
    kill(r->pid, SIGTERM);
    if (fgets(line, sizeof(line), r->out) != NULL)
        printf("slowreader: clients: %s", line);
    pclose(r->out);
}

/* Polls the server's resident memory until it is at most `limit_kib`; the
 * allocator gives freed memory back within 5 s (ops/trim.c). */
static long wait_rss_below(long limit_kib, double limit_ms)
{
    double t0 = wt_now_ms();
    long rss;
    while ((rss = wt_rss_kib(srv.pid)) > limit_kib && wt_now_ms() - t0 < limit_ms)
        usleep(100 * 1000); /* poll interval */
    return rss;
}

static void still_serves(void)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/hello", NULL, &r), 0);
    cr_expect_eq(r.status, 200);
    wt_resp_free(&r);
}

/* The bound holds once the answers are out: the gauge at most the total,
 * and the memory within a few times it (the answers held, and what the
 * allocator keeps of the upstream bodies gathered meanwhile). Not the memory
 * under `pool`: there each worker thread builds its answer in a malloc arena
 * of its own, and glibc's malloc_trim (ops/trim.c) does not give those back:
 * measured +110 MiB after the HTTP/2 case with 16 MiB queued, +17 MiB with
 * MALLOC_ARENA_MAX=1 (reported with issue 30; the gauge is checked there). */
static void bounded(const char *what, long idle_kib, int check_rss)
{
    wt_await_metric(&srv, "weft_buffered_response_bytes", 0, TOTAL, 15000);
    if (!check_rss)
        printf("slowreader: %s: RSS idle %ld KiB, now %ld KiB (not checked)\n", what, idle_kib, wt_rss_kib(srv.pid));
    if (check_rss && wt_rss_checked()) {
        long rss = wait_rss_below(idle_kib + 4 * TOTAL / 1024, 15000);
        printf("slowreader: %s: RSS idle %ld KiB, held %ld KiB\n", what, idle_kib, rss);
        cr_expect_leq(rss, idle_kib + 4 * TOTAL / 1024, "%s: RSS %ld KiB, idle %ld KiB", what, rss, idle_kib);
    }
    still_serves();
}


static void answered(const char *policy, char *key, size_t size)
{
    snprintf(key, size, "weft_requests_total{route=\"/%s/aggregate\",policy=\"%s\",code=\"2xx\"}", policy, policy);
}

/* Ten clients that never read an aggregate answer: all of it was held (the
 * upstream bodies whole, and h2o a copy of the answer) until h2o's own
 * timeouts ended the connections (request_timeout_ms over HTTP/1, idle_timeout_ms over
 * HTTP/2); now at most the 16 MiB total, the oldest unread closed first. */
static void aggregate_never_read(const char *policy, const char *mode, const char *ids)
{
    long idle = wt_rss_kib(srv.pid);
    double closed0 = wt_metric(&srv, "weft_slow_reader_closed_total");
    cr_assert_geq(closed0, 0, "weft_slow_reader_closed_total is exported");
    char key[160], args[512], what[64];
    answered(policy, key, sizeof(key));
    double done0 = wt_metric(&srv, key) < 0 ? 0 : wt_metric(&srv, key);
    snprintf(args, sizeof(args), "%s %d /%s/aggregate?%s 10%s", mode, srv.port, policy, ids,
             strcmp(mode, "h2") == 0 ? " 1" : "");
    readers r = open_readers(args);
    wt_await_metric(&srv, key, 1, done0 + 10, 60000);
    wt_await_metric(&srv, "weft_slow_reader_closed_total", 1, closed0 + 1, 15000);
    snprintf(what, sizeof(what), "%s over %s", policy, mode);
    bounded(what, idle, strcmp(policy, "pool") != 0);
    printf("slowreader: %s: %.0f of 10 closed by the server\n", what,
           wt_metric(&srv, "weft_slow_reader_closed_total") - closed0);
    close_readers(&r);
    wt_wait_metric_eq(&srv, "weft_buffered_response_bytes", 0, 15000);
}

ParameterizedTestParameters(slowreader, aggregate_answers_to_clients_that_never_read) { return wt_policy_params(); }

/* 8 MB answers over HTTP/1.1, 16 MB answers over HTTP/2 (160 MB held
 * before, for as long as idle_timeout_ms). */
ParameterizedTest(wt_policy *p, slowreader, aggregate_answers_to_clients_that_never_read)
{
    aggregate_never_read(p->name, "h1", IDS8);
    aggregate_never_read(p->name, "h2", IDS16);
}

/* Over HTTP/2: ten connections with three 3 MB answers each. A connection
 * that left two unread (6 MB, past the 4 MiB per connection) gets no third:
 * it is closed, and the process as a whole stays at its total. */
Test(slowreader, http2_connection_past_its_own_bound)
{
    long idle = wt_rss_kib(srv.pid);
    double closed0 = wt_metric(&srv, "weft_slow_reader_closed_total");
    char args[256];
    snprintf(args, sizeof(args), "h2 %d /coroutine/aggregate?" IDS3 " 10 3", srv.port);
    readers r = open_readers(args);
    wt_await_metric(&srv, "weft_slow_reader_closed_total", 1, closed0 + 10, 60000);
    bounded("http2, three answers per connection", idle, 1);
    close_readers(&r);
    wt_wait_metric_eq(&srv, "weft_buffered_response_bytes", 0, 15000);
}

ParameterizedTestParameters(slowreader, streams_wait_for_their_clients) { return wt_policy_params(); }

/* Ten streams of 1,000 parts of 1 MiB (a GB each) to clients that never
 * read, five over HTTP/1.1 and five over HTTP/2: each handler waits at its
 * flush with one part queued, so the process holds about ten parts. */
ParameterizedTest(wt_policy *p, slowreader, streams_wait_for_their_clients)
{
    long idle = wt_rss_kib(srv.pid);
    double queued0 = wt_metric(&srv, "weft_buffered_response_bytes");
    char args[256];
    snprintf(args, sizeof(args), "h1 %d '/%s/stream?parts=1000&size=1048576' 5", srv.port, p->name);
    readers r1 = open_readers(args);
    snprintf(args, sizeof(args), "h2 %d '/%s/stream?parts=1000&size=1048576' 5 1", srv.port, p->name);
    readers r2 = open_readers(args);
    /* Every stream stuck at its flush: ten parts queued and unread. */
    wt_await_metric(&srv, "weft_buffered_response_bytes", 1, queued0 + 10.0 * 1048576, 60000);
    cr_expect_geq(wt_metric(&srv, "weft_inflight_requests"), 10, "the handlers are held, not finished");
    bounded(p->name, idle, 1);
    close_readers(&r1);
    close_readers(&r2);
    wt_wait_metric_eq(&srv, "weft_buffered_response_bytes", 0, 15000);
    wt_wait_metric_eq(&srv, "weft_inflight_requests", 0, 15000);
}

/* A whole answer of 16 KiB or more goes to h2o without a copy (and is
 * charged): its length and body as before, and none for HEAD. */
Test(slowreader, large_answers_are_whole_and_head_has_no_body)
{
    wt_raw_resp r;
    wt_raw_http(srv.port, "GET", "/coroutine/aggregate?ids=100000", NULL, NULL, &r);
    cr_assert_eq(r.status, 200);
    char cl[32];
    cr_expect_str_eq(wt_raw_header(&r, "content-length", cl, sizeof(cl)), "100003");
    cr_expect_eq(r.len - strlen(r.head) - 4, 100003, "the whole body: %zu bytes in all", r.len);
    cr_expect_eq(strspn(r.body, "x,[]\n"), 100003, "the upstream's bytes, as they were");
    wt_raw_free(&r);
    wt_raw_http(srv.port, "HEAD", "/coroutine/aggregate?ids=100000", NULL, NULL, &r);
    cr_assert_eq(r.status, 200);
    cr_expect_str_eq(wt_raw_header(&r, "content-length", cl, sizeof(cl)), "100003");
    cr_expect_eq(r.len - strlen(r.head) - 4, 0, "HEAD: no body (%zu bytes in all)", r.len);
    wt_raw_free(&r);
}

