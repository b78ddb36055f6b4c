#include "dev/try.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/timer.h"
#include "config/methods.h"
#include "core/loop.h"
#include "dev/assets.h"
#include "outbound/outbound.h"
#include "request/respond.h"

/* What the page shows of a body; the rest is counted, not sent. */
#define SHOW_MAX (64 * 1024)
/* Larger answers are refused by the relay (the page says so). */
#define FETCH_MAX (8 * 1024 * 1024)
#define MAX_HEADERS 32

void weft_dev_try_box(FILE *f, const weft_generation *g)
{
    fputs("<h2>Try it</h2><div id=\"try\"><p><select id=\"try-route\" onchange=\"tryRoute()\">"
          "<option value=\"\">route&hellip;</option>",
          f);
    for (size_t i = 0; i < g->n_routes; i++) {
        const weft_route_cfg *rc = g->routes[i].cfg;
        char methods[96];
        weft_methods_format(rc->methods, methods, sizeof(methods));
        fputs("<option value=\"", f);
        weft_dev_html_escape(f, rc->path);
        fprintf(f, "\" data-methods=\"%s\">%s ", methods, methods);
        weft_dev_html_escape(f, rc->path);
        fputs(" (", f);
        weft_dev_html_escape(f, rc->plugin);
        fputs(")</option>", f);
    }
    fputs("</select> <select id=\"try-method\">", f);
    static const char *const all[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        fprintf(f, "<option>%s</option>", all[i]);
    fputs("</select> <input id=\"try-path\" size=\"36\" value=\"/\" aria-label=\"path\"> ? "
          "<input id=\"try-query\" size=\"20\" placeholder=\"query\" aria-label=\"query\"> "
          "<button id=\"try-send\" onclick=\"trySend()\">Send</button></p>"
          "<p><textarea id=\"try-headers\" rows=\"2\" cols=\"50\" placeholder=\"Name: value (one a line)\"></textarea> "
          "<textarea id=\"try-body\" rows=\"2\" cols=\"50\" placeholder=\"request body\"></textarea></p>"
          "<p>status <b id=\"try-status\">-</b> <span id=\"try-note\"></span></p>"
          "<pre id=\"try-response-headers\"></pre><pre id=\"try-response-body\"></pre></div>",
          f);
}

/* ---- the relay ---- */

static void answer(h2o_req_t *req, int status, json_t *doc)
{
    char *text = doc != NULL ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (text == NULL) {
        weft_respond_text(req, 503, "out of memory");
        return;
    }
    weft_respond(req, status, "application/json", text, strlen(text), WEFT_RESPOND_NO_STORE);
    free(text);
}

static void fail(h2o_req_t *req, int status, const char *why) { answer(req, status, json_pack("{s:s}", "error", why)); }

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if there is none. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    size_t len = s[0] < 0x80             ? 1
                 : (s[0] & 0xe0) == 0xc0 ? 2
                 : (s[0] & 0xf0) == 0xe0 ? 3
                 : (s[0] & 0xf8) == 0xf0 ? 4
                                         : 0;
    if (len == 0 || len > n || (len == 2 && s[0] < 0xc2) || (len == 4 && s[0] > 0xf4))
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((len == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (len == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
        (len == 4 && s[0] == 0xf0 && s[1] < 0x90) || (len == 4 && s[0] == 0xf4 && s[1] >= 0x90))
        return 0;
    return len;
}

/* The first `max` bytes of a body as a JSON string: bytes that are not UTF-8 become U+FFFD. */
static json_t *shown_body(const char *body, size_t len, size_t max)
{
    size_t n = len < max ? len : max;
    char *out = malloc(n * 3 + 1);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq((const unsigned char *)body + i, n - i);
        if (k > 0) {
            memcpy(out + o, body + i, k);
            o += k;
            i += k;
        } else {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
    json_t *s = json_stringn(out, o);
    free(out);
    return s;
}

typedef struct try_call {
    h2o_req_t *req;
    weft_fetch *f; /* NULL once it is over */
    uint64_t t0_ns;
} try_call;

/* The admin request is gone (client left, shutdown): the call runs out on its own. */
static void on_dispose(void *p)
{
    try_call *c = p;
    if (c->f != NULL)
        c->f->data = NULL;
}

static void on_done(weft_fetch *f)
{
    try_call *c = f->data;
    weft_http_response *res = NULL;
    weft_fetch_take(f, &res);
    weft_fetch_free(f);
    if (c == NULL) {
        weft_fetch_http_free(res);
        return;
    }
    c->f = NULL;
    if (res == NULL) {
        fail(c->req, 503, "out of memory");
        return;
    }
    if (res->error != WEFT_HTTP_OK) {
        fail(c->req, res->error == WEFT_HTTP_BAD_REQUEST ? 400 : 502, res->error_text);
        weft_fetch_http_free(res);
        return;
    }
    json_t *headers = json_array();
    for (size_t i = 0; headers != NULL && i < res->n_headers; i++)
        json_array_append_new(headers, json_pack("[s,s]", res->headers[2 * i], res->headers[2 * i + 1]));
    json_t *doc = json_pack("{s:i, s:o, s:o*, s:I, s:b, s:f}", "status", res->status, "headers", headers, "body",
                            shown_body(res->body, res->body_len, SHOW_MAX), "body_bytes", (json_int_t)res->body_len,
                            "truncated", res->body_len > SHOW_MAX, "ms",
                            (double)(weft_now_ns() - c->t0_ns) / 1e6);
    weft_fetch_http_free(res);
    answer(c->req, 200, doc);
}

/* The authority of this loop's first cleartext main listener ("127.0.0.1:8080"), loopback for a wildcard. */
static int own_authority(char *out, size_t size)
{
    const weft_loop *L = weft_loop_current;
    for (size_t i = 0; i < L->n_main_listeners; i++) {
        struct sockaddr_storage ss;
        if (L->accept_ctxs[i].ssl_ctx != NULL ||
            h2o_socket_getsockname(L->listeners[i], (struct sockaddr *)&ss) == 0)
            continue;
        char host[INET6_ADDRSTRLEN];
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            if (a->sin_addr.s_addr == htonl(INADDR_ANY))
                a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
            snprintf(out, size, "%s:%u", host, ntohs(a->sin_port));
            return 0;
        }
        if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            if (IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr))
                a->sin6_addr = in6addr_loopback;
            inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
            snprintf(out, size, "[%s]:%u", host, ntohs(a->sin6_port));
            return 0;
        }
    }
    return -1;
}

