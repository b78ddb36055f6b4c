/*
 * Routes' rate_limit: per client and per route token buckets, 429 with
 * Retry-After, RateLimit and RateLimit-Policy before the plugin runs (under
 * every policy), HTTP/2 alike, the client behind a trusted proxy as the key,
 * refill, reloads that keep unchanged routes' buckets, and a flood of 100,000
 * distinct client addresses through a trusted proxy that the fixed-size
 * table absorbs (its gauge and the server's RSS stay bounded) while it still
 * limits the client that keeps coming.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fromaddr.h"
#include "harness.h"

#define RL(per, n, s, extra) " rate_limit = { per = \"" per "\"; requests = " #n "; per_s = " #s ";" extra " };"

static const char *conf_with(const char *limits, const char *routes)
{
    static char conf[4096];
    snprintf(conf, sizeof(conf),
             "threads = 2;\n"
             "listen = ( { address = \"127.0.0.1:0\"; trusted_proxies = [\"127.0.0.1\"]; } );\n"
             "limits = { %s };\n"
             "routes = (\n%s,\n" WT_HELLO_ROUTE ");\n",
             limits, routes);
    return conf;
}

static long get_status(const char *src, int port, const char *path, const char *headers, char **out)
{
    char *r = from_get(src, port, path, headers);
    long st = from_status(r);
    if (out != NULL)
        *out = r;
    else
        free(r);
    return st;
}

/* A 429 of a per-client limit of `q` per `w` seconds: Retry-After between
 * `lo` and `hi`, and the RateLimit headers that go with it. */
static void assert_refused(const char *r, long q, long w, long lo, long hi)
{
    char v[128], want[64];
    long retry = atol(from_header(r, "retry-after", v, sizeof(v)) ? v : "0");
    cr_assert(retry >= lo && retry <= hi, "Retry-After %ld: %s", retry, r);
    snprintf(want, sizeof(want), "\"client\";q=%ld;w=%ld", q, w);
    cr_assert_str_eq(from_header(r, "ratelimit-policy", v, sizeof(v)), want, "%s", r);
    snprintf(want, sizeof(want), "\"client\";r=0;t=%ld", retry);
    cr_assert_str_eq(from_header(r, "ratelimit", v, sizeof(v)), want, "%s", r);
}

ParameterizedTestParameters(ratelimit, per_client_429_with_headers_before_the_plugin) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, ratelimit, per_client_429_with_headers_before_the_plugin, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, conf_with("", WT_EACH_POLICY("/rl", "reqinfo", RL("client", 3, 3600, ""))));
    char path[64], key[160];
    snprintf(path, sizeof(path), "/%s/rl", p->name);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(get_status("127.0.0.2", s.port, path, NULL, NULL), 200, "request %d", i);
    char *r;
    cr_assert_eq(get_status("127.0.0.2", s.port, path, NULL, &r), 429, "%s", r);
    assert_refused(r, 3, 3600, 1190, 1200); /* one token every 1200 s */
    free(r);
    /* Another client has its own bucket. */
    cr_assert_eq(get_status("127.0.0.3", s.port, path, NULL, NULL), 200);
    snprintf(key, sizeof(key), "weft_rate_limited_total{route=\"%s\",kind=\"plugin\"}", path);
    cr_assert_eq(wt_metric(&s, key), 1);
    /* The plugin ran for the four it let through and not for the refused one. */
    snprintf(key, sizeof(key), "weft_requests_total{route=\"%s\",policy=\"%s\",code=\"2xx\"}", path, p->name);
    wt_wait_metric_eq(&s, key, 4, 5000);
    snprintf(key, sizeof(key), "weft_requests_total{route=\"%s\",policy=\"%s\",code=\"4xx\"}", path, p->name);
    cr_assert_eq(wt_metric(&s, key), 0);
    /* The other routes are not limited by this one. */
    cr_assert_eq(get_status("127.0.0.2", s.port, "/hello", NULL, NULL), 200);
    wt_finish(&s);
}

