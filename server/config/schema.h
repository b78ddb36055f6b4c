/*
 * The validation toolkit the config parsers share (config/ only): typed
 * lookups that report a wrong type, a range or a missing setting as
 * FILE:LINE: setting: reason, and never let a typo become a silent default.
 */
#ifndef WEFT_CONFIG_SCHEMA_H
#define WEFT_CONFIG_SCHEMA_H

#include <libconfig.h>
#include <stddef.h>

#include "base/errors.h"
#include "config/config.h"

/* Validation state: every message names the file, the line and the setting. */
typedef struct vctx {
    weft_errors *errs;
    const char *file;
    int failed;
} vctx;

void weft_cfg_error(vctx *v, const config_setting_t *s, const char *where, const char *fmt, ...) WEFT_PRINTF(4, 5);
/* Config parsing runs at start-up and on reload, never while serving a request. */
char *weft_cfg_strdup(const char *s);
void *weft_cfg_calloc(size_t n, size_t size);
/** Reports every key of `group` not in the NULL-terminated `allowed`. */
void weft_cfg_check_keys(vctx *v, const config_setting_t *group, const char *where, const char *const *allowed);
void weft_cfg_path_join(char *buf, size_t size, const char *where, const char *name);
/** The member if present with the right type; NULL (and an error for a wrong type) otherwise. */
config_setting_t *weft_cfg_member(vctx *v, const config_setting_t *group, const char *where, const char *name, int type);
long long weft_cfg_int(vctx *v, const config_setting_t *group, const char *where, const char *name, long long min,
                       long long max, long long def);
/** A pointer owned by the libconfig tree (lives as long as cfg->lc). */
const char *weft_cfg_string(vctx *v, const config_setting_t *group, const char *where, const char *name,
                            const char *def);
/**
 * The index in `names` (n of them) of the string setting `name`, `def` when
 * it is absent; an unknown value is reported ("'x' is not one of a, b, c")
 * and gives `def` too.
 */
int weft_cfg_choice(vctx *v, const config_setting_t *group, const char *where, const char *name,
                    const char *const *names, int n, int def);
config_setting_t *weft_cfg_require(vctx *v, const config_setting_t *group, const char *where, const char *name,
                                   int type);
/** `dir` relative to the config file's directory (absolute paths as they are), malloc'd. */
char *weft_cfg_resolve_path(const char *config_path, const char *dir);

/**
 * The file a secret setting names (database.password_file, tls.key and
 * certificate, admin.token_file), malloc'd: `credential:NAME` is
 * $CREDENTIALS_DIRECTORY/NAME (systemd's LoadCredential=, a Kubernetes
 * Secret mounted as files), anything else a path relative to the config
 * file. NULL after reporting why at `s`.
 */
char *weft_cfg_secret_path(vctx *v, const config_setting_t *s, const char *where, const char *config_path,
                           const char *value);
/** The secret's content (trailing newlines and spaces dropped), malloc'd; NULL after reporting why. */
char *weft_cfg_secret_read(vctx *v, const config_setting_t *s, const char *where, const char *config_path,
                           const char *value, size_t *len);

/* route_auto.c: a route's `auto` group into r->adapt (defaults when absent); 0 on an error. */
int weft_cfg_load_route_auto(vctx *v, const config_setting_t *route, const char *where, weft_route_cfg *r);

/* route_ratelimit.c: the `rate_limit` group of `parent` (a route: `def` is the top level's, taken when it has
 * none, and `false` opts out; the top level: `def` NULL, where "") into *out; 0 on an error. */
int weft_cfg_load_rate_limit(vctx *v, const config_setting_t *parent, const char *where, weft_ratelimit_cfg *out,
                             const weft_ratelimit_cfg *def);

/* listen_proxies.c: a listen group's trusted_proxies and proxy_protocol into `out`; 0, or -1 after reporting. */
int weft_cfg_load_proxies(vctx *v, const config_setting_t *g, const char *where, weft_listen_cfg *out);
/* route_static.c: a route with a `static` group into cfg->statics. */
void weft_cfg_load_route_static(vctx *v, weft_config *cfg, const config_setting_t *route, const char *where);

/* route_plugin.c: routes[index] (or a fragment's), a plugin's route into cfg->routes, a static one into
 * cfg->statics; nothing is added after an error. */
void weft_cfg_load_route(vctx *v, weft_config *cfg, config_setting_t *g, int index);

/* limits_cfg.c: the limits group (defaults when absent). */
void weft_cfg_load_limits(vctx *v, weft_config *cfg, const config_setting_t *root);

/* pools_cfg.c: the pools group into cfg->pools, with a "default" pool added when it names none. */
void weft_cfg_load_pools(vctx *v, weft_config *cfg, const config_setting_t *root);

/* listen.c */
void weft_cfg_load_listen(vctx *v, weft_config *cfg, const config_setting_t *root);
void weft_cfg_load_admin(vctx *v, weft_config *cfg, const config_setting_t *root);

/* database_cfg.c: the database group (defaults when absent, PG* variables counted as configured);
 * weft_cfg_free_database frees its strings. */
void weft_cfg_load_database(vctx *v, weft_config *cfg, const config_setting_t *root);
void weft_cfg_free_database(weft_config *cfg);

/* trace_cfg.c: the trace group (defaults when absent); trace_cfg_free frees its strings. */
void weft_cfg_load_trace(vctx *v, weft_config *cfg, const config_setting_t *root);
void weft_cfg_free_trace(weft_config *cfg);

#endif
