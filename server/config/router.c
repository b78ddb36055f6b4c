#include "config/router.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/methods.h"
#include "base/log.h"

typedef struct endpoint {
    unsigned methods;
    void *route;
} endpoint;

/* Literal children are found through a hash table (open addressing, a power
 * of two of slots, at most half full), both while routes are added and on
 * every request: a linear scan made adding n routes under one prefix
 * O(n^2) (200,001 routes in a fragment kept the control thread busy for
 * ~115 s) and made matching a path O(n) at such a node. */
typedef struct node {
    char *literal; /* this node's segment when it is a literal child */
    size_t literal_len;
    struct node **lits; /* insertion order, for freeing */
    size_t n_lits;
    struct node **slots;
    size_t n_slots;
    struct node *param; /* the {name} child, at most one per position */
    char *param_name;
    endpoint *eps;
    size_t n_eps;
    endpoint *prefix; /* weft_router_add_prefix: this path and everything below */
    /* Where matching may stop early: most paths served under a prefix
     * ("/" for a site's files) would otherwise be split and hashed twice,
     * once for the patterns and once for the prefixes. */
    unsigned char eps_in;       /* this node or one below has an endpoint */
    unsigned char prefix_under; /* a node strictly below has a prefix */
} node;

struct weft_router {
    node root;
};

static void *xalloc(void *p)
{
    if (p == NULL)
        weft_fatal("out of memory");
    return p;
}

/* Splits off the next non-empty segment; empty segments ("//", a trailing
 * "/") carry no meaning for routing. */
static int next_segment(const char **p, const char *end, const char **seg, size_t *len)
{
    while (*p < end && **p == '/')
        (*p)++;
    if (*p == end)
        return 0;
    *seg = *p;
    while (*p < end && **p != '/')
        (*p)++;
    *len = (size_t)(*p - *seg);
    return 1;
}

static int is_param(const char *seg, size_t len)
{
    return len >= 2 && seg[0] == '{' && seg[len - 1] == '}';
}

int weft_pattern_check(const char *pattern, char *why, size_t size)
{
    size_t plen = strlen(pattern);
    if (pattern[0] != '/') {
        snprintf(why, size, "must start with '/'");
        return -1;
    }
    if (plen > 1024) {
        snprintf(why, size, "is longer than 1024 characters");
        return -1;
    }
    if (strstr(pattern, "//") != NULL || (plen > 1 && pattern[plen - 1] == '/')) {
        snprintf(why, size, "has an empty segment ('//' or a trailing '/')");
        return -1;
    }
    const char *p = pattern, *end = pattern + plen, *seg;
    size_t len, params = 0, segments = 0;
    while (next_segment(&p, end, &seg, &len)) {
        if (++segments > WEFT_MAX_SEGMENTS) {
            snprintf(why, size, "has more than %d segments", WEFT_MAX_SEGMENTS);
            return -1;
        }
        if (is_param(seg, len)) {
            if (++params > WEFT_MAX_PARAMS) {
                snprintf(why, size, "has more than %d parameters", WEFT_MAX_PARAMS);
                return -1;
            }
            for (size_t i = 1; i + 1 < len; i++) {
                char c = seg[i];
                int ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 1 && c >= '0' && c <= '9');
                if (!ok || len - 2 > 32) {
                    snprintf(why, size, "parameter '%.*s' must be {name} with a name of letters, digits and '_'",
                             (int)len, seg);
                    return -1;
                }
            }
            if (len == 2) {
                snprintf(why, size, "parameter '{}' needs a name");
                return -1;
            }
        } else if (memchr(seg, '{', len) != NULL || memchr(seg, '}', len) != NULL) {
            snprintf(why, size, "segment '%.*s': a parameter must be a whole segment, like /{id}", (int)len, seg);
            return -1;
        }
    }
    return 0;
}

weft_router *weft_router_new(void)
{
    return xalloc(calloc(1, sizeof(weft_router)));
}

static void node_free(node *n)
{
    for (size_t i = 0; i < n->n_lits; i++) {
        node_free(n->lits[i]);
        free(n->lits[i]);
    }
    free(n->lits);
    free(n->slots);
    if (n->param != NULL) {
        node_free(n->param);
        free(n->param);
    }
    free(n->param_name);
    free(n->literal);
    free(n->eps);
    free(n->prefix);
}

void weft_router_free(weft_router *r)
{
    if (r == NULL)
        return;
    node_free(&r->root);
    free(r);
}

/* FNV-1a: short segments, no adversary inside the config's own routes. */
static size_t seg_hash(const char *seg, size_t len)
{
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)seg[i]) * 1099511628211ULL;
    return (size_t)h;
}

