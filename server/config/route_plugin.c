/* A route a plugin serves: its path, methods, plugin, dispatch and pool, its bounds, its edge settings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/names.h"
#include "config/router.h"
#include "config/schema.h"

/* The route's path: a valid pattern, not one weft serves itself. NULL when missing; *ok 0 on any error. */
static config_setting_t *route_path(vctx *v, const weft_config *cfg, const config_setting_t *g, const char *where,
                                    int *ok)
{
    config_setting_t *path = weft_cfg_require(v, g, where, "path", CONFIG_TYPE_STRING);
    if (path != NULL) {
        const char *ps = config_setting_get_string(path);
        int metrics = cfg->observability.metrics == WEFT_ON_MAIN && strcmp(ps, "/metrics") == 0;
        int health = cfg->observability.health == WEFT_ON_MAIN && strncmp(ps, "/health/", 8) == 0;
        if (metrics || health) {
            weft_cfg_error(v, path, where, "path '%s' is served by weft itself (observability.%s = \"main\")", ps,
                 metrics ? "metrics" : "health");
            *ok = 0;
        }
        char why[256];
        if (weft_pattern_check(config_setting_get_string(path), why, sizeof(why)) != 0) {
            weft_cfg_error(v, path, where, "path '%s': %s", config_setting_get_string(path), why);
            *ok = 0;
        }
    } else {
        *ok = 0;
    }
    return path;
}

/* methods = [ ... ] into r->methods (left as it is when absent); 0 on an error. */
static int route_methods(vctx *v, const config_setting_t *g, const char *where, weft_route_cfg *r)
{
    int ok = 1;
    config_setting_t *methods = weft_cfg_member(v, g, where, "methods", CONFIG_TYPE_ARRAY);
    if (methods != NULL) {
        r->methods = 0;
        for (int i = 0; i < config_setting_length(methods); i++) {
            config_setting_t *m = config_setting_get_elem(methods, (unsigned)i);
            const char *name = config_setting_type(m) == CONFIG_TYPE_STRING ? config_setting_get_string(m) : "";
            unsigned bit = weft_method_bit(name, strlen(name));
            if (bit == WEFT_M_OTHER) {
                weft_cfg_error(v, m, where, "methods: '%s' is not one of GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS", name);
                ok = 0;
            }
            r->methods |= bit;
        }
        if (r->methods == 0) {
            weft_cfg_error(v, methods, where, "methods: an empty list would refuse every request; leave it out to allow all");
            ok = 0;
        }
        /* HEAD is GET without a body, as every HTTP server treats it. */
        if (r->methods & WEFT_M_GET)
            r->methods |= WEFT_M_HEAD;
    }
    return ok;
}

/* The plugin's name, NULL when missing; *ok 0 on any error. */
static config_setting_t *route_plugin_name(vctx *v, const config_setting_t *g, const char *where, int *ok)
{
    config_setting_t *plugin = weft_cfg_require(v, g, where, "plugin", CONFIG_TYPE_STRING);
    if (plugin != NULL && !weft_name_is_valid(config_setting_get_string(plugin))) {
        weft_cfg_error(v, plugin, where,
             "plugin '%s': a plugin name is 1-64 characters of a-z, 0-9, '_' or '-' (no paths; the file is found in "
             "plugin_dirs)",
             config_setting_get_string(plugin));
        *ok = 0;
    } else if (plugin == NULL) {
        *ok = 0;
    }
    return plugin;
}

/* dispatch = "..." into r->dispatch; 0 when it is missing or unknown. */
static int route_dispatch(vctx *v, const config_setting_t *g, const char *where, weft_route_cfg *r)
{
    config_setting_t *dispatch = weft_cfg_require(v, g, where, "dispatch", CONFIG_TYPE_STRING);
    if (dispatch == NULL)
        return 0;
    const char *d = config_setting_get_string(dispatch);
    if (strcmp(d, "pool") == 0)
        r->dispatch = WEFT_DISPATCH_POOL;
    else if (strcmp(d, "coroutine") == 0)
        r->dispatch = WEFT_DISPATCH_COROUTINE;
    else if (strcmp(d, "reactive") == 0)
        r->dispatch = WEFT_DISPATCH_REACTIVE;
    else if (strcmp(d, "auto") == 0)
        r->dispatch = WEFT_DISPATCH_AUTO;
    else {
        weft_cfg_error(v, dispatch, where, "dispatch '%s' is not one of pool, coroutine, reactive, auto", d);
        return 0;
    }
    return 1;
}

/* pool and auto, which depend on the dispatch (dispatch_ok: it was read); r->pool is set for a pooled route
 * even on an error (the caller frees it). 0 on an error. */
