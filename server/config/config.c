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
#include "config/router.h"

/* Validation state: every message names the file, the line and the setting. */
typedef struct vctx {
    weft_errors *errs;
    const char *file;
    int failed;
} vctx;

static void verr(vctx *v, const config_setting_t *s, const char *where, const char *fmt, ...) WEFT_PRINTF(4, 5);
static void verr(vctx *v, const config_setting_t *s, const char *where, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const char *file = s != NULL && config_setting_source_file(s) != NULL ? config_setting_source_file(s) : v->file;
    int line = s != NULL ? config_setting_source_line(s) : 0;
    weft_errors_add(v->errs, "%s:%d: %s: %s", file, line, where, msg);
    v->failed = 1;
}

static char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (d == NULL)
        weft_fatal("out of memory");
    return d;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n == 0 ? 1 : n, size);
    if (p == NULL)
        weft_fatal("out of memory");
    return p;
}

static const char *type_name(int type)
{
    switch (type) {
    case CONFIG_TYPE_GROUP: return "a group { }";
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64: return "an integer";
    case CONFIG_TYPE_FLOAT: return "a number";
    case CONFIG_TYPE_STRING: return "a string";
    case CONFIG_TYPE_BOOL: return "a boolean";
    case CONFIG_TYPE_ARRAY: return "an array [ ]";
    case CONFIG_TYPE_LIST: return "a list ( )";
    default: return "a value";
    }
}

/* libconfig accepts any key silently; a typo must not become a silent default. */
static void check_keys(vctx *v, const config_setting_t *group, const char *where, const char *const *allowed)
{
    for (int i = 0; i < config_setting_length(group); i++) {
        const config_setting_t *child = config_setting_get_elem(group, (unsigned)i);
        const char *name = config_setting_name(child);
        int ok = 0;
        for (const char *const *a = allowed; *a != NULL && !ok; a++)
            ok = strcmp(*a, name) == 0;
        if (!ok) {
            char list[256] = "";
            for (const char *const *a = allowed; *a != NULL; a++)
                snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", a == allowed ? "" : ", ", *a);
            verr(v, child, where, "unknown setting '%s' (known here: %s)", name, list);
        }
    }
}

static void path_join(char *buf, size_t size, const char *where, const char *name)
{
    snprintf(buf, size, "%s%s%s", where, *where ? "." : "", name);
}

/* Returns the member if present with the right type; NULL (and an error for a wrong type) otherwise. */
static config_setting_t *member(vctx *v, const config_setting_t *group, const char *where, const char *name, int type)
{
    config_setting_t *s = config_setting_get_member(group, name);
    if (s == NULL)
        return NULL;
    int t = config_setting_type(s);
    int match = t == type || (type == CONFIG_TYPE_INT && t == CONFIG_TYPE_INT64) ||
                (type == CONFIG_TYPE_ARRAY && t == CONFIG_TYPE_LIST);
    if (!match) {
        char p[256];
        path_join(p, sizeof(p), where, name);
        verr(v, s, p, "must be %s, not %s", type_name(type), type_name(t));
        return NULL;
    }
    return s;
}

static long long get_int(vctx *v, const config_setting_t *group, const char *where, const char *name, long long min,
                         long long max, long long def)
{
    config_setting_t *s = member(v, group, where, name, CONFIG_TYPE_INT);
    if (s == NULL)
        return def;
    long long val = config_setting_get_int64(s);
    if (val < min || val > max) {
        char p[256];
        path_join(p, sizeof(p), where, name);
        verr(v, s, p, "must be between %lld and %lld (got %lld)", min, max, val);
        return def;
    }
    return val;
}

/* Returns a pointer owned by the libconfig tree (lives as long as cfg->lc). */
static const char *get_string(vctx *v, const config_setting_t *group, const char *where, const char *name,
                              const char *def)
{
    config_setting_t *s = member(v, group, where, name, CONFIG_TYPE_STRING);
    return s == NULL ? def : config_setting_get_string(s);
}

