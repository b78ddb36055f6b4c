#include "http/client_addr.h"

#include <arpa/inet.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>

#include "base/cidr.h"
#include "base/log.h"
#include "base/timer.h"
#include "core/loop.h"

/* Hops looked at, right to left: past this many trusted ones the last stands. */
#define MAX_HOPS 32

/* A header value a trusted proxy passed on that weft cannot read: logged
 * at most once every 10 s, since a client behind it can repeat it at will. */
static void malformed(const char *header, const char *value, size_t len)
{
    static _Atomic uint64_t last;
    uint64_t now = weft_now_ns(), prev = atomic_load(&last);
    if ((prev != 0 && now - prev < 10000000000ull) || !atomic_compare_exchange_strong(&last, &prev, now))
        return;
    weft_log_warn("ignoring a malformed %s hop from a trusted proxy: '%.*s' (the nearest trusted hop stands as "
                  "the client; logged at most every 10 s)",
                  header, (int)(len > 120 ? 120 : len), value);
}

static void trim(const char **s, const char **e)
{
    while (*s < *e && (**s == ' ' || **s == '\t'))
        (*s)++;
    while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t'))
        (*e)--;
}

/* "192.0.2.1", "192.0.2.1:80", "2001:db8::1", "[2001:db8::1]", "[2001:db8::1]:80". */
static int parse_node(const char *s, const char *e, uint8_t addr[16], uint16_t *port)
{
    *port = 0;
    const char *host = s, *host_end = e, *p = NULL;
    if (s < e && *s == '[') {
        const char *close = memchr(s, ']', (size_t)(e - s));
        if (close == NULL)
            return -1;
        host = s + 1;
        host_end = close;
        if (close + 1 < e) {
            if (close[1] != ':')
                return -1;
            p = close + 2;
        }
    } else {
        const char *colon = memchr(s, ':', (size_t)(e - s));
        if (colon != NULL && memchr(colon + 1, ':', (size_t)(e - colon - 1)) == NULL) { /* IPv4:port */
            host_end = colon;
            p = colon + 1;
        }
    }
    if (weft_addr_parse(host, (size_t)(host_end - host), addr) != 0)
        return -1;
    if (p != NULL) {
        unsigned v = 0;
        if (p == e || e - p > 5)
            return -1;
        for (; p < e; p++) {
            if (*p < '0' || *p > '9')
                return -1;
            v = v * 10 + (unsigned)(*p - '0');
        }
        if (v > 65535)
            return -1;
        *port = (uint16_t)v;
    }
    return 0;
}

/* The for= (and proto=) of one Forwarded element "for=1.2.3.4;proto=https;by=...". */
static void forwarded_pairs(const char *s, const char *e, const char **fs, const char **fe, const char **ps,
                            const char **pe)
{
    *fs = *fe = *ps = *pe = NULL;
    while (s < e) {
        const char *semi = memchr(s, ';', (size_t)(e - s));
        const char *end = semi != NULL ? semi : e, *ks = s, *ke = end;
        trim(&ks, &ke);
        const char *eq = memchr(ks, '=', (size_t)(ke - ks));
        if (eq != NULL) {
            const char *vs = eq + 1, *ve = ke;
            if (ve - vs >= 2 && *vs == '"' && ve[-1] == '"') {
                vs++;
                ve--;
            }
            if (eq - ks == 3 && strncasecmp(ks, "for", 3) == 0) {
                *fs = vs;
                *fe = ve;
            } else if (eq - ks == 5 && strncasecmp(ks, "proto", 5) == 0) {
                *ps = vs;
                *pe = ve;
            }
        }
        s = end + (semi != NULL);
    }
}

static int scheme_of(const char *s, const char *e)
{
    if (e - s == 5 && strncasecmp(s, "https", 5) == 0)
        return 1;
    if (e - s == 4 && strncasecmp(s, "http", 4) == 0)
        return 0;
    return -1;
}

/* Walks the hops of every instance of header `name`, last instance first,
 * each right to left. Returns 1 when the walk moved the client (addr, port,
 * and *https from Forwarded's proto= when the chosen element has one). */
static int walk(h2o_req_t *req, const h2o_token_t *name, int forwarded, const weft_listen_cfg *lc, uint8_t addr[16],
                uint16_t *port, int *https)
{
    ssize_t idx[8];
    int n = 0;
    for (ssize_t i = -1; n < 8 && (i = h2o_find_header(&req->headers, name, i)) >= 0;)
        idx[n++] = i;
    int moved = 0, hops = 0;
    for (int k = n - 1; k >= 0; k--) {
        const h2o_iovec_t *v = &req->headers.entries[idx[k]].value;
        const char *start = v->base, *end = v->base + v->len;
        while (end > start) {
            if (++hops > MAX_HOPS)
                return moved;
            const char *comma = end;
            while (comma > start && comma[-1] != ',')
                comma--;
            const char *s = comma, *e = end, *ps = NULL, *pe = NULL;
            trim(&s, &e);
            end = comma > start ? comma - 1 : start;
            if (forwarded)
                forwarded_pairs(s, e, &s, &e, &ps, &pe);
            uint8_t a[16];
            uint16_t p;
            if (s == NULL || parse_node(s, e, a, &p) != 0) {
                /* RFC 7239's "unknown" and obfuscated "_name" hops are not
                 * errors; they end the walk all the same. */
                if (s != NULL && !(e - s == 7 && strncasecmp(s, "unknown", 7) == 0) && !(s < e && *s == '_'))
                    malformed(forwarded ? "Forwarded" : "X-Forwarded-For", v->base, v->len);
                return moved;
            }
            memcpy(addr, a, 16);
            *port = p;
            moved = 1;
            if (ps != NULL && scheme_of(ps, pe) >= 0)
                *https = scheme_of(ps, pe);
            if (!weft_cidr_match(lc->trusted, lc->n_trusted, a))
                return 1;
        }
    }
    return moved;
}

