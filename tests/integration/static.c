/*
 * Static routes (docs/CONFIG.md, "Static routes"): a directory served by the
 * real weft binary, over HTTP/1.1 and HTTP/2 (h2c) alike, and what a hostile
 * client gets: traversal raw and encoded, hidden files, symlinks out of the
 * tree, Range abuse, a huge Accept-Encoding.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "h2attack.h"
#include "harness.h"

static wt_server srv;
static char www[400], out[400];

typedef struct sresp {
    long status;
    char *body;
    size_t len;
    char head[16384];
} sresp;

static size_t on_head(char *p, size_t size, size_t n, void *ud)
{
    sresp *r = ud;
    size_t have = strlen(r->head), add = size * n;
    if (have + add < sizeof(r->head)) {
        memcpy(r->head + have, p, add);
        r->head[have + add] = '\0';
    }
    return add;
}

/* One request with the path sent exactly as written (no dot-segment
 * clean-up by curl), over HTTP/1.1 or h2c. */
static void fetch(const char *method, const char *path, const char *const *headers, int http2, sresp *r)
{
    memset(r, 0, sizeof(*r));
    wt_buf b = {0};
    char url[2048];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", srv.port, path);
    CURL *c = curl_easy_init();
    struct curl_slist *list = NULL;
    for (size_t i = 0; headers != NULL && headers[i] != NULL; i++)
        list = curl_slist_append(list, headers[i]);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wt_curl_sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_head);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (http2)
        curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else if (strcmp(method, "GET") != 0)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    CURLcode rc = curl_easy_perform(c);
    cr_assert_eq(rc, CURLE_OK, "%s %s: %s", method, path, curl_easy_strerror(rc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_cleanup(c);
    curl_slist_free_all(list);
    r->body = b.data != NULL ? b.data : calloc(1, 1);
    r->len = b.len;
}

static void get(const char *path, sresp *r) { fetch("GET", path, NULL, 0, r); }

/* A response header's value (the last of that name), or NULL. */
static const char *header(const sresp *r, const char *name, char *buf, size_t size)
{
    const char *found = NULL;
    size_t nl = strlen(name);
    for (const char *p = r->head; (p = strchr(p, '\n')) != NULL;) {
        p++;
        if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ')
                v++;
            size_t n = strcspn(v, "\r\n");
            snprintf(buf, size, "%.*s", (int)n, v);
            found = buf;
        }
    }
    return found;
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char p[600];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "%s: %s", p, strerror(errno));
    fputs(text, f);
    fclose(f);
}

static unsigned char big_byte(size_t i) { return (unsigned char)(i * 7 % 251); }

static void write_big(const char *dir, const char *name, size_t size)
{
    char p[600];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    for (size_t i = 0; i < size; i++)
        fputc(big_byte(i), f);
    fclose(f);
}

static void sub(char *buf, size_t size, const char *dir, const char *name)
{
    snprintf(buf, size, "%s/%s", dir, name);
}

#define BIG_SIZE (1024 * 1024)

