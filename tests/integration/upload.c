/*
 * Streamed request bodies (request/body.h, dispatch/bodyread.c): a route
 * with stream_body = true hands its plugin the body part by part as it
 * arrives, under every policy (fixture tests/plugins/upload.c tallies the
 * bytes and hashes them). A 100 MB upload goes through whole and in order
 * while the server's resident memory stays far below the body's size; a
 * body past max_body gets 413; a client that trickles is timed out; one that
 * leaves mid-body frees its request. Routes that do not stream get the body
 * whole, bounded by their own max_body.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "confs.h"
#include "harness.h"
#include "rawhttp.h"

#define BIG (100ull * 1024 * 1024)
#define UPLOAD_ROUTES(policy)                                                                                     \
    WT_ROUTE("/" policy "/upload", "upload", policy, " stream_body = true; max_body = 209715200;") ",\n"       \
    WT_ROUTE("/" policy "/small", "upload", policy, " stream_body = true; max_body = 1000;") ",\n"               \
    WT_ROUTE("/" policy "/whole", "upload", policy, " max_body = 300000;")

static const char *conf = "threads = 2; " WT_LISTEN " admin = false;\n"
                          "limits = { request_timeout_ms = 1000; };\n"
                          "routes = (\n" UPLOAD_ROUTES("pool") ",\n" UPLOAD_ROUTES("coroutine") ",\n"
                          UPLOAD_ROUTES("reactive") ",\n" WT_HELLO_ROUTE "\n);\n";

static wt_server srv;
static void start(void) { wt_start(&srv, conf); }
static void stop(void) { wt_suite_stop(&srv); }
TestSuite(upload, .init = start, .fini = stop, .timeout = 240);

ParameterizedTestParameters(upload, streams_100_mb) { return wt_policy_params(); }
ParameterizedTestParameters(upload, past_max_body_is_413) { return wt_policy_params(); }
ParameterizedTestParameters(upload, whole_body_in_one_part) { return wt_policy_params(); }
ParameterizedTestParameters(upload, trickle_and_leave) { return wt_policy_params(); }

/* The bytes of the test body: position-dependent, so a part lost, repeated
 * or reordered changes the hash. */
static void fill(unsigned char *buf, size_t n, uint64_t at)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)(((at + i) * 2654435761u) >> 13);
}

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211u;
    return h;
}

static void send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        cr_assert_gt(w, 0, "send: the server closed the connection early");
        c += w;
        n -= (size_t)w;
    }
}

static char *read_answer(int fd)
{
    static char out[4096];
    size_t got = 0;
    ssize_t n;
    while (got < sizeof(out) - 1 && (n = recv(fd, out + got, sizeof(out) - 1 - got, 0)) > 0) {
        got += (size_t)n;
        out[got] = '\0';
        if (strstr(out, "\r\n\r\n") != NULL && strchr(strstr(out, "\r\n\r\n") + 4, '\n') != NULL)
            break;
    }
    out[got] = '\0';
    return out;
}

/* 100 MB through a streaming route: the plugin sees every byte in order, and
 * the server never holds more than a sliver of it (a server that buffered
 * the body would grow by 100 MB; the precise figure is in bench/upload.sh). */
