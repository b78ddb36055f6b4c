/*
 * Compression (config `compress`): weft decides, h2o's compressors do the
 * work. h2o's own filter (lib/handler/compress.c) ignores q-values (a
 * client's "gzip;q=0" still gets gzip), has a fixed preference and one type
 * rule for the whole host; the negotiation here follows RFC 9110 §12.5.3 and
 * the route's settings, then opens h2o_compress_{zstd,brotli,gzip} the way
 * that filter does. Each part a stream flushes is compressed and flushed on
 * its own (h2o's compressors sync-flush whenever the send is not final), so
 * an event of a Server-Sent Events stream leaves at once.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "edge/edge.h"

/* Compressors alive in the process, and the answers that went out
 * uncompressed because limits.max_compressing_responses were. Any loop
 * opens and frees them: atomics, not the loop's own counters. */
static atomic_long active, skipped;

/* h2o's default qualities for on-the-fly compression (lib/handler/configurator/compress.c). */
#define GZIP_QUALITY 1
#define BROTLI_QUALITY 1
#define ZSTD_QUALITY 1
#define CHUNK 8192

static const char *const coding_names[WEFT_ENC_COUNT] = {"zstd", "br", "gzip"};

/* "q=0.5" → 500; -1 when malformed (RFC 9110: "0" to "1" with up to three decimals). */
static int parse_q(const char *p, size_t n)
{
    if (n == 0 || (p[0] != '0' && p[0] != '1'))
        return -1;
    int q = (p[0] - '0') * 1000;
    if (n == 1)
        return q;
    if (p[1] != '.' || n > 5)
        return -1;
    int scale = 100;
    for (size_t i = 2; i < n; i++, scale /= 10) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        q += (p[i] - '0') * scale;
    }
    return q > 1000 ? -1 : q;
}

/* The q of one element's parameters ("; q=0.8"); 1000 when it has none. */
static int element_q(const char *params, size_t len)
{
    h2o_iovec_t iter = h2o_iovec_init(params, len);
    const char *tok;
    size_t tok_len;
    h2o_iovec_t value;
    while ((tok = h2o_next_token(&iter, ';', ';', &tok_len, &value)) != NULL)
        if (h2o_lcstris(tok, tok_len, H2O_STRLIT("q"))) {
            const char *v = value.base;
            size_t n = value.len;
            while (n > 0 && (*v == ' ' || *v == '\t'))
                v++, n--;
            while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
                n--;
            return parse_q(v, n);
        }
    return 1000;
}

int weft_edge_negotiate(const h2o_headers_t *headers, const weft_compress_cfg *c)
{
    /* -1: not named; the last of a coding's mentions counts. */
    int q[WEFT_ENC_COUNT] = {-1, -1, -1}, star = -1, seen = 0;
    ssize_t at = -1;
    while (seen < WEFT_EDGE_AE_MAX_CODINGS &&
           (at = h2o_find_header(headers, H2O_TOKEN_ACCEPT_ENCODING, at)) != -1) {
        const h2o_iovec_t *v = &headers->entries[at].value;
        const char *p = v->base, *end = v->base + v->len;
        /* One element per comma: bounded by the count, not the bytes, so a
         * huge header costs at most WEFT_EDGE_AE_MAX_CODINGS scans. */
        while (p < end && seen < WEFT_EDGE_AE_MAX_CODINGS) {
            const char *comma = memchr(p, ',', (size_t)(end - p));
            const char *e_end = comma != NULL ? comma : end;
            const char *semi = memchr(p, ';', (size_t)(e_end - p));
            const char *n_end = semi != NULL ? semi : e_end;
            while (p < n_end && (*p == ' ' || *p == '\t'))
                p++;
            while (n_end > p && (n_end[-1] == ' ' || n_end[-1] == '\t'))
                n_end--;
            seen++; /* empty elements count too: ",,,," is no cheaper to scan */
            if (n_end > p) {
                int eq = semi != NULL ? element_q(semi + 1, (size_t)(e_end - semi - 1)) : 1000;
                size_t n = (size_t)(n_end - p);
                if (eq >= 0) {
                    if (n == 1 && *p == '*')
                        star = eq;
                    else if (h2o_lcstris(p, n, H2O_STRLIT("x-gzip")))
                        q[WEFT_ENC_GZIP] = eq;
                    for (int k = 0; k < WEFT_ENC_COUNT; k++)
                        if (h2o_lcstris(p, n, coding_names[k], strlen(coding_names[k])))
                            q[k] = eq;
                }
            }
            p = comma != NULL ? comma + 1 : end;
        }
    }
    int best = -1, best_q = 0;
    for (int i = 0; i < c->n_algs; i++) {
        int a = c->algs[i];
        int aq = q[a] >= 0 ? q[a] : star;
        if (aq > best_q) { /* strictly: equal q keeps the earlier, the server's preference */
            best = a;
            best_q = aq;
        }
    }
    return best;
}

static int status_compressible(int status)
{
    /* 1xx, 204 and 304 have no body; a 206's ranges are of the identity body. */
    return status >= 200 && status != 204 && status != 206 && (status < 300 || status >= 400);
}

