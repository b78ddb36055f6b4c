#include "outbound/outbound.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"
#include "version.h"

#define DEFAULT_CONNECT_TIMEOUT_MS 5000
#define DEFAULT_TIMEOUT_MS 30000
#define DEFAULT_MAX_BODY (1024 * 1024)
#define DEFAULT_MAX_CONNECTIONS 64

/* ---- responses ---- */

/* One allocation: the public part, then the header pointers and strings. */
typedef struct response {
    weft_http_response pub;
    char *body; /* malloc'd separately: it grows while it arrives */
} response;

weft_http_response *weft_http_response_error(int error, const char *text)
{
    size_t tl = strlen(text) + 1;
    response *r = calloc(1, sizeof(*r) + tl);
    if (r == NULL)
        return NULL;
    char *t = (char *)(r + 1);
    memcpy(t, text, tl);
    r->pub = (weft_http_response){.error = error, .error_text = t, .body = ""};
    return &r->pub;
}

weft_http_response *weft_http_response_new(int status, const h2o_header_t *headers, size_t n)
{
    size_t size = sizeof(response) + 2 * n * sizeof(char *);
    for (size_t i = 0; i < n; i++)
        size += headers[i].name->len + headers[i].value.len + 2;
    response *r = calloc(1, size);
    if (r == NULL)
        return NULL;
    const char **ptrs = (const char **)(r + 1);
    char *p = (char *)(ptrs + 2 * n);
    for (size_t i = 0; i < n; i++) {
        ptrs[2 * i] = p;
        memcpy(p, headers[i].name->base, headers[i].name->len);
        p += headers[i].name->len;
        *p++ = '\0';
        ptrs[2 * i + 1] = p;
        memcpy(p, headers[i].value.base, headers[i].value.len);
        p += headers[i].value.len;
        *p++ = '\0';
    }
    r->pub = (weft_http_response){.status = status, .error_text = "", .n_headers = n, .headers = ptrs, .body = ""};
    return &r->pub;
}

void weft_http_response_set_body(weft_http_response *res, char *body, size_t len)
{
    response *r = (response *)res;
    free(r->body);
    r->body = body;
    res->body = body != NULL ? body : "";
    res->body_len = len;
}

const char *weft_fetch_http_header(const weft_http_response *res, const char *name)
{
    if (res == NULL || name == NULL)
        return NULL;
    for (size_t i = 0; i < res->n_headers; i++)
        if (strcasecmp(res->headers[2 * i], name) == 0)
            return res->headers[2 * i + 1];
    return NULL;
}

void weft_fetch_http_free(weft_http_response *res)
{
    if (res == NULL)
        return;
    free(((response *)res)->body);
    free(res);
}

/* ---- the call, copied ---- */

static int token_ok(const char *s)
{
    if (s == NULL || *s == '\0')
        return 0;
    for (; *s; s++)
        if (*s <= ' ' || *s >= 0x7f || strchr("()<>@,;:\\\"/[]?={}", *s) != NULL)
            return 0;
    return 1;
}

static int value_ok(const char *s)
{
    for (; s != NULL && *s; s++)
        if ((*s < ' ' && *s != '\t') || *s == 0x7f)
            return 0;
    return s != NULL;
}

/* Reads the plugin's struct up to the fields it has. */
static weft_http_request read_request(const weft_http_request *rq)
{
    weft_http_request q = {0};
    size_t n = rq->struct_size < sizeof(q) ? rq->struct_size : sizeof(q);
    memcpy(&q, rq, n);
    return q;
}

/* The request head: method, target, Host, Content-Length, the plugin's headers. */
static char *build_head(const weft_http_request *q, const char *method, const char *path, const char *authority,
                        const char **why)
{
    char *head = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&head, &len);
    if (m == NULL) {
        *why = "out of memory";
        return NULL;
    }
    fprintf(m, "%s %s HTTP/1.1\r\nhost: %s\r\n", method, path, authority);
    if (q->body != NULL || q->body_len > 0)
        fprintf(m, "content-length: %zu\r\n", q->body_len);
    int has_ua = 0;
    for (const char *const *h = q->headers; h != NULL && h[0] != NULL; h += 2) {
        if (!token_ok(h[0]) || !value_ok(h[1])) {
            *why = "a header name or value is not valid HTTP (or lacks its value)";
            fclose(m);
            free(head);
            return NULL;
        }
        if (strcasecmp(h[0], "host") == 0 || strcasecmp(h[0], "content-length") == 0 ||
            strcasecmp(h[0], "transfer-encoding") == 0)
            continue; /* weft frames the request itself */
        has_ua |= strcasecmp(h[0], "user-agent") == 0;
        fprintf(m, "%s: %s\r\n", h[0], h[1]);
    }
    if (!has_ua)
        fputs("user-agent: weft/" WEFT_VERSION "\r\n", m);
    fputs("\r\n", m);
    if (fclose(m) != 0) {
        free(head);
        *why = "out of memory";
        return NULL;
    }
    return head;
}