ParameterizedTestParameters(ratelimit, per_route_is_shared_by_every_client) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, ratelimit, per_route_is_shared_by_every_client, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, conf_with("", WT_EACH_POLICY("/rl", "reqinfo", RL("route", 2, 60, " burst = 2;"))));
    char path[64], v[128];
    snprintf(path, sizeof(path), "/%s/rl", p->name);
    cr_assert_eq(get_status("127.0.0.2", s.port, path, NULL, NULL), 200);
    cr_assert_eq(get_status("127.0.0.3", s.port, path, NULL, NULL), 200);
    char *r;
    cr_assert_eq(get_status("127.0.0.4", s.port, path, NULL, &r), 429, "%s", r);
    cr_assert_str_eq(from_header(r, "ratelimit-policy", v, sizeof(v)), "\"route\";q=2;w=60", "%s", r);
    cr_assert_not_null(from_header(r, "retry-after", v, sizeof(v)));
    cr_assert(atol(v) >= 1 && atol(v) <= 30, "%s", r);
    free(r);
    wt_finish(&s);
}

Test(ratelimit, http2_is_limited_alike, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, conf_with("", WT_ROUTE("/rl", "hello", "reactive", RL("client", 2, 3600, ""))));
    wt_req q = {.path = "/rl", .http2 = 1};
    wt_resp r;
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(wt_request(&s, &q, &r), 0);
        cr_assert_eq(r.status, 200);
        wt_resp_free(&r);
    }
    cr_assert_eq(wt_request(&s, &q, &r), 0);
    cr_assert_eq(r.status, 429, "%ld %s", r.status, r.headers);
    cr_assert(strncmp(r.headers, "HTTP/2 429", 10) == 0, "%s", r.headers);
    char v[128];
    cr_assert_str_eq(wt_header(&r, "ratelimit-policy", v, sizeof(v)), "\"client\";q=2;w=3600", "%s", r.headers);
    cr_assert_not_null(wt_header(&r, "retry-after", v, sizeof(v)), "%s", r.headers);
    cr_assert_not_null(wt_header(&r, "ratelimit", v, sizeof(v)), "%s", r.headers);
    wt_resp_free(&r);
    /* HTTP/1.1 from the same address shares the bucket. */
    cr_assert_eq(get_status("127.0.0.1", s.port, "/rl", NULL, NULL), 429);
    wt_finish(&s);
}

Test(ratelimit, the_client_behind_a_trusted_proxy_is_the_key, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, conf_with("", WT_ROUTE("/rl", "hello", "reactive", RL("client", 2, 3600, ""))));
    const char *a = "X-Forwarded-For: 198.51.100.1\r\n", *b = "X-Forwarded-For: 198.51.100.2\r\n";
    cr_assert_eq(get_status("127.0.0.1", s.port, "/rl", a, NULL), 200);
    cr_assert_eq(get_status("127.0.0.1", s.port, "/rl", a, NULL), 200);
    cr_assert_eq(get_status("127.0.0.1", s.port, "/rl", a, NULL), 429);
    cr_assert_eq(get_status("127.0.0.1", s.port, "/rl", b, NULL), 200, "another client behind the same proxy");
    /* A client that is no proxy cannot pick its key: its own address counts. */
    cr_assert_eq(get_status("127.0.0.2", s.port, "/rl", b, NULL), 200);
    cr_assert_eq(get_status("127.0.0.2", s.port, "/rl", "X-Forwarded-For: 198.51.100.9\r\n", NULL), 200);
    cr_assert_eq(get_status("127.0.0.2", s.port, "/rl", "X-Forwarded-For: 198.51.100.10\r\n", NULL), 429);
    /* An IPv6 client is its /64. */
    cr_assert_eq(get_status("127.0.0.1", s.port, "/rl", "X-Forwarded-For: 2001:db8:1:2::1\r\n", NULL), 200);
    cr_assert_eq(get_status("127.0.0.1", s.port, "/rl", "X-Forwarded-For: 2001:db8:1:2::2\r\n", NULL), 200);
    cr_assert_eq(get_status("127.0.0.1", s.port, "/rl", "X-Forwarded-For: 2001:db8:1:2:ffff::3\r\n", NULL), 429);
    cr_assert_eq(get_status("127.0.0.1", s.port, "/rl", "X-Forwarded-For: 2001:db8:1:3::1\r\n", NULL), 200);
    wt_finish(&s);
}

