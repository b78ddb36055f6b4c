/* Streamed responses (plugin API 1.1) through the events plugin: each event
 * reaches the client as it is produced, over HTTP/1.1 (chunked) and HTTP/2,
 * under every policy; a client that leaves frees its worker or coroutine. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define ROUTE(p) "  { path = \"/" p "/events\"; plugin = \"events\"; dispatch = \"" p "\"; }"

static wt_server srv;
static void start(void)
{
    wt_start(&srv, "threads = 2; listen = [\"127.0.0.1:0\"];\n"
                   "pools = ( { name = \"default\"; size = 8; queue = 100; } );\n"
                   "routes = (\n" ROUTE("pool") ",\n" ROUTE("coroutine") ",\n" ROUTE("reactive") ");\n");
}
static void stop(void) { wt_suite_stop(&srv); }
TestSuite(events, .init = start, .fini = stop, .timeout = 120);

typedef struct stream_rx {
    double t0, first_ms;
    char body[8192];
    size_t len;
    int stop_after_first; /* hang up once the first event arrived */
    size_t total;         /* bytes received */
    long rss_max;         /* with sample_rss: the server's highest RSS seen (KiB) */
    int sample_rss;
} stream_rx;

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
    stream_rx *rx = ud;
    size_t len = size * n;
    if (rx->first_ms < 0)
        rx->first_ms = wt_now_ms() - rx->t0;
    /* Every 256 KiB: whatever the stream holds on the server, it holds it now. */
    if (rx->sample_rss && (rx->total + len) / 262144 != rx->total / 262144) {
        long kib = wt_rss_kib(srv.pid);
        if (kib > rx->rss_max)
            rx->rss_max = kib;
    }
    rx->total += len;
    if (rx->len + len < sizeof(rx->body)) {
        memcpy(rx->body + rx->len, p, len);
        rx->len += len;
        rx->body[rx->len] = '\0';
    }
    return rx->stop_after_first ? 0 : len;
}

typedef struct hdr_rx {
    char *buf;
    size_t size, len;
} hdr_rx;

static size_t on_hdr(char *p, size_t size, size_t n, void *ud)
{
    hdr_rx *h = ud;
    size_t len = size * n;
    if (h->len + len < h->size) {
        memcpy(h->buf + h->len, p, len);
        h->len += len;
        h->buf[h->len] = '\0';
    }
    return len;
}

static double get_stream(const char *path, int h2, stream_rx *rx, char *headers, size_t hsize)
{
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", srv.port, path);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, rx);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION,
                     h2 ? (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE : (long)CURL_HTTP_VERSION_1_1);
    hdr_rx h = {headers, hsize, 0};
    if (headers != NULL) {
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_hdr);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &h);
    }
    rx->t0 = wt_now_ms();
    rx->first_ms = -1;
    curl_easy_perform(c);
    double total = wt_now_ms() - rx->t0;
    long version = 0;
    curl_easy_getinfo(c, CURLINFO_HTTP_VERSION, &version);
    if (h2)
        cr_assert_eq(version, (long)CURL_HTTP_VERSION_2_0, "not HTTP/2");
    curl_easy_cleanup(c);
    return total;
}

typedef struct ev_param {
    char policy[16];
    int h2;
} ev_param;

ParameterizedTestParameters(events, each_event_arrives_as_it_is_produced)
{
    static ev_param p[] = {{"pool", 0}, {"coroutine", 0}, {"reactive", 0},
                           {"pool", 1}, {"coroutine", 1}, {"reactive", 1}};
    return cr_make_param_array(ev_param, p, 6);
}

ParameterizedTest(ev_param *p, events, each_event_arrives_as_it_is_produced)
{
    char path[96], headers[2048] = "";
    snprintf(path, sizeof(path), "/%s/events?count=5&interval_ms=100", p->policy);
    stream_rx rx = {0};
    double total = get_stream(path, p->h2, &rx, headers, sizeof(headers));
    const char *proto = p->h2 ? "HTTP/2" : "HTTP/1.1";
    /* The server sleeps 4 x 100 ms after the first event: a streamed first
     * event arrives at least that long before the end, a buffered one at the
     * end. (Idle, it comes within ~15 ms; the 150 ms goal is logged,
     * not asserted, because a shared 2-core machine can delay any request.) */
    cr_assert_geq(total, 400.0, "%s %s: the whole took only %.0f ms: not streamed", proto, path, total);
    cr_assert_leq(rx.first_ms + 350.0, total, "%s %s: first event after %.0f ms of %.0f: buffered", proto, path,
                  rx.first_ms, total);
    cr_log_info("%s %s: first event after %.0f ms (goal < 150), whole %.0f ms", proto, path, rx.first_ms, total);
    cr_assert(strstr(rx.body, "id: 1\ndata: {\"n\":1,\"of\":5}\n\n") != NULL, "%s", rx.body);
    cr_assert(strstr(rx.body, "id: 5\ndata: {\"n\":5,\"of\":5}\n\n") != NULL, "%s", rx.body);
    cr_assert(strstr(headers, "text/event-stream") != NULL, "%s", headers);
    if (!p->h2)
        cr_assert(strcasestr(headers, "transfer-encoding: chunked") != NULL, "%s", headers);
    wt_finish(&srv);
}

