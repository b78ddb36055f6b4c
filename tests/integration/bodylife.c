/*
 * Request bodies weft stops reading before their end (issue 44, items 1, 5
 * and 7; request/body.h weft_body_abandon): a route's timeout_ms passing
 * while the body still trickles in, a handler that answers without reading
 * it, a pool too small for the uploads waiting on it, a client that leaves
 * mid-body, a body that pauses past ¾ of limits.request_timeout_ms — over
 * HTTP/1.1 and HTTP/2 (prior knowledge), under every policy. Each answer
 * must come, the rest of the body is not read (HTTP/1: the connection
 * closes right after the answer; HTTP/2: RST_STREAM(NO_ERROR) right after
 * it), and the server goes on serving. The clients are
 * tests/support/slow_upload.py (python3-h2); body_flood.py for the bound on
 * collected bodies (limits.max_buffered_body_total) and for a client that
 * sends past its HTTP/2 flow-control window.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "confs.h"
#include "harness.h"

/* Once the answer is out, how long the request may take to end: it ends at
 * once now; before, h2o's own I/O timeout (5 s, now request_timeout_ms:
 * 8 s here) closed an HTTP/1 connection, and an HTTP/2 stream stayed open. */
#define ENDS_WITHIN_MS 3000

#define ROUTES(policy)                                                                                          \
    WT_ROUTE("/" policy "/up", "upload", policy, " stream_body = true; timeout_ms = 2000;") ",\n"              \
    WT_ROUTE("/" policy "/early", "hello", policy, " stream_body = true;") ",\n"                               \
    WT_ROUTE("/" policy "/stream", "upload", policy, " stream_body = true;")

/* ¾ of request_timeout_ms, 6 s, is past the 5 s of h2o's own HTTP/1 I/O
 * timeout: a body pausing that long got no answer over HTTP/1 (item 7). */
static const char *conf =
    "threads = 2; " WT_LISTEN " admin = false;\n"
    "limits = { request_timeout_ms = 8000; };\n"
    "pools = ({ name = \"default\"; size = 8; }, { name = \"small\"; size = 4; queue = 4; queue_timeout_ms = 1000; });\n"
    "routes = (\n" ROUTES("pool") ",\n" ROUTES("coroutine") ",\n" ROUTES("reactive") ",\n"
    WT_ROUTE("/small/up", "upload", "pool", " pool = \"small\"; stream_body = true; timeout_ms = 3000;") ",\n"
    WT_ROUTE("/whole", "upload", "reactive", "") ",\n" WT_HELLO_ROUTE "\n);\n";

static wt_server srv;
static void start(void) { wt_start(&srv, conf); }
static void stop(void) { wt_suite_stop(&srv); }
TestSuite(bodylife, .init = start, .fini = stop, .timeout = 120);

typedef struct upload {
    int status, answer_ms, end_ms;
    char end[32]; /* closed, reset:CODE, open */
} upload;

typedef struct run {
    FILE *out;
    pid_t pid; /* "leave": the client's, from its "ready" line */
    int n;
    upload u[16];
} run;

static void run_start(run *r, const char *proto, const char *path, int n, const char *mode)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/support/slow_upload.py %s %d %s %d %s 200", WEFT_SOURCE_DIR,
             proto, srv.port, path, n, mode);
    *r = (run){.out = popen(cmd, "r"), .n = n};
    cr_assert_not_null(r->out, "%s", cmd);
    if (strcmp(mode, "leave") == 0) {
        char line[64];
        int pid = 0;
        cr_assert(fgets(line, sizeof(line), r->out) != NULL && sscanf(line, "ready %d", &pid) == 1,
                  "slow_upload.py did not start: %s", cmd);
        r->pid = pid;
    }
}