ParameterizedTest(wt_policy *p, upload, streams_100_mb)
{
    long idle = wt_rss_kib(srv.pid);
    int fd = wt_raw_connect(srv.port);
    char head[256];
    int hl = snprintf(head, sizeof(head), "POST /%s/upload HTTP/1.1\r\nHost: x\r\nContent-Length: %llu\r\n\r\n", p->name,
                      (unsigned long long)BIG);
    send_all(fd, head, (size_t)hl);
    static unsigned char buf[256 * 1024];
    uint64_t hash = 1469598103934665603u;
    long peak = idle;
    for (uint64_t at = 0; at < BIG; at += sizeof(buf)) {
        fill(buf, sizeof(buf), at);
        hash = fnv(hash, buf, sizeof(buf));
        send_all(fd, buf, sizeof(buf));
        long rss = wt_rss_kib(srv.pid);
        if (rss > peak)
            peak = rss;
    }
    char *out = read_answer(fd);
    close(fd);
    char want[128];
    snprintf(want, sizeof(want), "bytes=%llu ", (unsigned long long)BIG);
    cr_assert(strncmp(out, "HTTP/1.1 200", 12) == 0, "%s: %s", p->name, out);
    cr_assert(strstr(out, want) != NULL, "%s: %s", p->name, out);
    snprintf(want, sizeof(want), "hash=%016" PRIx64, hash);
    cr_assert(strstr(out, want) != NULL, "%s: every byte in order: %s", p->name, out);
    printf("upload %s: 100 MB streamed; RSS idle %ld KiB, peak %ld KiB (+%ld KiB)\n", p->name, idle, peak, peak - idle);
    if (wt_rss_checked())
        cr_expect_lt(peak - idle, 32 * 1024, "%s: RSS grew by %ld KiB for a 100 MB body", p->name, peak - idle);
}

/* Past the route's max_body the answer is 413, for a streamed body (found
 * while reading) and for one collected whole (found at its head). */
ParameterizedTest(wt_policy *p, upload, past_max_body_is_413)
{
    static char body[400000];
    memset(body, 'a', sizeof(body));
    const char *routes[] = {"small", "whole"};
    for (int i = 0; i < 2; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/%s/%s", p->name, routes[i]);
        size_t len;
        char *req = wt_raw_build("POST", path, "", body, sizeof(body), &len);
        wt_raw_resp r;
        wt_raw_send(srv.port, req, len, &r, 20000);
        cr_expect_eq(r.status, 413, "%s: %ld %s", path, r.status, r.body ? r.body : "");
        wt_raw_free(&r);
        free(req);
    }
}

/* A body within max_body on a route that does not stream arrives whole, in
 * one part, however the client split it. */
ParameterizedTest(wt_policy *p, upload, whole_body_in_one_part)
{
    char path[64];
    snprintf(path, sizeof(path), "/%s/whole", p->name);
    int fd = wt_raw_connect(srv.port);
    char head[160];
    int hl = snprintf(head, sizeof(head), "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n", path);
    send_all(fd, head, (size_t)hl);
    static unsigned char buf[200000];
    fill(buf, sizeof(buf), 0);
    send_all(fd, buf, 1000); /* the head and a first part, then the rest */
    send_all(fd, buf + 1000, sizeof(buf) - 1000);
    char *out = read_answer(fd);
    close(fd);
    char want[128];
    snprintf(want, sizeof(want), "bytes=200000 parts=1 hash=%016" PRIx64, fnv(1469598103934665603u, buf, sizeof(buf)));
    cr_expect(strstr(out, want) != NULL, "%s: %s", path, out);
}

/* A client that stops sending in the middle of its body: the read times
 * out after limits.request_timeout_ms (1 s here) on a streaming route, the
 * collecting route answers 408; then one that leaves mid-body frees its
 * request (nothing left in flight). */
ParameterizedTest(wt_policy *p, upload, trickle_and_leave)
{
    const char *routes[] = {"upload", "whole"};
    for (int i = 0; i < 2; i++) {
        int fd = wt_raw_connect(srv.port);
        char head[160];
        int hl = snprintf(head, sizeof(head), "POST /%s/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc",
                          p->name, routes[i]);
        send_all(fd, head, (size_t)hl);
        char *out = read_answer(fd); /* the server answers without the rest of the body */
        close(fd);
        if (i == 0)
            cr_expect(strstr(out, "read rc=-3 after 3 bytes") != NULL, "%s streaming: %s", p->name, out);
        else
            cr_expect(strncmp(out, "HTTP/1.1 408", 12) == 0, "%s whole: %s", p->name, out);
    }
    int fd = wt_raw_connect(srv.port);
    char head[160];
    int hl = snprintf(head, sizeof(head), "POST /%s/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc",
                      p->name);
    send_all(fd, head, (size_t)hl);
    wt_await_metric(&srv, "weft_inflight_requests", 1, 1, 10000);
    close(fd);
    wt_await_metric(&srv, "weft_inflight_requests", 0, 0, 10000);
}
