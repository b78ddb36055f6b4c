/*
 * A route's `cors = { origins; methods; headers; expose; credentials; max_age; }`
 * validated into weft_cors_cfg (config/edge_cfg.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/edge_cfg.h"
#include "config/methods.h"
#include "config/schema.h"

/* A serialized origin as browsers send it: scheme "://" host [":" port], nothing after. */
static int origin_ok(const char *o)
{
    const char *h;
    if (strncmp(o, "https://", 8) == 0)
        h = o + 8;
    else if (strncmp(o, "http://", 7) == 0)
        h = o + 7;
    else
        return 0;
    if (*h == '\0' || strlen(o) > 255)
        return 0;
    const char *p = h;
    if (*p == '[') { /* an IPv6 literal */
        p++;
        while (*p && (isxdigit((unsigned char)*p) || *p == ':' || *p == '.'))
            p++;
        if (*p++ != ']')
            return 0;
    } else {
        while (*p && (isalnum((unsigned char)*p) || *p == '-' || *p == '.'))
            p++;
        if (p == h)
            return 0;
    }
    if (*p == ':') {
        const char *d = ++p;
        while (isdigit((unsigned char)*p))
            p++;
        if (p == d || p - d > 5)
            return 0;
    }
    return *p == '\0';
}

static char *lower_dup(const char *s)
{
    char *d = weft_cfg_strdup(s);
    for (char *p = d; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return d;
}

static int is_token(const char *s)
{
    if (*s == '\0' || strlen(s) > 256)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && strchr("!#$%&'*+-.^_`|~", *s) == NULL)
            return 0;
    return 1;
}

/* A list of header names, or the string "*" when star_ok; joined into *text. */
static int load_names(vctx *v, const config_setting_t *g, const char *where, const char *key, int star_ok, int *star,
                      char ***names, size_t *n, char **text)
{
    char p[300];
    weft_cfg_path_join(p, sizeof(p), where, key);
    config_setting_t *s = config_setting_get_member(g, key);
    if (s == NULL)
        return 1;
    if (config_setting_type(s) == CONFIG_TYPE_STRING && strcmp(config_setting_get_string(s), "*") == 0 && star_ok) {
        *star = 1;
        return 1;
    }
    if (config_setting_type(s) != CONFIG_TYPE_ARRAY && config_setting_type(s) != CONFIG_TYPE_LIST) {
        weft_cfg_error(v, s, p, star_ok ? "must be a list of header names or \"*\"" : "must be a list of header names");
        return 0;
    }
    int ok = 1, len = config_setting_length(s);
    size_t size = 1;
    *names = weft_cfg_calloc((size_t)len, sizeof(char *));
    for (int i = 0; i < len; i++) {
        config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        const char *nm = config_setting_type(e) == CONFIG_TYPE_STRING ? config_setting_get_string(e) : "";
        if (!is_token(nm)) {
            weft_cfg_error(v, e, p, "'%s' is not a header name", nm);
            ok = 0;
            continue;
        }
        (*names)[(*n)++] = lower_dup(nm);
        size += strlen(nm) + 2;
    }
    if (*n > 0) {
        *text = weft_cfg_calloc(1, size);
        for (size_t i = 0; i < *n; i++)
            snprintf(*text + strlen(*text), size - strlen(*text), "%s%s", i ? ", " : "", (*names)[i]);
    }
    return ok;
}

static int load_origins(vctx *v, const config_setting_t *g, const char *where, weft_cors_cfg *c)
{
    char p[300];
    weft_cfg_path_join(p, sizeof(p), where, "origins");
    config_setting_t *s = config_setting_get_member(g, "origins");
    if (s == NULL) {
        weft_cfg_error(v, g, p, "is required: the origins allowed, like [\"https://app.example\"], or \"*\"");
        return 0;
    }
    if (config_setting_type(s) == CONFIG_TYPE_STRING && strcmp(config_setting_get_string(s), "*") == 0) {
        c->any_origin = 1;
        return 1;
    }
    if ((config_setting_type(s) != CONFIG_TYPE_ARRAY && config_setting_type(s) != CONFIG_TYPE_LIST) ||
        config_setting_length(s) == 0) {
        weft_cfg_error(v, s, p, "must be a non-empty list of origins like [\"https://app.example\"], or \"*\"");
        return 0;
    }
    int ok = 1;
    c->origins = weft_cfg_calloc((size_t)config_setting_length(s), sizeof(char *));
    for (int i = 0; i < config_setting_length(s); i++) {
        config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        const char *o = config_setting_type(e) == CONFIG_TYPE_STRING ? config_setting_get_string(e) : "";
        if (!origin_ok(o)) {
            weft_cfg_error(v, e, p, "'%s' is not an origin: scheme (http or https), \"://\", host and an optional port, "
                                    "with no path or trailing '/'",
                           o);
            ok = 0;
            continue;
        }
        c->origins[c->n_origins++] = lower_dup(o);
    }
    return ok;
}

