#include "request/respond.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"
#include "config/config.h"
#include "request/backlog.h"
#include "request/body.h"
#include "request/route.h"

static int id_header = WEFT_REQID_ALWAYS;
/* The access log reads the id from the request's own headers, where it is
 * put at respond time. Not from h2o's request environment (%{NAME}e): the
 * format compiler of libh2o 2.2.5 never frees such a name, a leak that
 * fails the sanitizer runs. */
static int id_in_request;

void weft_respond_request_ids(int header_mode, int access_log)
{
    id_header = header_mode;
    id_in_request = access_log && header_mode != WEFT_REQID_ALWAYS;
}

const char *weft_respond_request_id_logfield(void)
{
    return id_header == WEFT_REQID_ALWAYS ? "%{x-request-id}o" : "%{x-request-id}i";
}

const char *weft_reason_phrase(int status)
{
    switch (status) {
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 421: return "Misdirected Request";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return status < 400 ? "OK" : "Error";
    }
}

void weft_respond(h2o_req_t *req, int status, const char *content_type, const char *body, size_t len, int flags)
{
    weft_body_abandon(req); /* an answer given instead of reading on */
    req->res.status = status;
    req->res.reason = weft_reason_phrase(status);
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, content_type, strlen(content_type));
    if (flags & WEFT_RESPOND_NO_STORE)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL, H2O_STRLIT("no-store"));
    h2o_iovec_t copy = h2o_strdup(&req->pool, body, len);
    req->res.content_length = copy.len;
    h2o_send_inline(req, copy.base, copy.len);
}

void weft_respond_text(h2o_req_t *req, int status, const char *message)
{
    weft_body_abandon(req);
    size_t len = strlen(message);
    char *body = h2o_mem_alloc_pool(&req->pool, char, len + 1);
    memcpy(body, message, len);
    body[len] = '\n';
    req->res.status = status;
    req->res.reason = weft_reason_phrase(status);
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                   H2O_STRLIT("text/plain; charset=utf-8"));
    req->res.content_length = len + 1;
    h2o_send_inline(req, body, len + 1);
}

int weft_respond_method_ok(h2o_req_t *req, const char *allow)
{
    for (const char *p = allow; *p;) {
        size_t n = strcspn(p, ", ");
        if (n > 0 && h2o_memis(req->method.base, req->method.len, p, n))
            return 1;
        p += n;
        p += strspn(p, ", ");
    }
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, allow, strlen(allow));
    weft_respond_text(req, 405, "method not allowed");
    return 0;
}

void weft_respond_head(h2o_req_t *req, weft_req *r)
{
    if (r->res_failed || (r->rc != WEFT_OK && r->status < 400 && !r->streamed)) {
        if (r->rc != WEFT_OK)
            weft_log_error("%s [%s]: handler failed (rc %d) without an error status; answering 500 (trace %s)",
                           r->route->label, r->id, r->rc, r->trace.trace_id_hex);
        weft_request_res_error(r, 500, "internal error in the request handler");
    }
    req->res.status = r->status;
    req->res.reason = weft_reason_phrase(r->status);
    int has_type = 0;
    for (size_t i = 0; i < r->n_res_headers; i++) {
        const weft_kv *h = &r->res_headers[i];
        size_t nlen = strlen(h->name);
        has_type |= nlen == 12 && strcasecmp(h->name, "content-type") == 0;
        /* Strings live in the weft_req, which dies first: copy into h2o's pool. */
        h2o_iovec_t name = h2o_strdup(&req->pool, h->name, nlen);
        h2o_strtolower(name.base, name.len);
        h2o_iovec_t value = h2o_strdup(&req->pool, h->value, strlen(h->value));
        h2o_add_header_by_str(&req->pool, &req->res.headers, name.base, name.len, 1, NULL, value.base, value.len);
    }
    if (!has_type && (r->res_len > 0 || r->streamed))
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                       H2O_STRLIT("text/plain; charset=utf-8"));
    /* The id the plugin saw, for the client and the access log. Over
     * HTTP/2 it is marked never-indexed: a value unique per answer would
     * otherwise go into the connection's HPACK table and evict what is worth
     * keeping there (libh2o 2.2.5 could not say so; log.request_id_header
     * still lets an operator send it only to clients that sent one). */
    int send = id_header == WEFT_REQID_ALWAYS || (id_header == WEFT_REQID_WHEN_SENT && r->id_sent);
    if (r->id[0] != '\0' && (send || id_in_request)) {
        h2o_iovec_t id = h2o_strdup(&req->pool, r->id, strlen(r->id));
        if (send) {
            ssize_t at = h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-request-id"), 0, NULL,
                                               id.base, id.len);
            req->res.headers.entries[at].flags.dont_compress = 1;
        }
        if (id_in_request) /* replaces the client's, which may have been insane */
            h2o_set_header_by_str(&req->pool, &req->headers, H2O_STRLIT("x-request-id"), 0, id.base, id.len, 1);
    }
}

