/*
 * `compress = { types = [...]; min_size = 256; algorithms = ["zstd", "br", "gzip"]; }`
 * (or `compress = false`) validated into weft_compress_cfg (config/edge_cfg.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "config/edge_cfg.h"
#include "config/schema.h"

static const char *const alg_names[WEFT_ENC_COUNT] = {"zstd", "br", "gzip"};

/* Text formats, where compression pays; the wildcard covers text/event-stream. */
static const char *const default_types[] = {"text/*", "application/json", "application/*+json", "application/javascript",
                                            "application/xml", "application/*+xml", "image/svg+xml", "application/wasm",
                                            NULL};

/* Formats compressed already: a second pass costs CPU and gains nothing. */
static const char *const compressed[] = {"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif",
                                         "image/heic", "application/zip", "application/gzip", "application/x-gzip",
                                         "application/zstd", "application/x-bzip2", "application/x-xz",
                                         "application/x-7z-compressed", "application/x-rar-compressed",
                                         "application/pdf", "font/woff", "font/woff2", NULL};

int weft_compress_type_is_compressed(const char *type, size_t len)
{
    if ((len >= 6 && strncasecmp(type, "video/", 6) == 0) || (len >= 6 && strncasecmp(type, "audio/", 6) == 0))
        return 1;
    for (const char *const *p = compressed; *p; p++)
        if (strlen(*p) == len && strncasecmp(type, *p, len) == 0)
            return 1;
    return 0;
}

/* "type/sub", or a pattern whose one star stands for the start of the subtype (text/ followed by a star). */
static int pattern_matches(const char *pat, const char *type, size_t len)
{
    const char *star = strchr(pat, '*');
    if (star == NULL)
        return strlen(pat) == len && strncasecmp(pat, type, len) == 0;
    size_t pre = (size_t)(star - pat), post = strlen(star + 1);
    return len >= pre + post && strncasecmp(pat, type, pre) == 0 && strncasecmp(star + 1, type + len - post, post) == 0 &&
           memchr(type + pre, '/', len - pre - post) == NULL;
}

int weft_compress_type_matches(const weft_compress_cfg *c, const char *type, size_t len)
{
    for (size_t i = 0; i < c->n_types; i++)
        if (pattern_matches(c->types[i], type, len))
            return 1;
    return 0;
}

static int tchar(char ch) { return isalnum((unsigned char)ch) || strchr("!#$%&'+-.^_`|~", ch) != NULL; }

/* Why `t` is not a media type pattern we accept, or NULL. */
static const char *bad_type(const char *t)
{
    const char *slash = strchr(t, '/');
    if (slash == NULL || slash == t || slash[1] == '\0' || strlen(t) > 127)
        return "is not a media type like \"application/json\" or \"text/*\"";
    for (const char *p = t; p < slash; p++)
        if (!tchar(*p))
            return "is not a media type like \"application/json\" or \"text/*\"";
    int stars = 0;
    for (const char *p = slash + 1; *p; p++) {
        if (*p == '*')
            stars++;
        else if (!tchar(*p))
            return "is not a media type like \"application/json\" or \"text/*\"";
    }
    if (stars > 1 || (stars == 1 && slash[1] != '*'))
        return "may have one '*', at the start of the subtype (\"text/*\", \"application/*+json\")";
    if (strcmp(slash + 1, "*") == 0 &&
        (strncasecmp(t, "image/", 6) == 0 || strncasecmp(t, "video/", 6) == 0 || strncasecmp(t, "audio/", 6) == 0 ||
         strncasecmp(t, "font/", 5) == 0))
        return "names formats that are compressed already (list the text ones, like \"image/svg+xml\")";
    if (stars == 0 && weft_compress_type_is_compressed(t, strlen(t)))
        return "is compressed already: compressing it again costs CPU and saves nothing";
    return NULL;
}

