/* Compression (`compress`, top level and per route): Accept-Encoding
 * negotiated with q-values, Vary, never on compressed types or answers that
 * carry their own Content-Encoding, min_size, bounded against a huge
 * header, under every policy, over HTTP/1.1 and HTTP/2; each event of a
 * Server-Sent Events stream decodes on its own, before the next exists
 * (tests/support/decode_client.py decompresses as it reads). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "rawhttp.h"

#define CLIENT "/usr/bin/python3 " WEFT_SOURCE_DIR "/tests/support/decode_client.py"

static const char *conf_text =
    "threads = 2; " WT_LISTEN "\n"
    "pools = ( { name = \"default\"; size = 4; queue = 100; } );\n"
    "compress = { min_size = 100; };\n"
    "routes = (\n" WT_EACH_POLICY("/typed", "typed", "") ",\n" WT_EACH_POLICY("/events", "events", "") ",\n"
    "  { path = \"/off\"; plugin = \"typed\"; dispatch = \"reactive\"; compress = false; },\n"
    "  { path = \"/gzip-only\"; plugin = \"typed\"; dispatch = \"reactive\";"
    " compress = { algorithms = [\"gzip\"]; types = [\"application/*+json\"]; min_size = 0; }; }\n"
    ");\n";

static wt_server srv;
static void start(void) { wt_start(&srv, conf_text); }
static void stop(void) { wt_suite_stop(&srv); }
TestSuite(compress, .init = start, .fini = stop, .timeout = 180);

/* What the typed fixture answers for size n. */
static char *expected_body(long n)
{
    static const char unit[] = "{\"n\":12345,\"name\":\"weft\"},";
    char *b = malloc((size_t)n + 1);
    for (long i = 0; i < n; i++)
        b[i] = unit[i % (long)(sizeof(unit) - 1)];
    b[n] = '\0';
    return b;
}

typedef struct decoded {
    int status;
    char head[8192]; /* "name: value" lines, lower-case names */
    char *body;
} decoded;

/* Runs the decoding client; fails the test when it does. */
static void fetch(const char *path, const char *ae, const char *mode, decoded *d)
{
    char cmd[16384];
    snprintf(cmd, sizeof(cmd), CLIENT " %d '%s' '%s' %s", srv.port, path, ae, mode != NULL ? mode : "");
    FILE *f = popen(cmd, "r");
    cr_assert(f != NULL);
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    size_t n;
    while ((n = fread(out + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 4096)
            out = realloc(out, cap *= 2);
    }
    out[len] = '\0';
    int rc = pclose(f);
    cr_assert_eq(rc, 0, "%s: decode_client failed (%d): %s", path, rc, out);
    char *sep = strstr(out, "\n\n");
    cr_assert(sep != NULL, "%s", out);
    *sep = '\0';
    d->status = atoi(out);
    snprintf(d->head, sizeof(d->head), "%s\n", strchr(out, '\n') != NULL ? strchr(out, '\n') + 1 : "");
    d->body = strdup(sep + 2);
    free(out);
}

static const char *head_value(const decoded *d, const char *name, char *buf, size_t size)
{
    char key[128];
    snprintf(key, sizeof(key), "\n%s: ", name);
    char line[8300];
    snprintf(line, sizeof(line), "\n%s", d->head);
    const char *p = strstr(line, key);
    if (p == NULL)
        return NULL;
    p += strlen(key);
    size_t n = strcspn(p, "\n");
    snprintf(buf, size, "%.*s", (int)n, p);
    return buf;
}

static const char *encoding_of(const decoded *d)
{
    static char buf[64];
    return head_value(d, "content-encoding", buf, sizeof(buf)) != NULL ? buf : "identity";
}

typedef struct cp {
    char policy[16];
    char alg[8];
} cp;

static cp policy_algs[9];
static void fill_policy_algs(void)
{
    const char *pol[] = {"pool", "coroutine", "reactive"}, *alg[] = {"gzip", "br", "zstd"};
    for (int i = 0; i < 9; i++) {
        snprintf(policy_algs[i].policy, sizeof(policy_algs[i].policy), "%s", pol[i / 3]);
        snprintf(policy_algs[i].alg, sizeof(policy_algs[i].alg), "%s", alg[i % 3]);
    }
}

ParameterizedTestParameters(compress, each_algorithm_decodes_to_the_answer)
{
    fill_policy_algs();
    return cr_make_param_array(cp, policy_algs, 9);
}
ParameterizedTest(cp *p, compress, each_algorithm_decodes_to_the_answer)
{
    char path[96];
    snprintf(path, sizeof(path), "/%s/typed?size=20000", p->policy);
    decoded d;
    fetch(path, p->alg, NULL, &d);
    cr_assert_eq(d.status, 200);
    cr_assert_str_eq(encoding_of(&d), p->alg, "%s", d.head);
    char vary[128], raw[32];
    cr_assert(head_value(&d, "vary", vary, sizeof(vary)) != NULL && strstr(vary, "accept-encoding") != NULL, "%s",
              d.head);
    cr_assert(head_value(&d, "content-length", raw, sizeof(raw)) == NULL, "the length is of the identity body: %s",
              d.head);
    char *want = expected_body(20000);
    cr_assert_str_eq(d.body, want);
    head_value(&d, "x-raw-bytes", raw, sizeof(raw));
    cr_assert_lt(atol(raw), 2000, "20000 repetitive bytes compress well: %s on the wire", raw);
    free(want);
    free(d.body);
}

ParameterizedTestParameters(compress, http2_answers_are_compressed_too) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, compress, http2_answers_are_compressed_too)
{
    char path[96];
    snprintf(path, sizeof(path), "/%s/typed?size=5000", p->name);
    const char *hs[] = {"Accept-Encoding: gzip;q=0.5, br", NULL};
    wt_resp r;
    wt_req q = {.path = path, .headers = hs, .http2 = 1};
    cr_assert_eq(wt_request(&srv, &q, &r), 0);
    char enc[32];
    cr_assert(wt_header(&r, "content-encoding", enc, sizeof(enc)) != NULL && strcmp(enc, "br") == 0, "%s", r.headers);
    cr_assert_lt(r.len, 1000);
    wt_resp_free(&r);
}