static config_setting_t *require(vctx *v, const config_setting_t *group, const char *where, const char *name,
                                 int type)
{
    config_setting_t *s = member(v, group, where, name, type);
    if (s == NULL && config_setting_get_member(group, name) == NULL) {
        char p[256];
        path_join(p, sizeof(p), where, name);
        verr(v, group, p, "is required");
    }
    return s;
}

/* "0.0.0.0:8080", "[::]:8080", "127.0.0.1:0" (0: an ephemeral port, for tests). */
static int parse_listen(vctx *v, const config_setting_t *s, const char *where, weft_listen_cfg *out)
{
    const char *text = config_setting_get_string(s);
    const char *colon = strrchr(text, ':');
    char host[INET6_ADDRSTRLEN + 2];
    if (colon == NULL || colon == text || (size_t)(colon - text) >= sizeof(host)) {
        verr(v, s, where, "'%s' is not ADDRESS:PORT (e.g. \"0.0.0.0:8080\" or \"[::]:8080\")", text);
        return -1;
    }
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = '\0';
    char *h = host;
    if (h[0] == '[') {
        size_t n = strlen(h);
        if (h[n - 1] != ']') {
            verr(v, s, where, "'%s': unbalanced [ ] around the IPv6 address", text);
            return -1;
        }
        h[n - 1] = '\0';
        h++;
    }
    unsigned char addr[sizeof(struct in6_addr)];
    if (inet_pton(AF_INET, h, addr) != 1 && inet_pton(AF_INET6, h, addr) != 1) {
        verr(v, s, where, "'%s' is not a numeric IPv4 or IPv6 address", h);
        return -1;
    }
    char *end = NULL;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (errno != 0 || end == colon + 1 || *end != '\0' || port < 0 || port > 65535) {
        verr(v, s, where, "'%s' is not a port number 0-65535", colon + 1);
        return -1;
    }
    out->host = xstrdup(h);
    out->port = (uint16_t)port;
    out->cfg_port = (uint16_t)port;
    out->line = config_setting_source_line(s);
    return 0;
}

static char *resolve_dir(const char *config_path, const char *dir)
{
    if (dir[0] == '/')
        return xstrdup(dir);
    /* Relative to the config file, not the working directory, so a config
     * means the same thing however the server was started. */
    char *copy = xstrdup(config_path);
    char *base = dirname(copy);
    char *joined = NULL;
    if (asprintf(&joined, "%s/%s", base, dir) < 0)
        weft_fatal("out of memory");
    free(copy);
    char real[PATH_MAX];
    if (realpath(joined, real) != NULL) {
        free(joined);
        return xstrdup(real);
    }
    return joined;
}

/* { address = "0.0.0.0:8443"; tls = { certificate = ...; key = ...; min_version = "TLSv1.2"; ciphers = ...; }; }
 * A list ( ) may mix such groups with plain address strings. */
static int parse_listen_group(vctx *v, weft_config *cfg, const config_setting_t *g, const char *where,
                              weft_listen_cfg *out)
{
    static const char *const keys[] = {"address", "tls", NULL};
    static const char *const tls_keys[] = {"certificate", "key", "min_version", "ciphers", NULL};
    check_keys(v, g, where, keys);
    config_setting_t *addr = require(v, g, where, "address", CONFIG_TYPE_STRING);
    if (addr == NULL || parse_listen(v, addr, where, out) != 0)
        return -1;
    config_setting_t *t = member(v, g, where, "tls", CONFIG_TYPE_GROUP);
    if (t == NULL)
        return 0;
    char tw[96];
    snprintf(tw, sizeof(tw), "%s.tls", where);
    check_keys(v, t, tw, tls_keys);
    config_setting_t *cert = require(v, t, tw, "certificate", CONFIG_TYPE_STRING);
    config_setting_t *key = require(v, t, tw, "key", CONFIG_TYPE_STRING);
    const char *minv = get_string(v, t, tw, "min_version", "TLSv1.2");
    const char *ciphers = get_string(v, t, tw, "ciphers", NULL);
    int version = strcmp(minv, "TLSv1.2") == 0 ? 0x0303 : strcmp(minv, "TLSv1.3") == 0 ? 0x0304 : -1;
    if (version < 0)
        verr(v, config_setting_get_member(t, "min_version"), tw, "min_version '%s' is not TLSv1.2 or TLSv1.3", minv);
    if (cert == NULL || key == NULL || version < 0) {
        free(out->host);
        return -1;
    }
    out->tls = xcalloc(1, sizeof(*out->tls));
    /* Relative to the config file, like plugin_dirs. */
    out->tls->certificate = resolve_dir(cfg->path, config_setting_get_string(cert));
    out->tls->key = resolve_dir(cfg->path, config_setting_get_string(key));
    out->tls->min_version = version;
    out->tls->ciphers = ciphers != NULL ? xstrdup(ciphers) : NULL;
    return 0;
}