static char *lower_dup(const char *s)
{
    char *d = weft_cfg_strdup(s);
    for (char *p = d; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return d;
}

static int load_types(vctx *v, const config_setting_t *g, const char *where, weft_compress_cfg *c)
{
    config_setting_t *list = weft_cfg_member(v, g, where, "types", CONFIG_TYPE_ARRAY);
    if (list == NULL) {
        if (config_setting_get_member(g, "types") != NULL)
            return 0;
        size_t n = 0;
        while (default_types[n] != NULL)
            n++;
        c->types = weft_cfg_calloc(n, sizeof(char *));
        for (c->n_types = 0; c->n_types < n; c->n_types++)
            c->types[c->n_types] = weft_cfg_strdup(default_types[c->n_types]);
        return 1;
    }
    char p[300];
    weft_cfg_path_join(p, sizeof(p), where, "types");
    int n = config_setting_length(list), ok = 1;
    c->types = weft_cfg_calloc((size_t)n, sizeof(char *));
    for (int i = 0; i < n; i++) {
        config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
        const char *t = config_setting_type(e) == CONFIG_TYPE_STRING ? config_setting_get_string(e) : NULL;
        const char *why = t != NULL ? bad_type(t) : "must be a list of media types";
        if (why != NULL) {
            weft_cfg_error(v, e, p, "'%s' %s", t != NULL ? t : "", why);
            ok = 0;
            continue;
        }
        c->types[c->n_types++] = lower_dup(t);
    }
    return ok;
}

static int load_algorithms(vctx *v, const config_setting_t *g, const char *where, weft_compress_cfg *c)
{
    config_setting_t *list = weft_cfg_member(v, g, where, "algorithms", CONFIG_TYPE_ARRAY);
    if (list == NULL) {
        for (int i = 0; i < WEFT_ENC_COUNT; i++)
            c->algs[c->n_algs++] = i;
        return config_setting_get_member(g, "algorithms") == NULL;
    }
    char p[300];
    weft_cfg_path_join(p, sizeof(p), where, "algorithms");
    int ok = 1;
    for (int i = 0; i < config_setting_length(list); i++) {
        config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
        const char *a = config_setting_type(e) == CONFIG_TYPE_STRING ? config_setting_get_string(e) : "";
        int k = 0;
        while (k < WEFT_ENC_COUNT && strcmp(a, alg_names[k]) != 0)
            k++;
        int dup = 0;
        for (int j = 0; j < c->n_algs && k < WEFT_ENC_COUNT; j++)
            dup |= c->algs[j] == k;
        if (k == WEFT_ENC_COUNT || dup) {
            weft_cfg_error(v, e, p, dup ? "'%s' is listed twice" : "'%s' is not one of zstd, br, gzip", a);
            ok = 0;
            continue;
        }
        c->algs[c->n_algs++] = k;
    }
    return ok;
}

int weft__cfg_load_compress(vctx *v, const config_setting_t *parent, const char *where, weft_compress_cfg **out)
{
    static const char *const keys[] = {"types", "min_size", "algorithms", NULL};
    *out = NULL;
    config_setting_t *s = config_setting_get_member(parent, "compress");
    if (s == NULL)
        return 1;
    char p[300];
    weft_cfg_path_join(p, sizeof(p), where, "compress");
    if (config_setting_type(s) == CONFIG_TYPE_BOOL && !config_setting_get_bool(s)) {
        *out = weft_cfg_calloc(1, sizeof(**out)); /* no algorithm: this route never compresses */
        return 1;
    }
    if (!config_setting_is_group(s)) {
        weft_cfg_error(v, s, p, "must be a group { types = [...]; min_size = ...; algorithms = [...]; } or false");
        return 0;
    }
    weft_cfg_check_keys(v, s, p, keys);
    weft_compress_cfg *c = weft_cfg_calloc(1, sizeof(*c));
    *out = c;
    int ok = load_types(v, s, p, c);
    ok &= load_algorithms(v, s, p, c);
    c->min_size = (size_t)weft_cfg_int(v, s, p, "min_size", 0, 1LL << 30, 256);
    return ok;
}

void weft_compress_cfg_free(weft_compress_cfg *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->n_types; i++)
        free(c->types[i]);
    free(c->types);
    free(c);
}
