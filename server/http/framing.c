#include "http/framing.h"

#include <string.h>
#include <strings.h>

#include "core/loop.h"
#include "reload/generation.h"
#include "request/respond.h"

typedef struct head_facts {
    int content_lengths, cl_conflict, transfer_encoding, hosts;
    size_t longest_line, total;
    const char *cl_value;
    size_t cl_len;
} head_facts;

/* ASCII only, as header names are: libc's strncasecmp consults the locale. */
#define name_is(line, name_len, name) h2o_lcstris(line, name_len, H2O_STRLIT(name))

/* The header lines after the request line, up to the empty line. Returns -1
 * when the head is not all there (then weft has nothing to add to h2o). */
static int scan_head(const char *p, size_t len, head_facts *f)
{
    memset(f, 0, sizeof(*f));
    const char *end = p + len, *eol = memchr(p, '\n', len);
    if (eol == NULL)
        return -1;
    for (p = eol + 1; p < end; p = eol + 1) {
        eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL)
            return -1;
        size_t n = (size_t)(eol - p);
        if (n > 0 && p[n - 1] == '\r')
            n--;
        if (n == 0)
            return 0; /* end of the head */
        f->total += n;
        if (n > f->longest_line)
            f->longest_line = n;
        const char *colon = memchr(p, ':', n);
        if (colon == NULL)
            continue; /* obs-fold: h2o joined it; its length is counted */
        size_t nl = (size_t)(colon - p);
        const char *v = colon + 1, *ve = p + n;
        while (v < ve && (*v == ' ' || *v == '\t'))
            v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        if (name_is(p, nl, "content-length")) {
            if (f->content_lengths++ > 0 && ((size_t)(ve - v) != f->cl_len || memcmp(v, f->cl_value, f->cl_len) != 0))
                f->cl_conflict = 1;
            f->cl_value = v;
            f->cl_len = (size_t)(ve - v);
        } else if (name_is(p, nl, "transfer-encoding")) {
            f->transfer_encoding++;
        } else if (name_is(p, nl, "host")) {
            f->hosts++;
        }
    }
    return -1;
}

static int refuse(h2o_req_t *req, int status, const char *message)
{
    /* The framing cannot be trusted: whatever follows on this connection
     * (a "pipelined" request) may be a smuggled one. Never serve it. */
    req->http1_is_persistent = 0;
    weft_respond_text(req, status, message);
    return 1;
}

/* "http://host[:port]/path?q" -> "/path?q" (RFC 9112 3.2.2: a server must
 * accept the absolute form; the route is chosen by the path). */
static void absolute_form_to_path(h2o_req_t *req)
{
    const char *b = req->path.base;
    size_t len = req->path.len, skip;
    if (len >= 7 && strncasecmp(b, "http://", 7) == 0)
        skip = 7;
    else if (len >= 8 && strncasecmp(b, "https://", 8) == 0)
        skip = 8;
    else
        return;
    const char *slash = memchr(b + skip, '/', len - skip), *q = memchr(b + skip, '?', len - skip);
    size_t at = slash != NULL && (q == NULL || slash < q) ? (size_t)(slash - b) : len;
    if (at == len || (q != NULL && (size_t)(q - b) < at)) {
        /* No path: the target is the root (with the query, if any). */
        size_t qlen = q != NULL ? len - (size_t)(q - b) : 0;
        char *n = h2o_mem_alloc_pool(&req->pool, char, qlen + 1);
        n[0] = '/';
        memcpy(n + 1, q != NULL ? q : "", qlen);
        req->path = h2o_iovec_init(n, qlen + 1);
        req->query_at = q != NULL ? 1 : SIZE_MAX;
        return;
    }
    req->path = h2o_iovec_init(b + at, len - at);
    if (req->query_at != SIZE_MAX)
        req->query_at -= at;
}

/* The headers as h2o decoded them, against the same limits as HTTP/1's
 * raw head. For HTTP/2 this is the only view there is: HPACK lets one 4 KB
 * header in the dynamic table be referenced thousands of times by a few
 * bytes each, so the frames are small and the decoded list is what weft
 * would copy (megabytes per request). For HTTP/1 it also covers a request
 * whose head h2o consumed before its body came in. */
static const char *decoded_too_large(const h2o_req_t *req, const weft_config *cfg)
{
    size_t total = 0;
    for (size_t i = 0; i < req->headers.size; i++) {
        const h2o_header_t *h = &req->headers.entries[i];
        size_t line = h->name->len + 2 + h->value.len;
        if (line > cfg->limits.max_header_line)
            return "a request header line is too long (limits.max_header_line)";
        if ((total += line) > cfg->limits.max_headers)
            return "request headers too large (limits.max_headers)";
    }
    return NULL;
}

int weft_framing_check(h2o_req_t *req)
{
    const weft_config *cfg = weft_generation_of_loop(weft_loop_current)->cfg;
    const char *too_large = decoded_too_large(req, cfg);
    if (too_large != NULL)
        return refuse(req, 431, too_large);
    if (req->version >= 0x200)
        return 0; /* HTTP/2 framing is binary: the rest does not apply */
    absolute_form_to_path(req);
    h2o_socket_t *sock = weft_h2o_req_socket(req);
    if (sock == NULL || sock->input == NULL)
        return 0;
    /* The head is at the start of the input buffer while its request is
     * handled (h2o consumes it once the response is sent). Check that it is
     * this request's before trusting it. */
    const char *buf = sock->input->bytes;
    size_t len = sock->input->size;
    if (len < req->method.len + 1 || memcmp(buf, req->method.base, req->method.len) != 0 || buf[req->method.len] != ' ')
        return 0;
    head_facts f;
    if (scan_head(buf, len, &f) != 0)
        return 0;
    if (f.longest_line > cfg->limits.max_header_line)
        return refuse(req, 431, "a request header line is too long (limits.max_header_line)");
    if (f.total > cfg->limits.max_headers)
        return refuse(req, 431, "request headers too large (limits.max_headers)");
    if (f.transfer_encoding && f.content_lengths)
        return refuse(req, 400, "bad request: both Content-Length and Transfer-Encoding");
    if (f.cl_conflict)
        return refuse(req, 400, "bad request: conflicting Content-Length headers");
    if (f.hosts > 1 || (f.hosts == 0 && req->version >= 0x101))
        return refuse(req, 400, f.hosts ? "bad request: more than one Host header" : "bad request: HTTP/1.1 without Host");
    return 0;
}
