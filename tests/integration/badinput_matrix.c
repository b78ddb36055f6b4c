/*
 * The bad-input matrix's server, invariants and row runner (badinput.h).
 *
 * What h2o 2.2.5 does with oversized heads (measured, and asserted in
 * badinput_http.c): the request line and headers together may take up to
 * H2O_MAX_REQLEN = 8192 + 4096 * 100 = 417792 bytes and at most
 * H2O_MAX_HEADERS = 100 header fields. Within that, a 200 KiB header is an
 * ordinary request; a request target longer than weft's limits.max_uri
 * (default 8192) gets weft's own `414` before anything copies or decodes it.
 * Past h2o's limit — or with more than 100 fields — h2o answers `400 Bad
 * Request` itself and closes the connection; it never sends 431. Bodies past
 * limits.max_body get 413 (Content-Length or chunked) before any plugin runs.
 */
#include "badinput.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *conf = "threads = 2;\n"
                          WT_LISTEN "\n"
                          "admin = false;\n"
                          "limits = { max_body = 4096; request_timeout_ms = 1000; };\n"
                          "pools = ( { name = \"default\"; size = 16; queue = 1000; } );\n"
                          "database = { conninfo = \"dbname=weft\"; statement_timeout_ms = 3000; };\n"
                          "routes = (\n"
                          "  { path = \"/hello\"; plugin = \"hello\"; dispatch = \"reactive\"; methods = [\"GET\"]; },\n"
                          "  { path = \"/echo/{id}\"; plugin = \"echo\"; dispatch = \"coroutine\"; },\n"
                          WT_PERSON_ROUTES("pool", ",") WT_PERSON_ROUTES("coroutine", ",") WT_PERSON_ROUTES("reactive", "")
                          ");\n";

const char *const policies[3] = {"/pool", "/coroutine", "/reactive"};

wt_server srv;
char tag[96];
char tag_enc[300];

static void start(void)
{
    const char *pghost = getenv("PGHOST");
    cr_assert(pghost != NULL && pghost[0] != '\0',
              "PGHOST is not set: the bad-input matrix needs PostgreSQL with sql/ applied, e.g.\n"
              "  packaging/pgdev.sh start /tmp/wpg && eval \"$(packaging/pgdev.sh env /tmp/wpg)\"\n"
              "(packaging/test.sh does this itself)");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(tag, sizeof(tag), "badinput %d %ld.%09ld", (int)getpid(), (long)ts.tv_sec, ts.tv_nsec);
    wt_pct_encode(tag, tag_enc, sizeof(tag_enc));
    wt_start(&srv, conf);
}

/* Criterion 2.4.1 ignores failed assertions in a .fini (and even an abort()
 * there): the test still passes. So every test ends with finish(), which
 * stops the server and asserts a clean exit — sanitizer reports and leaks at
 * shutdown fail the test — and .fini only cleans up after a test that failed
 * before getting there. */
void finish(void)
{
    int status = wt_stop(&srv);
    char *log = wt_read_log(&srv);
    int clean = status == 0;
    if (!clean)
        cr_log_error("weft exited with %d:\n%s", status, log);
    free(log);
    cr_assert(clean, "weft exited with status %d (log above)", status);
}

static void stop(void)
{
    if (srv.pid > 0)
        wt_stop(&srv);
}

TestSuite(badinput, .init = start, .fini = stop, .timeout = 120);

/* ---- invariants every row checks ---- */

void assert_serving(const char *what)
{
    wt_raw_resp r;
    http("GET", "/hello", NULL, NULL, &r);
    cr_assert_eq(r.status, 200, "after '%s': /hello answers %ld: %s", what, r.status, r.head);
    cr_assert_str_eq(r.body, "hello", "after '%s'", what);
    wt_raw_free(&r);
    cr_assert_eq(kill(srv.pid, 0), 0, "after '%s': weft is gone", what);
}

