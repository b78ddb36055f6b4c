#include "config/route_files.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/log.h"
#include "base/names.h"
#include "base/plugin_path.h"
#include "base/trust.h"
#include "config/expand.h"
#include "config/intlit.h"

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

/* Dot files are the write-then-rename rule's temporaries (.x.routes.new). */
int weft_route_file_is_plugin_fragment(const char *name) { return name[0] != '.' && ends_with(name, ".routes"); }

int weft_route_file_is_dropin(const char *name) { return name[0] != '.' && ends_with(name, ".conf"); }

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Byte-wise, not strcoll: the order must not depend on the locale. */
static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

static char *join(const char *dir, const char *name)
{
    char *p = NULL;
    if (asprintf(&p, "%s/%s", dir, name) < 0)
        weft_fatal("out of memory");
    return p;
}

int weft_dropin_policy_allows(const weft_dropin_policy *p, const char *file)
{
    if (p == NULL)
        return 0;
    for (size_t i = 0; !p->any && i < p->n_known; i++)
        if (strcmp(p->known[i].file, file) == 0)
            return 1;
    return p->any;
}

void weft_refusals_free(weft_refusal *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(r[i].file);
        free(r[i].reason);
    }
    free(r);
}

void weft_route_cfg_free_from(weft_config *cfg, size_t from)
{
    for (size_t i = from; i < cfg->n_routes; i++) {
        free(cfg->routes[i].path);
        free(cfg->routes[i].plugin);
        free(cfg->routes[i].pool);
        weft_headers_cfg_free(cfg->routes[i].headers);
        weft_compress_cfg_free(cfg->routes[i].compress);
        weft_cors_cfg_free(cfg->routes[i].cors);
    }
    if (from < cfg->n_routes)
        cfg->n_routes = from;
}

typedef struct reading {
    weft_config *cfg;
    weft_errors *errs;
    size_t problems;
    weft_route_reader *read;
    void *ctx;
    const weft_dropin_policy *policy;
} reading;

static void refuse(weft_config *cfg, const char *file, char *reason)
{
    weft_refusal *r = realloc(cfg->refused, (cfg->n_refused + 1) * sizeof(*r));
    if (r == NULL || (r[cfg->n_refused].file = strdup(file)) == NULL)
        weft_fatal("out of memory");
    r[cfg->n_refused++].reason = reason;
    cfg->refused = r;
}

static void parse_fragment(reading *rd, weft_route_file *rf, const char *owner);

/* `owner`: the plugin a NAME.routes file belongs to, NULL for routes.d. A
 * file the policy lets go is left out whole, with the errors it caused as
 * its reason: one broken drop-in never takes the others (or a start) down. */
static void read_fragment(reading *rd, const char *path, const char *owner)
{
    weft_config *cfg = rd->cfg;
    const weft_dropin_policy *p = rd->policy;
    for (size_t i = 0; p != NULL && i < p->n_skip; i++)
        if (strcmp(p->skip[i].file, path) == 0) {
            char *why = strdup(p->skip[i].reason);
            if (why == NULL)
                weft_fatal("out of memory");
            refuse(cfg, path, why);
            return;
        }
    size_t errs_before = rd->errs->count, routes_before = cfg->n_routes, statics_before = cfg->n_statics;

    /* A fragment routes requests to plugin code and passes it options: it
     * gets the same ownership, permission and symlink checks as the .so,
     * and is bounded before libconfig reads it (its whole tree is held). */
    char real[4096], why[1024];
    struct stat st;
    if (weft_file_trusted("route fragment", path, real, &st, why, sizeof(why)) != 0)
        weft_errors_add(rd->errs, "route fragment %s: refused: %s", path, why);
    else if ((unsigned long long)st.st_size > cfg->limits.max_route_file_size)
        weft_errors_add(rd->errs, "route fragment %s: refused: %lld bytes, more than limits.max_route_file_size (%zu)",
                        path, (long long)st.st_size, cfg->limits.max_route_file_size);
    if (rd->errs->count != errs_before) {
        if (!weft_dropin_policy_allows(p, path)) {
            rd->problems++;
            return;
        }
        refuse(cfg, path, weft_errors_join(rd->errs, errs_before, rd->errs->count));
        weft_errors_truncate(rd->errs, errs_before);
        return;
    }
    weft_route_file *rf = calloc(1, sizeof(*rf));
    if (rf == NULL || (rf->path = strdup(path)) == NULL)
        weft_fatal("out of memory");
    config_init(&rf->lc);
    char *dir = strdup(path);
    if (dir == NULL)
        weft_fatal("out of memory");
    config_set_include_dir(&rf->lc, dirname(dir));
    free(dir);
    weft_route_file **files = realloc(cfg->route_files, (cfg->n_route_files + 1) * sizeof(*files));
    if (files == NULL)
        weft_fatal("out of memory");
    cfg->route_files = files;
    cfg->route_files[cfg->n_route_files++] = rf;
    parse_fragment(rd, rf, owner);
    if (rd->errs->count == errs_before)
        return;
    if (!weft_dropin_policy_allows(p, path)) {
        rd->problems++;
        return;
    }
    refuse(cfg, path, weft_errors_join(rd->errs, errs_before, rd->errs->count));
    weft_errors_truncate(rd->errs, errs_before);
    weft_route_cfg_free_from(cfg, routes_before);
    weft_static_cfg_free_from(cfg, statics_before);
    /* Still the last one read: nothing else points into it. */
    cfg->n_route_files--;
    config_destroy(&rf->lc);
    free(rf->path);
    free(rf);
}