static void load_listen(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    config_setting_t *list = member(v, root, "", "listen", CONFIG_TYPE_ARRAY);
    int n = list != NULL ? config_setting_length(list) : 0;
    if (list != NULL && n == 0)
        verr(v, list, "listen", "needs at least one address");
    if (n == 0) {
        cfg->listen = xcalloc(1, sizeof(*cfg->listen));
        cfg->listen[0] = (weft_listen_cfg){.host = xstrdup("0.0.0.0"), .port = 8080, .cfg_port = 8080};
        cfg->n_listen = 1;
        return;
    }
    cfg->listen = xcalloc((size_t)n, sizeof(*cfg->listen));
    for (int i = 0; i < n; i++) {
        config_setting_t *s = config_setting_get_elem(list, (unsigned)i);
        char where[64];
        snprintf(where, sizeof(where), "listen[%d]", i);
        if (config_setting_type(s) == CONFIG_TYPE_STRING) {
            if (parse_listen(v, s, where, &cfg->listen[cfg->n_listen]) == 0)
                cfg->n_listen++;
        } else if (config_setting_is_group(s)) {
            if (parse_listen_group(v, cfg, s, where, &cfg->listen[cfg->n_listen]) == 0)
                cfg->n_listen++;
        } else {
            verr(v, s, where, "must be \"ADDRESS:PORT\" or a group { address = \"ADDRESS:PORT\"; tls = { ... }; }");
        }
    }
}


static int is_loopback(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0;
}

/* The admin listener shows internals and can trigger reloads: loopback only
 * unless the operator says otherwise in so many words. */
static void load_admin(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    static const char *const keys[] = {"listen", "allow_remote", NULL};
    cfg->admin.enabled = 1;
    cfg->admin.host = xstrdup("127.0.0.1");
    cfg->admin.port = cfg->admin.cfg_port = 9901;
    cfg->admin.is_default = 1;
    config_setting_t *g = config_setting_get_member(root, "admin");
    if (g == NULL)
        return;
    if (config_setting_type(g) == CONFIG_TYPE_BOOL && !config_setting_get_bool(g)) {
        cfg->admin.enabled = 0;
        return;
    }
    if ((g = member(v, root, "", "admin", CONFIG_TYPE_GROUP)) == NULL)
        return;
    check_keys(v, g, "admin", keys);
    cfg->admin.is_default = 0;
    config_setting_t *l = member(v, g, "admin", "listen", CONFIG_TYPE_STRING);
    weft_listen_cfg lc;
    if (l != NULL && parse_listen(v, l, "admin.listen", &lc) == 0) {
        free(cfg->admin.host);
        cfg->admin.host = lc.host;
        cfg->admin.port = cfg->admin.cfg_port = lc.port;
    }
    config_setting_t *remote = member(v, g, "admin", "allow_remote", CONFIG_TYPE_BOOL);
    cfg->admin.allow_remote = remote != NULL && config_setting_get_bool(remote);
    if (!is_loopback(cfg->admin.host) && !cfg->admin.allow_remote)
        verr(v, l, "admin.listen",
             "'%s' is not a loopback address; the admin listener exposes internals and reloads, so set "
             "admin.allow_remote = true if you really mean it",
             cfg->admin.host);
}