static void setup(void)
{
    wt_write_conf(&srv, "#\n"); /* makes srv.dir */
    sub(www, sizeof(www), srv.dir, "www");
    sub(out, sizeof(out), srv.dir, "out");
    char p[600], q[600];
    cr_assert_eq(mkdir(www, 0755), 0);
    cr_assert_eq(mkdir(out, 0755), 0);
    write_file(out, "secret.txt", "secret outside the tree\n");
    write_file(www, "a.txt", "hello");
    write_file(www, ".env", "PASSWORD=hidden\n");
    sub(p, sizeof(p), www, ".git");
    cr_assert_eq(mkdir(p, 0755), 0);
    write_file(p, "config", "hidden git config\n");
    sub(p, sizeof(p), www, "sub");
    cr_assert_eq(mkdir(p, 0755), 0);
    write_file(p, "index.html", "<p>index of sub</p>");
    sub(p, sizeof(p), www, "nolist");
    cr_assert_eq(mkdir(p, 0755), 0);
    write_file(p, "inside.txt", "listed nowhere");
    write_file(www, "style.css", "identity css");
    write_file(www, "style.css.br", "brotli css");
    write_file(www, "style.css.gz", "gzip css");
    write_file(www, "style.css.zst", "zstd css");
    write_file(www, "page.html", "<html></html>");
    write_file(www, "data.json", "{}");
    write_big(www, "big.bin", BIG_SIZE);
    /* Symlinks: one out of the tree (absolute), one out through "..", a
     * directory out, one inside (allowed), a compressed sibling out. */
    sub(p, sizeof(p), www, "link_out.txt");
    sub(q, sizeof(q), out, "secret.txt");
    cr_assert_eq(symlink(q, p), 0);
    sub(p, sizeof(p), www, "link_up.txt");
    cr_assert_eq(symlink("../out/secret.txt", p), 0);
    sub(p, sizeof(p), www, "dirlink");
    cr_assert_eq(symlink("../out", p), 0);
    sub(p, sizeof(p), www, "link_in.txt");
    cr_assert_eq(symlink("a.txt", p), 0);
    write_file(www, "sneaky.css", "identity sneaky");
    sub(p, sizeof(p), www, "sneaky.css.gz");
    cr_assert_eq(symlink(q, p), 0);
    wt_startf(&srv,
              "threads = 2;\n" WT_LISTEN "\n" WT_ADMIN "\n"
              "routes = (\n"
              "  { path = \"/s\"; static = { dir = \"www\"; index = [\"index.html\"]; }; },\n"
              "  { path = \"/f\"; static = { dir = \"www\"; follow_symlinks = true; }; },\n"
              "  { path = \"/s/api\"; plugin = \"hello\"; dispatch = \"reactive\"; },\n"
              WT_HELLO_ROUTE "\n"
              ");\n");
}

static void teardown(void)
{
    wt_suite_stop(&srv);
    wt_rm_rf(srv.dir);
}

TestSuite(static_files, .init = setup, .fini = teardown, .timeout = 120);

Test(static_files, serves_a_file_with_type_etag_and_last_modified_and_head_without_body)
{
    for (int h2 = 0; h2 <= 1; h2++) {
        sresp r;
        char v[256];
        fetch("GET", "/s/a.txt", NULL, h2, &r);
        cr_assert_eq(r.status, 200, "%s", r.head);
        cr_assert_str_eq(r.body, "hello");
        cr_assert_not_null(header(&r, "content-type", v, sizeof(v)));
        cr_assert(strncmp(v, "text/plain", 10) == 0, "%s", v);
        cr_assert_not_null(header(&r, "etag", v, sizeof(v)), "%s", r.head);
        cr_assert_not_null(header(&r, "last-modified", v, sizeof(v)), "%s", r.head);
        free(r.body);
        fetch("HEAD", "/s/a.txt", NULL, h2, &r);
        cr_assert_eq(r.status, 200);
        cr_assert_eq(r.len, 0);
        cr_assert_str_eq(header(&r, "content-length", v, sizeof(v)), "5");
        free(r.body);
    }
}

