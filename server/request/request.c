#include "request/request.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/hex.h"
#include "base/log.h"
#include "request/cancel.h"

/* A bump allocator: a request allocates a handful of small strings and frees
 * them all at once, so per-object malloc/free would be wasted work. */
struct weft_arena_chunk {
    weft_arena_chunk *next;
    size_t used, size;
    _Alignas(16) char data[];
};

/* The first chunk is small: most requests copy a few hundred bytes, and at
 * 1000 requests in flight every unused KiB is a MiB of RSS. */
#define ARENA_FIRST_CHUNK 1024
#define ARENA_CHUNK 4096

void *weft_req_alloc(weft_req *r, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    weft_arena_chunk *c = r->arena;
    if (c == NULL || c->size - c->used < size) {
        size_t chunk = c == NULL ? ARENA_FIRST_CHUNK : ARENA_CHUNK;
        size_t cap = size > chunk ? size : chunk;
        weft_arena_chunk *n = malloc(sizeof(*n) + cap);
        if (n == NULL)
            return NULL;
        n->used = 0;
        n->size = cap;
        n->next = c;
        r->arena = c = n;
    }
    void *p = c->data + c->used;
    c->used += size;
    return p;
}

size_t weft_req_arena_bytes(const weft_req *r)
{
    size_t n = 0;
    for (const weft_arena_chunk *c = r->arena; c != NULL; c = c->next)
        n += c->size;
    return n;
}

char *weft_req_strndup(weft_req *r, const char *s, size_t len)
{
    char *d = weft_req_alloc(r, len + 1);
    if (d != NULL) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

char *weft_req_decode(weft_req *r, const char *s, size_t len, int plus)
{
    char *d = weft_req_alloc(r, len + 1);
    if (d == NULL)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < len && (hi = weft_hex_value(s[i + 1])) >= 0 && (lo = weft_hex_value(s[i + 2])) >= 0) {
            d[o++] = (char)(hi << 4 | lo);
            i += 2;
        } else {
            d[o++] = plus && s[i] == '+' ? ' ' : s[i];
        }
    }
    d[o] = '\0';
    return d;
}

struct weft_defer {
    weft_defer *next;
    void (*fn)(weft_req *r, void *arg);
    void *arg;
};

int weft_req_defer(weft_req *r, void (*fn)(weft_req *r, void *arg), void *arg)
{
    weft_defer *d = weft_req_alloc(r, sizeof(*d));
    if (d == NULL)
        return -1;
    *d = (weft_defer){r->defers, fn, arg};
    r->defers = d;
    return 0;
}

void weft_req_run_defers(weft_req *r)
{
    while (r->defers != NULL) {
        weft_defer *d = r->defers;
        r->defers = d->next;
        d->fn(r, d->arg);
    }
}

/* The request, its extension slots and its first arena chunk are one
 * allocation: a malloc/free pair fewer on every request, and a slot's
 * storage can never be missing. */
#define REQ_AT16(n) (((n) + 15) & ~(size_t)15)

size_t weft_req_ext_at[WEFT_REQ_SLOTS];
static size_t ext_end = REQ_AT16(sizeof(weft_req));
static int n_ext_slots;
static atomic_int reqs_made; /* the layout is fixed from the first request on */

int weft_req_slot_new(size_t size)
{
    if (n_ext_slots == WEFT_REQ_SLOTS || atomic_load_explicit(&reqs_made, memory_order_relaxed))
        weft_fatal("per-request slot taken %s", n_ext_slots == WEFT_REQ_SLOTS ? "past WEFT_REQ_SLOTS (request/request.h)"
                                                                               : "after the first request");
    weft_req_ext_at[n_ext_slots] = ext_end;
    ext_end += REQ_AT16(size);
    return n_ext_slots++;
}

#define FIRST_CHUNK_AT ext_end

static weft_arena_chunk *first_chunk(weft_req *r) { return (weft_arena_chunk *)((char *)r + FIRST_CHUNK_AT); }