Test(ratelimit, a_bucket_refills_at_its_rate, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, conf_with("", WT_ROUTE("/rl", "hello", "reactive", RL("client", 4, 1, " burst = 1;"))));
    cr_assert_eq(get_status("127.0.0.2", s.port, "/rl", NULL, NULL), 200);
    char *r, v[64];
    cr_assert_eq(get_status("127.0.0.2", s.port, "/rl", NULL, &r), 429);
    cr_assert_str_eq(from_header(r, "retry-after", v, sizeof(v)), "1", "%s", r);
    free(r);
    /* A token every 250 ms: back within a second, and never twice at once (burst 1). */
    double deadline = wt_now_ms() + 5000;
    while (get_status("127.0.0.2", s.port, "/rl", NULL, NULL) != 200) {
        cr_assert_lt(wt_now_ms(), deadline, "the bucket never refilled");
        usleep(20000); /* (a) poll for the refill */
    }
    wt_finish(&s);
}

Test(ratelimit, a_top_level_rate_limit_is_every_routes_default, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, "threads = 2;\n" WT_LISTEN "\n"
                 "rate_limit = { per = \"client\"; requests = 1; per_s = 3600; };\n"
                 "routes = (\n" WT_ROUTE("/a", "hello", "reactive", "") ",\n"
                 WT_ROUTE("/b", "hello", "reactive", "") ",\n"
                 WT_ROUTE("/own", "hello", "reactive", RL("client", 2, 3600, "")) ",\n"
                 WT_ROUTE("/free", "hello", "reactive", " rate_limit = false;") ");\n");
    /* Each route has a bucket of its own, from the same default. */
    cr_assert_eq(get_status("127.0.0.2", s.port, "/a", NULL, NULL), 200);
    cr_assert_eq(get_status("127.0.0.2", s.port, "/a", NULL, NULL), 429);
    cr_assert_eq(get_status("127.0.0.2", s.port, "/b", NULL, NULL), 200);
    cr_assert_eq(get_status("127.0.0.2", s.port, "/b", NULL, NULL), 429);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(get_status("127.0.0.2", s.port, "/own", NULL, NULL), 200);
    cr_assert_eq(get_status("127.0.0.2", s.port, "/own", NULL, NULL), 429);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(get_status("127.0.0.2", s.port, "/free", NULL, NULL), 200);
    wt_finish(&s);
}

/* A directory beside the server's config ("www", relative to it) with one
 * file, for a static route. */
static void make_www(wt_server *s)
{
    wt_write_conf(s, "");
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "mkdir -p %s/www && printf 'a file\\n' > %s/www/a.txt", s->dir, s->dir);
    cr_assert_eq(system(cmd), 0);
}

#define STATIC_ROUTE(path, extra) "  { path = \"" path "\"; static = { dir = \"www\"; };" extra " }"

Test(ratelimit, a_static_route_is_limited_like_any_route, .timeout = 60)
{
    wt_server s = {0};
    make_www(&s);
    wt_start(&s, conf_with("", STATIC_ROUTE("/files", RL("client", 2, 3600, ""))));
    for (int i = 0; i < 2; i++)
        cr_assert_eq(get_status("127.0.0.2", s.port, "/files/a.txt", NULL, NULL), 200, "request %d", i);
    char *r, v[64];
    cr_assert_eq(get_status("127.0.0.2", s.port, "/files/a.txt", NULL, &r), 429, "%s", r);
    assert_refused(r, 2, 3600, 1790, 1800); /* one token every 1800 s */
    free(r);
    /* Any file of the route takes from the same bucket; another client has its own. */
    cr_assert_eq(get_status("127.0.0.2", s.port, "/files/none.txt", NULL, NULL), 429);
    cr_assert_eq(get_status("127.0.0.3", s.port, "/files/a.txt", NULL, NULL), 200);
    /* HTTP/2 alike (from 127.0.0.1: a bucket of its own). */
    wt_req q = {.path = "/files/a.txt", .http2 = 1};
    wt_resp h2;
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(wt_request(&s, &q, &h2), 0);
        cr_assert_eq(h2.status, i < 2 ? 200 : 429, "HTTP/2 request %d: %s", i, h2.headers);
        cr_assert(i < 2 || wt_header(&h2, "retry-after", v, sizeof(v)) != NULL, "%s", h2.headers);
        wt_resp_free(&h2);
    }
    cr_assert_eq(wt_metric(&s, "weft_rate_limited_total{route=\"/files\",kind=\"static\"}"), 3);
    /* Refused before the directory was read: only the files sent count as served. */
    wt_wait_metric_eq(&s, "weft_requests_total{route=\"/files\",policy=\"static\",code=\"2xx\"}", 5, 5000);
    cr_assert_eq(wt_metric(&s, "weft_requests_total{route=\"/files\",policy=\"static\",code=\"4xx\"}"), 0);
    wt_finish(&s);
}

