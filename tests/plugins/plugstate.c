/*
 * Fixture "plugstate": plugin-level lifecycle (plugin API 1.1). load() reads
 * plugins.plugstate { greeting } and logs "plugstate load #N greeting=G";
 * every route's init gets that state and checks it; unload() logs
 * "plugstate unload #N". Routes answer
 *     greeting=G route=R load=N state=P
 * where P is the plugin state's address, the same for every route of one
 * configuration.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/plugin.h>

static const weft_host *host;
static atomic_int loads;

typedef struct plug {
    int n;
    char greeting[64];
} plug;

typedef struct route {
    plug *p;
    char name[32];
} route;

static int ps_load(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    if (h->init_route(ctx) != NULL) {
        h->init_error(ctx, "load got a route");
        return WEFT_ERROR;
    }
    plug *p = calloc(1, sizeof *p);
    if (p == NULL)
        return WEFT_ERROR;
    p->n = atomic_fetch_add(&loads, 1) + 1;
    snprintf(p->greeting, sizeof p->greeting, "%s", h->opt_string(ctx, "greeting", "hello"));
    if (h->opt_bool(ctx, "fail", 0)) {
        free(p);
        h->init_error(ctx, "asked to fail");
        return WEFT_ERROR;
    }
    h->log(NULL, WEFT_LOG_INFO, "plugstate load #%d greeting=%s", p->n, p->greeting);
    *state = p;
    return WEFT_OK;
}

static void ps_unload(void *state)
{
    plug *p = state;
    host->log(NULL, WEFT_LOG_INFO, "plugstate unload #%d", p->n);
    free(p);
}

static int ps_init(const weft_host *h, weft_init *ctx, void **state)
{
    plug *p = h->init_plugin_state(ctx);
    if (p == NULL) {
        h->init_error(ctx, "no plugin state");
        return WEFT_ERROR;
    }
    route *r = calloc(1, sizeof *r);
    if (r == NULL)
        return WEFT_ERROR;
    r->p = p;
    snprintf(r->name, sizeof r->name, "%s", h->opt_string(ctx, "name", "?"));
    *state = r;
    return WEFT_OK;
}

static void ps_fini(void *state) { free(state); }

static int answer(weft_req *req, route *r)
{
    return host->res_printf(req, "greeting=%s route=%s load=%d state=%p", r->p->greeting, r->name, r->p->n,
                            (void *)r->p);
}

static int ps_handle(weft_req *req, void *state) { return answer(req, state); }
static int ps_handle_async(weft_req *req, void *state) { return answer(req, state); }

static const weft_plugin plugstate_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "plugstate",
    .version = "1.0.0",
    .description = "test fixture: plugin-level load/unload and state",
    .init = ps_init,
    .fini = ps_fini,
    .handle = ps_handle,
    .handle_async = ps_handle_async,
    .load = ps_load,
    .unload = ps_unload,
};

const weft_plugin *weft_plugin_entry(void) { return &plugstate_plugin; }
