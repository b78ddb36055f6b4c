/*
 * `headers = { unset = [...]; set = { Name = "value"; }; add = { Name = "v" or ["v1", "v2"]; }; }`
 * validated into weft_headers_cfg (config/edge_cfg.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"
#include "config/config.h"
#include "config/edge_cfg.h"
#include "config/schema.h"

#define MAX_NAME 256
#define MAX_VALUE 8192

/* RFC 9110 tchar. */
static int is_token(const char *s)
{
    if (*s == '\0' || strlen(s) > MAX_NAME)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && strchr("!#$%&'*+-.^_`|~", *s) == NULL)
            return 0;
    return 1;
}

/* Names h2o or weft own on the wire: a rule would corrupt the framing or
 * fight with what the protocol layer, compression or the upgrade write. */
static const char *prohibited(const char *name)
{
    static const char *const hop[] = {"connection", "content-length", "transfer-encoding", "keep-alive",
                                      "proxy-connection", "te", "trailer", "upgrade", NULL};
    for (const char *const *p = hop; *p; p++)
        if (strcasecmp(name, *p) == 0)
            return "is part of the message framing, which weft writes itself";
    if (strcasecmp(name, "date") == 0 || strcasecmp(name, "server") == 0)
        return "is written by the protocol layer of every answer";
    if (strcasecmp(name, "content-encoding") == 0)
        return "is decided by compression (compress), not by a rule";
    return NULL;
}

static int check_name(vctx *v, const config_setting_t *s, const char *where, const char *name)
{
    if (!is_token(name)) {
        weft_cfg_error(v, s, where, "'%s' is not a header name (1-%d token characters)", name, MAX_NAME);
        return 0;
    }
    const char *why = prohibited(name);
    if (why != NULL) {
        weft_cfg_error(v, s, where, "header '%s' %s", name, why);
        return 0;
    }
    return 1;
}

static int check_value(vctx *v, const config_setting_t *s, const char *where, const char *name, const char *value)
{
    size_t n = strlen(value);
    if (n > MAX_VALUE) {
        weft_cfg_error(v, s, where, "the value of '%s' is longer than %d bytes", name, MAX_VALUE);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)value[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            weft_cfg_error(v, s, where, "the value of '%s' contains a control character (CR, LF or another): "
                                        "it would split or corrupt the answer's head",
                           name);
            return 0;
        }
    }
    return 1;
}

