#include "reload/generation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "plugin/host.h"
#include "base/log.h"
#include "base/stats.h"
#include "plugin/quarantine.h"
#include "plugin/route_init.h"
#include "reload/probe.h"
#include "plugin/ptimer.h"
#include "core/tls.h"
#include "dispatch/auto.h"
#include "dispatch/workpool.h"

WEFT_ROUTE_SLOT(weft_generation_route_slot)
int weft_generation_loop_slot = -1;
__attribute__((constructor)) static void take_loop_slot(void) { weft_generation_loop_slot = weft_loop_slot_new(); }

/* The plugin's load() with its plugins.NAME options, before any route's init. */
static int load_plugin(weft_generation *g, size_t i, weft_errors *errs)
{
    return weft_route_init_load(g->cfg, g->modules[i]->name, &g->modules[i]->desc, &weft_host_table,
                                &g->plugin_states[i], &g->loaded[i], g->timers[i], errs);
}

static weft_module *module_for(weft_generation *g, const char *name, void **plugin_state,
                               struct weft_ptimers **timers, weft_errors *errs)
{
    for (size_t i = 0; i < g->n_modules; i++)
        if (strcmp(g->modules[i]->name, name) == 0) {
            *plugin_state = g->plugin_states[i];
            *timers = g->timers[i];
            return g->loaded[i] || g->modules[i]->desc.load == NULL ? g->modules[i] : NULL;
        }
    weft_module *m = weft_module_load(name, g->cfg->plugin_dirs, g->cfg->n_plugin_dirs, errs);
    if (m == NULL)
        return NULL;
    size_t i = g->n_modules++;
    g->modules[i] = m;
    if ((g->timers[i] = weft_ptimers_new(name)) == NULL)
        weft_fatal("out of memory");
    weft_quarantine *q = &g->quarantined[i];
    if (weft_quarantine_check(m->name, m->sha256, q)) {
        char why[1200], when[32];
        weft_quarantine_describe(q, why, sizeof(why));
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&q->since));
        weft_log_warn("plugin %s %s (sha256 %.12s) is QUARANTINED since %s: %s; its routes answer 503 until `weft "
                      "quarantine clear %s` or another build of it is installed",
                      m->name, m->desc.version ? m->desc.version : "?", m->sha256, when, why, m->name);
    }
    if (load_plugin(g, i, errs) != 0)
        return NULL;
    *plugin_state = g->plugin_states[i];
    *timers = g->timers[i];
    return m;
}

/* A fragment's route: every message its plugin caused names that file and
 * line first, so an operator (and reload/dropins.c) knows which file to
 * blame; the loader's own messages name only the plugin. */
static void own_messages(const weft_config *cfg, const weft_route_cfg *rc, weft_errors *errs, size_t from)
{
    if (strcmp(rc->file, cfg->path) == 0)
        return;
    size_t n = strlen(rc->file);
    for (size_t i = from; i < errs->count; i++) {
        char *m = errs->msgs[i], *owned = NULL;
        if (strncmp(m, rc->file, n) == 0 && m[n] == ':')
            continue;
        if (asprintf(&owned, "%s:%d: route %s: %s", rc->file, rc->line, rc->path, m) < 0)
            weft_fatal("out of memory");
        free(m);
        errs->msgs[i] = owned;
    }
}

static const weft_quarantine *quarantine_of(const weft_generation *g, const weft_module *m)
{
    for (size_t i = 0; i < g->n_modules; i++)
        if (g->modules[i] == m && g->quarantined[i].plugin[0] != '\0')
            return &g->quarantined[i];
    return NULL;
}

/* A route's policy decides which entry point runs; say which one is missing
 * and what would work instead. */
static int check_entry_points(const weft_route *r, weft_errors *errs)
{
    const weft_plugin *d = &weft_route_module(r)->desc;
    const weft_route_cfg *rc = r->cfg;
    int needs_async = rc->dispatch == WEFT_DISPATCH_REACTIVE;
    /* auto takes either (module.c refuses a plugin with neither) */
    if (rc->dispatch == WEFT_DISPATCH_AUTO || (needs_async ? d->handle_async != NULL : d->handle != NULL))
        return 0;
    weft_errors_add(errs,
                    "%s:%d: route %s: plugin '%s' has no %s entry point, which dispatch = \"%s\" needs (it only "
                    "supports %s)",
                    rc->file, rc->line, rc->path, rc->plugin, needs_async ? "handle_async" : "handle",
                    weft_dispatch_name(rc->dispatch), needs_async ? "pool and coroutine" : "reactive");
    return -1;
}