/* Reads the client's lines up to "done" (its own deadline is 30 s). */
static void run_end(run *r)
{
    char line[256];
    int got = 0;
    while (fgets(line, sizeof(line), r->out) != NULL && strncmp(line, "done", 4) != 0) {
        int i;
        upload u = {0};
        if (sscanf(line, "%d status=%d answer_ms=%d end=%31s end_ms=%d", &i, &u.status, &u.answer_ms, u.end,
                   &u.end_ms) == 5 &&
            i >= 0 && i < r->n) {
            r->u[i] = u;
            got++;
        }
    }
    pclose(r->out);
    cr_assert_eq(got, r->n, "slow_upload.py reported %d of %d requests", got, r->n);
}

static void uploads(const char *proto, const char *path, int n, const char *mode, run *r)
{
    run_start(r, proto, path, n, mode);
    run_end(r);
}

/* Answered `status`, and then the rest of the body was not read: the
 * connection closed (HTTP/1) or the stream was reset with NO_ERROR (HTTP/2)
 * right after the answer. */
static void ended_after(const char *what, const upload *u, int status, int h2)
{
    cr_expect_eq(u->status, status, "%s: answered %d, %d wanted (end %s at %d ms)", what, u->status, status, u->end,
                 u->end_ms);
    cr_expect_str_eq(u->end, h2 ? "reset:0" : "closed", "%s: the request ended %s", what, u->end);
    cr_expect(u->end_ms >= u->answer_ms && u->end_ms - u->answer_ms <= ENDS_WITHIN_MS,
              "%s: answered at %d ms, ended at %d ms", what, u->answer_ms, u->end_ms);
}

static void still_serves(const char *what)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/hello", NULL, &r), 0, "%s: the server no longer answers", what);
    cr_assert_eq(r.status, 200, "%s: /hello answered %ld", what, r.status);
    wt_resp_free(&r);
    wt_wait_metric_eq(&srv, "weft_inflight_requests", 0, 10000);
}

ParameterizedTestParameters(bodylife, slow_uploader_past_timeout_ms) { return wt_policy_params(); }

/* A byte every 200 ms to a route with timeout_ms = 2000: 504 at 2 s, and the
 * bytes that come after it are never handed to a callback weft cleared
 * (which killed the process with SIGSEGV over HTTP/1). HTTP/2 runs one
 * streamed request of a connection at a time (h2o's
 * max_concurrent_streaming_requests_per_connection): the second stream's
 * 504 comes 2 s after the first's. */
ParameterizedTest(wt_policy *p, bodylife, slow_uploader_past_timeout_ms)
{
    char path[64], what[96];
    snprintf(path, sizeof(path), "/%s/up", p->name);
    run h1, h2;
    run_start(&h1, "h1", path, 2, "trickle");
    run_start(&h2, "h2", path, 2, "trickle");
    run_end(&h1);
    run_end(&h2);
    for (int i = 0; i < 2; i++) {
        snprintf(what, sizeof(what), "%s over HTTP/1.1, upload %d", path, i);
        ended_after(what, &h1.u[i], 504, 0);
        snprintf(what, sizeof(what), "%s over HTTP/2, stream %d", path, i);
        ended_after(what, &h2.u[i], 504, 1);
    }
    still_serves(path);
}

/* Twelve slow uploads against a pool of 4 workers with a queue of 4: 4 run
 * until their 504 (3 s), 4 wait and get 503 at the queue timeout (1 s), 4
 * find the queue full (503 at once). Each connection closes with its
 * answer, the uploads going on. */
Test(bodylife, many_slow_uploads_against_a_small_pool)
{
    run r;
    uploads("h1", "/small/up", 12, "trickle", &r);
    int n503 = 0, n504 = 0;
    char what[64];
    for (int i = 0; i < 12; i++) {
        n503 += r.u[i].status == 503;
        n504 += r.u[i].status == 504;
        snprintf(what, sizeof(what), "/small/up, upload %d", i);
        ended_after(what, &r.u[i], r.u[i].status == 503 ? 503 : 504, 0);
    }
    cr_expect(n504 >= 1 && n503 >= 1 && n503 + n504 == 12, "%d answered 503, %d 504", n503, n504);
    still_serves("a small pool");
}

