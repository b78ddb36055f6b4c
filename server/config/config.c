#include "config/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cpus.h"
#include "base/file.h"
#include "base/log.h"
#include "base/names.h"
#include "config/expand.h"
#include "config/intlit.h"
#include "config/route_files.h"
#include "config/router.h"
#include "config/schema.h"

static void load_plugin_dirs(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    config_setting_t *list = weft_cfg_member(v, root, "", "plugin_dirs", CONFIG_TYPE_ARRAY);
    int n = list != NULL ? config_setting_length(list) : 0;
    cfg->plugin_dirs = weft_cfg_calloc((size_t)n, sizeof(char *));
    for (int i = 0; i < n; i++) {
        config_setting_t *s = config_setting_get_elem(list, (unsigned)i);
        char where[64];
        snprintf(where, sizeof(where), "plugin_dirs[%d]", i);
        if (config_setting_type(s) != CONFIG_TYPE_STRING || config_setting_get_string(s)[0] == '\0') {
            weft_cfg_error(v, s, where, "must be a directory name");
            continue;
        }
        cfg->plugin_dirs[cfg->n_plugin_dirs++] = weft_cfg_resolve_path(cfg->path, config_setting_get_string(s));
    }
}

static void load_pools(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    static const char *const keys[] = {"name", "size", "queue", "queue_timeout_ms", "max_long_lived", "nice", NULL};
    config_setting_t *list = weft_cfg_member(v, root, "", "pools", CONFIG_TYPE_ARRAY);
    int n = list != NULL ? config_setting_length(list) : 0;
    cfg->pools = weft_cfg_calloc((size_t)n + 1, sizeof(*cfg->pools));
    for (int i = 0; i < n; i++) {
        config_setting_t *g = config_setting_get_elem(list, (unsigned)i);
        char where[64];
        snprintf(where, sizeof(where), "pools[%d]", i);
        if (!config_setting_is_group(g)) {
            weft_cfg_error(v, g, where, "must be a group { name = ...; size = ...; queue = ...; }");
            continue;
        }
        weft_cfg_check_keys(v, g, where, keys);
        config_setting_t *name = weft_cfg_require(v, g, where, "name", CONFIG_TYPE_STRING);
        if (name == NULL)
            continue;
        const char *nm = config_setting_get_string(name);
        if (!weft_name_is_valid(nm)) {
            weft_cfg_error(v, name, where, "pool name '%s' must be 1-64 characters of a-z, 0-9, '_' or '-'", nm);
            continue;
        }
        if (weft_config_find_pool(cfg, nm) != NULL) {
            weft_cfg_error(v, name, where, "pool '%s' is defined twice", nm);
            continue;
        }
        weft_pool_cfg *p = &cfg->pools[cfg->n_pools++];
        p->name = weft_cfg_strdup(nm);
        p->size = (int)weft_cfg_int(v, g, where, "size", 1, 4096, 200);
        p->queue = (int)weft_cfg_int(v, g, where, "queue", 0, 1000000, 10000);
        p->queue_timeout_ms = (int)weft_cfg_int(v, g, where, "queue_timeout_ms", 0, 3600000, 30000);
        p->max_long_lived = (int)weft_cfg_int(v, g, where, "max_long_lived", 0, 100000, p->size);
        p->nice = (int)weft_cfg_int(v, g, where, "nice", 0, 19, 0);
        p->line = config_setting_source_line(g);
    }
    if (weft_config_find_pool(cfg, "default") == NULL) {
        /* Like a servlet container's 200-thread pool; threads start only if a route uses it. */
        cfg->pools[cfg->n_pools++] = (weft_pool_cfg){.name = weft_cfg_strdup("default"), .size = 200, .queue = 10000,
                                                        .queue_timeout_ms = 30000, .max_long_lived = 200};
    }
}