typedef struct neg {
    char ae[160];
    char want[10];
} neg;

ParameterizedTestParameters(compress, accept_encoding_is_negotiated)
{
    static neg t[] = {
        {"gzip", "gzip"},
        {"gzip, br, zstd", "zstd"}, /* equal q: the configured order, zstd first */
        {"gzip;q=0.5, br;q=0.8", "br"},
        {"GZIP;Q=0.9, br;q=0.1", "gzip"},
        {"zstd;q=0, *", "br"},       /* refused by name; the rest by the wildcard */
        {"gzip;q=0", "identity"},    /* q=0: not acceptable */
        {"*;q=0", "identity"},
        {"identity", "identity"},
        {"compress, deflate, x-unknown", "identity"},
        {"gzip;q=2", "identity"},    /* a malformed q counts for nothing */
        {"gzip;q=0.0001", "identity"},
        {"br;q=0.001, gzip;q=0", "br"},
        {"x-gzip", "gzip"},
        {"  gzip  ;  q=1.000  ", "gzip"},
        {"-", "identity"},           /* no Accept-Encoding at all */
        {",,,;;;,=,q=,;q", "identity"},
    };
    return cr_make_param_array(neg, t, sizeof(t) / sizeof(t[0]));
}
ParameterizedTest(neg *t, compress, accept_encoding_is_negotiated)
{
    decoded d;
    fetch("/reactive/typed?size=3000", t->ae, NULL, &d);
    cr_assert_eq(d.status, 200);
    cr_assert_str_eq(encoding_of(&d), t->want, "Accept-Encoding '%s': %s", t->ae, d.head);
    char *want = expected_body(3000);
    cr_assert_str_eq(d.body, want);
    free(want);
    /* Identity or not, the answer depends on Accept-Encoding: caches must know. */
    char vary[128];
    cr_assert(head_value(&d, "vary", vary, sizeof(vary)) != NULL && strstr(vary, "accept-encoding") != NULL, "%s",
              d.head);
    free(d.body);
}