int count_ids(const char *json)
{
    int n = 0;
    for (const char *p = strstr(json, "\"id\""); p != NULL; p = strstr(p + 1, "\"id\""))
        n++;
    return n;
}

void http(const char *method, const char *target, const char *headers, const char *body, wt_raw_resp *out)
{
    wt_raw_http(srv.port, method, target, headers, body, out);
}

/* Persons stored under this run's tag (by exact name). */
static int tagged(void)
{
    char target[512];
    snprintf(target, sizeof(target), "/coroutine/persons/name/%s?limit=1000", tag_enc);
    wt_raw_resp r;
    http("GET", target, NULL, NULL, &r);
    cr_assert_eq(r.status, 200, "%s: %ld %s", target, r.status, r.body);
    int n = count_ids(r.body);
    wt_raw_free(&r);
    return n;
}

long create_person(const char *prefix, const char *name_json)
{
    char target[64], body[1024];
    snprintf(target, sizeof(target), "%s/persons", prefix);
    snprintf(body, sizeof(body), "{\"name\": \"%s\", \"age\": 42, \"gender\": \"FEMALE\"}", name_json);
    wt_raw_resp r;
    http("POST", target, "Content-Type: application/json\r\n", body, &r);
    cr_assert_eq(r.status, 201, "POST %s %s: %ld %s", target, body, r.status, r.body);
    const char *id = strstr(r.body, "\"id\"");
    cr_assert_not_null(id, "%s", r.body);
    long v = strtol(id + 4 + strspn(id + 4, " :"), NULL, 10);
    wt_raw_free(&r);
    return v;
}

void delete_person(long id)
{
    char target[64];
    snprintf(target, sizeof(target), "/pool/persons/%ld", id);
    wt_raw_resp r;
    http("DELETE", target, NULL, NULL, &r);
    cr_assert_eq(r.status, 204, "DELETE %s: %ld %s", target, r.status, r.body);
    wt_raw_free(&r);
}

static void expand(const char *tmpl, const char *prefix, char *out, size_t size)
{
    size_t o = 0;
    for (const char *p = tmpl; *p != '\0' && o + 1 < size;) {
        const char *sub = NULL;
        if (strncmp(p, "{P}", 3) == 0)
            sub = prefix;
        else if (strncmp(p, "{T}", 3) == 0)
            sub = tag_enc;
        else if (strncmp(p, "{t}", 3) == 0)
            sub = tag;
        if (sub != NULL) {
            o += (size_t)snprintf(out + o, size - o, "%s", sub);
            p += 3;
        } else {
            out[o++] = *p++;
        }
    }
    out[o < size ? o : size - 1] = '\0';
}

/* The answer's checks are expectations, so one run lists every row that is
 * wrong; a server that stops serving or stores what it refused stops the test. */
