#include "outbound/outbound.h"

#include <ctype.h>
#include <stdatomic.h>
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

static atomic_uint_fast64_t retries;

uint64_t weft_fetch_retries(void) { return atomic_load_explicit(&retries, memory_order_relaxed); }

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

/* The plugin's headers, checked and copied with lower-case names (HTTP/2
 * wants them so, HTTP/1.1 does not mind); Host, Content-Length and
 * Transfer-Encoding are weft's to frame. */
static int copy_headers(weft_fetch *f, const weft_http_request *q, const char **why)
{
    size_t n = 0;
    for (const char *const *h = q->headers; h != NULL && h[0] != NULL; h += 2) {
        if (!token_ok(h[0]) || !value_ok(h[1])) {
            *why = "a header name or value is not valid HTTP (or lacks its value)";
            return -1;
        }
        n++;
    }
    if (n > 0 && ((f->hdr_names = calloc(n, sizeof(char *))) == NULL ||
                  (f->hdr_values = calloc(n, sizeof(char *))) == NULL)) {
        *why = "out of memory";
        return -2;
    }
    for (const char *const *h = q->headers; h != NULL && h[0] != NULL; h += 2) {
        if (strcasecmp(h[0], "host") == 0 || strcasecmp(h[0], "content-length") == 0 ||
            strcasecmp(h[0], "transfer-encoding") == 0 || strcasecmp(h[0], "connection") == 0)
            continue;
        f->has_ua |= strcasecmp(h[0], "user-agent") == 0;
        char *name = strdup(h[0]), *value = strdup(h[1]);
        if (name == NULL || value == NULL) {
            free(name);
            free(value);
            *why = "out of memory";
            return -2;
        }
        for (char *c = name; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        f->hdr_names[f->n_hdrs] = name;
        f->hdr_values[f->n_hdrs++] = value;
    }
    return 0;
}

/* Checks and copies everything; on a bad request fills *why (f->res stays NULL). */
static int copy_request(weft_fetch *f, const weft_http_request *q, const char **why)
{
    const char *method = q->method != NULL ? q->method : "GET";
    if (!token_ok(method)) {
        *why = "the method is not an HTTP token";
        return -1;
    }
    /* Parsed here to check it (any thread, a pool of its own); the loop
     * parses its copy again into the call's pool (weft_fetch_start). */
    h2o_mem_pool_t pool;
    h2o_mem_init_pool(&pool);
    h2o_url_t url;
    int rc = 0;
    if (q->url == NULL || h2o_url_parse(&pool, q->url, strlen(q->url), &url) != 0) {
        *why = "the URL is not an absolute http:// or https:// URL";
        rc = -1;
    } else if (url.host.len == 0 || !value_ok(q->url) || strchr(q->url, ' ') != NULL) {
        *why = "the URL has no host or contains spaces or control characters";
        rc = -1;
    } else {
        f->is_ssl = url.scheme == &H2O_URL_SCHEME_HTTPS;
        f->port = h2o_url_get_port(&url);
        f->host = strndup(url.host.base, url.host.len);
        f->authority = strndup(url.authority.base, url.authority.len);
        f->path = url.path.len > 0 ? strndup(url.path.base, url.path.len) : strdup("/");
    }
    h2o_mem_clear_pool(&pool);
    if (rc != 0)
        return rc;
    f->method = strdup(method);
    f->url = strdup(q->url);
    f->ca_file = q->ca_file != NULL ? strdup(q->ca_file) : NULL;
    if (f->method == NULL || f->url == NULL || f->host == NULL || f->authority == NULL || f->path == NULL ||
        (q->ca_file != NULL && f->ca_file == NULL)) {
        *why = "out of memory";
        return -2;
    }
    if ((rc = copy_headers(f, q, why)) != 0)
        return rc;
    if (q->body_len > 0) {
        char *body = malloc(q->body_len);
        if (body == NULL) {
            *why = "out of memory";
            return -2;
        }
        memcpy(body, q->body, q->body_len);
        f->body_out = h2o_iovec_init(body, q->body_len);
    } else if (q->body != NULL) {
        f->body_out = h2o_iovec_init("", 0); /* an empty body, still framed (content-length: 0) */
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

static void go(weft_fetch *f, h2o_httpclient_connection_pool_t *pool, h2o_httpclient_ctx_t *ctx);

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
    if (f->body_out.len > 0)
        free(f->body_out.base);
    for (size_t i = 0; i < f->n_hdrs; i++) {
        free(f->hdr_names[i]);
        free(f->hdr_values[i]);
    }
    free(f->hdr_names);
    free(f->hdr_values);
    if (f->pool_used)
        h2o_mem_clear_pool(&f->pool);
    free(f->method);
    free(f->url);
    free(f->host);
    free(f->authority);
    free(f->path);
    free(f->ca_file);
    free(f->tracestate);
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
    weft_fetch_trace_end(f, error, text);
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
    static const char *const errors[] = {
        h2o_hostinfo_error_nxdomain,     h2o_hostinfo_error_nodata,       h2o_hostinfo_error_refused,
        h2o_hostinfo_error_servfail,     h2o_hostinfo_error_gai_addrfamily, h2o_hostinfo_error_gai_badflags,
        h2o_hostinfo_error_gai_family,   h2o_hostinfo_error_gai_memory,   h2o_hostinfo_error_gai_service,
        h2o_hostinfo_error_gai_socktype, h2o_hostinfo_error_gai_system,   h2o_hostinfo_error_gai_other};
    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
        if (e == errors[i])
            return 1;
    return 0;
}

/* h2o reports failures as strings, most of them its own constants. Before
 * the request was sent: the connection could not be made. */
static int connect_error(const weft_fetch *f, const char *e)
{
    if (e == h2o_socket_error_conn_fail || e == h2o_socket_error_conn_refused ||
        e == h2o_socket_error_network_unreachable || e == h2o_socket_error_host_unreachable)
        return WEFT_HTTP_REFUSED;
    if (e == h2o_socket_error_conn_timed_out || e == h2o_httpclient_error_connect_timeout)
        return WEFT_HTTP_CONNECT_TIMEOUT;
    if (e == h2o_socket_error_socket_fail || e == h2o_socket_error_out_of_memory)
        return WEFT_HTTP_NO_RESOURCES;
    if (is_resolver_error(e))
        return WEFT_HTTP_DNS;
    if (e == h2o_socket_error_closed || e == h2o_socket_error_io || e == h2o_httpclient_error_io)
        return WEFT_HTTP_RESET;
    if (e == h2o_socket_error_ssl_no_cert || e == h2o_socket_error_ssl_cert_invalid ||
        e == h2o_socket_error_ssl_cert_name_mismatch || e == h2o_socket_error_ssl_decode ||
        e == h2o_socket_error_ssl_handshake)
        return WEFT_HTTP_TLS;
    /* the rest come from the TLS handshake: OpenSSL's verify texts */
    return f->is_ssl ? WEFT_HTTP_TLS : WEFT_HTTP_REFUSED;
}

/* After the request was sent: I/O errors are resets, timeouts timeouts, the
 * rest protocol errors. */
static int exchange_error(const char *e)
{
    if (e == h2o_httpclient_error_io_timeout || e == h2o_httpclient_error_first_byte_timeout)
        return WEFT_HTTP_TIMEOUT;
    if (e == h2o_httpclient_error_io || e == h2o_socket_error_closed || e == h2o_socket_error_io ||
        e == h2o_httpclient_error_refused_stream)
        return WEFT_HTTP_RESET;
    return WEFT_HTTP_PROTOCOL;
}

static int on_body(h2o_httpclient_t *client, const char *errstr, h2o_header_t *trailers, size_t num_trailers)
{
    (void)trailers, (void)num_trailers;
    weft_fetch *f = client->data;
    h2o_buffer_t *in = *client->buf;
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
    h2o_buffer_consume(client->buf, in->size);
    if (errstr == NULL) {
        client->update_window(client); /* HTTP/2: the upstream may send more */
        return 0;
    }
    f->client = NULL; /* with an end or an error h2o closes (or pools) the connection itself */
    if (errstr == h2o_httpclient_error_is_eos)
        finish(f, WEFT_HTTP_OK, "");
    else
        finish(f, exchange_error(errstr), errstr);
    return 0;
}

/* RFC 9110 9.2.2: a request that may be repeated without changing the
 * outcome. Never POST (or PATCH): a lost answer is not a lost request. */
static int idempotent(const char *method)
{
    static const char *const ok[] = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (strcmp(method, ok[i]) == 0)
            return 1;
    return 0;
}

/* The upstream closed a keep-alive connection it had left idle just as the
 * request went out on it (its idle timeout racing ours): nothing of the
 * answer came, so an idempotent request is sent once more. h2o's pool gives
 * out no connection the upstream has visibly closed, so the second attempt
 * gets a live or a new one. */
static int retry_stale(weft_fetch *f, const char *errstr)
{
    if (!f->reused || f->retried || exchange_error(errstr) != WEFT_HTTP_RESET || !idempotent(f->method))
        return 0;
    f->retried = 1;
    f->reused = 0;
    atomic_fetch_add_explicit(&retries, 1, memory_order_relaxed);
    weft_log_debug("%s: http_fetch(%s): the pooled connection was closed by the upstream (%s); sending it again",
                   f->label, f->url, errstr);
    go(f, f->connpool, f->client_ctx);
    return 1;
}

static h2o_httpclient_body_cb on_head(h2o_httpclient_t *client, const char *errstr, h2o_httpclient_on_head_t *args)
{
    weft_fetch *f = client->data;
    if (errstr != NULL && errstr != h2o_httpclient_error_is_eos) {
        f->client = NULL;
        if (!retry_stale(f, errstr))
            finish(f, exchange_error(errstr), errstr);
        return NULL;
    }
    if ((f->res = weft_http_response_new(args->status, args->headers, args->num_headers)) == NULL) {
        f->client = NULL;
        finish(f, WEFT_HTTP_NO_RESOURCES, "out of memory for the response");
        return NULL;
    }
    if (errstr == h2o_httpclient_error_is_eos) {
        f->client = NULL;
        finish(f, WEFT_HTTP_OK, "");
        return NULL;
    }
    return on_body;
}

static h2o_httpclient_head_cb on_connect(h2o_httpclient_t *client, const char *errstr, h2o_iovec_t *method,
                                         h2o_url_t *url, const h2o_header_t **headers, size_t *num_headers,
                                         h2o_iovec_t *body, h2o_httpclient_proceed_req_cb *proceed_req_cb,
                                         h2o_httpclient_properties_t *props, h2o_url_t *origin)
{
    (void)props, (void)origin;
    weft_fetch *f = client->data;
    if (errstr != NULL) {
        f->client = NULL;
        finish(f, connect_error(f, errstr), errstr);
        return NULL;
    }
    weft_timers_cancel(f->loop->timers, &f->connect_timer);
    /* h2o's pool hands out an idle connection at once, inside
     * h2o_httpclient_connect (go()); a new one connects later. The socket
     * cannot say: h2o re-imports a pooled one, its byte counts at zero. */
    f->reused = f->connecting;
    *method = h2o_iovec_init(f->method, strlen(f->method));
    *url = f->target;
    *headers = f->headers.entries;
    *num_headers = f->headers.size;
    *body = f->body_out; /* base NULL: no body */
    *proceed_req_cb = NULL;
    return on_head;
}

/* What h2o's client sends: the plugin's headers, then weft's framing. On the
 * loop thread, in the call's pool. */
static int prepare(weft_fetch *f)
{
    h2o_mem_init_pool(&f->pool);
    f->pool_used = 1;
    if (h2o_url_parse(&f->pool, f->url, strlen(f->url), &f->target) != 0)
        return -1;
    for (size_t i = 0; i < f->n_hdrs; i++)
        h2o_add_header_by_str(&f->pool, &f->headers, f->hdr_names[i], strlen(f->hdr_names[i]), 1, NULL,
                              f->hdr_values[i], strlen(f->hdr_values[i]));
    if (!f->has_ua)
        h2o_add_header(&f->pool, &f->headers, H2O_TOKEN_USER_AGENT, NULL, H2O_STRLIT("weft/" WEFT_VERSION));
    weft_fetch_trace_headers(f);
    if (f->body_out.base != NULL) {
        char *cl = h2o_mem_alloc_pool(&f->pool, char, sizeof(H2O_UINT64_LONGEST_STR));
        int n = snprintf(cl, sizeof(H2O_UINT64_LONGEST_STR), "%zu", f->body_out.len);
        h2o_add_header(&f->pool, &f->headers, H2O_TOKEN_CONTENT_LENGTH, NULL, cl, (size_t)n);
    }
    return 0;
}

static void on_connect_timeout(weft_timer *t);

/* The connect timeout starts here, not while the call waits for a slot of
 * its upstream: that wait counts against the total timeout only. */
static void go(weft_fetch *f, h2o_httpclient_connection_pool_t *pool, h2o_httpclient_ctx_t *ctx)
{
    f->connpool = pool;
    f->client_ctx = ctx;
    f->reused = 0;
    if (weft_timers_add(f->loop->timers, &f->connect_timer, (uint64_t)f->connect_timeout_ms, on_connect_timeout) != 0) {
        finish(f, WEFT_HTTP_NO_RESOURCES, "out of memory for a timer");
        return;
    }
    f->connecting = 1;
    h2o_httpclient_connect(&f->client, &f->pool, f, ctx, pool, &f->target, NULL, on_connect);
    f->connecting = 0;
}

static void expire(weft_fetch *f, int error, const char *text)
{
    if (f->client != NULL) {
        h2o_httpclient_t *c = f->client;
        f->client = NULL;
        c->cancel(c); /* closes the connection (HTTP/1) or resets the stream (HTTP/2): the upstream sees it go */
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
    f->start_ns = weft_now_ns();
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
    } else if (prepare(f) != 0) {
        finish(f, WEFT_HTTP_BAD_REQUEST, "the URL is not an absolute http:// or https:// URL");
    } else if (weft_timers_add(L->timers, &f->total_timer, (uint64_t)f->timeout_ms, on_total_timeout) != 0) {
        finish(f, WEFT_HTTP_NO_RESOURCES, "out of memory for a timer");
    } else {
        weft_upstream_submit(f->up, f);
    }
    f->starting = 0;
    if (f->done_pending)
        f->on_done(f);
}
