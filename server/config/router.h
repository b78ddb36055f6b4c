/*
 * Method + path routing over patterns with named parameters
 * ("/persons/{id}"). Literal segments win over parameters; a path that
 * matches with the wrong method yields 405 and the methods that would do.
 * A router is immutable once built, so every loop thread reads it unlocked.
 */
#ifndef WEFT_ROUTER_H
#define WEFT_ROUTER_H

#include <stddef.h>

#define WEFT_MAX_PARAMS 8
#define WEFT_MAX_SEGMENTS 64

typedef struct weft_router weft_router;

typedef struct weft_param_slice {
    const char *name;  /* NUL-terminated, owned by the router */
    const char *value; /* raw (still percent-encoded) bytes of the request path */
    size_t value_len;
} weft_param_slice;

typedef struct weft_match {
    int status;     /* 200, 404 or 405 */
    void *route;    /* what was added with the pattern (status 200) */
    unsigned allow; /* methods the path accepts (status 405) */
    size_t n_params;
    weft_param_slice params[WEFT_MAX_PARAMS];
    int prefix;        /* the route was added with weft_router_add_prefix */
    size_t prefix_len; /* bytes of the path its prefix covers (the rest is below it) */
} weft_match;

/**
 * Resolves "." and ".." segments of a raw (still percent-encoded) request
 * path into `out` (at least len + 1 bytes), counting "%2e" as ".", and leaving
 * every other escape encoded: routing then splits on real slashes only
 * ("%2F" stays inside its segment) and each path parameter is decoded
 * exactly once. Returns the length, or -1 for a path that climbs above the
 * root or contains an encoded NUL ("%00").
 */
long weft_path_normalize(const char *in, size_t len, char *out);

/**
 * 1 when the raw path is its own normal form with nothing to decode: it
 * starts with '/' and has no escape, no empty segment ("//"; a trailing
 * '/' is kept by normalizing too) and no segment starting with '.'. Most
 * requests name such a path; it is then routed and served as it is, with
 * no copy (a hidden name or an escape takes weft_path_normalize's way).
 */
int weft_path_is_plain(const char *in, size_t len);

/** 0 if `pattern` is a valid route pattern; otherwise -1 and the reason in `why`. */
int weft_pattern_check(const char *pattern, char *why, size_t size);

weft_router *weft_router_new(void);
void weft_router_free(weft_router *r);
/**
 * Adds `pattern` for the methods in `methods` (WEFT_M_* bits). Returns 0, or
 * -1 with the reason in `why`; when another route already claims the same
 * pattern and method, *conflict is set to that route.
 */
int weft_router_add(weft_router *r, const char *pattern, unsigned methods, void *route, void **conflict, char *why,
                    size_t size);
/**
 * Adds a literal prefix ("/assets", or "/" for everything): it matches the
 * path itself and every path below it, when no pattern added with
 * weft_router_add matches the path (for any method); the longest such
 * prefix wins. One route per prefix.
 */
int weft_router_add_prefix(weft_router *r, const char *prefix, unsigned methods, void *route, void **conflict,
                           char *why, size_t size);
void weft_router_match(const weft_router *r, const char *path, size_t len, unsigned method, weft_match *m);

#endif