/* Checks and copies everything; on a bad request fills *why (f->res stays NULL). */
static int copy_request(weft_fetch *f, const weft_http_request *q, const char **why)
{
    const char *method = q->method != NULL ? q->method : "GET";
    h2o_url_t url;
    if (!token_ok(method)) {
        *why = "the method is not an HTTP token";
        return -1;
    }
    if (q->url == NULL || h2o_url_parse(q->url, strlen(q->url), &url) != 0) {
        *why = "the URL is not an absolute http:// or https:// URL";
        return -1;
    }
    if (url.host.len == 0 || !value_ok(q->url) || strchr(q->url, ' ') != NULL) {
        *why = "the URL has no host or contains spaces or control characters";
        return -1;
    }
    f->is_ssl = url.scheme == &H2O_URL_SCHEME_HTTPS;
    f->port = h2o_url_get_port(&url);
    f->method = strdup(method);
    f->url = strdup(q->url);
    f->host = strndup(url.host.base, url.host.len);
    f->authority = strndup(url.authority.base, url.authority.len);
    f->path = url.path.len > 0 ? strndup(url.path.base, url.path.len) : strdup("/");
    f->ca_file = q->ca_file != NULL ? strdup(q->ca_file) : NULL;
    if (f->method == NULL || f->url == NULL || f->host == NULL || f->authority == NULL || f->path == NULL ||
        (q->ca_file != NULL && f->ca_file == NULL)) {
        *why = "out of memory";
        return -2;
    }
    char *head = build_head(q, method, f->path, f->authority, why);
    if (head == NULL)
        return strcmp(*why, "out of memory") == 0 ? -2 : -1;
    f->bufs[0] = h2o_iovec_init(head, strlen(head));
    if (q->body_len > 0) {
        char *body = malloc(q->body_len);
        if (body == NULL) {
            *why = "out of memory";
            return -2;
        }
        memcpy(body, q->body, q->body_len);
        f->bufs[1] = h2o_iovec_init(body, q->body_len);
    }
    return 0;
}

int weft_http_rc(int error)
{
    switch (error) {
    case WEFT_HTTP_OK: return WEFT_OK;
    case WEFT_HTTP_BAD_REQUEST: return WEFT_ERROR;
    case WEFT_HTTP_CONNECT_TIMEOUT:
    case WEFT_HTTP_TIMEOUT: return WEFT_TIMEOUT;
    case WEFT_HTTP_CANCELLED: return WEFT_CANCELLED;
    default: return WEFT_UNAVAILABLE;
    }
}

static void go(weft_fetch *f, h2o_socketpool_t *pool, h2o_http1client_ctx_t *ctx);

weft_fetch *weft_fetch_new(const weft_http_request *rq, const char *label)
{
    weft_fetch *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return NULL;
    f->label = label;
    f->go = go;
    weft_http_request q = rq != NULL && rq->struct_size >= offsetof(weft_http_request, body_len) + sizeof(size_t)
                              ? read_request(rq)
                              : (weft_http_request){0};
    const char *why = "the request is not a weft_http_request (use WEFT_HTTP_REQUEST_INIT)";
    int bad = q.struct_size == 0 ? -1 : copy_request(f, &q, &why);
    f->connect_timeout_ms = q.connect_timeout_ms > 0 ? q.connect_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS;
    f->timeout_ms = q.timeout_ms > 0 ? q.timeout_ms : DEFAULT_TIMEOUT_MS;
    f->max_body = q.max_body > 0 ? q.max_body : DEFAULT_MAX_BODY;
    f->max_connections = q.max_connections > 0 ? q.max_connections : DEFAULT_MAX_CONNECTIONS;
    if (bad != 0) {
        int error = bad == -2 ? WEFT_HTTP_NO_RESOURCES : WEFT_HTTP_BAD_REQUEST;
        if (error == WEFT_HTTP_BAD_REQUEST)
            weft_log_error("%s: http_fetch(%s): %s", label, q.url != NULL ? q.url : "NULL", why);
        f->res = weft_http_response_error(error, why);
        f->rc = weft_http_rc(error);
        f->finished = 1;
    }
    return f;
}