/* The media type of the answer (before any ';'), or NULL. */
static const char *media_type(h2o_req_t *req, size_t *len)
{
    ssize_t at = h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_TYPE, -1);
    if (at == -1)
        return NULL;
    const h2o_iovec_t *v = &req->res.headers.entries[at].value;
    const char *semi = memchr(v->base, ';', v->len);
    size_t n = semi != NULL ? (size_t)(semi - v->base) : v->len;
    const char *p = v->base;
    while (n > 0 && (*p == ' ' || *p == '\t'))
        p++, n--;
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    *len = n;
    return p;
}

typedef struct encoder {
    h2o_ostream_t super;
    h2o_compress_context_t *compressor;
} encoder;

static void do_send(h2o_ostream_t *self, h2o_req_t *req, h2o_sendvec_t *in, size_t n, h2o_send_state_t state)
{
    encoder *e = (encoder *)self;
    if (n == 0 && h2o_send_state_is_in_progress(state)) {
        h2o_ostream_send_next(&e->super, req, in, n, state);
        return;
    }
    h2o_sendvec_t *out;
    size_t out_n;
    state = h2o_compress_transform(e->compressor, req, in, n, state, &out, &out_n);
    h2o_ostream_send_next(&e->super, req, out, out_n, state);
}

static h2o_compress_context_t *open_compressor(h2o_req_t *req, int alg)
{
    switch (alg) {
    case WEFT_ENC_ZSTD:
        return h2o_compress_zstd_open(&req->pool, ZSTD_QUALITY, req->res.content_length, req->preferred_chunk_size);
    case WEFT_ENC_BR:
        return h2o_compress_brotli_open(&req->pool, BROTLI_QUALITY, req->res.content_length, req->preferred_chunk_size);
    default:
        return h2o_compress_gzip_open(&req->pool, GZIP_QUALITY);
    }
}

/* Runs when the request's pool is cleared, after the compressor's own disposal. */
static void release(void *p)
{
    (void)p;
    atomic_fetch_sub_explicit(&active, 1, memory_order_relaxed);
}

/* A compressor's place within `max`; 0 past it (counted). */
static int reserve(h2o_req_t *req, int max)
{
    if (atomic_fetch_add_explicit(&active, 1, memory_order_relaxed) >= max) {
        atomic_fetch_sub_explicit(&active, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&skipped, 1, memory_order_relaxed);
        return 0;
    }
    /* Allocated before the compressor, so disposed of after it (h2o frees a
     * pool's shared entries newest first). */
    if (h2o_mem_alloc_shared(&req->pool, 1, release) == NULL) {
        release(NULL);
        return 0;
    }
    return 1;
}

weft_compress_stats weft_edge_compress_stats(void)
{
    return (weft_compress_stats){atomic_load_explicit(&active, memory_order_relaxed),
                                 atomic_load_explicit(&skipped, memory_order_relaxed)};
}

h2o_ostream_t **weft_edge_compress_setup(h2o_req_t *req, const weft_compress_cfg *c, int max, h2o_ostream_t **slot)
{
    if (req->version < 0x101 || !status_compressible(req->res.status) ||
        req->compress_hint == H2O_COMPRESS_HINT_DISABLE ||
        h2o_memis(req->input.method.base, req->input.method.len, H2O_STRLIT("HEAD")) ||
        h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_ENCODING, -1) != -1)
        return slot;
    size_t tlen = 0;
    const char *type = media_type(req, &tlen);
    if (type == NULL || weft_compress_type_is_compressed(type, tlen) || !weft_compress_type_matches(c, type, tlen))
        return slot;
    if (req->res.content_length != SIZE_MAX && req->res.content_length < c->min_size)
        return slot;
    /* From here the coding depends on Accept-Encoding, whatever this client gets. */
    h2o_set_header_token(&req->pool, &req->res.headers, H2O_TOKEN_VARY, H2O_STRLIT("accept-encoding"));
    int alg = weft_edge_negotiate(&req->headers, c);
    if (alg < 0)
        return slot;
    if (!reserve(req, max))
        return slot;
    h2o_compress_context_t *comp = open_compressor(req, alg);
    if (comp == NULL)
        return slot; /* its place goes back with the pool */
    req->res.content_length = SIZE_MAX;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_ENCODING, NULL, comp->name.base, comp->name.len);
    /* The compressed bytes are another representation: a strong validator
     * would claim byte equality, and ranges would be of the compressed body. */
    ssize_t etag = h2o_find_header(&req->res.headers, H2O_TOKEN_ETAG, -1);
    if (etag != -1) {
        h2o_iovec_t *ev = &req->res.headers.entries[etag].value;
        if (!(ev->len >= 2 && ev->base[0] == 'W' && ev->base[1] == '/'))
            *ev = h2o_concat(&req->pool, h2o_iovec_init(H2O_STRLIT("W/")), *ev);
    }
    ssize_t ar;
    while ((ar = h2o_find_header(&req->res.headers, H2O_TOKEN_ACCEPT_RANGES, -1)) != -1)
        h2o_delete_header(&req->res.headers, ar);
    encoder *e = (encoder *)h2o_add_ostream(req, H2O_ALIGNOF(*e), sizeof(*e), slot);
    e->super.do_send = do_send;
    e->compressor = comp;
    if (req->preferred_chunk_size > CHUNK)
        req->preferred_chunk_size = CHUNK;
    return &e->super.next;
}
