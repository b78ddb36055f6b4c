/*
 * Long-lived requests cannot starve a pool: idle WebSockets and streams
 * under `pool` lend their workers (they stop counting against the pool's
 * size, up to max_long_lived, beyond which they are refused with 503), a
 * route's max_concurrent caps its requests in flight (503 + Retry-After),
 * and a request that waits in a pool's queue longer than queue_timeout_ms
 * gets 503. Each refusal is counted in /metrics.
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "rawhttp.h"

/* Sends `req` on a new connection and reads the answer's head (status line
 * and headers, nothing after); the connection stays open and unread. */
static int open_long_lived(const wt_server *s, const char *req, long *status)
{
    int fd = wt_raw_connect(s->port);
    cr_assert_eq(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
    char head[4096];
    size_t len = 0;
    double t0 = wt_now_ms();
    while (len < sizeof(head) - 1 && (len < 4 || strstr(head, "\r\n\r\n") == NULL)) {
        struct pollfd p = {fd, POLLIN, 0};
        cr_assert_lt(wt_now_ms() - t0, 20000.0, "no answer head to %s", req);
        if (poll(&p, 1, 100) <= 0)
            continue; /* (a) poll with a deadline */
        ssize_t n = recv(fd, head + len, 1, 0); /* byte by byte: leave the body unread */
        if (n <= 0)
            break;
        len += (size_t)n;
        head[len] = '\0';
    }
    *status = len > 12 && strncmp(head, "HTTP/1.1 ", 9) == 0 ? strtol(head + 9, NULL, 10) : 0;
    return fd;
}

static int open_ws(const wt_server *s, const char *path, long *status)
{
    char req[512];
    snprintf(req, sizeof(req),
             "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
             path);
    return open_long_lived(s, req, status);
}

static long get(const wt_server *s, const char *path, char *body, size_t size, char *retry, size_t rsize)
{
    wt_resp r;
    cr_assert_eq(wt_http(s, "GET", path, NULL, &r), 0, "GET %s: no answer", path);
    long st = r.status;
    if (body != NULL)
        snprintf(body, size, "%s", r.body);
    if (retry != NULL && wt_header(&r, "retry-after", retry, rsize) == NULL)
        retry[0] = '\0';
    wt_resp_free(&r);
    return st;
}

/* Two idle WebSockets and two never-reading event streams on a pool of
 * four workers: before, they held all four and every other request on the
 * pool waited for them; now each is lent its worker (max_long_lived
 * defaults to the pool's size). */
Test(starvation, idle_websockets_and_streams_do_not_hold_the_pool, .timeout = 120)
{
    wt_server s = {0};
    wt_start(&s, "threads = 1;\n" WT_LISTEN "\n"
                 "pools = ( { name = \"small\"; size = 4; queue = 100; } );\n"
                 "routes = (\n"
                 "  { path = \"/pool/chat\"; plugin = \"chat\"; dispatch = \"pool\"; pool = \"small\"; },\n"
                 "  { path = \"/pool/events\"; plugin = \"events\"; dispatch = \"pool\"; pool = \"small\"; },\n"
                 "  { path = \"/pool/delay\"; plugin = \"delay\"; dispatch = \"pool\"; pool = \"small\";"
                 " options = { ms = 1; }; }\n);\n");
    int fds[4];
    long st;
    for (int i = 0; i < 2; i++) {
        fds[i] = open_ws(&s, "/pool/chat", &st);
        cr_assert_eq(st, 101, "WebSocket %d: %ld", i, st);
    }
    for (int i = 2; i < 4; i++) {
        fds[i] = open_long_lived(&s,
                                 "GET /pool/events?count=1000&interval_ms=60000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
                                 &st);
        cr_assert_eq(st, 200, "stream %d: %ld", i, st);
    }
    /* Each lent before its head went out. The pool's own work still runs,
     * on all four workers at once. */
    const char *paths[8];
    long statuses[8];
    for (int i = 0; i < 8; i++)
        paths[i] = "/pool/delay";
    wt_http_batch(&s, 8, "GET", paths, NULL, NULL, statuses, NULL);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(statuses[i], 200, "request %d beside the long-lived ones: %ld", i, statuses[i]);
    cr_assert_eq(wt_metric(&s, "weft_pool_lent_workers{pool=\"small\"}"), 4);
    /* Beyond max_long_lived: refused, with Retry-After, and counted. */
    int extra = open_ws(&s, "/pool/chat", &st);
    cr_assert_eq(st, 503, "a fifth long-lived request: %ld", st);
    close(extra);
    extra = open_long_lived(&s, "GET /pool/events?count=1000&interval_ms=60000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
                            &st);
    cr_assert_eq(st, 503, "a fifth long-lived request: %ld", st);
    close(extra);
    cr_assert_eq(wt_metric(&s, "weft_pool_lend_refused_total{pool=\"small\"}"), 2);
    for (int i = 0; i < 4; i++)
        close(fds[i]);
    /* Their workers come back: the lent threads end as their work returns. */
    wt_wait_metric_eq(&s, "weft_pool_lent_workers{pool=\"small\"}", 0, 20000);
    cr_assert_eq(get(&s, "/pool/delay", NULL, 0, NULL, 0), 200);
    wt_finish(&s);
}

/* max_concurrent: the third concurrent request of a route capped at two is
 * refused at once (503 + Retry-After), under every policy. */
Test(starvation, max_concurrent_caps_a_route, .timeout = 120)
{
    wt_server s = {0};
    wt_start(&s, "threads = 1;\n" WT_LISTEN "\n"
                 "routes = (\n"
                 WT_EACH_POLICY("/slow", "delay", " options = { ms = 600000; }; max_concurrent = 2;") ",\n"
                 WT_ROUTE("/pool/quick", "delay", "pool", " options = { ms = 1; };") "\n);\n");
    static const char *const policies[] = {"pool", "coroutine", "reactive"};
    int fds[6];
    for (int p = 0; p < 3; p++) {
        char req[200], path[64], body[512], retry[16], key[200];
        snprintf(req, sizeof(req), "GET /%s/slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", policies[p]);
        for (int i = 0; i < 2; i++) {
            fds[2 * p + i] = wt_raw_connect(s.port);
            cr_assert_eq(send(fds[2 * p + i], req, strlen(req), 0), (ssize_t)strlen(req));
        }
        snprintf(key, sizeof(key), "weft_requests_total{route=\"/%s/slow\",policy=\"%s\",code=\"2xx\"}", policies[p],
                 policies[p]);
        /* Both dispatched (in flight), then the third. */
        wt_wait_dispatched(&s, key, 2 * (p + 1), 20000);
        snprintf(path, sizeof(path), "/%s/slow", policies[p]);
        cr_assert_eq(get(&s, path, body, sizeof(body), retry, sizeof(retry)), 503, "%s: %s", path, body);
        cr_assert(strstr(body, "max_concurrent (2)") != NULL, "%s", body);
        cr_assert_str_eq(retry, "1");
        snprintf(key, sizeof(key), "weft_requests_refused_total{route=\"/%s/slow\",policy=\"%s\",reason=\"max_concurrent\"}",
                 policies[p], policies[p]);
        cr_assert_eq(wt_metric(&s, key), 1, "%s", key);
    }
    /* Other routes are not affected. */
    cr_assert_eq(get(&s, "/pool/quick", NULL, 0, NULL, 0), 200);
    /* A slot is given back when its request ends (here: its client leaves). */
    close(fds[0]);
    close(fds[1]);
    wt_wait_metric_eq(&s, "weft_requests_cancelled_total{route=\"/pool/slow\",policy=\"pool\"}", 2, 20000);
    int again = wt_raw_connect(s.port);
    const char *req = "GET /pool/slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    cr_assert_eq(send(again, req, strlen(req), 0), (ssize_t)strlen(req));
    int third = wt_raw_connect(s.port);
    cr_assert_eq(send(third, req, strlen(req), 0), (ssize_t)strlen(req));
    /* Both admitted: nothing refused beyond the first. */
    wt_wait_metric(&s, "weft_pool_busy_workers{pool=\"default\"}", 2, 20000);
    cr_assert_eq(wt_metric(&s, "weft_requests_refused_total{route=\"/pool/slow\",policy=\"pool\",reason=\"max_concurrent\"}"),
                 1);
    close(again);
    close(third);
    for (int i = 2; i < 6; i++)
        close(fds[i]);
    wt_finish(&s);
}

/* queue_timeout_ms: with the only worker held, a queued request is answered
 * 503 once it has waited that long, instead of waiting for the worker. */
Test(starvation, a_request_queued_past_queue_timeout_ms_gets_503, .timeout = 120)
{
    wt_server s = {0};
    wt_start(&s, "threads = 1;\n" WT_LISTEN "\n"
                 "pools = ( { name = \"one\"; size = 1; queue = 10; queue_timeout_ms = 200; } );\n"
                 "routes = (\n"
                 "  { path = \"/pool/hold\"; plugin = \"delay\"; dispatch = \"pool\"; pool = \"one\";"
                 " options = { ms = 600000; }; },\n"
                 "  { path = \"/pool/quick\"; plugin = \"delay\"; dispatch = \"pool\"; pool = \"one\";"
                 " options = { ms = 1; }; }\n);\n");
    int hold = wt_raw_connect(s.port);
    const char *req = "GET /pool/hold HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    cr_assert_eq(send(hold, req, strlen(req), 0), (ssize_t)strlen(req));
    wt_wait_metric(&s, "weft_pool_busy_workers{pool=\"one\"}", 1, 20000);
    char body[512], retry[16];
    cr_assert_eq(get(&s, "/pool/quick", body, sizeof(body), retry, sizeof(retry)), 503, "%s", body);
    cr_assert(strstr(body, "no worker of pool 'one' was free within its queue_timeout_ms (200 ms)") != NULL, "%s",
              body);
    cr_assert_str_eq(retry, "1");
    cr_assert_eq(wt_metric(&s, "weft_pool_queue_timeouts_total{pool=\"one\"}"), 1);
    cr_assert_eq(wt_metric(&s, "weft_requests_refused_total{route=\"/pool/quick\",policy=\"pool\",reason=\"queue_timeout\"}"),
                 1);
    /* The worker back: served again. */
    close(hold);
    wt_wait_metric_eq(&s, "weft_pool_busy_workers{pool=\"one\"}", 0, 20000);
    cr_assert_eq(get(&s, "/pool/quick", NULL, 0, NULL, 0), 200);
    wt_finish(&s);
}

/* The count survives a reload: the old generation's requests still hold
 * their slots, so a reload is no way around the cap. */
Test(starvation, max_concurrent_counts_across_a_reload, .timeout = 120)
{
    wt_server s = {0};
    static const char conf[] = "threads = 1;\n" WT_LISTEN "\n"
                               "routes = (\n" WT_ROUTE("/pool/slow", "delay", "pool",
                                                       " options = { ms = 600000; }; max_concurrent = 1;") "\n);\n";
    wt_start(&s, conf);
    int fd = wt_raw_connect(s.port);
    const char *req = "GET /pool/slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    cr_assert_eq(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
    wt_wait_metric(&s, "weft_pool_busy_workers{pool=\"default\"}", 1, 20000);
    char text[sizeof(conf) + 32];
    snprintf(text, sizeof(text), "# reloaded\n%s", conf);
    wt_write_file_atomic(s.conf, text);
    cr_assert_eq(kill(s.pid, SIGHUP), 0);
    free(wt_wait_log(&s, "generation 2 serving", 20000));
    char body[512];
    cr_assert_eq(get(&s, "/pool/slow", body, sizeof(body), NULL, 0), 503, "%s", body);
    cr_assert(strstr(body, "max_concurrent (1)") != NULL, "%s", body);
    close(fd);
    wt_finish(&s);
}