int weft_fetch_take(weft_fetch *f, weft_http_response **res)
{
    *res = f->res;
    f->res = NULL;
    return *res == NULL ? WEFT_UNAVAILABLE : f->rc;
}

void weft_fetch_free(weft_fetch *f)
{
    if (f == NULL)
        return;
    weft_fetch_http_free(f->res);
    free(f->body);
    free(f->bufs[0].base);
    free(f->bufs[1].base);
    free(f->method);
    free(f->url);
    free(f->host);
    free(f->authority);
    free(f->path);
    free(f->ca_file);
    free(f);
}

/* ---- on the loop ---- */

static void finish(weft_fetch *f, int error, const char *text)
{
    if (f->finished)
        return;
    f->finished = 1;
    if (error >= 0 && error < 12)
        weft_stat_add(&f->loop->stats->outbound[error], 1);
    weft_timers_cancel(f->loop->timers, &f->connect_timer);
    weft_timers_cancel(f->loop->timers, &f->total_timer);
    if (f->up != NULL)
        weft_upstream_release(f->up, f);
    if (error != WEFT_HTTP_OK) {
        weft_fetch_http_free(f->res);
        f->res = weft_http_response_error(error, text);
    } else {
        weft_http_response_set_body(f->res, f->body, f->body_len);
        f->body = NULL;
    }
    f->rc = f->res != NULL ? weft_http_rc(error) : WEFT_UNAVAILABLE;
    if (f->starting)
        f->done_pending = 1; /* delivered when weft_fetch_start returns */
    else
        f->on_done(f);
}

static int is_resolver_error(const char *e)
{
    static const int codes[] = {EAI_NONAME, EAI_AGAIN, EAI_FAIL, EAI_FAMILY, EAI_SOCKTYPE, EAI_SERVICE,
                                EAI_MEMORY, EAI_SYSTEM, EAI_OVERFLOW, EAI_NODATA, EAI_ADDRFAMILY};
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        if (strcmp(e, gai_strerror(codes[i])) == 0)
            return 1;
    return 0;
}

/* h2o reports connection failures as strings; these are 2.2.5's. */
static int connect_error(const weft_fetch *f, const char *e)
{
    if (e == h2o_socket_error_conn_fail || strcmp(e, "connection failed") == 0 ||
        strcmp(e, "failed to connect to host") == 0)
        return WEFT_HTTP_REFUSED;
    if (strcmp(e, "connection timeout") == 0)
        return WEFT_HTTP_CONNECT_TIMEOUT;
    if (strcmp(e, "socket create error") == 0 || e == h2o_socket_error_out_of_memory)
        return WEFT_HTTP_NO_RESOURCES;
    if (is_resolver_error(e))
        return WEFT_HTTP_DNS;
    if (e == h2o_socket_error_closed || e == h2o_socket_error_io)
        return WEFT_HTTP_RESET;
    /* the rest come from the TLS handshake: OpenSSL's verify texts, h2o's name checks */
    return f->is_ssl ? WEFT_HTTP_TLS : WEFT_HTTP_REFUSED;
}

/* After the request was sent: I/O errors are resets, parse errors protocol errors. */
static int exchange_error(const char *e)
{
    if (strcmp(e, "I/O timeout") == 0)
        return WEFT_HTTP_TIMEOUT;
    if (strncmp(e, "I/O error", 9) == 0)
        return WEFT_HTTP_RESET;
    return WEFT_HTTP_PROTOCOL;
}

static int on_body(h2o_http1client_t *client, const char *errstr)
{
    weft_fetch *f = client->data;
    h2o_buffer_t *in = client->sock->input;
    if (f->body_len + in->size > f->max_body) {
        f->client = NULL; /* h2o closes it when we return non-zero */
        finish(f, WEFT_HTTP_TOO_LARGE, "the response body is larger than max_body");
        return -1;
    }
    if (f->body_len + in->size + 1 > f->body_cap) {
        size_t cap = f->body_cap > 0 ? f->body_cap : 4096;
        while (cap < f->body_len + in->size + 1)
            cap *= 2;
        char *b = realloc(f->body, cap);
        if (b == NULL) {
            f->client = NULL;
            finish(f, WEFT_HTTP_NO_RESOURCES, "out of memory for the response body");
            return -1;
        }
        f->body = b;
        f->body_cap = cap;
    }
    memcpy(f->body + f->body_len, in->bytes, in->size);
    f->body_len += in->size;
    f->body[f->body_len] = '\0';
    h2o_buffer_consume(&client->sock->input, in->size);
    if (errstr == NULL)
        return 0;
    f->client = NULL; /* with an end or an error h2o closes (or pools) the connection itself */
    if (errstr == h2o_http1client_error_is_eos)
        finish(f, WEFT_HTTP_OK, "");
    else
        finish(f, exchange_error(errstr), errstr);
    return 0;
}