static void parse_fragment(reading *rd, weft_route_file *rf, const char *owner)
{
    weft_config *cfg = rd->cfg;
    const char *path = rf->path;
    if (!config_read_file(&rf->lc, path)) {
        if (config_error_type(&rf->lc) == CONFIG_ERR_FILE_IO)
            weft_errors_add(rd->errs, "%s: cannot read route fragment: %s", path, strerror(errno));
        else
            weft_errors_add(rd->errs, "%s:%d: %s", config_error_file(&rf->lc) ? config_error_file(&rf->lc) : path,
                            config_error_line(&rf->lc), config_error_text(&rf->lc));
        return;
    }
    config_setting_t *root = config_root_setting(&rf->lc);
    if (weft_cfg_check_integers(&rf->lc, path, NULL, rd->errs) > 0 || weft_config_expand(root, path, rd->errs) > 0)
        return;
    for (int i = 0; i < config_setting_length(root); i++) {
        config_setting_t *s = config_setting_get_elem(root, (unsigned)i);
        if (strcmp(config_setting_name(s), "routes") != 0) {
            weft_errors_add(rd->errs, "%s:%d: %s: unknown setting in a route fragment (it holds only routes = ( ... );)",
                            path, config_setting_source_line(s), config_setting_name(s));
        }
    }
    config_setting_t *list = config_setting_get_member(root, "routes");
    if (list == NULL || !(config_setting_is_list(list) || config_setting_is_array(list))) {
        weft_errors_add(rd->errs, "%s:%d: routes: a route fragment needs routes = ( { path = ...; plugin = ...; "
                        "dispatch = ...; } );", path, list != NULL ? config_setting_source_line(list) : 1);
        return;
    }
    int n = config_setting_length(list);
    if ((size_t)n > rd->cfg->limits.max_route_file_routes) {
        config_setting_t *over = config_setting_get_elem(list, (unsigned)rd->cfg->limits.max_route_file_routes);
        weft_errors_add(rd->errs, "%s:%d: routes[%zu]: route fragment refused: %d routes, more than "
                        "limits.max_route_file_routes (%zu)",
                        path, config_setting_source_line(over), rd->cfg->limits.max_route_file_routes, n,
                        rd->cfg->limits.max_route_file_routes);
        return; /* read_fragment leaves the file out, or fails the config, by the drop-in policy */
    }
    weft_route_cfg *routes = realloc(cfg->routes, (cfg->n_routes + (size_t)n + 1) * sizeof(*routes));
    if (routes == NULL)
        weft_fatal("out of memory");
    cfg->routes = routes;
    size_t first = cfg->n_routes;
    for (int i = 0; i < n; i++)
        rd->read(rd->ctx, config_setting_get_elem(list, (unsigned)i), i);
    /* A file that travels with a plugin routes to that plugin: anything
     * else is either a copy-paste slip or a plugin hijacking another's URL. */
    for (size_t k = first; owner != NULL && k < cfg->n_routes; k++)
        if (strcmp(cfg->routes[k].plugin, owner) != 0) {
            weft_errors_add(rd->errs,
                            "%s:%d: route %s: plugin '%s': %s.routes may only route to plugin '%s' (routes for other "
                            "plugins go in %s)",
                            cfg->routes[k].file, cfg->routes[k].line, cfg->routes[k].path, cfg->routes[k].plugin,
                            owner, owner, cfg->routes_dir);
            }
}