static struct weft_workpool *pool_for(weft_generation *g, const char *name)
{
    for (size_t i = 0; i < g->n_pools; i++)
        if (strcmp(weft_workpool_name(g->pools[i]), name) == 0)
            return g->pools[i];
    const weft_pool_cfg *pc = weft_config_find_pool(g->cfg, name);
    struct weft_workpool *p = weft_workpool_new(pc->name, pc->size, pc->queue);
    if (p != NULL) {
        weft_workpool_set_queue_timeout(p, pc->queue_timeout_ms);
        weft_workpool_set_max_lent(p, pc->max_long_lived);
        weft_workpool_set_nice(p, pc->nice);
        g->pools[g->n_pools++] = p;
    }
    return p;
}

static void destroy(weft_generation *g, int keep_cfg)
{
    /* Timers and workers first: nothing may be running plugin code while it is finalised. */
    for (size_t i = 0; i < g->n_modules; i++)
        weft_ptimers_stop_all(g->timers[i]);
    for (size_t i = 0; i < g->n_pools; i++)
        weft_workpool_free(g->pools[i]);
    weft_dbpool_free(g->dbpool);
    for (size_t i = 0; i < g->n_routes; i++) {
        weft_route *r = &g->routes[i];
        if (r->initialised && weft_route_module(r)->desc.fini != NULL)
            weft_route_module(r)->desc.fini(r->state);
    }
    for (size_t i = 0; i < g->n_modules; i++) {
        if (g->loaded[i] && g->modules[i]->desc.unload != NULL)
            g->modules[i]->desc.unload(g->plugin_states[i]);
        weft_ptimers_free(g->timers[i]);
        weft_module_release(g->modules[i]);
    }
    free(g->timers);
    free(g->plugin_states);
    free(g->loaded);
    for (size_t i = 0; g->tls != NULL && i < g->cfg->n_listen; i++)
        SSL_CTX_free(g->tls[i]);
    free(g->tls);
    weft_generation_free_statics(g);
    weft_router_free(g->router);
    free(g->routes);
    free(g->modules);
    free(g->quarantined);
    free(g->pools);
    if (!keep_cfg)
        weft_config_free(g->cfg);
    free(g);
}

/* Plugin versions this config would load for the first time: their code
 * has never run here, so it runs first in a probe child. */
static int probe_new_versions(const weft_config *cfg, weft_errors *errs)
{
    const char **names = calloc(cfg->n_routes + 1, sizeof(*names));
    if (names == NULL)
        weft_fatal("out of memory");
    size_t n = 0;
    for (size_t i = 0; i < cfg->n_routes; i++) {
        const char *p = cfg->routes[i].plugin;
        int seen = 0;
        for (size_t k = 0; k < n && !seen; k++)
            seen = strcmp(names[k], p) == 0;
        if (!seen && !weft_module_is_loaded(p, cfg->plugin_dirs, cfg->n_plugin_dirs))
            names[n++] = p;
    }
    int rc = n > 0 ? weft_probe_run(cfg, names, n, errs) : 0;
    free(names);
    return rc;
}

static weft_generation *generation_new(weft_config *cfg, unsigned long id)
{
    weft_generation *g = calloc(1, sizeof(*g));
    if (g == NULL)
        weft_fatal("out of memory");
    atomic_init(&g->refs, 1);
    g->id = id;
    g->cfg = cfg;
    g->router = weft_router_new();
    g->routes = calloc(cfg->n_routes + 1, sizeof(*g->routes));
    g->modules = calloc(cfg->n_routes + 1, sizeof(*g->modules));
    g->plugin_states = calloc(cfg->n_routes + 1, sizeof(*g->plugin_states));
    g->loaded = calloc(cfg->n_routes + 1, sizeof(*g->loaded));
    g->quarantined = calloc(cfg->n_routes + 1, sizeof(*g->quarantined));
    g->timers = calloc(cfg->n_routes + 1, sizeof(*g->timers));
    g->pools = calloc(cfg->n_pools + 1, sizeof(*g->pools));
    if (g->routes == NULL || g->modules == NULL || g->pools == NULL || g->plugin_states == NULL || g->loaded == NULL ||
        g->quarantined == NULL || g->timers == NULL)
        weft_fatal("out of memory");
    return g;
}