static void load_plugin_dirs(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    config_setting_t *list = member(v, root, "", "plugin_dirs", CONFIG_TYPE_ARRAY);
    int n = list != NULL ? config_setting_length(list) : 0;
    cfg->plugin_dirs = xcalloc((size_t)n, sizeof(char *));
    for (int i = 0; i < n; i++) {
        config_setting_t *s = config_setting_get_elem(list, (unsigned)i);
        char where[64];
        snprintf(where, sizeof(where), "plugin_dirs[%d]", i);
        if (config_setting_type(s) != CONFIG_TYPE_STRING || config_setting_get_string(s)[0] == '\0') {
            verr(v, s, where, "must be a directory name");
            continue;
        }
        cfg->plugin_dirs[cfg->n_plugin_dirs++] = resolve_dir(cfg->path, config_setting_get_string(s));
    }
}

static void load_pools(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    static const char *const keys[] = {"name", "size", "queue", NULL};
    config_setting_t *list = member(v, root, "", "pools", CONFIG_TYPE_ARRAY);
    int n = list != NULL ? config_setting_length(list) : 0;
    cfg->pools = xcalloc((size_t)n + 1, sizeof(*cfg->pools));
    for (int i = 0; i < n; i++) {
        config_setting_t *g = config_setting_get_elem(list, (unsigned)i);
        char where[64];
        snprintf(where, sizeof(where), "pools[%d]", i);
        if (!config_setting_is_group(g)) {
            verr(v, g, where, "must be a group { name = ...; size = ...; queue = ...; }");
            continue;
        }
        check_keys(v, g, where, keys);
        config_setting_t *name = require(v, g, where, "name", CONFIG_TYPE_STRING);
        if (name == NULL)
            continue;
        const char *nm = config_setting_get_string(name);
        if (!weft_name_is_valid(nm)) {
            verr(v, name, where, "pool name '%s' must be 1-64 characters of a-z, 0-9, '_' or '-'", nm);
            continue;
        }
        if (weft_config_find_pool(cfg, nm) != NULL) {
            verr(v, name, where, "pool '%s' is defined twice", nm);
            continue;
        }
        weft_pool_cfg *p = &cfg->pools[cfg->n_pools++];
        p->name = xstrdup(nm);
        p->size = (int)get_int(v, g, where, "size", 1, 4096, 200);
        p->queue = (int)get_int(v, g, where, "queue", 0, 1000000, 10000);
        p->line = config_setting_source_line(g);
    }
    if (weft_config_find_pool(cfg, "default") == NULL) {
        /* Like a servlet container's 200-thread pool; threads start only if a route uses it. */
        cfg->pools[cfg->n_pools++] = (weft_pool_cfg){xstrdup("default"), 200, 10000, 0};
    }
}