/* The slot holding `seg`, or the empty slot where it would go. */
static node **lit_slot(const node *n, const char *seg, size_t len)
{
    size_t mask = n->n_slots - 1;
    for (size_t i = seg_hash(seg, len) & mask;; i = (i + 1) & mask) {
        node **s = &n->slots[i];
        if (*s == NULL || ((*s)->literal_len == len && memcmp((*s)->literal, seg, len) == 0))
            return s;
    }
}

static const node *lit_find(const node *n, const char *seg, size_t len)
{
    return n->n_slots != 0 ? *lit_slot(n, seg, len) : NULL;
}

static void lit_grow(node *n)
{
    size_t want = n->n_slots != 0 ? n->n_slots * 2 : 8;
    node **old = n->slots;
    size_t n_old = n->n_slots;
    n->slots = xalloc(calloc(want, sizeof(node *)));
    n->n_slots = want;
    for (size_t i = 0; i < n_old; i++)
        if (old[i] != NULL)
            *lit_slot(n, old[i]->literal, old[i]->literal_len) = old[i];
    free(old);
}

static node *child_for(node *n, const char *seg, size_t len, char *why, size_t size)
{
    if (is_param(seg, len)) {
        if (n->param == NULL) {
            n->param = xalloc(calloc(1, sizeof(node)));
            n->param_name = xalloc(strndup(seg + 1, len - 2));
        } else if (strlen(n->param_name) != len - 2 || memcmp(n->param_name, seg + 1, len - 2) != 0) {
            snprintf(why, size, "parameter '%.*s' is named {%s} in another route at the same position", (int)len, seg,
                     n->param_name);
            return NULL;
        }
        return n->param;
    }
    node *found = (node *)lit_find(n, seg, len);
    if (found != NULL)
        return found;
    if ((n->n_lits + 1) * 2 > n->n_slots)
        lit_grow(n);
    /* Doubling: adding n children costs O(n) moves in all. */
    if ((n->n_lits & (n->n_lits - 1)) == 0)
        n->lits = xalloc(realloc(n->lits, (n->n_lits != 0 ? n->n_lits * 2 : 1) * sizeof(node *)));
    node *c = xalloc(calloc(1, sizeof(node)));
    c->literal = xalloc(strndup(seg, len));
    c->literal_len = len;
    n->lits[n->n_lits++] = c;
    *lit_slot(n, seg, len) = c;
    return c;
}

int weft_router_add(weft_router *r, const char *pattern, unsigned methods, void *route, void **conflict, char *why,
                    size_t size)
{
    *conflict = NULL;
    if (weft_pattern_check(pattern, why, size) != 0)
        return -1;
    node *n = &r->root;
    const char *p = pattern, *end = pattern + strlen(pattern), *seg;
    size_t len;
    while (next_segment(&p, end, &seg, &len))
        if ((n = child_for(n, seg, len, why, size)) == NULL)
            return -1;
    for (size_t i = 0; i < n->n_eps; i++) {
        if (n->eps[i].methods & methods) {
            char m[128];
            weft_methods_format(n->eps[i].methods & methods, m, sizeof(m));
            snprintf(why, size, "%s for %s is already routed", pattern, m[0] ? m : "other methods");
            *conflict = n->eps[i].route;
            return -1;
        }
    }
    n->eps = xalloc(realloc(n->eps, (n->n_eps + 1) * sizeof(endpoint)));
    n->eps[n->n_eps++] = (endpoint){methods, route};
    /* The nodes on the way were all made above. */
    for (p = pattern, n = &r->root, n->eps_in = 1; next_segment(&p, end, &seg, &len); n->eps_in = 1)
        n = is_param(seg, len) ? n->param : (node *)lit_find(n, seg, len);
    return 0;
}

/* Depth-first, literals before the parameter, so /persons/name/{n} beats
 * /persons/{id}/{x}; backtracks when a literal branch dead-ends. */
static int walk(const node *n, const char *p, const char *end, unsigned method, weft_match *m, int depth)
{
    const char *seg;
    size_t len;
    const char *rest = p;
    if (!n->eps_in)
        return 0; /* no endpoint here or below: neither a match nor an Allow */
    if (!next_segment(&rest, end, &seg, &len)) {
        unsigned allow = 0;
        for (size_t i = 0; i < n->n_eps; i++) {
            if (n->eps[i].methods & method) {
                m->status = 200;
                m->route = n->eps[i].route;
                return 1;
            }
            allow |= n->eps[i].methods;
        }
        /* Every path that matches contributes to Allow, not just the first. */
        if (n->n_eps > 0) {
            m->status = 405;
            m->allow |= allow;
        }
        return 0;
    }
    if (depth >= WEFT_MAX_SEGMENTS)
        return 0;
    const node *c = lit_find(n, seg, len); /* at most one literal child matches */
    if (c != NULL && walk(c, rest, end, method, m, depth + 1))
        return 1;
    if (n->param != NULL && m->n_params < WEFT_MAX_PARAMS) {
        m->params[m->n_params++] = (weft_param_slice){n->param_name, seg, len};
        if (walk(n->param, rest, end, method, m, depth + 1))
            return 1;
        m->n_params--;
    }
    return 0;
}