Test(ratelimit, the_top_level_rate_limit_covers_static_routes, .timeout = 60)
{
    wt_server s = {0};
    make_www(&s);
    wt_start(&s, "threads = 2;\n" WT_LISTEN "\n"
                 "rate_limit = { per = \"route\"; requests = 1; per_s = 3600; };\n"
                 "routes = (\n" STATIC_ROUTE("/files", "") ",\n" STATIC_ROUTE("/open", " rate_limit = false;") ");\n");
    cr_assert_eq(get_status("127.0.0.2", s.port, "/files/a.txt", NULL, NULL), 200);
    char *r, v[128];
    cr_assert_eq(get_status("127.0.0.3", s.port, "/files/a.txt", NULL, &r), 429, "%s", r);
    cr_assert_str_eq(from_header(r, "ratelimit-policy", v, sizeof(v)), "\"route\";q=1;w=3600", "%s", r);
    cr_assert_not_null(from_header(r, "retry-after", v, sizeof(v)), "%s", r);
    free(r);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(get_status("127.0.0.2", s.port, "/open/a.txt", NULL, NULL), 200, "rate_limit = false: %d", i);
    cr_assert_eq(wt_metric(&s, "weft_rate_limited_total{route=\"/files\",kind=\"static\"}"), 1);
    wt_finish(&s);
}

/* A plugin's route and the static prefix beside it (its public/ folder)
 * share a path, never a bucket: each has the limit it was given. */
Test(ratelimit, a_plugin_route_and_a_static_prefix_on_one_path_keep_their_own_buckets, .timeout = 60)
{
    wt_server s = {0};
    make_www(&s);
    wt_start(&s, conf_with("", "  { path = \"/same\"; plugin = \"hello\"; dispatch = \"reactive\";" RL("client", 1, 3600, "")
                               " },\n" STATIC_ROUTE("/same", RL("client", 2, 3600, ""))));
    cr_assert_eq(get_status("127.0.0.2", s.port, "/same", NULL, NULL), 200);
    char *r;
    cr_assert_eq(get_status("127.0.0.2", s.port, "/same", NULL, &r), 429, "%s", r);
    assert_refused(r, 1, 3600, 3590, 3600);
    free(r);
    /* The plugin's bucket is empty; the files' is whole. */
    for (int i = 0; i < 2; i++)
        cr_assert_eq(get_status("127.0.0.2", s.port, "/same/a.txt", NULL, NULL), 200, "file request %d", i);
    cr_assert_eq(get_status("127.0.0.2", s.port, "/same/a.txt", NULL, &r), 429, "%s", r);
    assert_refused(r, 2, 3600, 1790, 1800);
    free(r);
    /* And the files' limit did not refill the plugin's. */
    cr_assert_eq(get_status("127.0.0.2", s.port, "/same", NULL, NULL), 429);
    cr_assert_eq(wt_metric(&s, "weft_rate_limited_total{route=\"/same\",kind=\"plugin\"}"), 2);
    cr_assert_eq(wt_metric(&s, "weft_rate_limited_total{route=\"/same\",kind=\"static\"}"), 1);
    wt_finish(&s);
}

/* A body that arrives after the head is collected first and brings the
 * request back through the dispatcher: it still takes one token, not two. */
Test(ratelimit, a_collected_body_takes_one_token, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, conf_with("", WT_ROUTE("/rl", "echo", "pool", RL("client", 2, 3600, ""))));
    size_t body = 300000;
    char *req = malloc(body + 256);
    int n = snprintf(req, 256, "POST /rl HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n", body);
    memset(req + n, 'x', body);
    for (int i = 0; i < 3; i++) {
        char *r = from_exchange("127.0.0.2", s.port, req, (size_t)n + body);
        cr_assert_eq(from_status(r), i < 2 ? 200 : 429, "request %d: %.300s", i, r);
        free(r);
    }
    free(req);
    wt_finish(&s);
}