static void load_route(vctx *v, weft_config *cfg, config_setting_t *g, int index)
{
    static const char *const keys[] = {"path", "methods", "plugin", "dispatch", "pool", "options", NULL};
    char where[64];
    snprintf(where, sizeof(where), "routes[%d]", index);
    if (!config_setting_is_group(g)) {
        verr(v, g, where, "must be a group { path = ...; plugin = ...; dispatch = ...; }");
        return;
    }
    check_keys(v, g, where, keys);
    weft_route_cfg r = {.methods = WEFT_M_ALL, .line = config_setting_source_line(g)};
    r.file = config_setting_source_file(g) != NULL ? config_setting_source_file(g) : cfg->path;
    int ok = 1;

    config_setting_t *path = require(v, g, where, "path", CONFIG_TYPE_STRING);
    if (path != NULL) {
        const char *ps = config_setting_get_string(path);
        int metrics = cfg->observability.metrics == WEFT_ON_MAIN && strcmp(ps, "/metrics") == 0;
        int health = cfg->observability.health == WEFT_ON_MAIN && strncmp(ps, "/health/", 8) == 0;
        if (metrics || health) {
            verr(v, path, where, "path '%s' is served by weft itself (observability.%s = \"main\")", ps,
                 metrics ? "metrics" : "health");
            ok = 0;
        }
        char why[256];
        if (weft_pattern_check(config_setting_get_string(path), why, sizeof(why)) != 0) {
            verr(v, path, where, "path '%s': %s", config_setting_get_string(path), why);
            ok = 0;
        }
    } else {
        ok = 0;
    }

    config_setting_t *methods = member(v, g, where, "methods", CONFIG_TYPE_ARRAY);
    if (methods != NULL) {
        r.methods = 0;
        for (int i = 0; i < config_setting_length(methods); i++) {
            config_setting_t *m = config_setting_get_elem(methods, (unsigned)i);
            const char *name = config_setting_type(m) == CONFIG_TYPE_STRING ? config_setting_get_string(m) : "";
            unsigned bit = weft_method_bit(name, strlen(name));
            if (bit == WEFT_M_OTHER) {
                verr(v, m, where, "methods: '%s' is not one of GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS", name);
                ok = 0;
            }
            r.methods |= bit;
        }
        if (r.methods == 0) {
            verr(v, methods, where, "methods: an empty list would refuse every request; leave it out to allow all");
            ok = 0;
        }
        /* HEAD is GET without a body, as every HTTP server treats it. */
        if (r.methods & WEFT_M_GET)
            r.methods |= WEFT_M_HEAD;
    }

    config_setting_t *plugin = require(v, g, where, "plugin", CONFIG_TYPE_STRING);
    if (plugin != NULL && !weft_name_is_valid(config_setting_get_string(plugin))) {
        verr(v, plugin, where,
             "plugin '%s': a plugin name is 1-64 characters of a-z, 0-9, '_' or '-' (no paths; the file is found in "
             "plugin_dirs)",
             config_setting_get_string(plugin));
        ok = 0;
    } else if (plugin == NULL) {
        ok = 0;
    }

    config_setting_t *dispatch = require(v, g, where, "dispatch", CONFIG_TYPE_STRING);
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
        else {
            verr(v, dispatch, where, "dispatch '%s' is not one of pool, coroutine, reactive", d);
            ok = dispatch_ok = 0;
        }
    } else {
        ok = 0;
    }

    config_setting_t *pool = member(v, g, where, "pool", CONFIG_TYPE_STRING);
    /* Checked whatever else is wrong with the route: report everything at once. */
    if (pool != NULL && dispatch_ok && r.dispatch != WEFT_DISPATCH_POOL) {
        verr(v, pool, where, "pool is only meaningful with dispatch = \"pool\"");
        ok = 0;
    }
    if (dispatch_ok && r.dispatch == WEFT_DISPATCH_POOL) {
        const char *pn = pool != NULL ? config_setting_get_string(pool) : "default";
        if (weft_config_find_pool(cfg, pn) == NULL) {
            verr(v, pool, where, "pool '%s' is not defined in pools", pn);
            ok = 0;
        }
        r.pool = xstrdup(pn);
    }

    config_setting_t *options = member(v, g, where, "options", CONFIG_TYPE_GROUP);
    if (options == NULL && config_setting_get_member(g, "options") != NULL)
        ok = 0;
    if (!ok) {
        free(r.pool);
        return;
    }
    r.path = xstrdup(config_setting_get_string(path));
    r.plugin = xstrdup(config_setting_get_string(plugin));
    r.options = options;
    cfg->routes[cfg->n_routes++] = r;
}

static void load_routes(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    config_setting_t *list = member(v, root, "", "routes", CONFIG_TYPE_ARRAY);
    int n = list != NULL ? config_setting_length(list) : 0;
    cfg->routes = xcalloc((size_t)n, sizeof(*cfg->routes));
    for (int i = 0; i < n; i++)
        load_route(v, cfg, config_setting_get_elem(list, (unsigned)i), i);
}

