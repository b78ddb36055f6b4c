/*
 * What the operator wrote about the answers themselves, per route or for
 * every answer: header rules (`headers`), compression (`compress`) and CORS
 * (`cors`). Plain validated data; server/edge/ applies them to h2o's
 * responses. Parsed at start-up and on reload (config/ only).
 */
#ifndef WEFT_CONFIG_EDGE_CFG_H
#define WEFT_CONFIG_EDGE_CFG_H

#include <libconfig.h>
#include <stddef.h>

enum { WEFT_HDR_UNSET, WEFT_HDR_SET, WEFT_HDR_ADD };

typedef struct weft_header_rule {
    int op;      /* WEFT_HDR_* */
    char *name;  /* lower case, a token */
    char *value; /* NULL for WEFT_HDR_UNSET; no CR, LF or other control bytes */
} weft_header_rule;

/** `headers = { unset = [...]; set = {...}; add = {...}; }`, in the order applied: unset, set, add. */
typedef struct weft_headers_cfg {
    weft_header_rule *rules;
    size_t n;
} weft_headers_cfg;

enum { WEFT_ENC_ZSTD, WEFT_ENC_BR, WEFT_ENC_GZIP, WEFT_ENC_COUNT };

/** `compress = { types; min_size; algorithms; }`; n_algs 0 (`compress = false`): never. */
typedef struct weft_compress_cfg {
    int algs[WEFT_ENC_COUNT]; /* WEFT_ENC_*, the server's preference order */
    int n_algs;
    char **types; /* lower case media types; "*" stands for the start of a subtype */
    size_t n_types;
    size_t min_size; /* bytes; answers of a known smaller length go out as they are */
} weft_compress_cfg;

/** A route's `cors` group. */
typedef struct weft_cors_cfg {
    int any_origin;  /* origins = "*" */
    char **origins;  /* serialized origins, lower case: "https://app.example:8443" */
    size_t n_origins;
    unsigned methods;      /* WEFT_M_* a preflight may ask for */
    char *methods_text;    /* Access-Control-Allow-Methods */
    int any_header;        /* headers = "*": the requested ones are allowed */
    char **headers;        /* request headers a preflight may ask for, lower case */
    size_t n_headers;
    char *headers_text;    /* Access-Control-Allow-Headers; NULL when none */
    char *expose_text;     /* Access-Control-Expose-Headers; NULL when none */
    int credentials;
    int max_age;           /* seconds, Access-Control-Max-Age; 0: not sent */
} weft_cors_cfg;

struct vctx;
struct weft_config;
struct weft_route_cfg;

/** Route `g`'s headers, compress and cors settings into `r`; 0 after reporting an error. */
int weft_cfg_load_route_edge(struct vctx *v, const config_setting_t *g, const char *where, struct weft_route_cfg *r);
/** The top-level headers and compress groups into `cfg`. */
void weft_cfg_load_edge(struct vctx *v, struct weft_config *cfg, const config_setting_t *root);
/* Within config/: headers_cfg.c calls the other two parsers. */
int weft__cfg_load_compress(struct vctx *v, const config_setting_t *parent, const char *where, weft_compress_cfg **out);
int weft__cfg_load_cors(struct vctx *v, const config_setting_t *parent, const char *where, struct weft_route_cfg *r);
void weft_headers_cfg_free(weft_headers_cfg *h);
void weft_compress_cfg_free(weft_compress_cfg *c);
void weft_cors_cfg_free(weft_cors_cfg *c);

/** The media type of a Content-Type value (before ';', trimmed) matches one of `c`'s types. */
int weft_compress_type_matches(const weft_compress_cfg *c, const char *type, size_t len);
/** `type` (a media type, any case) is one that is compressed already (images, archives, fonts…). */
int weft_compress_type_is_compressed(const char *type, size_t len);

#endif