/* Below this an answer is copied into h2o's pool and not accounted: the
 * kernel's socket buffer takes it whole, and the connection caps bound how
 * many there are. */
#define HELD_MIN 16384

/* A larger answer's body, handed to h2o as it is (no copy) and charged to
 * its client until h2o is done with the request. */
typedef struct held_answer {
    h2o_generator_t gen; /* first: h2o hands it back */
    char *body;
} held_answer;

static void held_proceed(h2o_generator_t *g, h2o_req_t *req)
{
    (void)g;
    (void)req; /* the only part was the final one */
}

static void held_dispose(void *p) { free(((held_answer *)p)->body); }

void weft_respond_req(h2o_req_t *req, weft_req *r)
{
    weft_respond_head(req, r);
    /* Without a length h2o would send the body chunked. */
    req->res.content_length = r->res_len;
    held_answer *h = r->res_len >= HELD_MIN ? h2o_mem_alloc_shared(&req->pool, sizeof(*h), held_dispose) : NULL;
    if (h == NULL) {
        h2o_send_inline(req, r->res_body != NULL ? r->res_body : "", r->res_len);
        return;
    }
    *h = (held_answer){.gen = {.proceed = held_proceed, .stop = NULL}, .body = r->res_body};
    h2o_iovec_t body = h2o_iovec_init(r->res_body, r->res_len);
    r->res_body = NULL;
    r->res_len = r->res_cap = 0;
    const weft_route_cfg *rc = r->route != NULL ? r->route->cfg : NULL;
    weft_backlog_set(weft_backlog_new(req, rc != NULL ? rc->max_buffered_response : 0,
                                      rc != NULL ? rc->max_buffered_response_total : 0),
                     body.len);
    h2o_start_response(req, &h->gen);
    /* As h2o_send_inline does: h2o itself would send a HEAD's body. */
    if (h2o_memis(req->input.method.base, req->input.method.len, H2O_STRLIT("HEAD")))
        h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
    else
        h2o_send(req, &body, 1, H2O_SEND_STATE_FINAL);
}

#define MAX_ANSWERERS 8

typedef struct answer_handler {
    h2o_handler_t super;
    int (*answer[MAX_ANSWERERS])(h2o_req_t *req);
    size_t n;
} answer_handler;

static int on_answer_req(h2o_handler_t *self, h2o_req_t *req)
{
    answer_handler *h = (answer_handler *)self;
    for (size_t i = 0; i < h->n; i++)
        if (h->answer[i](req))
            return 0;
    return -1;
}

void weft_respond_register(h2o_pathconf_t *path, int (*answer)(h2o_req_t *req))
{
    h2o_handler_t *last = path->handlers.size > 0 ? path->handlers.entries[path->handlers.size - 1] : NULL;
    answer_handler *h = last != NULL && last->on_req == on_answer_req ? (answer_handler *)last : NULL;
    if (h == NULL || h->n == MAX_ANSWERERS) {
        h = (answer_handler *)h2o_create_handler(path, sizeof(*h));
        h->super.on_req = on_answer_req;
    }
    h->answer[h->n++] = answer;
}
