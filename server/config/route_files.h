/*
 * Route fragments: routes that travel with a plugin instead of living in the
 * main config. Two places hold them, read in this order after the main
 * file's `routes`:
 *   1. routes.d/ next to the config file (/etc/weft/routes.d for the
 *      package): every *.conf not starting with '.', in byte-wise order;
 *   2. NAME.routes next to NAME.so in the plugin directory the loader takes
 *      NAME.so from (WEFT_PLUGIN_PATH first, then plugin_dirs).
 * A fragment is a libconfig file holding one setting, `routes = ( ... );`,
 * whose entries are validated exactly like the main file's.
 */
#ifndef WEFT_ROUTE_FILES_H
#define WEFT_ROUTE_FILES_H

#include "base/errors.h"
#include "config/config.h"

/** Validates one route entry into cfg->routes (config.c's own route reader). */
typedef void weft_route_reader(void *ctx, config_setting_t *route, int index);

/**
 * Reads every fragment of `cfg` (its routes_dir and plugin directories),
 * growing cfg->routes through `read`. Returns the number of files with
 * problems in `errs` (parse errors, unknown top-level settings, bad routes,
 * with FILE:LINE); the files `policy` lets go are left out instead, into
 * cfg->refused.
 */
size_t weft_route_files_load(weft_config *cfg, weft_errors *errs, weft_route_reader *read, void *ctx,
                             const weft_dropin_policy *policy);
/** True when a NAME.routes for `plugin` sits in one of the plugin directories. */
int weft_route_files_has_fragment(const weft_config *cfg, const char *plugin);
/** True when `p` lets `file` be left out. */
int weft_dropin_policy_allows(const weft_dropin_policy *p, const char *file);
void weft_refusals_free(weft_refusal *r, size_t n);
/** Drops cfg->routes[from..]: the routes of a drop-in file left out. */
void weft_route_cfg_free_from(weft_config *cfg, size_t from);
/** The same for static routes (config/route_static.c). */
void weft_static_cfg_free_from(weft_config *cfg, size_t from);
/** Frees what weft_route_files_load attached to `cfg`. */
void weft_route_files_free(weft_config *cfg);
/** True for a file name the watcher must treat as a route fragment in a plugin directory. */
int weft_route_file_is_plugin_fragment(const char *name);
/** True for a file name that is a fragment inside routes.d. */
int weft_route_file_is_dropin(const char *name);

#endif