Test(static_files, mime_types_come_from_etc_mime_types)
{
    if (access("/etc/mime.types", R_OK) != 0)
        cr_skip_test("no /etc/mime.types (Debian package media-types)");
    const char *cases[][2] = {{"/s/page.html", "text/html"}, {"/s/style.css", "text/css"},
                              {"/s/data.json", "application/json"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sresp r;
        char v[256];
        get(cases[i][0], &r);
        cr_assert_eq(r.status, 200);
        cr_assert(header(&r, "content-type", v, sizeof(v)) != NULL && strncmp(v, cases[i][1], strlen(cases[i][1])) == 0,
                  "%s: %s", cases[i][0], r.head);
        free(r.body);
    }
}

Test(static_files, conditional_requests_answer_304)
{
    sresp r;
    char etag[256], lm[256], h1[300], h2[300];
    get("/s/a.txt", &r);
    cr_assert_not_null(header(&r, "etag", etag, sizeof(etag)));
    cr_assert_not_null(header(&r, "last-modified", lm, sizeof(lm)));
    free(r.body);
    snprintf(h1, sizeof(h1), "If-None-Match: %s", etag);
    const char *inm[] = {h1, NULL};
    fetch("GET", "/s/a.txt", inm, 0, &r);
    cr_assert_eq(r.status, 304, "%s", r.head);
    cr_assert_eq(r.len, 0);
    free(r.body);
    snprintf(h2, sizeof(h2), "If-Modified-Since: %s", lm);
    const char *ims[] = {h2, NULL};
    fetch("GET", "/s/a.txt", ims, 1, &r);
    cr_assert_eq(r.status, 304, "%s", r.head);
    free(r.body);
    const char *other[] = {"If-None-Match: \"not-this-one\"", NULL};
    fetch("GET", "/s/a.txt", other, 0, &r);
    cr_assert_eq(r.status, 200);
    free(r.body);
}

Test(static_files, other_methods_get_405_with_allow)
{
    const char *methods[] = {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        sresp r;
        char v[256];
        fetch(methods[i], "/s/a.txt", NULL, i % 2, &r);
        cr_assert_eq(r.status, 405, "%s: %ld", methods[i], r.status);
        cr_assert_not_null(header(&r, "allow", v, sizeof(v)), "%s", r.head);
        cr_assert_str_eq(v, "GET, HEAD");
        free(r.body);
    }
}

Test(static_files, index_redirect_and_no_directory_listing)
{
    sresp r;
    char v[256];
    get("/s/sub/", &r);
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.body, "<p>index of sub</p>");
    free(r.body);
    get("/s/sub", &r);
    cr_assert_eq(r.status, 301);
    cr_assert_str_eq(header(&r, "location", v, sizeof(v)), "/s/sub/");
    free(r.body);
    get("/s/nolist/", &r);
    cr_assert_eq(r.status, 404, "%s", r.body);
    cr_assert_null(strstr(r.body, "inside.txt"), "a listing: %s", r.body);
    free(r.body);
    get("/s/nolist/inside.txt", &r);
    cr_assert_eq(r.status, 200);
    free(r.body);
}

Test(static_files, plugin_routes_under_the_prefix_win_and_count_like_any_route)
{
    sresp r;
    get("/s/api", &r);
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.body, "hello");
    free(r.body);
    get("/s/a.txt", &r);
    free(r.body);
    wt_wait_metric(&srv, "weft_requests_total{route=\"/s\",policy=\"static\",code=\"2xx\"}", 1, 10000);
    get("/s/missing.txt", &r);
    cr_assert_eq(r.status, 404);
    free(r.body);
    wt_wait_metric(&srv, "weft_requests_total{route=\"/s\",policy=\"static\",code=\"4xx\"}", 1, 10000);
}

/* What must never come back, whatever the path: the files outside the
 * tree, and the hidden ones inside it. */
static void assert_nothing_leaks(const char *path, const sresp *r)
{
    cr_assert_neq(r->status, 200, "%s answered 200: %s", path, r->body);
    cr_assert_null(strstr(r->body, "secret"), "%s leaked: %s", path, r->body);
    cr_assert_null(strstr(r->body, "hidden"), "%s leaked: %s", path, r->body);
    cr_assert_null(strstr(r->body, "root:"), "%s leaked: %s", path, r->body);
}

Test(static_files, traversal_raw_and_encoded_never_leaves_the_directory)
{
    const char *paths[] = {
        "/s/../out/secret.txt",         "/s/%2e%2e/out/secret.txt",      "/s/%2E%2E/%2E%2E/etc/passwd",
        "/s/.%2e/out/secret.txt",       "/s/..%2fout%2fsecret.txt",      "/s/%2e%2e%2fout%2fsecret.txt",
        "/s/..%2Fout%2Fsecret.txt",     "/s/%252e%252e/out/secret.txt",  "/s/..%5cout%5csecret.txt",
        "/s//..//..//etc/passwd",       "/s/a.txt%00.html",              "/s/%00",
        "/s/sub/../../out/secret.txt",  "/../../../etc/passwd",          "/s/..;/out/secret.txt",
        "/s/%2fetc%2fpasswd",           "/s/%2Fetc/passwd",              "/s/..",
        "/s/dirlink/secret.txt",        "/s/link_out.txt",               "/s/link_up.txt",
        "/s/.env",                      "/s/%2eenv",                     "/s/%2Eenv",
        "/s/.git/config",               "/s/%2egit/config",              "/s/sub/../.env",
        "/s/sub/%2e%2e/.git/config",    "/s/a%zz",                       "/s/a.txt/../.env",
    };
    for (int h2 = 0; h2 <= 1; h2++)
        for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
            sresp r;
            fetch("GET", paths[i], NULL, h2, &r);
            assert_nothing_leaks(paths[i], &r);
            free(r.body);
        }
    /* The server still serves afterwards. */
    sresp r;
    get("/s/a.txt", &r);
    cr_assert_eq(r.status, 200);
    free(r.body);
}

