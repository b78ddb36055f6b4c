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
#include "config/expand.h"
#include "config/intlit.h"
#include "config/route_files.h"
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
        weft_cfg_load_route(v, cfg, config_setting_get_elem(list, (unsigned)i), i);
}

typedef struct fragment_reader {
    vctx *v;
    weft_config *cfg;
} fragment_reader;

static void read_fragment_route(void *ctx, config_setting_t *route, int index)
{
    fragment_reader *fr = ctx;
    weft_cfg_load_route(fr->v, fr->cfg, route, index);
}

static void load_observability(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    static const char *const obs_keys[] = {"metrics", "health", NULL};
    config_setting_t *g;
    cfg->observability.metrics = cfg->observability.health = WEFT_ON_MAIN;
    if ((g = weft_cfg_member(v, root, "", "observability", CONFIG_TYPE_GROUP)) != NULL) {
        weft_cfg_check_keys(v, g, "observability", obs_keys);
        static const char *const places[] = {"main", "admin", "off"};
        static const int place_of[] = {WEFT_ON_MAIN, WEFT_ON_ADMIN, WEFT_OFF};
        cfg->observability.metrics = place_of[weft_cfg_choice(v, g, "observability", "metrics", places, 3, 0)];
        cfg->observability.health = place_of[weft_cfg_choice(v, g, "observability", "health", places, 3, 0)];
    }
}

static void load_log(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    static const char *const log_keys[] = {"level", "access_log", "error_log", "format", "request_id_header", NULL};
    config_setting_t *g;
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
}

static void load_coroutine(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    static const char *const coro_keys[] = {"stack_size", NULL};
    config_setting_t *g;
    cfg->coroutine.stack_size = 64 * 1024;
    if ((g = weft_cfg_member(v, root, "", "coroutine", CONFIG_TYPE_GROUP)) != NULL) {
        weft_cfg_check_keys(v, g, "coroutine", coro_keys);
        cfg->coroutine.stack_size =
            (size_t)weft_cfg_int(v, g, "coroutine", "stack_size", 16 * 1024, 64 * 1024 * 1024, 64 * 1024);
    }
}

static void load_blocking(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    static const char *const blocking_keys[] = {"threshold_ms", "interval_s", NULL};
    config_setting_t *g;
    cfg->blocking.threshold_ms = 20;
    cfg->blocking.interval_s = 10;
    if ((g = weft_cfg_member(v, root, "", "blocking", CONFIG_TYPE_GROUP)) != NULL) {
        weft_cfg_check_keys(v, g, "blocking", blocking_keys);
        cfg->blocking.threshold_ms = (int)weft_cfg_int(v, g, "blocking", "threshold_ms", 0, 600000, 20);
        cfg->blocking.interval_s = (int)weft_cfg_int(v, g, "blocking", "interval_s", 1, 86400, 10);
    }
}

static void load_shutdown(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    static const char *const shutdown_keys[] = {"grace_s", "unready_ms", NULL};
    config_setting_t *g;
    cfg->shutdown.grace_s = 10;
    if ((g = weft_cfg_member(v, root, "", "shutdown", CONFIG_TYPE_GROUP)) != NULL) {
        weft_cfg_check_keys(v, g, "shutdown", shutdown_keys);
        cfg->shutdown.grace_s = (int)weft_cfg_int(v, g, "shutdown", "grace_s", 0, 3600, 10);
        cfg->shutdown.unready_ms = (int)weft_cfg_int(v, g, "shutdown", "unready_ms", 0, 600000, 0);
    }
}

static void load_websocket(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    static const char *const ws_keys[] = {"max_message", "idle_timeout_s", "max_queued_total", NULL};
    config_setting_t *g;
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

/* In this order: a later group's errors follow an earlier one's. */
static void load_groups(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    weft_cfg_load_limits(v, cfg, root);
    load_observability(v, cfg, root);
    load_log(v, cfg, root);
    load_coroutine(v, cfg, root);
    load_blocking(v, cfg, root);
    weft_cfg_load_database(v, cfg, root);
    load_shutdown(v, cfg, root);
    load_websocket(v, cfg, root);
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
    weft_cfg_load_pools(&v, cfg, root);
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