const struct weft_host *weft_req_default_host;

weft_req *weft_req_new(void)
{
    if (!atomic_load_explicit(&reqs_made, memory_order_relaxed))
        atomic_store_explicit(&reqs_made, 1, memory_order_relaxed);
    weft_req *r = malloc(FIRST_CHUNK_AT + sizeof(weft_arena_chunk) + ARENA_FIRST_CHUNK);
    if (r != NULL) {
        memset(r, 0, FIRST_CHUNK_AT);
        weft_arena_chunk *c = first_chunk(r);
        c->next = NULL;
        c->used = 0;
        c->size = ARENA_FIRST_CHUNK;
        r->arena = c;
        r->status = 200;
        r->head.host = weft_req_default_host;
        weft_req_cancel_init(r);
    }
    return r;
}

void weft_req_free(weft_req *r)
{
    if (r == NULL)
        return;
    if (r->pins > 0) { /* the last weft_req_unpin frees it (or runs what weft_req_free_later was given) */
        if (r->unpinned == NULL)
            r->unpinned = weft_req_free;
        return;
    }
    for (weft_arena_chunk *c = r->arena, *next; c != NULL; c = next) {
        next = c->next;
        if (c != first_chunk(r))
            free(c);
    }
    free(r->res_body);
    weft_req_cancel_destroy(r);
    free(r);
}

const char *weft_request_req_method(const weft_req *r) { return r->method; }
const char *weft_request_req_path(const weft_req *r) { return r->path; }

const char *weft_request_req_param(const weft_req *r, const char *name)
{
    for (size_t i = 0; i < r->n_params; i++)
        if (strcmp(r->params[i].name, name) == 0)
            return r->params[i].value;
    return NULL;
}

void weft_req_parse_query(weft_req *r)
{
    if (r->query_parsed)
        return;
    r->query_parsed = 1;
    if (r->query == NULL || r->query[0] == '\0')
        return;
    size_t count = 1;
    for (const char *p = r->query; *p; p++)
        count += *p == '&';
    r->query_kv = weft_req_alloc(r, count * sizeof(weft_kv));
    if (r->query_kv == NULL)
        return;
    for (const char *p = r->query; *p;) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t klen = eq ? (size_t)(eq - p) : len;
        if (klen > 0) {
            const char *k = weft_req_decode(r, p, klen, 1);
            const char *v = eq ? weft_req_decode(r, eq + 1, len - klen - 1, 1) : "";
            if (k != NULL && v != NULL)
                r->query_kv[r->n_query++] = (weft_kv){k, v};
        }
        p += len + (amp != NULL);
    }
}

const char *weft_request_req_query(const weft_req *r, const char *name)
{
    /* Parsed lazily: most handlers never look. The cast is safe because only
     * the thread running the handler reads or writes these fields. */
    weft_req *m = (weft_req *)r;
    weft_req_parse_query(m);
    for (size_t i = 0; i < r->n_query; i++)
        if (strcmp(r->query_kv[i].name, name) == 0)
            return r->query_kv[i].value;
    return NULL;
}

const char *weft_request_req_header(const weft_req *r, const char *name)
{
    for (size_t i = 0; i < r->n_headers; i++)
        if (strcasecmp(r->headers[i].name, name) == 0)
            return r->headers[i].value;
    return NULL;
}

const char *weft_request_req_body(const weft_req *r, size_t *len)
{
    if (len != NULL)
        *len = r->body_len;
    return r->body != NULL ? r->body : "";
}

const char *weft_req_res_header(const weft_req *r, const char *name)
{
    for (size_t i = 0; i < r->n_res_headers; i++)
        if (strcasecmp(r->res_headers[i].name, name) == 0)
            return r->res_headers[i].value;
    return NULL;
}

void weft_request_res_status(weft_req *r, int status)
{
    if (status >= 100 && status <= 599)
        r->status = status;
}

