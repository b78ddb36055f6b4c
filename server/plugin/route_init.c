#include "plugin/route_init.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plugin/host.h"
#include "request/request.h"

static const char *file_of(const weft_init *ctx, const config_setting_t *s)
{
    return s != NULL && config_setting_source_file(s) != NULL ? config_setting_source_file(s) : ctx->file;
}

/* Only options the route sets, once each: the table holds what
 * weft_init_check_unused compares with, and reads of absent options or
 * repeated reads would fill it and leave a set option unrecorded. */
static void note_asked(weft_init *ctx, const char *name)
{
    for (size_t k = 0; k < ctx->n_asked; k++)
        if (strcmp(ctx->asked[k], name) == 0)
            return;
    if (ctx->n_asked < sizeof(ctx->asked) / sizeof(ctx->asked[0]))
        ctx->asked[ctx->n_asked++] = name;
}

static config_setting_t *lookup(weft_init *ctx, const char *name, int type, const char *type_text)
{
    if (ctx->options == NULL)
        return NULL;
    config_setting_t *s = config_setting_get_member(ctx->options, name);
    if (s == NULL)
        return NULL;
    note_asked(ctx, name);
    int t = config_setting_type(s);
    if (t == type || (type == CONFIG_TYPE_INT && t == CONFIG_TYPE_INT64) ||
        (type == CONFIG_TYPE_FLOAT && (t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64)))
        return s;
    weft_errors_add(ctx->errs, "%s:%d: %s: option '%s' of plugin '%s' must be %s", file_of(ctx, s),
                    config_setting_source_line(s), ctx->what, name, ctx->plugin, type_text);
    ctx->failed = 1;
    return NULL;
}

weft_init weft_route_init_for_route(const weft_route_cfg *rc, char *what, size_t what_size, weft_errors *errs)
{
    snprintf(what, what_size, "route %s", rc->path);
    return (weft_init){.rc = rc, .plugin = rc->plugin, .options = rc->options, .what = what, .file = rc->file,
                       .line = rc->line, .errs = errs};
}

const char *weft_route_init_init_route(const weft_init *ctx) { return ctx->rc != NULL ? ctx->rc->path : NULL; }

void *weft_route_init_init_plugin_state(const weft_init *ctx) { return ctx->plugin_state; }

const char *weft_route_init_opt_string(weft_init *ctx, const char *name, const char *def)
{
    config_setting_t *s = lookup(ctx, name, CONFIG_TYPE_STRING, "a string");
    return s != NULL ? config_setting_get_string(s) : def;
}

long long weft_route_init_opt_int(weft_init *ctx, const char *name, long long def)
{
    config_setting_t *s = lookup(ctx, name, CONFIG_TYPE_INT, "an integer");
    return s != NULL ? config_setting_get_int64(s) : def;
}

double weft_route_init_opt_float(weft_init *ctx, const char *name, double def)
{
    config_setting_t *s = lookup(ctx, name, CONFIG_TYPE_FLOAT, "a number");
    if (s == NULL)
        return def;
    return config_setting_type(s) == CONFIG_TYPE_FLOAT ? config_setting_get_float(s)
                                                       : (double)config_setting_get_int64(s);
}

int weft_route_init_opt_bool(weft_init *ctx, const char *name, int def)
{
    config_setting_t *s = lookup(ctx, name, CONFIG_TYPE_BOOL, "true or false");
    return s != NULL ? config_setting_get_bool(s) : def;
}

void weft_route_init_init_error(weft_init *ctx, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    weft_errors_add(ctx->errs, "%s:%d: %s: plugin '%s' %s failed: %s", ctx->file, ctx->line, ctx->what,
                    ctx->plugin, ctx->rc != NULL ? "init" : "load", msg);
    ctx->failed = 1;
}

void weft_init_check_unused(weft_init *ctx)
{
    if (ctx->options == NULL)
        return;
    for (int i = 0; i < config_setting_length(ctx->options); i++) {
        config_setting_t *s = config_setting_get_elem(ctx->options, (unsigned)i);
        const char *name = config_setting_name(s);
        int used = 0;
        for (size_t k = 0; k < ctx->n_asked && !used; k++)
            used = strcmp(ctx->asked[k], name) == 0;
        if (!used) {
            weft_errors_add(ctx->errs, "%s:%d: %s: '%s' is not an option of plugin '%s'", file_of(ctx, s),
                            config_setting_source_line(s), ctx->what, name, ctx->plugin);
            ctx->failed = 1;
        }
    }
}

/* init and load have one shape per ABI: the host table they get. An ABI 1
 * descriptor's pointer is converted back to the type it was built with. */
static int call_init(const weft_plugin *desc, weft_rc (*fn)(const weft_host *, weft_init *, void **),
                     const weft_host_set *hosts, weft_init *ctx, void **state)
{
    if (desc->abi_version == 1) {
        weft_v1_init_fn v1 = (weft_v1_init_fn)(void (*)(void))fn;
        return v1(hosts->abi1, ctx, state);
    }
    return fn(hosts->abi2, ctx, state);
}

int weft_route_init_run(weft_route *r, const struct weft_host_set *hosts, void *plugin_state, struct weft_ptimers *timers,
                        weft_errors *errs)
{
    /* Every route inits before it serves, so requests find the table. Set
     * once, at the first init (before the loops start): later inits only
     * read it, and the loops' reads race with no write. */
    if (weft_req_default_host != hosts->abi2)
        weft_req_default_host = hosts->abi2;
    char what[300];
    weft_init ctx = weft_route_init_for_route(r->cfg, what, sizeof(what), errs);
    ctx.plugin_state = plugin_state;
    ctx.timers = timers;
    int rc = WEFT_OK;
    if (r->desc->init != NULL)
        rc = call_init(r->desc, r->desc->init, hosts, &ctx, &r->state);
    if (rc != WEFT_OK && !ctx.failed)
        weft_route_init_init_error(&ctx, "init returned %d", rc);
    if (!ctx.failed)
        weft_init_check_unused(&ctx);
    if (rc == WEFT_OK)
        r->initialised = 1; /* fini must run even if only our option checks failed */
    return ctx.failed ? -1 : 0;
}

int weft_route_init_load(const weft_config *cfg, const char *name, const weft_plugin *desc, const struct weft_host_set *hosts,
                         void **state, unsigned char *loaded, struct weft_ptimers *timers, weft_errors *errs)
{
    if (desc->load == NULL)
        return 0;
    char what[300];
    snprintf(what, sizeof(what), "plugins.%s", name);
    config_setting_t *opts = weft_config_plugin_options(cfg, name);
    weft_init ctx = {.plugin = name, .options = opts, .what = what, .file = cfg->path,
                     .line = opts != NULL ? (int)config_setting_source_line(opts) : 0, .timers = timers,
                     .errs = errs};
    int rc = call_init(desc, desc->load, hosts, &ctx, state);
    if (rc != WEFT_OK && !ctx.failed)
        weft_route_init_init_error(&ctx, "load returned %d", rc);
    if (!ctx.failed)
        weft_init_check_unused(&ctx);
    if (rc == WEFT_OK)
        *loaded = 1; /* unload must run even if only our option checks failed */
    return ctx.failed ? -1 : 0;
}