static void run_row(const row *w, const char *prefix)
{
    char target[1024], label[1200], headers[512] = "", body[2048] = "";
    expand(w->target, prefix, target, sizeof(target));
    if (w->headers != NULL)
        expand(w->headers, prefix, headers, sizeof(headers));
    if (w->body != NULL)
        expand(w->body, prefix, body, sizeof(body));
    snprintf(label, sizeof(label), "%s [%s %.200s]", w->name, w->method, target);
    int before = tagged();

    char *req;
    size_t len;
    switch (w->gen) {
    case G_NONE:
        req = wt_raw_build(w->method, target, headers, w->body ? body : NULL, strlen(body), &len);
        break;
    case G_PATH: {
        size_t tl = strlen(target);
        char *t = malloc(tl + w->gen_size + 1);
        memcpy(t, target, tl);
        memset(t + tl, 'a', w->gen_size);
        t[tl + w->gen_size] = '\0';
        req = wt_raw_build(w->method, t, headers, NULL, 0, &len);
        free(t);
        break;
    }
    case G_HEADER_ONE: {
        char *h = malloc(w->gen_size + 32);
        int n = snprintf(h, w->gen_size + 32, "X-Big: ");
        memset(h + n, 'h', w->gen_size);
        strcpy(h + n + w->gen_size, "\r\n");
        req = wt_raw_build(w->method, target, h, NULL, 0, &len);
        free(h);
        break;
    }
    case G_HEADERS_MANY: {
        char *h = malloc(w->gen_size * 1024 + 1);
        size_t o = 0;
        for (size_t i = 0; i < w->gen_size; i++) {
            o += (size_t)sprintf(h + o, "X-H%zu: ", i);
            memset(h + o, 'h', 1000);
            o += 1000;
            o += (size_t)sprintf(h + o, "\r\n");
        }
        req = wt_raw_build(w->method, target, h, NULL, 0, &len);
        free(h);
        break;
    }
    case G_BODY:
    case G_CHUNKED: {
        size_t bl = strlen(body);
        char *b = malloc(w->gen_size + 1);
        memcpy(b, body, bl);
        memset(b + bl, ' ', w->gen_size - bl); /* still valid JSON: only its size is wrong */
        b[w->gen_size] = '\0';
        if (w->gen == G_BODY) {
            req = wt_raw_build(w->method, target, headers, b, w->gen_size, &len);
        } else {
            char h[600];
            snprintf(h, sizeof(h), "%sTransfer-Encoding: chunked\r\n", headers);
            char *c = malloc(w->gen_size * 2 + 64);
            size_t o = 0;
            for (size_t at = 0; at < w->gen_size; at += 1000) {
                size_t n = w->gen_size - at < 1000 ? w->gen_size - at : 1000;
                o += (size_t)sprintf(c + o, "%zx\r\n", n);
                memcpy(c + o, b + at, n);
                o += n;
                o += (size_t)sprintf(c + o, "\r\n");
            }
            o += (size_t)sprintf(c + o, "0\r\n\r\n");
            char *head = wt_raw_build(w->method, target, h, NULL, 0, &len);
            req = malloc(len + o);
            memcpy(req, head, len);
            memcpy(req + len, c, o);
            len += o;
            free(head);
            free(c);
        }
        free(b);
        break;
    }
    default:
        cr_assert_fail("bad row");
    }

    wt_raw_resp r;
    wt_raw_send(srv.port, req, len, &r, 20000);
    free(req);
    cr_expect(r.status == w->status || (w->status_alt != 0 && r.status == w->status_alt),
              "%s: expected %ld%s, got %ld:\n%s\n\n%.300s", label, w->status, w->status_alt ? " (or alt)" : "",
              r.status, r.head, r.body);
    if (w->want != NULL)
        cr_expect(strstr(r.body, w->want) != NULL, "%s: '%s' not in: %.300s", label, w->want, r.body);
    if (w->not_want != NULL)
        cr_expect(strstr(r.body, w->not_want) == NULL, "%s: '%s' in: %.300s", label, w->not_want, r.body);
    if (w->want_header != NULL) {
        char name[64], v[256];
        snprintf(name, sizeof(name), "%.*s", (int)strcspn(w->want_header, ":"), w->want_header);
        const char *want_v = strchr(w->want_header, ':') + 2;
        if (wt_raw_header(&r, name, v, sizeof(v)) == NULL)
            cr_expect_fail("%s: no %s header in:\n%s", label, name, r.head);
        else
            cr_expect_str_eq(v, want_v, "%s: %s", label, name);
    }
    /* answers never carry SQL, file paths or stack traces */
    cr_expect_null(strstr(r.body, "SELECT"), "%s: SQL in %s", label, r.body);
    cr_expect_null(strstr(r.body, "/tmp/"), "%s: a path in %s", label, r.body);
    wt_raw_free(&r);

    assert_serving(label);
    cr_assert_eq(tagged(), before, "%s: a refused request stored a person", label);
}

void run_rows(const row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strstr(rows[i].target, "{P}") != NULL)
            for (size_t p = 0; p < 3; p++)
                run_row(&rows[i], policies[p]);
        else
            run_row(&rows[i], "");
    }
}