/* Certificates are read by every build, -t included: a reload re-reads
 * them, which is how a renewed certificate takes effect. */
static void read_certificates(weft_generation *g, weft_config *cfg, weft_errors *errs)
{
    g->tls = calloc(cfg->n_listen + 1, sizeof(*g->tls));
    if (g->tls == NULL)
        weft_fatal("out of memory");
    for (size_t i = 0; i < cfg->n_listen; i++)
        if (cfg->listen[i].tls != NULL)
            g->tls[i] = weft_tls_context(cfg, &cfg->listen[i], errs);
}

/* The route in the generation's next slot; NULL (said in errs) for a path
 * the router refuses, whose slot the next route takes. */
static weft_route *add_to_router(weft_generation *g, const weft_route_cfg *rc, weft_errors *errs)
{
    weft_route *r = &g->routes[g->n_routes];
    r->cfg = rc;
    weft_route_set(r, weft_generation_route_slot, g);
    r->db_cfg = &g->cfg->database;
    r->ws_cfg = &g->cfg->websocket;
    char why[512];
    void *conflict = NULL;
    if (weft_router_add(g->router, r->cfg->path, r->cfg->methods, r, &conflict, why, sizeof(why)) != 0) {
        if (conflict != NULL)
            /* Both places: with fragments the other route may be in another file. */
            weft_errors_add(errs, "%s:%d: route %s: %s by the route at %s:%d", r->cfg->file, r->cfg->line,
                            r->cfg->path, why, ((weft_route *)conflict)->cfg->file,
                            ((weft_route *)conflict)->cfg->line);
        else
            weft_errors_add(errs, "%s:%d: route %s: %s", r->cfg->file, r->cfg->line, r->cfg->path, why);
        return NULL;
    }
    /* The router points at this slot now: it must not be reused. */
    g->n_routes++;
    return r;
}

/* Every problem goes to errs and the build goes on with the next route, so
 * that one run names every route to fix. */
static void add_route(weft_generation *g, const weft_route_cfg *rc, weft_errors *errs)
{
    weft_route *r = add_to_router(g, rc, errs);
    if (r == NULL)
        return;
    void *plugin_state = NULL;
    struct weft_ptimers *timers = NULL;
    size_t loading = errs->count;
    weft_module *m = module_for(g, r->cfg->plugin, &plugin_state, &timers, errs);
    weft_route_set_module(r, m);
    if (m == NULL) {
        own_messages(g->cfg, r->cfg, errs, loading);
        /* Name the route too: the operator needs to know which line to fix. */
        weft_errors_add(errs, "%s:%d: route %s: plugin '%s' could not be loaded (see above)", r->cfg->file,
                        r->cfg->line, r->cfg->path, r->cfg->plugin);
        return;
    }
    r->desc = &m->desc;
    snprintf(r->label, sizeof(r->label), "route %s (plugin %s %s)", r->cfg->path, m->name,
             m->desc.version ? m->desc.version : "?");
    if (check_entry_points(r, errs) != 0)
        return;
    /* Its code killed the server: none of it runs until the operator says so. */
    if ((r->quarantined = quarantine_of(g, m) != NULL) != 0)
        return;
    weft_route_init_run(r, &weft_host_table, plugin_state, timers, errs);
}

/* What a serving route needs beyond its plugin: its database pool, stats
 * slot, auto state and worker pool. */