int weft_router_add_prefix(weft_router *r, const char *prefix, unsigned methods, void *route, void **conflict,
                           char *why, size_t size)
{
    *conflict = NULL;
    if (weft_pattern_check(prefix, why, size) != 0)
        return -1;
    if (strchr(prefix, '{') != NULL) {
        snprintf(why, size, "a prefix is literal (no {parameters})");
        return -1;
    }
    node *n = &r->root;
    const char *p = prefix, *end = prefix + strlen(prefix), *seg;
    size_t len;
    while (next_segment(&p, end, &seg, &len))
        if ((n = child_for(n, seg, len, why, size)) == NULL)
            return -1;
    if (n->prefix != NULL) {
        snprintf(why, size, "%s is already served as a prefix", prefix);
        *conflict = n->prefix->route;
        return -1;
    }
    n->prefix = xalloc(malloc(sizeof(endpoint)));
    *n->prefix = (endpoint){methods, route};
    for (p = prefix, n = &r->root; next_segment(&p, end, &seg, &len); n = (node *)lit_find(n, seg, len))
        n->prefix_under = 1;
    return 0;
}

/* Literal segments only, from the root, remembering the deepest prefix. */
static void match_prefix(const node *n, const char *path, size_t len, unsigned method, weft_match *m)
{
    const char *p = path, *end = path + len, *seg;
    size_t seglen;
    const endpoint *best = n->prefix;
    size_t best_len = 0;
    for (int depth = 0; n != NULL && n->prefix_under && depth < WEFT_MAX_SEGMENTS && next_segment(&p, end, &seg, &seglen);
         depth++) {
        if ((n = lit_find(n, seg, seglen)) != NULL && n->prefix != NULL) {
            best = n->prefix;
            best_len = (size_t)(p - path);
        }
    }
    if (best == NULL)
        return;
    m->prefix = 1;
    m->prefix_len = best_len;
    if (best->methods & method) {
        m->status = 200;
        m->route = best->route;
    } else {
        m->status = 405;
        m->allow = best->methods;
    }
}

void weft_router_match(const weft_router *r, const char *path, size_t len, unsigned method, weft_match *m)
{
    m->status = 404;
    m->route = NULL;
    m->allow = 0;
    m->n_params = 0;
    m->prefix = 0;
    m->prefix_len = 0;
    walk(&r->root, path, path + len, method, m, 0);
    if (m->status == 404)
        match_prefix(&r->root, path, len, method, m);
}

/* One segment is "." or ".." (any of its dots may be written "%2e"). */
static int dots(const char *seg, size_t len)
{
    int n = 0;
    for (size_t i = 0; i < len;) {
        if (seg[i] == '.') {
            i++;
        } else if (len - i >= 3 && seg[i] == '%' && seg[i + 1] == '2' && (seg[i + 2] == 'e' || seg[i + 2] == 'E')) {
            i += 3;
        } else {
            return 0;
        }
        if (++n > 2)
            return 0;
    }
    return n;
}

/* The bytes weft_path_is_plain looks at twice: one test per byte for the others. */
static const unsigned char plain_watch[256] = {['%'] = 1, ['/'] = 1, ['.'] = 1};

int weft_path_is_plain(const char *in, size_t len)
{
    if (len == 0 || in[0] != '/')
        return 0;
    for (size_t i = 1; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (plain_watch[c] && (c == '%' || in[i - 1] == '/'))
            return 0;
    }
    return 1;
}

long weft_path_normalize(const char *in, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i + 2 < len; i++)
        if (in[i] == '%' && in[i + 1] == '0' && in[i + 2] == '0')
            return -1;
    const char *p = in, *end = in + len;
    while (p < end) {
        while (p < end && *p == '/')
            p++;
        const char *seg = p;
        while (p < end && *p != '/')
            p++;
        size_t sl = (size_t)(p - seg);
        if (sl == 0)
            break;
        int d = dots(seg, sl);
        if (d == 1)
            continue;
        if (d == 2) {
            if (o == 0)
                return -1;
            while (o > 0 && out[o - 1] != '/')
                o--;
            o = o > 0 ? o - 1 : 0; /* drop the slash too */
            continue;
        }
        out[o++] = '/';
        memcpy(out + o, seg, sl);
        o += sl;
    }
    if (o == 0)
        out[o++] = '/';
    else if (len > 0 && in[len - 1] == '/')
        out[o++] = '/';
    out[o] = '\0';
    return (long)o;
}