Test(compress, a_huge_accept_encoding_is_read_only_so_far)
{
    /* 7000 bytes of codings: gzip after the first 32 is never looked at. */
    char ae[7200] = "";
    for (int i = 0; strlen(ae) < 7000; i++)
        snprintf(ae + strlen(ae), sizeof(ae) - strlen(ae), "x-coding-%d;q=0.5, ", i);
    strcat(ae, "gzip");
    decoded d;
    fetch("/reactive/typed?size=3000", ae, NULL, &d);
    cr_assert_eq(d.status, 200);
    cr_assert_str_eq(encoding_of(&d), "identity");
    free(d.body);
    /* Within the bound it counts. */
    char near[2048] = "";
    for (int i = 0; i < 31; i++)
        snprintf(near + strlen(near), sizeof(near) - strlen(near), "x-%d, ", i);
    strcat(near, "gzip");
    fetch("/reactive/typed?size=3000", near, NULL, &d);
    cr_assert_str_eq(encoding_of(&d), "gzip");
    free(d.body);
    /* And over many header lines: the bound is on codings, not per line. */
    const char *hs[41];
    for (int i = 0; i < 40; i++)
        hs[i] = "Accept-Encoding: x-a, x-b";
    hs[40] = NULL;
    const char *more[42];
    memcpy(more, hs, sizeof(hs));
    more[40] = "Accept-Encoding: gzip";
    more[41] = NULL;
    wt_resp r;
    cr_assert_eq(wt_http_headers(&srv, "GET", "/reactive/typed?size=3000", more, NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    char enc[32];
    cr_assert(wt_header(&r, "content-encoding", enc, sizeof(enc)) == NULL, "%s", r.headers);
    wt_resp_free(&r);
}

Test(compress, compressed_types_and_own_encodings_are_left_alone)
{
    decoded d;
    fetch("/pool/typed?size=3000&type=image/png", "gzip, br, zstd", NULL, &d);
    cr_assert_str_eq(encoding_of(&d), "identity", "%s", d.head);
    free(d.body);
    fetch("/pool/typed?size=3000&type=application/octet-stream", "gzip", NULL, &d);
    cr_assert_str_eq(encoding_of(&d), "identity", "not a listed type: %s", d.head);
    free(d.body);
    /* The plugin encoded it itself: weft adds no second coding. The client
     * cannot decode the fixture's fake bytes, so read the raw answer. */
    const char *hs[] = {"Accept-Encoding: gzip", NULL};
    wt_resp r;
    cr_assert_eq(wt_http_headers(&srv, "GET", "/coroutine/typed?size=3000&encoding=br", hs, NULL, &r), 0);
    char enc[64];
    cr_assert(wt_header(&r, "content-encoding", enc, sizeof(enc)) != NULL && strcmp(enc, "br") == 0, "%s", r.headers);
    cr_assert_eq(r.len, 3000, "sent as the plugin wrote it");
    wt_resp_free(&r);
}

Test(compress, min_size_head_and_route_settings)
{
    decoded d;
    fetch("/reactive/typed?size=99", "gzip", NULL, &d);
    cr_assert_str_eq(encoding_of(&d), "identity", "below min_size: %s", d.head);
    char vary[64];
    cr_assert(head_value(&d, "vary", vary, sizeof(vary)) == NULL, "never compressed at this size: %s", d.head);
    free(d.body);
    fetch("/reactive/typed?size=100", "gzip", NULL, &d);
    cr_assert_str_eq(encoding_of(&d), "gzip", "at min_size: %s", d.head);
    free(d.body);
    fetch("/reactive/typed?size=3000", "gzip", NULL, &d);
    free(d.body);
    fetch("/reactive/typed?size=3000", "gzip", "- HEAD", &d);
    cr_assert_str_eq(encoding_of(&d), "identity", "HEAD: %s", d.head);
    free(d.body);
    fetch("/off?size=3000", "gzip, br, zstd", NULL, &d);
    cr_assert_str_eq(encoding_of(&d), "identity", "compress = false: %s", d.head);
    free(d.body);
    /* The route's compress replaces the top-level one: gzip only, its own types. */
    fetch("/gzip-only?size=10&type=application/problem%2Bjson", "zstd, br, gzip;q=0.1", NULL, &d);
    cr_assert_str_eq(encoding_of(&d), "gzip", "%s", d.head);
    free(d.body);
    fetch("/gzip-only?size=3000", "gzip", NULL, &d);
    cr_assert_str_eq(encoding_of(&d), "identity", "application/json is not in this route's types: %s", d.head);
    free(d.body);
}

ParameterizedTestParameters(compress, each_event_decodes_before_the_next_exists)
{
    fill_policy_algs();
    return cr_make_param_array(cp, policy_algs, 9);
}
ParameterizedTest(cp *p, compress, each_event_decodes_before_the_next_exists)
{
    /* The second event comes a minute after the first: the client reads the
     * first (20 s deadline per read) only if its bytes were flushed alone. */
    char path[96];
    snprintf(path, sizeof(path), "/%s/events?count=2&interval_ms=60000", p->policy);
    decoded d;
    fetch(path, p->alg, "first-event", &d);
    cr_assert_eq(d.status, 200);
    cr_assert_str_eq(encoding_of(&d), p->alg, "%s", d.head);
    cr_assert(strstr(d.body, "id: 1\ndata: {\"n\":1,\"of\":2}\n\n") != NULL, "%s", d.body);
    free(d.body);
}

static int check(wt_server *s, const char *conf, char **out)
{
    wt_write_conf(s, conf);
    const char *args[] = {"-t", "-c", s->conf, NULL};
    return wt_run(out, args, NULL);
}

static void expect_refused(const char *conf, int line, const char *reason)
{
    wt_server s = {0};
    char *out;
    cr_assert_eq(check(&s, conf, &out), 1, "%s", out);
    char want[400];
    snprintf(want, sizeof(want), "%s:%d:", s.conf, line);
    cr_assert(strstr(out, want) != NULL, "want '%s' in: %s", want, out);
    cr_assert(strstr(out, reason) != NULL, "want '%s' in: %s", reason, out);
    free(out);
}

Test(compress, bad_settings_are_refused_with_file_and_line)
{
    expect_refused(WT_LISTEN "\n" WT_HELLO_ROUTES "\ncompress = {\n algorithms = [\"gzip\", \"lzma\"]; };\n", 4,
                   "compress.algorithms: 'lzma' is not one of zstd, br, gzip");
    expect_refused(WT_LISTEN "\n" WT_HELLO_ROUTES "\ncompress = {\n algorithms = [\"gzip\", \"gzip\"]; };\n", 4,
                   "'gzip' is listed twice");
    expect_refused(WT_LISTEN "\n" WT_HELLO_ROUTES "\ncompress = {\n types = [\"image/png\"]; };\n", 4,
                   "'image/png' is compressed already");
    expect_refused(WT_LISTEN "\n" WT_HELLO_ROUTES "\ncompress = {\n types = [\"image/*\"]; };\n", 4,
                   "compressed already");
    expect_refused(WT_LISTEN "\nroutes = ( { path = \"/h\"; plugin = \"hello\"; dispatch = \"reactive\";\n"
                   " compress = { types = [\"json\"]; }; } );\n",
                   3, "routes[0].compress.types: 'json' is not a media type");
    expect_refused(WT_LISTEN "\n" WT_HELLO_ROUTES "\ncompress = {\n min_size = -1; };\n", 4,
                   "compress.min_size: must be between");
    expect_refused(WT_LISTEN "\n" WT_HELLO_ROUTES "\ncompress = \"yes\";\n", 3, "compress: must be a group");
}

/* Over HTTP/2 too: libcurl decodes as it receives (CURLOPT_ACCEPT_ENCODING),
 * and the transfer stops once the first whole event is in; the second is a
 * minute away, beyond the transfer's 20 s limit. */
typedef struct h2rx {
    char body[4096];
    size_t len;
} h2rx;

static size_t h2_sink(char *p, size_t size, size_t n, void *ud)
{
    h2rx *rx = ud;
    size_t k = size * n;
    if (rx->len + k >= sizeof(rx->body))
        return 0;
    memcpy(rx->body + rx->len, p, k);
    rx->len += k;
    rx->body[rx->len] = '\0';
    return strstr(rx->body, "\n\n") != NULL ? 0 : k; /* 0 ends the transfer: the event is in */
}

static size_t h2_head(char *p, size_t size, size_t n, void *ud)
{
    char *head = ud;
    size_t k = size * n, len = strlen(head);
    if (len + k < 4096) {
        memcpy(head + len, p, k);
        head[len + k] = '\0';
    }
    return k;
}

ParameterizedTestParameters(compress, each_event_decodes_before_the_next_exists_over_http2)
{
    fill_policy_algs();
    return cr_make_param_array(cp, policy_algs, 9);
}
ParameterizedTest(cp *p, compress, each_event_decodes_before_the_next_exists_over_http2)
{
    char url[160];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/%s/events?count=2&interval_ms=60000", srv.port, p->policy);
    CURL *c = curl_easy_init();
    h2rx rx = {.len = 0};
    char head[4096] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, p->alg);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, h2_sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &rx);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, h2_head);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, head);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_cleanup(c);
    cr_assert_eq(rc, CURLE_WRITE_ERROR, "the transfer must end at the first event, not by %s (got '%s')",
                 curl_easy_strerror(rc), rx.body);
    cr_assert(strstr(rx.body, "id: 1\ndata: {\"n\":1,\"of\":2}\n\n") != NULL, "%s", rx.body);
    char want[64];
    snprintf(want, sizeof(want), "content-encoding: %s\r\n", p->alg);
    cr_assert(strstr(head, "HTTP/2 200") != NULL && strstr(head, want) != NULL, "%s", head);
}