Test(static_files, symlinks_inside_the_tree_are_served_and_outside_only_with_follow_symlinks)
{
    sresp r;
    get("/s/link_in.txt", &r);
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.body, "hello");
    free(r.body);
    get("/f/link_out.txt", &r);
    cr_assert_eq(r.status, 200, "follow_symlinks = true serves it");
    cr_assert(strstr(r.body, "secret") != NULL);
    free(r.body);
    /* Hidden files stay hidden with follow_symlinks too. */
    get("/f/.env", &r);
    assert_nothing_leaks("/f/.env", &r);
    free(r.body);
}

Test(static_files, precompressed_siblings_follow_accept_encoding_with_vary)
{
    const char *cases[][3] = {{"br", "brotli css", "br"},
                              {"gzip", "gzip css", "gzip"},
                              {"zstd", "zstd css", "zstd"},
                              {"gzip, br", "brotli css", "br"},
                              {"identity", "identity css", NULL}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char ae[64], v[256];
        snprintf(ae, sizeof(ae), "Accept-Encoding: %s", cases[i][0]);
        const char *h[] = {ae, NULL};
        sresp r;
        fetch("GET", "/s/style.css", h, (int)(i % 2), &r);
        cr_assert_eq(r.status, 200);
        cr_assert_str_eq(r.body, cases[i][1], "%s: %s", cases[i][0], r.body);
        const char *ce = header(&r, "content-encoding", v, sizeof(v));
        if (cases[i][2] == NULL)
            cr_assert_null(ce, "%s", r.head);
        else
            cr_assert(ce != NULL && strcmp(ce, cases[i][2]) == 0, "%s: %s", cases[i][0], r.head);
        cr_assert(header(&r, "vary", v, sizeof(v)) != NULL && strcasestr(v, "accept-encoding") != NULL, "%s",
                  r.head);
        free(r.body);
    }
    /* A sibling that is a symlink out of the tree is never served: the
     * request is refused whole rather than fall back to guessing. */
    const char *gz[] = {"Accept-Encoding: gzip", NULL};
    sresp r;
    fetch("GET", "/s/sneaky.css", gz, 0, &r);
    assert_nothing_leaks("/s/sneaky.css (gzip)", &r);
    free(r.body);
    get("/s/sneaky.css", &r);
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.body, "identity sneaky");
    free(r.body);
}

Test(static_files, huge_accept_encoding_is_answered_once)
{
    /* ~7 KB of codings, under limits.max_header_line: parsed, not choked on. */
    char *ae = malloc(8000);
    strcpy(ae, "Accept-Encoding: ");
    while (strlen(ae) < 7000)
        strcat(ae, "x-unknown;q=0.001, ");
    strcat(ae, "gzip");
    const char *h[] = {ae, NULL};
    for (int h2 = 0; h2 <= 1; h2++) {
        sresp r;
        fetch("GET", "/s/style.css", h, h2, &r);
        cr_assert_eq(r.status, 200);
        cr_assert_str_eq(r.body, "gzip css");
        free(r.body);
    }
    free(ae);
}

static void range(const char *value, int h2, sresp *r)
{
    char h[4096];
    snprintf(h, sizeof(h), "Range: %s", value);
    const char *hs[] = {h, NULL};
    fetch("GET", "/s/big.bin", hs, h2, r);
}