static const char *reload_routes(int b_requests)
{
    static char routes[1024];
    snprintf(routes, sizeof(routes),
             WT_ROUTE("/a", "hello", "reactive", RL("client", 1, 3600, "")) ",\n"
             "  { path = \"/b\"; plugin = \"hello\"; dispatch = \"reactive\"; rate_limit = { per = \"client\"; "
             "requests = %d; per_s = 3600; }; },\n" WT_ROUTE("/c", "hello", "reactive", RL("route", 1, 3600, "")),
             b_requests);
    return routes;
}

Test(ratelimit, reload_keeps_the_buckets_of_unchanged_routes, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, conf_with("", reload_routes(1)));
    const char *paths[] = {"/a", "/b", "/c"};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(get_status("127.0.0.2", s.port, paths[i], NULL, NULL), 200);
        cr_assert_eq(get_status("127.0.0.2", s.port, paths[i], NULL, NULL), 429);
    }
    wt_write_conf(&s, conf_with("", reload_routes(5)));
    cr_assert_eq(kill(s.pid, SIGHUP), 0);
    /* Every loop on the new generation: each swaps when it reads its
     * message, and the last one says so. */
    free(wt_wait_log(&s, "generation 2 serves on every loop", 10000));
    cr_assert_eq(get_status("127.0.0.2", s.port, "/a", NULL, NULL), 429, "an unchanged limit forgot its client");
    cr_assert_eq(get_status("127.0.0.2", s.port, "/c", NULL, NULL), 429, "an unchanged route bucket was refilled");
    cr_assert_eq(get_status("127.0.0.2", s.port, "/b", NULL, NULL), 200, "a changed limit starts afresh");
    cr_assert_eq(wt_metric(&s, "weft_rate_limited_total{route=\"/a\",kind=\"plugin\"}"), 2);
    wt_finish(&s);
}

/* Requests pipelined on one keep-alive connection through the trusted
 * proxy, each from the client its X-Forwarded-For names; returns the
 * statuses in order. */
static void pipeline(int fd, int n, const char *const *clients, long *statuses)
{
    size_t cap = (size_t)n * 128, len = 0;
    char *out = malloc(cap);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(out + len, cap - len, "GET /rl HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: %s\r\n\r\n",
                                clients[i]);
    from_send(fd, out, len);
    free(out);
    /* Read until n answers (each has Content-Length: the 429's text or "hello"). */
    static char buf[1 << 20];
    size_t have = 0;
    int got = 0;
    double deadline = wt_now_ms() + 30000;
    while (got < n) {
        cr_assert_lt(wt_now_ms(), deadline, "only %d of %d answers", got, n);
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, 1000) <= 0)
            continue;
        ssize_t r = read(fd, buf + have, sizeof(buf) - have - 1);
        cr_assert_gt(r, 0, "closed after %d of %d answers", got, n);
        have += (size_t)r;
        buf[have] = '\0';
        char *p = buf;
        for (;;) {
            char *end = strstr(p, "\r\n\r\n");
            if (end == NULL)
                break;
            char *cl = strcasestr(p, "content-length:");
            cr_assert(cl != NULL && cl < end, "%.200s", p);
            size_t body = (size_t)atol(cl + 15);
            if ((size_t)(buf + have - (end + 4)) < body)
                break;
            statuses[got++] = atol(p + 9);
            p = end + 4 + body;
        }
        have -= (size_t)(p - buf);
        memmove(buf, p, have);
    }
}