static void equip_route(weft_generation *g, weft_route *r, weft_errors *errs)
{
    weft_route_set_dbpool(r, g->dbpool);
    r->stat_slot = weft_stats_slot(r->cfg->path, weft_dispatch_name(r->cfg->dispatch));
    /* auto moves a blocking-style handler between coroutine and its pool;
     * its state outlives the generation (keyed by path: dispatch/auto.h) */
    int moves = r->cfg->dispatch == WEFT_DISPATCH_AUTO && r->desc->handle != NULL;
    if (moves)
        weft_route_set_auto(r, weft_auto_for(r->cfg->path));
    if (moves && weft_route_auto(r) == NULL)
        weft_errors_add(errs, "%s:%d: route %s: out of memory", r->cfg->file, r->cfg->line, r->cfg->path);
    if (r->cfg->dispatch == WEFT_DISPATCH_POOL || moves)
        weft_route_set_pool(r, pool_for(g, r->cfg->pool));
    if ((r->cfg->dispatch == WEFT_DISPATCH_POOL || moves) && weft_route_pool(r) == NULL)
        weft_errors_add(errs, "%s:%d: route %s: cannot start worker pool '%s'", r->cfg->file, r->cfg->line,
                        r->cfg->path, r->cfg->pool);
}

weft_generation *weft_generation_build(weft_config *cfg, unsigned long id, int check_only, weft_errors *errs)
{
    weft_quarantine_configure(cfg);
    if (probe_new_versions(cfg, errs) != 0) {
        weft_module_prepared_drop();
        return NULL;
    }

    weft_generation *g = generation_new(cfg, id);
    size_t before = errs->count;
    read_certificates(g, cfg, errs);
    for (size_t i = 0; i < cfg->n_routes; i++)
        add_route(g, &cfg->routes[i], errs);
    weft_generation_build_statics(g, check_only, errs);
    /* libpq is loaded here, by the first generation that needs a database
     * (-t included, so a missing libpq is reported before a reload). */
    int want_db = weft_db_needed(&cfg->database);
    char pq_why[256];
    if (errs->count == before && want_db && weft_pq_load(pq_why, sizeof(pq_why)) != 0)
        weft_errors_add(errs, "%s: database: %s", cfg->path, pq_why);
    if (errs->count == before && !check_only) {
        /* No pool without a database: the routes' NULL dbpool is how db/ knows. */
        if (want_db && (g->dbpool = weft_dbpool_new(&cfg->database)) == NULL)
            weft_errors_add(errs, "%s: database: out of memory", cfg->path);
        for (size_t i = 0; i < g->n_routes; i++)
            equip_route(g, &g->routes[i], errs);
    }
    weft_module_prepared_drop(); /* copies made for the probe that no load took */
    if (errs->count != before) {
        destroy(g, 1);
        return NULL;
    }
    return g;
}

void weft_generation_start_timers(weft_generation *g)
{
    for (size_t i = 0; i < g->n_modules; i++)
        if (g->quarantined[i].plugin[0] == '\0') /* none of its code runs */
            weft_ptimers_activate(g->timers[i]);
}

void weft_generation_retain(weft_generation *g) { atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed); }

/* The calling loop's references to the generation it serves (weft_gen_ref). */
static _Thread_local struct {
    weft_generation *gen;
    long count;
    uint64_t epoch;
} local;

void weft_generation_flush_on_loop(void)
{
    if (local.gen != NULL && local.count != 0)
        atomic_fetch_add_explicit(&local.gen->refs, local.count, memory_order_relaxed);
    local.gen = NULL;
    local.count = 0;
    local.epoch++; /* references taken until now are shared ones */
}

weft_gen_ref weft_generation_retain_on_loop(weft_generation *g)
{
    if (local.gen != g) {
        weft_generation_flush_on_loop();
        local.gen = g;
    }
    local.count++;
    return (weft_gen_ref){.gen = g, .epoch = local.epoch};
}

static void (*reaper_fn)(weft_generation *g);

void weft_generation_set_reaper(void (*reaper)(weft_generation *g)) { reaper_fn = reaper; }

void weft_generation_destroy(weft_generation *g) { destroy(g, 0); }

void weft_generation_release(weft_generation *g)
{
    if (g == NULL || atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (reaper_fn != NULL)
        reaper_fn(g);
    else
        destroy(g, 0);
}

void weft_generation_release_on_loop(weft_gen_ref ref)
{
    if (ref.gen != NULL && ref.gen == local.gen && ref.epoch == local.epoch)
        local.count--; /* the loop still serves it and holds it: nothing can reach zero here */
    else
        weft_generation_release(ref.gen);
}