Test(static_files, ranges_206_and_416)
{
    for (int h2 = 0; h2 <= 1; h2++) {
        sresp r;
        char v[256];
        range("bytes=10-19", h2, &r);
        cr_assert_eq(r.status, 206);
        cr_assert_eq(r.len, 10);
        for (size_t i = 0; i < 10; i++)
            cr_assert_eq((unsigned char)r.body[i], big_byte(10 + i));
        cr_assert_str_eq(header(&r, "content-range", v, sizeof(v)), "bytes 10-19/1048576");
        free(r.body);
        range("bytes=-3", h2, &r);
        cr_assert_eq(r.status, 206);
        cr_assert_eq(r.len, 3);
        cr_assert_eq((unsigned char)r.body[0], big_byte(BIG_SIZE - 3));
        free(r.body);
        range("bytes=5000000-", h2, &r);
        cr_assert_eq(r.status, 416, "%s", r.head);
        cr_assert_str_eq(header(&r, "content-range", v, sizeof(v)), "bytes */1048576");
        free(r.body);
        range("bytes=0-1,100-101", h2, &r);
        cr_assert_eq(r.status, 206);
        cr_assert(header(&r, "content-type", v, sizeof(v)) != NULL && strstr(v, "multipart/byteranges") != NULL);
        cr_assert_lt(r.len, 1000);
        free(r.body);
    }
}

Test(static_files, many_or_overlapping_ranges_get_the_file_once_never_more)
{
    /* 400 one-byte ranges, the same range 200 times, overlapping and out of
     * order lists: each answered with the whole file once (200). */
    char *many = malloc(16384), *same = malloc(16384);
    strcpy(many, "bytes=");
    strcpy(same, "bytes=");
    for (int i = 0; i < 400; i++)
        sprintf(many + strlen(many), "%s%d-%d", i ? "," : "", i * 2, i * 2);
    for (int i = 0; i < 200; i++)
        strcat(same, i ? ",0-" : "0-");
    const char *abuse[] = {many, same, "bytes=0-99,50-149", "bytes=100-199,0-9", "bytes=-500,0-", "bytes=0-,0-,0-"};
    for (int h2 = 0; h2 <= 1; h2++)
        for (size_t i = 0; i < sizeof(abuse) / sizeof(abuse[0]); i++) {
            sresp r;
            range(abuse[i], h2, &r);
            cr_assert_eq(r.status, 200, "%.40s...: %ld", abuse[i], r.status);
            cr_assert_eq(r.len, BIG_SIZE, "%.40s...: %zu bytes", abuse[i], r.len);
            free(r.body);
        }
    free(many);
    free(same);
}

/* GET over one kept-alive connection (so always the same loop); the body into buf. */
static long get_on(CURL *c, const char *path, char *buf, size_t size)
{
    char url[600];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", srv.port, path);
    wt_buf b = {0};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wt_curl_sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    cr_assert_eq(curl_easy_perform(c), CURLE_OK);
    long st = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
    snprintf(buf, size, "%s", b.data != NULL ? b.data : "");
    free(b.data);
    return st;
}

Test(static_files, a_file_swapped_for_a_symlink_out_is_refused_once_the_loop_forgets_its_check)
{
    /* A loop remembers a passed check until its next 0.1 s tick, as h2o
     * keeps the descriptor it opened: until then the old file is served,
     * after it the symlink is refused; never the target outside. One
     * connection, so one loop, and its memory is what is tested. */
    char p[600], tmp[600], q[600], body[256];
    write_file(www, "swap.txt", "before the swap");
    CURL *c = curl_easy_init();
    long n = 0;
    cr_assert_eq(get_on(c, "/s/swap.txt", body, sizeof(body)), 200);
    curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &n);
    cr_assert_eq(n, 1);
    snprintf(p, sizeof(p), "%s/swap.txt", www);
    snprintf(tmp, sizeof(tmp), "%s/.swap.tmp", www);
    snprintf(q, sizeof(q), "%s/secret.txt", out);
    cr_assert_eq(symlink(q, tmp), 0);
    cr_assert_eq(rename(tmp, p), 0);
    double t0 = wt_now_ms();
    for (;;) {
        long st = get_on(c, "/s/swap.txt", body, sizeof(body));
        curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &n);
        cr_assert_eq(n, 0, "the connection was not reused: another loop may have answered");
        cr_assert_null(strstr(body, "secret"), "the symlink's target was served: %s", body);
        if (st == 404)
            break;
        cr_assert_eq(st, 200);
        cr_assert_lt(wt_now_ms() - t0, 10000, "still served 10 s after the swap");
        usleep(5000);
    }
    curl_easy_cleanup(c);
}

