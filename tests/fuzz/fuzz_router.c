/*
 * libFuzzer target: route patterns, the router and request-path decoding.
 *
 * Input: lines. The first byte (mod 16) says how many of the following lines
 * are route patterns; the rest are request paths, each optionally followed
 * by "?query". The first byte of a request line picks the method. Every
 * pattern goes through weft_pattern_check and weft_router_add, every path
 * through weft_router_match (as http.c does), the matched parameters through
 * weft_req_decode, and the query through weft_request_req_query's parser.
 *
 * Besides "no crash, no leak, no overread" (ASan+UBSan), it checks what the
 * rest of the server relies on:
 *   - weft_router_add accepts exactly the patterns weft_pattern_check accepts
 *     (apart from conflicts), and explains every refusal;
 *   - a 200 names a route that was added for that method; a 405 has a
 *     non-empty Allow set that excludes the method; parameters are slices of
 *     the request path, at most WEFT_MAX_PARAMS;
 *   - decoding never grows the text, and is the identity on text without
 *     '%' (and '+', for queries).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "request/request.h"
#include "config/router.h"

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            __builtin_trap();                                                                                          \
    } while (0)

static const unsigned methods[] = {WEFT_M_GET,    WEFT_M_HEAD,    WEFT_M_POST,  WEFT_M_PUT,
                                   WEFT_M_DELETE, WEFT_M_PATCH,   WEFT_M_OPTIONS, WEFT_M_OTHER};

#define MAX_ROUTES 16

/* Next '\n'-terminated line of [*p, end); NUL-terminated copy in `line`. */
static int next_line(const uint8_t **p, const uint8_t *end, char *line, size_t cap, size_t *len)
{
    if (*p >= end)
        return 0;
    const uint8_t *nl = memchr(*p, '\n', (size_t)(end - *p));
    size_t n = (size_t)((nl != NULL ? nl : end) - *p);
    *len = n < cap - 1 ? n : cap - 1;
    memcpy(line, *p, *len);
    line[*len] = '\0';
    *p = nl != NULL ? nl + 1 : end;
    return 1;
}

static void check_decode(weft_req *r, const char *s, size_t len, int plus)
{
    char *d = weft_req_decode(r, s, len, plus);
    CHECK(d != NULL);
    size_t dlen = strnlen(d, len + 1);
    int has_nul_escape = 0;
    for (size_t i = 0; i + 2 < len; i++)
        if (s[i] == '%' && s[i + 1] == '0' && s[i + 2] == '0')
            has_nul_escape = 1;
    if (!has_nul_escape && memchr(s, '\0', len) == NULL) {
        CHECK(dlen <= len);
        if (memchr(s, '%', len) == NULL && (!plus || memchr(s, '+', len) == NULL))
            CHECK(dlen == len && memcmp(d, s, len) == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const uint8_t *p = data + 1, *end = data + size;
    size_t n_patterns = data[0] % MAX_ROUTES;
    static char line[4096];
    char why[512];
    size_t len;

    weft_router *router = weft_router_new();
    unsigned added_methods[MAX_ROUTES] = {0};
    size_t n_added = 0;
    for (size_t i = 0; i < n_patterns && next_line(&p, end, line, sizeof(line), &len); i++) {
        /* low bits of the line's length pick a method set; never empty */
        unsigned m = (unsigned)(len * 2654435761u >> 24) & WEFT_M_ALL;
        if (m == 0)
            m = WEFT_M_ALL;
        why[0] = '\0';
        int ok = weft_pattern_check(line, why, sizeof(why)) == 0;
        CHECK(ok || why[0] != '\0');
        void *conflict = (void *)1;
        why[0] = '\0';
        int added = weft_router_add(router, line, m, (void *)(uintptr_t)(n_added + 1), &conflict, why, sizeof(why)) == 0;
        if (!ok)
            CHECK(!added && why[0] != '\0');
        if (added) {
            CHECK(conflict == NULL);
            added_methods[n_added++] = m;
        } else {
            CHECK(why[0] != '\0');
            /* a conflict names a route that exists */
            CHECK(conflict == NULL || ((uintptr_t)conflict >= 1 && (uintptr_t)conflict <= n_added));
        }
    }

    while (next_line(&p, end, line, sizeof(line), &len)) {
        unsigned method = len > 0 ? methods[(unsigned char)line[0] % 8] : WEFT_M_GET;
        const char *q = memchr(line, '?', len);
        size_t plen = q != NULL ? (size_t)(q - line) : len;
        /* The path as a buffer of exactly plen bytes, so ASan sees any read past it. */
        char *path = malloc(plen > 0 ? plen : 1);
        CHECK(path != NULL);
        memcpy(path, line, plen);
        weft_match m;
        memset(&m, 0xA5, sizeof(m));
        weft_router_match(router, path, plen, method, &m);
        CHECK(m.status == 200 || m.status == 404 || m.status == 405);
        CHECK(m.n_params <= WEFT_MAX_PARAMS);
        weft_req *r = weft_req_new();
        CHECK(r != NULL);
        if (m.status == 200) {
            uintptr_t id = (uintptr_t)m.route;
            CHECK(id >= 1 && id <= n_added);
            CHECK(added_methods[id - 1] & method);
            for (size_t i = 0; i < m.n_params; i++) {
                const weft_param_slice *s = &m.params[i];
                CHECK(s->name != NULL && s->name[0] != '\0');
                CHECK(s->value >= path && s->value + s->value_len <= path + plen);
                CHECK(s->value_len > 0 && memchr(s->value, '/', s->value_len) == NULL);
                check_decode(r, s->value, s->value_len, 0);
            }
        } else if (m.status == 405) {
            CHECK(m.allow != 0 && (m.allow & method) == 0);
        }
        check_decode(r, path, plen, 0);
        if (q != NULL) {
            /* the query parser (lazy, inside weft_request_req_query) over the rest of the line */
            r->query = weft_req_strndup(r, q + 1, len - plen - 1);
            const char *v = weft_request_req_query(r, "q");
            (void)v;
            CHECK(r->n_query <= len);
            for (size_t i = 0; i < r->n_query; i++)
                CHECK(r->query_kv[i].name != NULL && r->query_kv[i].value != NULL);
            check_decode(r, q + 1, len - plen - 1, 1);
        }
        weft_req_free(r);
        free(path);
    }
    weft_router_free(router);
    return 0;
}