static char *lower_dup(const char *s)
{
    char *d = weft_cfg_strdup(s);
    for (char *p = d; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return d;
}

static void push(weft_headers_cfg *h, size_t *cap, int op, const char *name, const char *value)
{
    if (h->n == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        h->rules = realloc(h->rules, *cap * sizeof(*h->rules));
        if (h->rules == NULL)
            weft_fatal("out of memory");
    }
    h->rules[h->n++] = (weft_header_rule){op, lower_dup(name), value != NULL ? weft_cfg_strdup(value) : NULL};
}

static int load_unset(vctx *v, const config_setting_t *g, const char *where, weft_headers_cfg *h, size_t *cap)
{
    char p[300];
    weft_cfg_path_join(p, sizeof(p), where, "unset");
    config_setting_t *list = weft_cfg_member(v, g, where, "unset", CONFIG_TYPE_ARRAY);
    int ok = list != NULL || config_setting_get_member(g, "unset") == NULL;
    for (int i = 0; list != NULL && i < config_setting_length(list); i++) {
        config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
        if (config_setting_type(e) != CONFIG_TYPE_STRING) {
            weft_cfg_error(v, e, p, "must be a list of header names");
            ok = 0;
        } else if (check_name(v, e, p, config_setting_get_string(e))) {
            push(h, cap, WEFT_HDR_UNSET, config_setting_get_string(e), NULL);
        } else {
            ok = 0;
        }
    }
    return ok;
}

static int load_values(vctx *v, const config_setting_t *g, const char *where, const char *key, int op,
                       weft_headers_cfg *h, size_t *cap)
{
    char p[300];
    weft_cfg_path_join(p, sizeof(p), where, key);
    config_setting_t *grp = weft_cfg_member(v, g, where, key, CONFIG_TYPE_GROUP);
    int ok = grp != NULL || config_setting_get_member(g, key) == NULL;
    for (int i = 0; grp != NULL && i < config_setting_length(grp); i++) {
        config_setting_t *e = config_setting_get_elem(grp, (unsigned)i);
        const char *name = config_setting_name(e);
        if (!check_name(v, e, p, name)) {
            ok = 0;
            continue;
        }
        if (config_setting_type(e) == CONFIG_TYPE_STRING) {
            if (check_value(v, e, p, name, config_setting_get_string(e)))
                push(h, cap, op, name, config_setting_get_string(e));
            else
                ok = 0;
            continue;
        }
        /* add may send a header several times: Link = ["<a>; rel=preload", "<b>; rel=preload"] */
        int is_list = config_setting_type(e) == CONFIG_TYPE_ARRAY || config_setting_type(e) == CONFIG_TYPE_LIST;
        if (op != WEFT_HDR_ADD || !is_list || config_setting_length(e) == 0) {
            weft_cfg_error(v, e, p, op == WEFT_HDR_ADD ? "'%s' must be a string or a list of strings"
                                                       : "'%s' must be a string (add sends a header more than once)",
                           name);
            ok = 0;
            continue;
        }
        for (int k = 0; k < config_setting_length(e); k++) {
            config_setting_t *x = config_setting_get_elem(e, (unsigned)k);
            if (config_setting_type(x) != CONFIG_TYPE_STRING) {
                weft_cfg_error(v, x, p, "'%s' must be a list of strings", name);
                ok = 0;
            } else if (check_value(v, x, p, name, config_setting_get_string(x))) {
                push(h, cap, op, name, config_setting_get_string(x));
            } else {
                ok = 0;
            }
        }
    }
    return ok;
}

/* NULL when the group is absent; *ok = 0 after an error. */
static weft_headers_cfg *load_headers(vctx *v, const config_setting_t *parent, const char *where, int *ok)
{
    static const char *const keys[] = {"unset", "set", "add", NULL};
    config_setting_t *g = weft_cfg_member(v, parent, where, "headers", CONFIG_TYPE_GROUP);
    if (g == NULL) {
        if (config_setting_get_member(parent, "headers") != NULL)
            *ok = 0;
        return NULL;
    }
    char p[300];
    weft_cfg_path_join(p, sizeof(p), where, "headers");
    weft_cfg_check_keys(v, g, p, keys);
    weft_headers_cfg *h = weft_cfg_calloc(1, sizeof(*h));
    size_t cap = 0;
    int good = load_unset(v, g, p, h, &cap);
    good &= load_values(v, g, p, "set", WEFT_HDR_SET, h, &cap);
    good &= load_values(v, g, p, "add", WEFT_HDR_ADD, h, &cap);
    *ok = *ok && good;
    return h;
}

void weft_headers_cfg_free(weft_headers_cfg *h)
{
    if (h == NULL)
        return;
    for (size_t i = 0; i < h->n; i++) {
        free(h->rules[i].name);
        free(h->rules[i].value);
    }
    free(h->rules);
    free(h);
}

int weft_cfg_load_route_edge(vctx *v, const config_setting_t *g, const char *where, weft_route_cfg *r)
{
    int ok = 1;
    r->headers = load_headers(v, g, where, &ok);
    ok &= weft__cfg_load_compress(v, g, where, &r->compress);
    ok &= weft__cfg_load_cors(v, g, where, r);
    return ok;
}

void weft_cfg_load_edge(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    int ok = 1;
    cfg->headers = load_headers(v, root, "", &ok);
    (void)weft__cfg_load_compress(v, root, "", &cfg->compress);
}