/* Name, value, ..., NULL from [[name, value], ...]; -1 if it is not that shape. */
static int header_list(const json_t *a, const char **out, size_t max)
{
    size_t n = 0, i;
    const json_t *h;
    if (a == NULL) {
        out[0] = NULL;
        return 0;
    }
    if (!json_is_array(a) || json_array_size(a) > max)
        return -1;
    json_array_foreach (a, i, h) {
        if (!json_is_array(h) || json_array_size(h) != 2 || !json_is_string(json_array_get(h, 0)) ||
            !json_is_string(json_array_get(h, 1)))
            return -1;
        out[n++] = json_string_value(json_array_get(h, 0));
        out[n++] = json_string_value(json_array_get(h, 1));
    }
    out[n] = NULL;
    return 0;
}

void weft_dev_try(h2o_req_t *req)
{
    if (!weft_respond_method_ok(req, "POST"))
        return;
    json_error_t jerr;
    json_t *in = json_loadb(req->entity.base != NULL ? req->entity.base : "", req->entity.len, 0, &jerr);
    const char *method = "GET", *path = NULL, *body = NULL, *headers[2 * MAX_HEADERS + 1];
    size_t body_len = 0;
    if (in == NULL || json_unpack_ex(in, &jerr, 0, "{s?s, s:s, s?s%}", "method", &method, "path", &path, "body",
                                     &body, &body_len) != 0) {
        char why[300];
        snprintf(why, sizeof(why), "the request is not {\"method\", \"path\", \"headers\", \"body\"}: %s", jerr.text);
        json_decref(in);
        fail(req, 400, why);
        return;
    }
    char authority[INET6_ADDRSTRLEN + 16];
    /* path and headers point into `in`: the reason is chosen before it goes */
    const char *bad = path[0] != '/' ? "the path must start with /"
                      : header_list(json_object_get(in, "headers"), headers, MAX_HEADERS) != 0
                          ? "headers must be [[name, value], ...]"
                          : NULL;
    if (bad != NULL) {
        json_decref(in);
        fail(req, 400, bad);
        return;
    }
    if (own_authority(authority, sizeof(authority)) != 0) {
        json_decref(in);
        fail(req, 502, "this server has no cleartext listener to send the request to");
        return;
    }
    char *url = NULL;
    if (asprintf(&url, "http://%s%s", authority, path) < 0)
        url = NULL;
    weft_http_request rq = WEFT_HTTP_REQUEST_INIT;
    rq.method = method;
    rq.url = url;
    rq.headers = headers;
    rq.body = body;
    rq.body_len = body != NULL ? body_len : 0;
    rq.connect_timeout_ms = 2000;
    rq.timeout_ms = 15000;
    rq.max_body = FETCH_MAX;
    rq.max_connections = 4;
    /* Everything is copied into the call: the JSON and the URL go now. */
    weft_fetch *f = url != NULL ? weft_fetch_new(&rq, "dev: try it") : NULL;
    free(url);
    json_decref(in);
    try_call *c = f != NULL ? h2o_mem_alloc_shared(&req->pool, sizeof(*c), on_dispose) : NULL;
    if (c == NULL) {
        weft_fetch_free(f);
        fail(req, 503, "out of memory");
        return;
    }
    *c = (try_call){.req = req, .f = f, .t0_ns = weft_now_ns()};
    f->data = c;
    f->on_done = on_done;
    weft_fetch_start(f, weft_loop_current);
}
