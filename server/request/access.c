/*
 * Plugin API 1.1: the rest of the request (addresses, iteration, lengths,
 * cookies, the request id) and the response helpers (JSON errors, cookies,
 * redirects). Everything reads the weft_req copy, so it works on any thread
 * that runs the handler.
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "request/request.h"

/* ---- set up by the HTTP layer ---- */

static int id_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.' || c == ':';
}

#define ID_BLOCK 1024

void weft_req_set_id(weft_req *r, const char *incoming, size_t len)
{
    int sane = incoming != NULL && len >= 1 && len < sizeof(r->id);
    for (size_t i = 0; sane && i < len; i++)
        sane = id_char(incoming[i]);
    r->id_sent = sane;
    if (sane) {
        memcpy(r->id, incoming, len);
        r->id[len] = '\0';
        return;
    }
    /* Unique within the process, and across restarts by the start time.
     * Each thread takes numbers from the shared counter a block at a time:
     * one atomic add per request was a cache line bouncing between loops. */
    static _Atomic uint64_t counter;
    static _Atomic uint32_t epoch;
    static _Thread_local uint64_t next, end;
    uint32_t e = atomic_load_explicit(&epoch, memory_order_relaxed);
    if (e == 0) {
        uint32_t fresh = (uint32_t)time(NULL) ^ ((uint32_t)getpid() << 16);
        atomic_compare_exchange_strong(&epoch, &e, fresh != 0 ? fresh : 1);
        e = atomic_load(&epoch);
    }
    if (next == end) {
        next = atomic_fetch_add_explicit(&counter, ID_BLOCK, memory_order_relaxed);
        end = next + ID_BLOCK;
    }
    uint64_t n = next++ & 0xffffffffffffull;
    /* "%08x%012llx" by hand: snprintf was a visible share of /hello's time. */
    static const char hex[] = "0123456789abcdef";
    for (int i = 7; i >= 0; i--, e >>= 4)
        r->id[i] = hex[e & 15];
    for (int i = 19; i >= 8; i--, n >>= 4)
        r->id[i] = hex[n & 15];
    r->id[20] = '\0';
}

int weft_sockaddr_format(const struct sockaddr *sa, char *out, size_t size)
{
    out[0] = '\0';
    if (sa == NULL)
        return 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, out, (socklen_t)size);
        return ntohs(in->sin_port);
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, out, (socklen_t)size);
        return ntohs(in6->sin6_port);
    }
    return 0;
}

static void keep_addr(weft_sockaddr *dst, const struct sockaddr *sa)
{
    if (sa != NULL && sa->sa_family == AF_INET)
        dst->in = *(const struct sockaddr_in *)sa;
    else if (sa != NULL && sa->sa_family == AF_INET6)
        dst->in6 = *(const struct sockaddr_in6 *)sa;
    else
        dst->sa.sa_family = AF_UNSPEC;
}

void weft_req_set_addrs(weft_req *r, const void *peer_sa, const void *local_sa)
{
    keep_addr(&r->peer_sa, peer_sa);
    keep_addr(&r->local_sa, local_sa);
    r->addrs_formatted = 0;
}

/* Only the thread running the handler asks, so the cast is safe (as for the
 * lazily parsed query). */
static void format_addrs(const weft_req *cr)
{
    weft_req *r = (weft_req *)cr;
    if (r->addrs_formatted)
        return;
    r->addrs_formatted = 1;
    r->peer_port = weft_sockaddr_format(r->peer_sa.sa.sa_family != AF_UNSPEC ? &r->peer_sa.sa : NULL, r->peer_addr,
                               sizeof(r->peer_addr));
    r->local_port = weft_sockaddr_format(r->local_sa.sa.sa_family != AF_UNSPEC ? &r->local_sa.sa : NULL, r->local_addr,
                                sizeof(r->local_addr));
}

/* ---- request ---- */

const char *weft_access_req_peer_addr(const weft_req *r, int *port)
{
    format_addrs(r);
    if (port != NULL)
        *port = r->peer_port;
    return r->peer_addr;
}