static void load_groups(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    static const char *const limits_keys[] = {"max_body",        "max_uri",         "max_connections",
                                              "request_timeout_ms", "idle_timeout_ms", NULL};
    static const char *const obs_keys[] = {"metrics", "health", NULL};
    static const char *const log_keys[] = {"level", "access_log", NULL};
    static const char *const coro_keys[] = {"stack_size", NULL};
    static const char *const blocking_keys[] = {"threshold_ms", "interval_s", NULL};
    static const char *const shutdown_keys[] = {"grace_s", NULL};

    config_setting_t *g;
    cfg->limits.max_body = 1024 * 1024;
    cfg->limits.max_uri = 8192;
    cfg->limits.max_connections = 10000;
    cfg->limits.request_timeout_ms = 10000;
    cfg->limits.idle_timeout_ms = 10000;
    if ((g = member(v, root, "", "limits", CONFIG_TYPE_GROUP)) != NULL) {
        check_keys(v, g, "limits", limits_keys);
        cfg->limits.max_body = (size_t)get_int(v, g, "limits", "max_body", 0, 1LL << 40, 1024 * 1024);
        cfg->limits.max_uri = (size_t)get_int(v, g, "limits", "max_uri", 256, 400000, 8192);
        cfg->limits.max_connections = (int)get_int(v, g, "limits", "max_connections", 1, 10000000, 10000);
        cfg->limits.request_timeout_ms = (int)get_int(v, g, "limits", "request_timeout_ms", 100, 3600000, 10000);
        cfg->limits.idle_timeout_ms = (int)get_int(v, g, "limits", "idle_timeout_ms", 100, 3600000, 10000);
    }

    cfg->observability.metrics = cfg->observability.health = WEFT_ON_MAIN;
    if ((g = member(v, root, "", "observability", CONFIG_TYPE_GROUP)) != NULL) {
        check_keys(v, g, "observability", obs_keys);
        const char *names[] = {"metrics", "health"};
        int *dst[] = {&cfg->observability.metrics, &cfg->observability.health};
        for (int i = 0; i < 2; i++) {
            const char *val = get_string(v, g, "observability", names[i], "main");
            if (strcmp(val, "main") == 0)
                *dst[i] = WEFT_ON_MAIN;
            else if (strcmp(val, "admin") == 0)
                *dst[i] = WEFT_ON_ADMIN;
            else if (strcmp(val, "off") == 0)
                *dst[i] = WEFT_OFF;
            else {
                char where[64];
                snprintf(where, sizeof(where), "observability.%s", names[i]);
                verr(v, config_setting_get_member(g, names[i]), where, "'%s' is not one of main, admin, off", val);
            }
        }
    }

    cfg->log.level = WEFT_LOG_INFO;
    if ((g = member(v, root, "", "log", CONFIG_TYPE_GROUP)) != NULL) {
        check_keys(v, g, "log", log_keys);
        const char *level = get_string(v, g, "log", "level", "info");
        int lv = weft_log_parse_level(level);
        if (lv < 0)
            verr(v, config_setting_get_member(g, "level"), "log.level", "'%s' is not one of error, warn, info, debug",
                 level);
        else
            cfg->log.level = lv;
        const char *access = get_string(v, g, "log", "access_log", NULL);
        if (access != NULL && access[0] != '\0')
            cfg->log.access_log = xstrdup(access);
    }

    cfg->coroutine.stack_size = 64 * 1024;
    if ((g = member(v, root, "", "coroutine", CONFIG_TYPE_GROUP)) != NULL) {
        check_keys(v, g, "coroutine", coro_keys);
        cfg->coroutine.stack_size =
            (size_t)get_int(v, g, "coroutine", "stack_size", 16 * 1024, 64 * 1024 * 1024, 64 * 1024);
    }

    cfg->blocking.threshold_ms = 20;
    cfg->blocking.interval_s = 10;
    if ((g = member(v, root, "", "blocking", CONFIG_TYPE_GROUP)) != NULL) {
        check_keys(v, g, "blocking", blocking_keys);
        cfg->blocking.threshold_ms = (int)get_int(v, g, "blocking", "threshold_ms", 0, 600000, 20);
        cfg->blocking.interval_s = (int)get_int(v, g, "blocking", "interval_s", 1, 86400, 10);
    }

    weft_db_cfg *db = &cfg->database;
    const char *conninfo = "dbname=weft";
    db->pool_connections = 10;
    db->loop_connections = 1;
    db->statement_timeout_ms = 5000;
    db->connect_timeout_s = 5;
    if ((g = member(v, root, "", "database", CONFIG_TYPE_GROUP)) != NULL) {
        static const char *const db_keys[] = {"conninfo", "pool_connections", "loop_connections",
                                              "statement_timeout_ms", "connect_timeout_s", NULL};
        check_keys(v, g, "database", db_keys);
        db->configured = 1;
        conninfo = get_string(v, g, "database", "conninfo", conninfo);
        db->pool_connections = (int)get_int(v, g, "database", "pool_connections", 1, 1000, 10);
        db->loop_connections = (int)get_int(v, g, "database", "loop_connections", 1, 64, 1);
        db->statement_timeout_ms = (int)get_int(v, g, "database", "statement_timeout_ms", 1, 3600000, 5000);
        db->connect_timeout_s = (int)get_int(v, g, "database", "connect_timeout_s", 1, 600, 5);
    }
    db->conninfo = xstrdup(conninfo);

    cfg->shutdown.grace_s = 10;
    if ((g = member(v, root, "", "shutdown", CONFIG_TYPE_GROUP)) != NULL) {
        check_keys(v, g, "shutdown", shutdown_keys);
        cfg->shutdown.grace_s = (int)get_int(v, g, "shutdown", "grace_s", 0, 3600, 10);
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
    char *dir = xstrdup(cfg->path);
    config_set_include_dir(&cfg->lc, dirname(dir));
    int ok = config_read_string(&cfg->lc, cfg->text);
    free(dir);
    if (!ok) {
        const char *file = config_error_file(&cfg->lc) != NULL ? config_error_file(&cfg->lc) : cfg->path;
        weft_errors_add(v->errs, "%s:%d: %s", file, config_error_line(&cfg->lc), config_error_text(&cfg->lc));
        return -1;
    }
    return 0;
}

weft_config *weft_config_load(const char *path, weft_errors *errs)
{
    char *text = slurp(path, errs);
    if (text == NULL)
        return NULL;
    weft_config *cfg = weft_config_load_text(path, text, errs);
    free(text);
    return cfg;
}

weft_config *weft_config_load_text(const char *path, const char *text, weft_errors *errs)
{
    static const char *const top_keys[] = {"threads", "listen",   "plugin_dirs", "limits", "log",
                                           "coroutine", "blocking", "shutdown",    "pools",  "routes", "database",
                                           "admin",     "watch",    "pid_file",    "observability", "user", NULL};
    weft_config *cfg = xcalloc(1, sizeof(*cfg));
    cfg->path = xstrdup(path);
    cfg->text = xstrdup(text);
    config_init(&cfg->lc);
    vctx v = {.errs = errs, .file = cfg->path};
    if (parse_text(&v, cfg) != 0) {
        weft_config_free(cfg);
        return NULL;
    }
    const config_setting_t *root = config_root_setting(&cfg->lc);
    check_keys(&v, root, "top level", top_keys);
    long ncpu = weft_cpu_count();
    cfg->threads = (int)get_int(&v, root, "", "threads", 1, 1024, ncpu > 0 ? ncpu : 1);
    load_listen(&v, cfg, root);
    load_admin(&v, cfg, root);
    config_setting_t *watch = member(&v, root, "", "watch", CONFIG_TYPE_BOOL);
    cfg->watch = watch != NULL && config_setting_get_bool(watch);
    const char *user = get_string(&v, root, "", "user", NULL);
    if (user != NULL && *user)
        cfg->user = xstrdup(user);
    const char *pid_file = get_string(&v, root, "", "pid_file", NULL);
    if (pid_file != NULL && *pid_file)
        cfg->pid_file = pid_file[0] == '/' ? xstrdup(pid_file) : resolve_dir(cfg->path, pid_file);
    load_plugin_dirs(&v, cfg, root);
    load_groups(&v, cfg, root);
    load_pools(&v, cfg, root);
    load_routes(&v, cfg, root);
    if (v.failed) {
        weft_config_free(cfg);
        return NULL;
    }
    return cfg;
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
    for (size_t i = 0; i < cfg->n_routes; i++) {
        free(cfg->routes[i].path);
        free(cfg->routes[i].plugin);
        free(cfg->routes[i].pool);
    }
    free(cfg->routes);
    free(cfg->log.access_log);
    free(cfg->database.conninfo);
    free(cfg->admin.host);
    free(cfg->pid_file);
    free(cfg->user);
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
    default: return "reactive";
    }
}