/* A long reactive stream (50,000 events, each a flush and a sleep) holds
 * no more memory at its end than at its start: each wait's record is
 * reused by the next (issue 44: it was taken from the request's arena,
 * ~270 bytes an event, until the request ended). The server's RSS is read
 * while the stream runs, against a short stream's. */
ParameterizedTestParameters(events, a_long_reactive_stream_does_not_grow_the_server)
{
    static ev_param p[] = {{"reactive", 0}, {"reactive", 1}};
    return cr_make_param_array(ev_param, p, 2);
}

ParameterizedTest(ev_param *p, events, a_long_reactive_stream_does_not_grow_the_server)
{
    enum { EVENTS = 50000 };
    char path[96];
    stream_rx warm = {0};
    snprintf(path, sizeof(path), "/%s/events?count=1000&interval_ms=0", p->policy);
    get_stream(path, p->h2, &warm, NULL, 0);
    long rss0 = wt_rss_kib(srv.pid);
    stream_rx rx = {.sample_rss = 1};
    snprintf(path, sizeof(path), "/%s/events?count=%d&interval_ms=0", p->policy, EVENTS);
    double ms = get_stream(path, p->h2, &rx, NULL, 0);
    long rss1 = wt_rss_kib(srv.pid);
    if (rss1 > rx.rss_max)
        rx.rss_max = rss1;
    const char *proto = p->h2 ? "HTTP/2" : "HTTP/1.1";
    printf("events: %s %s: %d events in %.0f ms, RSS %ld KiB -> %ld KiB at most while streaming\n", p->policy,
           proto, EVENTS, ms, rss0, rx.rss_max);
    cr_assert_gt(rx.total, (size_t)EVENTS * 30, "%s %s: only %zu bytes arrived", p->policy, proto, rx.total);
    /* ~13 MiB before the fix; a few hundred KiB of the allocator's own is noise. */
    if (wt_rss_checked())
        cr_assert_lt(rx.rss_max - rss0, 4096, "%s %s: RSS grew by %ld KiB over %d events", p->policy, proto,
                     rx.rss_max - rss0, EVENTS);
    wt_finish(&srv);
}

/* Reads the raw socket until `needle` has arrived (or 10 s passed). */
static int read_until(int fd, const char *needle)
{
    char buf[4096];
    size_t len = 0;
    for (double end = wt_now_ms() + 10000; wt_now_ms() < end && len < sizeof(buf) - 1;) {
        ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
        if (n <= 0)
            return 0;
        len += (size_t)n;
        buf[len] = '\0';
        if (strstr(buf, needle) != NULL)
            return 1;
    }
    return 0;
}

/* A stream of 100 events 2 s apart would hold its handler for 200 s; the
 * client reads the first event and hangs up. Its worker / coroutine is free
 * within one interval (in practice at once: the wait for the next event is
 * cancelled). A server of its own, so other tests' requests do not count. */
ParameterizedTestParameters(events, a_client_that_leaves_frees_its_handler) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, events, a_client_that_leaves_frees_its_handler)
{
    enum { INTERVAL_MS = 2000 };
    wt_server own = {0};
    char conf[512], path[96];
    snprintf(conf, sizeof(conf),
             "threads = 1; listen = [\"127.0.0.1:0\"];\n"
             "pools = ( { name = \"default\"; size = 4; queue = 10; } );\n"
             "routes = ( { path = \"/events\"; plugin = \"events\"; dispatch = \"%s\"; } );\n",
             p->name);
    wt_start(&own, conf);
    snprintf(path, sizeof(path), "/events?count=100&interval_ms=%d", INTERVAL_MS);
    int fd = wt_send_get(&own, path);
    cr_assert(read_until(fd, "id: 1\n"), "%s: no first event", p->name);
    close(fd);
    double freed = wt_await_metric(&own, "weft_inflight_requests", 0, 0, INTERVAL_MS);
    if (strcmp(p->name, "coroutine") == 0)
        wt_await_metric(&own, "weft_coroutines_live", 0, 0, INTERVAL_MS);
    if (strcmp(p->name, "pool") == 0)
        wt_await_metric(&own, "weft_pool_busy_workers{pool=\"default\"}", 0, 0, INTERVAL_MS);
    printf("events: %s: a client that left mid-stream freed its handler in %.0f ms (interval %d ms)\n", p->name,
           freed, INTERVAL_MS);
    wt_finish(&own);
    wt_finish(&srv);
}

Test(events, bad_parameters_are_400)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/coroutine/events?count=0", NULL, &r), 0);
    cr_assert_eq(r.status, 400, "%ld %s", r.status, r.body);
    cr_assert_str_eq(r.body, "{\"error\":\"count must be an integer between 1 and 100000\",\"status\":400}");
    wt_resp_free(&r);
    cr_assert_eq(wt_http(&srv, "GET", "/reactive/events?interval_ms=x", NULL, &r), 0);
    cr_assert_eq(r.status, 400, "%ld %s", r.status, r.body);
    wt_resp_free(&r);
    wt_finish(&srv);
}