const char *weft_access_req_local_addr(const weft_req *r, int *port)
{
    format_addrs(r);
    if (port != NULL)
        *port = r->local_port;
    return r->local_addr;
}

static int kv_at(const weft_kv *kv, size_t n, size_t i, const char **name, const char **value, size_t *value_len)
{
    if (i >= n)
        return WEFT_ERROR;
    if (name != NULL)
        *name = kv[i].name;
    if (value != NULL)
        *value = kv[i].value;
    if (value_len != NULL)
        *value_len = strlen(kv[i].value); /* NULs are refused before dispatch (%00 and raw) */
    return WEFT_OK;
}

int weft_access_req_header_at(const weft_req *r, size_t i, const char **name, const char **value, size_t *value_len)
{
    return kv_at(r->headers, r->n_headers, i, name, value, value_len);
}

int weft_access_req_query_at(const weft_req *r, size_t i, const char **name, const char **value, size_t *value_len)
{
    weft_req_parse_query((weft_req *)r); /* only the handler's thread touches it */
    return kv_at(r->query_kv, r->n_query, i, name, value, value_len);
}

const char *weft_access_req_query_string(const weft_req *r) { return r->query; }

static const char *with_len(const char *v, size_t *len)
{
    if (len != NULL)
        *len = v != NULL ? strlen(v) : 0;
    return v;
}

const char *weft_access_req_param_len(const weft_req *r, const char *name, size_t *len)
{
    return with_len(weft_request_req_param(r, name), len);
}

const char *weft_access_req_query_len(const weft_req *r, const char *name, size_t *len)
{
    return with_len(weft_request_req_query(r, name), len);
}

const char *weft_access_req_header_len(const weft_req *r, const char *name, size_t *len)
{
    return with_len(weft_request_req_header(r, name), len);
}

/* "a=1; b=\"2\"": the value of `name` in one Cookie header, or NULL. */
static const char *find_cookie(weft_req *r, const char *h, const char *name, size_t *len)
{
    size_t nlen = strlen(name);
    while (*h != '\0') {
        while (*h == ' ' || *h == '\t' || *h == ';')
            h++;
        const char *end = strchr(h, ';');
        size_t plen = end != NULL ? (size_t)(end - h) : strlen(h);
        const char *eq = memchr(h, '=', plen);
        if (eq != NULL && (size_t)(eq - h) == nlen && memcmp(h, name, nlen) == 0) {
            const char *v = eq + 1;
            size_t vlen = plen - nlen - 1;
            while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
                vlen--;
            if (vlen >= 2 && v[0] == '"' && v[vlen - 1] == '"') {
                v++;
                vlen -= 2;
            }
            if (len != NULL)
                *len = vlen;
            return weft_req_strndup(r, v, vlen);
        }
        h += plen;
    }
    return NULL;
}

const char *weft_access_req_cookie(const weft_req *r, const char *name, size_t *len)
{
    if (name == NULL || name[0] == '\0')
        return NULL;
    /* HTTP/2 clients may split cookies over several headers. */
    for (size_t i = 0; i < r->n_headers; i++) {
        if (strcasecmp(r->headers[i].name, "cookie") != 0)
            continue;
        const char *v = find_cookie((weft_req *)r, r->headers[i].value, name, len);
        if (v != NULL)
            return v;
    }
    return NULL;
}

const char *weft_access_req_id(const weft_req *r) { return r->id; }

/* ---- response helpers ---- */

