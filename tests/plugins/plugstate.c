/*
 * Fixture "plugstate": plugin-level lifecycle (plugin API 2). load() reads
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

static atomic_int loads;

typedef struct plug {
    const weft_host_log *log; /* for unload, which gets only the state */
    int n;
    char greeting[64];
} plug;

typedef struct route {
    plug *p;
    char name[32];
} route;

static weft_rc ps_load(const weft_host *h, weft_init *ctx, void **state)
{
    if (h->init->route(ctx) != NULL) {
        h->init->error(ctx, "load got a route");
        return WEFT_ERROR;
    }
    plug *p = calloc(1, sizeof *p);
    if (p == NULL)
        return WEFT_ERROR;
    p->n = atomic_fetch_add(&loads, 1) + 1;
    snprintf(p->greeting, sizeof p->greeting, "%s", h->init->opt_string(ctx, "greeting", "hello"));
    if (h->init->opt_bool(ctx, "fail", 0)) {
        free(p);
        h->init->error(ctx, "asked to fail");
        return WEFT_ERROR;
    }
    p->log = h->log;
    h->log->msg(NULL, WEFT_LOG_INFO, "plugstate load #%d greeting=%s", p->n, p->greeting);
    *state = p;
    return WEFT_OK;
}

static void ps_unload(void *state)
{
    plug *p = state;
    p->log->msg(NULL, WEFT_LOG_INFO, "plugstate unload #%d", p->n);
    free(p);
}

static weft_rc ps_init(const weft_host *h, weft_init *ctx, void **state)
{
    plug *p = h->init->plugin_state(ctx);
    if (p == NULL) {
        h->init->error(ctx, "no plugin state");
        return WEFT_ERROR;
    }
    route *r = calloc(1, sizeof *r);
    if (r == NULL)
        return WEFT_ERROR;
    r->p = p;
    snprintf(r->name, sizeof r->name, "%s", h->init->opt_string(ctx, "name", "?"));
    *state = r;
    return WEFT_OK;
}

static void ps_fini(void *state) { free(state); }

static int answer(weft_req *req, route *r)
{
    const weft_host *h = weft_req_host(req);
    return h->response->writef(req, "greeting=%s route=%s load=%d state=%p", r->p->greeting, r->name, r->p->n,
                            (void *)r->p);
}

static weft_rc ps_handle(weft_req *req, void *state) { return answer(req, state); }
static weft_rc ps_handle_async(weft_req *req, void *state) { return answer(req, state); }

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
