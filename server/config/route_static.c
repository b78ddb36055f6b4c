/* A route that serves a directory: `static = { dir = "..."; index = [...]; }`
 * in place of `plugin` (docs/CONFIG.md, "Static routes"). Validated here,
 * served by edge/static.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/route_files.h"
#include "config/router.h"
#include "config/schema.h"
#include "base/log.h"

#define MAX_INDEX 8

/* What a plugin route has and a static one cannot: named, so the operator
 * learns why rather than reading "unknown setting". */
static const char *const plugin_only[] = {"plugin", "dispatch", "pool", "options", "auto", "stream_body",
                                          "max_body", "max_concurrent", "timeout_ms", NULL};

static int index_name_ok(const char *s)
{
    size_t n = strlen(s);
    /* A name, not a path: a '/' or a leading dot would reach past the
     * directory the request named, or into a hidden file. */
    return n > 0 && n <= 255 && s[0] != '.' && strchr(s, '/') == NULL;
}

static int load_index(vctx *v, const config_setting_t *st, const char *where, weft_static_cfg *s)
{
    s->index = weft_cfg_calloc(MAX_INDEX + 1, sizeof(char *));
    config_setting_t *list = weft_cfg_member(v, st, where, "index", CONFIG_TYPE_ARRAY);
    if (list == NULL) {
        if (config_setting_get_member(st, "index") != NULL)
            return 0;
        s->index[0] = weft_cfg_strdup("index.html");
        return 1;
    }
    int n = config_setting_length(list);
    if (n > MAX_INDEX) {
        weft_cfg_error(v, list, where, "index: at most %d file names", MAX_INDEX);
        return 0;
    }
    int ok = 1;
    for (int i = 0; i < n; i++) {
        config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
        const char *name = config_setting_type(e) == CONFIG_TYPE_STRING ? config_setting_get_string(e) : NULL;
        if (name == NULL || !index_name_ok(name)) {
            weft_cfg_error(v, e, where, "index[%d]: a file name (no '/', not starting with '.', 1-255 bytes)", i);
            ok = 0;
            continue;
        }
        s->index[i] = weft_cfg_strdup(name);
    }
    return ok;
}

static int load_dir(vctx *v, const config_setting_t *st, const char *where, weft_static_cfg *s)
{
    config_setting_t *dir = weft_cfg_require(v, st, where, "dir", CONFIG_TYPE_STRING);
    if (dir == NULL)
        return 0;
    const char *d = config_setting_get_string(dir);
    if (d[0] == '\0') {
        weft_cfg_error(v, dir, where, "dir: empty (a directory to serve, relative to this file or absolute)");
        return 0;
    }
    /* Relative to the file the route is written in: a plugin's NAME.routes
     * names its NAME.public folder beside it. */
    s->dir = weft_cfg_resolve_path(s->file, d);
    struct stat sb;
    if (stat(s->dir, &sb) != 0) {
        weft_cfg_error(v, dir, where, "dir '%s': %s", s->dir, strerror(errno));
        return 0;
    }
    if (!S_ISDIR(sb.st_mode)) {
        weft_cfg_error(v, dir, where, "dir '%s': not a directory", s->dir);
        return 0;
    }
    return 1;
}

static int load_flag(vctx *v, const config_setting_t *st, const char *where, const char *name, int def)
{
    config_setting_t *b = weft_cfg_member(v, st, where, name, CONFIG_TYPE_BOOL);
    return b != NULL ? config_setting_get_bool(b) : def;
}