static void load_route(vctx *v, weft_config *cfg, config_setting_t *g, int index)
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

    config_setting_t *path = weft_cfg_require(v, g, where, "path", CONFIG_TYPE_STRING);
    if (path != NULL) {
        const char *ps = config_setting_get_string(path);
        int metrics = cfg->observability.metrics == WEFT_ON_MAIN && strcmp(ps, "/metrics") == 0;
        int health = cfg->observability.health == WEFT_ON_MAIN && strncmp(ps, "/health/", 8) == 0;
        if (metrics || health) {
            weft_cfg_error(v, path, where, "path '%s' is served by weft itself (observability.%s = \"main\")", ps,
                 metrics ? "metrics" : "health");
            ok = 0;
        }
        char why[256];
        if (weft_pattern_check(config_setting_get_string(path), why, sizeof(why)) != 0) {
            weft_cfg_error(v, path, where, "path '%s': %s", config_setting_get_string(path), why);
            ok = 0;
        }
    } else {
        ok = 0;
    }

    config_setting_t *methods = weft_cfg_member(v, g, where, "methods", CONFIG_TYPE_ARRAY);
    if (methods != NULL) {
        r.methods = 0;
        for (int i = 0; i < config_setting_length(methods); i++) {
            config_setting_t *m = config_setting_get_elem(methods, (unsigned)i);
            const char *name = config_setting_type(m) == CONFIG_TYPE_STRING ? config_setting_get_string(m) : "";
            unsigned bit = weft_method_bit(name, strlen(name));
            if (bit == WEFT_M_OTHER) {
                weft_cfg_error(v, m, where, "methods: '%s' is not one of GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS", name);
                ok = 0;
            }
            r.methods |= bit;
        }
        if (r.methods == 0) {
            weft_cfg_error(v, methods, where, "methods: an empty list would refuse every request; leave it out to allow all");
            ok = 0;
        }
        /* HEAD is GET without a body, as every HTTP server treats it. */
        if (r.methods & WEFT_M_GET)
            r.methods |= WEFT_M_HEAD;
    }

    config_setting_t *plugin = weft_cfg_require(v, g, where, "plugin", CONFIG_TYPE_STRING);
    if (plugin != NULL && !weft_name_is_valid(config_setting_get_string(plugin))) {
        weft_cfg_error(v, plugin, where,
             "plugin '%s': a plugin name is 1-64 characters of a-z, 0-9, '_' or '-' (no paths; the file is found in "
             "plugin_dirs)",
             config_setting_get_string(plugin));
        ok = 0;
    } else if (plugin == NULL) {
        ok = 0;
    }

    config_setting_t *dispatch = weft_cfg_require(v, g, where, "dispatch", CONFIG_TYPE_STRING);
    int dispatch_ok = 0;
    if (dispatch != NULL) {
        dispatch_ok = 1;
        const char *d = config_setting_get_string(dispatch);
        if (strcmp(d, "pool") == 0)
            r.dispatch = WEFT_DISPATCH_POOL;
        else if (strcmp(d, "coroutine") == 0)
            r.dispatch = WEFT_DISPATCH_COROUTINE;
        else if (strcmp(d, "reactive") == 0)
            r.dispatch = WEFT_DISPATCH_REACTIVE;
        else if (strcmp(d, "auto") == 0)
            r.dispatch = WEFT_DISPATCH_AUTO;
        else {
            weft_cfg_error(v, dispatch, where, "dispatch '%s' is not one of pool, coroutine, reactive, auto", d);
            ok = dispatch_ok = 0;
        }
    } else {
        ok = 0;
    }

    config_setting_t *pool = weft_cfg_member(v, g, where, "pool", CONFIG_TYPE_STRING);
    /* Checked whatever else is wrong with the route: report everything at once. */
    int pooled = r.dispatch == WEFT_DISPATCH_POOL || r.dispatch == WEFT_DISPATCH_AUTO;
    if (pool != NULL && dispatch_ok && !pooled) {
        weft_cfg_error(v, pool, where, "pool is only meaningful with dispatch = \"pool\" or \"auto\"");
        ok = 0;
    }
    if (dispatch_ok && !weft_cfg_load_route_auto(v, g, where, &r))
        ok = 0;
    if (dispatch_ok && pooled) {
        const char *pn = pool != NULL ? config_setting_get_string(pool) : "default";
        if (weft_config_find_pool(cfg, pn) == NULL) {
            weft_cfg_error(v, pool, where, "pool '%s' is not defined in pools", pn);
            ok = 0;
        }
        r.pool = weft_cfg_strdup(pn);
    }

    /* The deadline ends the handler's waits (request/cancel.h); 0 turns the
     * limits default off for one route. */
    r.timeout_ms = (int)weft_cfg_int(v, g, where, "timeout_ms", 0, 3600000, cfg->limits.timeout_ms);
    r.max_body = (size_t)weft_cfg_int(v, g, where, "max_body", 0, 1LL << 40, (long long)cfg->limits.max_body);
    config_setting_t *stream = weft_cfg_member(v, g, where, "stream_body", CONFIG_TYPE_BOOL);
    r.stream_body = stream != NULL && config_setting_get_bool(stream);
    r.max_concurrent = (int)weft_cfg_int(v, g, where, "max_concurrent", 0, 10000000, 0);
    if (!weft_cfg_load_rate_limit(v, g, where, &r.rate_limit, &cfg->rate_limit))
        ok = 0;
    r.max_buffered_response = cfg->limits.max_buffered_response;
    r.max_buffered_response_total = cfg->limits.max_buffered_response_total;

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

