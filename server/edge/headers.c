/*
 * Header rules (config `headers`): unset, set, add, in that order, on the
 * answer's head before it is written. Values are copied into the request's
 * pool: HTTP/2 writes the head later, and the access log reads it last,
 * both possibly after a reload freed the config the rule came from.
 */
#include "edge/edge.h"

static void unset(h2o_headers_t *hs, const char *name, size_t len)
{
    ssize_t at;
    while ((at = h2o_find_header_by_str(hs, name, len, -1)) != -1)
        h2o_delete_header(hs, at);
}

static void add(h2o_req_t *req, const char *name, size_t len, const char *value)
{
    h2o_iovec_t v = h2o_strdup(&req->pool, value, SIZE_MAX);
    const h2o_token_t *t = h2o_lookup_token(name, len);
    if (t != NULL) {
        h2o_add_header(&req->pool, &req->res.headers, t, NULL, v.base, v.len);
        return;
    }
    h2o_iovec_t n = h2o_strdup(&req->pool, name, len);
    h2o_add_header_by_str(&req->pool, &req->res.headers, n.base, n.len, 0, NULL, v.base, v.len);
}

void weft_edge_headers_apply(h2o_req_t *req, const weft_headers_cfg *h)
{
    for (size_t i = 0; i < h->n; i++) {
        const weft_header_rule *r = &h->rules[i];
        size_t len = strlen(r->name);
        switch (r->op) {
        case WEFT_HDR_UNSET:
            unset(&req->res.headers, r->name, len);
            break;
        case WEFT_HDR_SET:
            unset(&req->res.headers, r->name, len);
            add(req, r->name, len, r->value);
            break;
        default:
            add(req, r->name, len, r->value);
            break;
        }
    }
}