static int route_pool(vctx *v, const weft_config *cfg, const config_setting_t *g, const char *where,
                      weft_route_cfg *r, int dispatch_ok)
{
    int ok = 1;
    config_setting_t *pool = weft_cfg_member(v, g, where, "pool", CONFIG_TYPE_STRING);
    /* Checked whatever else is wrong with the route: report everything at once. */
    int pooled = r->dispatch == WEFT_DISPATCH_POOL || r->dispatch == WEFT_DISPATCH_AUTO;
    if (pool != NULL && dispatch_ok && !pooled) {
        weft_cfg_error(v, pool, where, "pool is only meaningful with dispatch = \"pool\" or \"auto\"");
        ok = 0;
    }
    if (dispatch_ok && !weft_cfg_load_route_auto(v, g, where, r))
        ok = 0;
    if (dispatch_ok && pooled) {
        const char *pn = pool != NULL ? config_setting_get_string(pool) : "default";
        if (weft_config_find_pool(cfg, pn) == NULL) {
            weft_cfg_error(v, pool, where, "pool '%s' is not defined in pools", pn);
            ok = 0;
        }
        r->pool = weft_cfg_strdup(pn);
    }
    return ok;
}

/* The route's bounds, the limits group's where it sets none; 0 on an error. */
static int route_limits(vctx *v, weft_config *cfg, const config_setting_t *g, const char *where, weft_route_cfg *r)
{
    /* The deadline ends the handler's waits (request/cancel.h); 0 turns the
     * limits default off for one route. */
    r->timeout_ms = (int)weft_cfg_int(v, g, where, "timeout_ms", 0, 3600000, cfg->limits.timeout_ms);
    r->max_body = (size_t)weft_cfg_int(v, g, where, "max_body", 0, 1LL << 40, (long long)cfg->limits.max_body);
    config_setting_t *stream = weft_cfg_member(v, g, where, "stream_body", CONFIG_TYPE_BOOL);
    r->stream_body = stream != NULL && config_setting_get_bool(stream);
    r->max_concurrent = (int)weft_cfg_int(v, g, where, "max_concurrent", 0, 10000000, 0);
    int ok = weft_cfg_load_rate_limit(v, g, where, &r->rate_limit, &cfg->rate_limit) ? 1 : 0;
    r->max_buffered_response = cfg->limits.max_buffered_response;
    r->max_buffered_response_total = cfg->limits.max_buffered_response_total;
    return ok;
}

void weft_cfg_load_route(vctx *v, weft_config *cfg, config_setting_t *g, int index)
{
    static const char *const keys[] = {"path",     "methods",     "plugin",         "dispatch", "pool",
                                       "options",  "timeout_ms",  "max_concurrent", "max_body", "stream_body",
                                       "auto",     "rate_limit",  "headers",        "compress", "cors",
                                       NULL};
    char where[64];
    snprintf(where, sizeof(where), "routes[%d]", index);
    if (!config_setting_is_group(g)) {
        weft_cfg_error(v, g, where, "must be a group { path = ...; plugin = ...; dispatch = ...; }");
        return;
    }
    /* A directory instead of a plugin: a route of its own kind (route_static.c). */
    if (config_setting_get_member(g, "static") != NULL) {
        weft_cfg_load_route_static(v, cfg, g, where);
        return;
    }
    weft_cfg_check_keys(v, g, where, keys);
    weft_route_cfg r = {.methods = WEFT_M_ALL, .line = config_setting_source_line(g)};
    r.file = config_setting_source_file(g) != NULL ? config_setting_source_file(g) : cfg->path;
    int ok = 1;
    config_setting_t *path = route_path(v, cfg, g, where, &ok);
    if (!route_methods(v, g, where, &r))
        ok = 0;
    config_setting_t *plugin = route_plugin_name(v, g, where, &ok);
    int dispatch_ok = route_dispatch(v, g, where, &r);
    if (!dispatch_ok)
        ok = 0;
    if (!route_pool(v, cfg, g, where, &r, dispatch_ok))
        ok = 0;
    if (!route_limits(v, cfg, g, where, &r))
        ok = 0;

    config_setting_t *options = weft_cfg_member(v, g, where, "options", CONFIG_TYPE_GROUP);
    if (options == NULL && config_setting_get_member(g, "options") != NULL)
        ok = 0;
    if (!weft_cfg_load_route_edge(v, g, where, &r))
        ok = 0;
    if (!ok) {
        weft_headers_cfg_free(r.headers);
        weft_compress_cfg_free(r.compress);
        weft_cors_cfg_free(r.cors);
        free(r.pool);
        return;
    }
    r.path = weft_cfg_strdup(config_setting_get_string(path));
    r.plugin = weft_cfg_strdup(config_setting_get_string(plugin));
    r.options = options;
    cfg->routes[cfg->n_routes++] = r;
}