/* plugins = { NAME = { ... }; }: one options group per plugin a route uses;
 * the plugin's load() checks the options themselves. */
static void load_plugin_options(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    config_setting_t *g = weft_cfg_member(v, root, "", "plugins", CONFIG_TYPE_GROUP);
    for (int i = 0; g != NULL && i < config_setting_length(g); i++) {
        config_setting_t *p = config_setting_get_elem(g, (unsigned)i);
        char where[300];
        snprintf(where, sizeof(where), "plugins.%s", config_setting_name(p));
        if (config_setting_type(p) != CONFIG_TYPE_GROUP) {
            weft_cfg_error(v, p, where, "must be a group { ... } of the plugin's options");
            continue;
        }
        int used = 0;
        for (size_t k = 0; k < cfg->n_routes && !used; k++)
            used = strcmp(cfg->routes[k].plugin, config_setting_name(p)) == 0;
        /* A drop-in left out may be the one that routes to it: its options
         * wait for it instead of taking the start down with it. */
        if (!used && cfg->n_refused == 0)
            weft_cfg_error(v, p, where, "no route uses plugin '%s'", config_setting_name(p));
    }
}

static void load_routes(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    config_setting_t *list = weft_cfg_member(v, root, "", "routes", CONFIG_TYPE_ARRAY);
    int n = list != NULL ? config_setting_length(list) : 0;
    cfg->routes = weft_cfg_calloc((size_t)n, sizeof(*cfg->routes));
    for (int i = 0; i < n; i++)
        load_route(v, cfg, config_setting_get_elem(list, (unsigned)i), i);
}

typedef struct fragment_reader {
    vctx *v;
    weft_config *cfg;
} fragment_reader;

static void read_fragment_route(void *ctx, config_setting_t *route, int index)
{
    fragment_reader *fr = ctx;
    load_route(fr->v, fr->cfg, route, index);
}