int weft_request_res_header(weft_req *r, const char *name, const char *value)
{
    if (name == NULL || value == NULL || name[0] == '\0' || strpbrk(name, " :\r\n") != NULL ||
        strpbrk(value, "\r\n") != NULL)
        return WEFT_ERROR; /* no header injection through a plugin */
    if (r->n_res_headers == r->cap_res_headers) {
        /* In the arena, like the strings: the outgrown array stays there
         * until the request ends, which few headers make cheap. */
        size_t cap = r->cap_res_headers ? r->cap_res_headers * 2 : 8;
        weft_kv *h = weft_req_alloc(r, cap * sizeof(*h));
        if (h == NULL) {
            r->res_failed = 1;
            return WEFT_ERROR;
        }
        if (r->n_res_headers > 0)
            memcpy(h, r->res_headers, r->n_res_headers * sizeof(*h));
        r->res_headers = h;
        r->cap_res_headers = cap;
    }
    const char *n = weft_req_strndup(r, name, strlen(name));
    const char *v = weft_req_strndup(r, value, strlen(value));
    if (n == NULL || v == NULL) {
        r->res_failed = 1;
        return WEFT_ERROR;
    }
    r->res_headers[r->n_res_headers++] = (weft_kv){n, v};
    return WEFT_OK;
}

int weft_request_res_write(weft_req *r, const void *data, size_t len)
{
    if (len == 0)
        return WEFT_OK;
    if (r->res_cap - r->res_len < len) {
        size_t cap = r->res_cap ? r->res_cap : 256;
        while (cap - r->res_len < len)
            cap *= 2;
        char *b = realloc(r->res_body, cap);
        if (b == NULL) {
            r->res_failed = 1;
            return WEFT_ERROR;
        }
        r->res_body = b;
        r->res_cap = cap;
    }
    memcpy(r->res_body + r->res_len, data, len);
    r->res_len += len;
    return WEFT_OK;
}

/* On the stack when it fits, which is nearly always. */
int weft_request_res_vprintf(weft_req *r, const char *fmt, va_list ap)
{
    char small[256];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    if (n < 0 || (size_t)n < sizeof(small)) {
        va_end(again);
        return n < 0 ? WEFT_ERROR : weft_request_res_write(r, small, (size_t)n);
    }
    char *big = NULL;
    n = vasprintf(&big, fmt, again);
    va_end(again);
    if (n < 0)
        return WEFT_ERROR;
    int rc = weft_request_res_write(r, big, (size_t)n);
    free(big);
    return rc;
}

int weft_request_res_printf(weft_req *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = weft_request_res_vprintf(r, fmt, ap);
    va_end(ap);
    return rc;
}

int weft_request_res_error(weft_req *r, int status, const char *message)
{
    r->status = status >= 100 && status <= 599 ? status : 500;
    r->res_len = 0;
    r->n_res_headers = 0;
    weft_request_res_header(r, "content-type", "text/plain; charset=utf-8");
    if (message == NULL)
        message = ""; /* as error_json takes it: a plugin's NULL must not cost the process */
    weft_request_res_write(r, message, strlen(message));
    return weft_request_res_write(r, "\n", 1);
}

void weft_req_pin(weft_req *r) { r->pins++; }

void weft_req_unpin(weft_req *r)
{
    if (--r->pins > 0 || r->unpinned == NULL)
        return;
    void (*release)(weft_req *) = r->unpinned;
    r->unpinned = NULL;
    release(r);
}

int weft_req_free_later(weft_req *r, void (*release)(weft_req *r))
{
    if (r->pins == 0)
        return 0;
    r->unpinned = release;
    return 1;
}

void weft_req_complete(weft_req *r)
{
    r->end_ns = weft_now_ns();
    if (r->on_finish != NULL) {
        void (*fn)(weft_req *, void *) = r->on_finish;
        r->on_finish = NULL;
        fn(r, r->on_finish_data);
    }
    r->on_complete(r);
}
