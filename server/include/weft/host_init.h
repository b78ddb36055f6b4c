/*
 * weft/host_init.h — the `init` group: what load() and init() read from the
 * configuration, and how they explain a failure. Valid only inside load()
 * or init(), on the thread that runs them; `ctx` is theirs.
 */
#ifndef WEFT_HOST_INIT_H
#define WEFT_HOST_INIT_H

#include <weft/types.h>

#define WEFT_HOST_INIT_VERSION 1u

typedef struct weft_host_init {
    uint32_t struct_size;
    uint32_t version; /**< WEFT_HOST_INIT_VERSION of the running host */
    /** The route pattern being initialised ("/pool/cpu"); NULL in load(). The string lives as long as the route. */
    const char *(*route)(const weft_init *ctx);
    /** In init(): the plugin-wide state load() returned for this configuration (NULL without load). NULL in load(). */
    void *(*plugin_state)(const weft_init *ctx);
    /**
     * Options of the route's `options` group (in load(): of `plugins = {
     * NAME = {...} }`). A missing option yields `def`; a wrong type makes
     * load/init fail with the config file and line, whatever it returns.
     * Options a plugin never asks for are reported as unknown. The string
     * lives as long as the configuration.
     */
    const char *(*opt_string)(weft_init *ctx, const char *name, const char *def);
    /** An integer option, as opt_string. */
    long long (*opt_int)(weft_init *ctx, const char *name, long long def);
    /** A number option (an integer is accepted too), as opt_string. */
    double (*opt_float)(weft_init *ctx, const char *name, double def);
    /** A boolean option, as opt_string: 0 or 1 (or `def`). */
    int (*opt_bool)(weft_init *ctx, const char *name, int def);
    /** Says why load/init fails; the host logs it with the route and config line. Returns nothing. */
    void (*error)(weft_init *ctx, const char *fmt, ...) WEFT_PRINTF(2, 3);
} weft_host_init;

#endif
