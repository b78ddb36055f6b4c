/*
 * weft/test.h, the plugin author's test kit, on top of the harness weft's
 * own integration tests use (harness.c): one way of starting, talking to
 * and stopping a server.
 */
#include <weft/test.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev/pgcluster.h"
#include "harness.h"

#ifndef WEFT_PGDEV_SCRIPT
#error "WEFT_PGDEV_SCRIPT: the build names the pgdev script (packaging/pgdev.sh, or where it is installed)"
#endif

struct weft_test_server {
    wt_server s;
    char pgdir[320]; /* "" without a database */
    char pglog[320];
    char pgenv[4][360];
    const char *env[64]; /* the test's variables, then the database's */
};

/* ---- the optional database ---- */

/* The clusters of this test process that still run: a failed assertion
 * never reaches weft_test_stop, and a pg_ctl-started server would outlive
 * the test (Criterion ends the process with exit(), which runs these). */
static char running[4][320];

static void stop_cluster(const char *dir, const char *log)
{
    weft_pgcluster_stop(weft_pgcluster_script(WEFT_PGDEV_SCRIPT), dir, log);
    wt_rm_rf(dir);
    for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++)
        if (strcmp(running[i], dir) == 0)
            running[i][0] = '\0';
}

static void stop_leftovers(void)
{
    for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++)
        if (running[i][0] != '\0')
            stop_cluster(running[i], NULL);
}

static void keep_env(void *ud, const char *name, const char *value)
{
    weft_test_server *t = ud;
    for (size_t i = 0; i < 4; i++)
        if (t->pgenv[i][0] == '\0' || strncmp(t->pgenv[i], name, strlen(name)) == 0) {
            snprintf(t->pgenv[i], sizeof(t->pgenv[i]), "%s=%s", name, value);
            return;
        }
}

/* A private cluster in the server's directory, or a skipped test without PostgreSQL. */
static void start_database(weft_test_server *t, const char *sql)
{
    char sql_path[PATH_MAX];
    if (sql != NULL)
        cr_assert_not_null(realpath(sql, sql_path), "weft_test_start: database_sql %s: %s", sql, strerror(errno));
    size_t slot = 0;
    while (slot < sizeof(running) / sizeof(running[0]) && running[slot][0] != '\0')
        slot++;
    cr_assert_lt(slot, sizeof(running) / sizeof(running[0]), "weft_test_start: at most 4 databases per test");
    snprintf(t->pgdir, sizeof(t->pgdir), "%s/pg", t->s.dir);
    snprintf(t->pglog, sizeof(t->pglog), "%s/pgdev.log", t->s.dir);
    static int registered;
    if (!registered++)
        atexit(stop_leftovers);
    snprintf(running[slot], sizeof(running[slot]), "%s", t->pgdir);
    char why[1024];
    int rc = weft_pgcluster_start(weft_pgcluster_script(WEFT_PGDEV_SCRIPT), t->pgdir, sql != NULL ? sql_path : NULL,
                                  t->pglog, keep_env, t, why, sizeof(why));
    if (rc == WEFT_PGCLUSTER_OK)
        return;
    char *log = wt_read_file(t->pglog);
    stop_cluster(t->pgdir, NULL);
    if (rc == WEFT_PGCLUSTER_NO_SERVER)
        cr_skip_test("weft_test_start: no database for this test, so it is skipped: %s", why);
    cr_assert_fail("weft_test_start: the test's PostgreSQL did not start: %s\n%s", why, log != NULL ? log : "");
}

const char *weft_test_database_dir(const weft_test_server *t) { return t->pgdir[0] != '\0' ? t->pgdir : NULL; }

/* ---- the server ---- */

/* True if a line of the fragment starts by setting `key` (top level, as people write it). */
static int sets(const char *conf, const char *key)
{
    size_t n = strlen(key);
    for (const char *l = conf; l != NULL && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        l += strspn(l, " \t");
        if (strncmp(l, key, n) == 0 && strchr(" \t=:", l[n]) != NULL)
            return 1;
    }
    return 0;
}

weft_test_server *weft_test_start(const weft_test_options *o)
{
    char dir[PATH_MAX];
    const char *env = getenv("WEFT_TEST_PLUGIN_DIR");
    const char *want = o != NULL && o->plugin_dir != NULL ? o->plugin_dir : env != NULL && *env ? env : ".";
    cr_assert_not_null(realpath(want, dir), "weft_test_start: plugin directory %s: %s", want, strerror(errno));
    /* The harness searches WEFT_TEST_PLUGIN_DIR first (before any plugin_dirs). */
    setenv("WEFT_TEST_PLUGIN_DIR", dir, 1);
    const char *frag = o != NULL && o->config != NULL ? o->config : "";
    char *conf = NULL;
    /* Ephemeral ports, admin's too: tests run in parallel. */
    cr_assert_neq(asprintf(&conf, "%s%s%s\n", sets(frag, "listen") ? "" : "listen = [\"127.0.0.1:0\"];\n",
                           sets(frag, "admin") ? "" : "admin = { listen = \"127.0.0.1:0\"; };\n", frag),
                  -1);
    weft_test_server *t = calloc(1, sizeof(*t));
    cr_assert_not_null(t);
    wt_write_conf(&t->s, conf);
    free(conf);
    size_t n = 0;
    if (o != NULL && o->database) {
        start_database(t, o->database_sql);
        /* First: of two settings of one variable the child's getenv sees the
         * first, and the private cluster wins over any PG* of the test's. */
        for (size_t i = 0; i < 4; i++)
            if (t->pgenv[i][0] != '\0')
                t->env[n++] = t->pgenv[i];
    }
    for (size_t i = 0; o != NULL && o->env != NULL && o->env[i] != NULL; i++) {
        cr_assert_lt(n, sizeof(t->env) / sizeof(t->env[0]) - 1, "weft_test_start: too many env entries");
        t->env[n++] = o->env[i];
    }
    wt_start_env(&t->s, NULL, t->env);
    return t;
}