ParameterizedTestParameters(bodylife, answer_without_reading_the_body) { return wt_policy_params(); }

/* A handler that answers without reading the body (hello on a stream_body
 * route): the answer comes at once and the body is not read on, whether the
 * client waits for the answer (then sends a little more) or trickles on. */
ParameterizedTest(wt_policy *p, bodylife, answer_without_reading_the_body)
{
    char path[64], what[128];
    snprintf(path, sizeof(path), "/%s/early", p->name);
    const char *modes[] = {"early", "trickle"};
    for (int m = 0; m < 2; m++) {
        run h1, h2;
        run_start(&h1, "h1", path, 2, modes[m]);
        run_start(&h2, "h2", path, 2, modes[m]);
        run_end(&h1);
        run_end(&h2);
        for (int i = 0; i < 2; i++) {
            snprintf(what, sizeof(what), "%s (%s) over HTTP/1.1, upload %d", path, modes[m], i);
            ended_after(what, &h1.u[i], 200, 0);
            snprintf(what, sizeof(what), "%s (%s) over HTTP/2, stream %d", path, modes[m], i);
            ended_after(what, &h2.u[i], 200, 1);
        }
    }
    still_serves(path);
}

ParameterizedTestParameters(bodylife, client_leaves_mid_body) { return wt_policy_params(); }

/* Clients that leave in the middle of their bodies while the handler waits
 * for the next part: their requests end (nothing left in flight), over
 * HTTP/1.1 (three connections) and HTTP/2 (one stream). */
ParameterizedTest(wt_policy *p, bodylife, client_leaves_mid_body)
{
    char path[64];
    snprintf(path, sizeof(path), "/%s/stream", p->name);
    const char *protos[] = {"h1", "h2"};
    const int n[] = {3, 1};
    for (int i = 0; i < 2; i++) {
        run r;
        run_start(&r, protos[i], path, n[i], "leave");
        wt_await_metric(&srv, "weft_inflight_requests", 1, n[i], 10000);
        kill(r.pid, SIGTERM);
        run_end(&r);
        wt_wait_metric_eq(&srv, "weft_inflight_requests", 0, 10000);
    }
    still_serves(path);
}

/* Item 7: a body that pauses gets the documented answer after ¾ of
 * limits.request_timeout_ms (6 s here) over HTTP/1.1 as over HTTP/2 — 408
 * for a route that collects it, the handler's answer to its WEFT_TIMEOUT
 * (the fixture's 400) for one that streams it — not a connection closed by
 * h2o at 5 s without an answer; the bytes the client sends after the answer
 * are not read. */
static void paused(const char *path, int status)
{
    run h1, h2;
    run_start(&h1, "h1", path, 1, "early");
    run_start(&h2, "h2", path, 1, "early");
    run_end(&h1);
    run_end(&h2);
    char what[96];
    snprintf(what, sizeof(what), "%s paused, over HTTP/1.1", path);
    ended_after(what, &h1.u[0], status, 0);
    cr_expect_geq(h1.u[0].answer_ms, 5500, "%s: answered after %d ms, not after ¾ of 8000", what, h1.u[0].answer_ms);
    snprintf(what, sizeof(what), "%s paused, over HTTP/2", path);
    ended_after(what, &h2.u[0], status, 1);
    cr_expect_geq(h2.u[0].answer_ms, 5500, "%s: answered after %d ms, not after ¾ of 8000", what, h2.u[0].answer_ms);
    still_serves(path);
}

Test(bodylife, paused_collected_body_is_408) { paused("/whole", 408); }

ParameterizedTestParameters(bodylife, paused_streamed_body_times_out) { return wt_policy_params(); }