static void load_groups(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    static const char *const limits_keys[] = {"max_body",        "max_uri",         "max_connections", "max_connections_per_ip",
                                              "request_timeout_ms", "idle_timeout_ms", "timeout_ms",
                                              "max_resets", "reset_window_ms", "max_inflight_per_conn",
                                              "max_header_line", "max_headers",
                                              "max_route_file_size", "max_route_file_routes",
                                              "rate_limit_clients", "max_buffered_response", "max_buffered_response_total",
                                              "max_buffered_body_total", "max_compressing_responses", NULL};
    static const char *const obs_keys[] = {"metrics", "health", NULL};
    static const char *const log_keys[] = {"level", "access_log", "error_log", "format", "request_id_header", NULL};
    static const char *const coro_keys[] = {"stack_size", NULL};
    static const char *const blocking_keys[] = {"threshold_ms", "interval_s", NULL};
    static const char *const shutdown_keys[] = {"grace_s", "unready_ms", NULL};
    static const char *const ws_keys[] = {"max_message", "idle_timeout_s", "max_queued_total", NULL};

    config_setting_t *g;
    cfg->limits.max_body = 1024 * 1024;
    cfg->limits.max_uri = 8192;
    cfg->limits.max_connections = 10000;
    cfg->limits.request_timeout_ms = 10000;
    cfg->limits.idle_timeout_ms = 10000;
    /* Well above what a browser cancelling navigations or a gRPC client
     * cancelling calls does, far below a Rapid Reset's thousands per second;
     * in-flight work above h2o's 100 concurrent streams only builds up from
     * streams that were reset while their handler ran on. */
    cfg->limits.max_resets = 100;
    cfg->limits.reset_window_ms = 10000;
    cfg->limits.max_inflight_per_conn = 256;
    /* nginx and Apache stop a header line at 8 KiB. */
    cfg->limits.max_header_line = 8192;
    cfg->limits.max_headers = 32768;
    /* A fragment is one plugin's routes: ten thousand is far beyond any
     * real one, and reading, checking and routing that many stays well
     * under a second of the control thread's time. */
    cfg->limits.max_route_file_size = 4 * 1024 * 1024;
    cfg->limits.max_route_file_routes = 10000;
    cfg->limits.rate_limit_clients = 65536;
    /* A few socket buffers' worth per client; the total keeps the process
     * well under 256 MiB whatever the clients do (request/backlog.c). */
    cfg->limits.max_buffered_response = 4 * 1024 * 1024;
    cfg->limits.max_buffered_response_total = 64 * 1024 * 1024;
    /* Bodies of routes that do not stream them, all together: 128 at the
     * default max_body at once. A route taking larger uploads streams them
     * (stream_body), which holds one part each. */
    cfg->limits.max_buffered_body_total = 128 * 1024 * 1024;
    /* An on-the-fly compressor of a stream of unknown length holds 1.4 MB
     * (zstd level 1: a 512 KiB window and its tables), so a few thousand
     * Server-Sent Event subscribers would hold gigabytes; 256 of them stay
     * under 350 MiB. Answers past the bound go out uncompressed. */
    cfg->limits.max_compressing_responses = 256;
    if ((g = weft_cfg_member(v, root, "", "limits", CONFIG_TYPE_GROUP)) != NULL) {
        weft_cfg_check_keys(v, g, "limits", limits_keys);
        cfg->limits.rate_limit_clients =
            (int)weft_cfg_int(v, g, "limits", "rate_limit_clients", 64, 16777216, 65536);
        cfg->limits.max_body = (size_t)weft_cfg_int(v, g, "limits", "max_body", 0, 1LL << 40, 1024 * 1024);
        cfg->limits.max_uri = (size_t)weft_cfg_int(v, g, "limits", "max_uri", 256, 400000, 8192);
        cfg->limits.max_connections = (int)weft_cfg_int(v, g, "limits", "max_connections", 1, 10000000, 10000);
        cfg->limits.max_connections_per_ip =
            (int)weft_cfg_int(v, g, "limits", "max_connections_per_ip", 0, 10000000, 0);
        cfg->limits.request_timeout_ms = (int)weft_cfg_int(v, g, "limits", "request_timeout_ms", 100, 3600000, 10000);
        cfg->limits.idle_timeout_ms = (int)weft_cfg_int(v, g, "limits", "idle_timeout_ms", 100, 3600000, 10000);
        cfg->limits.timeout_ms = (int)weft_cfg_int(v, g, "limits", "timeout_ms", 0, 3600000, 0);
        cfg->limits.max_resets = (int)weft_cfg_int(v, g, "limits", "max_resets", 1, 100000000, 100);
        cfg->limits.reset_window_ms = (int)weft_cfg_int(v, g, "limits", "reset_window_ms", 100, 3600000, 10000);
        cfg->limits.max_inflight_per_conn =
            (int)weft_cfg_int(v, g, "limits", "max_inflight_per_conn", 1, 100000000, 256);
        cfg->limits.max_header_line = (size_t)weft_cfg_int(v, g, "limits", "max_header_line", 256, 400000, 8192);
        cfg->limits.max_headers = (size_t)weft_cfg_int(v, g, "limits", "max_headers", 1024, 400000, 32768);
        cfg->limits.max_route_file_size =
            (size_t)weft_cfg_int(v, g, "limits", "max_route_file_size", 1024, 1LL << 30, 4 * 1024 * 1024);
        cfg->limits.max_route_file_routes =
            (size_t)weft_cfg_int(v, g, "limits", "max_route_file_routes", 1, 10000000, 10000);
        cfg->limits.max_buffered_response = (size_t)weft_cfg_int(v, g, "limits", "max_buffered_response", 16384,
                                                                 1LL << 40, 4 * 1024 * 1024);
        cfg->limits.max_buffered_response_total = (size_t)weft_cfg_int(
            v, g, "limits", "max_buffered_response_total", 65536, 1LL << 40, 64 * 1024 * 1024);
        cfg->limits.max_buffered_body_total = (size_t)weft_cfg_int(v, g, "limits", "max_buffered_body_total", 65536,
                                                                   1LL << 40, 128 * 1024 * 1024);
        cfg->limits.max_compressing_responses =
            (int)weft_cfg_int(v, g, "limits", "max_compressing_responses", 0, 10000000, 256);
    }

    cfg->observability.metrics = cfg->observability.health = WEFT_ON_MAIN;
    if ((g = weft_cfg_member(v, root, "", "observability", CONFIG_TYPE_GROUP)) != NULL) {
        weft_cfg_check_keys(v, g, "observability", obs_keys);
        static const char *const places[] = {"main", "admin", "off"};
        static const int place_of[] = {WEFT_ON_MAIN, WEFT_ON_ADMIN, WEFT_OFF};
        cfg->observability.metrics = place_of[weft_cfg_choice(v, g, "observability", "metrics", places, 3, 0)];
        cfg->observability.health = place_of[weft_cfg_choice(v, g, "observability", "health", places, 3, 0)];
    }

    cfg->log.level = WEFT_LOG_INFO;
    if ((g = weft_cfg_member(v, root, "", "log", CONFIG_TYPE_GROUP)) != NULL) {
        weft_cfg_check_keys(v, g, "log", log_keys);
        const char *level = weft_cfg_string(v, g, "log", "level", "info");
        int lv = weft_log_parse_level(level);
        if (lv < 0)
            weft_cfg_error(v, config_setting_get_member(g, "level"), "log.level", "'%s' is not one of error, warn, info, debug",
                 level);
        else
            cfg->log.level = lv;
        const char *access = weft_cfg_string(v, g, "log", "access_log", NULL);
        /* Relative to the config file like every other path: the working
         * directory of a service is nobody's choice. */
        if (access != NULL && access[0] != '\0')
            cfg->log.access_log = access[0] == '/' ? weft_cfg_strdup(access) : weft_cfg_resolve_path(cfg->path, access);
        const char *error_log = weft_cfg_string(v, g, "log", "error_log", NULL);
        if (error_log != NULL && error_log[0] != '\0')
            cfg->log.error_log =
                error_log[0] == '/' ? weft_cfg_strdup(error_log) : weft_cfg_resolve_path(cfg->path, error_log);
        static const char *const formats[] = {"text", "json"};
        cfg->log.json = weft_cfg_choice(v, g, "log", "format", formats, 2, 0);
        /* In the order of WEFT_REQID_*. */
        static const char *const idh_names[] = {"always", "when_sent", "never"};
        cfg->log.request_id_header =
            weft_cfg_choice(v, g, "log", "request_id_header", idh_names, 3, WEFT_REQID_ALWAYS);
    }

    cfg->coroutine.stack_size = 64 * 1024;
    if ((g = weft_cfg_member(v, root, "", "coroutine", CONFIG_TYPE_GROUP)) != NULL) {
        weft_cfg_check_keys(v, g, "coroutine", coro_keys);
        cfg->coroutine.stack_size =
            (size_t)weft_cfg_int(v, g, "coroutine", "stack_size", 16 * 1024, 64 * 1024 * 1024, 64 * 1024);
    }

    cfg->blocking.threshold_ms = 20;
    cfg->blocking.interval_s = 10;
    if ((g = weft_cfg_member(v, root, "", "blocking", CONFIG_TYPE_GROUP)) != NULL) {
        weft_cfg_check_keys(v, g, "blocking", blocking_keys);
        cfg->blocking.threshold_ms = (int)weft_cfg_int(v, g, "blocking", "threshold_ms", 0, 600000, 20);
        cfg->blocking.interval_s = (int)weft_cfg_int(v, g, "blocking", "interval_s", 1, 86400, 10);
    }

    weft_cfg_load_database(v, cfg, root);

    cfg->shutdown.grace_s = 10;
    if ((g = weft_cfg_member(v, root, "", "shutdown", CONFIG_TYPE_GROUP)) != NULL) {
        weft_cfg_check_keys(v, g, "shutdown", shutdown_keys);
        cfg->shutdown.grace_s = (int)weft_cfg_int(v, g, "shutdown", "grace_s", 0, 3600, 10);
        cfg->shutdown.unready_ms = (int)weft_cfg_int(v, g, "shutdown", "unready_ms", 0, 600000, 0);
    }

    cfg->websocket.max_message = 1024 * 1024;
    cfg->websocket.idle_timeout_s = 300;
    cfg->websocket.max_queued_total = 64 * 1024 * 1024;
    if ((g = weft_cfg_member(v, root, "", "websocket", CONFIG_TYPE_GROUP)) != NULL) {
        weft_cfg_check_keys(v, g, "websocket", ws_keys);
        cfg->websocket.max_message =
            (size_t)weft_cfg_int(v, g, "websocket", "max_message", 125, 64 * 1024 * 1024, 1024 * 1024);
        cfg->websocket.idle_timeout_s = (int)weft_cfg_int(v, g, "websocket", "idle_timeout_s", 1, 86400, 300);
        cfg->websocket.max_queued_total = (size_t)weft_cfg_int(v, g, "websocket", "max_queued_total", 65536,
                                                               1LL << 40, 64 * 1024 * 1024);
    }
}