void weft_cfg_load_route_static(vctx *v, weft_config *cfg, const config_setting_t *g, const char *where)
{
    static const char *const keys[] = {"path", "static", "methods", "rate_limit", NULL};
    static const char *const static_keys[] = {"dir", "index", "follow_symlinks", "send_compressed", NULL};
    size_t failed = v->errs->count;
    for (const char *const *k = plugin_only; *k != NULL; k++) {
        config_setting_t *s = config_setting_get_member(g, *k);
        if (s != NULL)
            weft_cfg_error(v, s, where,
                           strcmp(*k, "plugin") == 0
                               ? "plugin and static are exclusive: a route serves either a plugin or a directory"
                               : "%s: not meaningful for a static route (it serves files, no plugin runs)",
                           *k);
    }
    for (int i = 0; i < config_setting_length(g); i++) {
        const config_setting_t *child = config_setting_get_elem(g, (unsigned)i);
        int known = 0;
        for (const char *const *k = keys; *k != NULL && !known; k++)
            known = strcmp(*k, config_setting_name(child)) == 0;
        for (const char *const *k = plugin_only; *k != NULL && !known; k++)
            known = strcmp(*k, config_setting_name(child)) == 0;
        if (!known)
            weft_cfg_error(v, child, where, "unknown setting '%s' (known in a static route: path, static, methods, rate_limit)",
                           config_setting_name(child));
    }
    weft_static_cfg s = {.line = config_setting_source_line(g)};
    s.file = config_setting_source_file(g) != NULL ? config_setting_source_file(g) : cfg->path;

    config_setting_t *path = weft_cfg_require(v, g, where, "path", CONFIG_TYPE_STRING);
    if (path != NULL) {
        const char *ps = config_setting_get_string(path);
        char why[256];
        if (weft_pattern_check(ps, why, sizeof(why)) != 0)
            weft_cfg_error(v, path, where, "path '%s': %s", ps, why);
        else if (strchr(ps, '{') != NULL)
            weft_cfg_error(v, path, where, "path '%s': a static route's path is a literal prefix (no {parameters})", ps);
    }
    /* Files answer GET and HEAD; saying so is allowed, asking for more is not. */
    config_setting_t *methods = weft_cfg_member(v, g, where, "methods", CONFIG_TYPE_ARRAY);
    for (int i = 0; methods != NULL && i < config_setting_length(methods); i++) {
        config_setting_t *m = config_setting_get_elem(methods, (unsigned)i);
        const char *name = config_setting_type(m) == CONFIG_TYPE_STRING ? config_setting_get_string(m) : "";
        if (strcmp(name, "GET") != 0 && strcmp(name, "HEAD") != 0)
            weft_cfg_error(v, m, where, "methods: a static route answers GET and HEAD only ('%s')", name);
    }

    char swhere[96];
    weft_cfg_path_join(swhere, sizeof(swhere), where, "static");
    config_setting_t *st = weft_cfg_member(v, g, where, "static", CONFIG_TYPE_GROUP);
    if (st == NULL) {
        if (config_setting_get_member(g, "static") != NULL && v->errs->count == failed)
            weft_cfg_error(v, config_setting_get_member(g, "static"), where, "static: must be a group { dir = ...; }");
        return;
    }
    weft_cfg_check_keys(v, st, swhere, static_keys);
    int ok = load_dir(v, st, swhere, &s);
    ok &= load_index(v, st, swhere, &s);
    s.follow_symlinks = load_flag(v, st, swhere, "follow_symlinks", 0);
    s.send_compressed = load_flag(v, st, swhere, "send_compressed", 1);
    /* Limited like a plugin route (http/admit.c): a public directory is as
     * easy to hammer as any handler. */
    ok &= weft_cfg_load_rate_limit(v, g, where, &s.rate_limit, &cfg->rate_limit);
    if (!ok || v->errs->count != failed || path == NULL) {
        weft_static_cfg tmp[1] = {s};
        weft_config scratch = {.statics = tmp, .n_statics = 1};
        weft_static_cfg_free_from(&scratch, 0);
        return;
    }
    s.path = weft_cfg_strdup(config_setting_get_string(path));
    /* Reallocated one at a time: static routes are few, and parsing is not
     * on any request's path. */
    weft_static_cfg *all = realloc(cfg->statics, (cfg->n_statics + 1) * sizeof(*all));
    if (all == NULL)
        weft_fatal("out of memory");
    cfg->statics = all;
    cfg->statics[cfg->n_statics++] = s;
}

void weft_static_cfg_free_from(weft_config *cfg, size_t from)
{
    for (size_t i = from; i < cfg->n_statics; i++) {
        weft_static_cfg *s = &cfg->statics[i];
        free(s->path);
        free(s->dir);
        for (size_t k = 0; s->index != NULL && s->index[k] != NULL; k++)
            free(s->index[k]);
        free(s->index);
    }
    if (from < cfg->n_statics)
        cfg->n_statics = from;
}
