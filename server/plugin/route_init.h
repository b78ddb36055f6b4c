/*
 * The weft_init context a plugin's init() receives: typed access to the
 * route's `options` group that reports wrong types and unknown options with
 * the config file and line, so option mistakes read like config mistakes.
 */
#ifndef WEFT_ROUTE_INIT_H
#define WEFT_ROUTE_INIT_H

#include <weft/plugin.h>

#include "config/config.h"
#include "request/route.h"
#include "base/errors.h"

struct weft_host_set;

struct weft_init {
    const weft_route_cfg *rc; /* NULL for a plugin's load() */
    const char *plugin;
    config_setting_t *options; /* the route's options, or plugins.NAME */
    const char *what;          /* "route /x" or "plugins.NAME", for messages */
    const char *file;
    int line;
    void *plugin_state; /* what load() returned, for the routes' init */
    struct weft_ptimers *timers; /* the plugin load's timers (timer_start) */
    const char *asked[64]; /* the route's options the plugin looked at, each once */
    size_t n_asked;
    int failed;
    weft_errors *errs;
};

/** A route's init context. */
weft_init weft_route_init_for_route(const weft_route_cfg *rc, char *what, size_t what_size, weft_errors *errs);
void *weft_route_init_init_plugin_state(const weft_init *ctx);
const char *weft_route_init_init_route(const weft_init *ctx);
const char *weft_route_init_opt_string(weft_init *ctx, const char *name, const char *def);
long long weft_route_init_opt_int(weft_init *ctx, const char *name, long long def);
double weft_route_init_opt_float(weft_init *ctx, const char *name, double def);
int weft_route_init_opt_bool(weft_init *ctx, const char *name, int def);
void weft_route_init_init_error(weft_init *ctx, const char *fmt, ...) WEFT_PRINTF(2, 3);
/** After init: reports options the plugin never asked for. */
void weft_init_check_unused(weft_init *ctx);

/**
 * Calls the plugin's init for route `r` (cfg and desc set) with its
 * options, the plugin's own state and the host table of the ABI its
 * descriptor was built for, taken from `hosts` (plugin/host.h's tables:
 * passed in, since they hold this module's functions); 0, or -1 with the
 * reasons in `errs`. Sets r->initialised when fini must run. Timers the
 * init starts go to `timers` (the plugin load's set).
 */
int weft_route_init_run(weft_route *r, const struct weft_host_set *hosts, void *plugin_state, struct weft_ptimers *timers,
                        weft_errors *errs);

/**
 * Calls plugin `name`'s load() (if it has one) with its plugins.NAME
 * options from `cfg`; the plugin's state goes to `state`, and `loaded` is
 * set when unload must run. 0, or -1 with the reasons in `errs`.
 */
int weft_route_init_load(const weft_config *cfg, const char *name, const weft_plugin *desc, const struct weft_host_set *hosts,
                         void **state, unsigned char *loaded, struct weft_ptimers *timers, weft_errors *errs);

#endif