/* The text is kept: a plugin-only reload rebuilds from exactly the config
 * that is serving, even if the file is being edited meanwhile. */
static char *slurp(const char *path, weft_errors *errs)
{
    /* libconfig reports a missing file without its name or errno; say both. */
    char *text = weft_file_read(path, NULL);
    if (text == NULL)
        weft_errors_add(errs, "%s: cannot open config file: %s", path, strerror(errno));
    return text;
}

static int parse_text(vctx *v, weft_config *cfg)
{
    char *dir = weft_cfg_strdup(cfg->path);
    config_set_include_dir(&cfg->lc, dirname(dir));
    int ok = config_read_string(&cfg->lc, cfg->text);
    free(dir);
    if (!ok) {
        const char *file = config_error_file(&cfg->lc) != NULL ? config_error_file(&cfg->lc) : cfg->path;
        weft_errors_add(v->errs, "%s:%d: %s", file, config_error_line(&cfg->lc), config_error_text(&cfg->lc));
        return -1;
    }
    /* Integers as the text has them, then ${VAR}, before any validation: a
     * setting is checked as it will be used. */
    if (weft_cfg_check_integers(&cfg->lc, cfg->path, cfg->text, v->errs) > 0)
        return -1;
    return weft_config_expand(config_root_setting(&cfg->lc), cfg->path, v->errs) > 0 ? -1 : 0;
}