int weft_test_port(const weft_test_server *t) { return t->s.port; }

char *weft_test_log(const weft_test_server *t) { return wt_read_log(&t->s); }

void weft_test_stop(weft_test_server *t)
{
    if (t == NULL)
        return;
    /* The cluster goes before any assertion, which would leave it running. */
    int status = wt_stop(&t->s);
    if (t->pgdir[0] != '\0')
        stop_cluster(t->pgdir, t->pglog);
    char *log = wt_read_log(&t->s);
    free(t);
    cr_assert_eq(status, 0, "weft exited with status %d (sanitizer reports and leaks count):\n%s", status, log);
    free(log);
}

static void from_resp(weft_test_response *r, wt_resp *w)
{
    r->status = w->status;
    r->body = w->body;
    r->len = w->len;
    memcpy(r->headers, w->headers, sizeof(r->headers));
}

void weft_test_send(weft_test_server *t, const weft_test_request *q, weft_test_response *r)
{
    wt_resp w;
    wt_req req = {.method = q->method, .path = q->path, .body = q->body, .headers = q->headers, .http2 = q->http2};
    int rc = wt_request(&t->s, &req, &w);
    from_resp(r, &w);
    cr_assert_eq(rc, 0, "%s %s: no answer from weft (transport error)", q->method != NULL ? q->method : "GET",
                 q->path);
}

void weft_test_get(weft_test_server *t, const char *path, weft_test_response *r)
{
    weft_test_send(t, &(weft_test_request){.path = path}, r);
}

void weft_test_response_free(weft_test_response *r)
{
    free(r->body);
    r->body = NULL;
}

const char *weft_test_header(const weft_test_response *r, const char *name, char *buf, size_t size)
{
    wt_resp w = {.status = r->status};
    memcpy(w.headers, r->headers, sizeof(w.headers));
    return wt_header(&w, name, buf, size);
}

/* Text as a C string literal, so that whitespace and control bytes show. */
static void quoted(FILE *f, const char *s, size_t len)
{
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c == '\r')
            fputs("\\r", f);
        else if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\x%02x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* Closes the memory stream f writes into *text; returns the message. */
static char *message(FILE *f, char **text)
{
    fclose(f);
    return *text;
}

char *weft_test_check_status(const weft_test_response *r, long want)
{
    if (r->status == want)
        return NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fprintf(f, "status: expected %ld, got %ld\n  body: ", want, r->status);
    quoted(f, r->body != NULL ? r->body : "", r->len > 2000 ? 2000 : r->len);
    return message(f, &text);
}

char *weft_test_check_body(const weft_test_response *r, const char *want)
{
    const char *got = r->body != NULL ? r->body : "";
    size_t wl = strlen(want);
    if (r->len == wl && memcmp(got, want, wl) == 0)
        return NULL;
    size_t at = 0, line = 1, col = 1;
    for (; at < wl && at < r->len && got[at] == want[at]; at++) {
        col = got[at] == '\n' ? 1 : col + 1;
        line += got[at] == '\n';
    }
    /* A window around the first difference, the same for both sides. */
    size_t from = at > 30 ? at - 30 : 0;
    size_t we = wl - from < 80 ? wl - from : 80, ge = r->len - from < 80 ? r->len - from : 80;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fprintf(f, "body differs at byte %zu (line %zu, column %zu), status %ld%s\n  expected: ", at, line, col,
            r->status, from > 0 ? ", showing from the 30 bytes before" : "");
    quoted(f, want + from, we);
    fprintf(f, "%s\n  actual:   ", wl - from > we ? "..." : "");
    quoted(f, got + from, ge);
    fprintf(f, "%s\n", r->len - from > ge ? "..." : "");
    return message(f, &text);
}

char *weft_test_check_body_contains(const weft_test_response *r, const char *needle)
{
    if (r->body != NULL && strstr(r->body, needle) != NULL)
        return NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fputs("body does not contain ", f);
    quoted(f, needle, strlen(needle));
    fprintf(f, " (status %ld)\n  body: ", r->status);
    quoted(f, r->body != NULL ? r->body : "", r->len > 2000 ? 2000 : r->len);
    return message(f, &text);
}

char *weft_test_check_header(const weft_test_response *r, const char *name, const char *want)
{
    char got[4096];
    const char *v = weft_test_header(r, name, got, sizeof(got));
    if (v == NULL ? want == NULL : want != NULL && strcmp(v, want) == 0)
        return NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fprintf(f, "header %s: expected %s%s%s, got %s%s%s\n  response head:\n%s", name, want ? "\"" : "",
            want ? want : "(absent)", want ? "\"" : "", v ? "\"" : "", v ? v : "(absent)", v ? "\"" : "", r->headers);
    return message(f, &text);
}