static void to_sockaddr(const uint8_t a[16], uint16_t port, weft_sockaddr *out)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    memset(out, 0, sizeof(*out));
    if (memcmp(a, mapped, 12) == 0) {
        out->in.sin_family = AF_INET;
        memcpy(&out->in.sin_addr, a + 12, 4);
        out->in.sin_port = htons(port);
    } else {
        out->in6.sin6_family = AF_INET6;
        memcpy(&out->in6.sin6_addr, a, 16);
        out->in6.sin6_port = htons(port);
    }
}

/* On a listener with trusted proxies a plugin reads one X-Forwarded-Proto,
 * the scheme weft believes: a trusted proxy's, else the connection's own
 * (as Envoy does at the edge), never a value a client made up. */
static void set_proto(h2o_req_t *req, int https)
{
    ssize_t i;
    while ((i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-forwarded-proto"), -1)) >= 0)
        h2o_delete_header(&req->headers, i);
    h2o_add_header_by_str(&req->pool, &req->headers, H2O_STRLIT("x-forwarded-proto"), 0, NULL,
                          https ? "https" : "http", https ? 5 : 4);
}

/* The connection's peer into `out`: 0, or -1 when it has no IP address. */
static int peer_of(h2o_req_t *req, weft_conn *conn, weft_client *out)
{
    const weft_peer_key *key;
    const weft_sockaddr *sa = conn != NULL ? weft_conn_remote_addr(conn, &key) : NULL;
    if (sa != NULL) {
        out->sa = *sa;
        memcpy(out->key, key->addr, 16);
        return 0;
    }
    struct sockaddr_storage ss;
    socklen_t len = req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&ss);
    if (len == 0 || len > sizeof(out->sa) || (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
        return -1;
    memcpy(&out->sa, &ss, len);
    weft_peer_key k;
    weft_peer_key_of(&out->sa.sa, &k);
    memcpy(out->key, k.addr, 16);
    return 0;
}

void weft_client_addr(h2o_req_t *req, weft_conn *conn, const weft_listen_cfg *lc, weft_client *out)
{
    out->from_header = 0;
    out->sa.sa.sa_family = AF_UNSPEC;
    memset(out->key, 0, sizeof(out->key));
    if (peer_of(req, conn, out) != 0)
        return;
    if (lc == NULL || lc->n_trusted == 0)
        return;
    if (!weft_cidr_match(lc->trusted, lc->n_trusted, out->key)) {
        set_proto(req, req->scheme == &H2O_URL_SCHEME_HTTPS); /* whatever the client claimed */
        return;
    }
    uint8_t a[16];
    uint16_t port = 0;
    int https = -1;
    /* One header, the one the proxies are said to set: the other passes
     * through them untouched, so a client could write it whole. */
    int moved = lc->forwarded ? walk(req, H2O_TOKEN_FORWARDED, 1, lc, a, &port, &https)
                              : walk(req, H2O_TOKEN_X_FORWARDED_FOR, 0, lc, a, &port, &https);
    if (!lc->forwarded) {
        ssize_t i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-forwarded-proto"), -1);
        if (i >= 0) { /* the first value: the scheme the client used with the outermost proxy */
            const h2o_iovec_t *v = &req->headers.entries[i].value;
            const char *s = v->base, *e = memchr(v->base, ',', v->len);
            e = e != NULL ? e : v->base + v->len;
            trim(&s, &e);
            https = scheme_of(s, e);
        }
    }
    if (https >= 0)
        req->scheme = https ? &H2O_URL_SCHEME_HTTPS : &H2O_URL_SCHEME_HTTP;
    set_proto(req, req->scheme == &H2O_URL_SCHEME_HTTPS);
    if (!moved)
        return;
    memcpy(out->key, a, 16);
    to_sockaddr(a, port, &out->sa);
    out->from_header = 1;
    char text[INET6_ADDRSTRLEN];
    weft_peer_key k2;
    memcpy(k2.addr, a, 16);
    weft_peer_key_format(&k2, text, sizeof(text));
    h2o_iovec_t *env = h2o_req_getenv(req, H2O_STRLIT("weft-client"), 1);
    *env = h2o_strdup(&req->pool, text, strlen(text));
}