Test(ratelimit, a_flood_of_distinct_clients_stays_bounded_and_still_limits, .timeout = 300)
{
    wt_server s = {0};
    wt_start(&s, conf_with("rate_limit_clients = 4096;",
                           WT_ROUTE("/rl", "hello", "reactive", RL("client", 1, 3600, ""))));
    /* Warm up the process (h2o's buffers, the table's first pages) before measuring. */
    int fd = from_connect("127.0.0.1", s.port);
    enum { BATCH = 500, TOTAL = 100000 };
    static char names[BATCH][24];
    const char *clients[BATCH];
    static long st[BATCH];
    for (int i = 0; i < BATCH; i++) {
        snprintf(names[i], sizeof(names[i]), "192.0.2.%d", i % 250);
        clients[i] = names[i];
    }
    pipeline(fd, BATCH, clients, st);
    long rss0 = wt_rss_kib(s.pid);
    const char *regular = "198.51.100.77"; /* every 50th request: a client that keeps coming */
    long regular_ok = 0, distinct_ok = 0, distinct = 0;
    for (int base = 0; base < TOTAL; base += BATCH) {
        for (int i = 0; i < BATCH; i++) {
            int k = base + i;
            if (k % 50 == 0) {
                clients[i] = regular;
            } else { /* 10.x.y.z: each one new */
                snprintf(names[i], sizeof(names[i]), "10.%d.%d.%d", (k >> 16) & 255, (k >> 8) & 255, k & 255);
                clients[i] = names[i];
            }
        }
        pipeline(fd, BATCH, clients, st);
        for (int i = 0; i < BATCH; i++) {
            cr_assert(st[i] == 200 || st[i] == 429, "status %ld", st[i]);
            if (clients[i] == regular)
                regular_ok += st[i] == 200;
            else
                distinct++, distinct_ok += st[i] == 200;
        }
    }
    close(fd);
    cr_assert_eq(regular_ok, 1, "the regular client got %ld answers past its limit of 1", regular_ok);
    cr_assert_eq(distinct_ok, distinct, "a new client was refused: %ld of %ld", distinct - distinct_ok, distinct);
    double used = wt_metric(&s, "weft_rate_limit_clients"), cap = wt_metric(&s, "weft_rate_limit_clients_capacity");
    cr_assert_eq(cap, 4096);
    cr_assert(used > 0 && used <= cap, "table holds %.0f of %.0f", used, cap);
    cr_assert_gt(wt_metric(&s, "weft_rate_limit_evictions_total"), 0);
    cr_assert_geq(wt_metric(&s, "weft_rate_limited_total{route=\"/rl\",kind=\"plugin\"}"), TOTAL / 50 - 1);
    long rss1 = wt_rss_kib(s.pid);
    cr_log_info("flood: RSS %ld -> %ld KiB, table %.0f/%.0f", rss0, rss1, used, cap);
    if (wt_rss_checked())
        cr_assert_lt(rss1 - rss0, 4096, "RSS grew by %ld KiB over 100,000 distinct clients", rss1 - rss0);
    wt_finish(&s);
}

static char *check(wt_server *s, const char *conf, int *rc)
{
    char *out;
    wt_write_conf(s, conf);
    const char *args[] = {"-t", "-c", s->conf, NULL};
    *rc = wt_run(&out, args, NULL);
    return out;
}

Test(ratelimit, config_errors_name_file_and_line, .timeout = 30)
{
    wt_server s = {0};
    int rc;
    char *out = check(&s,
                      WT_LISTEN "\n"
                      "limits = { rate_limit_clients = 3; };\n"
                      "routes = (\n"
                      WT_ROUTE("/a", "hello", "reactive", " rate_limit = { per = \"ip\"; requests = 0; per_s = 0; };") ",\n"
                      WT_ROUTE("/b", "hello", "reactive", " rate_limit = { per_s = 5; burst = 0; colour = 1; };") ",\n"
                      WT_ROUTE("/c", "hello", "reactive", " rate_limit = 5;") "\n"
                      ");\n"
                      "rate_limit = { per = \"route\"; };\n",
                      &rc);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_not_null(strstr(out, ":2: limits.rate_limit_clients"), "%s", out);
    cr_assert_not_null(strstr(out, ":4: routes[0].rate_limit.per: 'ip' is not one of client, route"), "%s", out);
    cr_assert_not_null(strstr(out, ":4: routes[0].rate_limit.requests"), "%s", out);
    cr_assert_not_null(strstr(out, ":4: routes[0].rate_limit.per_s"), "%s", out);
    cr_assert_not_null(strstr(out, ":5: routes[1].rate_limit.requests: is required"), "%s", out);
    cr_assert_not_null(strstr(out, ":5: routes[1].rate_limit.burst"), "%s", out);
    cr_assert_not_null(strstr(out, ":5: routes[1].rate_limit"), "%s", out);
    cr_assert_not_null(strstr(out, "colour"), "%s", out);
    cr_assert_not_null(strstr(out, ":6: routes[2]: rate_limit must be a group"), "%s", out);
    cr_assert_not_null(strstr(out, ":8: rate_limit.requests: is required"), "%s", out);
    free(out);
}