static h2o_http1client_body_cb on_head(h2o_http1client_t *client, const char *errstr, int minor_version, int status,
                                       h2o_iovec_t msg, h2o_header_t *headers, size_t num_headers, int rlen)
{
    (void)minor_version, (void)msg, (void)rlen;
    weft_fetch *f = client->data;
    if (errstr != NULL && errstr != h2o_http1client_error_is_eos) {
        f->client = NULL;
        finish(f, exchange_error(errstr), errstr);
        return NULL;
    }
    if ((f->res = weft_http_response_new(status, headers, num_headers)) == NULL) {
        f->client = NULL;
        finish(f, WEFT_HTTP_NO_RESOURCES, "out of memory for the response");
        return NULL;
    }
    if (errstr == h2o_http1client_error_is_eos) {
        f->client = NULL;
        finish(f, WEFT_HTTP_OK, "");
        return NULL;
    }
    return on_body;
}

static h2o_http1client_head_cb on_connect(h2o_http1client_t *client, const char *errstr, h2o_iovec_t **reqbufs,
                                          size_t *reqbufcnt, int *method_is_head)
{
    weft_fetch *f = client->data;
    if (errstr != NULL) {
        f->client = NULL;
        finish(f, connect_error(f, errstr), errstr);
        return NULL;
    }
    weft_timers_cancel(f->loop->timers, &f->connect_timer);
    *reqbufs = f->bufs;
    *reqbufcnt = f->bufs[1].len > 0 ? 2 : 1;
    *method_is_head = strcmp(f->method, "HEAD") == 0;
    return on_head;
}

static void on_connect_timeout(weft_timer *t);

/* The connect timeout starts here, not while the call waits for a slot of
 * its upstream: that wait counts against the total timeout only. */
static void go(weft_fetch *f, h2o_socketpool_t *pool, h2o_http1client_ctx_t *ctx)
{
    if (weft_timers_add(f->loop->timers, &f->connect_timer, (uint64_t)f->connect_timeout_ms, on_connect_timeout) != 0) {
        finish(f, WEFT_HTTP_NO_RESOURCES, "out of memory for a timer");
        return;
    }
    h2o_http1client_connect_with_pool(&f->client, f, ctx, pool, on_connect);
}

static void expire(weft_fetch *f, int error, const char *text)
{
    if (f->client != NULL) {
        h2o_http1client_t *c = f->client;
        f->client = NULL;
        h2o_http1client_cancel(c); /* closes the connection: the upstream sees it go */
    }
    finish(f, error, text);
}

void weft_fetch_cancel(weft_fetch *f)
{
    if (f->loop != NULL && !f->finished)
        expire(f, WEFT_HTTP_CANCELLED, "the request was cancelled (its client left or its deadline passed)");
}

static void on_connect_timeout(weft_timer *t)
{
    expire(H2O_STRUCT_FROM_MEMBER(weft_fetch, connect_timer, t), WEFT_HTTP_CONNECT_TIMEOUT,
           "no connection within connect_timeout_ms");
}

static void on_total_timeout(weft_timer *t)
{
    expire(H2O_STRUCT_FROM_MEMBER(weft_fetch, total_timer, t), WEFT_HTTP_TIMEOUT, "no complete response within timeout_ms");
}

void weft_fetch_start(weft_fetch *f, weft_loop *L)
{
    f->loop = L;
    if (f->finished) { /* refused while copying */
        if (f->res != NULL)
            weft_stat_add(&L->stats->outbound[f->res->error], 1);
        f->on_done(f);
        return;
    }
    f->starting = 1;
    const char *why = NULL;
    if ((f->up = weft_upstream_get(L, f, &why)) == NULL) {
        finish(f, f->is_ssl && strcmp(why, "out of memory") != 0 ? WEFT_HTTP_TLS : WEFT_HTTP_NO_RESOURCES, why);
    } else if (weft_timers_add(L->timers, &f->total_timer, (uint64_t)f->timeout_ms, on_total_timeout) != 0) {
        finish(f, WEFT_HTTP_NO_RESOURCES, "out of memory for a timer");
    } else {
        weft_upstream_submit(f->up, f);
    }
    f->starting = 0;
    if (f->done_pending)
        f->on_done(f);
}