weft_config *weft_config_load(const char *path, weft_errors *errs)
{
    return weft_config_load_dropins(path, NULL, NULL, errs);
}

weft_config *weft_config_load_text(const char *path, const char *text, weft_errors *errs)
{
    return weft_config_load_dropins(path, text, NULL, errs);
}

static weft_config *load_text(const char *path, const char *text, const weft_dropin_policy *policy,
                              weft_errors *errs);

weft_config *weft_config_load_dropins(const char *path, const char *text, const weft_dropin_policy *p,
                                      weft_errors *errs)
{
    if (text != NULL)
        return load_text(path, text, p, errs);
    char *read = slurp(path, errs);
    if (read == NULL)
        return NULL;
    weft_config *cfg = load_text(path, read, p, errs);
    free(read);
    return cfg;
}

static weft_config *load_text(const char *path, const char *text, const weft_dropin_policy *policy,
                              weft_errors *errs)
{
    static const char *const top_keys[] = {"threads", "listen",   "plugin_dirs", "limits", "log",
                                           "coroutine", "blocking", "shutdown",    "pools",  "routes", "database",
                                           "admin",     "watch",    "pid_file",    "observability", "user", "plugins", "state_dir", "websocket",
                                           "rate_limit", "headers", "compress", "trace", NULL};
    weft_config *cfg = weft_cfg_calloc(1, sizeof(*cfg));
    cfg->path = weft_cfg_strdup(path);
    cfg->text = weft_cfg_strdup(text);
    config_init(&cfg->lc);
    vctx v = {.errs = errs, .file = cfg->path};
    if (parse_text(&v, cfg) != 0) {
        weft_config_free(cfg);
        return NULL;
    }
    const config_setting_t *root = config_root_setting(&cfg->lc);
    weft_cfg_check_keys(&v, root, "top level", top_keys);
    long ncpu = weft_cpu_count();
    cfg->threads = (int)weft_cfg_int(&v, root, "", "threads", 1, 1024, ncpu > 0 ? ncpu : 1);
    weft_cfg_load_listen(&v, cfg, root);
    weft_cfg_load_admin(&v, cfg, root);
    config_setting_t *watch = weft_cfg_member(&v, root, "", "watch", CONFIG_TYPE_BOOL);
    cfg->watch = watch != NULL && config_setting_get_bool(watch);
    const char *user = weft_cfg_string(&v, root, "", "user", NULL);
    if (user != NULL && *user)
        cfg->user = weft_cfg_strdup(user);
    const char *pid_file = weft_cfg_string(&v, root, "", "pid_file", NULL);
    if (pid_file != NULL && *pid_file)
        cfg->pid_file = pid_file[0] == '/' ? weft_cfg_strdup(pid_file) : weft_cfg_resolve_path(cfg->path, pid_file);
    const char *state_dir = weft_cfg_string(&v, root, "", "state_dir", NULL);
    if (state_dir != NULL && *state_dir)
        cfg->state_dir = state_dir[0] == '/' ? weft_cfg_strdup(state_dir) : weft_cfg_resolve_path(cfg->path, state_dir);
    load_plugin_dirs(&v, cfg, root);
    load_groups(&v, cfg, root);
    weft_cfg_load_rate_limit(&v, root, "", &cfg->rate_limit, NULL); /* before the routes: their default */
    weft_cfg_load_edge(&v, cfg, root);
    load_pools(&v, cfg, root);
    load_routes(&v, cfg, root);
    fragment_reader fr = {&v, cfg};
    /* A left-out fragment's route errors set v.failed too: only the files
     * that stay broken count. */
    int failed = v.failed;
    v.failed = weft_route_files_load(cfg, errs, read_fragment_route, &fr, policy) > 0 || failed;
    load_plugin_options(&v, cfg, root);
    weft_cfg_load_trace(&v, cfg, root);
    if (v.failed) {
        weft_config_free(cfg);
        return NULL;
    }
    return cfg;
}