/* ---- the connection's abuse budget (http/admit.c), as for a plugin ---- */

/* A server of its own with a TLS listener (HTTP/2 by ALPN) serving the
 * suite's directory, under `limits`; its TLS port. */
static int start_tls_static(wt_server *s, const char *limits)
{
    wt_write_conf(s, "#\n");
    wt_tls_cert(s->dir);
    wt_startf(s,
              "threads = 2; admin = false; limits = { %s };\n"
              "listen = ( \"127.0.0.1:0\", { address = \"127.0.0.1:0\"; tls = { certificate = \"server.crt\"; "
              "key = \"server.key\"; }; } );\n"
              "routes = ( { path = \"/s\"; static = { dir = \"%s\"; }; } );\n",
              limits, www);
    return wt_tls_port(s);
}

/* rapid_reset.py's `n` streams of `path` (reset, or "keep": left unread):
 * whether weft ended the connection with GOAWAY. */
static int h2_client(int port, const char *path, int n, const char *keep)
{
    wt_h2_run run;
    wt_h2_streams(port, path, n, keep, &run);
    cr_log_info("%s x%d %s: sent %d, closed %d, goaway %d", path, n, keep, run.sent, run.closed, run.goaway);
    return run.closed && run.goaway;
}

static void assert_closed_for(wt_server *s, const char *limit)
{
    cr_assert_eq(wt_metric(s, "weft_connections_closed_abuse_total"), 1);
    char *log = wt_read_log(s);
    cr_assert(strstr(log, limit) != NULL, "no line naming %s:\n%s", limit, log);
    free(log);
    /* Every download the connection started has ended (released at close). */
    wt_await_metric(s, "weft_inflight_requests", 0, 0, 10000);
    wt_finish(s);
}

Test(static_files, downloads_left_unread_count_in_the_connection_s_work_in_flight)
{
    wt_server s = {0};
    int port = start_tls_static(&s, "max_inflight_per_conn = 5;");
    /* Ten streams of a 1 MiB file stall at HTTP/2's 64 KiB window: past
     * five in flight on one connection, it is closed like a plugin's. */
    cr_assert(h2_client(port, "/s/big.bin", 10, "keep"), "10 downloads in flight on a connection capped at 5");
    assert_closed_for(&s, "limits.max_inflight_per_conn");
}

Test(static_files, streams_reset_before_their_file_was_sent_are_charged)
{
    wt_server s = {0};
    int port = start_tls_static(&s, "max_resets = 50;");
    /* HEADERS then RST_STREAM, over and over: each stream's file was not
     * all sent, so each counts against limits.max_resets. */
    cr_assert(h2_client(port, "/s/big.bin", 20000, ""), "a Rapid Reset on a static file must close the connection");
    assert_closed_for(&s, "limits.max_resets");
}

static long write_calls(void)
{
    long n = wt_write_syscalls(srv.pid);
    cr_assert_geq(n, 0, "/proc/%d/io unreadable", (int)srv.pid);
    return n;
}

Test(static_files, a_small_file_leaves_with_its_head_in_one_write_a_large_one_by_sendfile)
{
    /* 40 answers of a 5-byte file over HTTP/1.1: no sendfile at all; 40 of
     * the 1 MB file: at least one each. Both bodies arrive whole. */
    CURL *c = curl_easy_init();
    char body[64];
    cr_assert_eq(get_on(c, "/s/a.txt", body, sizeof(body)), 200);
    long before = write_calls();
    for (int i = 0; i < 40; i++) {
        cr_assert_eq(get_on(c, "/s/a.txt", body, sizeof(body)), 200);
        cr_assert_str_eq(body, "hello");
    }
    long small = write_calls() - before;
    curl_easy_cleanup(c);
    sresp r;
    before = write_calls();
    for (int i = 0; i < 40; i++) {
        get("/s/big.bin", &r);
        cr_assert_eq(r.status, 200);
        cr_assert_eq(r.len, BIG_SIZE);
        free(r.body);
    }
    long large = write_calls() - before;
    cr_assert_lt(small, 10, "40 answers of 5 bytes took %ld write calls: the body went by sendfile", small);
    cr_assert_geq(large, 40, "40 answers of 1 MB took %ld write calls: no sendfile", large);
}