static void read_routes_dir(reading *rd)
{
    struct dirent **names = NULL;
    int n = scandir(rd->cfg->routes_dir, &names, NULL, by_name);
    if (n < 0) {
        if (errno != ENOENT) {
            weft_errors_add(rd->errs, "%s: cannot read the route fragment directory: %s", rd->cfg->routes_dir,
                            strerror(errno));
            rd->problems++;
        }
        return;
    }
    for (int i = 0; i < n; i++) {
        char *path = join(rd->cfg->routes_dir, names[i]->d_name);
        if (weft_route_file_is_dropin(names[i]->d_name) && is_file(path))
            read_fragment(rd, path, NULL);
        free(path);
        free(names[i]);
    }
    free(names);
}

/* NAME.routes counts only beside the NAME.so the loader would pick, so a
 * plugin shadowed by WEFT_PLUGIN_PATH does not bring the shadowed routes. */
static void read_plugin_dirs(reading *rd)
{
    weft_plugin_path sp;
    weft_plugin_path_init(&sp, rd->cfg->plugin_dirs, rd->cfg->n_plugin_dirs);
    const char **dirs = sp.dirs;
    size_t n_dirs = sp.n;
    for (size_t d = 0; d < n_dirs; d++) {
        struct dirent **names = NULL;
        int n = scandir(dirs[d], &names, NULL, by_name);
        for (int i = 0; i < n; i++) {
            const char *fn = names[i]->d_name;
            char plugin[256];
            snprintf(plugin, sizeof(plugin), "%.*s", (int)(strlen(fn) - strlen(".routes")), fn);
            if (weft_route_file_is_plugin_fragment(fn) && weft_name_is_valid(plugin)) {
                char so[300];
                snprintf(so, sizeof(so), "%s.so", plugin);
                size_t home = n_dirs;
                for (size_t k = 0; k < n_dirs && home == n_dirs; k++) {
                    char *p = join(dirs[k], so);
                    if (is_file(p))
                        home = k;
                    free(p);
                }
                char *path = join(dirs[d], fn);
                if (home == d && is_file(path))
                    read_fragment(rd, path, plugin);
                free(path);
            }
            free(names[i]);
        }
        free(names);
    }
    weft_plugin_path_free(&sp);
}

int weft_route_files_has_fragment(const weft_config *cfg, const char *plugin)
{
    weft_plugin_path sp;
    weft_plugin_path_init(&sp, cfg->plugin_dirs, cfg->n_plugin_dirs);
    const char **dirs = sp.dirs;
    size_t n_dirs = sp.n;
    int found = 0;
    for (size_t d = 0; d < n_dirs && !found; d++) {
        char *path = NULL;
        if (asprintf(&path, "%s/%s.routes", dirs[d], plugin) < 0)
            weft_fatal("out of memory");
        found = is_file(path);
        free(path);
    }
    weft_plugin_path_free(&sp);
    return found;
}

size_t weft_route_files_load(weft_config *cfg, weft_errors *errs, weft_route_reader *read, void *ctx,
                             const weft_dropin_policy *policy)
{
    char *copy = strdup(cfg->path);
    if (copy == NULL)
        weft_fatal("out of memory");
    cfg->routes_dir = join(dirname(copy), "routes.d");
    free(copy);
    reading rd = {.cfg = cfg, .errs = errs, .read = read, .ctx = ctx, .policy = policy};
    read_routes_dir(&rd);
    read_plugin_dirs(&rd);
    return rd.problems;
}

void weft_route_files_free(weft_config *cfg)
{
    for (size_t i = 0; i < cfg->n_route_files; i++) {
        config_destroy(&cfg->route_files[i]->lc);
        free(cfg->route_files[i]->path);
        free(cfg->route_files[i]);
    }
    free(cfg->route_files);
    free(cfg->routes_dir);
    weft_refusals_free(cfg->refused, cfg->n_refused);
}