config_setting_t *weft_config_plugin_options(const weft_config *cfg, const char *name)
{
    config_setting_t *g = config_setting_get_member(config_root_setting(&cfg->lc), "plugins");
    return g != NULL ? config_setting_get_member(g, name) : NULL;
}

const weft_pool_cfg *weft_config_find_pool(const weft_config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->n_pools; i++)
        if (strcmp(cfg->pools[i].name, name) == 0)
            return &cfg->pools[i];
    return NULL;
}

void weft_config_free(weft_config *cfg)
{
    if (cfg == NULL)
        return;
    for (size_t i = 0; i < cfg->n_listen; i++) {
        free(cfg->listen[i].host);
        free(cfg->listen[i].trusted);
        if (cfg->listen[i].tls != NULL) {
            free(cfg->listen[i].tls->certificate);
            free(cfg->listen[i].tls->key);
            free(cfg->listen[i].tls->ciphers);
            free(cfg->listen[i].tls);
        }
    }
    free(cfg->listen);
    for (size_t i = 0; i < cfg->n_plugin_dirs; i++)
        free(cfg->plugin_dirs[i]);
    free(cfg->plugin_dirs);
    for (size_t i = 0; i < cfg->n_pools; i++)
        free(cfg->pools[i].name);
    free(cfg->pools);
    weft_route_cfg_free_from(cfg, 0);
    free(cfg->routes);
    weft_static_cfg_free_from(cfg, 0);
    free(cfg->statics);
    weft_route_files_free(cfg);
    free(cfg->log.access_log);
    free(cfg->log.error_log);
    weft_cfg_free_database(cfg);
    free(cfg->admin.host);
    for (size_t i = 0; i < cfg->admin.n_allowed_hosts; i++)
        free(cfg->admin.allowed_hosts[i]);
    free(cfg->admin.allowed_hosts);
    free(cfg->admin.token);
    free(cfg->pid_file);
    free(cfg->state_dir);
    free(cfg->user);
    weft_headers_cfg_free(cfg->headers);
    weft_compress_cfg_free(cfg->compress);
    weft_cfg_free_trace(cfg);
    free(cfg->text);
    config_destroy(&cfg->lc);
    free(cfg->path);
    free(cfg);
}

const char *weft_dispatch_name(weft_dispatch d)
{
    switch (d) {
    case WEFT_DISPATCH_POOL: return "pool";
    case WEFT_DISPATCH_COROUTINE: return "coroutine";
    case WEFT_DISPATCH_AUTO: return "auto";
    default: return "reactive";
    }
}