static int load_methods(vctx *v, const config_setting_t *g, const char *where, unsigned route_methods,
                        weft_cors_cfg *c)
{
    char p[300];
    weft_cfg_path_join(p, sizeof(p), where, "methods");
    config_setting_t *s = weft_cfg_member(v, g, where, "methods", CONFIG_TYPE_ARRAY);
    int ok = s != NULL || config_setting_get_member(g, "methods") == NULL;
    c->methods = route_methods & ~(unsigned)(WEFT_M_OPTIONS | WEFT_M_OTHER);
    if (s != NULL) {
        c->methods = 0;
        for (int i = 0; i < config_setting_length(s); i++) {
            config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
            const char *m = config_setting_type(e) == CONFIG_TYPE_STRING ? config_setting_get_string(e) : "";
            unsigned bit = weft_method_bit(m, strlen(m));
            if (bit == WEFT_M_OTHER || bit == WEFT_M_OPTIONS || !(bit & route_methods)) {
                weft_cfg_error(v, e, p, "'%s' is not a method this route serves (one of its methods, not OPTIONS)", m);
                ok = 0;
                continue;
            }
            c->methods |= bit;
        }
    }
    char text[128];
    weft_methods_format(c->methods, text, sizeof(text));
    c->methods_text = weft_cfg_strdup(text);
    return ok;
}

int weft__cfg_load_cors(vctx *v, const config_setting_t *parent, const char *where, weft_route_cfg *r)
{
    static const char *const keys[] = {"origins", "methods", "headers", "expose", "credentials", "max_age", NULL};
    config_setting_t *g = weft_cfg_member(v, parent, where, "cors", CONFIG_TYPE_GROUP);
    if (g == NULL)
        return config_setting_get_member(parent, "cors") == NULL;
    char p[300];
    weft_cfg_path_join(p, sizeof(p), where, "cors");
    weft_cfg_check_keys(v, g, p, keys);
    weft_cors_cfg *c = weft_cfg_calloc(1, sizeof(*c));
    r->cors = c;
    int ok = load_origins(v, g, p, c);
    ok &= load_methods(v, g, p, r->methods, c);
    ok &= load_names(v, g, p, "headers", 1, &c->any_header, &c->headers, &c->n_headers, &c->headers_text);
    int expose_star = 0;
    char **expose = NULL;
    size_t n_expose = 0;
    ok &= load_names(v, g, p, "expose", 0, &expose_star, &expose, &n_expose, &c->expose_text);
    for (size_t i = 0; i < n_expose; i++)
        free(expose[i]);
    free(expose);
    config_setting_t *cred = weft_cfg_member(v, g, p, "credentials", CONFIG_TYPE_BOOL);
    c->credentials = cred != NULL && config_setting_get_bool(cred);
    if (c->credentials && c->any_origin) {
        /* Browsers refuse "*" with credentials; echoing any origin instead
         * would let every site read a logged-in user's answers. */
        weft_cfg_error(v, cred, p, "credentials = true needs a list of origins: with origins = \"*\" any site could "
                                   "read the answers a user's cookies unlock");
        ok = 0;
    }
    c->max_age = (int)weft_cfg_int(v, g, p, "max_age", 0, 86400, 600);
    return ok;
}

void weft_cors_cfg_free(weft_cors_cfg *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->n_origins; i++)
        free(c->origins[i]);
    free(c->origins);
    for (size_t i = 0; i < c->n_headers; i++)
        free(c->headers[i]);
    free(c->headers);
    free(c->methods_text);
    free(c->headers_text);
    free(c->expose_text);
    free(c);
}