/* What a raw connection has read until the end of the answer's head. */
static void read_head(int fd, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    while (strstr(buf, "\r\n\r\n") == NULL && len + 1 < size) {
        ssize_t n = read(fd, buf + len, size - len - 1);
        cr_assert_gt(n, 0, "the stream closed before its head: '%s'", buf);
        len += (size_t)n;
        buf[len] = '\0';
    }
}

Test(compress, past_max_compressing_responses_answers_go_out_uncompressed)
{
    /* One compressor for the whole process: an open event stream holds it. */
    wt_server s = {0};
    wt_start(&s, "threads = 2; " WT_LISTEN "\n"
                 "limits = { max_compressing_responses = 1; };\n"
                 "compress = { min_size = 100; };\n"
                 "routes = (\n"
                 "  { path = \"/typed\"; plugin = \"typed\"; dispatch = \"reactive\"; },\n"
                 "  { path = \"/events\"; plugin = \"events\"; dispatch = \"reactive\"; }\n"
                 ");\n");
    int fd = wt_raw_connect(s.port);
    static const char rq[] = "GET /events?count=100000&interval_ms=100 HTTP/1.1\r\nHost: t\r\n"
                             "Accept-Encoding: gzip\r\n\r\n";
    cr_assert_eq(write(fd, rq, sizeof(rq) - 1), (ssize_t)sizeof(rq) - 1);
    char head[4096];
    read_head(fd, head, sizeof(head));
    cr_assert(strstr(head, "content-encoding: gzip\r\n") != NULL, "%s", head);
    wt_wait_metric_eq(&s, "weft_compressing_responses", 1, 10000);

    const char *ae[] = {"Accept-Encoding: gzip", NULL};
    wt_resp r;
    cr_assert_eq(wt_http_headers(&s, "GET", "/typed?size=3000", ae, NULL, &r), 0);
    char enc[32];
    cr_assert_eq(r.status, 200);
    cr_assert(wt_header(&r, "content-encoding", enc, sizeof(enc)) == NULL, "compressed past the bound: %s", r.headers);
    cr_assert_eq(r.len, 3000);
    wt_resp_free(&r);
    cr_assert_eq(wt_metric(&s, "weft_compress_skipped_total"), 1);

    /* The stream's client leaves: its compressor's place is free again. */
    close(fd);
    wt_wait_metric_eq(&s, "weft_compressing_responses", 0, 10000);
    cr_assert_eq(wt_http_headers(&s, "GET", "/typed?size=3000", ae, NULL, &r), 0);
    cr_assert(wt_header(&r, "content-encoding", enc, sizeof(enc)) != NULL && strcmp(enc, "gzip") == 0, "%s",
              r.headers);
    wt_resp_free(&r);
    wt_stop(&s);
}