int weft_access_res_error_json(weft_req *r, int status, const char *message)
{
    if (status < 100 || status > 599)
        status = 500;
    json_t *obj = json_pack("{s:s,s:i}", "error", message != NULL ? message : "", "status", status);
    if (obj == NULL) {
        /* Not UTF-8: keep what is, replace the rest, escape it all. */
        size_t n = message != NULL ? strlen(message) : 0;
        char *fixed = malloc(n * 3 + 1), *o = fixed;
        for (size_t i = 0; fixed != NULL && i < n;) {
            unsigned char c = (unsigned char)message[i];
            size_t need = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
            int ok = need > 0 && i + need <= n;
            if (ok) {
                json_t *probe = json_stringn(message + i, need); /* jansson's own UTF-8 check, per character */
                ok = probe != NULL;
                json_decref(probe);
            }
            if (ok) {
                memcpy(o, message + i, need);
                o += need;
                i += need;
            } else {
                memcpy(o, "\xEF\xBF\xBD", 3);
                o += 3;
                i++;
            }
        }
        if (fixed != NULL) {
            *o = '\0';
            obj = json_pack("{s:s,s:i}", "error", fixed, "status", status);
        }
        free(fixed);
    }
    char *text = obj != NULL ? json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(obj);
    r->status = status;
    r->res_len = 0;
    r->n_res_headers = 0;
    if (text == NULL) {
        r->res_failed = 1;
        return WEFT_ERROR;
    }
    int rc = weft_request_res_header(r, "content-type", "application/json");
    if (rc == WEFT_OK)
        rc = weft_request_res_write(r, text, strlen(text));
    free(text);
    return rc;
}

/* RFC 6265: token for names, cookie-octets for values. */
static int cookie_name_ok(const char *s)
{
    if (s == NULL || *s == '\0')
        return 0;
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f || strchr("()<>@,;:\\\"/[]?={}", *s) != NULL)
            return 0;
    return 1;
}

static int cookie_value_ok(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f || strchr("\",;\\", *s) != NULL)
            return 0;
    return 1;
}

static int attr_ok(const char *s)
{
    if (s == NULL)
        return 1;
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f || *s == ';')
            return 0;
    return 1;
}

int weft_access_res_cookie(weft_req *r, const char *name, const char *value, long long max_age, const char *path,
                    const char *domain, unsigned flags)
{
    unsigned same = flags & (WEFT_COOKIE_SAMESITE_LAX | WEFT_COOKIE_SAMESITE_STRICT | WEFT_COOKIE_SAMESITE_NONE);
    if (!cookie_name_ok(name) || value == NULL || !cookie_value_ok(value) || !attr_ok(path) || !attr_ok(domain) ||
        (same & (same - 1)) != 0 || ((flags & WEFT_COOKIE_SAMESITE_NONE) && !(flags & WEFT_COOKIE_SECURE)) ||
        (flags & ~31u) != 0)
        return WEFT_ERROR;
    char buf[4096];
    int n = snprintf(buf, sizeof(buf), "%s=%s", name, value);
    if (max_age >= 0 && n > 0 && (size_t)n < sizeof(buf))
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, "; Max-Age=%lld", max_age);
    if (path != NULL && n > 0 && (size_t)n < sizeof(buf))
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, "; Path=%s", path);
    if (domain != NULL && n > 0 && (size_t)n < sizeof(buf))
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, "; Domain=%s", domain);
    if (n > 0 && (size_t)n < sizeof(buf))
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%s%s%s", (flags & WEFT_COOKIE_SECURE) ? "; Secure" : "",
                      (flags & WEFT_COOKIE_HTTPONLY) ? "; HttpOnly" : "",
                      same == WEFT_COOKIE_SAMESITE_LAX      ? "; SameSite=Lax"
                      : same == WEFT_COOKIE_SAMESITE_STRICT ? "; SameSite=Strict"
                      : same == WEFT_COOKIE_SAMESITE_NONE   ? "; SameSite=None"
                                                            : "");
    if (n <= 0 || (size_t)n >= sizeof(buf))
        return WEFT_ERROR;
    return weft_request_res_header(r, "set-cookie", buf);
}

int weft_access_res_redirect(weft_req *r, int status, const char *location)
{
    if ((status != 301 && status != 302 && status != 303 && status != 307 && status != 308) || location == NULL ||
        location[0] == '\0')
        return WEFT_ERROR;
    int rc = weft_request_res_header(r, "location", location); /* refuses CR/LF */
    if (rc == WEFT_OK)
        r->status = status;
    return rc;
}
