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

#include "harness.h"

struct weft_test_server {
    wt_server s;
};

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
    wt_start_env(&t->s, conf, o != NULL ? o->env : NULL);
    free(conf);
    return t;
}

int weft_test_port(const weft_test_server *t) { return t->s.port; }

char *weft_test_log(const weft_test_server *t) { return wt_read_log(&t->s); }

void weft_test_stop(weft_test_server *t)
{
    if (t == NULL)
        return;
    wt_server s = t->s;
    free(t);
    wt_finish(&s);
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