ParameterizedTest(wt_policy *p, bodylife, paused_streamed_body_times_out)
{
    char path[64];
    snprintf(path, sizeof(path), "/%s/stream", p->name);
    paused(path, 400);
}

/* ---- bodies held (item 5): the bound on collected bodies, and h2o's on
 * the streams it has not started ---- */

#define TOTAL 1048576

static const char *bound_conf = "threads = 2; " WT_LISTEN " admin = false;\n"
                                /* pauses long enough that the bodies are still held when counted */
                                "limits = { request_timeout_ms = 60000; max_buffered_body_total = 1048576; };\n"
                                "routes = (\n" WT_ROUTE("/whole", "upload", "reactive", " max_body = 1000000;") ",\n"
                                WT_HELLO_ROUTE "\n);\n";

static void start_bound(void) { wt_start(&srv, bound_conf); }
TestSuite(bodybound, .init = start_bound, .fini = stop, .timeout = 120);

typedef struct flood {
    long sent;
    int pid, n503;
} flood;

/* body_flood.py up to its "sent" line; the client then holds its connections. */
static FILE *flood_start(const char *args, flood *f)
{
    char cmd[512], line[128];
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/support/body_flood.py %d %s", WEFT_SOURCE_DIR, srv.port, args);
    FILE *out = popen(cmd, "r");
    cr_assert_not_null(out);
    *f = (flood){0};
    while (fgets(line, sizeof(line), out) != NULL) {
        f->n503 += strcmp(line, "answered 503\n") == 0;
        if (sscanf(line, "sent %ld %d", &f->sent, &f->pid) == 2)
            return out;
    }
    cr_assert_fail("body_flood.py %s stopped before sending", args);
    return NULL;
}

static void flood_end(FILE *out, const flood *f)
{
    kill(f->pid, SIGTERM);
    char line[128];
    while (fgets(line, sizeof(line), out) != NULL) {
    }
    pclose(out);
}

/* Twelve HTTP/2 connections, each sending a 300 kB body to a route that
 * collects it, never ending it: the bodies held stay within the total (each
 * holds 512 KiB once it passed 256 KiB), the ones past it get 503 and are
 * counted; once the clients leave nothing is held. */
Test(bodybound, collected_bodies_stay_within_the_total)
{
    flood f;
    FILE *out = flood_start("/whole 12 1 300000", &f);
    double held = wt_metric(&srv, "weft_buffered_body_bytes");
    double refused = wt_metric(&srv, "weft_buffered_body_refused_total");
    cr_expect(held > 0 && held <= TOTAL, "%.0f bytes of bodies held, the total is %d", held, TOTAL);
    cr_expect_geq(refused, 1, "bodies past the total are refused (%.0f)", refused);
    cr_expect_eq(f.n503, (int)refused, "%d answered 503, %.0f counted", f.n503, refused);
    flood_end(out, &f);
    wt_wait_metric_eq(&srv, "weft_buffered_body_bytes", 0, 10000);
    still_serves("collected bodies");
}

/* A client that sends DATA past the flow-control window it was given: h2o
 * buffered every byte for the streams it had not started yet (4 x 100
 * streams x 1000 kB held 401 MB); now the connection is ended
 * (FLOW_CONTROL_ERROR) at the first such frame. */
Test(bodylife, data_past_the_http2_window_ends_the_connection)
{
    long idle = wt_rss_kib(srv.pid);
    flood f;
    FILE *out = flood_start("/whole 1 20 1000000 raw", &f);
    long rss = wt_rss_kib(srv.pid);
    flood_end(out, &f);
    cr_expect_lt(f.sent, 20000000, "all %ld bytes were taken: the connection was never ended", f.sent);
    printf("bodylife: %ld bytes sent past the window; RSS idle %ld KiB, then %ld KiB\n", f.sent, idle, rss);
    if (wt_rss_checked())
        cr_expect_lt(rss - idle, 16 * 1024, "RSS grew by %ld KiB", rss - idle);
    still_serves("a flow-control violation");
}
